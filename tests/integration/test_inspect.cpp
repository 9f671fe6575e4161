// SPDX-License-Identifier: BSL-1.0
// client::async_inspect against five real redis-servers: what each node holds under a key.

#include "fixture.hpp"

#include <algorithm>

namespace redlock::test {
namespace {

using boost::system::error_code;
using states = std::vector<key_state>;

asio::awaitable<std::tuple<error_code, states>> inspect(redlock::client& c, std::string key,
                                                        std::chrono::milliseconds timeout = 2s)
{
    co_return co_await c.async_inspect(std::move(key), timeout,
                                       asio::as_tuple(asio::use_awaitable));
}

BOOST_AUTO_TEST_SUITE(inspection)

BOOST_FIXTURE_TEST_CASE(a_plain_lock_shows_its_holder_and_ttl_on_every_node, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("job", {.expiry = 10s, .tries = 1});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        // The writes beyond the quorum may still be on their way.
        BOOST_TEST_REQUIRE(co_await settles([&] { return holding("job", g.value()) == 5; }));
        auto [ec, s] = co_await inspect(c, "job");
        BOOST_TEST(!ec);
        BOOST_TEST_REQUIRE(s.size() == 5u);
        for (std::size_t i = 0; i < 5; ++i) {
            BOOST_TEST(s[i].endpoint == c.config().nodes[i].endpoint());
            BOOST_TEST(s[i].error == "");
            BOOST_TEST((s[i].kind == key_kind::plain));
            BOOST_TEST(s[i].type == "string");
            BOOST_TEST_REQUIRE(s[i].holders.size() == 1u);
            BOOST_TEST(s[i].holders[0].value == g.value());
            BOOST_TEST(s[i].holders[0].count == 1);
            BOOST_TEST_REQUIRE(s[i].ttl.has_value());
            BOOST_TEST(s[i].ttl->count() > 0);
            BOOST_TEST(s[i].ttl->count() <= 10000);
        }
        co_await g.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(a_reentrant_lock_shows_its_owner_and_hold_count, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("re", {.expiry = 10s, .tries = 1, .reentrant = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard outer = co_await m.acquire();
        redlock::guard inner = co_await m.acquire();
        BOOST_TEST_REQUIRE(co_await settles([&] {
            for (std::size_t i = 0; i < 5; ++i) {
                if (redis_command(nodes[i].port(), {"HGET", "re", outer.value()}) != "2") {
                    return false;
                }
            }
            return true;
        }));
        auto [ec, s] = co_await inspect(c, "re");
        BOOST_TEST(!ec);
        BOOST_TEST_REQUIRE(s.size() == 5u);
        for (const key_state& n : s) {
            BOOST_TEST((n.kind == key_kind::reentrant));
            BOOST_TEST(n.type == "hash");
            BOOST_TEST_REQUIRE(n.holders.size() == 1u);
            BOOST_TEST(n.holders[0].value == outer.value());
            BOOST_TEST(n.holders[0].count == 2);
            BOOST_TEST(n.ttl.has_value());
        }
        co_await inner.release();
        co_await outer.release();
        co_return 0;
    }());
}

// Whether `reply` is an entry's expiry (digits), not a nil: the entry is on the node.
bool an_expiry(const std::string& reply)
{
    return !reply.empty() && reply.find_first_not_of("0123456789") == std::string::npos;
}

BOOST_FIXTURE_TEST_CASE(a_read_write_lock_shows_its_readers_each_with_its_expiry, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto rw = c.make_rw_mutex("rw", {.expiry = 10s, .tries = 1});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard a = co_await rw.acquire_shared();
        redlock::guard b = co_await rw.acquire_shared();
        BOOST_TEST_REQUIRE(co_await settles([&] {
            for (std::size_t i = 0; i < 5; ++i) {
                for (const redlock::guard* g : {&a, &b}) {
                    if (!an_expiry(
                            redis_command(nodes[i].port(), {"HGET", "rw", "r:" + g->value()}))) {
                        return false;
                    }
                }
            }
            return true;
        }));
        auto [ec, s] = co_await inspect(c, "rw");
        BOOST_TEST(!ec);
        BOOST_TEST_REQUIRE(s.size() == 5u);
        for (const key_state& n : s) {
            BOOST_TEST((n.kind == key_kind::read_write));
            BOOST_TEST(n.type == "hash");
            BOOST_TEST_REQUIRE(n.holders.size() == 2u);
            for (const lock_holder& h : n.holders) {
                BOOST_TEST((h.value == a.value() || h.value == b.value()));
                BOOST_TEST((h.role == holder_role::reader));
                BOOST_TEST_REQUIRE(h.ttl.has_value());
                BOOST_TEST(h.ttl->count() > 0);
                BOOST_TEST(h.ttl->count() <= 10000);
            }
        }
        co_await a.release();
        co_await b.release();
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(a_semaphore_shows_its_permits_and_its_limit, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto sem = c.make_semaphore("sem", 3, {.expiry = 10s, .tries = 1});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await sem.acquire();
        BOOST_TEST_REQUIRE(co_await settles([&] {
            for (std::size_t i = 0; i < 5; ++i) {
                if (!an_expiry(redis_command(nodes[i].port(), {"ZSCORE", "sem", g.value()}))) {
                    return false;
                }
            }
            return true;
        }));
        auto [ec, s] = co_await inspect(c, "sem");
        BOOST_TEST(!ec);
        BOOST_TEST_REQUIRE(s.size() == 5u);
        for (const key_state& n : s) {
            BOOST_TEST((n.kind == key_kind::semaphore));
            BOOST_TEST(n.permits == 3);
            BOOST_TEST_REQUIRE(n.holders.size() == 1u);
            BOOST_TEST(n.holders[0].value == g.value());
            BOOST_TEST_REQUIRE(n.holders[0].ttl.has_value());
            BOOST_TEST(n.holders[0].ttl->count() > 0);
            BOOST_TEST(n.holders[0].ttl->count() <= 10000);
        }
        co_await g.release();
        co_return 0;
    }());
}

// The committed entries of the fair queue of `key` on `port` (the holder's own among them).
long long committed_in(std::uint16_t port, const std::string& key)
{
    return committed_entries(port, "redlock:queue-state:" + key);
}

BOOST_FIXTURE_TEST_CASE(a_fair_lock_shows_its_holder_and_its_waiters_in_order, five_nodes)
{
    const redlock::options fair{.expiry = 20s, .fair = true};
    redlock::client c(io.get_executor(), config());
    redlock::client first(io.get_executor(), config());
    redlock::client second(io.get_executor(), config());
    int done = 0;
    const auto wait_in_line = [&](redlock::mutex m) -> asio::awaitable<void> {
        redlock::guard g = co_await m.acquire();
        co_await g.release();
        ++done;
    };
    const auto committed_everywhere = [&](long long entries) {
        for (std::size_t i = 0; i < 5; ++i) {
            if (committed_in(nodes[i].port(), "fq") != entries) {
                return false;
            }
        }
        return true;
    };
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await c.make_mutex("fq", fair).acquire();
        asio::co_spawn(io, wait_in_line(first.make_mutex("fq", fair)), asio::detached);
        BOOST_TEST_REQUIRE(co_await settles([&] { return committed_everywhere(2); }));
        asio::co_spawn(io, wait_in_line(second.make_mutex("fq", fair)), asio::detached);
        BOOST_TEST_REQUIRE(co_await settles([&] { return committed_everywhere(3); }));
        // The order every node keeps, the holder's own entry at its head.
        const std::string order =
            redis_command(nodes[0].port(), {"ZRANGE", "redlock:queue:fq", "0", "-1"});
        auto [ec, s] = co_await inspect(c, "fq");
        BOOST_TEST(!ec);
        BOOST_TEST_REQUIRE(s.size() == 5u);
        for (const key_state& n : s) {
            BOOST_TEST((n.kind == key_kind::plain));
            BOOST_TEST_REQUIRE(n.holders.size() == 1u);
            BOOST_TEST(n.holders[0].value == held.value());
            BOOST_TEST_REQUIRE(n.queue.size() == 2u);
            BOOST_TEST(order == held.value() + " " + n.queue[0].value + " " + n.queue[1].value);
            BOOST_TEST(n.queue[0].ticket < n.queue[1].ticket);
            BOOST_TEST(n.queue[0].ticket == s[0].queue[0].ticket,
                       "every node agrees on the ticket");
            for (const queued_waiter& w : n.queue) {
                BOOST_TEST(w.committed);
                BOOST_TEST(w.ttl.count() > 0);
                BOOST_TEST(w.ttl.count() <= 15000);  // three quarters of the expiry
            }
        }
        co_await held.release();
        BOOST_TEST_REQUIRE(co_await settles([&] { return done == 2; }, 10s));
        BOOST_TEST_REQUIRE(co_await settles([&] { return committed_everywhere(0); }));
        auto [ec2, after] = co_await inspect(c, "fq");
        BOOST_TEST(!ec2);
        for (const key_state& n : after) {
            BOOST_TEST((n.kind == key_kind::missing));
            BOOST_TEST(n.queue.empty());
        }
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(a_missing_key_and_other_values_are_told_apart, five_nodes)
{
    redis_set(nodes[1].port(), "mixed", "someone", 60000);
    redis_set(nodes[2].port(), "mixed", "forever");
    redis_command(nodes[3].port(), {"RPUSH", "mixed", "a"});
    redis_command(nodes[4].port(), {"HSET", "mixed", "field", "not a count"});
    redlock::client c(io.get_executor(), config());
    auto [ec, s] = run(io, inspect(c, "mixed"));
    BOOST_TEST(!ec);
    BOOST_TEST_REQUIRE(s.size() == 5u);
    BOOST_TEST((s[0].kind == key_kind::missing));
    BOOST_TEST(s[0].type == "none");
    BOOST_TEST(!s[0].exists());
    BOOST_TEST(!s[0].ttl.has_value());
    BOOST_TEST(s[0].error == "");
    BOOST_TEST((s[1].kind == key_kind::plain));
    BOOST_TEST(s[1].holders.at(0).value == "someone");
    BOOST_TEST(s[1].ttl.has_value());
    BOOST_TEST((s[2].kind == key_kind::plain));
    BOOST_TEST(!s[2].ttl.has_value());
    BOOST_TEST((s[3].kind == key_kind::other));
    BOOST_TEST(s[3].type == "list");
    BOOST_TEST((s[4].kind == key_kind::other));
    BOOST_TEST(s[4].type == "hash");
}

BOOST_FIXTURE_TEST_CASE(a_stopped_node_and_a_stuck_one_are_reported_with_their_errors, five_nodes)
{
    redis_set(nodes[0].port(), "k", "v", 60000);
    nodes[3].kill();   // refuses connections
    nodes[4].pause();  // accepts, never answers
    redlock::client c(io.get_executor(), config());
    const auto start = steady::now();
    auto [ec, s] = run(io, inspect(c, "k", 300ms));
    const auto took = since(start);
    nodes[4].resume();
    BOOST_TEST(!ec);
    BOOST_TEST_REQUIRE(s.size() == 5u);
    BOOST_TEST((s[0].kind == key_kind::plain));
    BOOST_TEST(s[1].error == "");
    BOOST_TEST(s[2].error == "");
    BOOST_TEST(s[3].error != "");
    BOOST_TEST(!s[3].exists());
    BOOST_TEST(s[3].endpoint == c.config().nodes[3].endpoint());
    BOOST_TEST(s[4].error == "no reply within 300 ms");
    BOOST_TEST(took >= 300ms);
    BOOST_TEST(took < 5s);
}

BOOST_FIXTURE_TEST_CASE(cancellation_completes_with_the_nodes_read_so_far, five_nodes)
{
    nodes[4].pause();
    redlock::client c(io.get_executor(), config());
    asio::cancellation_signal cancel;
    std::optional<std::tuple<error_code, states>> result;
    c.async_inspect("k", 10s,
                    asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, states s) {
                        result.emplace(ec, std::move(s));
                    }));
    // Once the four live nodes have answered, only the paused one is outstanding.
    run(io, settles([&] {
            const auto counters = c.node_counters();
            std::size_t answered = 0;
            for (std::size_t i = 0; i < 4; ++i) {
                answered += counters[i].replies > 0 ? 1 : 0;
            }
            return answered == 4;
        }));
    BOOST_TEST_REQUIRE(!result.has_value());
    cancel.emit(asio::cancellation_type::total);
    run(io, settles([&] { return result.has_value(); }));
    nodes[4].resume();
    BOOST_TEST_REQUIRE(result.has_value());
    const auto& [ec, s] = *result;
    BOOST_TEST(ec == asio::error::operation_aborted);
    BOOST_TEST_REQUIRE(s.size() == 5u);
    for (std::size_t i = 0; i < 4; ++i) {
        BOOST_TEST(s[i].error == "");
        BOOST_TEST((s[i].kind == key_kind::missing));
    }
    BOOST_TEST(s[4].error == "not awaited: the operation was cancelled");
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_and_a_shut_down_client_are_refused, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto [empty_key, none] = run(io, inspect(c, ""));
    BOOST_TEST(empty_key == redlock::error::invalid_argument);
    BOOST_TEST(none.empty());
    auto [zero, none2] = run(io, inspect(c, "k", 0ms));
    BOOST_TEST(zero == redlock::error::invalid_argument);
    run(io, c.async_shutdown(asio::as_tuple(asio::use_awaitable)));
    auto [down, none3] = run(io, inspect(c, "k"));
    BOOST_TEST(down == redlock::error::shut_down);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
