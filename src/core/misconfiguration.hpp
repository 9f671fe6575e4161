// SPDX-License-Identifier: BSL-1.0
#pragma once

// Node failures that retrying cannot fix (a wrong password, a replica or a cluster node where
// a standalone master belongs, TLS on one side only), told apart from the transient ones by
// the text of a node outcome's detail. Pure functions: they do no I/O.
//
// The details come from two places: Redis error replies (the server's own words, e.g.
// "WRONGPASS invalid username-password pair"), found at the start of the detail or after
// ": " ("Redis error: READONLY ...", "AUTH on host:port failed: WRONGPASS ..."); and the
// client's own findings about TLS, which carry one of the hint sentences below.

#include <string>
#include <string_view>

namespace redlock::detail {

/// The hint of a TLS URL whose server answered plain-text Redis (see open_stream).
inline constexpr std::string_view tls_to_plain_hint =
    "a TLS URL (rediss://) for a server without TLS?";
/// The hint of a plain URL whose server reset the connection before any reply, as a TLS
/// port does with a client that does not start TLS (see connection).
inline constexpr std::string_view plain_to_tls_hint = "a plain URL (redis://) for a TLS port?";

/// For the text of a Redis error reply: what to check when it names a misconfiguration
/// (e.g. "the node is a replica: list masters"); empty when retrying may help.
std::string_view error_reply_hint(std::string_view reply_text) noexcept;

/// `reply_text`, followed by its hint in parentheses when it has one.
std::string with_hint(std::string_view reply_text);

/// Whether a node outcome's detail describes a failure that retrying cannot fix. Errors that
/// may pass (refused connections, timeouts, resets after replies, LOADING, BUSY, OOM,
/// MASTERDOWN, CLUSTERDOWN, MISCONF) are not.
bool is_misconfiguration(std::string_view detail) noexcept;

}  // namespace redlock::detail
