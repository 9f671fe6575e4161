// SPDX-License-Identifier: BSL-1.0
#include "core/fifo.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>

using namespace redlock::detail;

BOOST_AUTO_TEST_SUITE(core_fifo)

BOOST_AUTO_TEST_CASE(values_leave_in_the_order_they_came)
{
    fifo<int> q;
    BOOST_TEST(q.empty());
    for (int i = 0; i < 5; ++i) {
        q.push_back(i);
    }
    BOOST_TEST(q.size() == 5u);
    BOOST_TEST(q.front() == 0);
    BOOST_TEST(q[4] == 4);
    for (int i = 0; i < 5; ++i) {
        BOOST_TEST(q.pop_front() == i);
    }
    BOOST_TEST(q.empty());
}

// Pushes and pops interleaved so that the ring wraps, then grows while wrapped.
BOOST_AUTO_TEST_CASE(order_survives_wrapping_and_growth)
{
    fifo<int> q;
    int next_in = 0;
    int next_out = 0;
    for (int round = 0; round < 50; ++round) {
        for (int k = 0; k < 7; ++k) {
            q.push_back(next_in++);
        }
        for (int k = 0; k < 5; ++k) {
            BOOST_TEST(q.pop_front() == next_out++);
        }
        for (std::size_t i = 0; i < q.size(); ++i) {
            BOOST_TEST(q[i] == next_out + static_cast<int>(i));
        }
    }
    while (!q.empty()) {
        BOOST_TEST(q.pop_front() == next_out++);
    }
    BOOST_TEST(next_out == next_in);
}

// What a value owns goes when it leaves, not when its slot is reused.
BOOST_AUTO_TEST_CASE(a_value_that_leaves_releases_what_it_owns)
{
    auto owned = std::make_shared<int>(7);
    fifo<std::shared_ptr<int>> q;
    q.push_back(owned);
    q.push_back(owned);
    q.push_back(owned);
    BOOST_TEST(owned.use_count() == 4);
    {
        auto out = q.pop_front();
        BOOST_TEST(owned.use_count() == 4);
    }
    BOOST_TEST(owned.use_count() == 3);
    q.clear();
    BOOST_TEST(q.empty());
    BOOST_TEST(owned.use_count() == 1);
    q.push_back(owned);
    BOOST_TEST(*q.front() == 7);
}

BOOST_AUTO_TEST_CASE(emptied_after_a_burst_it_is_usable_again)
{
    fifo<int> q;
    const int burst = static_cast<int>(fifo<int>::kept_capacity) * 3;
    for (int i = 0; i < burst; ++i) {
        q.push_back(i);
    }
    for (int i = 0; i < burst; ++i) {
        BOOST_TEST_REQUIRE(q.pop_front() == i);
    }
    BOOST_TEST(q.empty());
    q.push_back(1);
    q.push_back(2);
    BOOST_TEST(q.pop_front() == 1);
    BOOST_TEST(q.pop_front() == 2);
}

BOOST_AUTO_TEST_SUITE_END()
