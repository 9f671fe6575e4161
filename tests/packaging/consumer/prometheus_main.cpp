// SPDX-License-Identifier: BSL-1.0
// A program built against redlock::prometheus the way a user builds one
// (tests/packaging/consume.sh, where prometheus-cpp is installed): it locks against a real
// redis-server with the metrics' observer and watch, then reads the registry as a scrape
// does. Exit status 0 when the families hold what the lock did.
//
//   prometheus_consumer redis://127.0.0.1:PORT
#include <redlock/prometheus.hpp>
#include <redlock/redlock.hpp>

#include <prometheus/registry.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <iostream>
#include <stdexcept>
#include <string>

namespace asio = boost::asio;

namespace {

// The value a scrape of `registry` gives the sample of `family` labelled `label`=`value`: a
// histogram's count or a counter's value; -1 if there is none.
double scraped(const prometheus::Registry& registry, const std::string& family,
               const std::string& label, const std::string& value)
{
    for (const prometheus::MetricFamily& f : registry.Collect()) {
        for (const prometheus::ClientMetric& m : f.metric) {
            for (const auto& l : m.label) {
                if (f.name == family && l.name == label && l.value == value) {
                    return f.type == prometheus::MetricType::Histogram
                               ? static_cast<double>(m.histogram.sample_count)
                               : m.counter.value;
                }
            }
        }
    }
    return -1;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::cerr << "usage: prometheus_consumer redis://127.0.0.1:PORT\n";
        return 2;
    }
    prometheus::Registry registry;
    redlock::prometheus_metrics metrics(registry);
    asio::io_context io;
    auto config = redlock::config::from_urls({argv[1]});
    config.observer = metrics.observer();
    redlock::client c(io.get_executor(), config);
    metrics.watch(c);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            redlock::guard g = co_await c.make_mutex("prometheus-consumer").acquire();
            co_await g.release();
            co_await c.async_shutdown();
        },
        asio::detached);
    io.run();
    const double acquired = scraped(registry, "redlock_acquire_seconds", "outcome", "acquired");
    const double held = scraped(registry, "redlock_held_seconds", "type", "mutex");
    const double replies = scraped(registry, "redlock_node_requests_total", "outcome", "reply");
    std::cout << "acquired " << acquired << ", held " << held << ", node replies " << replies
              << "\n";
    return acquired == 1 && held == 1 && replies >= 2 ? 0 : 1;
}
