// SPDX-License-Identifier: BSL-1.0
#include <redlock/client.hpp>
#include <redlock/prometheus.hpp>

#include "prometheus/event_labels.hpp"
#include "prometheus/node_families.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>

#include <array>
#include <atomic>
#include <chrono>

namespace redlock {

namespace {

using prometheus::Counter;
using prometheus::Histogram;

// From half a millisecond (an uncontended acquire on a nearby node) to a minute of waiting.
const Histogram::BucketBoundaries acquire_buckets{
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
// From a millisecond to an hour held.
const Histogram::BucketBoundaries held_buckets{0.001, 0.01, 0.1, 0.5, 1,   5,
                                               10,    30,   60,  300, 900, 3600};

double seconds(std::chrono::nanoseconds d)
{
    return std::chrono::duration<double>(d).count();
}

// A metric of a family, found once per label set: Family::Add looks the labels up in a map
// under a lock, which a lock event need not pay each time. `slot` is null for a type the
// library does not name (its metric is looked up each time).
template <class T, class Make>
T& cached(std::atomic<T*>* slot, Make make)
{
    if (slot) {
        if (T* known = slot->load(std::memory_order_acquire)) {
            return *known;
        }
    }
    T& metric = make();
    if (slot) {
        slot->store(&metric, std::memory_order_release);
    }
    return metric;
}

}  // namespace

struct prometheus_metrics::state
{
    static constexpr std::size_t types = detail::lock_types.size();
    static constexpr std::size_t outcomes = detail::acquire_outcomes.size();

    explicit state(prometheus::Registry& registry);
    void record(const lock_event& e);
    Histogram& acquire_time(const lock_event& e);
    Histogram& held_time(const lock_event& e);
    Counter& losses(const lock_event& e);

    prometheus::Family<Histogram>& acquire;
    prometheus::Family<Histogram>& held;
    prometheus::Family<Counter>& lost;
    prometheus::Family<Counter>& extend;
    Counter& extend_ok;
    Counter& extend_failed;
    std::shared_ptr<detail::watched_clients> watched;
    std::array<std::atomic<Histogram*>, types * outcomes> acquire_cache{};
    std::array<std::atomic<Histogram*>, types> held_cache{};
    std::array<std::atomic<Counter*>, types> lost_cache{};
};

prometheus_metrics::state::state(prometheus::Registry& registry)
    : acquire(prometheus::BuildHistogram()
                  .Name("redlock_acquire_seconds")
                  .Help("Time from the start of each redlock acquire to its grant or failure.")
                  .Register(registry)),
      held(prometheus::BuildHistogram()
               .Name("redlock_held_seconds")
               .Help("Time each redlock lock was held, until its release or loss.")
               .Register(registry)),
      lost(prometheus::BuildCounter()
               .Name("redlock_lost_total")
               .Help("redlock locks found lost while held.")
               .Register(registry)),
      extend(prometheus::BuildCounter()
                 .Name("redlock_extend_total")
                 .Help("Extensions of held redlock locks (the watchdog's too), by outcome.")
                 .Register(registry)),
      extend_ok(extend.Add({{"outcome", "ok"}})),
      extend_failed(extend.Add({{"outcome", "failed"}})),
      watched(detail::add_node_families(registry, std::make_shared<detail::watched_clients>()))
{
}

Histogram& prometheus_metrics::state::acquire_time(const lock_event& e)
{
    const std::size_t type = detail::type_index(e.type);
    const std::size_t outcome = detail::acquire_outcome(e);
    return cached(
        type < types ? &acquire_cache[type * outcomes + outcome] : nullptr, [&]() -> Histogram& {
            return acquire.Add({{"type", std::string(e.type)},
                                {"outcome", std::string(detail::acquire_outcomes[outcome])}},
                               acquire_buckets);
        });
}

Histogram& prometheus_metrics::state::held_time(const lock_event& e)
{
    const std::size_t type = detail::type_index(e.type);
    return cached(type < types ? &held_cache[type] : nullptr, [&]() -> Histogram& {
        return held.Add({{"type", std::string(e.type)}}, held_buckets);
    });
}

Counter& prometheus_metrics::state::losses(const lock_event& e)
{
    const std::size_t type = detail::type_index(e.type);
    return cached(type < types ? &lost_cache[type] : nullptr, [&]() -> Counter& {
        return lost.Add({{"type", std::string(e.type)}});
    });
}

void prometheus_metrics::state::record(const lock_event& e)
{
    switch (e.kind) {
        case lock_event_kind::acquired:
        case lock_event_kind::acquire_failed:
            acquire_time(e).Observe(seconds(e.elapsed));
            return;
        case lock_event_kind::released:
            held_time(e).Observe(seconds(e.elapsed));
            return;
        case lock_event_kind::lost:
            held_time(e).Observe(seconds(e.elapsed));
            losses(e).Increment();
            return;
        case lock_event_kind::extended:
            extend_ok.Increment();
            return;
        case lock_event_kind::extend_failed:
            extend_failed.Increment();
            return;
    }
}

prometheus_metrics::prometheus_metrics(prometheus::Registry& registry)
    : state_(std::make_shared<state>(registry))
{
}

prometheus_metrics::~prometheus_metrics() = default;

lock_observer prometheus_metrics::observer() const
{
    return [s = state_](const lock_event& e) { s->record(e); };
}

void prometheus_metrics::watch(const client& c)
{
    state_->watched->add(detail::access::impl_of(c));
}

}  // namespace redlock
