// SPDX-License-Identifier: BSL-1.0
// The decisions of a guard's operations: release, extend, valid and wait_lost, from the lock
// as they find it and their round's answers.
#include "lock/guard_op_fsm.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>

using namespace redlock::detail;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using redlock::error;
using step = guard_step;
using action = guard_op_fsm::action;

namespace {

const auto t0 = clock::time_point{} + 1h;

// Expiry 3 s, drift 1 %: an extension started at `s` holds until s + 3000 ms - 32 ms.
const extension_rules plain{.expiry = 3000ms, .drift_factor = 0.01};
const extension_rules limited{
    .expiry = 3000ms, .drift_factor = 0.01, .auto_extend = true, .extend_limit = 2};

// Answers of five nodes.
tally answers(std::size_t ok, std::size_t taken, std::size_t missing, std::size_t failed)
{
    return tally{.nodes = 5, .ok = ok, .taken = taken, .missing = missing, .failed = failed};
}

const tally confirmed = answers(3, 0, 0, 2);
const tally partial = answers(2, 0, 0, 3);        // a minority, the rest silent
const tally gone = answers(1, 1, 2, 1);           // a majority no longer holds it
const tally split = answers(2, 1, 1, 1);          // neither: 2 not ours, 3 may be
const tally misconfigured = answers(1, 0, 0, 4);  // errors that rule out a quorum

// A held lock, valid for the rest of its first 3 s.
guard_facts held(clock::time_point now = t0)
{
    return guard_facts{.owns = true, .until = t0 + 2968ms, .now = now};
}

round_result after(const tally& t, clock::time_point now, bool watched = true)
{
    return round_result{
        .answers = t, .cancelled = false, .now = now, .until = t0 + 2968ms, .watched = watched};
}

bool completes_with(const action& a, error_code ec)
{
    return a.step == step::complete && a.ec == ec;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(guard_op_decisions)

BOOST_AUTO_TEST_CASE(a_release_confirmed_by_a_quorum_succeeds)
{
    guard_op_fsm fsm(guard_op::release, plain);
    const action first = fsm.start(held());
    BOOST_TEST((first.step == step::run_round));
    BOOST_TEST(first.released);  // its watch stops before the round
    const action done = fsm.round_done(after(confirmed, t0 + 5ms));
    BOOST_TEST(completes_with(done, {}));
    BOOST_TEST(!done.released);
    BOOST_TEST(!done.declare_lost);
}

BOOST_AUTO_TEST_CASE(a_release_without_a_quorum_is_not_held_whatever_the_others_said)
{
    for (const tally& t : {partial, gone, split, misconfigured}) {
        guard_op_fsm fsm(guard_op::release, plain);
        fsm.start(held());
        const action done = fsm.round_done(after(t, t0 + 5ms));
        BOOST_TEST(completes_with(done, error::not_held));
        BOOST_TEST(!done.declare_lost);  // a released lock is no longer watched
    }
}

BOOST_AUTO_TEST_CASE(a_release_of_a_lock_not_held_sends_nothing)
{
    guard_op_fsm fsm(guard_op::release, plain);
    guard_facts f = held();
    f.owns = false;  // released before, or by a racing destructor
    const action done = fsm.start(f);
    BOOST_TEST(completes_with(done, error::not_held));
    BOOST_TEST(!done.released);
}

BOOST_AUTO_TEST_CASE(a_release_after_shutdown_is_refused_and_the_guard_owns_nothing)
{
    guard_op_fsm fsm(guard_op::release, plain);
    guard_facts f = held();
    f.shut_down = true;
    f.lost = true;  // shut_down, not lost or not_held, whatever the lock's state
    const action done = fsm.start(f);
    BOOST_TEST(completes_with(done, error::shut_down));
    BOOST_TEST(done.released);
}

BOOST_AUTO_TEST_CASE(a_cancelled_release_completes_aborted_whatever_the_answers)
{
    guard_op_fsm fsm(guard_op::release, plain);
    BOOST_TEST(fsm.start(held()).released);
    round_result r = after(confirmed, t0 + 5ms);
    r.cancelled = true;
    BOOST_TEST(completes_with(fsm.round_done(r), asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(an_extension_confirmed_in_time_moves_the_validity_from_its_start)
{
    const auto start = t0 + 1000ms;
    guard_op_fsm fsm(guard_op::extend, plain);
    const action first = fsm.start(held(start));
    BOOST_TEST((first.step == step::run_round));
    BOOST_TEST((first.start == start));
    BOOST_TEST(!first.released);
    const action done = fsm.round_done(after(confirmed, start + 20ms));
    BOOST_TEST(completes_with(done, {}));
    BOOST_TEST(done.extended);
    BOOST_TEST((done.start == start));
    BOOST_TEST((done.until == start + 2968ms));
}

BOOST_AUTO_TEST_CASE(an_extension_is_refused_before_any_round)
{
    guard_facts not_held = held();
    not_held.owns = false;
    guard_facts down = held();
    down.shut_down = true;
    guard_facts lost = held();
    lost.lost = true;
    guard_facts expired = held(t0 + 2968ms);  // its validity has just run out
    const std::pair<guard_facts, error_code> cases[] = {
        {not_held, error::not_held},
        {down, error::shut_down},
        {lost, error::lost},
        {expired, error::expired},
    };
    for (const auto& [facts, ec] : cases) {
        guard_op_fsm fsm(guard_op::extend, plain);
        const action done = fsm.start(facts);
        BOOST_TEST(completes_with(done, ec));
        BOOST_TEST(!done.extended);
    }
}

BOOST_AUTO_TEST_CASE(the_extension_limit_bounds_manual_extensions_too)
{
    guard_facts f = held();
    f.extensions = 1;
    BOOST_TEST((guard_op_fsm(guard_op::extend, limited).start(f).step == step::run_round));
    f.extensions = 2;
    BOOST_TEST(
        completes_with(guard_op_fsm(guard_op::extend, limited).start(f), error::extend_failed));
    // Without auto_extend the limit bounds nothing.
    extension_rules manual = limited;
    manual.auto_extend = false;
    BOOST_TEST((guard_op_fsm(guard_op::extend, manual).start(f).step == step::run_round));
}

BOOST_AUTO_TEST_CASE(a_partial_or_failed_extension_fails_without_declaring_the_lock_lost)
{
    for (const tally& t : {partial, split, misconfigured}) {
        guard_op_fsm fsm(guard_op::extend, plain);
        fsm.start(held());
        const action done = fsm.round_done(after(t, t0 + 20ms));
        BOOST_TEST(completes_with(done, error::extend_failed));
        BOOST_TEST(!done.extended);
        BOOST_TEST(!done.declare_lost);  // no evidence that the lock is gone
    }
}

BOOST_AUTO_TEST_CASE(an_extension_that_finds_the_lock_gone_declares_a_watched_lock_lost)
{
    guard_op_fsm watched(guard_op::extend, plain);
    watched.start(held());
    const action done = watched.round_done(after(gone, t0 + 20ms, true));
    BOOST_TEST(completes_with(done, error::extend_failed));
    BOOST_TEST(done.declare_lost);

    guard_op_fsm unwatched(guard_op::extend, plain);
    unwatched.start(held());
    BOOST_TEST(!unwatched.round_done(after(gone, t0 + 20ms, false)).declare_lost);
}

BOOST_AUTO_TEST_CASE(a_failed_extension_after_the_validity_ran_out_is_expired)
{
    guard_op_fsm fsm(guard_op::extend, plain);
    fsm.start(held(t0 + 2900ms));
    BOOST_TEST(completes_with(fsm.round_done(after(partial, t0 + 2968ms)), error::expired));
}

BOOST_AUTO_TEST_CASE(a_quorum_that_answers_after_the_new_validity_is_no_extension)
{
    guard_op_fsm fsm(guard_op::extend, plain);
    fsm.start(held());
    round_result r = after(confirmed, t0 + 2968ms);
    r.until = t0 + 5000ms;  // the watchdog extended it meanwhile
    const action done = fsm.round_done(r);
    BOOST_TEST(completes_with(done, error::extend_failed));
    BOOST_TEST(!done.extended);
}

BOOST_AUTO_TEST_CASE(a_cancelled_extension_changes_nothing)
{
    for (const tally& t : {confirmed, gone}) {
        guard_op_fsm fsm(guard_op::extend, plain);
        fsm.start(held());
        round_result r = after(t, t0 + 20ms);
        r.cancelled = true;
        const action done = fsm.round_done(r);
        BOOST_TEST(completes_with(done, asio::error::operation_aborted));
        BOOST_TEST(!done.extended);
        BOOST_TEST(!done.declare_lost);
    }
}

BOOST_AUTO_TEST_CASE(valid_tells_whether_a_quorum_holds_the_lock)
{
    guard_op_fsm yes(guard_op::valid, plain);
    BOOST_TEST((yes.start(held()).step == step::run_round));
    const action held_by_quorum = yes.round_done(after(confirmed, t0 + 5ms));
    BOOST_TEST(completes_with(held_by_quorum, {}));
    BOOST_TEST(held_by_quorum.valid);
    // Node failures count as "not held", without an error.
    for (const tally& t : {partial, gone, split, misconfigured}) {
        guard_op_fsm no(guard_op::valid, plain);
        no.start(held());
        const action done = no.round_done(after(t, t0 + 5ms));
        BOOST_TEST(completes_with(done, {}));
        BOOST_TEST(!done.valid);
        BOOST_TEST(!done.declare_lost);
    }
}

BOOST_AUTO_TEST_CASE(valid_is_refused_for_a_guard_without_lock_or_after_shutdown_or_cancelled)
{
    guard_facts f = held();
    f.owns = false;
    BOOST_TEST(completes_with(guard_op_fsm(guard_op::valid, plain).start(f), error::not_held));
    f = held();
    f.shut_down = true;
    BOOST_TEST(completes_with(guard_op_fsm(guard_op::valid, plain).start(f), error::shut_down));
    guard_op_fsm fsm(guard_op::valid, plain);
    fsm.start(held());
    round_result r = after(confirmed, t0 + 5ms);
    r.cancelled = true;
    const action done = fsm.round_done(r);
    BOOST_TEST(completes_with(done, asio::error::operation_aborted));
    BOOST_TEST(!done.valid);
}

BOOST_AUTO_TEST_CASE(wait_lost_watches_and_waits_until_the_lock_is_lost)
{
    guard_op_fsm fsm(guard_op::wait_lost, plain);
    const action first = fsm.start(held());
    BOOST_TEST((first.step == step::wait_for_loss));
    BOOST_TEST(first.watch);
    // Woken with nothing changed (the event's timer): it waits on, already watching.
    const action again = fsm.woken(false, true, false);
    BOOST_TEST((again.step == step::wait_for_loss));
    BOOST_TEST(!again.watch);
    BOOST_TEST(completes_with(fsm.woken(true, true, false), error::lost));
    // Lost wins over a release or a cancellation that came with it.
    BOOST_TEST(completes_with(fsm.woken(true, false, true), error::lost));
    BOOST_TEST(completes_with(fsm.woken(false, false, false), error::not_held));
    BOOST_TEST(completes_with(fsm.woken(false, true, true), asio::error::operation_aborted));
    BOOST_TEST(completes_with(fsm.woken(false, false, true), asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(wait_lost_completes_at_once_without_lock_lost_or_after_shutdown)
{
    guard_facts f = held();
    f.owns = false;
    BOOST_TEST(completes_with(guard_op_fsm(guard_op::wait_lost, plain).start(f), error::not_held));
    f = held();
    f.lost = true;
    BOOST_TEST(completes_with(guard_op_fsm(guard_op::wait_lost, plain).start(f), error::lost));
    f.shut_down = true;  // after shutdown, even a lost lock's wait is refused
    const action done = guard_op_fsm(guard_op::wait_lost, plain).start(f);
    BOOST_TEST(completes_with(done, error::shut_down));
    BOOST_TEST(!done.watch);
}

BOOST_AUTO_TEST_CASE(a_lock_is_gone_once_too_few_nodes_may_still_hold_it)
{
    BOOST_TEST(definitely_gone(gone));
    BOOST_TEST(!definitely_gone(split));
    BOOST_TEST(!definitely_gone(misconfigured));
    // A semaphore's quorum of 4 of 5: two nodes without it are enough.
    tally sem = answers(3, 1, 1, 0);
    sem.need = 4;
    BOOST_TEST(definitely_gone(sem));
    BOOST_TEST((judge_extension(confirmed, t0, t0 + 1ms) == extension_verdict::confirmed));
    BOOST_TEST((judge_extension(confirmed, t0 + 1ms, t0 + 1ms) == extension_verdict::failed));
    BOOST_TEST((judge_extension(gone, t0, t0 + 1ms) == extension_verdict::gone));
    BOOST_TEST((judge_extension(partial, t0, t0 + 1ms) == extension_verdict::failed));
}

BOOST_AUTO_TEST_SUITE_END()
