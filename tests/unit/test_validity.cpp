// SPDX-License-Identifier: BSL-1.0
#include "lock/validity.hpp"

#include <boost/test/unit_test.hpp>

using namespace std::chrono_literals;
using namespace redlock::detail;

BOOST_AUTO_TEST_SUITE(validity)

BOOST_AUTO_TEST_CASE(drift_is_expiry_times_factor_plus_2ms)
{
    BOOST_TEST((drift(10s, 0.01) == 102ms));
    BOOST_TEST((drift(8000ms, 0.01) == 82ms));
    BOOST_TEST((drift(1000ms, 0.0) == 2ms));
    BOOST_TEST((drift(3ms, 0.5) == 3500us));  // sub-millisecond precision is kept
}

BOOST_AUTO_TEST_CASE(valid_until_is_start_plus_expiry_minus_drift)
{
    const clock::time_point start = clock::time_point{} + 1h;
    BOOST_TEST((valid_until(start, 10s, 0.01) == start + 9898ms));
    BOOST_TEST((valid_until(start, 100ms, 0.0) == start + 98ms));
}

BOOST_AUTO_TEST_CASE(remaining_is_expiry_minus_elapsed_minus_drift)
{
    const clock::time_point start = clock::time_point{} + 1h;
    const auto until = valid_until(start, 10s, 0.01);
    BOOST_TEST((remaining(until, start) == 9898ms));
    BOOST_TEST((remaining(until, start + 1500ms) == 10s - 1500ms - 102ms));
    BOOST_TEST((remaining(until, until) == 0us));
    BOOST_TEST((remaining(until, until + 5ms) == -5ms));
}

BOOST_AUTO_TEST_CASE(node_timeout_is_expiry_times_factor)
{
    BOOST_TEST((node_timeout(10s, 0.05) == 500ms));
    BOOST_TEST((node_timeout(30ms, 0.05) == 1500us));
}

BOOST_AUTO_TEST_CASE(node_timeout_has_a_1ms_floor)
{
    BOOST_TEST((node_timeout(10ms, 0.05) == 1ms));  // 500 us raised to 1 ms
    BOOST_TEST((node_timeout(20ms, 0.05) == 1ms));  // exactly at the floor
    BOOST_TEST((node_timeout(8000ms, 0.0) == 1ms));
}

BOOST_AUTO_TEST_SUITE_END()
