// SPDX-License-Identifier: BSL-1.0
// A node that is a whole Redis Cluster of real servers: locks land on the master of their
// key's slot, follow a slot that moves while they are held, and survive a master's failover.

#include "fixture.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace redlock::test {
namespace {

// The server of `d` that holds `key` now.
std::size_t holder_of(const cluster_deployment& d, std::string_view key)
{
    const auto owner = d.owner_of_slot(cluster_deployment::slot_of(key));
    BOOST_TEST_REQUIRE(owner.has_value());
    return *owner;
}

// A key in `slot`: "lock-N" for the first N that hashes there.
std::string key_in_slot(std::uint16_t slot, std::string_view stem = "lock-")
{
    for (int i = 0;; ++i) {
        std::string key = std::string(stem) + std::to_string(i);
        if (cluster_deployment::slot_of(key) == slot) {
            return key;
        }
    }
}

// Acquires `name` into `into`, then counts itself `done`. (A function, not a lambda: a
// coroutine keeps its parameters, not a temporary lambda's captures.)
asio::awaitable<void> take(std::string name, redlock::client& c, redlock::guard& into, int& done)
{
    // Made before the co_await: g++ 12 mishandles a braced temporary inside one.
    redlock::mutex m = c.make_mutex(name, redlock::options{.expiry = 30s});
    auto [ec, g] = co_await try_get(std::move(m));
    BOOST_TEST(!ec, name << ": " << g.last_report().to_string());
    into = std::move(g);
    ++done;
}

// Starts `waiting` (which pauses 30 s between tries), waits until it listens on `channel` by
// sharded pub/sub on the server at `port`, releases `held`, and answers the guard the waiter
// got: within seconds only if the release message woke it.
asio::awaitable<redlock::guard> woken_by_release(redlock::guard held, redlock::mutex waiting,
                                                 std::uint16_t port, std::string channel)
{
    std::optional<boost::system::error_code> theirs;
    redlock::guard their_guard;
    waiting.async_acquire([&](boost::system::error_code ec, redlock::guard g) {
        theirs = ec;
        their_guard = std::move(g);
    });
    BOOST_TEST(co_await settles(
        [&] {
            return redis_command(port, {"PUBSUB", "SHARDNUMSUB", channel}) == channel + " 1";
        },
        10s));
    const auto released = steady::now();
    co_await held.release();
    BOOST_TEST_REQUIRE(co_await settles([&] { return theirs.has_value(); }, 10s));
    BOOST_TEST(!*theirs, theirs->message());
    BOOST_TEST(their_guard.owns_lock());
    BOOST_TEST((steady::now() - released < 5s));
    co_return std::move(their_guard);
}

// Acquires with `m`, failing the test with the per-node report when it cannot.
asio::awaitable<redlock::guard> acquired(redlock::mutex m, const char* what)
{
    auto [ec, g] = co_await try_get(std::move(m));
    BOOST_TEST_REQUIRE(!ec, what << ": " << ec.message() << "\n" << g.last_report().to_string());
    co_return std::move(g);
}

// Releases `g`, failing the test with the per-node report when the release is refused.
asio::awaitable<void> released(redlock::guard& g, const char* what)
{
    auto [ec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec, what << ": " << ec.message() << "\n" << g.last_report().to_string());
}

BOOST_AUTO_TEST_SUITE(cluster)

BOOST_AUTO_TEST_CASE(locks_land_on_the_master_of_their_slot_on_every_master)
{
    cluster_deployment d(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    BOOST_TEST(c.config().nodes.size() == 1u);  // the whole cluster is one node

    constexpr int keys = 300;
    std::vector<redlock::guard> guards(keys);
    int done = 0;
    // All at once: the first requests wait for the slot map, the rest go straight out.
    for (int i = 0; i < keys; ++i) {
        asio::co_spawn(
            io, take("many-" + std::to_string(i), c, guards[static_cast<std::size_t>(i)], done),
            asio::detached);
    }
    BOOST_TEST_REQUIRE(run(io, settles([&] { return done == keys; }, 20s)));
    std::map<std::size_t, int> per_master;
    for (int i = 0; i < keys; ++i) {
        const std::string key = "many-" + std::to_string(i);
        const std::size_t owner = holder_of(d, key);
        ++per_master[owner];
        BOOST_TEST((redis_get(d[owner].port(), key) == guards[static_cast<std::size_t>(i)].value()),
                   key);
    }
    BOOST_TEST(per_master.size() == 3u);  // every master holds some
    run(io, [&]() -> asio::awaitable<int> {
        for (auto& g : guards) {
            co_await g.release();
        }
        co_return 0;
    }());
    for (int i = 0; i < keys; i += 37) {
        const std::string key = "many-" + std::to_string(i);
        BOOST_TEST(!redis_get(d[holder_of(d, key)].port(), key).has_value(), key);
    }
    // Each master got one connection, and no request went astray.
    const node_counters counted = c.node_counters().at(0);
    BOOST_TEST(counted.endpoint == d.url());
    BOOST_TEST(counted.errors == 0u);
    BOOST_TEST(counted.requests >= 2u * keys);
}

BOOST_AUTO_TEST_CASE(helper_keys_share_their_lock_keys_slot_and_mixed_slots_are_refused)
{
    cluster_deployment d(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));

    // A multi-resource lock needs a common hash tag.
    BOOST_CHECK_EXCEPTION(c.make_multi_mutex({"stock", "payment"}), boost::system::system_error,
                          [](const boost::system::system_error& e) {
                              BOOST_TEST_MESSAGE(e.what());
                              return e.code() == redlock::error::invalid_argument &&
                                     std::string(e.what()).find("hash tag") != std::string::npos;
                          });
    // A '}' outside any hash tag leaves no name for a fencing counter in the key's slot: the
    // lock is refused with fencing (a writer's too), and made without it.
    const auto invalid = [](const boost::system::system_error& e) {
        BOOST_TEST_MESSAGE(e.what());
        return e.code() == redlock::error::invalid_argument;
    };
    BOOST_CHECK_EXCEPTION(c.make_mutex("odd}name", {.fencing = true}), boost::system::system_error,
                          invalid);
    BOOST_CHECK_EXCEPTION(c.make_rw_mutex("odd}name", {.fencing = true}),
                          boost::system::system_error, invalid);
    BOOST_CHECK_NO_THROW(c.make_mutex("odd}name"));
    BOOST_CHECK_NO_THROW(c.make_rw_mutex("odd}name"));
    auto pair = c.make_multi_mutex({"{order:7}:stock", "{order:7}:payment"}, {.expiry = 10s});
    auto fenced = c.make_mutex("fenced-on-cluster", {.expiry = 10s, .fencing = true});
    auto reentrant = c.make_mutex("reentrant-on-cluster", {.expiry = 10s, .reentrant = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard both = co_await pair.acquire();
        BOOST_TEST(
            (redis_get(d[holder_of(d, "{order:7}")].port(), "{order:7}:payment") == both.value()));
        redlock::guard first = co_await fenced.acquire();
        co_await first.release();
        redlock::guard second = co_await fenced.acquire();
        BOOST_TEST(second.fencing_token() > first.fencing_token());
        // The counter lives beside the key, in its slot.
        const std::string counter = "redlock:fence:{fenced-on-cluster}";
        BOOST_TEST(cluster_deployment::slot_of(counter) ==
                   cluster_deployment::slot_of("fenced-on-cluster"));
        BOOST_TEST((redis_get(d[holder_of(d, counter)].port(), counter) ==
                    std::to_string(second.fencing_token())));
        redlock::guard outer = co_await reentrant.acquire();
        redlock::guard inner = co_await reentrant.acquire();
        co_await inner.release();
        co_await outer.release();
        co_await second.release();
        co_await both.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiter_through_sharded_pub_sub_on_the_keys_master)
{
    // The waiter pauses 30 s between tries unless the release message reaches it: getting the
    // lock within seconds shows that the SPUBLISH of the release reached its SSUBSCRIBE, both
    // on the master of the key's slot.
    cluster_deployment d(3);
    asio::io_context io;
    redlock::client holder(io.get_executor(), config::from_urls({d.url()}));
    redlock::client waiter(io.get_executor(), config::from_urls({d.url()}));
    const std::string key = "sharded-wake";
    const std::string channel = "redlock:released:{sharded-wake}";
    const std::uint16_t master = d[holder_of(d, key)].port();
    auto held_mutex = holder.make_mutex(key, {.expiry = 20s});
    auto waiting_mutex = waiter.make_mutex(key, {.expiry = 20s, .tries = 2, .retry_delay = 30s});
    run(
        io,
        [&]() -> asio::awaitable<int> {
            redlock::guard held = co_await held_mutex.acquire();
            redlock::guard theirs =
                co_await woken_by_release(std::move(held), waiting_mutex, master, channel);
            co_await theirs.release();
            co_return 0;
        }(),
        40s);
}

BOOST_AUTO_TEST_CASE(a_lock_held_while_its_slot_migrates_is_still_extended_checked_and_released)
{
    cluster_deployment d(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    const std::string held_key = "migrating-lock";
    const std::uint16_t slot = cluster_deployment::slot_of(held_key);
    const std::size_t from = holder_of(d, held_key);
    const std::size_t to = (from + 1) % 3;
    auto held = c.make_mutex(held_key, {.expiry = 10s});
    // Another lock of the same slot, taken while the slot is half moved.
    const std::string other_key = key_in_slot(slot, "newcomer-");
    auto newcomer = c.make_mutex(other_key, {.expiry = 10s});

    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await held.acquire();

        // Half moved: the key is on the target, the source answers ASK for it.
        d.begin_slot_migration(slot, from, to);
        d.migrate_keys(slot, from, to);
        co_await g.extend();
        BOOST_TEST(co_await g.valid());
        // A key that exists nowhere yet: the source sends it to the target with ASK.
        redlock::guard n = co_await newcomer.acquire();
        const std::string in_slot = std::to_string(slot);
        BOOST_TEST(redis_command(d[to].port(), {"CLUSTER", "COUNTKEYSINSLOT", in_slot}) == "2");
        BOOST_TEST(redis_command(d[from].port(), {"CLUSTER", "COUNTKEYSINSLOT", in_slot}) == "0");
        co_await n.release();
        BOOST_TEST(redis_command(d[to].port(), {"CLUSTER", "COUNTKEYSINSLOT", in_slot}) == "1");

        // Moved: every master answers MOVED, and the client learns the new map.
        d.finish_slot_migration(slot, to);
        co_await g.extend();
        BOOST_TEST(co_await g.valid());
        const report after = g.last_report();
        BOOST_TEST(after.nodes.at(0).status == node_status::ok, after.to_string());
        BOOST_TEST(redis_pttl(d[to].port(), held_key) > 5000);
        co_await g.release();
        BOOST_TEST(!redis_get(d[to].port(), held_key).has_value());

        redlock::guard again = co_await newcomer.acquire();
        BOOST_TEST((redis_get(d[to].port(), other_key) == again.value()));
        co_await again.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(scripts_reach_masters_that_never_ran_them_through_moved_and_ask)
{
    // A script's first use on a connection goes as EVAL, which loads it; an EVAL that a
    // master redirects loads nothing there, and a script cache can be flushed. Either way a
    // later EVALSHA meets NOSCRIPT, also behind an ASKING, and must go again as EVAL.
    cluster_deployment d(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    const std::string key = "scripted";
    const std::uint16_t slot = cluster_deployment::slot_of(key);
    const std::size_t a = holder_of(d, key);
    const std::size_t b = (a + 1) % 3;
    const auto move = [&](std::size_t from, std::size_t to) {
        d.begin_slot_migration(slot, from, to);
        d.migrate_keys(slot, from, to);
        d.finish_slot_migration(slot, to);
    };
    auto m = c.make_mutex(key, {.expiry = 10s, .tries = 1});
    // A key that b serves, for b's connection to run the release script on.
    std::string on_b = "on-b-0";
    for (int i = 1; holder_of(d, on_b) != b; ++i) {
        on_b = "on-b-" + std::to_string(i);
    }
    auto b_mutex = c.make_mutex(on_b, {.expiry = 10s});
    run(io, [&]() -> asio::awaitable<int> {
        {
            redlock::guard g = co_await acquired(m, "first");
            co_await released(g, "g");
        }
        // The release script's EVAL reaches b only to be redirected (MOVED) back to a.
        move(a, b);
        redlock::guard held = co_await acquired(m, "held");
        move(b, a);
        co_await released(held, "held");
        // Half moved to b: the release goes to b behind ASKING, as EVAL again.
        redlock::guard g = co_await acquired(m, "g");
        d.begin_slot_migration(slot, a, b);
        d.migrate_keys(slot, a, b);
        co_await released(g, "g");
        BOOST_TEST(redis_command(d[b].port(),
                                 {"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) == "0");
        d.finish_slot_migration(slot, b);

        move(b, a);

        // b runs the release script, then forgets it: the EVALSHA behind ASKING meets NOSCRIPT.
        redlock::guard other = co_await acquired(b_mutex, "b");
        co_await released(other, "other");
        BOOST_TEST_REQUIRE(redis_command(d[b].port(), {"SCRIPT", "FLUSH"}) == "OK");
        redlock::guard last = co_await acquired(m, "last");
        d.begin_slot_migration(slot, a, b);
        d.migrate_keys(slot, a, b);
        co_await released(last, "last");
        BOOST_TEST(redis_command(d[b].port(),
                                 {"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) == "0");
        d.finish_slot_migration(slot, b);
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(locks_reach_the_replica_promoted_after_a_master_dies)
{
    cluster_deployment d(3, 1);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    const std::string key = "failover-lock";
    const std::size_t master = holder_of(d, key);
    const std::size_t replica = 3 + master;  // one replica per master, in master order
    // Granted only once the replica acknowledged the key: it survives the failover. (A
    // replica acknowledges on its own once a second after its sync: the first attempts may
    // be refused, the retries get it.)
    auto acknowledged = c.make_mutex(key, {.expiry = 30s, .wait = 10s, .wait_for_replicas = 1});
    redlock::guard held = run(io, acknowledged.async_acquire(asio::use_awaitable), 20s);

    d[master].kill();
    d.promote_after_master_killed(replica);
    const auto promoted = steady::now();
    BOOST_TEST((redis_get(d[replica].port(), key) == held.value()));
    // The new master refuses a rival: the lock survived.
    auto [rival_ec, rival] =
        run(io, try_get(c.make_mutex(key, {.expiry = 5s, .tries = 1000, .wait = 2s})), 20s);
    BOOST_TEST(rival_ec == redlock::error::taken, rival.last_report().to_string());
    // And the holder's release reaches it there.
    auto [rec] = run(io, held.async_release(asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(!rec, held.last_report().to_string());
    auto [ec, g] =
        run(io, try_get(c.make_mutex(key, {.expiry = 5s, .tries = 1000, .wait = 10s})), 20s);
    BOOST_TEST(!ec, g.last_report().to_string());
    BOOST_TEST_MESSAGE(
        "locked on the promoted replica "
        << std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - promoted).count()
        << " ms after the promotion");
    BOOST_TEST((redis_get(d[replica].port(), key) == g.value()));
    run(io, g.async_release(asio::as_tuple(asio::use_awaitable)));
}

BOOST_AUTO_TEST_CASE(redlock_over_a_cluster_and_two_standalone_servers)
{
    // Three nodes of one quorum: a whole cluster and two plain servers. The client names its
    // helper keys for the cluster on every node, and wakes its waiters by sharded pub/sub on
    // every node.
    cluster_deployment d(3);
    redis_server a;
    redis_server b;
    asio::io_context io;
    const redlock::config cfg = config::from_urls({d.url(), a.url(), b.url()});
    redlock::client holder(io.get_executor(), cfg);
    redlock::client waiter(io.get_executor(), cfg);
    const std::string key = "mixed";
    const std::string counter = "redlock:fence:{mixed}";
    auto held_mutex = holder.make_mutex(key, {.expiry = 20s, .fencing = true});
    auto waiting_mutex =
        waiter.make_mutex(key, {.expiry = 20s, .tries = 2, .retry_delay = 30s, .fencing = true});
    run(
        io,
        [&]() -> asio::awaitable<int> {
            redlock::guard held = co_await held_mutex.acquire();
            // The quorum may have been the two servers, while the cluster's first request
            // waited for its slot map: its key follows.
            for (const std::uint16_t port : {d[holder_of(d, key)].port(), a.port(), b.port()}) {
                BOOST_TEST(co_await settles([&] { return redis_get(port, key) == held.value(); }),
                           port);
                // Each node's counter; the token is the largest of them.
                BOOST_TEST(redis_get(port, counter).has_value(), port);
            }
            const std::uint64_t token = held.fencing_token();
            redlock::guard theirs = co_await woken_by_release(std::move(held), waiting_mutex,
                                                              a.port(), "redlock:released:{mixed}");
            BOOST_TEST(theirs.fencing_token() > token);
            co_await theirs.release();
            co_return 0;
        }(),
        40s);
}

BOOST_AUTO_TEST_CASE(cluster_and_standalone_urls_swapped_are_misconfigurations)
{
    asio::io_context io;
    {
        redis_server standalone;
        redlock::client c(
            io.get_executor(),
            config::from_urls({"redis-cluster://127.0.0.1:" + std::to_string(standalone.port())}));
        auto [ec, g] = run(io, try_get(c.make_mutex("not-a-cluster", {.tries = 5})));
        BOOST_TEST(ec == redlock::error::misconfigured);
        const std::string detail = g.last_report().nodes.at(0).detail;
        BOOST_TEST_MESSAGE(detail);
        BOOST_TEST((detail.find("cluster support disabled") != std::string::npos));
        BOOST_TEST((detail.find("redis://host:port") != std::string::npos));
        BOOST_TEST((g.last_report().nodes.at(0).code == node_errc::wrong_mode));
    }
    cluster_deployment d(3);
    // A key whose slot is not on the first master, asked of it as a standalone server.
    std::string key = "elsewhere-0";
    for (int i = 1; holder_of(d, key) == 0; ++i) {
        key = "elsewhere-" + std::to_string(i);
    }
    redlock::client c(io.get_executor(),
                      config::from_urls({"redis://127.0.0.1:" + std::to_string(d[0].port())}));
    auto [ec, g] = run(io, try_get(c.make_mutex(key, {.tries = 5})));
    BOOST_TEST(ec == redlock::error::misconfigured);
    const std::string detail = g.last_report().nodes.at(0).detail;
    BOOST_TEST_MESSAGE(detail);
    BOOST_TEST((detail.find("redis-cluster://") != std::string::npos));
    BOOST_TEST((g.last_report().nodes.at(0).code == node_errc::redirected));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
