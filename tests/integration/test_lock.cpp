// SPDX-License-Identifier: BSL-1.0
// The lock itself against five real redis-servers: acquire, release, extend, valid, the
// quorum over every subset of nodes, mutual exclusion, expiry, and the guard's destructor.

#include "fixture.hpp"

#include <bit>

namespace redlock::test {
namespace {

using boost::system::error_code;

BOOST_AUTO_TEST_SUITE(lock)

BOOST_FIXTURE_TEST_CASE(acquire_sets_the_key_everywhere_and_release_deletes_it, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("order:42", {.expiry = 10s});
    run(io, [&]() -> asio::awaitable<int> {
        const auto before = steady::now();
        redlock::guard g = co_await m.acquire();
        BOOST_TEST(g.owns_lock());
        BOOST_TEST(static_cast<bool>(g));
        BOOST_TEST(g.name() == "order:42");
        BOOST_TEST(g.value().size() == 24u);
        BOOST_TEST((g.until() > steady::now() && g.until() <= before + 10s));
        // Acquire completes at a quorum; every node that said ok holds our value and TTL.
        BOOST_TEST(g.last_report().count(node_status::ok) >= 3u);
        for (const node_outcome& o : g.last_report().nodes) {
            if (o.status == node_status::abandoned) {  // and says why
                BOOST_TEST(o.detail ==
                           "not awaited: the outcome was decided by a quorum of the other nodes");
                BOOST_TEST((o.code == node_errc::decided_by_quorum));
            }
        }
        for (std::size_t i = 0; i < 5; ++i) {
            if (g.last_report().nodes[i].status == node_status::ok) {
                BOOST_TEST((value_on(i, "order:42") == g.value()));
                auto ttl = redis_pttl(nodes[i].port(), "order:42");
                BOOST_TEST((ttl > 9000 && ttl <= 10000));
            }
        }

        co_await g.release();
        BOOST_TEST(!g.owns_lock());
        // Release completes once a quorum confirmed it; the other nodes' deletes are on
        // their way, and the report says so.
        const report released = g.last_report();
        BOOST_TEST(released.count(node_status::ok) >= 3u);
        BOOST_TEST(released.count(node_status::ok) + released.count(node_status::abandoned) == 5u);
        for (const node_outcome& o : released.nodes) {
            if (o.status == node_status::abandoned) {
                BOOST_TEST(o.detail.find("goes on in the background") != std::string::npos);
                BOOST_TEST((o.code == node_errc::in_background));
            }
        }
        BOOST_TEST(co_await settles([&] {
            for (std::size_t i = 0; i < 5; ++i) {
                if (value_on(i, "order:42").has_value()) {
                    return false;
                }
            }
            return true;
        }));

        // Releasing twice is not an error that touches Redis: the guard owns nothing.
        auto [ec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::not_held);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(try_acquire_on_a_held_lock_is_taken, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("held");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard first = co_await m.acquire();
        auto [ec, second] = co_await try_get(m, true);
        BOOST_TEST(ec == redlock::error::taken);
        BOOST_TEST(!second.owns_lock());
        BOOST_TEST(second.last_report().count(node_status::taken) == 5u);
        BOOST_TEST(m.last_report().count(node_status::taken) == 5u);
        BOOST_TEST(holding("held", first.value()) == 5u);
        co_return 0;
    }());
}

// redsync's quorum test: pre-lock every subset of the five nodes with another owner's value.
// The lock must be granted exactly when at most two nodes are taken, and a refused attempt
// must leave no key of ours and every key of the other owner in place.
BOOST_FIXTURE_TEST_CASE(every_subset_of_prelocked_nodes, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("quorum", {.expiry = 10s, .value = "mine"});
    for (unsigned mask = 0; mask < 32; ++mask) {
        BOOST_TEST_CONTEXT("pre-locked nodes mask " << mask)
        {
            nodes.flushall();
            for (std::size_t i = 0; i < 5; ++i) {
                if (mask & (1u << i)) {
                    redis_set(nodes[i].port(), "quorum", "theirs", 10000);
                }
            }
            auto [ec, g] = run(io, try_get(m, true));
            const auto taken = static_cast<std::size_t>(std::popcount(mask));
            if (taken <= 2) {
                BOOST_TEST(!ec);
                BOOST_TEST(g.owns_lock());
            } else {
                BOOST_TEST(ec == redlock::error::taken);
                BOOST_TEST(!g.owns_lock());
            }
            for (std::size_t i = 0; i < 5; ++i) {
                const bool theirs = mask & (1u << i);
                auto v = value_on(i, "quorum");
                if (theirs) {
                    BOOST_TEST((v == std::optional<std::string>("theirs")));
                } else if (taken <= 2) {
                    BOOST_TEST((v == std::optional<std::string>("mine")));
                } else {
                    BOOST_TEST(!v.has_value());
                }
            }
            if (g.owns_lock()) {
                auto [rec] = run(io, g.async_release(asio::as_tuple(asio::use_awaitable)));
                BOOST_TEST(!rec);
            }
        }
    }
}

// Many coroutines on two clients (two sets of connections) contend for one key; an owner
// counter checked inside the critical section must never see two holders.
BOOST_FIXTURE_TEST_CASE(mutual_exclusion_under_contention, five_nodes)
{
    redlock::client a(io.get_executor(), config());
    redlock::client b(io.get_executor(), config());
    const redlock::options opts{.expiry = 5s, .tries = 10000, .retry_delay = [](int) {
                                    return std::chrono::milliseconds(1 + std::rand() % 5);
                                }};
    int inside = 0;
    int most_inside = 0;
    int entries = 0;
    auto worker = [&](redlock::mutex m) -> asio::awaitable<void> {
        asio::steady_timer work(co_await asio::this_coro::executor);
        for (int round = 0; round < 5; ++round) {
            redlock::guard g = co_await m.acquire();
            ++entries;
            most_inside = std::max(most_inside, ++inside);
            work.expires_after(1ms);
            co_await work.async_wait(asio::use_awaitable);
            --inside;
            co_await g.release();
        }
    };
    int finished = 0;
    for (int i = 0; i < 16; ++i) {
        auto& c = i % 2 ? a : b;
        asio::co_spawn(io, worker(c.make_mutex("contended", opts)), [&](std::exception_ptr e) {
            BOOST_TEST(!e, "a worker failed: " << what_failed(e));
            ++finished;
        });
    }
    run(
        io,
        [&]() -> asio::awaitable<int> {
            asio::steady_timer poll(co_await asio::this_coro::executor);
            while (finished < 16) {
                poll.expires_after(5ms);
                co_await poll.async_wait(asio::use_awaitable);
            }
            co_return 0;
        }(),
        60s);
    BOOST_TEST(entries == 16 * 5);
    BOOST_TEST(most_inside == 1);
}

BOOST_FIXTURE_TEST_CASE(release_never_deletes_another_owners_key, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("expiring", {.expiry = 300ms, .tries = 200, .retry_delay = 10ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard first = co_await m.acquire();
        redlock::guard second = co_await m.acquire();  // waits out the first one's expiry
        BOOST_TEST((steady::now() >= first.until()));
        // The first owner's keys expire at slightly different instants on each node, so the
        // second owner may have won on only a quorum of them.
        const auto held_before = holding("expiring", second.value());
        BOOST_TEST(held_before >= 3u);
        auto [ec] = co_await first.async_release(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::not_held);
        // Decided as soon as a quorum can no longer confirm the release: three nodes said no,
        // where the second owner holds the key or where the first one's had expired (which of
        // them answered first decides the mix).
        const report r = first.last_report();
        BOOST_TEST(r.count(node_status::taken) + r.count(node_status::missing) >= 3u,
                   r.to_string());
        // Only where the second owner does not hold the key: there the first one's key may
        // not have expired yet when the release came.
        BOOST_TEST(first.last_report().count(node_status::ok) <= 5u - held_before);
        BOOST_TEST(holding("expiring", second.value()) == held_before);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(extend_moves_validity_and_valid_follows_the_quorum, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("extended", {.expiry = 2s});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        const auto first_until = g.until();
        // Let some of the TTL pass so that the extension is visible.
        asio::steady_timer t(co_await asio::this_coro::executor, 200ms);
        co_await t.async_wait(asio::use_awaitable);
        co_await g.extend();
        BOOST_TEST((g.until() > first_until));
        for (std::size_t i = 0; i < 5; ++i) {
            if (g.last_report().nodes[i].status == node_status::ok) {
                BOOST_TEST(redis_pttl(nodes[i].port(), "extended") > 1900);
            }
        }
        BOOST_TEST((co_await g.valid()) == true);

        // Two nodes lose the key: still a quorum.
        redis_command(nodes[0].port(), {"DEL", "extended"});
        redis_command(nodes[1].port(), {"DEL", "extended"});
        BOOST_TEST((co_await g.valid()) == true);
        co_await g.extend();
        // A third: no quorum any more.
        redis_command(nodes[2].port(), {"DEL", "extended"});
        BOOST_TEST((co_await g.valid()) == false);
        auto [ec] = co_await g.async_extend(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::extend_failed);
        BOOST_TEST(g.last_report().count(node_status::missing) == 3u);
        BOOST_TEST(g.owns_lock());  // the keys that remain are still released
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(extend_on_nodes_that_lost_the_key_can_recreate_it, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("recreate", {.expiry = 5s, .set_nx_on_extend = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        for (std::size_t i = 0; i < 3; ++i) {
            redis_command(nodes[i].port(), {"DEL", "recreate"});
        }
        co_await g.extend();
        BOOST_TEST(holding("recreate", g.value()) >= 3u);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(extend_after_validity_ran_out_is_expired, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("short", {.expiry = 100ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        asio::steady_timer t(co_await asio::this_coro::executor, g.until() + 1ms);
        co_await t.async_wait(asio::use_awaitable);
        auto [ec] = co_await g.async_extend(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::expired);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(expiry_lets_the_next_owner_in_only_after_validity, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto holder = c.make_mutex("abandoned", {.expiry = 400ms});
    auto waiter = c.make_mutex("abandoned", {.expiry = 5s, .tries = 500, .retry_delay = 5ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard first = co_await holder.acquire();  // never released, only expires
        redlock::guard second = co_await waiter.acquire();
        BOOST_TEST((steady::now() >= first.until()));
        BOOST_TEST(holding("abandoned", second.value()) >= 3u);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(guard_destructor_releases_and_shutdown_waits_for_it, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("scoped");
    std::string value;
    run(io, [&]() -> asio::awaitable<int> {
        {
            redlock::guard g = co_await m.acquire();
            value = g.value();
            BOOST_TEST(holding("scoped", value) >= 3u);
        }  // ~guard schedules the release; nobody awaits it
        co_await c.async_shutdown(asio::use_awaitable);
        co_return 0;
    }());
    BOOST_TEST(holding("scoped", value) == 0u);

    // After shutdown nothing more is accepted.
    auto [ec, g] = run(io, try_get(m));
    BOOST_TEST(ec == redlock::error::shut_down);
}

BOOST_FIXTURE_TEST_CASE(move_assignment_releases_the_overwritten_guard, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    std::string first_value;
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await c.make_mutex("one").acquire();
        first_value = g.value();
        g = co_await c.make_mutex("two").acquire();
        BOOST_TEST(g.name() == "two");
        redlock::guard moved = std::move(g);
        BOOST_TEST(!g.owns_lock());  // NOLINT(bugprone-use-after-move): moved-from does nothing
        BOOST_TEST(moved.owns_lock());
        co_await c.async_shutdown(asio::use_awaitable);
        co_return 0;
    }());
    BOOST_TEST(holding("one", first_value) == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_moved_from_guard_completes_on_the_clients_executor, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("moved");
    BOOST_TEST((m.get_executor() == io.get_executor()));
    bool completed_on_io = false;
    error_code ec_seen;
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        BOOST_TEST((g.get_executor() == io.get_executor()));
        redlock::guard taker = std::move(g);
        // NOLINTNEXTLINE(bugprone-use-after-move): a moved-from guard keeps its executor
        BOOST_TEST((g.get_executor() == io.get_executor()));
        // A plain callback has no executor of its own: it runs on the guard's, which only
        // this thread runs (inside io.run()).
        g.async_valid([&](error_code ec, bool) {  // NOLINT(bugprone-use-after-move)
            ec_seen = ec;
            completed_on_io = io.get_executor().running_in_this_thread();
        });
        co_await taker.release();
        co_return 0;
    }());
    BOOST_TEST(ec_seen == redlock::error::not_held);
    BOOST_TEST(completed_on_io);
    BOOST_TEST((redlock::guard{}.get_executor() == redlock::guard::executor_type{}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
