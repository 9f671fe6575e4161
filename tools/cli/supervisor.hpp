// SPDX-License-Identifier: BSL-1.0
#pragma once

// What `redlock run` and `redlock elect` share: a session of one command line (its signals,
// its client, its exit status), the wait for a lock beside a watch for an outage of the nodes,
// and a command run while a lock is held, stopped when the lock is lost.

#include "run.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace redlock_cli {

/// EX_UNAVAILABLE of sysexits.h: the nodes, not another owner, kept the lock from us.
inline constexpr int nodes_unavailable = 69;
/// The lock was lost while the command ran (or while a leader led without one).
inline constexpr int lost_exit = 3;

/// "'text'": a name or a command in messages.
std::string quoted(std::string_view s);
/// Prints "redlock: LINE" on standard error.
void say(const std::string& line);
/// "2 ok, 1 error": how many nodes ended in each status.
std::string counts(const redlock::report& r);
/// The report, one indented line per node, on standard error.
void print_report(const redlock::report& r);
/// Milliseconds from `from` to `to`.
long long ms_between(std::chrono::steady_clock::time_point from,
                     std::chrono::steady_clock::time_point to);

/// Everything the asynchronous handlers of one command line share with its main coroutine;
/// they hold it by shared_ptr, so none of them can outlive it.
struct session : std::enable_shared_from_this<session>
{
    /// `what` names what is held in messages: "lock 'KEY'", "leadership of 'NAME'".
    session(boost::asio::any_io_executor ex, const run_args& args, std::string what);

    const run_args& a;
    const std::string what;
    /// The signals that were not ignored at start: passed on to the command while it runs,
    /// and an interruption before it runs.
    boost::asio::signal_set stop_signals;
    boost::asio::signal_set child_exit;
    boost::asio::steady_timer kill_timer;
    boost::asio::cancellation_signal stop_watching;

    pid_t pid = -1;
    bool shutting_down = false;
    bool exited = false;
    bool lost = false;
    redlock::guard* held = nullptr;

    std::string command() const;
    /// The command, or with --process-group its whole process group.
    pid_t target() const;
    void send(int signo);
    /// Passes each signal redlock receives on to the command, until it has exited.
    void forward_signals();
    /// Stops the command when the lock is lost: --signal, then SIGKILL after --kill-after.
    void watch_lock(redlock::guard& g);
    void on_lost();
    /// After the command was reaped: nothing may signal its pid any more.
    void child_gone();
};

/// An acquire's (or a campaign's) completion.
using acquired = std::tuple<boost::system::error_code, redlock::guard>;

/// What waiting for the lock came to: the acquire's outcome, and the report that explains a
/// failure (its last attempt's, or for a wait that an outage ended, the nodes' answers to the
/// probes that found it).
struct wait_result
{
    boost::system::error_code ec;
    redlock::guard g;
    redlock::report r;
};

wait_result from_acquire(acquired x);

/// Whether a failed attempt shows an outage rather than a holder: fewer than a majority of
/// the nodes answered about the key at all.
bool outage(const redlock::report& r);

/// Whether the nodes, not another owner, made the wait fail with `ec`: too many
/// misconfigured, no majority answering, or none of them finding the lock held.
bool nodes_at_fault(boost::system::error_code ec, const redlock::report& r);

/// The exit status of a wait that failed with `ec`, explained by `r`: usage_exit for an
/// invalid_argument (the command line disagrees with the lock's other users),
/// nodes_unavailable when the nodes are at fault, else the conflict status.
int failure_status(boost::system::error_code ec, const redlock::report& r, const run_args& a);

/// How long an outage may last before a wait ends: the nodes' connect timeout.
std::chrono::milliseconds outage_span(const run_args& a);

/// Reads `a.key` on every node once per connect timeout (changing nothing) and completes with
/// the last probe's report once two probes in a row found no majority of the nodes answering.
boost::asio::awaitable<redlock::report> watch_for_outage(redlock::client& locks, const run_args& a);

/// One acquire that keeps its place for the whole wait (a fair queue's, an election's), ended
/// by an outage that watch_for_outage finds beside it: the acquire is then cancelled, which
/// leaves the queue, and the result is error::failed with the probes' report.
boost::asio::awaitable<wait_result> wait_beside_outage(redlock::client& locks, const run_args& a,
                                                       boost::asio::awaitable<acquired> acquire);

/// Runs `s->a.command` while `g` is held, with `env` ("NAME=VALUE") added to its environment,
/// stops it if the lock is lost, releases `g` when it has ended and returns the exit status:
/// the command's, lost_exit, or 126/127 when it cannot be run. `inherited`: the descriptors
/// the command may inherit.
boost::asio::awaitable<int> run_while_held(std::shared_ptr<session> s, redlock::guard& g,
                                           const std::set<int>& inherited,
                                           const std::vector<std::string>& env);

/// Shuts the client down, waiting for the deletes still under way.
boost::asio::awaitable<void> shut_down(session& s, redlock::client& locks);

/// A command line's work, given its session, its client and the descriptors open at start.
using session_body = std::function<boost::asio::awaitable<int>(
    std::shared_ptr<session>, redlock::client&, const std::set<int>&)>;

/// Makes the session and the client for `a` (`command`, "run" or "elect", prefixes a failure
/// to make the client) and runs `body` to its exit status.
int run_session(const run_args& a, std::string what, std::string_view command,
                const session_body& body);

}  // namespace redlock_cli
