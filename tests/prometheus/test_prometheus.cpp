// SPDX-License-Identifier: BSL-1.0
// redlock::prometheus: the labels it derives from events and counters, and the families that
// locks on real servers fill, read back through the registry's Collect as a scrape reads them.

#include <redlock/prometheus.hpp>

#include "fixture.hpp"
#include "prometheus/event_labels.hpp"

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace redlock::test {
namespace {

using boost::system::error_code;
using labels = std::map<std::string, std::string>;

BOOST_AUTO_TEST_SUITE(prometheus_labels)

BOOST_AUTO_TEST_CASE(an_acquire_s_outcome_is_named_by_its_error_code)
{
    const auto outcome = [](lock_event_kind kind, error_code ec) {
        return detail::acquire_outcomes.at(
            detail::acquire_outcome({.kind = kind, .type = "mutex", .name = "n", .error = ec}));
    };
    BOOST_TEST(outcome(lock_event_kind::acquired, {}) == "acquired");
    BOOST_TEST(outcome(lock_event_kind::acquire_failed, error::taken) == "taken");
    BOOST_TEST(outcome(lock_event_kind::acquire_failed, error::failed) == "failed");
    BOOST_TEST(outcome(lock_event_kind::acquire_failed, boost::asio::error::operation_aborted) ==
               "aborted");
    BOOST_TEST(outcome(lock_event_kind::acquire_failed, error::misconfigured) == "other");
    BOOST_TEST(outcome(lock_event_kind::acquire_failed, error::shut_down) == "other");
}

BOOST_AUTO_TEST_CASE(the_library_s_lock_types_have_a_place_and_others_none)
{
    for (std::string_view type : {"mutex", "fair", "read", "write", "semaphore", "election"}) {
        BOOST_TEST(detail::lock_types.at(detail::type_index(type)) == type);
    }
    BOOST_TEST(detail::type_index("barrier") == detail::lock_types.size());
}

BOOST_AUTO_TEST_CASE(counters_of_one_node_from_two_clients_add_up)
{
    std::vector<node_counters> all(3);
    all[0] = {.endpoint = "a:1", .requests = 3, .replies = 2, .timeouts = 1, .reconnects = 1};
    all[1] = {.endpoint = "b:1", .requests = 1, .errors = 1};
    all[2] = {.endpoint = "a:1", .requests = 5, .replies = 4, .abandoned = 1, .reconnects = 2};
    const auto sums = detail::sum_by_endpoint(all);
    BOOST_TEST_REQUIRE(sums.size() == 2u);
    BOOST_TEST(sums[0].endpoint == "a:1");
    BOOST_TEST(sums[0].requests == 8u);
    BOOST_TEST(sums[0].replies == 6u);
    BOOST_TEST(sums[0].timeouts == 1u);
    BOOST_TEST(sums[0].abandoned == 1u);
    BOOST_TEST(sums[0].reconnects == 3u);
    BOOST_TEST(sums[1].endpoint == "b:1");
    BOOST_TEST(sums[1].errors == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

// A scrape's families, by name.
std::map<std::string, prometheus::MetricFamily> scrape(const prometheus::Registry& r)
{
    std::map<std::string, prometheus::MetricFamily> all;
    for (prometheus::MetricFamily& f : r.Collect()) {
        all[f.name] = std::move(f);
    }
    return all;
}

labels labels_of(const prometheus::ClientMetric& m)
{
    labels all;
    for (const auto& l : m.label) {
        all[l.name] = l.value;
    }
    return all;
}

// The sample of `family` with exactly `wanted` as its labels; fails the test if none.
const prometheus::ClientMetric& sample(const prometheus::MetricFamily& family, const labels& wanted)
{
    const auto at = std::find_if(family.metric.begin(), family.metric.end(),
                                 [&](const auto& m) { return labels_of(m) == wanted; });
    BOOST_TEST_REQUIRE((at != family.metric.end()), family.name << " has no such sample");
    return *at;
}

struct metered_nodes
{
    redis_cluster nodes{3};
    asio::io_context io;
    prometheus::Registry registry;
    prometheus_metrics metrics{registry};
    redlock::client c{io.get_executor(), with_observer()};
    redlock::client other{io.get_executor(), config::from_urls(nodes.urls())};

    redlock::config with_observer() const
    {
        auto cfg = config::from_urls(nodes.urls());
        cfg.observer = metrics.observer();
        return cfg;
    }
};

BOOST_AUTO_TEST_SUITE(prometheus_metrics_families)

BOOST_FIXTURE_TEST_CASE(locks_fill_the_families_by_type_and_outcome, metered_nodes)
{
    // Locks are made outside co_await expressions: g++ 12 may destroy a temporary there twice.
    auto plain = c.make_mutex("plain");
    auto busy = c.make_mutex("busy");
    auto theirs = other.make_mutex("busy");
    auto pool = c.make_semaphore("pool", 2);
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await plain.acquire();
        co_await g.extend();
        co_await g.release();
        redlock::guard held = co_await theirs.acquire();
        auto [ec, none] = co_await try_get(busy, true);
        BOOST_TEST(ec == redlock::error::taken);
        redlock::guard permit = co_await pool.acquire();
        co_await permit.release();
        co_return 0;
    }());
    auto families = scrape(registry);

    const auto& acquire = families.at("redlock_acquire_seconds");
    BOOST_TEST((acquire.type == prometheus::MetricType::Histogram));
    BOOST_TEST(acquire.metric.size() == 3u);
    const auto& granted = sample(acquire, {{"type", "mutex"}, {"outcome", "acquired"}});
    BOOST_TEST(granted.histogram.sample_count == 1u);
    BOOST_TEST((granted.histogram.sample_sum > 0 && granted.histogram.sample_sum < 5));
    BOOST_TEST(sample(acquire, {{"type", "mutex"}, {"outcome", "taken"}}).histogram.sample_count ==
               1u);
    BOOST_TEST(
        sample(acquire, {{"type", "semaphore"}, {"outcome", "acquired"}}).histogram.sample_count ==
        1u);

    const auto& held_time = families.at("redlock_held_seconds");
    BOOST_TEST((held_time.type == prometheus::MetricType::Histogram));
    BOOST_TEST(sample(held_time, {{"type", "mutex"}}).histogram.sample_count == 1u);
    BOOST_TEST(sample(held_time, {{"type", "semaphore"}}).histogram.sample_count == 1u);

    const auto& extend = families.at("redlock_extend_total");
    BOOST_TEST((extend.type == prometheus::MetricType::Counter));
    BOOST_TEST(sample(extend, {{"outcome", "ok"}}).counter.value == 1.0);
    BOOST_TEST(sample(extend, {{"outcome", "failed"}}).counter.value == 0.0);
    // A family without samples is left out of a scrape, as prometheus-cpp's own are.
    BOOST_TEST(families.count("redlock_lost_total") == 0u);

    // No label carries a lock's name.
    for (const auto& [name, family] : families) {
        for (const auto& m : family.metric) {
            for (const auto& [label, value] : labels_of(m)) {
                BOOST_TEST((value != "plain" && value != "busy" && value != "pool"), name);
            }
        }
    }
}

BOOST_FIXTURE_TEST_CASE(a_lost_lock_counts_once_and_its_hold_is_measured, metered_nodes)
{
    auto m = c.make_mutex("vanishing", {.expiry = 300ms, .auto_extend = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            redis_command(nodes[i].port(), {"DEL", "vanishing"});
        }
        auto [ec] = co_await g.async_wait_lost(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::lost);
        co_await g.async_release(asio::as_tuple(asio::use_awaitable));  // after the loss: no hold
        co_return 0;
    }());
    auto families = scrape(registry);
    BOOST_TEST(sample(families.at("redlock_lost_total"), {{"type", "mutex"}}).counter.value == 1.0);
    BOOST_TEST(
        sample(families.at("redlock_held_seconds"), {{"type", "mutex"}}).histogram.sample_count ==
        1u);
    BOOST_TEST(sample(families.at("redlock_extend_total"), {{"outcome", "failed"}}).counter.value >=
               1.0);
}

// The node families read the client's counters at each scrape, with nothing in between.
BOOST_FIXTURE_TEST_CASE(watched_clients_counters_are_read_at_every_scrape, metered_nodes)
{
    BOOST_TEST(scrape(registry).count("redlock_node_requests_total") == 0u);  // none watched
    metrics.watch(c);
    metrics.watch(c);  // counted once
    auto families = scrape(registry);
    BOOST_TEST(
        (families.at("redlock_node_requests_total").type == prometheus::MetricType::Counter));
    BOOST_TEST(families.at("redlock_node_requests_total").metric.size() == 3u * 4u);
    auto counted = c.make_mutex("counted");
    run(io, [&]() -> asio::awaitable<int> {
        co_await (co_await counted.acquire()).release();
        co_return 0;
    }());
    families = scrape(registry);
    const auto& requests = families.at("redlock_node_requests_total");
    const auto& reconnects = families.at("redlock_node_reconnects_total");
    BOOST_TEST((reconnects.type == prometheus::MetricType::Counter));
    // The acquire and the release each needed the replies of a quorum (2 of 3).
    std::uint64_t replies = 0;
    for (const node_counters& n : c.node_counters()) {
        replies += n.replies;
    }
    BOOST_TEST(replies >= 4u);
    for (const node_counters& n : c.node_counters()) {
        BOOST_TEST_CONTEXT(n.endpoint)
        {
            const auto value = [&](const char* outcome) {
                return sample(requests, {{"node", n.endpoint}, {"outcome", outcome}}).counter.value;
            };
            BOOST_TEST(value("reply") == static_cast<double>(n.replies));
            BOOST_TEST(value("error") == static_cast<double>(n.errors));
            BOOST_TEST(value("timeout") == static_cast<double>(n.timeouts));
            BOOST_TEST(value("abandoned") == static_cast<double>(n.abandoned));
            BOOST_TEST(sample(reconnects, {{"node", n.endpoint}}).counter.value == 0.0);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_destroyed_client_leaves_the_export_and_metrics_share_a_registry)
{
    redis_cluster nodes{1};
    asio::io_context io;
    prometheus::Registry registry;
    prometheus_metrics first(registry);
    prometheus_metrics second(registry);
    {
        redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
        first.watch(c);
        second.watch(c);  // the same watch: counted once
        auto m = c.make_mutex("shared");
        run(io, [&]() -> asio::awaitable<int> {
            co_await (co_await m.acquire()).release();
            co_return 0;
        }());
        const auto families = scrape(registry);
        const auto& requests = families.at("redlock_node_requests_total");
        BOOST_TEST(requests.metric.size() == 4u);
        BOOST_TEST(
            sample(requests, {{"node", c.node_counters().at(0).endpoint}, {"outcome", "reply"}})
                .counter.value == static_cast<double>(c.node_counters().at(0).replies));
    }
    io.run();
    BOOST_TEST(scrape(registry).count("redlock_node_requests_total") == 0u);
}

BOOST_AUTO_TEST_CASE(a_family_name_of_another_type_is_refused)
{
    prometheus::Registry registry;
    prometheus::BuildGauge()
        .Name("redlock_node_requests_total")
        .Help("not ours")
        .Register(registry);
    BOOST_CHECK_THROW(prometheus_metrics{registry}, std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
