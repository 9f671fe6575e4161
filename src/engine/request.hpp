// SPDX-License-Identifier: BSL-1.0
#pragma once

// A request to one Redis server as the engine sees it: the command's bytes, the replies it
// expects, and whoever waits for its outcome.

#include "core/clock.hpp"
#include "engine/lua_script.hpp"
#include "resp/resp.hpp"

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace redlock::detail {

/// A command as it goes on the wire. An EVALSHA can go as the EVAL of its script instead
/// (`append_eval_form`): on a socket that has not been sent the script yet, and when the server
/// answers NOSCRIPT (its script cache was flushed, or it restarted).
struct command
{
    std::string payload;
    /// For EVALSHA: the script it runs, a row of the script table (which lives as long as the
    /// program), so that a connection sends each script's text once per socket.
    const lua_script* script = nullptr;
    /// For EVALSHA: where in `payload` its name begins, behind the array's header (and behind
    /// what is prefixed to the command, such as ASKING).
    std::uint32_t script_at = 0;
    /// How many replies the payload's commands get, one per command (an acquire followed by
    /// WAIT: 2). With more than one, the request's reply is an array of them, in order.
    std::uint8_t replies = 1;
    /// Which of those replies is the command's own, the one a NOSCRIPT or a redirection is
    /// read from: 0, or 1 behind an ASKING.
    std::uint8_t own_reply = 0;
    /// Where in `payload` the bulk string of the first key it touches begins; 0 for a command
    /// without keys, which any master of a cluster may run. A cluster's router hashes that key
    /// (`slot_of`): the keys of one command all share its slot. Only a cluster needs the slot,
    /// so it is not computed for every command.
    std::uint32_t key_at = 0;
};

/// Appends to `out` the EVAL form of `cmd`, an EVALSHA of `cmd.script`: its payload with the
/// name and the SHA-1 replaced by EVAL and the script's text. It is written only when a socket
/// needs it, since it is mostly the script's text.
void append_eval_form(std::string& out, const command& cmd);

/// What one request to one node came to.
struct exec_result
{
    enum class outcome { replied, timed_out, failed, cancelled };
    outcome status = outcome::failed;
    resp::reply reply;
    /// For timed_out, failed and cancelled: what happened, for people (the per-node report).
    std::string detail;
    /// For timed_out, failed and cancelled: the cause, a `node_errc`, which decisions are
    /// made on.
    boost::system::error_code code{};
};

/// Whoever waits for requests' outcomes (a quorum round, one `execute`): told each outcome on
/// the strand. A connection keeps its owner alive while it has requests of the owner queued
/// or in flight, so that the command it sends stays valid.
class request_owner
{
  public:
    virtual ~request_owner() = default;
    /// The outcome of request `index`: replied or failed. Called at most once per request,
    /// and not once the owner has given the request up.
    virtual void deliver(std::uint32_t index, exec_result result) = 0;
    /// True once the owner no longer wants request `index`'s outcome (deadline, early stop,
    /// cancellation). Its reply is then read and dropped.
    virtual bool given_up(std::uint32_t index) const noexcept = 0;
    /// Whether the owner acts on the error reply `refusal` itself, so that it says nothing
    /// wrong about the node: a Redis Cluster's router follows MOVED and ASK, a Sentinel
    /// node's link follows READONLY to the new master. A link warns once, in the log, of the
    /// other refusals that name a misconfiguration.
    virtual bool acts_on(const resp::reply& refusal) const noexcept
    {
        (void)refusal;
        return false;
    }
};

}  // namespace redlock::detail
