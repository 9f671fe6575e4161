// SPDX-License-Identifier: BSL-1.0
// The decisions of the watch of one lock, on a fake clock: when it extends, what a failed or
// partial extension leads to, and when the lock is declared lost.
#include "lock/watchdog_fsm.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>

using namespace redlock::detail;
using namespace std::chrono_literals;
using step = watch_step;

namespace {

const auto t0 = clock::time_point{} + 1h;

// Expiry 3 s, drift 1 %: validity 2968 ms from a start; a period of 1 s, retries every
// 150 ms, a coalescing window of 10 ms.
const extension_rules extending{.expiry = 3000ms, .drift_factor = 0.01, .auto_extend = true};

tally answers(std::size_t ok, std::size_t taken, std::size_t missing, std::size_t failed)
{
    return tally{.nodes = 5, .ok = ok, .taken = taken, .missing = missing, .failed = failed};
}

const tally confirmed = answers(4, 0, 0, 1);
const tally partial = answers(2, 0, 0, 3);
const tally gone = answers(2, 0, 3, 0);
const tally misconfigured = answers(0, 0, 0, 5);

// A lock acquired at t0.
watched_lock acquired()
{
    return watched_lock{.until = t0 + 2968ms, .extended_at = t0};
}

bool waits_until(const watch_action& a, clock::time_point at)
{
    return a.step == step::wait && a.at == at;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(watchdog_decisions)

BOOST_AUTO_TEST_CASE(the_periods_follow_the_expiry)
{
    const watchdog_fsm fsm(extending);
    BOOST_TEST((fsm.period() == clock::duration(1000ms)));
    BOOST_TEST((fsm.retry_after() == clock::duration(150ms)));
    BOOST_TEST((fsm.window() == clock::duration(10ms)));
    // A tiny expiry retries no sooner than every millisecond; a long one coalesces at most
    // 50 ms early.
    BOOST_TEST((watchdog_fsm({.expiry = 10ms}).retry_after() == clock::duration(1ms)));
    BOOST_TEST((watchdog_fsm({.expiry = 60s}).window() == clock::duration(50ms)));
}

BOOST_AUTO_TEST_CASE(an_extending_watch_extends_a_period_after_the_acquire)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    BOOST_TEST(waits_until(fsm.start(l), t0 + 1000ms));
    BOOST_TEST((l.next_extend == t0 + 1000ms));
    const watch_action go = fsm.due(l, t0 + 1000ms);
    BOOST_TEST((go.step == step::extend));
    BOOST_TEST((go.at == t0 + 1000ms));
    BOOST_TEST((l.until == t0 + 2968ms));  // nothing changes until the round's answers
}

BOOST_AUTO_TEST_CASE(an_extension_due_within_the_window_goes_early)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    fsm.start(l);
    const watch_action early = fsm.due(l, t0 + 995ms);
    BOOST_TEST((early.step == step::extend));
    BOOST_TEST((early.at == t0 + 995ms));  // its validity counts from its own start
    BOOST_TEST(waits_until(fsm.due(l, t0 + 980ms), t0 + 1000ms));  // too early: wait on
}

BOOST_AUTO_TEST_CASE(a_confirmed_extension_moves_the_validity_and_the_next_extension)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    fsm.start(l);
    const auto start = t0 + 1000ms;
    BOOST_TEST(waits_until(fsm.extension_done(l, start, confirmed, start + 30ms), t0 + 2000ms));
    BOOST_TEST((l.until == start + 2968ms));
    BOOST_TEST((l.extended_at == start));
    BOOST_TEST(l.extensions == 1);
}

BOOST_AUTO_TEST_CASE(a_partial_extension_is_retried_until_the_validity_runs_out)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    fsm.start(l);
    auto now = t0 + 1000ms;
    for (int i = 0; i < 12; ++i) {
        BOOST_TEST((fsm.due(l, now).step == step::extend));
        const watch_action next = fsm.extension_done(l, now, partial, now + 10ms);
        now += 10ms + 150ms;
        BOOST_TEST(waits_until(next, now));
    }
    BOOST_TEST(l.extensions == 0);
    BOOST_TEST((l.until == t0 + 2968ms));
    // The 13th retry would come after the validity: the watch wakes at its end, and the lock
    // is lost.
    BOOST_TEST((fsm.due(l, now).step == step::extend));
    BOOST_TEST(waits_until(fsm.extension_done(l, now, partial, now + 10ms), t0 + 2968ms));
    BOOST_TEST((fsm.due(l, t0 + 2968ms).step == step::declare_lost));
}

BOOST_AUTO_TEST_CASE(a_retry_that_succeeds_resumes_the_period)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    fsm.start(l);
    BOOST_TEST(waits_until(fsm.extension_done(l, t0 + 1000ms, partial, t0 + 1020ms), t0 + 1170ms));
    BOOST_TEST(
        waits_until(fsm.extension_done(l, t0 + 1170ms, confirmed, t0 + 1180ms), t0 + 2170ms));
    BOOST_TEST((l.until == t0 + 1170ms + 2968ms));
}

BOOST_AUTO_TEST_CASE(errors_are_retried_and_are_no_evidence_of_loss)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    fsm.start(l);
    // Every node fails (a misconfigured deployment rules out a quorum): retried all the same.
    BOOST_TEST(
        waits_until(fsm.extension_done(l, t0 + 1000ms, misconfigured, t0 + 1001ms), t0 + 1151ms));
}

BOOST_AUTO_TEST_CASE(answers_that_show_the_lock_gone_declare_it_lost_at_once)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    fsm.start(l);
    BOOST_TEST((fsm.extension_done(l, t0 + 1000ms, gone, t0 + 1010ms).step == step::declare_lost));
    BOOST_TEST((l.until == t0 + 2968ms));
}

BOOST_AUTO_TEST_CASE(a_quorum_that_answers_too_late_is_a_failed_extension)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    fsm.start(l);
    const auto start = t0 + 1000ms;
    const auto late = start + 2968ms;
    // The retry would come after the validity: the watch wakes at the validity's end.
    BOOST_TEST(waits_until(fsm.extension_done(l, start, confirmed, late), t0 + 2968ms));
    BOOST_TEST(l.extensions == 0);
}

BOOST_AUTO_TEST_CASE(without_auto_extend_the_watch_declares_loss_at_the_end_of_validity)
{
    const watchdog_fsm fsm({.expiry = 3000ms, .drift_factor = 0.01});
    watched_lock l = acquired();
    BOOST_TEST(waits_until(fsm.start(l), t0 + 2968ms));
    BOOST_TEST(waits_until(fsm.due(l, t0 + 2000ms), t0 + 2968ms));  // woken early: wait on
    BOOST_TEST((fsm.due(l, t0 + 2968ms).step == step::declare_lost));
}

BOOST_AUTO_TEST_CASE(after_the_limit_the_watch_only_waits_for_the_end_of_validity)
{
    extension_rules rules = extending;
    rules.extend_limit = 2;
    const watchdog_fsm fsm(rules);
    watched_lock l = acquired();
    fsm.start(l);
    fsm.extension_done(l, t0 + 1000ms, confirmed, t0 + 1010ms);
    const watch_action last = fsm.extension_done(l, t0 + 2000ms, confirmed, t0 + 2010ms);
    BOOST_TEST(l.extensions == 2);
    BOOST_TEST(waits_until(last, t0 + 2000ms + 2968ms));
    BOOST_TEST(waits_until(fsm.due(l, t0 + 3000ms), t0 + 4968ms));
    BOOST_TEST((fsm.due(l, t0 + 4968ms).step == step::declare_lost));
}

BOOST_AUTO_TEST_CASE(a_manual_extension_restarts_the_period_from_its_start)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    fsm.start(l);
    l.extended_at = t0 + 600ms;  // the guard's own extension
    l.until = t0 + 600ms + 2968ms;
    BOOST_TEST(waits_until(fsm.extended_elsewhere(l), t0 + 1600ms));
    // One that started before the watch's next extension was planned moves nothing back.
    l.extended_at = t0 + 100ms;
    BOOST_TEST(waits_until(fsm.extended_elsewhere(l), t0 + 1600ms));
}

BOOST_AUTO_TEST_CASE(a_released_or_lost_lock_leaves_the_watch)
{
    const watchdog_fsm fsm(extending);
    watched_lock l = acquired();
    fsm.start(l);
    watched_lock released = l;
    released.owns = false;
    BOOST_TEST((fsm.due(released, t0 + 1000ms).step == step::stop));
    BOOST_TEST(
        (fsm.extension_done(released, t0 + 1000ms, confirmed, t0 + 1010ms).step == step::stop));
    BOOST_TEST(released.extensions == 0);  // an answer after the release extends nothing
    BOOST_TEST((fsm.extended_elsewhere(released).step == step::stop));
    watched_lock lost = l;
    lost.lost = true;
    BOOST_TEST((fsm.start(lost).step == step::stop));
    BOOST_TEST((fsm.due(lost, t0 + 3000ms).step == step::stop));
    BOOST_TEST((fsm.extension_done(lost, t0 + 1000ms, gone, t0 + 1010ms).step == step::stop));
}

BOOST_AUTO_TEST_SUITE_END()
