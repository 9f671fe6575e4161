// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// One Redis endpoint.

#include <cstdint>
#include <string>
#include <string_view>

namespace redlock {

/// One Redis server: a TCP host and port, or a unix socket path, with its credentials.
struct node
{
    /// Host name or IP address (TCP); empty when `unix_path` is set.
    std::string host = "127.0.0.1";
    /// TCP port.
    std::uint16_t port = 6379;
    /// Path of a unix domain socket; when set, `host` and `port` are not used.
    std::string unix_path;
    /// ACL user name for AUTH; empty for the default user.
    std::string username;
    /// Password for AUTH; empty for no AUTH. Never printed in messages.
    std::string password;
    /// Logical database selected on connect.
    int db = 0;
    /// Connect with TLS (`rediss://`).
    bool tls = false;

    /// Parses `redis://[[user]:password@]host[:port][/db]`, `rediss://...` (TLS) and
    /// `unix://[[user]:password@]/path/to/socket[?db=N]`. IPv6 hosts go in brackets.
    /// Throws `boost::system::system_error` with `error::invalid_argument` and a message
    /// naming what is wrong (the password is never repeated in it).
    static node from_url(std::string_view url);

    /// "host:port" or "unix:/path": how the node is named in reports; no credentials.
    std::string endpoint() const;
};

}  // namespace redlock
