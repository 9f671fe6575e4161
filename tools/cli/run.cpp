// SPDX-License-Identifier: BSL-1.0
#include "run.hpp"

#include "args.hpp"
#include "supervisor.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <random>
#include <string_view>
#include <utility>
#include <variant>

namespace redlock_cli {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = std::chrono::steady_clock;

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

// A fair run's wait: one acquire for all of it, since a new acquire would join the queue at
// its end.
asio::awaitable<wait_result> wait_in_line(redlock::client& locks, const run_args& a,
                                          redlock::options opts)
{
    opts.wait = a.wait;
    co_return co_await wait_beside_outage(locks, a, acquire_once(locks, a, opts, false));
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

// The acquire's options: the watchdog on, the attempts bounded by wait_for_lock rather than
// counted, and with --wait the last attempt close to its end.
redlock::options lock_options(const run_args& a, steady::time_point asked)
{
    redlock::options opts;
    opts.expiry = a.expiry;
    opts.auto_extend = true;
    const bool once = a.wait && a.wait->count() == 0;
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
    return opts;
}

// Says why the lock could not be acquired: what the nodes answered, and each node's cause
// where it needs fixing.
void report_failure(const run_args& a, const wait_result& w, bool once, steady::time_point asked)
{
    const auto& [ec, g, r] = w;
    const std::string waited =
        once ? "" : " (after " + std::to_string(ms_between(asked, steady::now())) + " ms)";
    if (ec == redlock::error::taken) {
        say("lock " + quoted(a.key) + " is held by another owner" + waited + ": " + counts(r));
    } else if (ec == redlock::error::failed) {
        say("could not acquire lock " + quoted(a.key) + waited + ": no majority of the " +
            std::to_string(a.nodes.nodes.size()) + " node(s) " +
            (outage(r) ? "answered" : "granted it") + " (" + counts(r) + ")" +
            (a.verbose ? "" : "; --verbose shows each node's answer"));
    } else if (ec == redlock::error::misconfigured || ec == redlock::error::invalid_argument) {
        // Each node's cause, even without --verbose: retrying will not help, so the message
        // must say what to fix (for a semaphore's other --permits, both numbers).
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

asio::awaitable<int> supervise(std::shared_ptr<session> s, redlock::client& locks,
                               const std::set<int>& inherited)
{
    using namespace asio::experimental::awaitable_operators;
    const run_args& a = s->a;
    const bool once = a.wait && a.wait->count() == 0;
    const auto asked = steady::now();
    const redlock::options opts = lock_options(a, asked);

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
        co_await shut_down(*s, locks);
        co_return 128 + signo;
    }
    wait_result w = std::get<0>(std::move(outcome));
    if (w.ec) {
        if (!a.quiet) {
            report_failure(a, w, once, asked);
        }
        co_await shut_down(*s, locks);
        // A semaphore whose holders use another --permits: this command line disagrees with
        // the lock's other users, which neither waiting nor the nodes can mend.
        co_return failure_status(w.ec, w.r, a);
    }
    if (a.verbose) {
        say("acquired " + quoted(a.key) + " on " +
            std::to_string(w.g.last_report().count(redlock::node_status::ok)) + " of " +
            std::to_string(a.nodes.nodes.size()) + " node(s), valid for " +
            std::to_string(ms_between(steady::now(), w.g.until())) + " ms; extending it every " +
            format_duration(a.expiry / 3) + " while " + s->command() + " runs");
    }
    const std::vector<std::string> no_env;
    const int code = co_await run_while_held(s, w.g, inherited, no_env);
    co_await shut_down(*s, locks);
    co_return code;
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
    node_choices nodes;
    std::optional<lock_kind> kind;
    bool fair = false;
    bool have_key = false;
};

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

}  // namespace

bool node_option(arg_scanner& args, node_choices& c)
{
    if (auto v = args.value_option("--nodes")) {
        c.node_lists.push_back(*v);
        return true;
    }
    return tls_option(args, c.tls) || key_prefix_option(args, c.key_prefix);
}

void apply_node_choices(run_args& a, const node_choices& c)
{
    a.nodes = nodes_from(c.node_lists);
    a.nodes.tls = c.tls;
    check_tls(a.nodes);
    apply_key_prefix(a.nodes, c.key_prefix);
}

bool command_option(arg_scanner& args, run_args& a)
{
    if (auto v = args.value_option("--signal")) {
        a.stop_signal = parse_signal("--signal", *v);
    } else if (auto k = args.value_option("--kill-after")) {
        a.kill_after = parse_duration("--kill-after", *k);
    } else if (args.flag("--process-group")) {
        a.process_group = true;
    } else {
        return false;
    }
    return true;
}

bool output_option(arg_scanner& args, run_args& a)
{
    if (args.flag("--quiet", "-q")) {
        a.quiet = true;
    } else if (args.flag("--verbose", "-v")) {
        a.verbose = true;
    } else {
        return false;
    }
    return true;
}

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

void end_options(arg_scanner& args)
{
    if (args.peek() == "--") {
        args.take();
    } else if (args.peek().size() > 1 && args.peek().front() == '-') {
        throw usage_error("unknown option '" + std::string(args.peek()) + "'");
    }
}

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

namespace {

// Completes `a` from the choices, and checks what only the whole command line can tell.
void finish_run_args(run_args& a, const run_choices& c)
{
    a.kind = lock_of(c.kind, c.fair);
    apply_node_choices(a, c.nodes);
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
        if (!node_option(args, c.nodes) && !lock_option(args, a, c) && !timing_option(args, a) &&
            !command_option(args, a) && !output_option(args, a)) {
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
    return run_session(
        a, "lock " + quoted(a.key), "run",
        [](std::shared_ptr<session> s, redlock::client& locks, const std::set<int>& inherited) {
            return supervise(std::move(s), locks, inherited);
        });
}

}  // namespace redlock_cli
