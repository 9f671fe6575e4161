// SPDX-License-Identifier: BSL-1.0
#pragma once

// Reports as mutexes and guards keep them: compact, and readable from users' threads.

#include <redlock/report.hpp>

#include <boost/container/small_vector.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace redlock::detail {

class client_impl;

/// A report as guards and mutexes keep it: per node only what varies. The endpoints are the
/// client's nodes' names (outcomes are in node order), filled in when the report is read; a
/// detail or a fencing token is kept only for the nodes that have one. An abandoned node has
/// only its code (`run_round`); its detail, filled in when the report is read, is the code's
/// message. A held guard keeps its last report, so this is most of what a guard costs in
/// memory.
class stored_report
{
  public:
    stored_report() = default;
    explicit stored_report(const report& r);
    /// The report, with `c`'s node names as endpoints.
    report expand(const client_impl& c) const;

  private:
    struct compact_outcome
    {
        std::uint32_t latency_us = 0;
        node_status status = node_status::abandoned;
        /// The outcome's `node_errc`, 0 for none.
        std::uint8_t code = 0;
    };
    struct rare
    {
        std::vector<std::pair<std::uint32_t, std::string>> details;
        std::vector<std::pair<std::uint32_t, std::uint64_t>> tokens;
    };
    boost::container::small_vector<compact_outcome, 5> outcomes_;
    // Shared by copies (a report kept by both a guard and its mutex), never changed once built.
    std::shared_ptr<const rare> rare_;
    int attempts_ = 0;
};

/// A stored report that the client's strand writes while user threads may read it.
class shared_report
{
  public:
    void set(const report& r) { set(stored_report(r)); }
    void set(stored_report compact)
    {
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

}  // namespace redlock::detail
