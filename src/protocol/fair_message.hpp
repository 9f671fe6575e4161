// SPDX-License-Identifier: BSL-1.0
#pragma once

// What a fair lock's scripts publish on the lock's release channel, for the waiter they name:
// `n:VALUE` names the queue's head, whose key is free, so that it attempts; `h:STAMP:VALUE`
// says the key was handed to that head, set to its owner value, because its entry was marked
// with STAMP by the clean-up after its attempt (scripts.hpp's fair_clean_up_request).

#include <cstdint>
#include <optional>
#include <string_view>

namespace redlock::detail {

struct fair_message
{
    /// The owner value of the waiter it is for.
    std::string_view value;
    /// For a hand-off, the stamp of the entry the key was handed to.
    std::optional<std::uint64_t> hand_off_stamp;
};

/// `text` read as a fair lock's message; none when it is not one.
std::optional<fair_message> read_fair_message(std::string_view text);

}  // namespace redlock::detail
