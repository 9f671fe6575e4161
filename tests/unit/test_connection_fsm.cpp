// SPDX-License-Identifier: BSL-1.0
// The decisions of a link's socket life: connect on demand, refuse during the back-off, give
// up the socket of a master the Sentinels no longer name.
#include "engine/connection_fsm.hpp"

#include <boost/test/unit_test.hpp>

using namespace redlock::detail;
using namespace std::chrono_literals;
using admission = connection_fsm::admission;
using state = connection_fsm::state;

namespace {

const auto t0 = clock::time_point{} + 1h;

}  // namespace

BOOST_AUTO_TEST_SUITE(connection_decisions)

BOOST_AUTO_TEST_CASE(the_first_request_connects_and_the_next_ones_queue)
{
    connection_fsm fsm(50ms, 2000ms);
    BOOST_TEST((fsm.current() == state::disconnected));
    BOOST_TEST((fsm.admit(t0) == admission::connect));
    BOOST_TEST((fsm.current() == state::connecting));
    BOOST_TEST((fsm.admit(t0) == admission::queue));
    BOOST_TEST(fsm.accepts(fsm.generation()));
    BOOST_TEST(!fsm.connected());  // the first socket: no reconnection
    BOOST_TEST((fsm.current() == state::connected));
    BOOST_TEST((fsm.admit(t0) == admission::queue));
}

BOOST_AUTO_TEST_CASE(after_a_failure_requests_are_refused_until_the_back_off_passed)
{
    connection_fsm fsm(50ms, 2000ms);
    fsm.admit(t0);
    fsm.failed(t0);
    BOOST_TEST((fsm.current() == state::disconnected));
    BOOST_TEST((fsm.admit(t0 + 10ms) == admission::refuse));
    BOOST_TEST(fsm.wait_left(t0 + 10ms).count() == 40);
    BOOST_TEST((fsm.admit(t0 + 49ms) == admission::refuse));
    BOOST_TEST((fsm.admit(t0 + 50ms) == admission::connect));
    BOOST_TEST(fsm.wait_left(t0 + 50ms).count() == 0);
}

BOOST_AUTO_TEST_CASE(the_back_off_doubles_up_to_its_maximum_and_an_answer_resets_it)
{
    connection_fsm fsm(50ms, 300ms);
    auto now = t0;
    const std::chrono::milliseconds expected[] = {50ms, 100ms, 200ms, 300ms, 300ms};
    for (auto pause : expected) {
        BOOST_TEST(fsm.backoff().count() == pause.count());
        BOOST_TEST((fsm.admit(now) == admission::connect));
        fsm.failed(now);
        BOOST_TEST((fsm.admit(now + pause - 1ms) == admission::refuse));
        now += pause;
    }
    BOOST_TEST((fsm.admit(now) == admission::connect));
    BOOST_TEST(!fsm.connected());
    // A server that accepts connections and drops them before answering is not retried at
    // the minimum pause.
    BOOST_TEST(fsm.backoff().count() == 300);
    fsm.answered();
    BOOST_TEST(fsm.backoff().count() == 50);
    fsm.failed(now);
    BOOST_TEST((fsm.admit(now + 50ms) == admission::connect));
    BOOST_TEST(fsm.connected());  // a reconnection
}

BOOST_AUTO_TEST_CASE(after_a_stuck_server_requests_fail_until_a_fresh_socket_had_a_ping_answered)
{
    connection_fsm fsm(50ms, 2000ms);
    fsm.admit(t0);
    fsm.connected();
    fsm.answered();
    fsm.stuck(t0);
    BOOST_TEST(fsm.probing());
    BOOST_TEST((fsm.admit(t0 + 10ms) == admission::refuse));  // the back-off
    BOOST_TEST(fsm.wait_left(t0 + 10ms).count() == 40);
    // The attempt starts, but the request is not written: the server may still be stopped.
    BOOST_TEST((fsm.admit(t0 + 50ms) == admission::probe));
    BOOST_TEST((fsm.current() == state::connecting));
    BOOST_TEST((fsm.admit(t0 + 60ms) == admission::refuse));
    // The PING went unanswered: the back-off doubles, and the next attempt probes again.
    fsm.failed(t0 + 1050ms);
    BOOST_TEST(fsm.probing());
    BOOST_TEST((fsm.admit(t0 + 1100ms) == admission::refuse));
    BOOST_TEST((fsm.admit(t0 + 1150ms) == admission::probe));
    // Answered: requests queue again, and the back-off is back at its minimum.
    BOOST_TEST(fsm.connected());
    BOOST_TEST(!fsm.probing());
    BOOST_TEST(fsm.backoff().count() == 50);
    BOOST_TEST((fsm.admit(t0 + 1200ms) == admission::queue));
}

BOOST_AUTO_TEST_CASE(a_new_master_owes_no_ping)
{
    connection_fsm fsm(50ms, 2000ms);
    fsm.admit(t0);
    fsm.connected();
    fsm.stuck(t0);
    fsm.left_master(t0 + 1ms);
    BOOST_TEST(!fsm.probing());
    BOOST_TEST((fsm.admit(t0 + 1ms) == admission::connect));
}

BOOST_AUTO_TEST_CASE(an_attempt_given_up_meanwhile_cannot_deliver_its_socket)
{
    connection_fsm fsm(50ms, 2000ms);
    fsm.admit(t0);
    const auto attempt = fsm.generation();
    fsm.failed(t0);
    BOOST_TEST(!fsm.accepts(attempt));
    fsm.admit(t0 + 50ms);
    BOOST_TEST(!fsm.accepts(attempt));
    BOOST_TEST(fsm.accepts(fsm.generation()));
    fsm.close();
    BOOST_TEST(!fsm.accepts(fsm.generation()));
}

BOOST_AUTO_TEST_CASE(a_closed_link_refuses_for_good)
{
    connection_fsm fsm(50ms, 2000ms);
    fsm.admit(t0);
    fsm.connected();
    fsm.close();
    BOOST_TEST((fsm.current() == state::closed));
    BOOST_TEST((fsm.admit(t0 + 1h) == admission::refuse));
    fsm.failed(t0 + 1h);  // the socket's I/O ends after the close
    BOOST_TEST((fsm.current() == state::closed));
    BOOST_TEST((fsm.admit(t0 + 2h) == admission::refuse));
}

BOOST_AUTO_TEST_CASE(a_master_switch_gives_up_a_socket_to_another_server_or_under_way)
{
    connection_fsm fsm(50ms, 2000ms);
    BOOST_TEST(!fsm.should_leave(false));  // no socket to give up
    fsm.admit(t0);
    BOOST_TEST(fsm.should_leave(true));  // the attempt may reach the old master
    fsm.connected();
    BOOST_TEST(!fsm.should_leave(true));  // already there
    BOOST_TEST(fsm.should_leave(false));
}

BOOST_AUTO_TEST_CASE(after_leaving_a_master_the_next_request_connects_at_once)
{
    connection_fsm fsm(50ms, 2000ms);
    fsm.admit(t0);
    fsm.failed(t0);
    fsm.admit(t0 + 50ms);
    fsm.failed(t0 + 50ms);  // the back-off is at 200 ms now
    fsm.admit(t0 + 150ms);
    fsm.connected();
    const auto before = fsm.generation();
    fsm.left_master(t0 + 1s);
    BOOST_TEST(fsm.generation() != before);
    BOOST_TEST((fsm.current() == state::disconnected));
    BOOST_TEST((fsm.admit(t0 + 1s) == admission::connect));
    BOOST_TEST(fsm.backoff().count() == 50);
}

BOOST_AUTO_TEST_CASE(equal_bounds_make_a_fixed_pause)
{
    connection_fsm fsm(50ms, 50ms);
    for (int i = 0; i < 3; ++i) {
        const auto now = t0 + i * 50ms;
        BOOST_TEST((fsm.admit(now) == admission::connect));
        fsm.failed(now);
        BOOST_TEST(fsm.wait_left(now).count() == 50);
    }
}

BOOST_AUTO_TEST_SUITE_END()
