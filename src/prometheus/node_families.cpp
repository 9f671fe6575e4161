// SPDX-License-Identifier: BSL-1.0
#include "prometheus/node_families.hpp"

#include <redlock/client.hpp>

#include "prometheus/event_labels.hpp"

#include <prometheus/detail/builder.h>

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace prometheus::detail {

// A prometheus-cpp Registry makes its families itself and runs no code of its user's at a
// scrape, so counters that live elsewhere (the client's atomics) could only be copied into it
// on a schedule, and be stale at a scrape. Its friend Builder<T> (a friend whatever T is)
// adds a family that collects them itself, with the registry's own lock and checks.
template <>
class Builder<redlock::detail::node_family>
{
  public:
    static redlock::detail::node_family& add(Registry& registry,
                                             std::unique_ptr<redlock::detail::node_family> family)
    {
        const std::string& name = family->GetName();
        std::lock_guard<std::mutex> lock(registry.mutex_);
        const auto named = [&name](const auto& f) { return f->GetName() == name; };
        if (std::any_of(registry.gauges_.begin(), registry.gauges_.end(), named) ||
            std::any_of(registry.histograms_.begin(), registry.histograms_.end(), named) ||
            std::any_of(registry.summaries_.begin(), registry.summaries_.end(), named)) {
            throw std::invalid_argument("the registry has a family " + name + " of another type");
        }
        const auto same = std::find_if(registry.counters_.begin(), registry.counters_.end(), named);
        if (same != registry.counters_.end()) {
            auto* ours = dynamic_cast<redlock::detail::node_family*>(same->get());
            if (!ours) {
                throw std::invalid_argument("the registry has a counter family " + name +
                                            " of its own");
            }
            return *ours;
        }
        registry.counters_.push_back(std::move(family));
        return static_cast<redlock::detail::node_family&>(*registry.counters_.back());
    }
};

}  // namespace prometheus::detail

namespace redlock::detail {

namespace {

prometheus::ClientMetric sample(const node_counters& n, std::string_view outcome,
                                std::uint64_t value)
{
    prometheus::ClientMetric m;
    m.label.push_back({"node", n.endpoint});
    if (!outcome.empty()) {
        m.label.push_back({"outcome", std::string(outcome)});
    }
    m.counter.value = static_cast<double>(value);
    return m;
}

std::vector<prometheus::ClientMetric> request_samples(const std::vector<node_counters>& nodes)
{
    std::vector<prometheus::ClientMetric> all;
    all.reserve(4 * nodes.size());
    for (const node_counters& n : nodes) {
        all.push_back(sample(n, "reply", n.replies));
        all.push_back(sample(n, "error", n.errors));
        all.push_back(sample(n, "timeout", n.timeouts));
        all.push_back(sample(n, "abandoned", n.abandoned));
    }
    return all;
}

std::vector<prometheus::ClientMetric> reconnect_samples(const std::vector<node_counters>& nodes)
{
    std::vector<prometheus::ClientMetric> all;
    all.reserve(nodes.size());
    for (const node_counters& n : nodes) {
        all.push_back(sample(n, {}, n.reconnects));
    }
    return all;
}

}  // namespace

void watched_clients::add(const std::shared_ptr<client_impl>& c)
{
    std::lock_guard lock(mutex_);
    const bool known = std::any_of(clients_.begin(), clients_.end(),
                                   [&c](const auto& w) { return w.lock() == c; });
    if (!known) {
        clients_.push_back(c);
    }
}

std::vector<node_counters> watched_clients::read() const
{
    std::vector<node_counters> all;
    std::lock_guard lock(mutex_);
    std::erase_if(clients_, [](const auto& w) { return w.expired(); });
    for (const auto& w : clients_) {
        if (const auto c = w.lock()) {
            const auto nodes = node_counters_of(*c);
            all.insert(all.end(), nodes.begin(), nodes.end());
        }
    }
    return sum_by_endpoint(all);
}

node_family::node_family(const std::string& name, const std::string& help,
                         std::shared_ptr<watched_clients> watched, sampler samples)
    : Family(name, help, {}), help_(help), watched_(std::move(watched)), samples_(samples)
{
}

std::vector<prometheus::MetricFamily> node_family::Collect() const
{
    // As the registry's own families: one without samples is left out of the scrape.
    auto samples = samples_(watched_->read());
    if (samples.empty()) {
        return {};
    }
    prometheus::MetricFamily family;
    family.name = GetName();
    family.help = help_;
    family.type = prometheus::MetricType::Counter;
    family.metric = std::move(samples);
    return {std::move(family)};
}

std::shared_ptr<watched_clients> add_node_families(prometheus::Registry& registry,
                                                   std::shared_ptr<watched_clients> watched)
{
    using adder = prometheus::detail::Builder<node_family>;
    node_family& requests = adder::add(
        registry, std::make_unique<node_family>(
                      "redlock_node_requests_total",
                      "Requests to each Redis node of the watched redlock clients, by outcome.",
                      watched, request_samples));
    // Taken from the registry: a family of another prometheus_metrics brings its clients.
    watched = requests.watched();
    adder::add(registry,
               std::make_unique<node_family>(
                   "redlock_node_reconnects_total",
                   "Reconnects to each Redis node of the watched redlock clients after the first "
                   "connect.",
                   watched, reconnect_samples));
    return watched;
}

}  // namespace redlock::detail
