// SPDX-License-Identifier: BSL-1.0
#define BOOST_TEST_MODULE harness_selftest
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/redis_server.hpp"

using namespace redlock::test;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

bool contains(const std::string& haystack, const std::string& needle)
{
    return haystack.find(needle) != std::string::npos;
}

// Runs f, which must throw std::runtime_error, and returns the message.
template <class F>
std::string error_of(F&& f)
{
    try {
        f();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    BOOST_FAIL("expected std::runtime_error");
    return {};
}

// A reaped process is gone at once; a zombie would still accept signal 0.
bool process_gone(pid_t pid)
{
    return ::kill(pid, 0) == -1 && errno == ESRCH;
}

}  // namespace

BOOST_AUTO_TEST_CASE(cluster_set_get_pttl)
{
    redis_cluster c(3);
    BOOST_TEST(c.size() == 3u);
    std::set<std::uint16_t> ports;
    for (std::size_t i = 0; i < c.size(); ++i) {
        ports.insert(c[i].port());
        BOOST_TEST(c.urls()[i] == "redis://127.0.0.1:" + std::to_string(c[i].port()));
    }
    BOOST_TEST(ports.size() == 3u);

    const std::string key("k\0\xff", 3), value("v\0\r\n", 4);  // binary-safe both ways
    redis_set(c[0].port(), key, value, 5000);
    BOOST_TEST(redis_get(c[0].port(), key).value_or("<absent>") == value);
    const auto ttl = redis_pttl(c[0].port(), key);
    BOOST_TEST((ttl > 4000 && ttl <= 5000), "pttl " << ttl);
    BOOST_TEST(!redis_get(c[1].port(), key).has_value());  // independent masters
    BOOST_TEST(redis_pttl(c[1].port(), key) == -2);
    redis_set(c[1].port(), "plain", "x");
    BOOST_TEST(redis_pttl(c[1].port(), "plain") == -1);

    BOOST_TEST(redis_command(c[2].port(), {"INCRBY", "n", "5"}) == "5");
    BOOST_TEST(redis_command(c[2].port(), {"GET", "missing"}) == "(nil)");
    BOOST_TEST(redis_command(c[2].port(), {"RPUSH", "l", "a", "b"}) == "2");
    BOOST_TEST(redis_command(c[2].port(), {"LRANGE", "l", "0", "-1"}) == "a b");
    BOOST_TEST(redis_command(c[2].port(), {"SET", "s", "1"}) == "OK");
    BOOST_TEST(contains(redis_command(c[2].port(), {"NOSUCHCMD"}), "ERR"));

    c.flushall();
    BOOST_TEST(!redis_get(c[0].port(), key).has_value());
    BOOST_TEST(redis_command(c[2].port(), {"DBSIZE"}) == "0");
}

BOOST_AUTO_TEST_CASE(paused_node_times_out_then_recovers)
{
    redis_cluster c(3);
    c[1].resume();  // resume before any pause is harmless
    c[1].pause();
    c[1].pause();
    BOOST_TEST(c[1].paused());

    const auto t0 = steady::now();
    const auto msg = error_of([&] { redis_command(c[1].port(), {"PING"}); });
    const auto waited = steady::now() - t0;
    BOOST_TEST_MESSAGE("paused node: " << msg);
    BOOST_TEST(contains(msg, std::to_string(c[1].port())));
    BOOST_TEST(contains(msg, "PING"));
    BOOST_TEST((waited >= 900ms && waited < 3s));
    BOOST_TEST(redis_command(c[0].port(), {"PING"}) == "PONG");
    BOOST_CHECK_THROW(c.flushall(), std::logic_error);

    c[1].resume();
    c[1].resume();
    BOOST_TEST(!c[1].paused());
    BOOST_TEST(redis_command(c[1].port(), {"PING"}) == "PONG");
    c[2].pause();  // the destructor must cope with a stopped server
}

BOOST_AUTO_TEST_CASE(kill_and_restart_on_same_port_loses_keys)
{
    redis_server s;
    const auto port = s.port();
    const auto old_pid = s.pid();
    redis_set(port, "k", "v");

    s.kill();
    s.kill();
    BOOST_TEST(!s.running());
    BOOST_TEST(process_gone(old_pid));
    BOOST_TEST(contains(error_of([&] { redis_get(port, "k"); }), std::to_string(port)));

    s.restart();
    BOOST_TEST(s.running());
    BOOST_TEST(s.port() == port);
    BOOST_TEST(s.pid() != old_pid);
    BOOST_TEST(!redis_get(port, "k").has_value());

    s.pause();
    s.restart();  // from the paused state, without an explicit kill
    BOOST_TEST(redis_command(port, {"PING"}) == "PONG");
}

BOOST_AUTO_TEST_CASE(server_that_dies_on_its_own_is_noticed)
{
    redis_server s;
    BOOST_CHECK_THROW(redis_command(s.port(), {"DEBUG", "SEGFAULT"}), std::runtime_error);
    const auto deadline = steady::now() + 5s;
    while (s.running() && steady::now() < deadline)
        std::this_thread::sleep_for(2ms);
    BOOST_TEST(!s.running());
    s.restart();
    BOOST_TEST(redis_command(s.port(), {"PING"}) == "PONG");
}

BOOST_AUTO_TEST_CASE(unused_port_refuses_connections)
{
    const auto port = unused_loopback_port();
    BOOST_TEST(port != 0);
    const auto msg = error_of([&] { redis_command(port, {"PING"}); });
    BOOST_TEST_MESSAGE("unused port: " << msg);
    BOOST_TEST(contains(msg, std::to_string(port)));
    BOOST_TEST(contains(msg, "Connection refused"));
}

BOOST_AUTO_TEST_CASE(destructor_cleans_up_process_and_dir)
{
    pid_t pid = 0;
    std::string dir;
    {
        // redis overwrites /proc/PID/environ (setproctitle), so observe the extra variable
        // through Debian's jemalloc instead.
        redis_server s({}, {"MALLOC_CONF=narenas:3"});
        pid = s.pid();
        dir = s.dir();
        BOOST_TEST(std::filesystem::exists(dir + "/redis.log"));
        BOOST_TEST(contains(redis_command(s.port(), {"MEMORY", "MALLOC-STATS"}), "opt.narenas: 3"));
        s.pause();
    }
    BOOST_TEST(process_gone(pid));
    BOOST_TEST(!std::filesystem::exists(dir));
}

BOOST_AUTO_TEST_CASE(bad_arguments_report_the_log)
{
    const auto t0 = steady::now();
    const auto msg = error_of([] { redis_server s({"--no-such-directive", "1"}); });
    BOOST_TEST_MESSAGE("bad args: " << msg);
    BOOST_TEST(contains(msg, "Bad directive"));
    BOOST_TEST((steady::now() - t0 < 2s));
}

BOOST_AUTO_TEST_CASE(cluster_deployment_slots_and_migration)
{
    const auto t0 = steady::now();
    cluster_deployment c(3);
    BOOST_TEST_MESSAGE("3-master cluster ready after " << (steady::now() - t0) / 1ms << " ms");
    BOOST_TEST(c.size() == 3u);
    std::string url = "redis-cluster://";
    std::set<std::string> ids;
    for (std::size_t i = 0; i < c.size(); ++i) {
        url += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(c[i].port());
        BOOST_TEST(c[i].port() <= 55535);
        BOOST_TEST(contains(redis_command(c[i].port(), {"CLUSTER", "INFO"}), "cluster_state:ok"));
        BOOST_TEST(c.node_id(i).size() == 40u);
        ids.insert(c.node_id(i));
    }
    BOOST_TEST(c.url() == url);
    BOOST_TEST(ids.size() == 3u);

    // The local CRC16 against the server's own CLUSTER KEYSLOT, hash-tag corner cases included.
    BOOST_TEST(cluster_deployment::slot_of("foo") == 12182);
    for (const std::string key :
         {"foo", "bar", "", "{user1000}.following", "{user1000}.followers", "a{}b", "{}", "{a",
          "a}b{c}", "{{x}}", "x{y}{z}", "\xff\x00\x80"}) {
        BOOST_TEST(std::to_string(cluster_deployment::slot_of(key)) ==
                       redis_command(c[0].port(), {"CLUSTER", "KEYSLOT", key}),
                   "key '" << key << "'");
    }
    BOOST_TEST(cluster_deployment::slot_of("{user1000}.following") ==
               cluster_deployment::slot_of("user1000"));
    BOOST_TEST(cluster_deployment::slot_of("a{}b") != cluster_deployment::slot_of("ab"));

    // redis-cli splits the slots evenly in creation order.
    BOOST_TEST(c.owner_of_slot(0).value_or(99) == 0u);
    BOOST_TEST(c.owner_of_slot(16383).value_or(99) == 2u);
    const auto slot = cluster_deployment::slot_of("foo");
    const auto from = c.owner_of_slot(slot).value();
    const auto to = (from + 1) % c.size();
    BOOST_TEST(from == 2u);
    // More keys than one MIGRATE batch, all in foo's slot.
    BOOST_TEST(redis_command(c[from].port(), {"SET", "foo", "bar"}) == "OK");
    for (int i = 0; i < 250; ++i)
        redis_set(c[from].port(), "{foo}" + std::to_string(i), "v");
    BOOST_TEST(contains(redis_command(c[to].port(), {"GET", "foo"}), "MOVED 12182 "));

    // A wrong step surfaces the server's error instead of passing silently.
    const auto wrong = error_of([&] { c.begin_slot_migration(slot, to, from); });
    BOOST_TEST_MESSAGE("wrong migration: " << wrong);
    BOOST_TEST(contains(wrong, "already the owner"));

    const auto m0 = steady::now();
    c.begin_slot_migration(slot, from, to);
    BOOST_TEST(redis_command(c[from].port(), {"GET", "foo"}) == "bar");  // not moved yet
    c.migrate_keys(slot, from, to);
    BOOST_TEST(redis_command(c[from].port(), {"GET", "foo"}) ==
               "ASK 12182 127.0.0.1:" + std::to_string(c[to].port()));
    c.finish_slot_migration(slot, to);
    BOOST_TEST_MESSAGE("slot migration of 251 keys: " << (steady::now() - m0) / 1ms << " ms");
    BOOST_TEST(c.owner_of_slot(slot).value_or(99) == to);
    BOOST_TEST(redis_command(c[to].port(), {"GET", "foo"}) == "bar");
    BOOST_TEST(redis_command(c[to].port(), {"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) ==
               "251");
    BOOST_TEST(contains(redis_command(c[from].port(), {"GET", "foo"}),
                        "MOVED 12182 127.0.0.1:" + std::to_string(c[to].port())));
    c.wait_until_ok();

    c.flushall();
    BOOST_TEST(redis_command(c[to].port(), {"DBSIZE"}) == "0");
}

BOOST_AUTO_TEST_CASE(cluster_deployment_replica_takeover)
{
    const auto t0 = steady::now();
    cluster_deployment c(1, 1);
    BOOST_TEST_MESSAGE("1+1 cluster ready after " << (steady::now() - t0) / 1ms << " ms");
    BOOST_TEST(c.size() == 2u);
    BOOST_TEST(contains(redis_command(c[1].port(), {"ROLE"}),
                        "slave 127.0.0.1 " + std::to_string(c[0].port())));
    BOOST_TEST(c.owner_of_slot(0).value_or(99) == 0u);
    BOOST_TEST(redis_command(c[0].port(), {"SET", "foo", "bar"}) == "OK");
    // Not WAIT: each redis_command is a new connection, whose WAIT has no write to wait for.
    // DBSIZE is keyless, so the replica answers it instead of redirecting.
    BOOST_TEST(eventually([&] { return redis_command(c[1].port(), {"DBSIZE"}) == "1"; }));
    BOOST_CHECK_THROW(c.promote_after_master_killed(0), std::runtime_error);  // no replica

    const auto old_id = c.node_id(0);
    c[0].kill();
    const auto p0 = steady::now();
    c.promote_after_master_killed(1);
    BOOST_TEST_MESSAGE("takeover: " << (steady::now() - p0) / 1ms << " ms");
    BOOST_TEST(c.owner_of_slot(0).value_or(99) == 1u);
    BOOST_TEST(c.owner_of_slot(16383).value_or(99) == 1u);
    BOOST_TEST(contains(redis_command(c[1].port(), {"ROLE"}), "master"));
    BOOST_TEST(redis_command(c[1].port(), {"GET", "foo"}) == "bar");
    BOOST_TEST(redis_command(c[1].port(), {"SET", "foo", "baz"}) == "OK");

    // The old master comes back with its identity (nodes.conf) and follows the new one.
    const auto r0 = steady::now();
    c[0].restart();
    BOOST_TEST(redis_command(c[0].port(), {"CLUSTER", "MYID"}) == old_id);
    BOOST_TEST(eventually(
        [&] {
            return contains(redis_command(c[0].port(), {"ROLE"}),
                            "slave 127.0.0.1 " + std::to_string(c[1].port()));
        },
        10s));
    c.wait_until_ok();
    BOOST_TEST_MESSAGE("old master rejoined as replica: " << (steady::now() - r0) / 1ms << " ms");
    c.flushall();  // skips the replica
    BOOST_TEST(redis_command(c[1].port(), {"DBSIZE"}) == "0");
}

// redis-cli shuffles replicas among masters at random; the harness restores the promised layout.
BOOST_AUTO_TEST_CASE(cluster_deployment_replica_layout_and_takeover)
{
    const auto t0 = steady::now();
    cluster_deployment c(3, 1);
    BOOST_TEST_MESSAGE("3+3 cluster ready after " << (steady::now() - t0) / 1ms << " ms");
    BOOST_TEST(c.size() == 6u);
    for (std::size_t m = 0; m < 3; ++m) {
        BOOST_TEST(contains(redis_command(c[m].port(), {"ROLE"}), "master"));
        BOOST_TEST(contains(redis_command(c[3 + m].port(), {"ROLE"}),
                            "slave 127.0.0.1 " + std::to_string(c[m].port()) + " connected"));
    }
    std::string key = "k";  // a key on master 1
    while (c.owner_of_slot(cluster_deployment::slot_of(key)).value_or(99) != 1u)
        key += "k";
    redis_set(c[1].port(), key, "x");
    BOOST_TEST(eventually([&] { return redis_command(c[4].port(), {"DBSIZE"}) == "1"; }));

    c[1].kill();
    const auto p0 = steady::now();
    c.promote_after_master_killed(4);
    BOOST_TEST_MESSAGE("takeover with 3 masters: " << (steady::now() - p0) / 1ms << " ms");
    BOOST_TEST(c.owner_of_slot(cluster_deployment::slot_of(key)).value_or(99) == 4u);
    BOOST_TEST(c.owner_of_slot(0).value_or(99) == 0u);  // the other masters keep theirs
    BOOST_TEST(redis_get(c[4].port(), key).value_or("<absent>") == "x");
    BOOST_TEST(contains(redis_command(c[0].port(), {"GET", key}),
                        "MOVED " + std::to_string(cluster_deployment::slot_of(key)) +
                            " 127.0.0.1:" + std::to_string(c[4].port())));
    c.flushall();  // the killed master is skipped
    BOOST_TEST(redis_command(c[4].port(), {"DBSIZE"}) == "0");
}
