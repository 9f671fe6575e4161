#pragma once

// The shared state behind client, mutex and guard.

#include <redlock/config.hpp>
#include <redlock/options.hpp>
#include <redlock/report.hpp>

#include "detail/connection.hpp"
#include "detail/scripts.hpp"
#include "detail/subscriber.hpp"
#include "detail/validity.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace redlock::detail {

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
    /// One pub/sub connection per node, for wake-ups; they connect only when needed.
    std::vector<std::shared_ptr<subscriber>> subscribers;

    /// Releases scheduled by guard destructors and not finished yet.
    std::atomic<std::size_t> background_releases{0};
    /// Cancelled (on the strand) whenever background_releases drops to zero.
    boost::asio::steady_timer releases_drained;
    std::atomic<bool> shut_down{false};
};

struct mutex_state
{
    std::shared_ptr<client_impl> client;
    /// The Redis keys: one, or several for a multi-resource lock.
    std::vector<std::string> keys;
    /// The keys joined by ", ", for names in accessors.
    std::string name;
    redlock::options opts;
    /// For a reentrant lock, the owner value every acquisition through this mutex uses.
    std::string owner;

    lock_shape shape() const { return {keys, opts.reentrant, opts.fencing}; }

    std::mutex report_mutex;
    report last;  // guarded by report_mutex
};

struct lock_state
{
    explicit lock_state(const boost::asio::any_io_executor& strand)
        : wake_watch(strand, clock::time_point::max()), lost_event(strand, clock::time_point::max())
    {
    }

    std::shared_ptr<mutex_state> mutex;
    std::string value;
    /// Written on the strand (acquire, extend, the watchdog); read by user threads too.
    std::atomic<clock::time_point> until{};
    std::atomic<bool> owns{false};
    /// With options::fencing: this acquisition's token (set once, before the guard exists).
    std::uint64_t fencing_token = 0;

    void set_report(report r)
    {
        std::lock_guard lock(report_mutex);
        last = std::move(r);
    }
    report get_report() const
    {
        std::lock_guard lock(report_mutex);
        return last;
    }

    // Watching for loss (and, with auto_extend, extending): members below are used on the
    // strand only, but for the flags that user threads read.
    std::atomic<bool> watched{false};
    std::atomic<bool> lost{false};
    /// When the last successful acquire or extend started: the watchdog's period counts
    /// from here.
    clock::time_point extended_at{};
    int extensions = 0;
    /// Cancelled to make the watch re-read `until` or notice a release.
    boost::asio::steady_timer wake_watch;
    /// Cancelled when the lock is lost or released: wakes `async_wait_lost`.
    boost::asio::steady_timer lost_event;
    /// Emitted (terminal) once, when the lock is lost.
    boost::asio::cancellation_signal lost_signal;

  private:
    // The watchdog updates the report while user threads may read it.
    mutable std::mutex report_mutex;
    report last;
};

}  // namespace redlock::detail
