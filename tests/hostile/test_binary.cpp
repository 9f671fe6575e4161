// SPDX-License-Identifier: BSL-1.0
// Keys and values are binary-safe end to end, against real redis-servers: NUL bytes, CRLF,
// quotes and Lua syntax travel as command arguments and never become script text.

#include "hostile.hpp"

namespace redlock::test {
namespace {

using namespace std::string_literals;

constexpr auto op_limit = 20s;

/// Every byte that could end a C string, a RESP line, a Lua string or a Lua statement.
const std::string nasty_key = "lock\0key\r\n\"'`]] redis.call('FLUSHALL') --\n$3\r\n*1\r\n\xff"s;
const std::string nasty_value =
    "\0owner\r\n'); redis.call('FLUSHALL'); --[[ ]] \"\\x00\r\n+OK\r\n\x80\xfe"s;

struct three_nodes
{
    redis_cluster nodes{3};
    asio::io_context io;

    redlock::config config() const { return config_of(nodes_of()); }
    std::vector<redlock::node> nodes_of() const
    {
        std::vector<redlock::node> out;
        for (const std::string& url : nodes.urls()) {
            out.push_back(redlock::node::from_url(url));
        }
        return out;
    }
    /// A sentinel key on every node, to show that nothing was flushed.
    void plant_sentinels()
    {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            redis_set(nodes[i].port(), "sentinel", "alive");
        }
    }
    void check_sentinels()
    {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            BOOST_TEST((redis_get(nodes[i].port(), "sentinel") == "alive"s), "node " << i);
        }
    }
    std::size_t holding(const std::string& key, const std::string& value)
    {
        std::size_t n = 0;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            n += redis_get(nodes[i].port(), key) == value;
        }
        return n;
    }
    // Acquire completes once a quorum said yes; the other nodes' replies may still be on
    // their way. Every node that granted must hold the value, and they must be a quorum.
    void expect_held_where_granted(const std::string& key, const redlock::guard& g)
    {
        const redlock::report r = g.last_report();
        BOOST_TEST(r.count(node_status::ok) >= 2u, r.to_string());
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (r.nodes.at(i).status == node_status::ok) {
                BOOST_TEST((redis_get(nodes[i].port(), key) == g.value()), "node " << i);
            }
        }
    }
};

BOOST_FIXTURE_TEST_SUITE(binary_safety, three_nodes)

BOOST_AUTO_TEST_CASE(nasty_key_and_value_round_trip)
{
    plant_sentinels();
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex(nasty_key, {.expiry = 10s, .tries = 1, .value = nasty_value});
    BOOST_TEST(m.name() == nasty_key);
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST_REQUIRE(!ec, g.last_report().to_string());
    BOOST_TEST(g.value() == nasty_value);
    expect_held_where_granted(nasty_key, g);
    // Not truncated at the NUL byte.
    BOOST_TEST(!redis_get(nodes[0].port(), "lock").has_value());

    auto [vec, held] = run(io, valid_of(g), op_limit);
    BOOST_TEST(!vec);
    BOOST_TEST(held);
    auto [xec] = run(io, extend_of(g), op_limit);
    BOOST_TEST(!xec, g.last_report().to_string());
    // Extend stops at a quorum; the nodes that answered have the new TTL.
    BOOST_TEST(g.last_report().count(node_status::ok) >= 2u);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (g.last_report().nodes[i].status == node_status::ok) {
            BOOST_TEST(redis_pttl(nodes[i].port(), nasty_key) > 5000);
        }
    }

    // Another owner sees it taken.
    auto other = c.make_mutex(nasty_key, {.expiry = 10s, .tries = 1});
    auto [oec, og] = run(io, try_get(other, true), op_limit);
    BOOST_TEST(oec == redlock::error::taken);
    // That attempt waited for every node, and its requests followed ours on each connection.
    BOOST_TEST(holding(nasty_key, nasty_value) == 3u);

    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(!rec, g.last_report().to_string());
    BOOST_TEST(g.last_report().count(node_status::ok) >= 2u);
    // The deletes beyond the quorum answer their NOSCRIPT too: shutting down waits for them.
    auto [sec] = run(io, c.async_shutdown(asio::as_tuple(asio::use_awaitable)), op_limit);
    BOOST_TEST(!sec);
    BOOST_TEST(holding(nasty_key, nasty_value) == 0u);
    check_sentinels();
}

BOOST_AUTO_TEST_CASE(nasty_arguments_through_the_eval_fallback)
{
    // An empty script cache: extend and release go through EVAL with the same arguments.
    plant_sentinels();
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex(nasty_key, {.expiry = 10s, .tries = 1, .value = nasty_value});
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST_REQUIRE(!ec);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(redis_command(nodes[i].port(), {"SCRIPT", "FLUSH"}) == "OK");
    }
    auto [xec] = run(io, extend_of(g), op_limit);
    BOOST_TEST(!xec, g.last_report().to_string());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(redis_command(nodes[i].port(), {"SCRIPT", "FLUSH"}) == "OK");
    }
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(!rec, g.last_report().to_string());
    BOOST_TEST(g.last_report().count(node_status::ok) >= 2u);
    // The deletes beyond the quorum answer their NOSCRIPT too: shutting down waits for them.
    auto [sec] = run(io, c.async_shutdown(asio::as_tuple(asio::use_awaitable)), op_limit);
    BOOST_TEST(!sec);
    BOOST_TEST(holding(nasty_key, nasty_value) == 0u);
    check_sentinels();
}

BOOST_AUTO_TEST_CASE(keys_that_differ_after_a_nul_are_different_locks)
{
    redlock::client c(io.get_executor(), config());
    auto a = c.make_mutex("k\0a"s, {.expiry = 10s, .tries = 1});
    auto b = c.make_mutex("k\0b"s, {.expiry = 10s, .tries = 1});
    auto [aec, ga] = run(io, try_get(a, true), op_limit);
    auto [bec, gb] = run(io, try_get(b, true), op_limit);
    BOOST_TEST(!aec);
    BOOST_TEST(!bec);
    expect_held_where_granted("k\0a"s, ga);
    expect_held_where_granted("k\0b"s, gb);
    BOOST_TEST(!redis_get(nodes[0].port(), "k").has_value());
    auto [rac] = run(io, release_of(ga), op_limit);
    auto [rbc] = run(io, release_of(gb), op_limit);
    BOOST_TEST(!rac);
    BOOST_TEST(!rbc);
}

BOOST_AUTO_TEST_CASE(a_value_is_compared_exactly)
{
    // Owner values that differ only after a NUL, or by a trailing CRLF, are different owners.
    plant_sentinels();
    redlock::client c(io.get_executor(), config());
    auto mine = c.make_mutex("exact", {.expiry = 10s, .tries = 1, .value = "v\0one"s});
    auto [ec, g] = run(io, try_get(mine, true), op_limit);
    BOOST_TEST_REQUIRE(!ec);
    for (std::string impostor : {"v\0two"s, "v"s, "v\0one\r\n"s, "v\0on"s}) {
        auto other = c.make_mutex("exact", {.expiry = 10s, .tries = 1, .value = impostor});
        auto [oec, og] = run(io, try_get(other, true), op_limit);
        BOOST_TEST(oec == redlock::error::taken);
    }
    BOOST_TEST(holding("exact", "v\0one"s) == 3u);
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(!rec);
    check_sentinels();
}

BOOST_AUTO_TEST_CASE(set_nx_on_extend_recreates_nasty_keys)
{
    plant_sentinels();
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex(
        nasty_key, {.expiry = 10s, .tries = 1, .value = nasty_value, .set_nx_on_extend = true});
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST_REQUIRE(!ec);
    // The key vanishes from every node that granted it (restarts without persistence). Only
    // those nodes are known to hold it: a node past the quorum may still have its SET in flight.
    const redlock::report granted = g.last_report();
    std::size_t deleted = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (granted.nodes.at(i).status == node_status::ok) {
            BOOST_TEST(redis_command(nodes[i].port(), {"DEL", nasty_key}) == "1", "node " << i);
            ++deleted;
        }
    }
    BOOST_TEST_REQUIRE(deleted >= 2u, granted.to_string());
    auto [xec] = run(io, extend_of(g), op_limit);
    BOOST_TEST(!xec, g.last_report().to_string());
    // A quorum extended, so at least one deleted key was created again, with the exact bytes.
    std::size_t extended = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (g.last_report().nodes.at(i).status == node_status::ok) {
            BOOST_TEST((redis_get(nodes[i].port(), nasty_key) == nasty_value), "node " << i);
            ++extended;
        }
    }
    BOOST_TEST(extended >= 2u);
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(!rec);
    check_sentinels();
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
