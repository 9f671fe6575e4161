// SPDX-License-Identifier: BSL-1.0
// scheduler: the instances of a job scheduler elect a leader; the leader runs the jobs, the
// others watch who leads, and one of them takes over when the leader dies.
//
//   scheduler ID RESOURCE_URL NODE_URL [NODE_URL...]
//
// Every instance campaigns in the election "scheduler" with its ID as its value, and watches
// the leader. The leader runs a job every 100 ms: it reads the number of jobs done from the
// resource (a Redis server of its own, behind a redlock::fenced_store) and writes it plus one,
// fenced by its term. A leader that lost its leadership without knowing it (paused past its
// validity, cut off from the nodes) can then no longer count a job once its successor has.
// One line per event on stdout:
//
//   ID: leading, term T                  ID: job K, term T
//   ID: leader is LEADER, term T         ID: no leader
//   ID: leadership lost (WHY)            ID: jobs stopped (WHY), resigning
//
// The leadership's watchdog keeps it while the leader lives; a leader that crashed is
// succeeded once its lock has expired (2 s), one that stops (SIGINT, SIGTERM) resigns and
// its successor leads at once. Exit status 0 after a signal, 1 when an error ends it, 2 for
// bad arguments.

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <csignal>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using asio::experimental::make_parallel_group;
using asio::experimental::wait_for_one;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

constexpr auto as_tuple = asio::as_tuple(asio::use_awaitable);
constexpr auto job_period = 100ms;
constexpr auto retry_pause = 500ms;
const std::string jobs_key = "scheduler:jobs-done";

struct instance
{
    std::string id;
    redlock::election& election;
    redlock::fenced_store& jobs;
};

void say(const instance& self, const std::string& line)
{
    std::cout << self.id + ": " + line << std::endl;
}

std::string describe(const std::optional<redlock::leader>& l)
{
    return l ? "leader is " + l->value + ", term " + std::to_string(l->term) : "no leader";
}

// Runs a job per period while the fence accepts this leader's term. Ends with the error that
// stopped it: `stale_token` once a newer leader has counted a job, `failed` when the
// resource cannot be reached.
asio::awaitable<error_code> run_jobs(const instance& self, const redlock::guard& leadership)
{
    asio::steady_timer tick(co_await asio::this_coro::executor);
    const std::string term = std::to_string(leadership.fencing_token());
    for (;;) {
        auto [read_error, done] = co_await self.jobs.async_read(jobs_key, leadership, as_tuple);
        if (read_error) {
            co_return read_error;
        }
        const long next = done ? std::stol(*done) + 1 : 1;
        auto [write_error] =
            co_await self.jobs.async_write(jobs_key, std::to_string(next), leadership, as_tuple);
        if (write_error) {
            co_return write_error;
        }
        say(self, "job " + std::to_string(next) + ", term " + term);
        tick.expires_after(job_period);
        co_await tick.async_wait(asio::use_awaitable);
    }
}

// Campaigns, leads until the leadership is lost or the jobs stop, and campaigns again. When
// cancelled, the leadership's guard resigns as it is destroyed.
asio::awaitable<void> lead(const instance& self)
{
    const auto ex = co_await asio::this_coro::executor;
    for (;;) {
        redlock::guard leadership = co_await self.election.campaign(self.id);
        say(self, "leading, term " + std::to_string(leadership.fencing_token()));
        auto [order, lost, jobs_exception, jobs_error] =
            co_await make_parallel_group(
                leadership.async_wait_lost(asio::deferred),
                asio::co_spawn(ex, run_jobs(self, leadership), asio::deferred))
                .async_wait(wait_for_one(), asio::use_awaitable);
        if (jobs_exception) {
            std::rethrow_exception(jobs_exception);
        }
        if (order[0] == 0) {
            say(self, "leadership lost (" + lost.message() + ")");
        } else {
            say(self, "jobs stopped (" + jobs_error.message() + "), resigning");
        }
        co_await leadership.async_release(as_tuple);
    }
}

// Prints who leads, and again at every change. The first read has its own loop: folded into
// the second as `first ? co_await ... : co_await ...`, g++ 12 destroys the awaited results
// twice.
asio::awaitable<void> watch(const instance& self)
{
    asio::steady_timer pause(co_await asio::this_coro::executor);
    std::optional<redlock::leader> seen;
    auto [first_error, first] = co_await self.election.async_leader(as_tuple);
    while (first_error) {
        say(self, "cannot read the leader (" + first_error.message() + ")");
        pause.expires_after(retry_pause);
        co_await pause.async_wait(asio::use_awaitable);
        std::tie(first_error, first) = co_await self.election.async_leader(as_tuple);
    }
    seen = first;
    say(self, describe(seen));
    for (;;) {
        auto [ec, now] = co_await self.election.async_observe(seen, as_tuple);
        if (ec) {
            say(self, "cannot read the leader (" + ec.message() + ")");
            pause.expires_after(retry_pause);
            co_await pause.async_wait(asio::use_awaitable);
            continue;
        }
        seen = now;
        say(self, describe(seen));
    }
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 4) {
        std::cerr << "usage: scheduler ID RESOURCE_URL NODE_URL [NODE_URL...]\n";
        return 2;
    }
    asio::io_context io;
    std::optional<redlock::client> locks;
    std::optional<redlock::fenced_store> jobs;
    try {
        locks.emplace(io.get_executor(),
                      redlock::config::from_urls(std::vector<std::string>(argv + 3, argv + argc)));
        jobs.emplace(io.get_executor(), redlock::config::from_urls({argv[2]}));
    } catch (const boost::system::system_error& e) {
        std::cerr << "scheduler: " << e.what() << "\n";
        return 2;
    }
    redlock::election election = locks->make_election("scheduler", {.expiry = 2s});
    const instance self{argv[1], election, *jobs};

    // Both coroutines run until a signal cancels them, or one fails; then the client shuts
    // down, which waits for the leadership's release (its guard is gone by then).
    int status = 0;
    int running = 2;
    bool stopping = false;
    asio::cancellation_signal stop_lead, stop_watch;
    asio::signal_set signals(io, SIGINT, SIGTERM);
    auto stop_all = [&] {
        stopping = true;
        signals.cancel();
        stop_lead.emit(asio::cancellation_type::terminal);
        stop_watch.emit(asio::cancellation_type::terminal);
    };
    auto ended = [&](std::exception_ptr e) {
        try {
            if (e) {
                std::rethrow_exception(e);
            }
        } catch (const boost::system::system_error& x) {
            if (!(stopping && x.code() == asio::error::operation_aborted)) {
                std::cerr << "scheduler: " << x.what() << "\n";
                status = 1;
            }
        } catch (const std::exception& x) {
            std::cerr << "scheduler: " << x.what() << "\n";
            status = 1;
        }
        if (!stopping) {
            stop_all();
        }
        if (--running == 0) {
            locks->async_shutdown([](error_code) {});
        }
    };
    asio::co_spawn(io, lead(self), asio::bind_cancellation_slot(stop_lead.slot(), ended));
    asio::co_spawn(io, watch(self), asio::bind_cancellation_slot(stop_watch.slot(), ended));
    signals.async_wait([&](error_code ec, int) {
        if (!ec) {
            stop_all();
        }
    });
    io.run();
    return status;
}
