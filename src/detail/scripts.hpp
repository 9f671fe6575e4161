#pragma once

// The commands of the lock protocol, and how each node's reply to them is read. Keys and
// values travel only as arguments: nothing user-supplied is ever part of script text.

#include <redlock/report.hpp>

#include "detail/connection.hpp"
#include "detail/resp.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace redlock::detail {

/// SET key value NX PX expiry.
command acquire_command(std::string_view key, std::string_view value,
                        std::chrono::milliseconds expiry);
/// Delete the key if it holds `value`.
command release_command(std::string_view key, std::string_view value);
/// Reset the key's TTL if it holds `value`; with `recreate`, also set it where it is gone.
command extend_command(std::string_view key, std::string_view value,
                       std::chrono::milliseconds expiry, bool recreate);
/// GET key.
command get_command(std::string_view key);

/// How a node's reply reads for each command; `detail` is set for unexpected replies.
node_status read_acquire_reply(const resp::reply& r, std::string_view value, std::string& detail);
node_status read_script_reply(const resp::reply& r, std::string_view value, std::string& detail);
node_status read_get_reply(const resp::reply& r, std::string_view value, std::string& detail);

/// The SHA-1 of a script in lower-case hex, as EVALSHA wants it.
std::string script_sha1(std::string_view script);

}  // namespace redlock::detail
