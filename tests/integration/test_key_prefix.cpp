// SPDX-License-Identifier: BSL-1.0
// config::key_prefix against real servers: every key, counter and channel a client uses on the
// nodes begins with it, and clients with different prefixes never meet.

#include "fixture.hpp"

namespace redlock::test {
namespace {

using boost::system::error_code;

const std::string prefix = "app:locks:";

redlock::config with_prefix(redlock::config cfg, std::string p = prefix)
{
    cfg.key_prefix = std::move(p);
    return cfg;
}

// Every key on node `port`, space-separated.
std::string keys_on(std::uint16_t port)
{
    return redis_command(port, {"KEYS", "*"});
}

// How many clients listen on `channel` at `port`.
std::string subscribers_of(std::uint16_t port, const std::string& channel)
{
    return redis_command(port, {"PUBSUB", "NUMSUB", channel});
}

BOOST_AUTO_TEST_SUITE(key_prefix)

// The fixture's nodes, with a check that no key is left on any of them.
struct prefixed_nodes : five_nodes
{
    bool all_empty()
    {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (!keys_on(nodes[i].port()).empty()) {
                return false;
            }
        }
        return true;
    }
};

BOOST_FIXTURE_TEST_CASE(the_lock_key_carries_the_prefix_and_the_name_does_not, prefixed_nodes)
{
    redlock::client c(io.get_executor(), with_prefix(config()));
    auto m = c.make_mutex("order:1", {.expiry = 10s});
    BOOST_TEST(m.name() == "order:1");
    BOOST_TEST_REQUIRE(m.keys().size() == 1u);
    BOOST_TEST(m.keys().front() == "app:locks:order:1");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        BOOST_TEST(g.name() == "order:1");
        // The acquire completed at a quorum; the other nodes follow.
        BOOST_TEST(co_await settles([&] { return holding("app:locks:order:1", g.value()) == 5; }));
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            BOOST_TEST(keys_on(nodes[i].port()) == "app:locks:order:1");
        }
        // async_inspect takes the lock's name too.
        auto states = co_await c.async_inspect("order:1", 1s, asio::use_awaitable);
        BOOST_TEST_REQUIRE(states.size() == 5u);
        for (const key_state& s : states) {
            BOOST_TEST((s.kind == key_kind::plain));
            BOOST_TEST_REQUIRE(s.holders.size() == 1u);
            BOOST_TEST(s.holders.front().value == g.value());
        }
        co_await g.release();
        BOOST_TEST(co_await settles([&] { return all_empty(); }));
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(an_application_key_of_the_same_name_is_left_alone, five_nodes)
{
    // The trap the prefix removes: an application keeps its own data under the lock's name.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        redis_set(nodes[i].port(), "user:42", R"({"name":"x"})");
    }
    redlock::client c(io.get_executor(), with_prefix(config()));
    auto m = c.make_mutex("user:42", {.expiry = 10s, .tries = 1});
    run(io, [&]() -> asio::awaitable<int> {
        auto [ec, g] = co_await try_get(m);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(g.owns_lock());
        co_await g.release();
        co_return 0;
    }());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(value_on(i, "user:42").value_or("(gone)") == R"({"name":"x"})");
    }
}

BOOST_FIXTURE_TEST_CASE(clients_with_other_prefixes_lock_other_keys, five_nodes)
{
    redlock::client a(io.get_executor(), with_prefix(config(), "tenant-a:"));
    redlock::client b(io.get_executor(), with_prefix(config(), "tenant-b:"));
    redlock::client same(io.get_executor(), with_prefix(config(), "tenant-a:"));
    const redlock::options once{.expiry = 10s, .tries = 1};
    run(io, [&]() -> asio::awaitable<int> {
        auto [ea, ga] = co_await try_get(a.make_mutex("job", once));
        auto [eb, gb] = co_await try_get(b.make_mutex("job", once));
        auto [es, gs] = co_await try_get(same.make_mutex("job", once));
        BOOST_TEST(!ea);
        BOOST_TEST(!eb);
        BOOST_TEST(es == redlock::error::taken);
        BOOST_TEST(holding("tenant-a:job", ga.value()) >= 3u);
        BOOST_TEST(holding("tenant-b:job", gb.value()) >= 3u);
        co_await ga.release();
        co_await gb.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(the_fencing_counter_carries_the_prefix, five_nodes)
{
    redlock::client c(io.get_executor(), with_prefix(config()));
    auto m = c.make_mutex("account", {.expiry = 10s, .tries = 1, .fencing = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        BOOST_TEST(g.fencing_token() > 0u);
        std::size_t at_token = 0;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            const std::string v =
                redis_command(nodes[i].port(), {"GET", "app:locks:redlock:fence:account"});
            at_token += v != "(nil)" && std::stoull(v) >= g.fencing_token() ? 1 : 0;
            BOOST_TEST(redis_command(nodes[i].port(), {"EXISTS", "redlock:fence:account"}) == "0");
            BOOST_TEST(redis_command(nodes[i].port(),
                                     {"EXISTS", "redlock:fence:app:locks:account"}) == "0");
        }
        BOOST_TEST(at_token >= 3u);
        co_await g.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(a_reentrant_lock_is_a_hash_under_the_prefix, prefixed_nodes)
{
    redlock::client c(io.get_executor(), with_prefix(config()));
    auto m = c.make_mutex("tree", {.expiry = 10s, .tries = 1, .reentrant = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard outer = co_await m.acquire();
        redlock::guard inner = co_await m.acquire();
        BOOST_TEST(co_await settles([&] {
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                if (redis_command(nodes[i].port(), {"HGET", "app:locks:tree", outer.value()}) !=
                    "2") {
                    return false;
                }
            }
            return true;
        }));
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            BOOST_TEST(redis_command(nodes[i].port(), {"TYPE", "app:locks:tree"}) == "hash");
        }
        co_await inner.release();
        co_await outer.release();
        BOOST_TEST(co_await settles([&] { return all_empty(); }));
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(a_release_wakes_waiters_on_the_prefixed_channel, five_nodes)
{
    // Two clients (two processes, in effect): the waiter pauses 30 s between tries unless the
    // release message reaches it, so getting the lock within seconds shows that the release
    // published on the channel the waiter listens to. One node: there the release's delete
    // and its message are one script, so the attempt the message wakes cannot come too early.
    const redlock::config one_node = with_prefix(redlock::config::from_urls({nodes[0].url()}));
    redlock::client holder(io.get_executor(), one_node);
    redlock::client waiter(io.get_executor(), one_node);
    const std::string channel = "app:locks:redlock:released:job";
    // Made outside the coroutine: g++ 12 mishandles temporaries inside co_await expressions.
    auto held_mutex = holder.make_mutex("job", {.expiry = 20s});
    auto waiting_mutex = waiter.make_mutex("job", {.expiry = 20s, .tries = 2, .retry_delay = 30s});
    run(
        io,
        [&]() -> asio::awaitable<int> {
            redlock::guard held = co_await held_mutex.acquire();
            std::optional<error_code> theirs;
            redlock::guard their_guard;
            waiting_mutex.async_acquire([&](error_code ec, redlock::guard g) {
                theirs = ec;
                their_guard = std::move(g);
            });
            const std::uint16_t port = nodes[0].port();
            const auto give_up = steady::now() + 10s;
            while (subscribers_of(port, channel) != channel + " 1" && steady::now() < give_up) {
                co_await pause_for(5ms);
            }
            BOOST_TEST(subscribers_of(port, channel) == channel + " 1");
            BOOST_TEST(subscribers_of(port, "redlock:released:app:locks:job") ==
                       "redlock:released:app:locks:job 0");
            const auto released = steady::now();
            co_await held.release();
            while (!theirs && steady::now() < released + 10s) {
                co_await pause_for(5ms);
            }
            BOOST_TEST_REQUIRE(theirs.has_value());
            BOOST_TEST(!*theirs, theirs->message());
            BOOST_TEST(their_guard.owns_lock());
            BOOST_TEST((since(released) < 5s));
            co_await their_guard.release();
            co_return 0;
        }(),
        40s);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
