// SPDX-License-Identifier: BSL-1.0
// A node that is the master three real Sentinels name: locks land on it, and after a failover
// on the replica they promote.

#include "fixture.hpp"

#include <memory>
#include <string>
#include <vector>

namespace redlock::test {
namespace {

// A master, its replica in sync, and three Sentinels that know both.
struct sentinel_deployment
{
    redis_server master{{"--repl-diskless-sync-delay", "0"}};
    redis_server replica{{"--replicaof", "127.0.0.1", std::to_string(master.port()),
                          "--repl-diskless-sync-delay", "0"}};
    std::vector<std::unique_ptr<redis_server>> sentinels;

    sentinel_deployment()
    {
        BOOST_TEST_REQUIRE(eventually([&] { return replica_streams(master.port()); }, 10s));
        // Started after the replica is in sync: a Sentinel learns of replicas from the
        // master's INFO, which it reads at once and then every 10 s. Down after 30 s: only a
        // forced failover happens during a test, not one of a loaded machine's stalls.
        for (int i = 0; i < 3; ++i) {
            sentinels.push_back(redis_server::sentinel("locks", master.port(), 2, 30s));
        }
        // A Sentinel promotes only a replica it is connected to and has heard from (flags
        // exactly "slave", its link to the master up).
        for (const auto& s : sentinels) {
            BOOST_TEST_REQUIRE(eventually(
                [&] {
                    const std::string replicas =
                        redis_command(s->port(), {"SENTINEL", "replicas", "locks"});
                    return replicas.find(std::to_string(replica.port())) != std::string::npos &&
                           replicas.find("flags slave ") != std::string::npos &&
                           replicas.find("master-link-status ok") != std::string::npos;
                },
                15s));
        }
    }

    std::string url() const
    {
        std::string u = "redis-sentinel://";
        for (std::size_t i = 0; i < sentinels.size(); ++i) {
            u += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(sentinels[i]->port());
        }
        return u + "/locks";
    }
};

BOOST_AUTO_TEST_SUITE(sentinel)

BOOST_AUTO_TEST_CASE(a_sentinel_node_locks_on_the_master_and_follows_a_failover)
{
    sentinel_deployment d;
    asio::io_context io;
    std::vector<std::string> log;
    redlock::config cfg = config::from_urls({d.url()});
    cfg.logger = [&](log_level, std::string_view message) { log.emplace_back(message); };
    redlock::client c(io.get_executor(), std::move(cfg));
    BOOST_TEST(c.config().nodes[0].endpoint() == d.url().substr(0, d.url().size()));
    auto m = c.make_mutex("failover", {.expiry = 5s});

    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        BOOST_TEST((redis_get(d.master.port(), "failover") == g.value()));
        co_await g.release();
        co_return 0;
    }());

    // A forced failover: the replica is promoted at once, and the Sentinels announce it about
    // a second later. Locks must then land on the new master within seconds.
    BOOST_TEST_REQUIRE(redis_command(d.sentinels[0]->port(), {"SENTINEL", "FAILOVER", "locks"}) ==
                       "OK");
    const auto failover = steady::now();
    const auto moved = run(
        io,
        [&]() -> asio::awaitable<bool> {
            asio::steady_timer pause(io);
            while (steady::now() - failover < 20s) {
                auto [ec, g] = co_await try_get(m, true);
                // On the new master, and not on the old one (which still takes writes for a
                // while, and replicated them to the replica until it was promoted).
                if (!ec && redis_get(d.replica.port(), "failover") == g.value() &&
                    !redis_get(d.master.port(), "failover").has_value()) {
                    co_await g.release();
                    co_return true;
                }
                if (!ec) {
                    // Taken on the old master, the lock may be gone by now: not_held is fine.
                    co_await g.async_release(asio::as_tuple(asio::use_awaitable));
                }
                pause.expires_after(50ms);
                co_await pause.async_wait(asio::use_awaitable);
            }
            co_return false;
        }(),
        30s);
    const auto took = since(failover);
    BOOST_TEST_MESSAGE("locks reached the new master " << took.count() << " ms after the failover");
    BOOST_TEST(moved);
    BOOST_TEST((took < 10s));
    // The client said where it went.
    bool switch_logged = false;
    for (const std::string& line : log) {
        switch_logged = switch_logged ||
                        line.find("the master is 127.0.0.1:" + std::to_string(d.replica.port())) !=
                            std::string::npos;
    }
    BOOST_TEST(switch_logged);
}

// The classic failover loss, made deterministic: the replica is stopped and cut off while the
// holder locks, so the key exists only on the master; then the master dies and the replica is
// promoted without it. With wait_for_replicas = 0 a rival then gets the lock the holder still
// believes it holds; with 1 the holder's acquire is refused instead.
BOOST_AUTO_TEST_CASE(
    a_failover_to_a_replica_that_missed_the_lock_admits_a_second_owner_unless_replicas_acknowledged)
{
    for (const int replicas : {0, 1}) {
        BOOST_TEST_CONTEXT("wait_for_replicas = " << replicas)
        {
            sentinel_deployment d;
            asio::io_context io;
            redlock::client holder(io.get_executor(), config::from_urls({d.url()}));
            redlock::client rival(io.get_executor(), config::from_urls({d.url()}));

            // Stopped, and cut off: what the master wrote to the link before it died would
            // still reach the replica from the kernel's buffers.
            d.replica.pause();
            BOOST_TEST_REQUIRE(
                redis_command(d.master.port(), {"CLIENT", "KILL", "TYPE", "replica"}) == "1");
            auto [held_ec, held] =
                run(io, try_get(holder.make_mutex(
                                    "contested",
                                    {.expiry = 30s, .tries = 1, .wait_for_replicas = replicas}),
                                true));
            BOOST_TEST(!held_ec == (replicas == 0), held.last_report().to_string());
            if (replicas > 0) {
                // Refused, and cleaned up: the master keeps no key for the rival to miss.
                BOOST_TEST(eventually(
                    [&] { return !redis_get(d.master.port(), "contested").has_value(); }));
            }

            d.master.kill();
            d.replica.resume();
            // A forced failover; the Sentinels may first have to hear from the resumed replica.
            BOOST_TEST_REQUIRE(eventually(
                [&] {
                    return redis_command(d.sentinels[0]->port(),
                                         {"SENTINEL", "FAILOVER", "locks"}) == "OK";
                },
                10s));
            auto [rival_ec, rival_guard] = run(
                io,
                try_get(rival.make_mutex("contested", {.expiry = 30s, .tries = 1000, .wait = 20s})),
                30s);
            BOOST_TEST(!rival_ec, rival_guard.last_report().to_string());
            const bool two_owners =
                held.owns_lock() && held.until() > steady::now() && rival_guard.owns_lock();
            BOOST_TEST_MESSAGE("wait_for_replicas = " << replicas << ": "
                                                      << (two_owners ? "two owners" : "one owner")
                                                      << " after the failover");
            BOOST_TEST(two_owners == (replicas == 0));
        }
    }
}

BOOST_AUTO_TEST_CASE(a_stopped_sentinel_leaves_time_to_ask_the_others)
{
    sentinel_deployment d;
    d.sentinels[0]->pause();  // connects succeed, nothing answers
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    // The first attempt may end at its per-node deadline (250 ms) while the client still
    // waits for the stopped Sentinel's share of the connect timeout (250 ms of 1 s); the
    // connect goes on, and a retry finds the master.
    const auto start = steady::now();
    auto [ec, g] = run(io, try_get(c.make_mutex("one-sentinel-stopped", {.expiry = 5s})));
    BOOST_TEST(!ec, g.last_report().to_string());
    BOOST_TEST((since(start) < 2 * c.config().connect_timeout));
    d.sentinels[0]->resume();
}

BOOST_AUTO_TEST_CASE(sentinels_that_do_not_know_the_master_are_named_in_the_report)
{
    sentinel_deployment d;
    asio::io_context io;
    std::string url = d.url();
    url.replace(url.rfind("/locks"), 6, "/unknown");
    redlock::client c(io.get_executor(), config::from_urls({url}));
    auto [ec, g] = run(io, try_get(c.make_mutex("nobody", {.expiry = 2s}), true));
    BOOST_TEST(ec == redlock::error::failed);
    const node_outcome o = g.last_report().nodes.at(0);
    BOOST_TEST(o.status == node_status::error);
    BOOST_TEST(o.detail.find("no Sentinel of") != std::string::npos, o.detail);
    BOOST_TEST(o.detail.find("it knows no master by that name") != std::string::npos, o.detail);
    BOOST_TEST(o.detail.find(std::to_string(d.sentinels[2]->port())) != std::string::npos,
               o.detail);
    // Every Sentinel said so: a master name they may learn later, not a misconfiguration.
    BOOST_TEST((o.code == node_errc::no_master));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
