// SPDX-License-Identifier: BSL-1.0
#pragma once

// How the compiled library makes the public types from their state: their constructors from
// state are private, so that users cannot make a mutex or a guard the library did not give
// them. Its add-ons reach a client's state the same way.

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
    /// The state behind `t` (a client), for the library's own add-ons (redlock::prometheus).
    template <class T>
    static auto state_of(const T& t) noexcept
    {
        return t.impl_;
    }
};

}  // namespace redlock::detail
