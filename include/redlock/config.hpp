// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// The nodes a client locks on, and its connection settings.

#include <redlock/lock_event.hpp>
#include <redlock/node.hpp>
#include <redlock/observability.hpp>

#include <chrono>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// TLS for `rediss://` nodes (OpenSSL underneath; nothing of it in these headers).
struct tls_settings
{
    /// CA certificates (PEM) that sign the servers' certificates; empty: the system's.
    std::string ca_file;
    /// A client certificate chain (PEM), for servers that verify clients. With `key_file`,
    /// or neither.
    std::string cert_file;
    /// The private key (PEM) of `cert_file`.
    std::string key_file;
    /// Check the server's certificate chain and that it names the node's host (or IP
    /// address). Turn off only for tests.
    bool verify_peer = true;
};

/// What a `redlock::client` connects to. One node gives the single-instance lock; N
/// independent masters (not replicas of each other) give Redlock with a quorum of N/2+1.
struct config
{
    /// The Redis masters. At least one; no endpoint twice.
    std::vector<node> nodes;
    /// Upper bound on resolving, connecting and the AUTH/SELECT handshake of one node.
    std::chrono::milliseconds connect_timeout{1000};
    /// After a node's connection fails, requests to it fail at once (with the cause) for
    /// this long before the next connect; the pause doubles on each failure in a row.
    std::chrono::milliseconds reconnect_backoff_min{50};
    /// Upper bound of the doubling reconnect pause.
    std::chrono::milliseconds reconnect_backoff_max{2000};
    /// Where the client's log lines go (see `log_hook`); empty: nowhere.
    log_hook logger{};
    /// Receives every lock event of the client's locks (see `lock_event`), on the client's
    /// strand. Empty (the default): no event is measured or made, and nothing of it costs.
    lock_observer observer{};
    /// TLS for the `rediss://` nodes.
    tls_settings tls{};
    /// Put before every name the client uses on the nodes: the lock named N is the key
    /// `key_prefix + N`, its fencing counter `key_prefix + "redlock:fence:" + N`, the channel
    /// its releases are announced on `key_prefix + "redlock:released:" + N`. Keeps locks apart
    /// from an application's own keys in the same database, and lets one ACL pattern cover
    /// them. Empty by default (names as given). Every client of a lock must use the same
    /// prefix, or they lock different keys. No control characters; a `{` must open a
    /// non-empty hash tag closed within the prefix. Not applied to `fenced_store` keys.
    std::string key_prefix{};

    /// A config with one node per URL (see `node::from_url`), default settings otherwise.
    /// Throws `boost::system::system_error` (`error::invalid_argument`) on a malformed URL.
    static config from_urls(std::initializer_list<std::string_view> urls);
    /// \overload
    static config from_urls(const std::vector<std::string>& urls);
};

/// Splits a list of node URLs as `redlock run --nodes` and `REDLOCK_NODES` take it: a comma
/// followed by a scheme ("redis://", "redis-cluster://", ...) starts the next URL; other
/// commas stay in the URL (the Sentinels of a `redis-sentinel://` URL, the seeds of a
/// `redis-cluster://` URL). An empty piece (two commas in a row, or one at the end; an empty
/// `list` gives one) is returned as an empty URL, for the caller to report. The pieces view
/// `list` and are not parsed: give each to `node::from_url`. For example
/// `"redis://a:1,redis-cluster://b:2,c:3"` gives `"redis://a:1"` and
/// `"redis-cluster://b:2,c:3"`.
std::vector<std::string_view> split_node_urls(std::string_view list);

/// Checks a config; returns an empty string when it is usable, or a message naming the
/// field that is wrong. Pure: does no I/O.
std::string validate(const config& cfg);

}  // namespace redlock
