// SPDX-License-Identifier: BSL-1.0
// Elections against real redis-servers: a campaign leads and publishes, readers name the
// leader from a quorum, candidates lead in the order they campaigned with growing terms,
// observers hear of publications, resignations and new leaders at once and of a crashed leader
// once its lock expired, a cancelled campaign leaves the queue, and what an election refuses.

#include "fixture.hpp"
#include "sentinel_deployment.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

namespace redlock::test {
namespace {

using boost::system::error_code;
using redlock::leader;

constexpr auto hash_of_leader = "redlock:leader:jobs";

// Three masters and three clients of them: candidates and observers in one process.
struct three_clients
{
    redis_cluster nodes{3};
    asio::io_context io;
    redlock::client a{io.get_executor(), config::from_urls(nodes.urls())};
    redlock::client b{io.get_executor(), config::from_urls(nodes.urls())};
    redlock::client c{io.get_executor(), config::from_urls(nodes.urls())};

    // Whether `entries` entries of the election's queue are committed on every node.
    bool queued(long long entries)
    {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (committed_entries(nodes[i].port(), "redlock:queue-state:jobs") < entries) {
                return false;
            }
        }
        return true;
    }
    // How many nodes hold the leader's hash with `value`.
    std::size_t publishing(const std::string& value)
    {
        std::size_t n = 0;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            n += redis_command(nodes[i].port(), {"HGET", hash_of_leader, "value"}) == value;
        }
        return n;
    }
};

// Campaigns in the background; `into` gets the outcome.
void campaign_into(redlock::election e, std::string value, std::optional<error_code>& ec,
                   redlock::guard& into)
{
    e.async_campaign(std::move(value), [&](error_code got, redlock::guard g) {
        ec = got;
        into = std::move(g);
    });
}

BOOST_AUTO_TEST_SUITE(election)

BOOST_FIXTURE_TEST_CASE(a_campaign_leads_publishes_and_resigns, three_clients)
{
    auto candidate = a.make_election("jobs");
    auto reader = b.make_election("jobs");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await candidate.campaign("host-a:8080");
        BOOST_TEST(g.owns_lock());
        BOOST_TEST(g.fencing_token() > 0u);
        const std::optional<leader> now = co_await reader.leader();
        BOOST_TEST_REQUIRE(now.has_value());
        BOOST_TEST(now->value == "host-a:8080");
        BOOST_TEST(now->term == g.fencing_token());
        BOOST_TEST(co_await settles([&] { return publishing("host-a:8080") == 3; }));

        // A new value, the same term.
        co_await candidate.proclaim(g, "host-a:9090");
        const std::optional<leader> moved = co_await reader.leader();
        BOOST_TEST_REQUIRE(moved.has_value());
        BOOST_TEST(moved->value == "host-a:9090");
        BOOST_TEST(moved->term == g.fencing_token());

        // Resigning leaves nobody, and no leader's hash on any node.
        co_await g.release();
        BOOST_TEST(!(co_await reader.leader()).has_value());
        BOOST_TEST(co_await settles([&] {
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                if (redis_command(nodes[i].port(), {"EXISTS", hash_of_leader}) != "0") {
                    return false;
                }
            }
            return true;
        }));
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(candidates_lead_in_the_order_they_campaigned_with_growing_terms,
                        three_clients)
{
    // One attempt each: an election ignores `tries` and waits until it leads.
    const redlock::options once{.tries = 1};
    auto first = a.make_election("jobs", once);
    auto second = b.make_election("jobs", once);
    auto third = c.make_election("jobs", once);
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g1 = co_await first.campaign("one");
        std::optional<error_code> ec2, ec3;
        redlock::guard g2, g3;
        campaign_into(second, "two", ec2, g2);
        BOOST_TEST_REQUIRE(co_await settles([&] { return queued(2); }));
        campaign_into(third, "three", ec3, g3);
        BOOST_TEST_REQUIRE(co_await settles([&] { return queued(3); }));

        co_await g1.release();
        BOOST_TEST_REQUIRE(co_await settles([&] { return ec2.has_value(); }, 5s));
        BOOST_TEST(!*ec2);
        BOOST_TEST(!ec3.has_value());
        BOOST_TEST(g2.fencing_token() > g1.fencing_token());
        const std::optional<leader> now = co_await third.leader();
        BOOST_TEST_REQUIRE(now.has_value());
        BOOST_TEST((*now == leader{"two", g2.fencing_token()}));

        co_await g2.release();
        BOOST_TEST_REQUIRE(co_await settles([&] { return ec3.has_value(); }, 5s));
        BOOST_TEST(!*ec3);
        BOOST_TEST(g3.fencing_token() > g2.fencing_token());
        co_await g3.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(an_observer_hears_of_publications_resignations_and_new_leaders_at_once,
                        three_clients)
{
    // An expiry of 30 s: an observer that only polled would look again after 7.5 s, and the
    // leaders keep their lock meanwhile.
    const redlock::options slow{.expiry = 30s};
    auto leading = a.make_election("jobs", slow);
    auto next = b.make_election("jobs", slow);
    auto watching = c.make_election("jobs", slow);
    run(
        io,
        [&]() -> asio::awaitable<int> {
            // Nobody leads: that differs from a leader, so observe answers at once.
            // Made before the co_await: g++ 12 destroys a braced temporary inside one twice.
            const std::optional<leader> someone = leader{"?", 1};
            std::optional<leader> seen = co_await watching.observe(someone);
            BOOST_TEST(!seen.has_value());

            redlock::guard g = co_await leading.campaign("first");
            seen = co_await watching.observe(seen);
            BOOST_TEST_REQUIRE(seen.has_value());
            BOOST_TEST((*seen == leader{"first", g.fencing_token()}));

            // A publication.
            std::optional<std::optional<leader>> heard;
            watching.async_observe(seen, [&](error_code ec, std::optional<leader> l) {
                BOOST_TEST(!ec);
                heard = l;
            });
            co_await pause_for(100ms);  // the observer is waiting for an announcement
            BOOST_TEST(!heard.has_value());
            const auto proclaimed = steady::now();
            co_await leading.proclaim(g, "second");
            BOOST_TEST_REQUIRE(co_await settles([&] { return heard.has_value(); }, 5s));
            BOOST_TEST((since(proclaimed) < 2s));
            BOOST_TEST_REQUIRE(heard->has_value());
            BOOST_TEST((**heard == leader{"second", g.fencing_token()}));
            seen = *heard;

            // A resignation with a candidate queued: the observer sees the new leader (or, if
            // it looked between the two, nobody first).
            std::optional<error_code> next_ec;
            redlock::guard next_guard;
            campaign_into(next, "third", next_ec, next_guard);
            BOOST_TEST_REQUIRE(co_await settles([&] { return queued(2); }));
            const auto resigned = steady::now();
            co_await g.release();
            do {
                seen = co_await watching.observe(seen);
            } while (!seen.has_value() && since(resigned) < 5s);
            BOOST_TEST((since(resigned) < 2s));
            BOOST_TEST_REQUIRE(seen.has_value());
            BOOST_TEST(seen->value == "third");
            BOOST_TEST(seen->term > g.fencing_token());
            BOOST_TEST_REQUIRE(co_await settles([&] { return next_ec.has_value(); }));
            co_await next_guard.release();
            co_return 0;
        }(),
        40s);
}

BOOST_AUTO_TEST_CASE(a_crashed_leader_is_seen_gone_once_its_lock_expired_and_the_next_leads)
{
    redis_cluster nodes(3);
    asio::io_context io;
    asio::io_context frozen;  // the crashed leader's process: never run again once it leads
    redlock::client dead(frozen.get_executor(), config::from_urls(nodes.urls()));
    redlock::client live(io.get_executor(), config::from_urls(nodes.urls()));
    const redlock::options brief{.expiry = 1200ms};
    auto crashed = dead.make_election("jobs", brief);
    const redlock::guard old = run(frozen, crashed.async_campaign("crashed", asio::use_awaitable));
    auto next = live.make_election("jobs", brief);
    auto watching = live.make_election("jobs", brief);
    run(io, [&]() -> asio::awaitable<int> {
        const auto crashed_at = steady::now();
        std::optional<error_code> next_ec;
        redlock::guard next_guard;
        campaign_into(next, "successor", next_ec, next_guard);
        std::optional<leader> seen = leader{"crashed", old.fencing_token()};
        do {
            seen = co_await watching.observe(seen);
        } while (!(seen && seen->value == "successor") && since(crashed_at) < 10s);
        // Within the crashed lock's expiry and a waiter's refresh (its entry's bound).
        BOOST_TEST((since(crashed_at) < 1200ms + 1200ms + 500ms));
        BOOST_TEST_REQUIRE(seen.has_value());
        BOOST_TEST(seen->term > old.fencing_token());
        BOOST_TEST_REQUIRE(co_await settles([&] { return next_ec.has_value(); }));
        BOOST_TEST(!*next_ec);
        co_await next_guard.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(a_publication_raises_the_fencing_counter_to_the_term, three_clients)
{
    // A node whose token write-back was lost would let a later leader take the same term: the
    // publication raises its counter as the write-back would have.
    auto e = a.make_election("jobs");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await e.campaign("one");
        const std::string term = std::to_string(g.fencing_token());
        redis_command(nodes[0].port(), {"SET", "redlock:fence:jobs", "0"});
        co_await e.proclaim(g, "two");
        BOOST_TEST(redis_command(nodes[0].port(), {"GET", "redlock:fence:jobs"}) == term);
        co_await g.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(a_cancelled_campaign_leaves_the_queue_at_once, three_clients)
{
    auto first = a.make_election("jobs");
    auto quitter = b.make_election("jobs");
    auto later = c.make_election("jobs");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await first.campaign("one");
        asio::cancellation_signal cancel;
        std::optional<error_code> cancelled;
        quitter.async_campaign(
            "two", asio::bind_cancellation_slot(
                       cancel.slot(), [&](error_code ec, redlock::guard) { cancelled = ec; }));
        BOOST_TEST_REQUIRE(co_await settles([&] { return queued(2); }));
        cancel.emit(asio::cancellation_type::terminal);
        BOOST_TEST_REQUIRE(co_await settles([&] { return cancelled.has_value(); }));
        BOOST_TEST((*cancelled == asio::error::operation_aborted));
        BOOST_TEST(co_await settles([&] { return !queued(2); }));
        co_await g.release();
        // Nobody is ahead of a new candidate.
        const auto began = steady::now();
        redlock::guard third = co_await later.campaign("three");
        BOOST_TEST((since(began) < 2s));
        co_await third.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(proclaim_needs_this_elections_leader_and_values_are_bounded, three_clients)
{
    auto jobs = a.make_election("jobs");
    auto other = a.make_election("other");
    auto plain = a.make_mutex("plain");
    const std::string too_big(64 * 1024 + 1, 'x');
    run(io, [&]() -> asio::awaitable<int> {
        auto [big_ec, none] =
            co_await jobs.async_campaign(too_big, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(big_ec == redlock::error::invalid_argument);
        BOOST_TEST(!none.owns_lock());

        redlock::guard g = co_await jobs.campaign(std::string(64 * 1024, 'v'));
        redlock::guard o = co_await other.campaign("o");
        redlock::guard p = co_await plain.acquire();
        const auto proclaim = [&](const redlock::guard& by, std::string value) {
            return jobs.async_proclaim(by, std::move(value), asio::as_tuple(asio::use_awaitable));
        };
        BOOST_TEST(std::get<0>(co_await proclaim(o, "x")) == redlock::error::not_held);
        BOOST_TEST(std::get<0>(co_await proclaim(p, "x")) == redlock::error::not_held);
        const redlock::guard no_lock;
        BOOST_TEST(std::get<0>(co_await proclaim(no_lock, "x")) == redlock::error::not_held);
        BOOST_TEST(std::get<0>(co_await proclaim(g, too_big)) == redlock::error::invalid_argument);
        BOOST_TEST(!std::get<0>(co_await proclaim(g, "fits")));
        co_await g.release();
        BOOST_TEST(std::get<0>(co_await proclaim(g, "x")) == redlock::error::not_held);
        co_await o.release();
        co_await p.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(what_an_election_cannot_take_is_refused_and_the_rest_is_forced_on,
                        three_clients)
{
    const auto refused = [&](const redlock::options& o, const std::string& field) {
        try {
            a.make_election("jobs", o);
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == redlock::error::invalid_argument);
            BOOST_TEST(std::string(e.what()).find(field) != std::string::npos, e.what());
            return;
        }
        BOOST_ERROR(field << " was accepted");
    };
    refused({.reentrant = true}, "options.reentrant");
    refused({.value = "fixed"}, "options.value");
    refused({.auto_extend_limit = 2}, "options.auto_extend_limit");
    const auto e = a.make_election("jobs", {.tries = 1});
    BOOST_TEST(e.options().fair);
    BOOST_TEST(e.options().fencing);
    BOOST_TEST(e.options().auto_extend);
    BOOST_TEST(e.name() == "jobs");
}

BOOST_FIXTURE_TEST_CASE(a_campaign_gives_up_when_its_wait_passes, three_clients)
{
    auto leading = a.make_election("jobs");
    auto waiting = b.make_election("jobs", {.wait = 300ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await leading.campaign("one");
        const auto began = steady::now();
        auto [ec, none] =
            co_await waiting.async_campaign("two", asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::failed);
        BOOST_TEST((since(began) < 2s));
        BOOST_TEST(!none.owns_lock());
        // It left the queue.
        BOOST_TEST(co_await settles([&] { return !queued(2); }));
        co_await g.release();
        co_return 0;
    }());
}

// A leader and a successor on one node of any kind: the leader publishes, an observer hears
// the publication and the resignation through the node's pub/sub within seconds (the expiry
// of 30 s would make a poll take 7.5 s), and the successor's term is larger.
// `queued` says whether two candidates are in the queue.
asio::awaitable<void> succession_on(redlock::client& a, redlock::client& b, redlock::client& c,
                                    std::function<bool()> queued)
{
    const redlock::options slow{.expiry = 30s};
    auto leading = a.make_election("jobs", slow);
    auto next = b.make_election("jobs", slow);
    auto watching = c.make_election("jobs", slow);
    redlock::guard g = co_await leading.campaign("first");
    std::optional<leader> seen = co_await watching.observe(std::nullopt);
    BOOST_TEST_REQUIRE(seen.has_value());
    BOOST_TEST((*seen == leader{"first", g.fencing_token()}));
    auto began = steady::now();
    co_await leading.proclaim(g, "second");
    seen = co_await watching.observe(seen);
    BOOST_TEST((since(began) < 2s));
    BOOST_TEST_REQUIRE(seen.has_value());
    BOOST_TEST(seen->value == "second");

    std::optional<error_code> next_ec;
    redlock::guard next_guard;
    campaign_into(next, "third", next_ec, next_guard);
    BOOST_TEST_REQUIRE(co_await settles(queued));
    began = steady::now();
    co_await g.release();
    do {
        seen = co_await watching.observe(seen);
    } while (!seen.has_value() && since(began) < 5s);
    BOOST_TEST((since(began) < 2s));
    BOOST_TEST_REQUIRE(seen.has_value());
    BOOST_TEST(seen->value == "third");
    BOOST_TEST(seen->term > g.fencing_token());
    BOOST_TEST_REQUIRE(co_await settles([&] { return next_ec.has_value(); }));
    co_await next_guard.release();
}

BOOST_AUTO_TEST_CASE(a_cluster_node_elects_in_the_names_slot)
{
    cluster_deployment d(3);
    asio::io_context io;
    redlock::client a(io.get_executor(), config::from_urls({d.url()}));
    redlock::client b(io.get_executor(), config::from_urls({d.url()}));
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    const auto master = d.owner_of_slot(cluster_deployment::slot_of("jobs"));
    BOOST_TEST_REQUIRE(master.has_value());
    // The leader's hash is named after the election, in its slot.
    const std::string hash = "redlock:leader:{jobs}";
    BOOST_TEST(cluster_deployment::slot_of(hash) == cluster_deployment::slot_of("jobs"));
    run(
        io,
        [&]() -> asio::awaitable<int> {
            auto e = a.make_election("jobs");
            redlock::guard g = co_await e.campaign("on-cluster");
            BOOST_TEST(redis_command(d[*master].port(), {"HGET", hash, "value"}) == "on-cluster");
            co_await g.release();
            // Made before the co_await: g++ 12 mishandles temporaries inside one.
            const std::function<bool()> two_queued = [&] {
                return committed_entries(d[*master].port(), "redlock:queue-state:{jobs}") == 2;
            };
            co_await succession_on(a, b, c, two_queued);
            co_return 0;
        }(),
        40s);
}

BOOST_AUTO_TEST_CASE(a_sentinel_node_elects_on_its_master)
{
    sentinel_deployment d;
    asio::io_context io;
    redlock::client a(io.get_executor(), config::from_urls({d.url()}));
    redlock::client b(io.get_executor(), config::from_urls({d.url()}));
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    run(
        io,
        [&]() -> asio::awaitable<int> {
            const std::function<bool()> two_queued = [&] {
                return committed_entries(d.master.port(), "redlock:queue-state:jobs") == 2;
            };
            co_await succession_on(a, b, c, two_queued);
            co_return 0;
        }(),
        40s);
    BOOST_TEST(redis_command(d.master.port(), {"EXISTS", hash_of_leader}) == "0");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
