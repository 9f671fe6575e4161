// SPDX-License-Identifier: BSL-1.0
#pragma once

// A kind of lock as one row of rules: its commands, its quorum, what counts as taken, whom a
// release wakes, the options it refuses and how it waits. The shared path (acquire, the
// rounds, the guard's operations, the client's make_* functions) reads a lock's row and never
// asks which kind it is; a new kind is a new row, its scripts (protocol/scripts.hpp) and, if
// it waits differently, its own state machine.

#include <redlock/error.hpp>
#include <redlock/options.hpp>

#include "lock/wake_rule.hpp"
#include "protocol/scripts.hpp"
#include "quorum/tally.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace redlock::detail {

/// How an acquire waits between its attempts.
enum class waiting : std::uint8_t {
    /// A random retry delay, which a release of the key may cut short (waiters.hpp).
    retry,
    /// A place in the nodes' queue of the key: the acquire joins it, and waits for its turn
    /// at most its refresh period (fair_rules.hpp).
    queue,
};

/// The rules of one kind of lock. Rows are static constants (below); a lock points at its
/// own (`mutex_state::rules`).
struct kind_rules
{
    /// What the kind is called: "mutex", "fair", "read", "write", "semaphore" or "election".
    std::string_view name;
    /// Its commands, and how each node's replies to them read.
    const kind_scripts* scripts;
    /// How many of `nodes` nodes must grant an acquisition (and confirm an extension, a check,
    /// a release) of a lock of `permits` holders.
    std::size_t (*quorum)(std::size_t nodes, std::size_t permits);
    /// Whether an attempt's tally says that other owners hold the lock (`error::taken`, and a
    /// release may wake the retry).
    bool (*taken)(const tally& attempt);
    /// Why a lock of this kind over `keys` keys cannot be made with `opts` (beyond what
    /// `validate` says of any lock), empty when it can; `permits` for a semaphore.
    std::string (*refusal)(const options& opts, std::size_t keys, std::ptrdiff_t permits);
    /// What a release may let in among the client's waiters of the lock.
    wake_rule wakes;
    /// How its acquire waits between attempts.
    waiting waits;
    /// One owner that the client's own acquires pass between them: a release of this client
    /// hands the lock to its longest-waiting acquire of the key, and a new acquire joins the
    /// line while the client holds the key (`waiter_queue::hand_off`, `waiter_queue::ours`).
    bool hands_off_in_client;
    /// A release of this client wakes its own waiters that it may let in before its requests
    /// are written (`waiter_queue::released`): a semaphore's release frees one permit of
    /// several, a writer's lets readers in.
    bool release_wakes_own;
    /// Its acquire, when it will wait, records an intent between attempts that keeps new
    /// holders of the other mode out (a writer of a read-write lock; rw_rules.hpp).
    bool writer_intent;
    /// Its holders hold together (`guard::shared`), so no fencing token orders them.
    bool shared;
    /// What an acquire completes with (and its `acquire_failed` event says) when its attempts
    /// end with others holding the lock: `error::taken`; `error::failed` for an election,
    /// whose campaign waits whoever leads, so only its `options::wait` ends it.
    error busy;
    /// A node that refuses an attempt writes nothing (no key, no entry), so an attempt that
    /// every node refused is not cleaned up. Not so for a fair lock: its attempt commits the
    /// waiter's entry, and its clean-up stamps the entry so that a release may hand it the key.
    /// A writer's refused attempt may record its intent, which its clean-up would keep anyway.
    bool refusal_writes_nothing;
    /// Its waiting clients register beside the key, and a release names the one that has
    /// waited longest, which alone hears of it (`waiters_part`): one client tries after a
    /// release, however many wait (a semaphore's release: one not named already). For a lock
    /// of one key (`registers_waiters`).
    bool names_next_waiter;
};

/// Whether the waiting clients of a lock of kind `rules` over `keys` keys with `opts` register
/// on the nodes (`kind_rules::names_next_waiter`): one plain key, with the release messages
/// on. A reentrant or fenced lock's scripts keep no registry; nor does a client with a Redis
/// Cluster node (`in_cluster`), where a script over the key and its registry would fail
/// with TRYAGAIN while the key's slot migrates, which a release of one key never does.
bool registers_waiters(const kind_rules& rules, const options& opts, std::size_t keys,
                       bool in_cluster);

/// A mutex over one or several keys (plain or reentrant, fenced or not).
extern const kind_rules mutex_kind;
/// A fair mutex (`options::fair`): one key, granted in the order of the queue.
extern const kind_rules fair_kind;
/// An election: a fair, fenced mutex whose holder publishes a value (election_rules.hpp).
extern const kind_rules election_kind;
/// A semaphore: up to `permits` holders at once.
extern const kind_rules semaphore_kind;
/// A read-write lock's reader, and its writer.
extern const kind_rules read_kind;
extern const kind_rules write_kind;

}  // namespace redlock::detail
