// SPDX-License-Identifier: BSL-1.0
#include "run.hpp"

#include "args.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <utility>
#include <variant>

extern char** environ;

namespace redlock_cli {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = std::chrono::steady_clock;

// The signals redlock passes on to the command: those whose default action would end redlock
// and leave the command running without the lock.
// EX_UNAVAILABLE of sysexits.h: the nodes, not another owner, kept the lock from us.
constexpr int nodes_unavailable = 69;
// As env(1) and timeout(1): the command was found but could not be run, or was not found.
constexpr int cannot_execute = 126;
constexpr int not_found = 127;

constexpr int forwarded_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};

std::string quoted(std::string_view s)
{
    return "'" + std::string(s) + "'";
}

void say(const std::string& line)
{
    std::cerr << "redlock: " << line << std::endl;
}

// "2 ok, 1 error": how many nodes ended in each status.
std::string counts(const redlock::report& r)
{
    using redlock::node_status;
    std::string out;
    for (node_status s : {node_status::ok, node_status::taken, node_status::missing,
                          node_status::timed_out, node_status::error, node_status::abandoned}) {
        if (std::size_t n = r.count(s); n > 0) {
            out += (out.empty() ? "" : ", ") + std::to_string(n) + " " +
                   std::string(redlock::to_string(s));
        }
    }
    return out;
}

// The report, one indented line per node, for --verbose.
void print_report(const redlock::report& r)
{
    std::string text = r.to_string();
    std::size_t start = 0;
    while (start < text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        std::cerr << "    " << text.substr(start, end - start) << "\n";
        start = end + 1;
    }
    std::cerr.flush();
}

long long ms_between(steady::time_point from, steady::time_point to)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

// The descriptors open when redlock started: the command inherits exactly these. Those that
// redlock opens itself (sockets to the nodes, Asio's internals) are marked close-on-exec
// before the command starts.
std::set<int> open_descriptors()
{
    std::set<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) {
        return fds;
    }
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end != entry->d_name && *end == '\0' && fd != own) {
            fds.insert(static_cast<int>(fd));
        }
    }
    ::closedir(dir);
    return fds;
}

void close_on_exec_except(const std::set<int>& inherited)
{
    for (int fd : open_descriptors()) {
        if (!inherited.contains(fd)) {
            const int flags = ::fcntl(fd, F_GETFD);
            if (flags >= 0 && !(flags & FD_CLOEXEC)) {
                ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
            }
        }
    }
}

// Starts the command; returns 0 and sets `pid`, or the errno of the failed exec.
int spawn(const run_args& a, pid_t& pid)
{
    std::vector<char*> argv;
    for (const std::string& s : a.command) {
        argv.push_back(const_cast<char*>(s.c_str()));
    }
    argv.push_back(nullptr);

    posix_spawnattr_t attr;
    if (int err = ::posix_spawnattr_init(&attr); err != 0) {
        return err;
    }
    // The signals redlock catches are reset to their defaults by exec anyway; those it left
    // ignored stay ignored. The signal mask is inherited as it is.
    short flags = 0;
    if (a.process_group) {
        flags |= POSIX_SPAWN_SETPGROUP;
        ::posix_spawnattr_setpgroup(&attr, 0);
    }
    ::posix_spawnattr_setflags(&attr, flags);
    const int err = ::posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), environ);
    ::posix_spawnattr_destroy(&attr);
    return err;
}

std::string describe_status(int status)
{
    if (WIFEXITED(status)) {
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) {
        return "was killed by " + signal_name(WTERMSIG(status));
    }
    return "ended with wait status " + std::to_string(status);
}

int exit_code(int status)
{
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return 1;
}

// Everything the asynchronous handlers share with the main coroutine; they hold it by
// shared_ptr, so none of them can outlive it.
struct session : std::enable_shared_from_this<session>
{
    session(asio::any_io_executor ex, const run_args& args)
        : a(args), stop_signals(ex), child_exit(ex, SIGCHLD), kill_timer(ex)
    {
    }

    const run_args& a;
    // The forwarded_signals that were not ignored at start: passed on to the command.
    asio::signal_set stop_signals;
    asio::signal_set child_exit;
    asio::steady_timer kill_timer;
    asio::cancellation_signal stop_watching;

    pid_t pid = -1;
    bool shutting_down = false;
    bool exited = false;
    bool lost = false;
    redlock::guard* held = nullptr;

    std::string command() const { return quoted(a.command.front()); }
    // The command, or with --process-group its whole process group.
    pid_t target() const { return a.process_group ? -pid : pid; }

    void send(int signo)
    {
        if (!exited) {
            ::kill(target(), signo);
        }
    }

    // Passes each signal redlock receives on to the command, until it has exited.
    void forward_signals()
    {
        stop_signals.async_wait([self = shared_from_this()](error_code ec, int signo) {
            if (ec || self->exited) {
                return;
            }
            if (self->a.verbose) {
                say("passing " + signal_name(signo) + " on to " + self->command() + " (pid " +
                    std::to_string(self->pid) + ")");
            }
            self->send(signo);
            self->forward_signals();
        });
    }

    // Stops the command when the lock is lost: --signal, then SIGKILL after --kill-after.
    void watch_lock(redlock::guard& g)
    {
        held = &g;
        auto handler = [self = shared_from_this()](error_code ec) {
            if (ec == redlock::error::lost) {
                self->on_lost();
            }
        };
        // On our executor (not the client's strand), and cancelled once the command has exited.
        g.async_wait_lost(asio::bind_cancellation_slot(
            stop_watching.slot(),
            asio::bind_executor(kill_timer.get_executor(), std::move(handler))));
    }

    void on_lost()
    {
        if (exited) {
            return;
        }
        lost = true;
        say("lock " + quoted(a.key) + " lost while " + command() + " ran; sending " +
            signal_name(a.stop_signal) + " to pid " + std::to_string(pid) +
            (a.stop_signal == SIGKILL ? std::string()
                                      : ", SIGKILL in " + format_duration(a.kill_after)));
        if (a.verbose && held != nullptr) {
            print_report(held->last_report());
        }
        send(a.stop_signal);
        if (a.stop_signal == SIGKILL) {
            return;
        }
        kill_timer.expires_after(a.kill_after);
        kill_timer.async_wait([self = shared_from_this()](error_code ec) {
            if (!ec && !self->exited) {
                say(self->command() + " still running " + format_duration(self->a.kill_after) +
                    " after " + signal_name(self->a.stop_signal) + "; sending SIGKILL");
                self->send(SIGKILL);
            }
        });
    }

    // After the command was reaped: nothing may signal its pid any more.
    void child_gone()
    {
        exited = true;
        held = nullptr;
        error_code ignored;
        stop_signals.cancel(ignored);  // the handlers stay installed: signals are now dropped
        kill_timer.cancel();
        stop_watching.emit(asio::cancellation_type::terminal);
    }
};

using acquired = std::tuple<error_code, redlock::guard>;

// Whether a failed attempt shows an outage rather than a holder: fewer than a majority of the
// nodes answered about the key at all (set it, or found it free or held); the others could
// not be reached or did not reply, each with its node_errc in the report. Then no owner can
// hold the lock either, and waiting for one to release it would never end. Decided on the
// nodes' statuses, never on their texts.
bool outage(const redlock::report& r)
{
    using redlock::node_status;
    const std::size_t answered =
        r.count(node_status::ok) + r.count(node_status::taken) + r.count(node_status::missing);
    return answered < r.nodes.size() / 2 + 1;
}

// Busy is a lock held elsewhere (on a quorum, or on enough nodes to split the vote); anything
// else is the nodes' fault, and a script must be able to tell the two apart.
bool nodes_at_fault(error_code ec, const redlock::report& r)
{
    if (ec == redlock::error::misconfigured) {
        return true;
    }
    return ec == redlock::error::failed && (r.count(redlock::node_status::taken) == 0 || outage(r));
}

// One acquire of `lock`: a single attempt (`once`), or attempts as its options allow. Plain
// statements, not a conditional expression: g++ 12 starts both operands' co_awaits of one.
template <class Lock>
asio::awaitable<acquired> acquire_with(Lock lock, bool once)
{
    if (once) {
        co_return co_await lock.async_try_acquire(asio::as_tuple(asio::use_awaitable));
    }
    co_return co_await lock.async_acquire(asio::as_tuple(asio::use_awaitable));
}

// A reader's acquire of the read-write lock `lock`, as acquire_with.
asio::awaitable<acquired> acquire_shared_with(redlock::rw_mutex lock, bool once)
{
    if (once) {
        co_return co_await lock.async_try_acquire_shared(asio::as_tuple(asio::use_awaitable));
    }
    co_return co_await lock.async_acquire_shared(asio::as_tuple(asio::use_awaitable));
}

// One acquire of the lock kind the options chose, as acquire_with.
asio::awaitable<acquired> acquire_once(redlock::client& locks, const run_args& a,
                                       redlock::options opts, bool once)
{
    switch (a.kind) {
        case lock_kind::shared:
            return acquire_shared_with(locks.make_rw_mutex(a.key, opts), once);
        case lock_kind::permit:
            return acquire_with(locks.make_semaphore(a.key, a.permits, opts), once);
        case lock_kind::fair:
            opts.fair = true;
            return acquire_with(locks.make_mutex(a.key, opts), once);
        case lock_kind::exclusive:
            break;
    }
    return acquire_with(locks.make_rw_mutex(a.key, opts), once);
}

// What waiting for the lock came to: the acquire's outcome, and the report that explains a
// failure (its last attempt's, or for a fair wait that an outage ended, the nodes' answers to
// the probes that found it).
struct wait_result
{
    error_code ec;
    redlock::guard g;
    redlock::report r;
};

wait_result from_acquire(acquired x)
{
    auto [ec, g] = std::move(x);
    redlock::report r = g.last_report();
    return {ec, std::move(g), std::move(r)};
}

// How long an outage may last before the wait ends: the nodes' connect timeout.
std::chrono::milliseconds outage_span(const run_args& a)
{
    return std::max(a.nodes.connect_timeout, std::chrono::milliseconds(1));
}

// The nodes' answers to an inspection, as a report for outage() and the messages: a node that
// read the key is ok; one that did not has timed out or failed, with its cause.
redlock::report probe_report(const std::vector<redlock::key_state>& states)
{
    using redlock::node_status;
    redlock::report r;
    for (const redlock::key_state& s : states) {
        redlock::node_outcome o;
        o.endpoint = s.endpoint;
        o.status = s.error.empty()                           ? node_status::ok
                   : s.code == redlock::node_errc::timed_out ? node_status::timed_out
                                                             : node_status::error;
        o.detail = s.error;
        o.code = s.code;
        r.nodes.push_back(std::move(o));
    }
    return r;
}

// Reads the key on every node once per span (a read-only script, which changes nothing) and
// completes with the last probe's report once two probes in a row found no majority of the
// nodes answering: the nodes failed for at least a span.
asio::awaitable<redlock::report> watch_for_outage(redlock::client& locks, const run_args& a)
{
    const auto span = outage_span(a);
    asio::steady_timer pause(co_await asio::this_coro::executor);
    int outage_probes = 0;  // in a row
    while (true) {
        pause.expires_after(span);
        co_await pause.async_wait(asio::use_awaitable);
        auto [ec, states] =
            co_await locks.async_inspect(a.key, span, asio::as_tuple(asio::use_awaitable));
        if (states.size() != a.nodes.nodes.size()) {
            continue;  // not read at all (the client shutting down): no news of the nodes
        }
        redlock::report r = probe_report(states);
        outage_probes = outage(r) ? outage_probes + 1 : 0;
        if (outage_probes == 2) {
            co_return r;
        }
    }
}

// A fair run's wait: one acquire for all of it, since a new acquire would join the queue at
// its end. The acquire's own attempts are as far apart as a waiter's refresh (expiry / 4)
// while it waits for its turn, so an outage is found beside it, by watch_for_outage; it ends
// the wait by cancelling the acquire, which leaves the queue.
asio::awaitable<wait_result> wait_in_line(redlock::client& locks, const run_args& a,
                                          redlock::options opts)
{
    using namespace asio::experimental::awaitable_operators;
    opts.wait = a.wait;
    auto outcome = co_await (acquire_once(locks, a, opts, false) || watch_for_outage(locks, a));
    if (outcome.index() == 1) {
        co_return wait_result{redlock::error::failed, redlock::guard(),
                              std::get<1>(std::move(outcome))};
    }
    co_return from_acquire(std::get<0>(std::move(outcome)));
}

// Waits for the lock as --wait says (a single attempt for -n), ended early by an outage that
// lasts a connect timeout. The library's acquire runs in spans of one connect timeout, each
// ending with its last attempt's report; two spans in a row that end in an outage end the
// wait (the nodes failed from the end of the first to the end of the second), and a span that
// ends with a majority answering (the lock held elsewhere, a split vote) starts the count
// again. A holder is waited for; an outage is not, since no owner can hold the lock through it
// and its end is nobody's release. A fair run keeps its place instead (wait_in_line).
asio::awaitable<wait_result> wait_for_lock(redlock::client& locks, const run_args& a,
                                           redlock::options opts, steady::time_point asked)
{
    if (a.wait && a.wait->count() == 0) {
        co_return from_acquire(co_await acquire_once(locks, a, opts, true));
    }
    if (a.kind == lock_kind::fair) {
        co_return co_await wait_in_line(locks, a, opts);
    }
    const auto span = outage_span(a);
    int outage_spans = 0;  // in a row
    while (true) {
        opts.wait = span;
        if (a.wait) {
            opts.wait = std::min(span, std::chrono::duration_cast<std::chrono::milliseconds>(
                                           asked + *a.wait - steady::now()));
        }
        if (opts.wait->count() <= 0) {
            opts.wait = std::chrono::milliseconds(1);  // the last attempt, at the deadline
        }
        auto [ec, g] = co_await acquire_once(locks, a, opts, false);
        const auto now = steady::now();
        if (ec != redlock::error::failed && ec != redlock::error::taken) {
            co_return from_acquire({ec, std::move(g)});  // acquired, misconfigured, shut down
        }
        outage_spans = outage(g.last_report()) ? outage_spans + 1 : 0;
        if (outage_spans == 2 || (a.wait && now >= asked + *a.wait)) {
            co_return from_acquire({ec, std::move(g)});
        }
    }
}

asio::awaitable<int> supervise(std::shared_ptr<session> s, redlock::client& locks,
                               std::set<int> inherited)
{
    using namespace asio::experimental::awaitable_operators;
    const run_args& a = s->a;
    const auto shutdown = [&locks, s]() -> asio::awaitable<void> {
        s->shutting_down = true;  // the connections closing now are no news for --verbose
        co_await locks.async_shutdown(asio::as_tuple(asio::use_awaitable));
    };

    redlock::options opts;
    opts.expiry = a.expiry;
    opts.auto_extend = true;
    const bool once = a.wait && a.wait->count() == 0;
    const auto asked = steady::now();
    if (!once) {
        opts.tries = std::numeric_limits<int>::max();  // wait_for_lock bounds the wait
    }
    if (a.wait && !once) {
        // The library starts no attempt whose delay would end past the wait; shorten the last
        // delay instead, so that the final attempt comes close to the end of --wait rather
        // than up to 250 ms before it.
        opts.retry_delay = [deadline = asked + *a.wait](int) {
            static std::mt19937 engine{std::random_device{}()};
            const std::chrono::milliseconds pause{
                std::uniform_int_distribution<int>(50, 250)(engine)};
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()) -
                std::chrono::milliseconds(2);
            return left < std::chrono::milliseconds(5) ? pause : std::min(pause, left);
        };
    }

    // Wait for the lock, unless a signal asks redlock to stop first (the acquire is then
    // cancelled, which deletes whatever it had set).
    if (a.verbose) {
        say("acquiring " + quoted(a.key) + " on " + std::to_string(a.nodes.nodes.size()) +
            " node(s), " +
            (once     ? std::string("one attempt")
             : a.wait ? "waiting up to " + format_duration(*a.wait)
                      : "waiting forever"));
    }
    auto outcome = co_await (wait_for_lock(locks, a, opts, asked) ||
                             s->stop_signals.async_wait(asio::use_awaitable));
    if (outcome.index() == 1) {
        const int signo = std::get<1>(outcome);
        say("interrupted by " + signal_name(signo) + " while waiting for lock " + quoted(a.key));
        co_await shutdown();
        co_return 128 + signo;
    }
    auto [ec, g, r] = std::move(std::get<0>(outcome));
    if (ec) {
        const bool unavailable = nodes_at_fault(ec, r);
        if (!a.quiet) {
            const std::string waited =
                once ? "" : " (after " + std::to_string(ms_between(asked, steady::now())) + " ms)";
            if (ec == redlock::error::taken) {
                say("lock " + quoted(a.key) + " is held by another owner" + waited + ": " +
                    counts(r));
            } else if (ec == redlock::error::failed) {
                say("could not acquire lock " + quoted(a.key) + waited + ": no majority of the " +
                    std::to_string(a.nodes.nodes.size()) + " node(s) " +
                    (outage(r) ? "answered" : "granted it") + " (" + counts(r) + ")" +
                    (a.verbose ? "" : "; --verbose shows each node's answer"));
            } else if (ec == redlock::error::misconfigured ||
                       ec == redlock::error::invalid_argument) {
                // Each node's cause, even without --verbose: retrying will not help, so the
                // message must say what to fix (for a semaphore's other --permits, both
                // numbers).
                say("could not acquire lock " + quoted(a.key) + ": " +
                    (ec == redlock::error::invalid_argument && a.kind == lock_kind::permit
                         ? "its holders use another number of permits than --permits " +
                               std::to_string(a.permits)
                         : ec.message()));
                if (!a.verbose) {
                    print_report(r);
                }
            } else {
                say("could not acquire lock " + quoted(a.key) + ": " + ec.message());
            }
            if (a.verbose) {
                print_report(r);
            }
        }
        co_await shutdown();
        // A semaphore whose holders use another --permits: this command line disagrees with
        // the lock's other users, which neither waiting nor the nodes can mend.
        co_return ec == redlock::error::invalid_argument ? usage_exit
        : unavailable                                    ? nodes_unavailable
                                                         : a.conflict_exit_code;
    }
    if (a.verbose) {
        say("acquired " + quoted(a.key) + " on " +
            std::to_string(g.last_report().count(redlock::node_status::ok)) + " of " +
            std::to_string(a.nodes.nodes.size()) + " node(s), valid for " +
            std::to_string(ms_between(steady::now(), g.until())) + " ms; extending it every " +
            format_duration(a.expiry / 3) + " while " + s->command() + " runs");
    }

    // Start the command. SIGCHLD is caught from before the start, so no exit is missed.
    close_on_exec_except(inherited);
    if (const int err = spawn(a, s->pid); err != 0) {
        say("cannot run " + s->command() + ": " + std::strerror(err));
        co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        co_await shutdown();
        co_return err == ENOENT ? not_found : cannot_execute;
    }
    if (a.verbose) {
        say("started " + s->command() + " (pid " + std::to_string(s->pid) + ")");
    }
    s->forward_signals();
    s->watch_lock(g);

    int status = 0;
    while (true) {
        const pid_t r = ::waitpid(s->pid, &status, WNOHANG);
        if (r == s->pid) {
            break;
        }
        if (r < 0 && errno != EINTR) {
            // Not our child any more (cannot happen unless SIGCHLD handling was changed).
            say("lost track of " + s->command() + ": " + std::strerror(errno));
            status = 1 << 8;
            break;
        }
        co_await s->child_exit.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    s->child_gone();

    const bool lost = s->lost;
    if (a.verbose || lost) {
        say(s->command() + " " + describe_status(status));
    }
    auto [released] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
    if (a.verbose) {
        say(released ? "releasing " + quoted(a.key) + ": " + released.message()
                     : "released " + quoted(a.key));
        print_report(g.last_report());
    } else if (released == redlock::error::not_held && !lost) {
        say("warning: when " + s->command() + " ended, lock " + quoted(a.key) +
            " was no longer held on a majority of the nodes (it expired or was taken over)");
    }
    co_await shutdown();
    co_return lost ? 3 : exit_code(status);
}

}  // namespace

namespace {

// An exit status for -E: 0 to 255.
int parse_exit_code(std::string_view option, std::string_view text)
{
    int n = -1;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || p != text.data() + text.size() || n < 0 || n > 255) {
        throw usage_error(std::string(option) + ": " + quoted(text) +
                          " is not an exit status (0 to 255)");
    }
    return n;
}

// A semaphore's number of permits for --permits: 1 or more.
std::ptrdiff_t parse_permits(std::string_view text)
{
    std::ptrdiff_t n = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || p != text.data() + text.size() || n < 1) {
        throw usage_error("--permits: " + quoted(text) + " is not a number of permits (1 or more)");
    }
    return n;
}

// The name of the option that chose `kind`.
std::string_view option_of(lock_kind kind)
{
    switch (kind) {
        case lock_kind::shared:
            return "--shared";
        case lock_kind::permit:
            return "--permits";
        case lock_kind::fair:
            return "--fair";
        case lock_kind::exclusive:
            break;
    }
    return "--exclusive";
}

// -s, -x and --permits each choose the lock: one of them, as often as wanted.
void set_kind(std::optional<lock_kind>& chosen, lock_kind kind)
{
    if (chosen && *chosen != kind) {
        throw usage_error(std::string(option_of(kind)) + " and " + std::string(option_of(*chosen)) +
                          " exclude each other");
    }
    chosen = kind;
}

// The lock a run takes: -x (the default) unless -s or --permits says otherwise; --fair makes
// the exclusive lock a fair mutex, and has no shared or counted form.
lock_kind lock_of(std::optional<lock_kind> chosen, bool fair)
{
    if (!fair) {
        return chosen.value_or(lock_kind::exclusive);
    }
    if (chosen && *chosen != lock_kind::exclusive) {
        throw usage_error("--fair and " + std::string(option_of(*chosen)) +
                          " exclude each other: a fair lock has one holder at a time");
    }
    return lock_kind::fair;
}

// What the options choose beyond run_args' own fields, until every option is read.
struct run_choices
{
    std::vector<std::string> node_lists;
    redlock::tls_settings tls;
    std::optional<std::string> key_prefix;
    std::optional<lock_kind> kind;
    bool fair = false;
    bool have_key = false;
};

// --nodes, --tls-* and --key-prefix: the nodes, and how to reach them.
bool node_option(arg_scanner& args, run_choices& c)
{
    if (auto v = args.value_option("--nodes")) {
        c.node_lists.push_back(*v);
        return true;
    }
    return tls_option(args, c.tls) || key_prefix_option(args, c.key_prefix);
}

// --key, -s, -x, --permits and --fair: the lock's name and kind.
bool lock_option(arg_scanner& args, run_args& a, run_choices& c)
{
    if (auto v = args.value_option("--key", "-k")) {
        if (v->empty()) {
            throw usage_error("--key must not be empty");
        }
        a.key = *v;
        c.have_key = true;
    } else if (args.flag("--shared", "-s")) {
        set_kind(c.kind, lock_kind::shared);
    } else if (args.flag("--exclusive", "-x")) {
        set_kind(c.kind, lock_kind::exclusive);
    } else if (auto p = args.value_option("--permits")) {
        set_kind(c.kind, lock_kind::permit);
        a.permits = parse_permits(*p);
    } else if (args.flag("--fair")) {
        c.fair = true;
    } else {
        return false;
    }
    return true;
}

// --expiry, --wait, -n and -E: how long the lock is held and waited for, and the exit status
// when another owner holds it.
bool timing_option(arg_scanner& args, run_args& a)
{
    if (auto v = args.value_option("--expiry")) {
        a.expiry = parse_duration("--expiry", *v);
        if (a.expiry.count() == 0) {
            throw usage_error("--expiry must be more than 0");
        }
    } else if (auto w = args.value_option("--wait", "-w")) {
        if (*w == "forever") {
            a.wait.reset();
        } else {
            a.wait = parse_duration("--wait", *w);
        }
    } else if (args.flag("--nonblock", "-n")) {
        a.wait = std::chrono::milliseconds(0);
    } else if (auto e = args.value_option("--conflict-exit-code", "-E")) {
        a.conflict_exit_code = parse_exit_code("--conflict-exit-code", *e);
    } else {
        return false;
    }
    return true;
}

// --signal, --kill-after, --process-group, -q and -v: how the command is stopped, and what
// the run prints.
bool command_option(arg_scanner& args, run_args& a)
{
    if (auto v = args.value_option("--signal")) {
        a.stop_signal = parse_signal("--signal", *v);
    } else if (auto k = args.value_option("--kill-after")) {
        a.kill_after = parse_duration("--kill-after", *k);
    } else if (args.flag("--process-group")) {
        a.process_group = true;
    } else if (args.flag("--quiet", "-q")) {
        a.quiet = true;
    } else if (args.flag("--verbose", "-v")) {
        a.verbose = true;
    } else {
        return false;
    }
    return true;
}

// At the first argument that no option took: consumes "--", or throws usage_error for an
// unknown option. The command follows.
void end_options(arg_scanner& args)
{
    if (args.peek() == "--") {
        args.take();
    } else if (args.peek().size() > 1 && args.peek().front() == '-') {
        throw usage_error("unknown option '" + std::string(args.peek()) + "'");
    }
}

// The library's check of the expiry and the wait, its message naming the options instead of
// the fields.
void check_lock_options(const run_args& a)
{
    redlock::options opts;
    opts.expiry = a.expiry;
    opts.wait = a.wait;
    std::string problem = redlock::validate(opts, a.key);
    if (problem.empty()) {
        return;
    }
    for (auto [field, option] :
         {std::pair{"options.expiry", "--expiry"}, std::pair{"options.wait", "--wait"}}) {
        if (auto pos = problem.find(field); pos != std::string::npos) {
            problem.replace(pos, std::string_view(field).size(), option);
        }
    }
    throw usage_error(problem);
}

// Completes `a` from the choices, and checks what only the whole command line can tell.
void finish_run_args(run_args& a, const run_choices& c)
{
    a.kind = lock_of(c.kind, c.fair);
    a.nodes = nodes_from(c.node_lists);
    a.nodes.tls = c.tls;
    check_tls(a.nodes);
    apply_key_prefix(a.nodes, c.key_prefix);
    if (!c.have_key) {
        throw usage_error("--key is required: the name of the lock");
    }
    if (a.command.empty()) {
        throw usage_error("no command to run: give it after the options, as in -- COMMAND ARG...");
    }
    if (a.quiet && a.verbose) {
        throw usage_error("--quiet and --verbose exclude each other");
    }
    check_lock_options(a);
}

}  // namespace

run_args parse_run_args(int argc, char** argv, int first)
{
    run_args a;
    run_choices c;
    arg_scanner args(argc, argv, first);
    while (args.more()) {
        if (args.flag("--help", "-h")) {
            a.help = true;
            return a;
        }
        if (!node_option(args, c) && !lock_option(args, a, c) && !timing_option(args, a) &&
            !command_option(args, a)) {
            end_options(args);
            break;
        }
    }
    while (args.more()) {
        a.command.emplace_back(args.take());
    }
    finish_run_args(a, c);
    return a;
}

int run_command(const run_args& a)
{
    // Before anything opens a descriptor of its own.
    const std::set<int> inherited = open_descriptors();

    asio::io_context io(1);
    auto s = std::make_shared<session>(io.get_executor(), a);
    for (int signo : forwarded_signals) {
        struct sigaction current
        {
        };
        if (::sigaction(signo, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) {
            continue;  // ignored when we started (nohup, a background job): leave it so
        }
        s->stop_signals.add(signo);
    }

    redlock::config cfg = a.nodes;
    if (a.verbose) {
        // The library's log lines: connections made, dropped, retried. Called on the client's
        // strand, which is this thread.
        cfg.logger = [s](redlock::log_level level, std::string_view message) {
            if (level >= redlock::log_level::info && !s->shutting_down) {
                say("[" + std::string(redlock::to_string(level)) + "] " + std::string(message));
            }
        };
    }
    std::optional<redlock::client> locks;
    try {
        locks.emplace(io.get_executor(), std::move(cfg));
    } catch (const std::exception& e) {
        std::cerr << "redlock run: " << describe_client_failure(e) << std::endl;
        return usage_exit;
    }

    int code = 1;
    asio::co_spawn(io, supervise(s, *locks, inherited), [&](std::exception_ptr e, int result) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                say("internal error: " + describe(x));
            }
            code = internal_error;
            return;
        }
        code = result;
    });
    io.run();
    return code;
}

}  // namespace redlock_cli
