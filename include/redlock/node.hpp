// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// One Redis endpoint.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// A TCP host and port: one of the Sentinels of a `redis-sentinel://` node
/// (`node::sentinels`) or one of the seeds of a `redis-cluster://` node (`node::cluster_seeds`),
/// as `node::from_url` parses them from the URL's comma-separated hosts.
struct server_address
{
    /// Host name or IP address.
    std::string host;
    /// TCP port.
    std::uint16_t port = 0;
};

/// One Redlock node: a Redis server (a TCP host and port, or a unix socket path), the master
/// that a set of Sentinels names, or a whole Redis Cluster; with its credentials.
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
    /// Connect with TLS (`rediss://`; for a Sentinel node, to the Sentinels and the master).
    bool tls = false;
    /// Non-empty for a node that is whichever server the Sentinels at these addresses name as
    /// the master `master_name` (`redis-sentinel://`); `host`, `port` and `unix_path` are then
    /// not used. The client asks them in order on every connect, checks with ROLE that the
    /// server it reaches is a master, and connects again when the Sentinels announce a new
    /// master (`+switch-master`) or the old one turns out to be a replica. The credentials
    /// and `db` are the master's; the Sentinels are asked without AUTH.
    std::vector<server_address> sentinels;
    /// The name the Sentinels know the master by (their `sentinel monitor NAME ...`).
    std::string master_name;
    /// Non-empty for a node that is a whole Redis Cluster (`redis-cluster://`), reached
    /// through these seeds; `host`, `port`, `unix_path` and `db` are then not used. The client
    /// learns the slot map from the first seed that answers CLUSTER SLOTS, keeps one pipelined
    /// connection per master, sends each request to the master of its keys' slot, follows
    /// MOVED and ASK redirections, and learns the map again after a redirection or a failed
    /// master. The credentials and TLS apply to every server of the cluster.
    std::vector<server_address> cluster_seeds;

    /// Parses `redis://[[user]:password@]host[:port][/db]`, `rediss://...` (TLS),
    /// `unix://[[user]:password@]/path/to/socket[?db=N]` and
    /// `redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/MASTER_NAME[?db=N]`
    /// (Sentinels listen on 26379 unless a port is given; `rediss-sentinel://` for TLS) and
    /// `redis-cluster://[[user]:password@]host[:port][,host[:port]...]` (the seeds of a Redis
    /// Cluster, 6379 unless a port is given; `rediss-cluster://` for TLS). IPv6
    /// hosts go in brackets. Throws `boost::system::system_error` with
    /// `error::invalid_argument` and a message naming what is wrong (the password is never
    /// repeated in it).
    static node from_url(std::string_view url);

    /// "host:port", "unix:/path", "redis-sentinel://host:port,.../MASTER_NAME" or
    /// "redis-cluster://host:port,...": how the node is named in reports; no credentials.
    std::string endpoint() const;
};

}  // namespace redlock
