// SPDX-License-Identifier: BSL-1.0
#pragma once

// The life of a link's socket, without I/O: when to connect, when to refuse requests at once
// (a back-off after a failure, doubling from a minimum to a maximum), when to give a socket
// up for a new master. Unit-tested in tests/unit/test_connection_fsm.cpp.
//
// How a link uses it (on its strand):
// - submit: `admit(now)`: queue the request in the multiplexer; on `connect`, also start a
//   connect attempt, which remembers `generation()`; on `refuse`, fail the request at once
//   with the last failure (and `wait_left(now)` while in back-off); on `probe`, start a
//   connect attempt and fail the request at once.
// - a connect attempt completes: unless `accepts(its generation)`, the link was closed or
//   the attempt superseded meanwhile, and its socket is dropped. Else, when `probing()`,
//   the fresh socket must first have the server answer a PING. On success, `connected()`
//   (true for a reconnection, for the counters and the log) and `multiplexer::connected()`;
//   on failure, `failed(now)`.
// - the server answers on the socket: `answered()`, which starts the back-off again from
//   its minimum. Not at connect: a server that accepts connections and then drops or
//   ignores them would be retried at the minimum pause forever.
// - the socket fails (an I/O error, a protocol error): `failed(now)`, and
//   `multiplexer::fail_all()`; a server that let every request in flight time out (stuck):
//   `stuck(now)` instead. Every completion of the old socket's I/O carries its generation
//   and is ignored once `generation()` moved on.
// - a Sentinel node: on +switch-master, `should_leave(reached == new master)`; on that or on
//   a READONLY reply, `left_master(now)` and `multiplexer::fail_all()`: the next request asks
//   the Sentinels again at once.
// - `close()` for good (client shutdown): every later request is refused.

#include "core/clock.hpp"

#include <chrono>
#include <cstdint>

namespace redlock::detail {

class connection_fsm
{
  public:
    enum class state { disconnected, connecting, connected, closed };

    /// What a request submitted now meets.
    enum class admission {
        /// A socket is up or on its way: the request is queued.
        queue,
        /// No socket, and the back-off is over: the request is queued, and a connect attempt
        /// starts (the state is `connecting`).
        connect,
        /// Closed, in back-off after a failure, or waiting for a stuck server to answer a
        /// PING on a fresh socket: the request fails at once.
        refuse,
        /// The back-off after a stuck server is over: a connect attempt starts, which must
        /// have the server answer a PING before the socket is used, and the request fails at
        /// once (a stopped server's kernel still accepts connections: only an answer shows
        /// that it runs again).
        probe,
    };

    /// A subscriber that retries after a fixed pause passes the same `backoff_min` and
    /// `backoff_max`.
    connection_fsm(std::chrono::milliseconds backoff_min, std::chrono::milliseconds backoff_max);

    admission admit(clock::time_point now) noexcept;

    /// Whether the connect attempt started at `generation` may still deliver its socket.
    bool accepts(std::uint64_t generation) const noexcept
    {
        return generation == generation_ && state_ == state::connecting;
    }
    /// The connect attempt succeeded (after a PING answered, when probing). Returns true
    /// when a socket was up before (a reconnection).
    bool connected() noexcept;
    /// The server answered on the socket: the next failure waits the minimum back-off.
    void answered() noexcept { backoff_ = backoff_min_; }
    /// The socket, or the attempt to open one, failed at `now`: requests are refused until
    /// the back-off has passed, and the next failure waits twice as long (up to the maximum).
    void failed(clock::time_point now) noexcept;
    /// The socket was given up at `now` because the server answered nothing in flight: as
    /// `failed`, and until a fresh socket has had a PING answered, requests are refused
    /// without being written.
    void stuck(clock::time_point now) noexcept;
    /// Whether the next socket must have the server answer a PING before it is used.
    bool probing() const noexcept { return probing_; }

    /// For a Sentinel node whose Sentinels switched its master: whether the socket (or the
    /// attempt under way, which may reach the old master) is to be given up, given whether
    /// the server reached is the new master.
    bool should_leave(bool at_new_master) const noexcept;
    /// The server is no longer the master: its socket is given up, and the next request
    /// connects at once (there is a new master to ask for), with the back-off back at its
    /// minimum and no PING owed (the new master is another server).
    void left_master(clock::time_point now) noexcept;

    /// For good: every later request is refused.
    void close() noexcept;

    state current() const noexcept { return state_; }
    /// Moves on whenever a socket or an attempt is given up.
    std::uint64_t generation() const noexcept { return generation_; }
    /// While refusing in back-off: how long until the next request may connect.
    std::chrono::milliseconds wait_left(clock::time_point now) const noexcept;
    /// The pause after the next failure.
    std::chrono::milliseconds backoff() const noexcept { return backoff_; }

  private:
    std::chrono::milliseconds backoff_min_;
    std::chrono::milliseconds backoff_max_;
    std::chrono::milliseconds backoff_;
    state state_ = state::disconnected;
    std::uint64_t generation_ = 0;
    clock::time_point retry_at_{};
    bool connected_before_ = false;
    bool probing_ = false;
};

}  // namespace redlock::detail
