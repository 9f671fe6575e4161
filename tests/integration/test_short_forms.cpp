// SPDX-License-Identifier: BSL-1.0
// The short forms (`xxx()`, `async_xxx(asio::deferred)`) of the operations that are not a
// lock's acquire, release, extend or valid, each awaited against five real redis-servers (and
// a sixth as a fenced store's resource): each does what its `async_` form does.

#include "fixture.hpp"

namespace redlock::test {
namespace {

using boost::system::error_code;
using boost::system::system_error;

struct store_and_nodes : five_nodes
{
    redis_server resource;
    redlock::fenced_store store{io.get_executor(), redlock::config::from_urls({resource.url()})};
};

// The code that awaiting `op` throws, or none when it succeeds.
template <class Op>
asio::awaitable<error_code> code_of(Op op)
{
    try {
        co_await std::move(op);
    } catch (const system_error& e) {
        co_return e.code();
    }
    co_return error_code{};
}

BOOST_AUTO_TEST_SUITE(short_forms)

BOOST_FIXTURE_TEST_CASE(inspect_and_the_fenced_store_read_and_write, store_and_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("short", {.expiry = 10s, .tries = 1, .fencing = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        const std::vector<redlock::key_state> seen = co_await c.inspect("short", 2s);
        BOOST_TEST_REQUIRE(seen.size() == 5u);
        for (const redlock::key_state& s : seen) {
            BOOST_TEST((s.kind == redlock::key_kind::plain));
            BOOST_TEST_REQUIRE(s.holders.size() == 1u);
            BOOST_TEST(s.holders.front().value == g.value());
        }

        co_await store.write("account", "100", g);
        std::optional<std::string> value = co_await store.read("account", g);
        BOOST_TEST((value == std::optional<std::string>("100")));
        co_await store.write("account", "200", g.fencing_token(), g.value());
        value = co_await store.read("account", g.fencing_token(), g.value());
        BOOST_TEST((value == std::optional<std::string>("200")));
        // An older token is refused, as with async_read and async_write.
        BOOST_TEST(co_await code_of(store.read("account", g.fencing_token() - 1, "older")) ==
                   redlock::error::stale_token);
        BOOST_TEST(co_await code_of(store.write("account", "1", g.fencing_token() - 1, "older")) ==
                   redlock::error::stale_token);
        co_return 0;
    }());
    BOOST_TEST(redis_command(resource.port(), {"HGET", "account", "value"}) == "200");
}

BOOST_FIXTURE_TEST_CASE(wait_lost_completes_when_the_lock_is_lost, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("short-lost", {.expiry = 1s, .auto_extend = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        for (std::size_t i = 0; i < 3; ++i) {
            redis_command(nodes[i].port(), {"FLUSHALL"});
        }
        BOOST_TEST(co_await code_of(g.wait_lost()) == redlock::error::lost);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(shutdown_ends_the_client, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("short-shutdown", {.expiry = 10s, .tries = 1});
    run(io, [&]() -> asio::awaitable<int> {
        {
            redlock::guard g = co_await m.acquire();
        }  // released in the background, which shutdown waits for
        co_await c.shutdown();
        for (std::size_t i = 0; i < 5; ++i) {
            BOOST_TEST(redis_command(nodes[i].port(), {"EXISTS", "short-shutdown"}) == "0");
        }
        BOOST_TEST(co_await code_of(m.try_acquire()) == redlock::error::shut_down);
        co_return 0;
    }());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
