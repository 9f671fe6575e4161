// SPDX-License-Identifier: BSL-1.0
// libFuzzer target: a redlock::client against an in-process fake server whose replies are
// the fuzz input, over a unix domain socket.
//
// Input: byte 0 picks a mode (its low 3 bits), the rest is what the server answers: its
// first reply to the first command, the next to the next, and whatever cannot be decoded
// (incomplete or malformed) to the command after the last complete reply.
// - 0 to 5 (close): then the server closes its side of the connection;
// - 6 (keep open): the server keeps the connection open, so requests without an answer end
//   at their per-node deadline (1 ms);
// - 7 (pub/sub): the lock connection answers every SET with nil (taken), and the input goes
//   to the wake-up subscriber's connection instead, after its SUBSCRIBE, then closes.
//
// Each input gets a fresh io_context and client and runs try_acquire, then, if it succeeds,
// valid, extend and release (pub/sub: acquire with 2 tries), within a 5 s wall-clock bound.
// Invariants:
// - no crash, no sanitizer report, no unbounded allocation, no hang;
// - every operation completes with an error its documentation allows;
// - the report has one node, and error and timed-out outcomes come with a detail and a
//   redlock.node code;
// - with the connection closed after the answers, each operation's outcome is the one the
//   answers dictate in order, decoded independently here. A script's first use on a
//   connection goes as EVAL (which a real server never answers NOSCRIPT), so a NOSCRIPT
//   answer to extend's or release's script is an error like any other.

#include <redlock/redlock.hpp>

#include "core/error_reply.hpp"
#include "resp/resp.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace resp = redlock::detail::resp;
using local = asio::local::stream_protocol;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::node_status;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::string_view owner = "fuzz-owner";

std::string socket_path;

[[noreturn]] void fail(const std::string& what)
{
    std::fprintf(stderr, "invariant violated: %s\n", what.c_str());
    std::abort();
}

void check(bool ok, const std::string& what)
{
    if (!ok) {
        fail(what);
    }
}

// --- The fake server --------------------------------------------------------------------

// Complete commands at the front of `buf` (arrays of bulk strings); removes them and returns
// their names. Stops at anything incomplete or malformed.
std::vector<std::string> take_commands(std::string& buf)
{
    std::vector<std::string> names;
    std::size_t pos = 0;
    for (;;) {
        std::size_t p = pos;
        auto number = [&](char prefix, long& n) {
            if (p >= buf.size() || buf[p] != prefix) {
                return false;
            }
            auto eol = buf.find("\r\n", p);
            if (eol == std::string::npos) {
                return false;
            }
            n = std::strtol(buf.c_str() + p + 1, nullptr, 10);
            p = eol + 2;
            return n >= 0;
        };
        long count = 0;
        if (!number('*', count)) {
            break;
        }
        std::string name;
        bool complete = true;
        for (long i = 0; i < count && complete; ++i) {
            long len = 0;
            if (!number('$', len) || buf.size() - p < static_cast<std::size_t>(len) + 2) {
                complete = false;
                break;
            }
            if (i == 0) {
                name = buf.substr(p, static_cast<std::size_t>(len));
            }
            p += static_cast<std::size_t>(len) + 2;
        }
        if (!complete) {
            break;
        }
        names.push_back(std::move(name));
        pos = p;
    }
    buf.erase(0, pos);
    return names;
}

asio::awaitable<void> drain(local::socket& s)
{
    std::array<char, 4096> buf;
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), use_tuple);
        if (ec) {
            co_return;
        }
    }
}

// `answer` cut into the replies an independent decoder finds, in order, and then what is
// left (incomplete or malformed bytes; possibly empty).
std::vector<std::string> reply_segments(const std::string& answer)
{
    std::vector<std::string> segments;
    resp::decoder d;
    d.feed(answer.data(), answer.size());
    std::size_t start = 0;
    while (d.next()) {
        segments.push_back(answer.substr(start, d.consumed() - start));
        start = d.consumed();
    }
    segments.push_back(answer.substr(start));
    return segments;
}

// Answers each command with the next segment, as Redis answers one reply per command (the
// client refuses bytes that no request is owed), then closes its side or keeps it open.
asio::awaitable<void> answer_in_turn(local::socket s, std::vector<std::string> segments,
                                     bool keep_open)
{
    std::string pending;
    std::array<char, 4096> buf;
    std::size_t next = 0;
    while (next < segments.size()) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), use_tuple);
        if (ec) {
            co_return;
        }
        pending.append(buf.data(), n);
        std::string out;
        for (std::size_t commands = take_commands(pending).size();
             commands > 0 && next < segments.size(); --commands) {
            out += segments[next++];
        }
        auto [wec, written] = co_await asio::async_write(s, asio::buffer(out), use_tuple);
        if (wec) {
            co_return;
        }
    }
    if (!keep_open) {
        error_code ignored;
        s.shutdown(local::socket::shutdown_send, ignored);
    }
    co_await drain(s);
}

// The lock connection in pub/sub mode: every key is taken by someone else.
asio::awaitable<void> always_taken(local::socket s)
{
    std::string pending;
    std::array<char, 4096> buf;
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), use_tuple);
        if (ec) {
            co_return;
        }
        pending.append(buf.data(), n);
        std::string out;
        for (const std::string& name : take_commands(pending)) {
            out += name == "SET" ? "$-1\r\n" : ":-1\r\n";
        }
        auto [wec, written] = co_await asio::async_write(s, asio::buffer(out), use_tuple);
        if (wec) {
            co_return;
        }
    }
}

asio::awaitable<void> serve(local::acceptor& acceptor, std::string answer, bool keep_open,
                            bool pubsub)
{
    for (int index = 0;; ++index) {
        auto [ec, s] = co_await acceptor.async_accept(use_tuple);
        if (ec) {
            co_return;
        }
        auto ex = acceptor.get_executor();
        if (pubsub && index == 0) {
            asio::co_spawn(ex, always_taken(std::move(s)), asio::detached);
        } else if (index == (pubsub ? 1 : 0)) {
            asio::co_spawn(ex, answer_in_turn(std::move(s), reply_segments(answer), keep_open),
                           asio::detached);
        }
        // Any further connection is closed at once (the client's back-off is longer than a
        // run, so there should be none).
    }
}

// --- The oracle ---------------------------------------------------------------------------

// The replies in `wire`, in order, as an independent decoder sees them.
struct reply_stream
{
    std::vector<resp::reply> replies;
    std::size_t next = 0;
    bool dead = false;

    std::optional<resp::reply> take()
    {
        if (dead || next >= replies.size()) {
            dead = true;
            return std::nullopt;
        }
        return replies[next++];
    }
};

node_status set_status(const std::optional<resp::reply>& r)
{
    if (!r) {
        return node_status::error;
    }
    if (r->type == resp::kind::simple_string && r->text == "OK") {
        return node_status::ok;
    }
    return r->type == resp::kind::nil ? node_status::taken : node_status::error;
}

node_status script_status(const std::optional<resp::reply>& r)
{
    if (!r || r->type != resp::kind::integer) {
        return node_status::error;
    }
    switch (r->integer) {
        case 1:
            return node_status::ok;
        case 0:
            return node_status::missing;
        case -1:
            return node_status::taken;
        default:
            return node_status::error;
    }
}

node_status get_status(const std::optional<resp::reply>& r)
{
    if (!r) {
        return node_status::error;
    }
    if (r->type == resp::kind::nil) {
        return node_status::missing;
    }
    if (r->type == resp::kind::bulk_string) {
        return r->text == owner ? node_status::ok : node_status::taken;
    }
    return node_status::error;
}

// --- The client side ------------------------------------------------------------------

struct step
{
    bool ran = false;
    error_code ec;
    bool held = false;
    redlock::report report;
};

struct steps
{
    step acquire, valid, extend, release;
};

asio::awaitable<void> run_ops(redlock::mutex m, bool once, steps& out)
{
    std::tuple<error_code, redlock::guard> acquired;
    if (once) {
        acquired = co_await m.async_try_acquire(use_tuple);
    } else {
        acquired = co_await m.async_acquire(use_tuple);
    }
    auto& [ec, g] = acquired;
    out.acquire = {true, ec, false, g.last_report()};
    if (ec) {
        co_return;
    }
    auto [vec, held] = co_await g.async_valid(use_tuple);
    out.valid = {true, vec, held, g.last_report()};
    auto [xec] = co_await g.async_extend(use_tuple);
    out.extend = {true, xec, false, g.last_report()};
    auto [rec] = co_await g.async_release(use_tuple);
    out.release = {true, rec, false, g.last_report()};
}

std::string show(const step& s)
{
    return s.ec.message() + ": " + s.report.to_string();
}

void check_report(const step& s, const char* what)
{
    if (!s.ran) {
        return;
    }
    check(s.report.nodes.size() == 1, std::string(what) + ": report without its node");
    const redlock::node_outcome& o = s.report.nodes[0];
    const bool failure = o.status == node_status::error || o.status == node_status::timed_out;
    check(failure == !o.detail.empty(),
          std::string(what) + ": detail and status disagree: " + s.report.to_string());
    const bool caused = o.code.category() == redlock::node_error_category();
    check(caused == (failure || o.status == node_status::abandoned),
          std::string(what) + ": code and status disagree: " + s.report.to_string());
}

void expect_status(const step& s, node_status expected, const char* what)
{
    check(s.ran && s.report.nodes.size() == 1 && s.report.nodes[0].status == expected,
          std::string(what) + ": expected '" + std::string(redlock::to_string(expected)) +
              "', got " + show(s));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    socket_path = "/tmp/redlock-fuzz-" + std::to_string(::getpid()) + ".sock";
    std::atexit([] { ::unlink(socket_path.c_str()); });
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size < 1) {
        return 0;
    }
    const bool keep_open = (data[0] & 7) == 6;
    const bool pubsub = (data[0] & 7) == 7;
    const std::string answer(reinterpret_cast<const char*>(data + 1), size - 1);

    steps out;
    {
        asio::io_context io;
        ::unlink(socket_path.c_str());
        local::acceptor acceptor(io, local::endpoint(socket_path));
        asio::co_spawn(io, serve(acceptor, answer, keep_open, pubsub), asio::detached);

        redlock::config cfg;
        redlock::node n;
        n.host.clear();
        n.unix_path = socket_path;
        cfg.nodes = {n};
        cfg.connect_timeout = 1s;
        // No reconnect within a run: after a failure, requests fail at once.
        cfg.reconnect_backoff_min = 10s;
        cfg.reconnect_backoff_max = 10s;
        redlock::client client(io.get_executor(), cfg);
        auto m = client.make_mutex("k", {.expiry = 10s,
                                         .tries = pubsub ? 2 : 1,
                                         .retry_delay = 1ms,
                                         // Per-node deadline: 1 ms with keep-open, 1 s otherwise.
                                         .timeout_factor = keep_open ? 0.0001 : 0.1,
                                         .value = std::string(owner),
                                         .wake_on_release = pubsub});

        bool done = false;
        asio::co_spawn(io, run_ops(m, !pubsub, out), [&](std::exception_ptr e) {
            done = true;
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    fail(std::string("an operation threw: ") + x.what());
                }
            }
        });
        const auto limit = std::chrono::steady_clock::now() + 5s;
        while (!done && std::chrono::steady_clock::now() < limit) {
            io.run_one_for(limit - std::chrono::steady_clock::now());
        }
        check(done, "operations did not complete within 5 s");
        if (pubsub) {
            io.run_for(500us);  // let the subscriber read what it was sent
        }
    }

    // Documented outcomes.
    const error_code acquire = out.acquire.ec;
    check(!acquire || acquire == redlock::error::taken || acquire == redlock::error::failed ||
              acquire == redlock::error::misconfigured,
          "acquire: undocumented error " + acquire.message());
    if (out.valid.ran) {
        check(!out.valid.ec, "valid: error " + out.valid.ec.message());
    }
    if (out.extend.ran) {
        check(!out.extend.ec || out.extend.ec == redlock::error::extend_failed ||
                  out.extend.ec == redlock::error::expired,
              "extend: undocumented error " + out.extend.ec.message());
    }
    if (out.release.ran) {
        check(!out.release.ec || out.release.ec == redlock::error::not_held,
              "release: undocumented error " + out.release.ec.message());
    }
    check_report(out.acquire, "acquire");
    check_report(out.valid, "valid");
    check_report(out.extend, "extend");
    check_report(out.release, "release");

    if (pubsub) {
        check(acquire == redlock::error::taken, "pub/sub: acquire should find the key taken");
        return 0;
    }
    if (keep_open) {
        return 0;
    }

    // Outcomes the answers dictate, in order.
    reply_stream replies;
    {
        resp::decoder d;
        d.feed(answer.data(), answer.size());
        while (auto r = d.next()) {
            replies.replies.push_back(std::move(*r));
        }
    }
    const std::optional<resp::reply> set_reply = replies.take();
    const node_status acquired = set_status(set_reply);
    expect_status(out.acquire, acquired, "acquire");
    if (acquired != node_status::ok) {
        // An error reply that names a misconfiguration (the documented table of server words,
        // e.g. NOAUTH or READONLY) ends the acquire with misconfigured; any other failure is
        // failed.
        const bool misconfigured = set_reply && set_reply->is_error() &&
                                   redlock::detail::is_misconfiguration(
                                       redlock::detail::classify_error_reply(set_reply->text));
        check(acquire == (acquired == node_status::taken ? redlock::error::taken
                          : misconfigured                ? redlock::error::misconfigured
                                                         : redlock::error::failed),
              "acquire: wrong error for the reply: " + show(out.acquire));
        return 0;
    }
    check(!acquire, "acquire: the reply was +OK but " + show(out.acquire));

    const node_status valid = get_status(replies.take());
    expect_status(out.valid, valid, "valid");
    check(out.valid.held == (valid == node_status::ok), "valid: wrong answer " + show(out.valid));

    const node_status extended = script_status(replies.take());
    expect_status(out.extend, extended, "extend");
    check(!out.extend.ec == (extended == node_status::ok),
          "extend: wrong error for the reply: " + show(out.extend));

    const node_status released = script_status(replies.take());
    expect_status(out.release, released, "release");
    check(!out.release.ec == (released == node_status::ok),
          "release: wrong error for the reply: " + show(out.release));
    return 0;
}
