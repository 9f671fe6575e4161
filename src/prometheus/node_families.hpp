// SPDX-License-Identifier: BSL-1.0
#pragma once

// The families of the watched clients' node counters, which read the counters when the
// registry is scraped rather than copying them on a schedule: a scrape sees each node's
// counters as they are at that moment.

#include <redlock/observability.hpp>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace redlock::detail {

class client_impl;

/// The clients whose node counters are exported; a client drops out once it is destroyed.
/// Thread-safe: clients are added from any thread, and the registry is scraped from another.
class watched_clients
{
  public:
    /// Adds `c` unless it is watched already.
    void add(const std::shared_ptr<client_impl>& c);
    /// The counters of the clients still alive, added up by node endpoint.
    std::vector<node_counters> read() const;

  private:
    mutable std::mutex mutex_;
    mutable std::vector<std::weak_ptr<client_impl>> clients_;
};

/// A counter family whose samples are made from the watched clients' counters at each
/// scrape (`Collect`), by `samples`.
class node_family final : public prometheus::Family<prometheus::Counter>
{
  public:
    using sampler = std::vector<prometheus::ClientMetric> (*)(const std::vector<node_counters>&);

    node_family(const std::string& name, const std::string& help,
                std::shared_ptr<watched_clients> watched, sampler samples);

    std::vector<prometheus::MetricFamily> Collect() const override;
    const std::shared_ptr<watched_clients>& watched() const noexcept { return watched_; }

  private:
    std::string help_;
    std::shared_ptr<watched_clients> watched_;
    sampler samples_;
};

/// The two node families in `registry`: added with `watched`, or those it has already (of
/// another prometheus_metrics), whose own watched clients are then shared. Throws
/// std::invalid_argument when the registry has families of these names that are not
/// node families.
std::shared_ptr<watched_clients> add_node_families(prometheus::Registry& registry,
                                                   std::shared_ptr<watched_clients> watched);

}  // namespace redlock::detail
