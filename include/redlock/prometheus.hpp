// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// Prometheus metrics of a service's locks: the optional library `redlock::prometheus`, built
/// over prometheus-cpp when it is installed (`find_package(redlock CONFIG COMPONENTS
/// prometheus)`). The core library does not depend on it.

#include <redlock/lock_event.hpp>

#include <prometheus/registry.h>

#include <memory>

namespace redlock {

class client;

/// Lock events and node counters as Prometheus metric families of a prometheus-cpp
/// `Registry`:
///
/// - `redlock_acquire_seconds` (histogram; labels `type`, `outcome` = `acquired`, `taken`,
///   `failed`, `aborted` or `other`): each acquire's time to its grant or failure;
/// - `redlock_held_seconds` (histogram; `type`): each hold's time, observed at its release or
///   loss;
/// - `redlock_lost_total` (counter; `type`): holds that ended lost;
/// - `redlock_extend_total` (counter; `outcome` = `ok` or `failed`): extensions, the
///   watchdog's too;
/// - `redlock_node_requests_total` (counter; `node` = the endpoint, `outcome` = `reply`,
///   `error`, `timeout` or `abandoned`) and `redlock_node_reconnects_total` (counter; `node`):
///   the watched clients' node counters, read at every scrape.
///
/// `type` is `lock_event::type`. No label carries a lock's name, so that the number of series
/// stays bounded however many locks a service makes.
class prometheus_metrics
{
  public:
    /// Adds the families to `registry`, or takes those it has already (another
    /// `prometheus_metrics` of the same registry shares them). `registry` must outlive this
    /// object, its observers and its watch. Throws `std::invalid_argument` when `registry`
    /// has a family of one of these names and another type.
    explicit prometheus_metrics(prometheus::Registry& registry);
    ~prometheus_metrics();
    prometheus_metrics(const prometheus_metrics&) = delete;
    prometheus_metrics& operator=(const prometheus_metrics&) = delete;

    /// An observer for `config::observer` that records every event in the families. It
    /// may outlive this object (it shares the families with it), and serve any number of
    /// clients at once: it is thread-safe.
    lock_observer observer() const;

    /// Exports `c`'s node counters (`client::node_counters`) in the node families, read at
    /// every scrape of the registry, until `c` is destroyed. Two clients' counters of the
    /// same node are added up. Watching a client twice counts it once. Thread-safe.
    void watch(const client& c);

  private:
    struct state;
    std::shared_ptr<state> state_;
};

}  // namespace redlock
