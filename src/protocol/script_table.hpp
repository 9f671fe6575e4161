// SPDX-License-Identifier: BSL-1.0
#pragma once

// Every Lua script the library runs, one row each: its name, how many keys it takes, its
// text and the SHA-1 of the text, computed once. A script is addressed by its `script_id`, so
// that naming one the table lacks does not compile. Keys and values travel only as
// arguments: nothing user-supplied is ever part of script text.
//
// The lock scripts answer the least of their keys' states, each key being ours (1), missing
// (0) or another owner's (-1): 1 when every key is ours, -1 when any is another owner's.

#include "engine/lua_script.hpp"
#include "engine/request.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// The rows of the table, in order. A new script is an id here and a row in script_table.cpp.
enum class script_id : std::uint8_t {
    /// Plain locks (string keys holding the owner value), over several keys all or nothing.
    plain_acquire,
    plain_release,
    /// Answers whether every key is ours and, given an expiry, extends them.
    plain_check_extend,
    /// A mutex of one plain key whose waiting clients register beside it: the attempt that
    /// registers them, and the release that names one of them (`waiters_part`).
    plain_wait_acquire,
    plain_release_naming,
    /// A client that no longer waits leaves the registry of a mutex or a semaphore.
    waiter_leave,
    /// Reentrant locks (hash keys {owner value: hold count}, one owner at a time).
    reentrant_acquire,
    reentrant_release,
    reentrant_check_extend,
    /// Fencing: a plain acquire that bumps a counter per key, and the write-back of a token.
    fenced_acquire,
    fence_raise,
    /// Semaphores (a sorted set {owner value: expiry in the server's ms} and the limit
    /// beside it, up to the limit's number of holders).
    semaphore_acquire,
    semaphore_release,
    /// Answers whether our permit is live and, given an expiry, extends it.
    semaphore_check_extend,
    /// A semaphore whose waiting clients register beside it (`waiters_part`): the release
    /// that names one of them (its acquire registers a client given the registry's keys).
    semaphore_release_naming,
    /// Read-write locks (a hash {mode:owner value: expiry in the server's ms}: readers, a
    /// writer, a waiting writer's intent).
    rw_acquire,
    rw_release,
    /// Answers whether our entry is live and, given an expiry, extends it.
    rw_check_extend,
    /// Fair locks: a plain lock key and, beside it, a queue of waiters ordered by ticket
    /// (`queue_part`): joining it (a proposal), the grant to its head, and the release or
    /// leave that tells the next head.
    fair_join,
    fair_acquire,
    fair_release,
    /// Elections: a fair lock whose holder publishes a value in a hash beside the key
    /// (`leader_key`): the release that also clears the hash and announces it, the extend
    /// that keeps the hash as long as the key, the leader's publication, and the read of who
    /// leads.
    election_release,
    election_check_extend,
    election_proclaim,
    election_read,
    /// client::async_inspect: one key's type, TTL and contents, read-only.
    inspect,
    /// fenced_store: a read or write admitted by its fencing token.
    fenced_access,
    /// Not a script: how many there are. Stays last.
    count
};

inline constexpr std::size_t script_count = static_cast<std::size_t>(script_id::count);

/// The row of `id` (a script, not `count`). Thread-safe; the SHA-1s are computed on the
/// first call.
const lua_script& script_of(script_id id);

/// Every row, `script_of(id)` at index `id`.
std::span<const lua_script, script_count> all_scripts();

/// EVALSHA sha numkeys keys... args... more_args... of script `id`, which a connection sends
/// as EVAL of its text when it must (`append_eval_form`). `keys` must be as many as the script
/// takes
/// (`lua_script::keys`), and at least one: the command goes to the keys' hash slot.
command script_command(script_id id, const std::vector<std::string>& keys,
                       std::initializer_list<std::string_view> args,
                       const std::vector<std::string>& more_args = {});

/// The SHA-1 of a script in lower-case hex, as EVALSHA wants it.
std::string script_sha1(std::string_view text);

}  // namespace redlock::detail
