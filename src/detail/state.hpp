#pragma once

// The shared state behind client, mutex and guard.

#include <redlock/config.hpp>
#include <redlock/options.hpp>
#include <redlock/report.hpp>

#include "detail/background_work.hpp"
#include "detail/connection.hpp"
#include "detail/scripts.hpp"
#include "detail/subscriber.hpp"
#include "detail/validity.hpp"
#include "detail/waiters.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/container/small_vector.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace redlock::detail {

class client_impl;
struct lock_state;

/// A report as guards and mutexes keep it: per node only what varies. The endpoints are the
/// client's nodes' names (outcomes are in node order), filled in when the report is read; a
/// detail or a fencing token is kept only for the nodes that have one. A held guard keeps
/// its last report, so this is most of what a guard costs in memory.
class stored_report
{
  public:
    stored_report() = default;
    explicit stored_report(const report& r);
    /// The report, with `c`'s node names as endpoints.
    report expand(const client_impl& c) const;

  private:
    struct node
    {
        std::uint32_t latency_us = 0;
        node_status status = node_status::abandoned;
        /// 1 + the index of its detail in `abandoned_details` (quorum.hpp), 0 for none: the
        /// nodes a round did not wait for are common, their details few and fixed.
        std::uint8_t abandoned_detail = 0;
    };
    struct rare
    {
        std::vector<std::pair<std::uint32_t, std::string>> details;
        std::vector<std::pair<std::uint32_t, std::uint64_t>> tokens;
    };
    boost::container::small_vector<node, 5> nodes_;
    std::unique_ptr<rare> rare_;
    int attempts_ = 0;
};

/// A stored report that the client's strand writes while user threads may read it.
class shared_report
{
  public:
    void set(const report& r)
    {
        stored_report compact(r);
        std::lock_guard lock(mutex_);
        last_ = std::move(compact);
    }
    report get(const client_impl& c) const
    {
        std::lock_guard lock(mutex_);
        return last_.expand(c);
    }

  private:
    mutable std::mutex mutex_;
    stored_report last_;  // guarded by mutex_
};

/// Extends the held locks of one client that have `options::auto_extend` (and watches those
/// whose loss someone waits for): one schedule and one timer for all of them, rather than a
/// timer and a coroutine per lock. On the client's strand only. The pending timer wait holds
/// the watchdog (and through it the scheduled locks), as a timer per lock would: destroying
/// the io_context frees them.
class watchdog : public std::enable_shared_from_this<watchdog>
{
  public:
    explicit watchdog(const boost::asio::any_io_executor& strand);

    /// Schedules `l`'s next step at `due` (moves it if already scheduled).
    void schedule(const std::shared_ptr<lock_state>& l, clock::time_point due);
    /// Unschedules `l` if it is scheduled.
    void remove(lock_state& l);

    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    /// Extension rounds the watchdog runs at once; locks due meanwhile wait their turn (a
    /// burst of them must not flood the connections past the per-node deadline).
    static constexpr std::size_t max_extending = 256;
    /// Extensions due within this much (or 1/100 of a lock's period, if less) of one due
    /// now go together.
    static constexpr std::chrono::milliseconds max_window{50};

    /// Whether another extension round may start now; if so it is counted as running.
    bool start_extension();
    /// An extension round started by `start_extension` finished: the locks that waited for
    /// it go now.
    void extension_done();

  private:
    struct item
    {
        clock::time_point due;
        std::shared_ptr<lock_state> lock;
    };
    void place(std::size_t i, item it);
    void sift_up(std::size_t i, item it);
    void sift_down(std::size_t i, item it);
    void erase(std::size_t i);
    void arm();
    void fire();

    std::vector<item> heap_;  // a binary min-heap on `due`; lock_state::watch_slot is the index
    boost::asio::steady_timer timer_;
    bool armed_ = false;
    clock::time_point armed_for_{};
    std::uint64_t ticket_ = 0;
    std::size_t extending_ = 0;
    bool firing_ = false;
    /// Locks are due but wait for extension rounds to finish.
    bool starved_ = false;
    std::vector<item> batch_;
};

class client_impl
{
  public:
    client_impl(const boost::asio::any_io_executor& ex, redlock::config cfg);

    /// The executor the user gave; completions without an executor of their own run here.
    boost::asio::any_io_executor executor;
    /// Every piece of the client's own work runs on this strand.
    boost::asio::any_io_executor strand;
    redlock::config cfg;
    std::vector<std::shared_ptr<connection>> nodes;
    /// The acquires waiting to retry, by key (wake-ups and hand-offs); on the strand.
    std::shared_ptr<waiter_queue> waiters = std::make_shared<waiter_queue>();
    /// One pub/sub connection per node, for wake-ups; they connect only when needed.
    std::vector<std::shared_ptr<subscriber>> subscribers;

    /// Releases scheduled by guard destructors, and requests that releases and clean-ups
    /// left in flight: async_shutdown waits for them.
    std::shared_ptr<background_work> background;
    std::atomic<bool> shut_down{false};
    /// The watchdog while it has locks scheduled (its timer wait owns it); on the strand.
    std::weak_ptr<watchdog> watch;
};

struct mutex_state
{
    std::shared_ptr<client_impl> client;
    /// The Redis keys: one, or several for a multi-resource lock.
    std::vector<std::string> keys;
    /// The keys joined by ", ", for names in accessors; empty for a single key, whose name is
    /// the key itself (see `display_name`).
    std::string name;
    redlock::options opts;
    /// For a reentrant lock, the owner value every acquisition through this mutex uses.
    std::string owner;

    lock_shape shape() const { return {keys, opts.reentrant, opts.fencing}; }
    const std::string& display_name() const { return keys.size() == 1 ? keys.front() : name; }

    void set_report(const report& r) { last.set(r); }
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

  private:
    // The watchdog updates the report while user threads may read it.
    shared_report last;
};

}  // namespace redlock::detail
