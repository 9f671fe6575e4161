// SPDX-License-Identifier: BSL-1.0
#include "supervisor.hpp"

#include "args.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <utility>
#include <variant>

extern char** environ;

namespace redlock_cli {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// As env(1) and timeout(1): the command was found but could not be run, or was not found.
constexpr int cannot_execute = 126;
constexpr int not_found = 127;

// The signals redlock passes on to the command: those whose default action would end redlock
// and leave the command running without the lock.
constexpr int forwarded_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};

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

// redlock's environment with `extra` ("NAME=VALUE") added, each replacing a variable of its
// name. Built for the command alone: setenv in redlock itself could race with the resolver's
// threads reading the environment.
std::vector<std::string> environment_with(const std::vector<std::string>& extra)
{
    const auto replaced = [&extra](std::string_view entry) {
        return std::any_of(extra.begin(), extra.end(), [entry](const std::string& e) {
            const std::string_view name = std::string_view(e).substr(0, e.find('=') + 1);
            return entry.starts_with(name);
        });
    };
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        if (!replaced(*e)) {
            env.emplace_back(*e);
        }
    }
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
}

std::vector<char*> pointers_to(const std::vector<std::string>& strings)
{
    std::vector<char*> out;
    for (const std::string& s : strings) {
        out.push_back(const_cast<char*>(s.c_str()));
    }
    out.push_back(nullptr);
    return out;
}

// Starts the command; returns 0 and sets `pid`, or the errno of the failed exec.
int spawn(const run_args& a, const std::vector<std::string>& extra_env, pid_t& pid)
{
    std::vector<char*> argv = pointers_to(a.command);
    const std::vector<std::string> env =
        extra_env.empty() ? std::vector<std::string>() : environment_with(extra_env);
    std::vector<char*> envp = pointers_to(env);

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
    const int err = ::posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(),
                                   extra_env.empty() ? environ : envp.data());
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

// Waits for the command to exit; its wait status. SIGCHLD is caught from before its start,
// so no exit is missed.
asio::awaitable<int> reap(session& s)
{
    int status = 0;
    while (true) {
        const pid_t r = ::waitpid(s.pid, &status, WNOHANG);
        if (r == s.pid) {
            break;
        }
        if (r < 0 && errno != EINTR) {
            // Not our child any more (cannot happen unless SIGCHLD handling was changed).
            say("lost track of " + s.command() + ": " + std::strerror(errno));
            status = 1 << 8;
            break;
        }
        co_await s.child_exit.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    co_return status;
}

// Releases `g` after the command ended, saying what --verbose asks for and warning when the
// lock had lapsed unnoticed.
asio::awaitable<void> release_after(session& s, redlock::guard& g)
{
    auto [released] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
    if (s.a.verbose) {
        say(released ? "releasing " + quoted(s.a.key) + ": " + released.message()
                     : "released " + quoted(s.a.key));
        print_report(g.last_report());
    } else if (released == redlock::error::not_held && !s.lost) {
        say("warning: when " + s.command() + " ended, " + s.what +
            " was no longer held on a majority of the nodes (it expired or was taken over)");
    }
}

}  // namespace

std::string quoted(std::string_view s)
{
    return "'" + std::string(s) + "'";
}

void say(const std::string& line)
{
    std::cerr << "redlock: " << line << std::endl;
}

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

long long ms_between(std::chrono::steady_clock::time_point from,
                     std::chrono::steady_clock::time_point to)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

std::chrono::milliseconds outage_span(const run_args& a)
{
    return std::max(a.nodes.connect_timeout, std::chrono::milliseconds(1));
}

session::session(asio::any_io_executor ex, const run_args& args, std::string held_what)
    : a(args), what(std::move(held_what)), stop_signals(ex), child_exit(ex, SIGCHLD), kill_timer(ex)
{
}

std::string session::command() const
{
    return quoted(a.command.front());
}

pid_t session::target() const
{
    return a.process_group ? -pid : pid;
}

void session::send(int signo)
{
    if (!exited) {
        ::kill(target(), signo);
    }
}

void session::forward_signals()
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

void session::watch_lock(redlock::guard& g)
{
    held = &g;
    auto handler = [self = shared_from_this()](error_code ec) {
        if (ec == redlock::error::lost) {
            self->on_lost();
        }
    };
    // On our executor (not the client's strand), and cancelled once the command has exited.
    g.async_wait_lost(asio::bind_cancellation_slot(
        stop_watching.slot(), asio::bind_executor(kill_timer.get_executor(), std::move(handler))));
}

void session::on_lost()
{
    if (exited) {
        return;
    }
    lost = true;
    say(what + " lost while " + command() + " ran; sending " + signal_name(a.stop_signal) +
        " to pid " + std::to_string(pid) +
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

void session::child_gone()
{
    exited = true;
    held = nullptr;
    error_code ignored;
    stop_signals.cancel(ignored);  // the handlers stay installed: signals are now dropped
    kill_timer.cancel();
    stop_watching.emit(asio::cancellation_type::terminal);
}

wait_result from_acquire(acquired x)
{
    auto [ec, g] = std::move(x);
    redlock::report r = g.last_report();
    return {ec, std::move(g), std::move(r)};
}

// Fewer than a majority of the nodes answered about the key at all (set it, or found it free
// or held); the others could not be reached or did not reply, each with its node_errc in the
// report. Then no owner can hold the lock either, and waiting for one to release it would
// never end.
bool outage(const redlock::report& r)
{
    using redlock::node_status;
    const std::size_t answered =
        r.count(node_status::ok) + r.count(node_status::taken) + r.count(node_status::missing);
    return answered < r.nodes.size() / 2 + 1;
}

// Busy is a lock held elsewhere (on a quorum, or on enough nodes to split the vote); anything
// else is the nodes' fault, and a script must be able to tell the two apart. Decided on the
// nodes' statuses, never on their texts.
bool nodes_at_fault(error_code ec, const redlock::report& r)
{
    if (ec == redlock::error::misconfigured) {
        return true;
    }
    return ec == redlock::error::failed && (r.count(redlock::node_status::taken) == 0 || outage(r));
}

int failure_status(error_code ec, const redlock::report& r, const run_args& a)
{
    if (ec == redlock::error::invalid_argument) {
        return usage_exit;
    }
    return nodes_at_fault(ec, r) ? nodes_unavailable : a.conflict_exit_code;
}

// Two probes in a row: the nodes failed for at least a span.
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

// The acquire's own attempts are as far apart as a waiter's refresh (expiry / 4) while it
// waits for its turn, so its reports come too seldom to time an outage by.
asio::awaitable<wait_result> wait_beside_outage(redlock::client& locks, const run_args& a,
                                                asio::awaitable<acquired> acquire)
{
    using namespace asio::experimental::awaitable_operators;
    auto outcome = co_await (std::move(acquire) || watch_for_outage(locks, a));
    if (outcome.index() == 1) {
        co_return wait_result{redlock::error::failed, redlock::guard(),
                              std::get<1>(std::move(outcome))};
    }
    co_return from_acquire(std::get<0>(std::move(outcome)));
}

asio::awaitable<int> run_while_held(std::shared_ptr<session> s, redlock::guard& g,
                                    const std::set<int>& inherited,
                                    const std::vector<std::string>& env)
{
    close_on_exec_except(inherited);
    if (const int err = spawn(s->a, env, s->pid); err != 0) {
        say("cannot run " + s->command() + ": " + std::strerror(err));
        co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        co_return err == ENOENT ? not_found : cannot_execute;
    }
    if (s->a.verbose) {
        say("started " + s->command() + " (pid " + std::to_string(s->pid) + ")");
    }
    s->forward_signals();
    s->watch_lock(g);
    const int status = co_await reap(*s);
    s->child_gone();

    if (s->a.verbose || s->lost) {
        say(s->command() + " " + describe_status(status));
    }
    co_await release_after(*s, g);
    co_return s->lost ? lost_exit : exit_code(status);
}

asio::awaitable<void> shut_down(session& s, redlock::client& locks)
{
    s.shutting_down = true;  // the connections closing now are no news for --verbose
    co_await locks.async_shutdown(asio::as_tuple(asio::use_awaitable));
}

int run_session(const run_args& a, std::string what, std::string_view command,
                const session_body& body)
{
    // Before anything opens a descriptor of its own.
    const std::set<int> inherited = open_descriptors();

    asio::io_context io(1);
    auto s = std::make_shared<session>(io.get_executor(), a, std::move(what));
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
        std::cerr << "redlock " << command << ": " << describe_client_failure(e) << std::endl;
        return usage_exit;
    }

    int code = 1;
    asio::co_spawn(io, body(s, *locks, inherited), [&](std::exception_ptr e, int result) {
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
