// SPDX-License-Identifier: BSL-1.0
#pragma once

// The I/O of a multiplexer: one writer and one reader per socket, doing what the
// multiplexer says (multiplexer.hpp). The one place in the library, besides net/stream,
// that reads and writes sockets; every user of a socket (the pipelined link, the handshake's
// exchanges, the subscriber, the Sentinel watch) runs its socket through one.
//
// What the reader reads goes to the socket's user (`socket_user`): replies, pushed messages,
// and the failure that ends a socket. The user decides what they mean (tells the request's
// owner, counts, follows a failover); the runner only moves bytes.
//
// All calls on one strand. A runner belongs to its user: the handlers of its I/O keep the
// user alive (the `life` given to `attach`, which must own the runner), and after `close`
// the completions of the old socket's I/O are ignored.

#include "engine/multiplexer.hpp"
#include "net/stream.hpp"
#include "resp/resp.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <string>

namespace redlock::detail {

/// Why a runner gave a socket up.
struct socket_failure
{
    enum class stage {
        /// A write failed (`error`).
        writing,
        /// A read failed (`error`; eof when the server closed the connection).
        reading,
        /// The bytes read cannot be matched to requests (`error` is errc::protocol_error,
        /// `diagnostics` says what was wrong).
        matching,
    };
    stage where = stage::reading;
    boost::system::error_code error{};
    std::string diagnostics{};
};

/// The user of a socket, told what its runner reads. On the strand.
class socket_user
{
  public:
    /// A reply to a request (`step` is `deliver`, or `drop` when its owner gave it up): the
    /// user tells the owner, when there is one to tell.
    virtual void on_reply(reader_action& step) = 0;
    /// A pub/sub message, or a confirmation nobody asked for (only on a pub/sub socket).
    virtual void on_push(resp::reply&) {}
    /// The socket failed and is closed. The user fails the multiplexer's requests
    /// (`multiplexer::fail_all`) and tells their owners.
    virtual void on_failure(const socket_failure& failure) = 0;
    /// The socket has no I/O under way: nothing is being written, and nothing is owed.
    virtual void on_idle() {}

  protected:
    ~socket_user() = default;
};

class runner
{
  public:
    runner(multiplexer& mux, socket_user& user) : mux_(mux), user_(user) {}
    runner(const runner&) = delete;
    runner& operator=(const runner&) = delete;

    /// A fresh socket, open and greeted: the multiplexer is told (`connected`), and what is
    /// queued is written. `life` owns the user (and so this runner): the handlers of the
    /// socket's I/O hold it.
    void attach(stream s, std::weak_ptr<void> life);
    /// Writes what is queued, unless a write is under way (or writes are held, or no socket
    /// is up); starts the reader when replies are owed. Call after adding requests and
    /// whenever writes may resume.
    void write();
    /// Closes the socket, if any; the completions of its I/O are ignored. `discard_unsent`:
    /// as `stream::close`.
    void close(bool discard_unsent = false) noexcept;
    /// Gives the socket back, for another runner to carry on with (a greeted socket joins
    /// its link). Only when idle (`socket_user::on_idle`); the multiplexer is left as it is.
    stream detach();
    bool attached() const noexcept { return socket_ != nullptr; }

  private:
    struct socket_state;

    void read(const std::shared_ptr<socket_state>& s);
    void on_written(const std::shared_ptr<socket_state>& s, const boost::system::error_code& ec);
    void on_read(const std::shared_ptr<socket_state>& s, const boost::system::error_code& ec,
                 std::size_t n);
    void fail(const socket_failure& failure);
    void tell_if_idle();

    multiplexer& mux_;
    socket_user& user_;
    /// The socket and its buffers, held by the handlers of its I/O: a fresh one per socket,
    /// so that a late completion of an old socket touches nothing of the new one.
    std::shared_ptr<socket_state> socket_;
    std::weak_ptr<void> life_;
};

}  // namespace redlock::detail
