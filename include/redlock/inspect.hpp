// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// What each node holds under a lock's key: for tools and diagnostics (`client::async_inspect`).

#include <redlock/node_error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

/// What a key is, as a lock.
enum class key_kind {
    /// The key does not exist: the lock is free on that node (a fair lock's queue, in
    /// `key_state::queue`, may still have waiters).
    missing,
    /// A string: a plain lock, or a fair one (`options::fair`), held by the owner value it
    /// holds.
    plain,
    /// A hash of {owner value: hold count}: a reentrant lock.
    reentrant,
    /// A hash of entries of readers, a writer and a waiting writer's intent: a `rw_mutex`.
    read_write,
    /// A sorted set of permits: a `semaphore`, with its limit in `key_state::permits`.
    semaphore,
    /// Something no lock of this library writes (another type, or a hash whose values are
    /// not counts): see `key_state::type`.
    other,
};

/// What a holder has of a lock.
enum class holder_role {
    /// The owner of a plain or reentrant lock, or of one permit of a semaphore.
    owner,
    /// A reader of a read-write lock.
    reader,
    /// The writer of a read-write lock.
    writer,
    /// A writer that waits for the readers to leave and meanwhile keeps new readers out.
    waiting_writer,
};

/// One owner of a lock key on one node.
struct lock_holder
{
    /// The owner value (binary-safe).
    std::string value;
    /// How many times the owner holds a reentrant lock; 1 for a plain lock.
    std::int64_t count = 1;
    /// What the owner holds.
    holder_role role = holder_role::owner;
    /// For an entry of a read-write lock or a semaphore, which expires on its own: its
    /// remaining time by the node's clock. None for plain and reentrant locks (the key's
    /// `key_state::ttl` is theirs).
    std::optional<std::chrono::milliseconds> ttl;
};

/// One waiter in a fair lock's queue (`options::fair`) on one node.
struct queued_waiter
{
    /// The waiter's owner value (binary-safe).
    std::string value;
    /// Its place in the queue: the ticket it committed, or while it is still joining the
    /// node's proposal for it.
    std::uint64_t ticket = 0;
    /// Whether the ticket is committed. A waiter that is still joining (over several nodes)
    /// cannot be granted the lock until it commits, and holds up those behind it meanwhile.
    bool committed = false;
    /// The entry's remaining time by the node's clock: it leaves the queue then, unless the
    /// waiter refreshes it first (as a live waiter does every expiry / 4).
    std::chrono::milliseconds ttl{0};
};

/// One node's view of a key.
struct key_state
{
    /// The node, as `node::endpoint()` names it.
    std::string endpoint;
    /// What the key is. `missing` when `error` is set.
    key_kind kind = key_kind::missing;
    /// The key's Redis type ("string", "hash", "list", ...; "none" when missing); empty when
    /// `error` is set.
    std::string type;
    /// For `plain` and `reentrant`: who holds the lock (one owner, unless something other
    /// than this library wrote the hash). For `read_write` and `semaphore`: every live entry
    /// (entries past their expiry, which the next acquisition removes, are left out).
    std::vector<lock_holder> holders;
    /// For `semaphore`: the number of permits its holders use, as stored beside them; 0 when
    /// the node has none stored.
    std::int64_t permits = 0;
    /// For a lock key with a fair queue beside it: the queue's live entries in the order
    /// they are granted, the next in line first (entries past their expiry are left out, and
    /// so is the holder's own entry, which it keeps until it releases).
    /// Empty for the other kinds, and when nobody waits. Read whatever `kind` is, since a
    /// fair lock may be free (`missing`) while its head is about to take it.
    std::vector<queued_waiter> queue;
    /// The key's remaining time to live; none when the key has no expiry or is missing.
    std::optional<std::chrono::milliseconds> ttl;
    /// Non-empty when the node is a replica: its master's "host:port". A replica only
    /// copies its master's keys and refuses lock writes; list masters as a client's nodes.
    std::string replica_of;
    /// Non-empty when the node could not be read: what happened (connection refused, no
    /// reply within the timeout, a Redis error, ...). The other fields are then meaningless.
    std::string error;
    /// When `error` is set: its cause, a `redlock::node_errc`.
    boost::system::error_code code{};

    /// The node answered and the key exists.
    bool exists() const noexcept { return error.empty() && kind != key_kind::missing; }
};

namespace detail {
class client_impl;
using inspect_handler =
    boost::asio::any_completion_handler<void(boost::system::error_code, std::vector<key_state>)>;
void initiate_inspect(std::shared_ptr<client_impl> c, std::string key,
                      std::chrono::milliseconds timeout, inspect_handler h);
}  // namespace detail

}  // namespace redlock
