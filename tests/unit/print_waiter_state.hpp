// SPDX-License-Identifier: BSL-1.0
#pragma once

// Names of the waiter's states and events, for Boost.Test's messages.

#include "lock/waiter_state.hpp"

#include <ostream>

namespace redlock::detail {

inline std::ostream& operator<<(std::ostream& os, waiter_state s)
{
    switch (s) {
        case waiter_state::attempting:
            return os << "attempting";
        case waiter_state::missed_release:
            return os << "missed_release";
        case waiter_state::retrying_at_once:
            return os << "retrying_at_once";
        case waiter_state::pausing:
            return os << "pausing";
        case waiter_state::pause_moved:
            return os << "pause_moved";
        case waiter_state::woken_by_hand_off:
            return os << "woken_by_hand_off";
        case waiter_state::woken_by_release_message:
            return os << "woken_by_release_message";
        case waiter_state::queued:
            return os << "queued";
        case waiter_state::woken_as_head:
            return os << "woken_as_head";
    }
    return os << "waiter_state " << static_cast<int>(s);
}

inline std::ostream& operator<<(std::ostream& os, waiter_event e)
{
    switch (e) {
        case waiter_event::pause_begins:
            return os << "pause_begins";
        case waiter_event::pause_ends:
            return os << "pause_ends";
        case waiter_event::attempt_begins:
            return os << "attempt_begins";
        case waiter_event::release_seen:
            return os << "release_seen";
        case waiter_event::hand_off:
            return os << "hand_off";
        case waiter_event::release_message:
            return os << "release_message";
        case waiter_event::pause_moved:
            return os << "pause_moved";
        case waiter_event::turn_wait_begins:
            return os << "turn_wait_begins";
        case waiter_event::named_head:
            return os << "named_head";
    }
    return os << "waiter_event " << static_cast<int>(e);
}

}  // namespace redlock::detail
