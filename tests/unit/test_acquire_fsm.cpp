// SPDX-License-Identifier: BSL-1.0
#include "lock/acquire_fsm.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>

using namespace redlock::detail;
using namespace std::chrono_literals;
using step = acquire_step;
namespace asio = boost::asio;

namespace {

const auto t0 = clock::time_point{} + 1h;

acquire_rules rules(int tries)
{
    return acquire_rules{.tries = tries};
}

const attempt_result granted{.quorum_with_validity = true};
const attempt_result taken{.taken_by_other = true, .some_taken = true};
const attempt_result split{.some_taken = true};  // a minority taken, the rest failed
const attempt_result unreachable{};

// Drives `fsm` through one failed attempt and its clean-up; returns what follows.
acquire_fsm::action fail_once(acquire_fsm& fsm, attempt_result r)
{
    BOOST_TEST((fsm.attempted(r, false).step == step::clean_up));
    return fsm.cleaned_up(false, false);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(acquire_decisions)

BOOST_AUTO_TEST_CASE(a_quorum_with_validity_left_is_granted_at_once)
{
    acquire_fsm fsm(rules(3));
    BOOST_TEST((fsm.start(false).step == step::attempt));
    BOOST_TEST((fsm.attempted(granted, false).step == step::grant));
    BOOST_TEST(fsm.attempt_number() == 1);
}

BOOST_AUTO_TEST_CASE(a_failed_attempt_is_cleaned_up_then_retried_after_the_delay)
{
    acquire_fsm fsm(rules(3));
    fsm.start(false);
    auto next = fail_once(fsm, taken);
    BOOST_TEST((next.step == step::choose_delay));
    BOOST_TEST(next.attempt_number == 1);
    // Another owner holds it: a release may wake the retry.
    BOOST_TEST(next.watch_releases);
    next = fsm.delay_chosen(70ms, t0);
    BOOST_TEST((next.step == step::pause));
    BOOST_TEST(next.delay.count() == 70);
    BOOST_TEST((fsm.paused(false).step == step::attempt));
    BOOST_TEST(fsm.attempt_number() == 2);
    // Watching goes on: it is asked for once.
    BOOST_TEST(!fail_once(fsm, taken).watch_releases);
}

BOOST_AUTO_TEST_CASE(only_a_key_held_by_another_owner_makes_the_acquire_listen_for_releases)
{
    acquire_fsm fsm(rules(3));
    fsm.start(false);
    BOOST_TEST(!fail_once(fsm, unreachable).watch_releases);

    acquire_fsm quiet({.tries = 3, .wake_on_release = false});
    quiet.start(false);
    BOOST_TEST(!fail_once(quiet, taken).watch_releases);
}

BOOST_AUTO_TEST_CASE(after_the_last_try_the_error_says_whether_another_owner_holds_it)
{
    acquire_fsm fsm(rules(2));
    fsm.start(false);
    fail_once(fsm, split);
    fsm.delay_chosen(1ms, t0);
    fsm.paused(false);
    auto last = fail_once(fsm, taken);
    BOOST_TEST((last.step == step::complete));
    BOOST_TEST((last.ec == redlock::error::taken));

    acquire_fsm other(rules(1));
    other.start(false);
    last = fail_once(other, split);
    BOOST_TEST((last.step == step::complete));
    BOOST_TEST((last.ec == redlock::error::failed));
}

BOOST_AUTO_TEST_CASE(the_first_clean_up_of_an_acquire_that_registers_is_sent_even_if_all_refused)
{
    const attempt_result refused{
        .taken_by_other = true, .some_taken = true, .refused_everywhere = true};
    acquire_fsm fsm({.tries = 3, .registers_after = 1, .refusal_writes_nothing = true});
    fsm.start(false);
    // Its clean-up registers the client as waiting: sent although it deletes nothing.
    auto next = fsm.attempted(refused, false);
    BOOST_TEST((next.step == step::clean_up));
    BOOST_TEST(!next.nothing_set);
    BOOST_TEST((fsm.cleaned_up(false, false).step == step::choose_delay));
    fsm.delay_chosen(1ms, t0);
    fsm.paused(false);
    // Its later attempts register themselves: a refusal everywhere needs no clean-up then.
    BOOST_TEST(fsm.attempted(refused, false).nothing_set);
}

BOOST_AUTO_TEST_CASE(
    an_attempt_that_every_node_refused_sends_no_clean_up_where_refusals_write_nothing)
{
    const attempt_result refused{
        .taken_by_other = true, .some_taken = true, .refused_everywhere = true};
    acquire_fsm fsm({.tries = 3, .refusal_writes_nothing = true});
    fsm.start(false);
    auto next = fsm.attempted(refused, false);
    BOOST_TEST((next.step == step::clean_up));
    BOOST_TEST(next.nothing_set);
    // Goes on as after a clean-up: taken, so it listens for releases and retries.
    next = fsm.cleaned_up(false, false);
    BOOST_TEST((next.step == step::choose_delay));
    BOOST_TEST(next.watch_releases);

    // One node that did not answer may have set the key: the round is sent.
    fsm.delay_chosen(1ms, t0);
    fsm.paused(false);
    BOOST_TEST(!fsm.attempted(taken, false).nothing_set);

    // A kind whose refused attempt writes (a fair lock's entry) is always cleaned up.
    acquire_fsm fair({.tries = 3});
    fair.start(false);
    BOOST_TEST(!fair.attempted(refused, false).nothing_set);

    // Cancelled meanwhile: nothing to delete, and it aborts.
    acquire_fsm cancelled({.tries = 3, .refusal_writes_nothing = true});
    cancelled.start(false);
    BOOST_TEST(cancelled.attempted(refused, true).nothing_set);
    BOOST_TEST((cancelled.cleaned_up(false, true).ec == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(a_cancelled_attempt_is_still_cleaned_up_then_aborts)
{
    acquire_fsm fsm(rules(5));
    fsm.start(false);
    // Even a granted attempt: the caller is gone, so nobody would own the key.
    BOOST_TEST((fsm.attempted(granted, true).step == step::clean_up));
    const auto done = fsm.cleaned_up(false, true);
    BOOST_TEST((done.step == step::complete));
    BOOST_TEST((done.ec == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(a_cancelled_pause_aborts)
{
    acquire_fsm fsm(rules(5));
    fsm.start(false);
    fail_once(fsm, taken);
    fsm.delay_chosen(10ms, t0);
    const auto done = fsm.paused(true);
    BOOST_TEST((done.step == step::complete));
    BOOST_TEST((done.ec == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(errors_that_retrying_cannot_fix_end_the_acquire_after_one_attempt)
{
    acquire_fsm fsm(rules(32));
    fsm.start(false);
    BOOST_TEST((fsm.attempted(unreachable, false).step == step::clean_up));
    const auto done = fsm.cleaned_up(true, false);
    BOOST_TEST((done.step == step::complete));
    BOOST_TEST((done.ec == redlock::error::misconfigured));
}

BOOST_AUTO_TEST_CASE(fencing_grants_only_once_the_token_is_written_back)
{
    acquire_fsm fsm({.tries = 2, .fencing = true});
    fsm.start(false);
    BOOST_TEST((fsm.attempted(granted, false).step == step::write_back_token));
    // Not confirmed by a quorum in time: the attempt failed and is cleaned up.
    BOOST_TEST((fsm.token_written(false, false).step == step::clean_up));
    BOOST_TEST((fsm.cleaned_up(false, false).step == step::choose_delay));
    fsm.delay_chosen(1ms, t0);
    fsm.paused(false);
    BOOST_TEST((fsm.attempted(granted, false).step == step::write_back_token));
    BOOST_TEST((fsm.token_written(true, false).step == step::grant));
    // Cancelled while writing back: cleaned up, not granted.
    acquire_fsm cancelled({.tries = 2, .fencing = true});
    cancelled.start(false);
    cancelled.attempted(granted, false);
    BOOST_TEST((cancelled.token_written(true, true).step == step::clean_up));
}

BOOST_AUTO_TEST_CASE(the_wait_bounds_the_whole_acquire)
{
    acquire_fsm fsm({.tries = 32, .give_up_at = t0 + 100ms});
    fsm.start(false);
    fail_once(fsm, taken);
    BOOST_TEST((fsm.delay_chosen(60ms, t0).step == step::pause));
    fsm.paused(false);
    fail_once(fsm, taken);
    // A retry that would start at or after the bound is not made.
    const auto done = fsm.delay_chosen(60ms, t0 + 40ms);
    BOOST_TEST((done.step == step::complete));
    BOOST_TEST((done.ec == redlock::error::taken));
}

BOOST_AUTO_TEST_CASE(a_delay_function_that_throws_is_a_bad_option)
{
    acquire_fsm fsm(rules(3));
    fsm.start(false);
    fail_once(fsm, taken);
    const auto done = fsm.delay_failed();
    BOOST_TEST((done.step == step::complete));
    BOOST_TEST((done.ec == redlock::error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(an_acquire_joins_the_line_of_its_clients_waiters_instead_of_a_losing_attempt)
{
    acquire_fsm fsm(rules(3));
    auto first = fsm.start(true);
    // Its first attempt is the wait in line.
    BOOST_TEST((first.step == step::choose_delay));
    BOOST_TEST(first.watch_releases);
    BOOST_TEST(first.attempt_number == 1);
    fsm.delay_chosen(100ms, t0);
    BOOST_TEST((fsm.paused(false).step == step::attempt));
    BOOST_TEST(fsm.attempt_number() == 2);

    // Not when it could not wait (one try), nor without wake-ups, nor reentrant.
    BOOST_TEST((acquire_fsm(rules(1)).start(true).step == step::attempt));
    BOOST_TEST(
        (acquire_fsm({.tries = 3, .wake_on_release = false}).start(true).step == step::attempt));
    BOOST_TEST((acquire_fsm({.tries = 3, .reentrant = true}).start(true).step == step::attempt));
}

BOOST_AUTO_TEST_SUITE_END()
