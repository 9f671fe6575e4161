// SPDX-License-Identifier: BSL-1.0
#include "lock/waiter_state.hpp"

namespace redlock::detail {

namespace {

using state = waiter_state;

// A wait begins after an attempt: a pause before the next one (`pausing`) or a fair waiter's
// wait for its turn (`queued`). A waiter that missed a release meanwhile (or, fair, was named
// the head during the attempt) attempts again at once instead.
std::optional<state> after_wait_begins(state s, state waiting)
{
    switch (s) {
        case state::attempting:
        case state::retrying_at_once:
            return waiting;
        case state::missed_release:
            return state::retrying_at_once;
        default:
            return std::nullopt;
    }
}

std::optional<state> after_named_head(state s)
{
    switch (s) {
        case state::queued:
            return state::woken_as_head;
        case state::attempting:
            return state::missed_release;
        case state::missed_release:
        case state::retrying_at_once:
        case state::woken_as_head:
            return s;
        default:
            return std::nullopt;
    }
}

std::optional<state> after_pause_ends(state s)
{
    if (s == state::queued) {
        return state::attempting;  // its refresh time came
    }
    if (s == state::woken_as_head) {
        return s;
    }
    if (s == state::pause_moved) {
        return state::pausing;  // waits on, to the pause's new end
    }
    if (s == state::pausing) {
        return state::attempting;
    }
    if (is_woken(s)) {
        return s;  // woken until its attempt begins
    }
    return std::nullopt;
}

std::optional<state> after_attempt_begins(state s)
{
    if (is_woken(s) || s == state::woken_as_head) {
        return state::attempting;
    }
    // After a skipped pause it stays `retrying_at_once`, so that the next pause is not
    // skipped as well.
    if (s == state::attempting || s == state::retrying_at_once) {
        return s;
    }
    return std::nullopt;
}

std::optional<state> after_release_seen(state s)
{
    if (is_pausing(s) || waits_for_its_turn(s)) {
        return std::nullopt;  // a pausing waiter is woken or left alone, not told
    }
    // A woken waiter's attempt comes after the release anyway: nothing is missed.
    return s == state::attempting ? state::missed_release : s;
}

std::optional<state> from_pause(state s, state to)
{
    if (is_pausing(s)) {
        return to;
    }
    return std::nullopt;
}

}  // namespace

std::optional<waiter_state> next_state(waiter_state s, waiter_event e)
{
    switch (e) {
        case waiter_event::pause_begins:
            return after_wait_begins(s, state::pausing);
        case waiter_event::pause_ends:
            return after_pause_ends(s);
        case waiter_event::attempt_begins:
            return after_attempt_begins(s);
        case waiter_event::release_seen:
            return after_release_seen(s);
        case waiter_event::hand_off:
            return from_pause(s, state::woken_by_hand_off);
        case waiter_event::release_message:
            return from_pause(s, state::woken_by_release_message);
        case waiter_event::pause_moved:
            return from_pause(s, state::pause_moved);
        case waiter_event::turn_wait_begins:
            return after_wait_begins(s, state::queued);
        case waiter_event::named_head:
            return after_named_head(s);
    }
    return std::nullopt;
}

}  // namespace redlock::detail
