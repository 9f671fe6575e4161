// SPDX-License-Identifier: BSL-1.0
#pragma once

// The engine of one socket to one Redis server, without I/O (sans-io): which bytes to write
// next, which request a reply belongs to, what a NOSCRIPT means, when the stream can no
// longer be matched to requests, when the server looks stuck. Every decision is here, so that
// it is unit-tested without a socket (tests/unit/test_multiplexer.cpp); the runner
// (runner.hpp) does the I/O and does what the multiplexer says.
//
// A request goes through three states: queued (`add`), written (`prepare_write` moves every
// queued request, in order, into the in-flight FIFO and hands out their bytes in one batch),
// and settled (its reply was read). Its owner may give it up in any state (deadline, early
// stop, cancellation); it is still written, and its reply is read and dropped, never matched
// to the next request: Redis answers a connection's commands once each, in order.
//
// How the runner drives it (one reader and one writer per socket; all calls on one strand):
//
//   writer: whenever a request was added, writes resumed, a write completed or a reply asked
//     for a resend:
//         if (std::size_t n = mux.prepare_write(buffer)) {
//             async_write(socket, buffer) -> on error: fail the socket;
//                                            else mux.commit_write(), and try again;
//             if (mux.begin_read()) start the reader;
//         }
//   reader: one chain of reads while `begin_read` says so, until `park`:
//         for (;;) switch (auto step = mux.next(); step.what) {
//             read:    async_read_some(socket, buf) -> mux.feed(buf, n); continue the loop
//                      (on a read error: fail the socket);
//             park:    return (nothing owed: an idle client keeps no read pending);
//             deliver: to the socket's user, who tells step.request.owner the reply;
//             drop:    to the user too (its owner gave it up: nobody to tell);
//             resend:  kick the writer;
//             push:    hand step.reply to the push handler;
//             fail:    fail the socket with step.error and step.diagnostics;
//         }
//     After each step the reader checks that its socket is still the current one: an owner
//     told an outcome may close the link or fail the socket.
//   failing the socket: close it; the user tells each request `fail_all()` returns the
//     failure (their owners still want them; given-up ones are dropped).
//   connecting: `connected()` once a fresh socket is open and greeted, then kick the writer.
//   a request given up: `gave_up()`; at its deadline, also `went_silent(replies_read() of
//     the time)` at the end of the strand's turn, and fail the socket if it then
//     `looks_stuck()`.
// The runner is the one place besides net/stream that reads and writes sockets.
//
// The four users of a socket all run this way, each with its own multiplexer:
// - the pipelined link to a server (`socket_use::requests`), shared by every lock;
// - the handshake of a fresh socket (AUTH, SELECT, ROLE): a short-lived multiplexer of its
//   own, whose requests are answered before the socket joins its link's multiplexer (and
//   before the link's queued requests are written: a failed AUTH or a replica's ROLE must
//   stop them);
// - the subscriber of a node (`socket_use::pubsub`): SUBSCRIBE and UNSUBSCRIBE requests,
//   whose confirmations are their replies, and messages to its push handler;
// - a Sentinel node's watch (`socket_use::pubsub`): SUBSCRIBE +switch-master, then messages.
// Wrappers that follow a Sentinel failover or a cluster's redirections read the replies
// delivered to them (`own_reply` finds the command's own among several); none of that is a
// decision of the multiplexer.
//
// Failures it finds (a protocol error, data nobody asked for) come as an error_code of
// boost::system's generic category plus diagnostics in words; code decides on the code.
//
// RESP2 only: `resp::decoder` decodes no RESP3 push type, and the library never sends
// HELLO 3. Pub/sub messages are RESP2 arrays, recognised only on a `pubsub` socket, where
// nothing else has their shape.

#include "core/clock.hpp"
#include "core/fifo.hpp"
#include "engine/lua_script.hpp"
#include "engine/request.hpp"
#include "resp/resp.hpp"

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// What a socket carries, which decides how replies are read.
enum class socket_use {
    /// Commands, answered once each, in order. Anything else is a protocol error.
    requests,
    /// RESP2 pub/sub: (un)subscriptions answered by confirmations, and messages between them.
    pubsub,
};

/// What a request expects back.
enum class request_kind : std::uint8_t {
    /// `command::replies` replies, one per command of its payload.
    command,
    /// (S|P)SUBSCRIBE of `command::replies` channels: a confirmation each. An error reply
    /// (a refused command: MOVED, NOPERM) ends it at once.
    subscribe,
    /// (S|P)UNSUBSCRIBE of `command::replies` channels, likewise. A confirmation of this kind
    /// that no unsubscribe request awaits is pushed: a server drops a shard channel whose
    /// slot moved unasked.
    unsubscribe,
};

/// One request as it enters a multiplexer.
struct submission
{
    /// Told the outcome (by the runner); keeps `cmd` alive until then.
    std::shared_ptr<request_owner> owner;
    std::uint32_t index = 0;
    const command* cmd = nullptr;
    request_kind kind = request_kind::command;
    /// When it was submitted, for the latency counters.
    clock::time_point submitted{};
};

/// What the reader does next: the outcome of `multiplexer::next`.
struct reader_action
{
    enum class type {
        /// Replies or messages are awaited and none is buffered whole: read more bytes.
        read,
        /// Nothing is awaited and nothing is buffered: stop reading until `begin_read`.
        park,
        /// `request` is answered: `reply` (an array of its replies when it expects several).
        deliver,
        /// `request` is answered, but its owner gave it up: nothing to tell.
        drop,
        /// `request` got NOSCRIPT and is queued again, as EVAL: write.
        resend,
        /// `reply` is a message, or a confirmation nobody asked for: to the push handler.
        push,
        /// The stream cannot be matched to requests any more: `error` is
        /// errc::protocol_error, `diagnostics` says what was wrong (the decoder's words, or
        /// a reply nobody asked for). The socket is to be failed.
        fail,
    };
    type what = type::read;
    submission request{};
    resp::reply reply{};
    boost::system::error_code error{};
    std::string diagnostics{};
};

/// The reply of `cmd` itself within `reply`, the whole outcome of a request sending `cmd`:
/// element `cmd.own_reply` when the request expects several replies (behind an ASKING,
/// before a WAIT), `reply` itself otherwise. A NOSCRIPT, a redirection, a READONLY is read
/// from it. Pure.
const resp::reply& own_reply(const command& cmd, const resp::reply& reply) noexcept;

/// The decisions of one socket, and of the sockets that replace it: requests queued while no
/// socket is up wait for the next one. Not thread-safe: its runner calls it on one strand.
class multiplexer
{
  public:
    explicit multiplexer(socket_use use = socket_use::requests);

    /// Queues a request; the next `prepare_write` writes it. Returns false, and queues
    /// nothing, while the server is silent (`went_silent`): nothing new goes to a server that
    /// answered nothing for a per-node deadline, until it answers; the owner is to be told
    /// at once.
    [[nodiscard]] bool add(submission s);

    /// Holds back writes until as many `resume_writes` calls; requests queued meanwhile go
    /// out together. Holds outlive sockets. Returns whether writes may go now.
    void hold_writes() noexcept { ++holds_; }
    bool resume_writes() noexcept;

    /// When a socket is up, no write is under way and writes are not held: moves every queued
    /// request into the in-flight FIFO, replaces `out` with their bytes, and returns how many
    /// they are; the write is then under way until `commit_write`. Returns 0 otherwise, with
    /// `out` untouched (it may be the buffer being written). A script's first use on a socket
    /// goes as EVAL (its text, which loads it), later ones as EVALSHA: the server runs a
    /// socket's commands in order, so it knows the script by then.
    std::size_t prepare_write(std::string& out);
    /// The write `prepare_write` started completed.
    void commit_write() noexcept { writing_ = false; }
    bool writing() const noexcept { return writing_; }
    /// Whether the reader is running (from `begin_read` until `next` says park).
    bool reading() const noexcept { return reading_; }

    /// True when the reader is parked and something is now awaited: the runner starts it.
    bool begin_read() noexcept;
    /// Bytes read from the socket.
    void feed(std::string_view bytes);
    /// The next thing for the reader to do, from the bytes fed so far.
    reader_action next();

    /// A request's owner gave it up (after marking it given up), at its deadline or not.
    void gave_up() noexcept { ++given_up_; }
    /// How many replies were read so far: the mark a timeout leaves for `went_silent`.
    std::uint64_t replies_read() const noexcept { return replies_read_; }
    /// Called at the end of the strand's turn in which a request timed out, with the
    /// `replies_read()` of that moment: not at once, since the clean-up of the request, queued
    /// in the same turn, must still go out on this socket, behind the request it undoes.
    /// Returns true unless a reply was read since: the server has answered nothing for a
    /// per-node deadline (replies come in order, so it answered no request before that one
    /// either). It is then silent (`unresponsive`), and `add` refuses until it answers; and
    /// when every request in flight was given up too (`looks_stuck`), the server is stuck or
    /// gone, and the socket is to be failed rather than kept behind it forever.
    bool went_silent(std::uint64_t mark) noexcept;
    /// True when requests are in flight and their owners gave every one up.
    bool looks_stuck();
    /// True from `went_silent` until the server's next reply on this socket.
    bool unresponsive() const noexcept { return unresponsive_; }

    /// A fresh socket is up (greeted): it knows no script yet, and nothing is read from it.
    void connected();
    /// The socket is gone: empties the queue and the FIFO and returns the requests whose
    /// owners still want them, in order (in flight first), for the runner to fail. Requests
    /// added later wait for `connected`.
    std::vector<submission> fail_all();

    bool socket_up() const noexcept { return up_; }
    std::size_t queued() const noexcept { return entries_.size() - written_; }
    std::size_t in_flight() const noexcept { return written_; }
    /// On a pub/sub socket: the channels, patterns and shard channels the server last
    /// confirmed.
    std::int64_t subscriptions() const noexcept { return channels_ + shard_channels_; }
    /// Whether the server answered anything on this socket (a TLS port resets a plain
    /// connection before any reply; later, a reset is a dropped connection).
    bool heard_from_server() const noexcept { return heard_; }

  private:
    struct entry
    {
        submission request;
        /// Goes as the EVAL form (`append_eval_form`) rather than the payload (EVALSHA).
        bool as_eval = false;
        /// The replies so far of a request that expects several.
        std::vector<resp::reply> gathered{};
        bool given_up() const noexcept { return request.owner->given_up(request.index); }
    };

    void choose_script_form(entry& e);
    // Each true when `out` is filled: the reader has a step to take.
    bool on_reply(resp::reply& r, reader_action& out);
    std::optional<reader_action> on_pubsub_reply(resp::reply& r);
    bool match(resp::reply& r, reader_action& out);
    void settle(resp::reply& whole, reader_action& out);
    void drop_front();
    bool awaiting() const noexcept;
    reader_action failure(std::string diagnostics);
    reader_action broken() const;
    void reset_socket_state();

    socket_use use_;
    /// The requests in flight (the first `written_`, oldest first), then the queued ones.
    fifo<entry> entries_;
    std::size_t written_ = 0;
    resp::decoder decoder_;
    /// The bytes fed to `decoder_` since its reset.
    std::size_t fed_ = 0;
    /// The scripts this socket's server was sent the text of: later uses go by SHA-1 alone.
    /// What was sent on another socket is not known to have reached this server (a restart,
    /// a failover, SCRIPT FLUSH), so a fresh socket starts empty.
    script_set scripts_;
    bool up_ = false;
    bool writing_ = false;
    bool reading_ = false;
    bool heard_ = false;
    bool unresponsive_ = false;
    std::uint64_t replies_read_ = 0;
    unsigned holds_ = 0;
    /// Requests queued or in flight that their owners gave up (`gave_up` calls).
    std::size_t given_up_ = 0;
    /// How many requests at the front of the FIFO are known to be given up: a request given
    /// up stays given up, so the scan for `looks_stuck` resumes where it stopped (a stopped
    /// server may have thousands in flight).
    std::size_t given_up_prefix_ = 0;
    std::int64_t channels_ = 0;
    std::int64_t shard_channels_ = 0;
    /// Set by a `fail` step: the stream is beyond use until `fail_all`.
    std::string broken_;
};

}  // namespace redlock::detail
