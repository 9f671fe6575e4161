// SPDX-License-Identifier: BSL-1.0
#include "elect.hpp"

#include "args.hpp"
#include "supervisor.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <csignal>
#include <cstddef>
#include <iostream>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace redlock_cli {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = std::chrono::steady_clock;
using leader_seen = std::tuple<error_code, std::optional<redlock::leader>>;

// The most a leader may publish: the library refuses a longer value with invalid_argument,
// which the command line says first, as a usage error.
constexpr std::size_t max_proposal = 64 * 1024;

// How long a listener waits before it asks again who leads, while no quorum answers.
constexpr std::chrono::milliseconds ask_again{200};

// What the options choose beyond elect_args' own fields, until every argument is read.
struct elect_choices
{
    node_choices nodes;
    std::vector<std::string> positionals;  // NAME, then PROPOSAL
    std::string campaign_option;           // the first one given: --listen refuses it
};

// An option as written, without its value: for messages.
std::string option_written(std::string_view arg)
{
    if (arg.starts_with("--")) {
        return std::string(arg.substr(0, arg.find('=')));
    }
    return std::string(arg.substr(0, 2));  // -w5 is -w
}

// The options only a campaign takes: those of `redlock run` for the wait and the command.
bool campaign_option(arg_scanner& args, elect_args& e, elect_choices& c)
{
    const std::string written = option_written(args.peek());
    if (!timing_option(args, e.run) && !command_option(args, e.run)) {
        return false;
    }
    if (c.campaign_option.empty()) {
        c.campaign_option = written;
    }
    return true;
}

// -l and --listen: a flag before or after NAME, or with NAME attached (--listen=NAME, -lNAME).
bool listen_option(arg_scanner& args, elect_args& e, elect_choices& c)
{
    const std::string_view next = args.peek();
    std::string_view attached;
    if (next.starts_with("--listen=")) {
        attached = next.substr(std::string_view("--listen=").size());
    } else if (next.starts_with("-l") && next != "-l") {
        attached = next.substr(2);
    } else if (next != "-l" && next != "--listen") {
        return false;
    }
    args.take();
    e.listen = true;
    if (!attached.empty() || next.ends_with('=')) {
        c.positionals.emplace_back(attached);
    }
    return true;
}

// Options, NAME and PROPOSAL in any order, up to "--" or a third argument that is no option:
// the command's start.
void scan(arg_scanner& args, elect_args& e, elect_choices& c)
{
    while (args.more()) {
        if (args.flag("--help", "-h")) {
            e.help = true;
            return;
        }
        if (listen_option(args, e, c) || node_option(args, c.nodes) ||
            campaign_option(args, e, c) || output_option(args, e.run)) {
            continue;
        }
        const std::string_view next = args.peek();
        if (c.positionals.size() == 2 || next == "--" || (next.size() > 1 && next[0] == '-')) {
            end_options(args);
            return;
        }
        c.positionals.emplace_back(args.take());
    }
}

// A listener reads, and takes nothing that only a campaign uses.
void check_listen(const elect_args& e, const elect_choices& c)
{
    if (c.positionals.size() > 1 || !e.run.command.empty()) {
        throw usage_error("--listen takes NAME alone: no PROPOSAL and no command");
    }
    if (!c.campaign_option.empty()) {
        throw usage_error("--listen and " + c.campaign_option +
                          " exclude each other: a listener only reads");
    }
}

void check_campaign(elect_args& e, const elect_choices& c)
{
    if (c.positionals.size() < 2) {
        throw usage_error(
            "no PROPOSAL given: the value to publish while leading, as in "
            "'redlock elect NAME PROPOSAL'");
    }
    e.proposal = c.positionals[1];
    if (e.proposal.size() > max_proposal) {
        throw usage_error("PROPOSAL is " + std::to_string(e.proposal.size()) +
                          " bytes long: a leader publishes at most " +
                          std::to_string(max_proposal));
    }
}

// Completes `e` from the choices, and checks what only the whole command line can tell.
void finish_elect_args(elect_args& e, const elect_choices& c)
{
    apply_node_choices(e.run, c.nodes);
    if (c.positionals.empty()) {
        throw usage_error(
            "no NAME given: the election's name, as in 'redlock elect NAME PROPOSAL'");
    }
    e.run.key = c.positionals[0];
    if (e.run.key.empty()) {
        throw usage_error("NAME must not be empty");
    }
    if (e.listen) {
        check_listen(e, c);
    } else {
        check_campaign(e, c);
    }
    if (e.run.quiet && e.run.verbose) {
        throw usage_error("--quiet and --verbose exclude each other");
    }
    check_lock_options(e.run);
}

// ---- the listener

// "TERM VALUE", or "-" while nobody leads: one line, whatever bytes the value holds.
std::string leader_line(const std::optional<redlock::leader>& who)
{
    return who ? std::to_string(who->term) + " " + printable(who->value) : "-";
}

// Who leads now. Asked again while no quorum answers, since the first line must be the
// leader itself, not a change; the outage watch beside it bounds the asking.
asio::awaitable<leader_seen> current_leader(redlock::election e)
{
    asio::steady_timer pause(co_await asio::this_coro::executor);
    // Assigned, not declared, in the loop: g++ 12 mishandles some locals initialized by a
    // co_await in a loop's body (src/lock/election.cpp meets it with this very type).
    leader_seen seen;
    while (true) {
        seen = co_await e.async_leader(asio::as_tuple(asio::use_awaitable));
        if (std::get<0>(seen) != redlock::error::failed) {
            co_return seen;
        }
        pause.expires_after(ask_again);
        co_await pause.async_wait(asio::use_awaitable);
    }
}

// Prints the leader, then each change, until following the election fails.
asio::awaitable<error_code> print_leaders(redlock::election e)
{
    auto [ec, seen] = co_await current_leader(e);
    while (!ec) {
        std::cout << leader_line(seen) << std::endl;  // flushed: a pipe's reader sees each now
        std::tie(ec, seen) = co_await e.async_observe(seen, asio::as_tuple(asio::use_awaitable));
    }
    co_return ec;
}

// A signal that asks to stop (SIGINT, SIGTERM) is a success; the others, which would have
// ended redlock had it not caught them, give 128 plus their number, as a shell does.
int stopped_by(int signo)
{
    return signo == SIGINT || signo == SIGTERM ? 0 : 128 + signo;
}

asio::awaitable<int> listen(std::shared_ptr<session> s, redlock::client& locks)
{
    using namespace asio::experimental::awaitable_operators;
    const run_args& a = s->a;
    auto outcome =
        co_await (print_leaders(locks.make_election(a.key)) || watch_for_outage(locks, a) ||
                  s->stop_signals.async_wait(asio::use_awaitable));
    int code = 0;
    if (outcome.index() == 0) {
        say("cannot follow election " + quoted(a.key) + ": " + std::get<0>(outcome).message());
        code = internal_error;
    } else if (outcome.index() == 1) {
        const redlock::report& r = std::get<1>(outcome);
        if (!a.quiet) {
            say("cannot follow election " + quoted(a.key) + ": no majority of the " +
                std::to_string(r.nodes.size()) + " node(s) answered for " +
                format_duration(2 * outage_span(a)) + " (" + counts(r) + ")");
        }
        if (a.verbose) {
            print_report(r);
        }
        code = nodes_unavailable;
    } else {
        code = stopped_by(std::get<2>(outcome));
    }
    co_await shut_down(*s, locks);
    co_return code;
}

// ---- the candidate

// An election's options from the command line: the wait is the campaign's (none for -n but
// its first attempt); the library turns fairness, fencing and the watchdog on.
redlock::options election_options(const run_args& a)
{
    redlock::options opts;
    opts.expiry = a.expiry;
    opts.wait = a.wait;
    return opts;
}

asio::awaitable<acquired> campaign_for(redlock::election e, std::string proposal)
{
    co_return co_await e.async_campaign(std::move(proposal), asio::as_tuple(asio::use_awaitable));
}

// Says why the campaign ended without leading.
void report_defeat(const run_args& a, const wait_result& w, steady::time_point asked)
{
    const std::string waited =
        " (after " + std::to_string(ms_between(asked, steady::now())) + " ms)";
    if (!nodes_at_fault(w.ec, w.r)) {
        say("did not lead " + quoted(a.key) + waited +
            ": another candidate leads or waits ahead (" + counts(w.r) + ")");
    } else if (w.ec == redlock::error::failed) {
        say("could not campaign for " + quoted(a.key) + waited + ": no majority of the " +
            std::to_string(a.nodes.nodes.size()) + " node(s) " +
            (outage(w.r) ? "answered" : "granted it") + " (" + counts(w.r) + ")" +
            (a.verbose ? "" : "; --verbose shows each node's answer"));
    } else {
        // Misconfigured nodes: each node's cause, even without --verbose, says what to fix.
        say("could not campaign for " + quoted(a.key) + ": " + w.ec.message());
        if (!a.verbose) {
            print_report(w.r);
        }
    }
    if (a.verbose) {
        print_report(w.r);
    }
}

// Without a command: leads until a signal, then resigns; or until the leadership is lost.
asio::awaitable<int> lead_until_signal(session& s, redlock::guard& g)
{
    using namespace asio::experimental::awaitable_operators;
    auto outcome = co_await (s.stop_signals.async_wait(asio::use_awaitable) ||
                             g.async_wait_lost(asio::as_tuple(asio::use_awaitable)));
    if (outcome.index() == 1) {
        say(s.what + " lost");
        if (s.a.verbose) {
            print_report(g.last_report());
        }
        co_await g.async_release(asio::as_tuple(asio::use_awaitable));  // what is left of it
        co_return lost_exit;
    }
    const int signo = std::get<0>(outcome);
    auto [resigned] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
    if (s.a.verbose) {
        say(signal_name(signo) + ": " +
            (resigned ? "resigning " + quoted(s.a.key) + ": " + resigned.message()
                      : "resigned " + quoted(s.a.key)));
    } else if (resigned == redlock::error::not_held) {
        say("warning: on " + signal_name(signo) + ", " + s.what +
            " was no longer held on a majority of the nodes (it expired or was taken over)");
    }
    co_return stopped_by(signo);
}

// Leads: runs the command with its term in REDLOCK_TERM, or without one waits for a signal.
asio::awaitable<int> lead(std::shared_ptr<session> s, redlock::guard& g,
                          const std::set<int>& inherited)
{
    if (s->a.command.empty()) {
        co_return co_await lead_until_signal(*s, g);
    }
    const std::vector<std::string> env{"REDLOCK_TERM=" + std::to_string(g.fencing_token())};
    co_return co_await run_while_held(std::move(s), g, inherited, env);
}

void say_leading(const session& s, const redlock::guard& g)
{
    const run_args& a = s.a;
    say("leading " + quoted(a.key) + " in term " + std::to_string(g.fencing_token()) +
        ", published on " + std::to_string(g.last_report().count(redlock::node_status::ok)) +
        " of " + std::to_string(a.nodes.nodes.size()) + " node(s); extending it every " +
        format_duration(a.expiry / 3) +
        (a.command.empty() ? " until SIGINT or SIGTERM" : " while " + s.command() + " runs"));
}

asio::awaitable<int> campaign(std::shared_ptr<session> s, redlock::client& locks,
                              const std::set<int>& inherited, std::string proposal)
{
    using namespace asio::experimental::awaitable_operators;
    const run_args& a = s->a;
    const auto asked = steady::now();
    if (a.verbose) {
        say("campaigning for " + quoted(a.key) + " on " + std::to_string(a.nodes.nodes.size()) +
            " node(s), " +
            (a.wait ? "waiting up to " + format_duration(*a.wait) : "waiting forever"));
    }
    redlock::election e = locks.make_election(a.key, election_options(a));
    // A signal before the leadership cancels the campaign, which leaves the queue.
    auto outcome = co_await (wait_beside_outage(locks, a, campaign_for(e, std::move(proposal))) ||
                             s->stop_signals.async_wait(asio::use_awaitable));
    if (outcome.index() == 1) {
        const int signo = std::get<1>(outcome);
        say("interrupted by " + signal_name(signo) + " while campaigning for " + quoted(a.key));
        co_await shut_down(*s, locks);
        co_return 128 + signo;
    }
    wait_result w = std::get<0>(std::move(outcome));
    if (w.ec && !a.quiet) {
        report_defeat(a, w, asked);
    }
    int code = w.ec ? failure_status(w.ec, w.r, a) : 0;
    if (!w.ec) {
        if (a.verbose) {
            say_leading(*s, w.g);
        }
        code = co_await lead(s, w.g, inherited);
    }
    co_await shut_down(*s, locks);
    co_return code;
}

}  // namespace

elect_args parse_elect_args(int argc, char** argv, int first)
{
    elect_args e;
    elect_choices c;
    arg_scanner args(argc, argv, first);
    scan(args, e, c);
    if (e.help) {
        return e;
    }
    while (args.more()) {
        e.run.command.emplace_back(args.take());
    }
    finish_elect_args(e, c);
    return e;
}

int elect_command(const elect_args& e)
{
    const run_args& a = e.run;
    if (e.listen) {
        return run_session(a, "election " + quoted(a.key), "elect",
                           [](std::shared_ptr<session> s, redlock::client& locks,
                              const std::set<int>&) { return listen(std::move(s), locks); });
    }
    return run_session(
        a, "leadership of " + quoted(a.key), "elect",
        [&e](std::shared_ptr<session> s, redlock::client& locks, const std::set<int>& inherited) {
            return campaign(std::move(s), locks, inherited, e.proposal);
        });
}

}  // namespace redlock_cli
