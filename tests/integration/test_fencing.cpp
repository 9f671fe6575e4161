// SPDX-License-Identifier: BSL-1.0
// Fencing tokens and the fenced store, against five real redis-servers (and a sixth as the
// protected resource).

#include "fixture.hpp"

#include <algorithm>

namespace redlock::test {
namespace {

using boost::system::error_code;

const redlock::options fenced{.expiry = 10s, .tries = 1, .fencing = true};

// The fencing counter of `key` on node i; 0 when it does not exist.
std::uint64_t counter_on(redis_cluster& nodes, std::size_t i, const std::string& key)
{
    const std::string v = redis_command(nodes[i].port(), {"GET", "redlock:fence:" + key});
    return v == "(nil)" ? 0 : std::stoull(v);
}

BOOST_AUTO_TEST_SUITE(fencing_tokens)

BOOST_FIXTURE_TEST_CASE(each_acquisition_gets_a_larger_token_across_clients, five_nodes)
{
    // Two clients (separate connections, like two processes) take turns.
    redlock::client a(io.get_executor(), config());
    redlock::client b(io.get_executor(), config());
    auto ma = a.make_mutex("fenced", fenced);
    auto mb = b.make_mutex("fenced", fenced);
    run(io, [&]() -> asio::awaitable<int> {
        std::uint64_t previous = 0;
        for (int i = 0; i < 10; ++i) {
            redlock::guard g = co_await (i % 2 == 0 ? ma : mb).acquire();
            BOOST_TEST(g.fencing_token() > previous);
            // The token is the largest the quorum answered, and it was written back to a
            // majority before the guard was handed out.
            std::size_t at_least_token = 0;
            for (std::size_t n = 0; n < 5; ++n) {
                at_least_token += counter_on(nodes, n, "fenced") >= g.fencing_token() ? 1 : 0;
            }
            BOOST_TEST(at_least_token >= 3u);
            std::uint64_t largest_reported = 0;
            for (const auto& o : g.last_report().nodes) {
                largest_reported = std::max(largest_reported, o.fencing_token);
            }
            BOOST_TEST(largest_reported == g.fencing_token());
            previous = g.fencing_token();
            co_await g.release();
            BOOST_TEST(g.fencing_token() == previous);  // kept after release, for logs
        }
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(tokens_stay_larger_after_three_nodes_lose_their_data, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("amnesia", fenced);
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard first = co_await m.acquire();
        const std::uint64_t before = first.fencing_token();
        co_await first.release();
        // Three nodes forget everything, counters included, as after a restart without
        // persistence. Their counters start again from the server's clock, above every
        // token handed out before.
        for (std::size_t i = 0; i < 3; ++i) {
            redis_command(nodes[i].port(), {"FLUSHALL"});
        }
        redlock::guard second = co_await m.acquire();
        BOOST_TEST(second.fencing_token() > before);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(a_lower_counter_is_raised_and_never_lowered, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("raised", fenced);
    // Node 4's counter is far ahead (say it served acquisitions the others missed).
    const std::uint64_t ahead = 9'000'000'000'000'000ULL / 1000;
    redis_set(nodes[4].port(), "redlock:fence:raised", std::to_string(ahead));
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        // Whether or not node 4 was in the quorum, the token is at least the largest
        // counter among the nodes that granted the lock.
        BOOST_TEST(g.fencing_token() >= 1u);
        std::size_t raised = 0;
        for (std::size_t n = 0; n < 5; ++n) {
            raised += counter_on(nodes, n, "raised") >= g.fencing_token() ? 1 : 0;
        }
        BOOST_TEST(raised >= 3u);
        BOOST_TEST(counter_on(nodes, 4, "raised") >= ahead);  // never lowered
        co_await g.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(a_multi_resource_lock_gets_a_token_above_each_key, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto one = c.make_mutex("res-a", fenced);
    auto both = c.make_multi_mutex({"res-a", "res-b"}, fenced);
    auto other = c.make_mutex("res-b", fenced);
    run(io, [&]() -> asio::awaitable<int> {
        std::uint64_t a_token = 0;
        std::uint64_t b_token = 0;
        {
            redlock::guard g = co_await one.acquire();
            a_token = g.fencing_token();
            co_await g.release();
        }
        {
            redlock::guard g = co_await both.acquire();
            BOOST_TEST(g.fencing_token() > a_token);
            b_token = g.fencing_token();
            co_await g.release();
        }
        redlock::guard g = co_await other.acquire();
        BOOST_TEST(g.fencing_token() > b_token);  // res-b's counter was raised to b_token
        co_await g.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(no_token_without_fencing_and_no_reentrant_fencing, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto plain = c.make_mutex("plain", {.expiry = 10s, .tries = 1});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await plain.acquire();
        BOOST_TEST(g.fencing_token() == 0u);
        co_await g.release();
        co_return 0;
    }());
    for (std::size_t n = 0; n < 5; ++n) {
        BOOST_TEST(redis_command(nodes[n].port(), {"EXISTS", "redlock:fence:plain"}) == "0");
    }
    try {
        c.make_mutex("both", {.reentrant = true, .fencing = true});
        BOOST_FAIL("fencing with reentrant was accepted");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == redlock::error::invalid_argument);
        BOOST_TEST(std::string(e.what()).find("options.fencing") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fenced_store_against_redis)

struct resource_and_nodes : five_nodes
{
    redis_server resource;
    redlock::fenced_store store{io.get_executor(), redlock::config::from_urls({resource.url()})};
};

BOOST_FIXTURE_TEST_CASE(an_older_token_is_refused_once_a_newer_one_was_seen, resource_and_nodes)
{
    run(io, [&]() -> asio::awaitable<int> {
        auto as_tuple = asio::as_tuple(asio::use_awaitable);
        auto [e1, v1] = co_await store.async_read("balance", 7, "owner-7", as_tuple);
        BOOST_TEST(!e1);
        BOOST_TEST(!v1.has_value());
        auto [e2] = co_await store.async_write("balance", "100", 7, "owner-7", as_tuple);
        BOOST_TEST(!e2);
        // The same owner with the same token keeps going.
        auto [e3, v3] = co_await store.async_read("balance", 7, "owner-7", as_tuple);
        BOOST_TEST(!e3);
        BOOST_TEST(v3.value_or("") == "100");
        // A newer owner reads: from now on the older one is fenced off, also for writes that
        // were based on its earlier read (no lost update).
        auto [e4, v4] = co_await store.async_read("balance", 8, "owner-8", as_tuple);
        BOOST_TEST(!e4);
        auto [e5] = co_await store.async_write("balance", "150", 7, "owner-7", as_tuple);
        BOOST_TEST(e5 == redlock::error::stale_token);
        auto [e6, v6] = co_await store.async_read("balance", 7, "owner-7", as_tuple);
        BOOST_TEST(e6 == redlock::error::stale_token);
        BOOST_TEST(!v6.has_value());
        // The same token from another owner is refused too.
        auto [e7] = co_await store.async_write("balance", "1", 8, "impostor", as_tuple);
        BOOST_TEST(e7 == redlock::error::stale_token);
        auto [e8] = co_await store.async_write("balance", "200", 8, "owner-8", as_tuple);
        BOOST_TEST(!e8);
        auto [e9] = co_await store.async_write("balance", "0", 0, "nobody", as_tuple);
        BOOST_TEST(e9 == redlock::error::invalid_argument);
        co_return 0;
    }());
    BOOST_TEST(redis_command(resource.port(), {"HGET", "balance", "value"}) == "200");
    BOOST_TEST(redis_command(resource.port(), {"HGET", "balance", "token"}) == "8");
}

BOOST_FIXTURE_TEST_CASE(guards_fence_a_paused_former_owner, resource_and_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("account",
                          {.expiry = 300ms, .tries = 100, .retry_delay = 20ms, .fencing = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard old_owner = co_await m.acquire();
        auto r1 = co_await store.async_read("account", old_owner, asio::use_awaitable);
        BOOST_TEST(!r1.has_value());
        // The old owner "pauses" past its expiry; a new owner gets the lock.
        redlock::guard new_owner = co_await m.acquire();
        BOOST_TEST(new_owner.fencing_token() > old_owner.fencing_token());
        co_await store.async_write("account", "new", new_owner, asio::use_awaitable);
        auto [ec] = co_await store.async_write("account", "old", old_owner,
                                               asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::stale_token);
        co_await new_owner.release();
        co_return 0;
    }());
    BOOST_TEST(redis_command(resource.port(), {"HGET", "account", "value"}) == "new");
}

BOOST_FIXTURE_TEST_CASE(an_unreachable_store_fails_with_the_cause, five_nodes)
{
    redlock::fenced_store store(
        io.get_executor(), redlock::config::from_urls(
                               {"redis://127.0.0.1:" + std::to_string(unused_loopback_port())}));
    store.set_timeout(200ms);
    auto [ec, v] =
        run(io, [&]() -> asio::awaitable<std::tuple<error_code, std::optional<std::string>>> {
            co_return co_await store.async_read("k", 1, "o", asio::as_tuple(asio::use_awaitable));
        }());
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST(!store.last_error().empty());
    BOOST_TEST(store.last_error().find("127.0.0.1") != std::string::npos, store.last_error());
    try {
        redlock::fenced_store two(io.get_executor(), config());
        BOOST_FAIL("a fenced_store over five nodes was accepted");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == redlock::error::invalid_argument);
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
