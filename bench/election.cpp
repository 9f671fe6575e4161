// SPDX-License-Identifier: BSL-1.0
// The election scenario: how long leadership stays vacant when its leader resigns (the
// successor waits in the queue and is named by the resignation) and when its leader crashes
// (its process stops; the successor gets in once the lock expired and its entry is the head).

#include "scenarios.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <optional>
#include <stdexcept>
#include <string>

namespace bench {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

// Runs `io` until `done` or 30 s; a measurement that never ends is a failure, not a hang.
void run_until(asio::io_context& io, const bool& done)
{
    const auto limit = clock::now() + std::chrono::seconds(30);
    io.restart();
    while (!done && clock::now() < limit) {
        io.run_one_until(limit);
    }
    if (!done) {
        throw std::runtime_error("election: a campaign did not complete within 30 s");
    }
}

// Campaigns on `e` in the background: `g` gets the leadership and `at` the instant.
void campaign(redlock::election e, std::string value, std::optional<redlock::guard>& g,
              clock::time_point& at, bool& done)
{
    e.async_campaign(std::move(value), [&](boost::system::error_code ec, redlock::guard got) {
        if (ec) {
            note_failure("election: a campaign failed: " + ec.message());
        }
        at = clock::now();
        g = std::move(got);
        done = true;
    });
}

// Lets the successor's join reach the nodes before the leader goes: a bench may wait a
// fixed time, where a test would wait for the event.
void settle(asio::io_context& io, milliseconds d)
{
    asio::steady_timer t(io, d);
    bool done = false;
    t.async_wait([&](boost::system::error_code) { done = true; });
    run_until(io, done);
}

// From the leader's resignation to the successor's grant.
clock::duration hand_over(const run_settings& rs, const std::string& name, milliseconds expiry)
{
    asio::io_context io;
    const auto cfg = redlock::config::from_urls(rs.urls);
    redlock::client a(io.get_executor(), cfg);
    redlock::client b(io.get_executor(), cfg);
    std::optional<redlock::guard> first, second;
    clock::time_point granted{}, next_granted{};
    bool led = false, next_led = false;
    campaign(a.make_election(name, {.expiry = expiry}), "first", first, granted, led);
    run_until(io, led);
    campaign(b.make_election(name, {.expiry = expiry}), "second", second, next_granted, next_led);
    settle(io, milliseconds(100));
    const auto resigned = clock::now();
    first.reset();  // resigns: the destructor releases
    run_until(io, next_led);
    second.reset();
    settle(io, milliseconds(50));
    return next_granted - resigned;
}

// From the instant the leader's process stops to the successor's grant.
clock::duration after_crash(const run_settings& rs, const std::string& name, milliseconds expiry)
{
    asio::io_context io;
    asio::io_context frozen;  // the leader's process, never run again once it leads
    const auto cfg = redlock::config::from_urls(rs.urls);
    redlock::client dead(frozen.get_executor(), cfg);
    redlock::client b(io.get_executor(), cfg);
    std::optional<redlock::guard> first, second;
    clock::time_point granted{}, next_granted{};
    bool led = false, next_led = false;
    campaign(dead.make_election(name, {.expiry = expiry}), "crashed", first, granted, led);
    run_until(frozen, led);
    const auto crashed = clock::now();
    campaign(b.make_election(name, {.expiry = expiry}), "successor", second, next_granted,
             next_led);
    run_until(io, next_led);
    second.reset();
    settle(io, milliseconds(50));
    return next_granted - crashed;
}

}  // namespace

void run_election(const run_settings& rs, int rounds, milliseconds expiry)
{
    samples resign, crash;
    for (int i = 0; i < rounds; ++i) {
        resign.add(hand_over(rs, rs.key_prefix + ":elect:r" + std::to_string(i), expiry));
        crash.add(after_crash(rs, rs.key_prefix + ":elect:c" + std::to_string(i), expiry));
    }
    const double resign_ms = resign.percentile_us(50) / 1000;
    const double crash_ms = crash.percentile_us(50) / 1000;
    const double expiry_ms = static_cast<double>(expiry.count());
    say(
        strf("election, expiry %lld ms, median of %d: resignation to the next leader %.2f ms; "
             "crash to the next leader %.0f ms = %.2f of the expiry",
             static_cast<long long>(expiry.count()), rounds, resign_ms, crash_ms,
             ratio(crash_ms, expiry_ms)));
    result(json()
               .add("scenario", "election")
               .add("nodes", rs.urls.size())
               .add("expiry_ms", expiry.count())
               .add("rounds", rounds)
               .add("resign_to_next_ms_p50", resign_ms)
               .add("crash_to_next_ms_p50", crash_ms)
               .add("crash_vs_expiry", ratio(crash_ms, expiry_ms)));
}

}  // namespace bench
