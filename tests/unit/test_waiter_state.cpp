// SPDX-License-Identifier: BSL-1.0
#include "lock/waiter_state.hpp"

#include "print_waiter_state.hpp"

#include <boost/test/unit_test.hpp>

#include <array>
#include <optional>

using namespace redlock::detail;
using state = waiter_state;
using event = waiter_event;

namespace {

constexpr std::array all_states{
    state::attempting,   state::missed_release,    state::retrying_at_once,         state::pausing,
    state::pause_moved,  state::woken_by_hand_off, state::woken_by_release_message, state::queued,
    state::woken_as_head};

constexpr std::array all_events{event::pause_begins, event::pause_ends, event::attempt_begins,
                                event::release_seen, event::hand_off,   event::release_message,
                                event::pause_moved,  event::named_head, event::turn_wait_begins};

// Follows `events` from `s`; none as soon as one cannot happen.
std::optional<state> after(state s, std::initializer_list<event> events)
{
    std::optional<state> at = s;
    for (event e : events) {
        if (!at) {
            break;
        }
        at = next_state(*at, e);
    }
    return at;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(waiter_states)

// The whole table, written out: every pair not listed cannot happen.
BOOST_AUTO_TEST_CASE(every_transition_is_the_one_the_rules_give)
{
    struct row
    {
        state from;
        event on;
        state to;
    };
    const row legal[] = {
        // Attempting: it pauses after a failure, and a release only reaches it.
        {state::attempting, event::pause_begins, state::pausing},
        {state::attempting, event::attempt_begins, state::attempting},
        {state::attempting, event::release_seen, state::missed_release},
        // A release came during the attempt: the pause is skipped.
        {state::missed_release, event::pause_begins, state::retrying_at_once},
        {state::missed_release, event::release_seen, state::missed_release},
        // Once in a row at most.
        {state::retrying_at_once, event::pause_begins, state::pausing},
        {state::retrying_at_once, event::attempt_begins, state::retrying_at_once},
        {state::retrying_at_once, event::release_seen, state::retrying_at_once},
        // Pausing: woken by a hand-off or a release message, or its end moved by a yield.
        {state::pausing, event::pause_ends, state::attempting},
        {state::pausing, event::hand_off, state::woken_by_hand_off},
        {state::pausing, event::release_message, state::woken_by_release_message},
        {state::pausing, event::pause_moved, state::pause_moved},
        {state::pause_moved, event::pause_ends, state::pausing},
        {state::pause_moved, event::hand_off, state::woken_by_hand_off},
        {state::pause_moved, event::release_message, state::woken_by_release_message},
        {state::pause_moved, event::pause_moved, state::pause_moved},
        // Woken: until its attempt begins; a release meanwhile is not missed.
        {state::woken_by_hand_off, event::pause_ends, state::woken_by_hand_off},
        {state::woken_by_hand_off, event::attempt_begins, state::attempting},
        {state::woken_by_hand_off, event::release_seen, state::woken_by_hand_off},
        {state::woken_by_release_message, event::pause_ends, state::woken_by_release_message},
        {state::woken_by_release_message, event::attempt_begins, state::attempting},
        {state::woken_by_release_message, event::release_seen, state::woken_by_release_message},
        // A fair waiter: it waits for its turn after a failed attempt, and a message naming
        // it as the head wakes it, or during an attempt makes it attempt again at once.
        {state::attempting, event::turn_wait_begins, state::queued},
        {state::attempting, event::named_head, state::missed_release},
        {state::missed_release, event::turn_wait_begins, state::retrying_at_once},
        {state::missed_release, event::named_head, state::missed_release},
        {state::retrying_at_once, event::turn_wait_begins, state::queued},
        {state::retrying_at_once, event::named_head, state::retrying_at_once},
        {state::queued, event::named_head, state::woken_as_head},
        {state::queued, event::pause_ends, state::attempting},
        {state::woken_as_head, event::named_head, state::woken_as_head},
        {state::woken_as_head, event::pause_ends, state::woken_as_head},
        {state::woken_as_head, event::attempt_begins, state::attempting},
    };
    for (state s : all_states) {
        for (event e : all_events) {
            std::optional<state> expected;
            for (const row& r : legal) {
                if (r.from == s && r.on == e) {
                    expected = r.to;
                }
            }
            BOOST_TEST_CONTEXT(s << ", " << e)
            {
                BOOST_TEST(next_state(s, e).has_value() == expected.has_value());
                if (expected) {
                    BOOST_TEST(*next_state(s, e) == *expected);
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(only_a_pausing_waiter_can_be_woken_or_have_its_pause_moved)
{
    for (state s : all_states) {
        for (event e : {event::hand_off, event::release_message, event::pause_moved}) {
            BOOST_TEST(next_state(s, e).has_value() == is_pausing(s), s << ", " << e);
        }
        // ... and only a waiter that is not pausing sees a release without being woken; one
        // that waits for its turn in a fair queue does not hear of other releases at all.
        BOOST_TEST(next_state(s, event::release_seen).has_value() ==
                       (!is_pausing(s) && !waits_for_its_turn(s)),
                   s);
    }
}

BOOST_AUTO_TEST_CASE(a_missed_release_skips_one_pause_not_two_in_a_row)
{
    // A release during the attempt: the next pause is skipped, and the attempt that follows
    // is spread like any other prompted by a release message.
    BOOST_TEST(*after(state::attempting, {event::release_seen, event::pause_begins}) ==
               state::retrying_at_once);
    BOOST_TEST(follows_release_message(state::retrying_at_once));
    // Another release during that attempt: this time the waiter pauses.
    BOOST_TEST(*after(state::retrying_at_once, {event::attempt_begins, event::release_seen,
                                                event::pause_begins}) == state::pausing);
    // After a real pause, a missed release skips a pause again.
    BOOST_TEST(*after(state::pausing, {event::pause_ends, event::attempt_begins,
                                       event::release_seen, event::pause_begins}) ==
               state::retrying_at_once);
}

BOOST_AUTO_TEST_CASE(a_moved_pause_waits_on_until_its_new_end_or_a_wake_up)
{
    // The wait under way ends for the move: the waiter pauses on.
    BOOST_TEST(*after(state::pausing, {event::pause_moved, event::pause_ends}) == state::pausing);
    // Then its new end comes: it attempts, unprompted.
    BOOST_TEST(*after(state::pausing, {event::pause_moved, event::pause_ends, event::pause_ends}) ==
               state::attempting);
    // A wake-up before the wait ended for the move is a wake-up.
    BOOST_TEST(*after(state::pausing, {event::pause_moved, event::release_message,
                                       event::pause_ends}) == state::woken_by_release_message);
}

BOOST_AUTO_TEST_CASE(only_an_attempt_prompted_by_a_release_message_is_spread)
{
    BOOST_TEST(follows_release_message(
        *after(state::pausing, {event::release_message, event::pause_ends})));
    BOOST_TEST(
        !follows_release_message(*after(state::pausing, {event::hand_off, event::pause_ends})));
    // A pause that ran out, moved or not.
    BOOST_TEST(!follows_release_message(*after(state::pausing, {event::pause_ends})));
    BOOST_TEST(!follows_release_message(
        *after(state::pausing, {event::pause_moved, event::pause_ends, event::pause_ends})));
}

BOOST_AUTO_TEST_CASE(a_woken_waiter_stays_woken_until_its_attempt_begins)
{
    for (event wake : {event::hand_off, event::release_message}) {
        const state woken = *after(state::pausing, {wake, event::pause_ends, event::release_seen});
        BOOST_TEST(is_woken(woken));
        // Its wake-up is used: from now on, leaving passes no turn.
        BOOST_TEST(!is_woken(*next_state(woken, event::attempt_begins)));
    }
    BOOST_TEST(!is_woken(state::pausing));
    BOOST_TEST(!is_woken(state::attempting));
}

BOOST_AUTO_TEST_CASE(nothing_but_its_pause_or_an_attempt_follows_a_failed_attempt)
{
    // The coroutine cannot attempt without pausing (or skipping the pause) first.
    BOOST_TEST(!next_state(state::missed_release, event::attempt_begins));
    BOOST_TEST(!next_state(state::pausing, event::attempt_begins));
    // Nor end a pause it is not in.
    BOOST_TEST(!next_state(state::attempting, event::pause_ends));
    BOOST_TEST(!next_state(state::pausing, event::pause_begins));
}

BOOST_AUTO_TEST_CASE(a_fair_waiter_is_woken_only_as_the_head_and_attempts_at_once)
{
    // Named while it waits: woken, and its attempt is not spread (it alone was named).
    const state woken = *after(state::attempting, {event::turn_wait_begins, event::named_head,
                                                   event::pause_ends, event::named_head});
    BOOST_TEST(woken == state::woken_as_head);
    BOOST_TEST(!follows_release_message(woken));
    BOOST_TEST(waits_for_its_turn(woken));
    // Leaving then passes no turn of the client's: the nodes tell the next head.
    BOOST_TEST(!is_woken(woken));
    BOOST_TEST(*next_state(woken, event::attempt_begins) == state::attempting);
    // Its refresh time came without a message: it attempts, which refreshes its entry.
    BOOST_TEST(*after(state::attempting, {event::turn_wait_begins, event::pause_ends}) ==
               state::attempting);
    // Named during its attempt: it does not wait, once in a row at most.
    BOOST_TEST(*after(state::attempting, {event::named_head, event::turn_wait_begins}) ==
               state::retrying_at_once);
    BOOST_TEST(*after(state::retrying_at_once, {event::attempt_begins, event::named_head,
                                                event::turn_wait_begins}) == state::queued);
    // Hand-offs and other owners' release messages cannot reach it.
    for (event e : {event::hand_off, event::release_message, event::pause_moved,
                    event::release_seen, event::pause_begins}) {
        BOOST_TEST(!next_state(state::queued, e), e);
    }
}

BOOST_AUTO_TEST_SUITE_END()
