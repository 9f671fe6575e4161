// SPDX-License-Identifier: BSL-1.0
#include <redlock/lock_event.hpp>
#include <redlock/report.hpp>

#include <boost/test/unit_test.hpp>

using namespace std::chrono_literals;
using redlock::node_outcome;
using redlock::node_status;
using redlock::report;

BOOST_AUTO_TEST_SUITE(reports)

BOOST_AUTO_TEST_CASE(status_names)
{
    BOOST_TEST(to_string(node_status::ok) == "ok");
    BOOST_TEST(to_string(node_status::taken) == "taken");
    BOOST_TEST(to_string(node_status::missing) == "missing");
    BOOST_TEST(to_string(node_status::timed_out) == "timed out");
    BOOST_TEST(to_string(node_status::error) == "error");
    BOOST_TEST(to_string(node_status::abandoned) == "abandoned");
}

BOOST_AUTO_TEST_CASE(lock_event_kind_names)
{
    using redlock::lock_event_kind;
    BOOST_TEST(to_string(lock_event_kind::acquired) == "acquired");
    BOOST_TEST(to_string(lock_event_kind::acquire_failed) == "acquire_failed");
    BOOST_TEST(to_string(lock_event_kind::released) == "released");
    BOOST_TEST(to_string(lock_event_kind::extended) == "extended");
    BOOST_TEST(to_string(lock_event_kind::extend_failed) == "extend_failed");
    BOOST_TEST(to_string(lock_event_kind::lost) == "lost");
    BOOST_TEST(to_string(static_cast<lock_event_kind>(99)) == "unknown");
}

const report sample{
    .nodes = {{"127.0.0.1:7001", node_status::ok, "", 120us},
              {"127.0.0.1:7002", node_status::timed_out, "no reply within 50 ms", 50ms},
              {"unix:/tmp/r.sock", node_status::error, "connection refused", 0us},
              {"[::1]:7004", node_status::ok, "", 90us}},
    .attempts = 2};

BOOST_AUTO_TEST_CASE(count_by_status)
{
    BOOST_TEST(sample.count(node_status::ok) == 2u);
    BOOST_TEST(sample.count(node_status::timed_out) == 1u);
    BOOST_TEST(sample.count(node_status::error) == 1u);
    BOOST_TEST(sample.count(node_status::taken) == 0u);
    BOOST_TEST(report{}.count(node_status::abandoned) == 0u);
}

BOOST_AUTO_TEST_CASE(to_string_is_one_line_per_node)
{
    BOOST_TEST(sample.to_string() ==
               "127.0.0.1:7001 ok\n"
               "127.0.0.1:7002 timed out (no reply within 50 ms)\n"
               "unix:/tmp/r.sock error (connection refused)\n"
               "[::1]:7004 ok\n");
    BOOST_TEST(report{}.to_string() == "");
}

BOOST_AUTO_TEST_CASE(default_outcome_is_abandoned)
{
    BOOST_TEST((node_outcome{}.status == node_status::abandoned));
    BOOST_TEST(node_outcome{}.detail.empty());
}

BOOST_AUTO_TEST_SUITE_END()
