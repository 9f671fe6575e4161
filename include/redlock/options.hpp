// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// Per-lock options, an aggregate meant for designated initializers.

#include <chrono>
#include <concepts>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// How long `mutex::acquire` waits before attempt number `n + 1` (n counts from 1).
/// Converts from a fixed duration or from any `milliseconds(int attempt)` function; the
/// default is a uniformly random delay in [50 ms, 250 ms], so that contenders that failed
/// together do not retry together.
class delay_policy
{
  public:
    /// Random delay in [50 ms, 250 ms].
    delay_policy() = default;
    /// The same delay before every retry (any duration type: 20ms, 2s, ...).
    template <class Rep, class Period>
    delay_policy(std::chrono::duration<Rep, Period> fixed)
        : fn_([d = std::chrono::duration_cast<std::chrono::milliseconds>(fixed)](int) { return d; })
    {
    }
    /// A delay computed from the attempt number that just failed (1 for the first).
    template <class F>
    requires std::is_invocable_r_v<std::chrono::milliseconds, F, int> delay_policy(F f)
        : fn_(std::move(f))
    {
    }

    /// The delay after failed attempt `attempt`; never negative.
    std::chrono::milliseconds operator()(int attempt) const;

  private:
    std::function<std::chrono::milliseconds(int)> fn_;
};

/// Options of one lock (see `client::make_mutex`). Defaults follow redsync v4.
struct options
{
    /// The keys' time to live (PX). Positive, at most 365 days.
    std::chrono::milliseconds expiry{8000};
    /// Attempts made by `acquire` (`try_acquire` makes one). At least 1.
    int tries = 32;
    /// Delay between attempts of `acquire`.
    delay_policy retry_delay{};
    /// Upper bound on a whole `acquire`, whichever comes first with `tries`; at most 365 days.
    std::optional<std::chrono::milliseconds> wait{};
    /// Clock drift allowance: validity = expiry - elapsed - (expiry * drift_factor + 2 ms).
    /// In [0, 1).
    double drift_factor = 0.01;
    /// Per-node deadline of each request = expiry * timeout_factor, in [0, 1); a product
    /// below 1 ms is raised to 1 ms.
    double timeout_factor = 0.05;
    /// A fixed owner value. Empty: a fresh one from `gen_value` for each acquisition.
    std::string value{};
    /// Makes owner values. Empty: 16 bytes from the OS CSPRNG, base64-encoded.
    std::function<std::string()> gen_value{};
    /// Stop an attempt as soon as a quorum has become impossible, instead of waiting for
    /// every node's answer or deadline.
    bool fail_fast = false;
    /// Send to the nodes in a random order on each attempt.
    bool shuffle_nodes = false;
    /// `extend` re-creates the key on nodes where it vanished (e.g. after a restart).
    bool set_nx_on_extend = false;
    /// Reentrant: the same owner acquiring again increments a hold count instead of waiting
    /// for itself; each release decrements it and the key goes at zero. The owner is the
    /// mutex object and its copies (one owner value, from `value` if set), so coroutines that
    /// share a mutex share ownership; another `make_mutex` of the same key is another owner.
    /// Keys are hashes then: do not lock the same key reentrant and not.
    bool reentrant = false;
    /// Wake-ups: while `acquire` waits to retry a lock that another owner holds, it listens
    /// (one shared pub/sub connection per node and client) for that key's release and
    /// retries at once; the random delay stays as the fallback. A client's waiters of one
    /// key take turns in the order they began to wait, and a release by the same client
    /// hands the lock to the next of them directly. Off: plain polling.
    bool wake_on_release = true;
    /// Watchdog: while the guard owns the lock, extend it about every expiry / 3, so that
    /// work of unknown length stays protected. Stops on release or destruction. A failed
    /// extension is retried until the validity runs out; then the lock is reported lost
    /// (see `guard::lost_slot`).
    bool auto_extend = false;
    /// With `auto_extend`: the most extensions of one hold (0: no limit), the watchdog's and
    /// the guard's own `extend` calls together. After the last one the watchdog stops, a
    /// further `extend` completes with `error::extend_failed`, and the lock runs out at its
    /// validity and is reported lost: a hard bound on how long one owner can keep others out
    /// (at most `(auto_extend_limit + 1) * expiry` from the acquire).
    int auto_extend_limit = 0;
    /// Fencing tokens (see docs/safety.md): each acquisition also increments a counter per
    /// key on the nodes it sets (the key `config::key_prefix` + "redlock:fence:" + name,
    /// which never expires), and before completing writes the largest value its quorum
    /// returned back to a majority.
    /// `guard::fencing_token()` is then greater than the token of every acquisition that
    /// completed before this one started, for as long as a majority of nodes keeps its
    /// data. Costs one more round trip per acquisition. Not with `reentrant`.
    bool fencing = false;
    /// Replica acknowledgement: after setting the keys, each node's master runs `WAIT n`
    /// (with half the per-node deadline as its timeout), and the node counts towards the
    /// quorum only if at least `n` of its replicas acknowledged the write; elsewhere the
    /// attempt's keys are deleted like any failed node's. 0 (the default): no WAIT. It makes
    /// losing a lock in a failover less likely, not impossible: replication stays
    /// asynchronous, and a replica that acknowledged may still not be the one promoted (see
    /// docs/safety.md). At least 0.
    int wait_for_replicas = 0;
    /// First come, first served (`make_mutex` only, one key, not `reentrant`): the acquires
    /// of every client that sets it join a queue beside the lock on each node and are granted
    /// in the order they joined it; `try_acquire` succeeds only when the lock is free and
    /// nobody is queued. A waiter refreshes its place every expiry / 4 (each refresh is an
    /// attempt, counted in `tries`; bound the whole wait with `wait`); one that gives up or is
    /// cancelled leaves the queue at once, one that crashed stops holding up the others
    /// within one expiry. Mutual exclusion rests on the lock key as for any mutex (see
    /// docs/safety.md); the queue decides only who may try.
    bool fair = false;
};

/// Checks lock options and a lock name; returns an empty string when they are usable, or a
/// message naming the field that is wrong. Pure: does no I/O.
std::string validate(const options& opts, std::string_view name);
/// \overload
///
/// For a multi-resource lock: at least one key, none empty, none twice.
std::string validate(const options& opts, const std::vector<std::string>& names);

}  // namespace redlock
