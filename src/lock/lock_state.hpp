// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state behind a mutex and behind a guard's lock.

#include <redlock/options.hpp>
#include <redlock/report.hpp>

#include "lock/kind_rules.hpp"
#include "lock/stored_report.hpp"
#include "lock/validity.hpp"
#include "lock/watchdog.hpp"
#include "protocol/scripts.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

class client_impl;

struct mutex_state
{
    std::shared_ptr<client_impl> client;
    /// The Redis keys: one, or several for a multi-resource lock; each is config::key_prefix
    /// followed by a name the user gave (key_space.hpp).
    std::vector<std::string> keys;
    /// config::key_prefix, in the client's config.
    std::string_view prefix;
    /// The client has a Redis Cluster node (`lock_shape::in_cluster`).
    bool in_cluster = false;
    /// The names joined by ", ", for accessors; empty for a single key without a prefix, whose
    /// name is the key itself (see `display_name`).
    std::string name;
    redlock::options opts;
    /// For a reentrant lock, the owner value every acquisition through this mutex uses.
    std::string owner;
    /// The rules of its kind: a mutex's, a fair mutex's, a semaphore's of `permits` permits
    /// (one key, `keys.front()`), a read-write lock's reader's or writer's.
    const kind_rules* rules = &mutex_kind;
    std::size_t permits = 1;
    /// The nodes that must grant an acquisition (and confirm an extension, a check, a
    /// release): `rules->quorum` of the client's nodes.
    std::size_t quorum = 1;
    /// The client's channel tag when the lock's waiting clients register on the nodes
    /// (`registers_waiters`); empty otherwise.
    std::string_view waiter_tag;

    lock_shape shape() const
    {
        // A named client that has not tried within a per-node deadline is treated as a node
        // that did not answer in time: passed over.
        return {keys,
                opts.reentrant,
                opts.fencing,
                prefix,
                in_cluster,
                rules->scripts,
                permits,
                waiter_tag,
                std::chrono::duration_cast<std::chrono::milliseconds>(
                    node_timeout(opts.expiry, opts.timeout_factor))};
    }
    const std::string& display_name() const { return name.empty() ? keys.front() : name; }

    void set_report(const report& r) { last.set(r); }
    void set_report(stored_report r) { last.set(std::move(r)); }
    report get_report() const { return last.get(*client); }

  private:
    shared_report last;
};

struct lock_state
{
    std::shared_ptr<mutex_state> mutex;
    std::string value;
    /// Written on the strand (acquire, extend, the watchdog); read by user threads too.
    std::atomic<clock::time_point> until{};
    std::atomic<bool> owns{false};
    /// With options::fencing: this acquisition's token (set once, before the guard exists).
    std::uint64_t fencing_token = 0;

    void set_report(const report& r) { last.set(r); }
    void set_report(stored_report r) { last.set(std::move(r)); }
    report get_report() const { return last.get(*mutex->client); }

    // Watching for loss (and, with auto_extend, extending): members below are used on the
    // strand only, but for the flags that user threads read.
    std::atomic<bool> watched{false};
    std::atomic<bool> lost{false};
    /// When the last successful acquire or extend started: the watchdog's period counts
    /// from here.
    clock::time_point extended_at{};
    /// When the watchdog extends next.
    clock::time_point next_extend{};
    int extensions = 0;
    /// The lock's place in the client's watchdog schedule (watchdog::npos: not scheduled,
    /// e.g. while the watchdog's extension round runs).
    std::size_t watch_slot = watchdog::npos;
    /// Cancelled when the lock is lost or released: wakes `async_wait_lost`. Created by the
    /// first such wait.
    std::unique_ptr<boost::asio::steady_timer> lost_event;
    /// Emitted (terminal) once, when the lock is lost.
    boost::asio::cancellation_signal lost_signal;

    // Lock events (lock_events.hpp), kept only when the client has an observer; on the strand.
    /// When the lock was granted: a hold's time counts from here.
    clock::time_point granted_at{};
    /// `released` or `lost` was told: a hold ends once.
    bool hold_ended = false;

  private:
    // The watchdog updates the report while user threads may read it.
    shared_report last;
};

}  // namespace redlock::detail
