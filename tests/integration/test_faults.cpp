// SPDX-License-Identifier: BSL-1.0
// Nodes that do not answer, refuse connections, or are gone: acquisition stays bounded by
// the per-node deadline and reports what happened on each node.

#include "fixture.hpp"

#include <unistd.h>

#include <filesystem>

namespace redlock::test {
namespace {

BOOST_AUTO_TEST_SUITE(faults)

BOOST_FIXTURE_TEST_CASE(stopped_nodes_do_not_stall_acquisition, five_nodes)
{
    nodes[0].pause();
    nodes[1].pause();
    redlock::client c(io.get_executor(), config());
    // Per-node deadline: 2 s x 0.05 = 100 ms. Without it, the stopped nodes would hold the
    // attempt for as long as they stay stopped.
    auto m = c.make_mutex("stalled", {.expiry = 2s, .tries = 1});
    const auto start = steady::now();
    auto [ec, g] = run(io, try_get(m));
    const auto took = since(start);
    BOOST_TEST(!ec);
    BOOST_TEST(g.owns_lock());
    BOOST_TEST((took < 1500ms));
    BOOST_TEST(g.last_report().count(node_status::ok) == 3u);

    // Release completes once the three others confirmed it: the stopped ones are reported as
    // still pending, and their deletes go on in the background until the per-node deadline.
    auto [rec] = run(io, g.async_release(asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(!rec);
    const report& r = g.last_report();
    for (std::size_t i : {0, 1}) {
        BOOST_TEST(r.nodes[i].status == node_status::abandoned);
        BOOST_TEST(r.nodes[i].detail.find("goes on in the background") != std::string::npos);
        BOOST_TEST((r.nodes[i].code == node_errc::in_background));
    }
    BOOST_TEST(r.count(node_status::ok) == 3u);
    // Shutting down waits for those deletes: here, until their deadline passes.
    auto [sec] = run(io, c.async_shutdown(asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(!sec);
    for (std::size_t i : {0, 1}) {
        BOOST_TEST(c.node_counters()[i].timeouts >= 1u);
    }
    nodes[0].resume();
    nodes[1].resume();
}

// An attempt that a stopped node could still decide waits for it once, until its per-node
// deadline. After that the client does not wait for the node again until it answers
// something: a contender whose attempt splits the live nodes learns at once that it lost.
// Once the node runs again, it is used again.
BOOST_FIXTURE_TEST_CASE(a_stopped_node_is_waited_for_once_and_used_again_once_it_answers,
                        five_nodes)
{
    // Another owner holds two of the four live nodes: an attempt gets the other two, and only
    // the stopped node could make its third.
    redis_set(nodes[0].port(), "split", "other", 60000);
    redis_set(nodes[1].port(), "split", "other", 60000);
    nodes[4].pause();
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("split", {.expiry = 2s, .tries = 1});

    auto [ec, g] = run(io, try_get(m));
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST(g.last_report().nodes.at(4).status == node_status::timed_out);

    auto [ec2, g2] = run(io, try_get(m));
    BOOST_TEST(ec2 == redlock::error::failed);
    const node_outcome stopped = g2.last_report().nodes.at(4);
    BOOST_TEST(stopped.status == node_status::error);
    BOOST_TEST(!stopped.detail.empty());

    // Once it runs again, the node answers what it was sent while stopped, or the client
    // reconnects once the back-off has passed and the node answered a PING: either way it is
    // waited for again. Inspection waits for every node, so it shows when.
    nodes[4].resume();
    auto answers_again = [&]() -> asio::awaitable<bool> {
        asio::steady_timer pause(co_await asio::this_coro::executor);
        const auto limit = steady::now() + 10s;
        while (steady::now() < limit) {
            auto [iec, s] =
                co_await c.async_inspect("split", 1s, asio::as_tuple(asio::use_awaitable));
            if (!iec && s.size() == 5u && s[4].error.empty()) {
                co_return s[4].kind == key_kind::missing;
            }
            pause.expires_after(20ms);
            co_await pause.async_wait(asio::use_awaitable);
        }
        co_return false;
    };
    BOOST_TEST(run(io, answers_again()));
}

BOOST_FIXTURE_TEST_CASE(refused_port_is_a_node_error_not_a_stall, five_nodes)
{
    auto cfg = config();
    nodes[4].kill();  // its port now refuses connections
    redlock::client c(io.get_executor(), cfg);
    auto m = c.make_mutex("refused", {.expiry = 5s, .tries = 1});
    const auto start = steady::now();
    auto [ec, g] = run(io, try_get(m));
    BOOST_TEST(!ec);
    BOOST_TEST((since(start) < 2000ms));
    auto [rec] = run(io, g.async_release(asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(!rec);

    // Alone, the refused node is the whole quorum: its report names the cause and the port.
    redlock::client alone(io.get_executor(), redlock::config::from_urls({nodes[4].url()}));
    auto [aec, ag] = run(io, try_get(alone.make_mutex("refused", {.tries = 1})));
    BOOST_TEST(aec == redlock::error::failed);
    const node_outcome dead = ag.last_report().nodes[0];
    BOOST_TEST(dead.status == node_status::error);
    BOOST_TEST_MESSAGE("refused node: " << dead.detail);
    BOOST_TEST((dead.detail.find("refused") != std::string::npos));
    BOOST_TEST((dead.detail.find(std::to_string(nodes[4].port())) != std::string::npos));
    BOOST_TEST((dead.code == node_errc::connect_failed));
}

BOOST_FIXTURE_TEST_CASE(three_of_five_stopped_fails_in_bounded_time, five_nodes)
{
    for (std::size_t i = 0; i < 3; ++i) {
        nodes[i].pause();
    }
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex(
        "minority", {.expiry = 2s, .tries = 3, .retry_delay = 10ms, .value = "minority-owner"});
    const auto start = steady::now();
    auto [ec, g] = run(io, try_get(m));
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST(!g.owns_lock());
    BOOST_TEST((since(start) < 3000ms));
    BOOST_TEST(g.last_report().attempts == 3);
    BOOST_TEST(g.last_report().count(node_status::ok) == 2u);
    BOOST_TEST(g.last_report().count(node_status::timed_out) +
                   g.last_report().count(node_status::error) ==
               3u);
    // Each failed attempt deleted what it had set on the nodes that answered.
    BOOST_TEST(holding("minority", "minority-owner") == 0u);
    for (std::size_t i = 0; i < 3; ++i) {
        nodes[i].resume();
    }
}

BOOST_FIXTURE_TEST_CASE(three_of_five_killed_fails_and_fail_fast_stops_early, five_nodes)
{
    for (std::size_t i = 0; i < 3; ++i) {
        nodes[i].kill();
    }
    redlock::client c(io.get_executor(), config());
    auto m =
        c.make_mutex("gone", {.expiry = 2s, .tries = 2, .retry_delay = 10ms, .fail_fast = true});
    const auto start = steady::now();
    auto [ec, g] = run(io, try_get(m));
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST((since(start) < 3000ms));
    BOOST_TEST(g.last_report().count(node_status::ok) < 3u);
}

BOOST_FIXTURE_TEST_CASE(a_failed_attempt_leaves_no_key_on_nodes_that_stalled, five_nodes)
{
    // Three of five nodes stop: the attempt fails at its per-node deadline. Their sockets
    // already hold its SET, which they run when they resume; the clean-up must run after it.
    for (std::size_t i : {0, 1, 2}) {
        nodes[i].pause();
    }
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("stalled-attempt", {.expiry = 10s, .tries = 1});
    auto [ec, g] = run(io, try_get(m));
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST(m.last_report().count(node_status::timed_out) == 3u);
    // The clean-up is queued behind the SET on the same sockets; once its deadline passes
    // too, the client gives those sockets up.
    auto [sec] = run(io, c.async_shutdown(asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(!sec);
    for (std::size_t i : {0, 1, 2}) {
        nodes[i].resume();
    }
    // The stalled nodes run the SET and then the clean-up: no key is left, long before the
    // 10 s expiry. (Read through fresh connections, which the servers serve after the
    // requests already in their sockets.)
    BOOST_TEST(eventually(
        [&] {
            for (std::size_t i = 0; i < 5; ++i) {
                if (value_on(i, "stalled-attempt").has_value()) {
                    return false;
                }
            }
            return true;
        },
        1s));
}

BOOST_FIXTURE_TEST_CASE(a_restarted_node_is_reconnected, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("restart", {.expiry = 5s, .tries = 50, .retry_delay = 20ms});
    run(io, [&]() -> asio::awaitable<int> {
        {
            redlock::guard g = co_await m.acquire();
            co_await g.release();
        }
        // All five connections are now open; three servers restart underneath them.
        for (std::size_t i = 0; i < 3; ++i) {
            nodes[i].restart();
        }
        // The first requests on the dead connections fail; retries reconnect.
        redlock::guard g = co_await m.acquire();
        BOOST_TEST(holding("restart", g.value()) >= 3u);
        co_await g.release();
        std::vector<std::uint64_t> errors_before;
        for (const node_counters& n : c.node_counters()) {
            errors_before.push_back(n.errors + n.timeouts);
        }
        redlock::guard again = co_await m.acquire();
        co_await again.release();
        // Shutting down waits for the release's last deletes: every node answered them.
        co_await c.async_shutdown();
        for (std::size_t i = 0; i < 5; ++i) {
            const node_counters n = c.node_counters()[i];
            BOOST_TEST(n.errors + n.timeouts == errors_before[i]);
        }
        BOOST_TEST(holding("restart", again.value()) == 0u);
        co_return 0;
    }());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test

namespace redlock::test {
namespace {

BOOST_AUTO_TEST_SUITE(node_connection)

BOOST_FIXTURE_TEST_CASE(flushed_script_cache_falls_back_to_eval, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("noscript");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        co_await g.extend();  // loads the extend script everywhere
        for (std::size_t i = 0; i < 5; ++i) {
            redis_command(nodes[i].port(), {"SCRIPT", "FLUSH"});
        }
        co_await g.extend();  // EVALSHA answers NOSCRIPT; EVAL takes over
        BOOST_TEST(g.last_report().count(node_status::ok) >= 3u);
        co_await g.release();
        BOOST_TEST(g.last_report().count(node_status::ok) >= 3u);
        co_await c.async_shutdown();  // waits for the deletes beyond the quorum
        co_return 0;
    }());
    for (std::size_t i = 0; i < 5; ++i) {
        BOOST_TEST(!value_on(i, "noscript").has_value());
    }
}

BOOST_AUTO_TEST_CASE(database_from_the_url_is_selected)
{
    redis_server node;
    asio::io_context io;
    redlock::client c(io.get_executor(), redlock::config::from_urls({node.url() + "/3"}));
    auto m = c.make_mutex("in-db-3");
    auto [ec, g] = run(io, try_get(m));
    BOOST_TEST(!ec);
    BOOST_TEST(!redis_get(node.port(), "in-db-3").has_value());  // not in db 0
    auto in_db3 = redis_command(
        node.port(),
        {"EVAL", "redis.call('SELECT', 3) return redis.call('GET', KEYS[1])", "1", "in-db-3"});
    BOOST_TEST(in_db3 == g.value());
}

BOOST_FIXTURE_TEST_CASE(counters_and_log_lines_tell_what_happened_per_node, five_nodes)
{
    auto cfg = config();
    std::vector<std::pair<redlock::log_level, std::string>> lines;
    cfg.logger = [&](redlock::log_level level, std::string_view message) {
        lines.emplace_back(level, std::string(message));
    };
    cfg.nodes[4].password = "never-printed";  // the server has no password: AUTH fails there
    cfg.reconnect_backoff_min = cfg.reconnect_backoff_max = 0ms;  // reconnect on the next request
    redlock::client c(io.get_executor(), cfg);
    auto m = c.make_mutex("observed", {.tries = 1});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        co_await g.release();
        nodes[0].restart();  // the next request on node 0 finds its connection dead
        auto [ec, again] = co_await m.async_acquire(asio::as_tuple(asio::use_awaitable));
        (void)ec;
        auto [ec2, third] = co_await m.async_acquire(asio::as_tuple(asio::use_awaitable));
        (void)ec2;
        co_return 0;
    }());
    // The guards' background releases finish before the counters are read.
    auto [shut] = run(io, c.async_shutdown(asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(!shut);
    auto counters = c.node_counters();
    BOOST_TEST_REQUIRE(counters.size() == 5u);
    BOOST_TEST(counters[1].requests >= 3u);
    BOOST_TEST(counters[1].replies + counters[1].abandoned == counters[1].requests);
    BOOST_TEST(counters[1].errors == 0u);
    BOOST_TEST(counters[1].latency_total.count() > 0);
    BOOST_TEST(counters[0].errors >= 1u);      // the dead connection
    BOOST_TEST(counters[0].reconnects == 1u);  // and the new one
    BOOST_TEST(counters[4].replies == 0u);     // AUTH never let a request through
    BOOST_TEST(counters[4].errors >= 1u);
    bool auth_logged = false;
    for (const auto& [level, text] : lines) {
        BOOST_TEST_MESSAGE(redlock::to_string(level) << ": " << text);
        BOOST_TEST((text.find("never-printed") == std::string::npos));
        auth_logged = auth_logged || (level == redlock::log_level::warning &&
                                      text.find("AUTH") != std::string::npos);
    }
    BOOST_TEST(auth_logged);
}

BOOST_AUTO_TEST_CASE(unix_socket_nodes_work)
{
    // The socket goes in its own temp dir; the server gets the path on its command line.
    std::string dir =
        std::filesystem::temp_directory_path() / ("redlock-sock-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/redis.sock";
    {
        redis_server node({"--unixsocket", path, "--unixsocketperm", "700"});
        asio::io_context io;
        redlock::client c(io.get_executor(),
                          redlock::config::from_urls({"unix://" + path + "?db=2"}));
        auto [ec, g] = run(io, try_get(c.make_mutex("over-unix")));
        BOOST_TEST(!ec);
        BOOST_TEST(g.last_report().nodes.at(0).endpoint == "unix:" + path);
        auto in_db2 = redis_command(
            node.port(), {"EVAL", "redis.call('SELECT', 2) return redis.call('GET', KEYS[1])", "1",
                          "over-unix"});
        BOOST_TEST(in_db2 == g.value());
    }
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(wait_for_replicas_grants_only_what_a_replica_acknowledged)
{
    redis_server master({"--repl-diskless-sync-delay", "0"});
    redis_server replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
    BOOST_TEST_REQUIRE(eventually([&] { return replica_streams(master.port()); }, 10s));
    asio::io_context io;
    redlock::client c(io.get_executor(), redlock::config::from_urls({master.url()}));
    // Per-node deadline 2 s x 0.05 = 100 ms, so WAIT waits 50 ms at the most.
    auto m = c.make_mutex("replicated", {.expiry = 2s, .tries = 1, .wait_for_replicas = 1});

    run(io, [&]() -> asio::awaitable<int> {
        auto [ec, g] = co_await try_get(m);
        BOOST_TEST_REQUIRE(!ec, g.last_report().to_string());
        // Acknowledged: the replica has it.
        BOOST_TEST((redis_get(replica.port(), "replicated") == g.value()));
        co_await g.release();
        co_return 0;
    }());

    // A stopped replica acknowledges nothing: the node does not count, and the key set on the
    // master is deleted again.
    replica.pause();
    auto [ec2, g2] = run(io, try_get(m));
    BOOST_TEST(ec2 == redlock::error::failed);
    BOOST_TEST(!g2.owns_lock());
    const node_outcome o = g2.last_report().nodes.at(0);
    BOOST_TEST(o.status == node_status::error);
    BOOST_TEST(o.detail.find("0 of the 1 replicas") != std::string::npos, o.detail);
    BOOST_TEST(eventually([&] { return !redis_get(master.port(), "replicated").has_value(); }));
    replica.resume();
}

BOOST_AUTO_TEST_CASE(acl_user_authenticates_and_a_wrong_password_is_reported_without_it)
{
    redis_server node({"--user", "locker", "on", ">s3cr3t-pw", "~*", "&*", "+@all"});
    asio::io_context io;
    const std::string where = "127.0.0.1:" + std::to_string(node.port());
    {
        redlock::client c(io.get_executor(),
                          redlock::config::from_urls({"redis://locker:s3cr3t-pw@" + where}));
        auto [ec, g] = run(io, try_get(c.make_mutex("acl")));
        BOOST_TEST(!ec);
        BOOST_TEST(g.owns_lock());
        auto [rec] = run(io, g.async_release(asio::as_tuple(asio::use_awaitable)));
        BOOST_TEST(!rec);
    }
    redlock::client c(io.get_executor(),
                      redlock::config::from_urls({"redis://locker:not-the-pw@" + where}));
    auto [ec, g] = run(io, try_get(c.make_mutex("acl", {.tries = 1})));
    BOOST_TEST(ec == redlock::error::misconfigured);
    const std::string detail = g.last_report().nodes.at(0).detail;
    BOOST_TEST_MESSAGE("wrong password: " << detail);
    BOOST_TEST((detail.find("AUTH") != std::string::npos));
    BOOST_TEST((detail.find("not-the-pw") == std::string::npos));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test

namespace redlock::test {
namespace {

BOOST_AUTO_TEST_SUITE(tls)

BOOST_AUTO_TEST_CASE(rediss_nodes_lock_over_tls_and_bad_certificates_are_reported)
{
    test_certificates certs;
    const std::uint16_t tls_port = unused_loopback_port();
    redis_server node(tls_only(certs, tls_port));
    const std::string url = "rediss://127.0.0.1:" + std::to_string(tls_port);
    asio::io_context io;
    {
        auto cfg = redlock::config::from_urls({url});
        cfg.tls.ca_file = certs.dir + "/ca.crt";
        redlock::client c(io.get_executor(), cfg);
        auto [ec, g] = run(io, try_get(c.make_mutex("over-tls")));
        BOOST_TEST(!ec);
        BOOST_TEST((redis_get(node.port(), "over-tls") == g.value()));  // seen over the plain port
        auto [rec] = run(io, g.async_release(asio::as_tuple(asio::use_awaitable)));
        BOOST_TEST(!rec);
    }
    {
        // Without our CA the server's certificate cannot be trusted.
        redlock::client c(io.get_executor(), redlock::config::from_urls({url}));
        auto [ec, g] = run(io, try_get(c.make_mutex("untrusted", {.tries = 1})));
        BOOST_TEST(ec == redlock::error::misconfigured);
        const std::string detail = g.last_report().nodes.at(0).detail;
        BOOST_TEST_MESSAGE("untrusted certificate: " << detail);
        BOOST_TEST((detail.find("TLS handshake failed") != std::string::npos));
    }
    {
        auto cfg = redlock::config::from_urls({url});
        cfg.tls.ca_file = certs.dir + "/no-such-file.crt";
        BOOST_CHECK_EXCEPTION(redlock::client(io.get_executor(), cfg), boost::system::system_error,
                              [](const boost::system::system_error& e) {
                                  return std::string(e.what()).find("no-such-file.crt") !=
                                         std::string::npos;
                              });
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
