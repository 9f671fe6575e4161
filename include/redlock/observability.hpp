// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// What a service can watch: a logging hook and per-node counters.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace redlock {

/// How much a log line matters: `debug` for a first connection, `info` for a reconnection,
/// `warning` for a connection that failed (it is retried with backoff), `error` for a
/// server that broke the protocol.
enum class log_level { debug, info, warning, error };

/// "debug", "info", "warning", "error".
std::string_view to_string(log_level level) noexcept;

/// Receives the client's log lines: connects, reconnects, connection failures, protocol
/// errors, per-node deadlines missed. Called on the client's strand, so it must not block;
/// messages name nodes by endpoint and never contain a password. Leave it empty for silence.
using log_hook = std::function<void(log_level, std::string_view message)>;

/// A snapshot of one node's counters since the client was made (`client::node_counters`).
struct node_counters
{
    /// The node, as `node::endpoint()` names it.
    std::string endpoint;
    /// Requests sent or queued for the node.
    std::uint64_t requests = 0;
    /// Requests that got a reply.
    std::uint64_t replies = 0;
    /// Requests that failed: connection errors, protocol errors, the client shutting down.
    std::uint64_t errors = 0;
    /// Requests that missed their per-node deadline.
    std::uint64_t timeouts = 0;
    /// Requests given up by their operation before an answer: the round was decided
    /// without them, or cancelled. requests = replies + errors + timeouts + abandoned, once
    /// none is pending.
    std::uint64_t abandoned = 0;
    /// Successful connects after the first one.
    std::uint64_t reconnects = 0;
    /// Sum of request-to-reply latencies of the replied requests; divide by `replies`.
    std::chrono::microseconds latency_total{0};
};

}  // namespace redlock
