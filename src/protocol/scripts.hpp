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
// Each kind has its set of request builders (`kind_scripts`); each request is one command or
// one script of the table (script_table.hpp), whose answer a reply reader turns into a
// node_status.

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

/// A command with the function that reads each node's reply to it.
struct request
{
    command cmd;
    reply_reader read;
};

struct lock_shape;

/// What an attempt to acquire sends beside the lock's shape.
struct attempt_args
{
    std::string_view value;
    std::chrono::milliseconds expiry{};
    /// For the writer of a read-write lock that will wait: how long its intent keeps new
    /// readers out when readers refuse it (0: a single attempt records none).
    std::chrono::milliseconds intent{};
    /// For a lock with a queue: the waiter's ticket once agreed (none: try_acquire, which
    /// succeeds only if nobody is queued), how long its entry lives unless refreshed, and its
    /// client's channel tag (`client_channel_suffix`).
    std::optional<std::uint64_t> ticket{};
    std::chrono::milliseconds entry_ttl{};
    std::string_view channel_tag{};
    /// For a lock whose waiting clients register (`lock_shape::waiter_tag`): since when the
    /// client waits (its microseconds, `waiter_queue::since`), which an attempt refused
    /// registers it with, for `entry_ttl`; none for an attempt that does not register.
    std::optional<std::uint64_t> waiting_since{};
};

/// What the clean-up after a failed attempt sends beside the lock's shape.
struct clean_up_args
{
    std::string_view value;
    /// For a lock with a queue: the stamp that lets a release hand the key to the entry until
    /// its next attempt (none: a release only names it), the entry's life from the clean-up's
    /// arrival, and its client's channel tag.
    std::optional<std::uint64_t> hand_off_stamp{};
    std::chrono::milliseconds entry_ttl{};
    std::string_view channel_tag{};
    /// For a lock whose waiting clients register (`lock_shape::waiter_tag`): since when the
    /// client waits, which the clean-up registers it with, for `entry_ttl`, as an attempt
    /// does (`attempt_args::waiting_since`); none for a clean-up that does not register.
    std::optional<std::uint64_t> waiting_since{};
};

/// The commands of one kind of lock: one set per kind (below), which the kind's row of rules
/// (lock/kind_rules.hpp) points at. Every builder reads the options of the lock from its
/// shape (keys, reentrant, fencing, ...); which script it sends is the kind's.
struct kind_scripts
{
    request (*acquire)(const lock_shape&, const attempt_args&);
    /// After a failed attempt: takes back what the attempt may have set, keeping what the
    /// kind keeps between attempts (a waiting writer's intent, a waiter's queue entry).
    request (*clean_up)(const lock_shape&, const clean_up_args&);
    /// Deletes the holder's entry or key, publishing on each deleted key's release channel
    /// (`release_channel`) when `announce`; for a lock with a queue, its entry leaves too.
    request (*release)(const lock_shape&, std::string_view value, bool announce);
    /// Resets the TTL of keys that all hold `value`; with `recreate`, also sets keys that
    /// vanished (unless another owner holds one).
    request (*extend)(const lock_shape&, std::string_view value, std::chrono::milliseconds expiry,
                      bool recreate);
    /// Do all keys hold `value`?
    request (*check)(const lock_shape&, std::string_view value);
    /// For a lock with a queue: the join (phase 1 of a ticket), see `fair_join_request`; null
    /// for the others.
    request (*join)(const lock_shape&, std::string_view value, std::chrono::milliseconds entry_ttl,
                    bool commit, std::string_view channel_tag);
    /// Why `key` cannot be one of the lock's keys on a Redis Cluster node because of a helper
    /// key the kind keeps beside it (a semaphore's limit, a queue); null when it keeps none.
    std::string (*helper_key_problem)(const lock_shape&, const std::string& key);
};

/// A mutex over one or several keys, plain or reentrant, fenced or not: one owner.
extern const kind_scripts mutex_scripts;
/// A semaphore: up to `lock_shape::permits` owners, each with a permit of its own.
extern const kind_scripts semaphore_scripts;
/// A reader of a read-write lock: readers hold it together, each with an entry of its own.
extern const kind_scripts reader_scripts;
/// The writer of a read-write lock: alone, neither with readers nor with another writer.
extern const kind_scripts writer_scripts;
/// A fair mutex: one owner, granted to waiters in the order of their tickets (one key).
extern const kind_scripts fair_scripts;
/// An election: a fair mutex whose holder publishes a value beside the key
/// (election_requests.hpp), which its release and its extensions take along.
extern const kind_scripts election_scripts;

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
    /// The commands of its kind.
    const kind_scripts* scripts = &mutex_scripts;
    /// For a semaphore: how many holders it admits (>= 1).
    std::size_t permits = 1;
    /// The client's channel tag when the lock's waiting clients register beside its key
    /// (`waiters_key`), so that a release names one of them; empty when they do not.
    std::string_view waiter_tag{};
    /// How long a client a release named may take to try before a later release passes it
    /// over.
    std::chrono::milliseconds named_bound{};
};

/// Why `lock` cannot be taken on a Redis Cluster node, empty when it can: one script touches
/// all its keys (and their fencing counters) at once, so they must share a hash slot. Pure.
std::string cluster_key_problem(lock_shape lock);

/// The requests of `lock`'s kind (`lock_shape::scripts`).
/// Acquire: for a mutex, SET key value NX PX for one plain key, a script otherwise. A fair
/// lock's attempt commits the waiter's entry at its ticket (phase 2 of the ticket, and the
/// entry's refresh) and sets the key if it is free and the entry is the head; without a
/// ticket (try_acquire) only if nobody is queued.
inline request acquire_request(lock_shape lock, const attempt_args& a)
{
    return lock.scripts->acquire(lock, a);
}
inline request acquire_request(lock_shape lock, std::string_view value,
                               std::chrono::milliseconds expiry,
                               std::chrono::milliseconds intent = {})
{
    return lock.scripts->acquire(lock, {.value = value, .expiry = expiry, .intent = intent});
}
/// The clean-up after a failed attempt (`kind_scripts::clean_up`). A fair lock's deletes the
/// key where it holds the value and keeps the entry; with a hand-off stamp, it also pushes
/// the entry's expiry `entry_ttl` ahead and marks it so that, until the waiter's next attempt,
/// a release hands the key to it once it is the head, saying so with that stamp
/// (docs/safety.md); without, a release only names it. A waiting writer's keeps its intent.
inline request clean_up_request(lock_shape lock, const clean_up_args& a)
{
    return lock.scripts->clean_up(lock, a);
}
/// Release: delete (or, reentrant, decrement) the keys that hold our value, publishing on
/// each deleted key's release channel (`release_channel`) unless `announce` is false. A
/// writer's release withdraws its intent; a fair lock's takes the entry out of the queue as
/// well and, announced, tells the queue's head when the key is free: hands it the key if its
/// entry is marked for hand-offs, names it otherwise (`fair_message`).
inline request release_request(lock_shape lock, std::string_view value, bool announce)
{
    return lock.scripts->release(lock, value, announce);
}
/// Extend: reset the TTL of keys that all hold our value; with `recreate`, also set keys
/// that vanished (unless another owner holds one).
inline request extend_request(lock_shape lock, std::string_view value,
                              std::chrono::milliseconds expiry, bool recreate)
{
    return lock.scripts->extend(lock, value, expiry, recreate);
}
/// Valid: do all keys hold our value? GET for one plain key; a script otherwise.
inline request check_request(lock_shape lock, std::string_view value)
{
    return lock.scripts->check(lock, value);
}
/// A queue's join (phase 1 of a ticket): the node's proposal for `value`'s entry, which
/// expires `entry_ttl` from now by the node's clock unless refreshed; with `commit`, the
/// proposal is the ticket at once (a lock of one node). Answers the proposal (>= 1), read as
/// a fencing token is (`round::replies_with_token`). `channel_tag`: the client's, which the
/// channel of the messages for the entry carries (`client_channel_suffix`). Only for a kind
/// with a queue (`kind_scripts::join`).
inline request join_request(lock_shape lock, std::string_view value,
                            std::chrono::milliseconds entry_ttl, bool commit,
                            std::string_view channel_tag)
{
    return lock.scripts->join(lock, value, entry_ttl, commit, channel_tag);
}
/// For a lock whose waiting clients register (`lock_shape::waiter_tag`): its client no longer
/// waits, and leaves the registry of waiting clients on the node.
request leave_registry_request(lock_shape lock);
/// Fencing write-back: raise each key's counter to at least `token` (never lowers it).
request fence_raise_request(lock_shape lock, std::uint64_t token);

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
