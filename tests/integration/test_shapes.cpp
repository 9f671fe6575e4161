// SPDX-License-Identifier: BSL-1.0
// Reentrant locks (one owner holding a key several times), the clean-up after a failed attempt,
// and multi-resource locks (several keys at once, all or nothing), against five real
// redis-servers.

#include "fixture.hpp"

namespace redlock::test {
namespace {

using boost::system::error_code;

// The hold count an owner has on a reentrant key, as node i stores it.
long hold_count(redis_cluster& nodes, std::size_t i, const std::string& key,
                const std::string& owner)
{
    const std::string v = redis_command(nodes[i].port(), {"HGET", key, owner});
    return v == "(nil)" ? 0 : std::stol(v);
}

BOOST_AUTO_TEST_SUITE(reentrant)

BOOST_FIXTURE_TEST_CASE(the_same_owner_acquires_again_and_the_key_goes_at_zero, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("re", {.expiry = 10s, .tries = 1, .reentrant = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard outer = co_await m.acquire();
        redlock::guard inner = co_await m.acquire();  // would deadlock on a plain lock
        BOOST_TEST(outer.value() == inner.value());
        co_await inner.release();
        // One hold is left on (at least) a quorum; none keeps the released one once the
        // decrements beyond the quorum are done.
        BOOST_TEST(co_await settles([&] {
            for (std::size_t i = 0; i < 5; ++i) {
                if (hold_count(nodes, i, "re", outer.value()) > 1) {
                    return false;
                }
            }
            return true;
        }));
        std::size_t holding_once = 0;
        for (std::size_t i = 0; i < 5; ++i) {
            const long count = hold_count(nodes, i, "re", outer.value());
            BOOST_TEST(count <= 1);
            holding_once += count == 1 ? 1 : 0;
        }
        BOOST_TEST(holding_once >= 3u);
        BOOST_TEST((co_await outer.valid()) == true);
        co_await outer.extend();
        co_await outer.release();
        for (std::size_t i = 0; i < 5; ++i) {
            BOOST_TEST(redis_command(nodes[i].port(), {"EXISTS", "re"}) == "0");
        }
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(another_owner_is_kept_out_until_the_count_reaches_zero, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto a = c.make_mutex("shared", {.expiry = 10s, .tries = 1, .reentrant = true});
    auto b =
        c.make_mutex("shared", {.expiry = 10s, .tries = 1, .reentrant = true});  // another owner
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard first = co_await a.acquire();
        redlock::guard second = co_await a.acquire();
        auto [ec1, g1] = co_await try_get(b, true);
        BOOST_TEST(ec1 == redlock::error::taken);
        co_await second.release();
        auto [ec2, g2] = co_await try_get(b, true);
        BOOST_TEST(ec2 == redlock::error::taken);  // one hold is left
        co_await first.release();
        auto [ec3, g3] = co_await try_get(b, true);
        BOOST_TEST(!ec3);
        BOOST_TEST(g3.owns_lock());
        co_return 0;
    }());
}

// Two owners, each with coroutines that nest acquisitions: holds of one owner never overlap
// holds of the other, and the counts go up to the nesting depth.
BOOST_FIXTURE_TEST_CASE(counts_under_contention_from_another_owner, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    const redlock::options opts{
        .expiry = 10s, .tries = 10000, .retry_delay = 2ms, .reentrant = true};
    redlock::mutex owners[] = {c.make_mutex("nested", opts), c.make_mutex("nested", opts)};
    int inside[2] = {0, 0};
    int overlaps = 0;
    long deepest = 0;
    int finished = 0;
    auto worker = [&](int who) -> asio::awaitable<void> {
        for (int round = 0; round < 4; ++round) {
            redlock::guard outer = co_await owners[who].acquire();
            redlock::guard inner = co_await owners[who].acquire();
            ++inside[who];
            if (inside[1 - who] > 0) {
                ++overlaps;
            }
            deepest = std::max(deepest, hold_count(nodes, 0, "nested", outer.value()));
            asio::steady_timer t(co_await asio::this_coro::executor, 1ms);
            co_await t.async_wait(asio::use_awaitable);
            --inside[who];
            co_await inner.release();
            co_await outer.release();
        }
    };
    for (int i = 0; i < 4; ++i) {
        asio::co_spawn(io, worker(i % 2), [&](std::exception_ptr e) {
            BOOST_TEST(!e, "a worker failed: " << what_failed(e));
            ++finished;
        });
    }
    run(
        io,
        [&]() -> asio::awaitable<int> {
            asio::steady_timer poll(co_await asio::this_coro::executor);
            while (finished < 4) {
                poll.expires_after(2ms);
                co_await poll.async_wait(asio::use_awaitable);
            }
            co_return 0;
        }(),
        60s);
    BOOST_TEST(overlaps == 0);
    BOOST_TEST(deepest >= 2);  // two coroutines of one owner nest up to 4 holds
}

// The acquires of one reentrant mutex share its count: the clean-up of a failed attempt must
// not reach the nodes where the attempt was refused, since a count found there would be
// another acquire's of the same mutex (one that got the key after this attempt was refused).
BOOST_FIXTURE_TEST_CASE(a_failed_attempt_undoes_nothing_where_it_was_refused, five_nodes)
{
    for (std::size_t i = 2; i < 5; ++i) {
        redis_command(nodes[i].port(), {"HSET", "shared", "another owner", "1"});
        redis_command(nodes[i].port(), {"PEXPIRE", "shared", "10000"});
    }
    for (std::size_t i = 0; i < 5; ++i) {
        redis_command(nodes[i].port(), {"CONFIG", "RESETSTAT"});
    }
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("shared", {.expiry = 10s, .reentrant = true});
    auto [ec, g] = run(io, m.async_try_acquire(asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(ec == redlock::error::taken);
    BOOST_TEST(eventually([&] {
        // Scripts run on each node: the attempt everywhere, the clean-up where it was granted.
        for (std::size_t i = 0; i < 5; ++i) {
            const auto port = nodes[i].port();
            if (command_calls(port, "eval") + command_calls(port, "evalsha") != (i < 2 ? 2 : 1)) {
                return false;
            }
        }
        return true;
    }));
    for (std::size_t i = 0; i < 2; ++i) {
        BOOST_TEST(redis_command(nodes[i].port(), {"EXISTS", "shared"}) == "0", "node " << i);
    }
    for (std::size_t i = 2; i < 5; ++i) {
        BOOST_TEST(hold_count(nodes, i, "shared", "another owner") == 1, "node " << i);
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(clean_up)

// A refused attempt set nothing, so the clean-up goes only where the attempt was not refused,
// and an attempt that every node refused sends none at all.
BOOST_FIXTURE_TEST_CASE(goes_only_where_the_attempt_was_not_refused, five_nodes)
{
    for (std::size_t i = 0; i < 5; ++i) {
        redis_command(nodes[i].port(), {"SET", "everywhere", "another owner", "PX", "10000"});
        if (i >= 2) {
            redis_command(nodes[i].port(), {"SET", "most", "another owner", "PX", "10000"});
        }
        redis_command(nodes[i].port(), {"CONFIG", "RESETSTAT"});
    }
    redlock::client c(io.get_executor(), config());
    auto everywhere = c.make_mutex("everywhere", {.expiry = 10s});
    auto most = c.make_mutex("most", {.expiry = 10s});
    run(io, [&]() -> asio::awaitable<int> {
        auto [ec, g] = co_await everywhere.async_try_acquire(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::taken);
        auto [ec2, g2] = co_await most.async_try_acquire(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec2 == redlock::error::taken);
        co_await c.async_shutdown();  // every clean-up sent has been answered
        co_return 0;
    }());
    for (std::size_t i = 0; i < 5; ++i) {
        BOOST_TEST_CONTEXT("node " << i)
        {
            const auto port = nodes[i].port();
            BOOST_TEST(command_calls(port, "set") == 2);  // the two attempts
            // The compare-and-delete: only for "most", where the attempt set its key.
            BOOST_TEST(command_calls(port, "eval") + command_calls(port, "evalsha") ==
                       (i < 2 ? 1 : 0));
            BOOST_TEST(redis_command(port, {"GET", "everywhere"}) == "another owner");
            BOOST_TEST(redis_command(port, {"EXISTS", "most"}) == (i < 2 ? "0" : "1"));
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multi_resource)

BOOST_FIXTURE_TEST_CASE(all_keys_are_set_and_released_together, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_multi_mutex({"seat:1", "seat:2", "seat:3"}, {.expiry = 10s});
    BOOST_TEST(m.name() == "seat:1, seat:2, seat:3");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        for (const char* key : {"seat:1", "seat:2", "seat:3"}) {
            BOOST_TEST(holding(key, g.value()) >= 3u);
        }
        BOOST_TEST((co_await g.valid()) == true);
        co_await g.extend();
        co_await g.release();
        for (const char* key : {"seat:1", "seat:2", "seat:3"}) {
            BOOST_TEST(holding(key, g.value()) == 0u);
        }
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(one_key_held_elsewhere_means_none_is_taken, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto single = c.make_mutex("seat:2");
    auto multi = c.make_multi_mutex({"seat:1", "seat:2", "seat:3"}, {.tries = 1, .value = "group"});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await single.acquire();
        auto [ec, g] = co_await try_get(multi, true);
        BOOST_TEST(ec == redlock::error::taken);
        BOOST_TEST(holding("seat:1", "group") == 0u);
        BOOST_TEST(holding("seat:3", "group") == 0u);
        BOOST_TEST(holding("seat:2", held.value()) >= 3u);
        co_await held.release();
        auto [ec2, g2] = co_await try_get(multi, true);
        BOOST_TEST(!ec2);
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(bad_key_lists_are_rejected)
{
    asio::io_context io;
    redlock::client c(io.get_executor(), redlock::config::from_urls({"redis://127.0.0.1:1"}));
    BOOST_CHECK_THROW(c.make_multi_mutex({}, {}), boost::system::system_error);
    BOOST_CHECK_THROW(c.make_multi_mutex({"a", ""}, {}), boost::system::system_error);
    BOOST_CHECK_THROW(c.make_multi_mutex({"a", "b", "a"}, {}), boost::system::system_error);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
