// SPDX-License-Identifier: BSL-1.0
// Nodes that can never grant a lock as configured (a wrong password, replicas, TLS on one side
// only): acquire stops after one attempt with error::misconfigured, and the report names each
// node with the server's words.

#include "fixture.hpp"

#include <memory>
#include <string>
#include <vector>

namespace redlock::test {
namespace {

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

std::string port_url(const char* scheme, std::uint16_t port, const std::string& password = {})
{
    return std::string(scheme) + "://" + (password.empty() ? "" : ":" + password + "@") +
           "127.0.0.1:" + std::to_string(port);
}

// Acquires with the default 32 tries; expects misconfigured after the first attempt, with every
// node's code `code` and its detail holding `words`. Returns the report.
report expect_misconfigured(asio::io_context& io, redlock::config cfg, node_errc code,
                            const std::string& words)
{
    redlock::client c(io.get_executor(), std::move(cfg));
    auto [ec, g] = run(io, try_get(c.make_mutex("misconfigured")));
    BOOST_TEST(ec == redlock::error::misconfigured);
    BOOST_TEST(!g.owns_lock());
    const report rep = g.last_report();
    BOOST_TEST_MESSAGE(rep.to_string());
    BOOST_TEST(rep.attempts == 1);
    BOOST_REQUIRE(rep.nodes.size() == c.config().nodes.size());
    for (std::size_t i = 0; i < rep.nodes.size(); ++i) {
        const node_outcome& o = rep.nodes[i];
        BOOST_TEST(o.endpoint == c.config().nodes[i].endpoint());
        BOOST_TEST(o.status == node_status::error);
        BOOST_TEST((o.code == code), o.code.message());
        BOOST_TEST(contains(o.detail, words), o.detail);
    }
    return rep;
}

// Servers asking for a password, set after start (the harness's PING has none).
std::unique_ptr<redis_cluster> with_password(std::size_t n, const std::string& password)
{
    auto nodes = std::make_unique<redis_cluster>(n);
    for (std::size_t i = 0; i < n; ++i) {
        BOOST_REQUIRE(
            redis_command((*nodes)[i].port(), {"CONFIG", "SET", "requirepass", password}) == "OK");
    }
    return nodes;
}

BOOST_AUTO_TEST_SUITE(misconfigured)

BOOST_AUTO_TEST_CASE(a_wrong_password_stops_acquire_after_one_attempt)
{
    auto nodes = with_password(3, "right");
    std::vector<std::string> urls;
    for (std::size_t i = 0; i < 3; ++i) {
        urls.push_back(port_url("redis", (*nodes)[i].port(), "wrong"));
    }
    asio::io_context io;
    const report rep =
        expect_misconfigured(io, config::from_urls(urls), node_errc::authentication, "WRONGPASS");
    for (const node_outcome& o : rep.nodes) {
        BOOST_TEST(contains(o.detail, "check the URL's credentials"), o.detail);
        BOOST_TEST(!contains(o.detail, "wrong@"), o.detail);  // never the password
    }
}

BOOST_AUTO_TEST_CASE(a_missing_password_stops_acquire_after_one_attempt)
{
    auto nodes = with_password(3, "right");
    std::vector<std::string> urls;
    for (std::size_t i = 0; i < 3; ++i) {
        urls.push_back(port_url("redis", (*nodes)[i].port()));
    }
    asio::io_context io;
    expect_misconfigured(io, config::from_urls(urls), node_errc::authentication, "NOAUTH");
}

BOOST_AUTO_TEST_CASE(replicas_listed_as_masters_stop_acquire_after_one_attempt)
{
    redis_server master;
    std::vector<std::unique_ptr<redis_server>> replicas;
    std::vector<std::string> urls;
    for (int i = 0; i < 3; ++i) {
        replicas.push_back(std::make_unique<redis_server>(
            std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(master.port())}));
        urls.push_back(replicas.back()->url());
    }
    asio::io_context io;
    const report rep =
        expect_misconfigured(io, config::from_urls(urls), node_errc::not_a_master, "READONLY");
    for (const node_outcome& o : rep.nodes) {
        BOOST_TEST(contains(o.detail, "the node is a replica: list masters"), o.detail);
    }
    BOOST_TEST(!redis_get(master.port(), "misconfigured").has_value());
}

BOOST_AUTO_TEST_CASE(a_replica_among_masters_is_named_once_in_the_log)
{
    redis_server first;
    redis_server second;
    redis_server replica(
        std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(first.port())});
    redlock::config cfg = config::from_urls({first.url(), second.url(), replica.url()});
    std::vector<std::string> warnings;
    cfg.logger = [&](log_level level, std::string_view message) {
        if (level == log_level::warning && contains(std::string(message), "READONLY")) {
            warnings.emplace_back(message);
        }
    };
    asio::io_context io;
    redlock::client c(io.get_executor(), std::move(cfg));
    auto m = c.make_mutex("replica-among-masters");
    run(io, [&]() -> asio::awaitable<int> {
        for (int i = 0; i < 3; ++i) {
            // The two masters make the quorum; the replica's refusal is in the report.
            redlock::guard g = co_await m.acquire();
            co_await g.release();
        }
        // An inspection waits for every node; a connection reads its replies in order, so the
        // replica's refusals of the three SETs have been read once it answers.
        const auto states = co_await c.async_inspect("replica-among-masters", 2s);
        BOOST_TEST(states.at(2).error.empty(), states.at(2).error);
        BOOST_TEST(!states.at(2).code);
        BOOST_TEST(states.at(2).replica_of == "127.0.0.1:" + std::to_string(first.port()));
        co_return 0;
    }());
    BOOST_TEST_REQUIRE(warnings.size() == 1u);
    BOOST_TEST(contains(warnings[0], "127.0.0.1:" + std::to_string(replica.port())), warnings[0]);
    BOOST_TEST(contains(warnings[0], "the node is a replica: list masters"), warnings[0]);
}

BOOST_AUTO_TEST_CASE(a_plain_url_for_a_tls_port_stops_acquire_after_one_attempt)
{
    test_certificates certs;
    const std::uint16_t tls_port = unused_loopback_port();
    redis_server node(tls_only(certs, tls_port));
    asio::io_context io;
    expect_misconfigured(io, config::from_urls({port_url("redis", tls_port)}),
                         node_errc::tls_mismatch, "a plain URL (redis://) for a TLS port?");
}

BOOST_AUTO_TEST_CASE(a_tls_url_for_a_plain_port_stops_acquire_after_one_attempt)
{
    test_certificates certs;
    redis_server node;
    auto cfg = config::from_urls({port_url("rediss", node.port())});
    cfg.tls.ca_file = certs.dir + "/ca.crt";
    asio::io_context io;
    const report rep = expect_misconfigured(io, std::move(cfg), node_errc::tls_mismatch,
                                            "a TLS URL (rediss://) for a server without TLS?");
    BOOST_TEST(contains(rep.nodes.at(0).detail, "PONG"), rep.nodes.at(0).detail);
}

BOOST_AUTO_TEST_CASE(one_misconfigured_node_of_three_leaves_a_quorum_that_locks)
{
    redis_cluster good(2);
    auto locked = with_password(1, "right");
    asio::io_context io;
    redlock::client c(io.get_executor(),
                      config::from_urls({port_url("redis", (*locked)[0].port(), "wrong"),
                                         good.urls().at(0), good.urls().at(1)}));
    auto [ec, g] = run(io, try_get(c.make_mutex("mixed")));
    BOOST_TEST(!ec);
    BOOST_TEST(g.owns_lock());
    const report rep = g.last_report();
    // The acquire completes once the two good nodes granted it: the third is reported with
    // its cause if its handshake failed by then, or as not awaited.
    if (rep.nodes.at(0).status == node_status::abandoned) {
        BOOST_TEST(contains(rep.nodes.at(0).detail, "not awaited"), rep.nodes.at(0).detail);
        BOOST_TEST((rep.nodes.at(0).code == node_errc::decided_by_quorum));
    } else {
        BOOST_TEST(rep.nodes.at(0).status == node_status::error);
        BOOST_TEST(contains(rep.nodes.at(0).detail, "WRONGPASS"), rep.nodes.at(0).detail);
        BOOST_TEST((rep.nodes.at(0).code == node_errc::authentication));
    }
    BOOST_TEST(rep.count(node_status::ok) == 2u);
    BOOST_TEST((redis_get(good[0].port(), "mixed") == g.value()));
}

BOOST_AUTO_TEST_CASE(unreachable_nodes_are_not_misconfigured)
{
    // Nothing listens there: that may pass, so acquire uses its tries and fails.
    asio::io_context io;
    redlock::client c(io.get_executor(),
                      config::from_urls({port_url("redis", unused_loopback_port())}));
    auto [ec, g] = run(io, try_get(c.make_mutex("nobody", {.tries = 2})));
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST(g.last_report().attempts == 2);
    BOOST_TEST((g.last_report().nodes.at(0).code == node_errc::connect_failed),
               g.last_report().to_string());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
