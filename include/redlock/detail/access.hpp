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
    /// The state behind `t` (a mutex's, or a guard's lock, null when it holds none): for the
    /// types made of others (an election is a mutex), and operations that take a guard.
    template <class T>
    static const auto& state_of(const T& t) noexcept
    {
        return t.state_;
    }
    /// The state behind client `c`, for the library's own add-ons (redlock::prometheus).
    template <class Client>
    static auto impl_of(const Client& c) noexcept
    {
        return c.impl_;
    }
};

}  // namespace redlock::detail
