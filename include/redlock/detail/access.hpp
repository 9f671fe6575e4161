// SPDX-License-Identifier: BSL-1.0
#pragma once

// How the compiled library makes the public types from their state: their constructors from
// state are private, so that users cannot make a mutex or a guard the library did not give
// them.

#include <memory>
#include <utility>

namespace redlock::detail {

struct access
{
    /// A `T` (mutex or guard) around `state`.
    template <class T, class State>
    static T make(std::shared_ptr<State> state) noexcept
    {
        return T(std::move(state));
    }
    /// The lock state of guard `g` (null when it holds none): for operations of the lock it
    /// came from that take a guard (`election::async_proclaim`).
    template <class Guard>
    static auto lock_of(const Guard& g) noexcept
    {
        return g.state_;
    }
};

}  // namespace redlock::detail
