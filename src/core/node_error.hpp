// SPDX-License-Identifier: BSL-1.0
#pragma once

// A node's failure as the layers pass it up: a `node_errc` code, which every decision is made
// on (retry or stop, log level, redirection), and a detail for people, which names the node,
// keeps the server's own words and says what to check. Pure: no I/O.

#include <redlock/node_error.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace redlock::detail {

/// Why opening a connection to a node, or a request to it, failed; no code on success.
struct node_failure
{
    boost::system::error_code code;
    /// For people: what happened, on which node, in the server's words where it spoke.
    std::string detail;

    explicit operator bool() const noexcept { return code.failed(); }
};

/// A failure that `code`'s message tells in full.
node_failure failure_of(node_errc code);

/// Whether a node that fails with `code` fails the same way on every retry, as configured: a
/// wrong or missing password, a replica or a cluster node where a standalone master belongs,
/// TLS on one side only. Refused connections, timeouts, dropped connections and error replies
/// that pass by themselves (LOADING, BUSY, OOM, MISCONF, MASTERDOWN, CLUSTERDOWN) are not.
bool is_misconfiguration(node_errc code) noexcept;
/// The same for a code of any category: false outside "redlock.node".
bool is_misconfiguration(const boost::system::error_code& code) noexcept;

/// The failures of servers asked in turn for one thing (a Sentinel node's Sentinels for its
/// master, a cluster's servers for the slot map), told as one failure once none answered.
class failure_list
{
  public:
    void add(const node_failure& f);
    /// `what`, then ": " and the details in order, separated by "; ". The code is the one all
    /// the failures share (every server refused the password: retrying cannot fix it), or
    /// `otherwise` when they differ or there were none.
    node_failure joined(std::string what, node_errc otherwise) const;

  private:
    std::string details_;
    boost::system::error_code shared_;
    std::size_t count_ = 0;
    bool mixed_ = false;
};

/// The hint of a TLS URL whose port answered a plain-text PING (see open_stream).
inline constexpr std::string_view tls_to_plain_hint =
    "a TLS URL (rediss://) for a server without TLS?";
/// The hint of a plain URL whose server reset the connection before any reply, as a TLS port
/// does with a client that does not start TLS (see connection).
inline constexpr std::string_view plain_to_tls_hint = "a plain URL (redis://) for a TLS port?";

}  // namespace redlock::detail
