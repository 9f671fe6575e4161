// SPDX-License-Identifier: BSL-1.0
#pragma once

// The commands of the lock protocol, and how each node's reply to them is read. Keys and
// values travel only as arguments: nothing user-supplied is ever part of script text.
//
// Two kinds of lock, each over one or several keys:
// - plain: each key is a string holding the owner value (SET NX PX); several keys are set
//   all or nothing by one script.
// - reentrant: each key is a hash {owner value: hold count}; the same owner acquiring again
//   increments the count, and each release decrements it; the key goes at zero.
// And semaphores, over one name: a sorted set {owner value: expiry in the server's ms} of up
// to `permits` live holders, with the limit in a key beside it (`limit_key`). And read-write
// locks, over one name: a hash {mode:owner value: expiry in the server's ms} of readers, a
// writer and a waiting writer's intent. And fair locks: a plain lock key and, beside it, a
// queue of waiters ordered by ticket (`queue_key`); only the queue's head may set the key.
// Each request is one command or one script of the table (script_table.hpp), whose answer
// a reply reader turns into a node_status.

#include <redlock/report.hpp>

#include "core/node_error.hpp"
#include "engine/request.hpp"
#include "resp/resp.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// Reads a node's reply to a lock's command: its status, and for `error` the failure in
/// `why` (an error reply's code and words, or `unexpected_reply`).
using reply_reader = node_status (*)(const resp::reply&, std::string_view value, node_failure& why);

/// How many may hold a lock at once, which decides its scripts and its quorum.
enum class lock_kind : std::uint8_t {
    /// One owner (the plain and reentrant locks).
    exclusive,
    /// Up to `lock_shape::permits` owners, each with a permit of its own.
    semaphore,
    /// A reader of a read-write lock: readers hold it together, each with an entry of its own.
    read,
    /// The writer of a read-write lock: alone, neither with readers nor with another writer.
    write,
    /// One owner, granted to waiters in the order of their tickets (one key).
    fair,
};

/// What a lock is made of.
struct lock_shape
{
    const std::vector<std::string>& keys;
    bool reentrant = false;
    /// Acquisitions also bump a fencing counter per key (see `fence_key`) and answer the
    /// largest value as their token.
    bool fencing = false;
    /// config::key_prefix, which `keys` begin with (key_space.hpp).
    std::string_view prefix{};
    /// The client has a Redis Cluster node: helper keys go in their lock key's slot.
    bool in_cluster = false;
    lock_kind kind = lock_kind::exclusive;
    /// For a semaphore: how many holders it admits (>= 1).
    std::size_t permits = 1;
};

/// Why `lock` cannot be taken on a Redis Cluster node, empty when it can: one script touches
/// all its keys (and their fencing counters) at once, so they must share a hash slot. Pure.
std::string cluster_key_problem(lock_shape lock);

/// A command with the function that reads each node's reply to it.
struct request
{
    command cmd;
    reply_reader read;
};

/// Acquire: SET key value NX PX for one plain key; a script otherwise. `intent`: for the
/// writer of a read-write lock that will wait, how long its intent keeps new readers out
/// when readers refuse it (0: a single attempt records none).
request acquire_request(lock_shape lock, std::string_view value, std::chrono::milliseconds expiry,
                        std::chrono::milliseconds intent = {});
/// A fair lock's join (phase 1 of a ticket): the node's proposal for `value`'s entry, which
/// expires `entry_ttl` from now by the node's clock unless refreshed; with `commit`, the
/// proposal is the ticket at once (a lock of one node). Answers the proposal (>= 1), read as
/// a fencing token is (`round::replies_with_token`). `channel_tag`: the client's, which the
/// channel of the messages for the entry carries (`fair_channel_suffix`).
request fair_join_request(lock_shape lock, std::string_view value,
                          std::chrono::milliseconds entry_ttl, bool commit,
                          std::string_view channel_tag);
/// A fair lock's attempt: commits `value`'s entry at `ticket` (phase 2, and the entry's
/// refresh) and sets the key if it is free and the entry is the head; without a ticket
/// (try_acquire) only if nobody is queued. A waiter ahead reads as `taken`.
request fair_acquire_request(lock_shape lock, std::string_view value,
                             std::chrono::milliseconds expiry, std::chrono::milliseconds entry_ttl,
                             std::optional<std::uint64_t> ticket, std::string_view channel_tag);
/// Deletes a fair lock's key where it holds `value`; with `leave`, `value`'s entry leaves the
/// queue as well; with `announce`, the queue's head is told when the key is free: handed the
/// key if its entry is marked for hand-offs (`fair_clean_up_request`), named otherwise
/// (`fair_message`).
request fair_release_request(lock_shape lock, std::string_view value, bool leave, bool announce);
/// The clean-up after a fair attempt that failed: deletes the key where it holds `value` and
/// keeps `value`'s entry. With `hand_off_stamp`, it also pushes the entry's expiry `entry_ttl`
/// ahead and marks it so that, until `value`'s next attempt, a release hands the key to it
/// once it is the head, saying so with that stamp (docs/safety.md); without, a release only
/// names it.
request fair_clean_up_request(lock_shape lock, std::string_view value,
                              std::optional<std::uint64_t> hand_off_stamp,
                              std::chrono::milliseconds entry_ttl, std::string_view channel_tag);
/// Fencing write-back: raise each key's counter to at least `token` (never lowers it).
request fence_raise_request(lock_shape lock, std::uint64_t token);
/// Release: delete (or, reentrant, decrement) the keys that hold our value, publishing on
/// each deleted key's release channel (`release_channel`) unless `announce` is false. The
/// writer of a read-write lock also withdraws its intent, unless `keep_intent` (the clean-up
/// between the attempts of a writer that waits on).
request release_request(lock_shape lock, std::string_view value, bool announce,
                        bool keep_intent = false);
/// Extend: reset the TTL of keys that all hold our value; with `recreate`, also set keys
/// that vanished (unless another owner holds one).
request extend_request(lock_shape lock, std::string_view value, std::chrono::milliseconds expiry,
                       bool recreate);
/// Valid: do all keys hold our value? GET for one plain key; a script otherwise.
request check_request(lock_shape lock, std::string_view value);

/// How replies read: +OK/nil for SET NX; 1/0/-1 for the scripts; a bulk compared with
/// `value` for GET. `why` is set for error replies and unexpected ones.
node_status read_acquire_reply(const resp::reply& r, std::string_view value, node_failure& why);
node_status read_script_reply(const resp::reply& r, std::string_view value, node_failure& why);
/// A semaphore's acquire answers 1 (granted), -1 (full) or {-2, stored limit, asked limit}:
/// an `error` with `node_errc::permits_mismatch`, whose detail names both.
node_status read_semaphore_acquire_reply(const resp::reply& r, std::string_view value,
                                         node_failure& why);
/// A fenced acquire answers its token (>= 1) or -1 when taken.
node_status read_fenced_acquire_reply(const resp::reply& r, std::string_view value,
                                      node_failure& why);
/// A fair attempt answers 1 (or its token, fenced), -1 (held) or -2 (another waiter goes
/// first): both of the last are `taken`.
node_status read_fair_acquire_reply(const resp::reply& r, std::string_view value,
                                    node_failure& why);
node_status read_get_reply(const resp::reply& r, std::string_view value, node_failure& why);

/// Appends `WAIT replicas timeout` to `cmd` (its EVAL form too), so that the node's reply
/// to it follows the command's own: `cmd.replies` becomes 2. `timeout` of at least 1 ms
/// (WAIT's 0 would wait forever).
void add_replica_wait(command& cmd, int replicas, std::chrono::milliseconds timeout);

/// Reads the reply to a command followed by WAIT (`add_replica_wait`): `read` reads the
/// command's own reply; an ok counts only if WAIT says at least `replicas` replicas
/// acknowledged it, and is an `error` otherwise (`not_replicated`, with the count).
node_status read_replicated_reply(const resp::reply& r, reply_reader read, std::string_view value,
                                  int replicas, node_failure& why);

}  // namespace redlock::detail
