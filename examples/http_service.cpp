// SPDX-License-Identifier: BSL-1.0
// http_service: an HTTP/1.1 service (Boost.Beast, C++20 coroutines) whose handler takes a
// distributed lock per resource, and gives the lock up as soon as nobody wants the answer. Its
// instances elect a leader among themselves, and it exports its locks' metrics to Prometheus.
//
//   http_service --listen 127.0.0.1:0 --nodes URL,URL,... [--request-timeout 2s]
//                [--election NAME]
//
// Prints "listening on HOST:PORT" on stdout once bound (port 0: the kernel picks one), then
// serves, one coroutine per connection, on a single thread:
//
//   POST /reserve/<resource>?work_ms=N
//       Takes the lock "resource:<resource>" (redlock::with_lock, watchdog on), does N ms of
//       "work" (a timer) while holding it, releases it and answers
//         200 {"resource":..., "holder":..., "waited_ms":..., "worked_ms":...}
//       waited_ms runs from the request's arrival to the lock's acquisition; holder is the
//       lock's owner value. Other outcomes:
//         503 {"error":"timed out waiting for the lock"}  not acquired within --request-timeout
//         409 the lock stayed taken through every try      500 the lock was lost during the work
//         503 the Redis nodes gave no quorum, or the service is shutting down
//       If the client disconnects while the request waits or works, the handler is cancelled:
//       a pending acquire is abandoned (it deletes whatever it had set), a running work is
//       stopped and the lock released. Nothing is answered; the log says "client gone".
//   GET /healthz  ->  200 {"status":"ok"}
//   GET /leader   ->  200 {"leader":"HOST:PORT","term":N,"self":true|false}
//       The instance that leads the election --election (default "http_service"), as a quorum
//       of the nodes names it: every instance campaigns from its start with its own address,
//       and the first to campaign leads until it stops (its successor is the next in line).
//       404 {"error":"no leader"} between two leaders; 503 when no quorum answered.
//   GET /metrics  ->  200, the Prometheus text format: the lock events of every lock this
//       instance took (redlock::prometheus_metrics: redlock_acquire_seconds,
//       redlock_held_seconds, ...) and its nodes' request counters.
//
// --request-timeout (default 2s; "1500ms", "1.5s", "1m", or plain seconds) bounds how long a
// request may wait for its lock; once the lock is held, the work runs to its end.
// One line per request goes to stderr: method, target, status, milliseconds, and why.
// SIGINT/SIGTERM: stop accepting, cancel the handlers in flight (their clients get 503
// "shutting down"), wait for the releases (client::async_shutdown), exit 0.
// Exit status 1 when the address cannot be bound, 2 for bad arguments.

#include <redlock/prometheus.hpp>
#include <redlock/redlock.hpp>

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/system/system_error.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::experimental::make_parallel_group;
using asio::experimental::wait_for_one;
using namespace std::chrono_literals;

namespace {

using steady = std::chrono::steady_clock;

constexpr auto idle_timeout = 30s;         // a kept-alive connection with no new request
constexpr auto write_timeout = 5s;         // sending one response
constexpr auto drain_timeout = 1500ms;     // on SIGTERM: for the connections to finish
constexpr auto shutdown_timeout = 1500ms;  // on SIGTERM: for the lock releases to finish
constexpr long max_work_ms = 600'000;
constexpr std::size_t max_resource_length = 128;
constexpr std::size_t max_pipelined_bytes = 64 * 1024;

long long ms(steady::duration d)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// ---- command line ----

struct settings
{
    tcp::endpoint listen;
    std::vector<std::string> nodes;
    std::chrono::milliseconds request_timeout{2000};
    std::string election = "http_service";
};

[[noreturn]] void usage(const std::string& problem)
{
    std::cerr << "http_service: " << problem << "\n"
              << "usage: http_service --listen HOST:PORT --nodes URL,URL,... "
                 "[--request-timeout 2s] [--election NAME]\n"
                 "  e.g. http_service --listen 127.0.0.1:0 --nodes "
                 "redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003\n";
    std::exit(2);
}

std::optional<long> parse_number(std::string_view text)
{
    long v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size()) {
        return std::nullopt;
    }
    return v;
}

// "1500ms", "2s", "1.5s", "1m", or a plain number of seconds; at least 1 ms, at most a day.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text)
{
    double scale = 1000;
    if (text.ends_with("ms")) {
        text.remove_suffix(2);
        scale = 1;
    } else if (text.ends_with("s")) {
        text.remove_suffix(1);
    } else if (text.ends_with("m")) {
        text.remove_suffix(1);
        scale = 60'000;
    }
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || !(v * scale >= 1) ||
        v * scale > 86'400'000) {
        return std::nullopt;
    }
    return std::chrono::milliseconds(std::llround(v * scale));
}

// "127.0.0.1:8080", "[::1]:0".
std::optional<tcp::endpoint> parse_endpoint(std::string_view text)
{
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    auto port = parse_number(text.substr(colon + 1));
    boost::system::error_code ec;
    auto address = asio::ip::make_address(std::string(host), ec);
    if (ec || !port || *port < 0 || *port > 65535) {
        return std::nullopt;
    }
    return tcp::endpoint(address, static_cast<unsigned short>(*port));
}

settings parse_args(int argc, char** argv)
{
    settings s;
    bool have_listen = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            usage("serves POST /reserve/<resource>?work_ms=N under a lock per resource");
        }
        if (i + 1 >= argc) {
            usage(std::string(arg) + " needs a value");
        }
        const std::string_view value = argv[++i];
        if (arg == "--listen") {
            auto ep = parse_endpoint(value);
            if (!ep) {
                usage("--listen: '" + std::string(value) + "' is not ADDRESS:PORT");
            }
            s.listen = *ep;
            have_listen = true;
        } else if (arg == "--nodes") {
            s.nodes.clear();
            std::string_view rest = value;
            while (!rest.empty()) {
                const auto comma = rest.find(',');
                if (comma != 0) {
                    s.nodes.emplace_back(rest.substr(0, comma));
                }
                rest =
                    comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
            }
        } else if (arg == "--request-timeout") {
            auto d = parse_duration(value);
            if (!d) {
                usage("--request-timeout: '" + std::string(value) +
                      "' is not a positive duration such as 2s or 1500ms");
            }
            s.request_timeout = *d;
        } else if (arg == "--election") {
            if (value.empty()) {
                usage("--election: the name is empty");
            }
            s.election = std::string(value);
        } else {
            usage("unknown argument '" + std::string(arg) + "'");
        }
    }
    if (!have_listen) {
        usage("--listen is required");
    }
    if (s.nodes.empty()) {
        usage("--nodes is required");
    }
    return s;
}

// ---- responses ----

// A multi-line text (a per-node report) for a one-line log entry.
std::string one_line(std::string text)
{
    while (!text.empty() && text.back() == '\n') {
        text.pop_back();
    }
    for (auto pos = text.find('\n'); pos != std::string::npos; pos = text.find('\n', pos)) {
        text.replace(pos, 1, "; ");
    }
    return text;
}

std::string json_string(std::string_view text)
{
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + '"';
}

// A response before it is serialized, and a note for the log line.
struct reply
{
    http::status status = http::status::internal_server_error;
    std::string body;  // JSON, unless content_type says otherwise
    std::string note;
    std::string_view content_type = "application/json";
};

reply error_reply(http::status status, std::string_view message, std::string note = {})
{
    return {status, "{\"error\":" + json_string(message) + "}", std::move(note)};
}

// ---- the server's shared state (one thread: no locking) ----

struct server
{
    server(asio::io_context& io, redlock::client& l, const settings& s,
           const prometheus::Registry& r)
        : ex(io.get_executor()),
          locks(l),
          request_timeout(s.request_timeout),
          election(l.make_election(s.election)),
          registry(r),
          acceptor(io),
          drained(io),
          campaign_ended(io)
    {
    }

    asio::any_io_executor ex;
    redlock::client& locks;
    std::chrono::milliseconds request_timeout;
    redlock::election election;
    std::string address;  // this instance's HOST:PORT, its value in the election
    const prometheus::Registry& registry;
    // Ends the campaign (or the leadership) when the service stops.
    asio::cancellation_signal stop_campaign;
    tcp::acceptor acceptor;
    bool stopping = false;
    // One stop signal per connection: SIGTERM emits them all (terminal cancellation).
    std::map<std::uint64_t, asio::cancellation_signal> sessions;
    std::uint64_t next_session = 0;
    // Cancelled when the last connection has ended while stopping.
    asio::steady_timer drained;
    // Cancelled when the campaign has ended, its leadership's release scheduled.
    asio::steady_timer campaign_ended;
    bool campaign_over = false;
};

// Whether a reserve request got its lock; the connection reads it for the log when the request
// ends without an answer, and the deadline to know whether it still applies.
struct progress
{
    bool acquired = false;
};

// What the work under the lock reports.
struct work_report
{
    std::string holder;
    long long waited_ms = 0;
    long long worked_ms = 0;
};

// ---- POST /reserve/<resource> ----

// Completes when `deadline` passes while the lock is still being waited for. Once the lock is
// held the deadline no longer applies: it then waits until the race it is in cancels it.
asio::awaitable<void> lock_deadline(steady::time_point deadline, const progress& p)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
    co_await timer.async_wait(asio::use_awaitable);  // throws operation_aborted when cancelled
    if (!p.acquired) {
        co_return;
    }
    timer.expires_at(steady::time_point::max());
    co_await timer.async_wait(asio::use_awaitable);
}

// The handler. Cancelling its coroutine (terminal) cancels the acquire or the work, whichever
// is pending; the guard is released on every path (by with_lock, or by the guard's
// destructor when with_lock is cancelled).
asio::awaitable<reply> reserve(server& srv, std::string resource,
                               std::chrono::milliseconds work_time, steady::time_point received,
                               progress& p)
{
    redlock::mutex lock = srv.locks.make_mutex(
        "resource:" + resource,
        {.expiry = 5s, .tries = 1000, .retry_delay = 20ms, .auto_extend = true});

    auto work = [&](redlock::guard& g) -> asio::awaitable<work_report> {
        p.acquired = true;
        work_report r{g.value(), ms(steady::now() - received), 0};
        const auto start = steady::now();
        asio::steady_timer step(co_await asio::this_coro::executor, work_time);
        co_await step.async_wait(asio::use_awaitable);  // stands in for the real work's I/O
        r.worked_ms = ms(steady::now() - start);
        co_return r;
    };

    // with_lock races the deadline; the loser is cancelled. A cancelled with_lock either
    // abandons its acquire (which deletes what it had set) or cancels the work and leaves the
    // release to the guard's destructor.
    auto ex = co_await asio::this_coro::executor;
    auto [order, lock_failure, result, deadline_failure] =
        co_await make_parallel_group(
            asio::co_spawn(ex, redlock::with_lock(lock, work), asio::deferred),
            asio::co_spawn(ex, lock_deadline(received + srv.request_timeout, p), asio::deferred))
            .async_wait(wait_for_one(), asio::use_awaitable);

    if (order[0] == 1 && !deadline_failure) {
        co_return error_reply(http::status::service_unavailable, "timed out waiting for the lock",
                              "deadline");
    }
    if (!lock_failure) {
        co_return reply{http::status::ok,
                        "{\"resource\":" + json_string(resource) +
                            ",\"holder\":" + json_string(result.holder) +
                            ",\"waited_ms\":" + std::to_string(result.waited_ms) +
                            ",\"worked_ms\":" + std::to_string(result.worked_ms) + "}",
                        {}};
    }
    try {
        std::rethrow_exception(lock_failure);
    } catch (const boost::system::system_error& e) {
        const auto code = e.code();
        if (code == redlock::error::taken) {
            co_return error_reply(http::status::conflict, "the resource stayed locked",
                                  "taken after " + std::to_string(lock.options().tries) + " tries");
        }
        if (code == redlock::error::lost) {
            co_return error_reply(http::status::internal_server_error,
                                  "the lock was lost during the work", "lost");
        }
        if (code == redlock::error::failed) {
            co_return error_reply(http::status::service_unavailable,
                                  "the lock service is unavailable",
                                  one_line(lock.last_report().to_string()));
        }
        if (code == redlock::error::shut_down) {
            co_return error_reply(http::status::service_unavailable, "shutting down", "shut down");
        }
        throw;  // operation_aborted: this handler was cancelled; the connection knows why
    }
}

// Completes when the client closes its end (EOF) or the connection fails: the request's answer
// is no longer wanted. Bytes that arrive meanwhile (a pipelined next request) are kept in
// `buffer` for the next read.
asio::awaitable<void> client_gone(beast::tcp_stream& stream, beast::flat_buffer& buffer)
{
    while (buffer.size() < max_pipelined_bytes) {
        auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096),
                                                       asio::as_tuple(asio::use_awaitable));
        if (ec) {
            co_return;
        }
        buffer.commit(n);
    }
    // Too much pipelined input to keep watching; wait until the race ends.
    asio::steady_timer forever(stream.get_executor(), steady::time_point::max());
    co_await forever.async_wait(asio::use_awaitable);
}

// ---- GET /metrics, GET /leader ----

reply metrics_reply(const server& srv)
{
    return {http::status::ok,
            prometheus::TextSerializer().Serialize(srv.registry.Collect()),
            {},
            "text/plain; version=0.0.4"};
}

asio::awaitable<reply> leader_reply(server& srv)
{
    auto [ec, now] = co_await srv.election.async_leader(asio::as_tuple(asio::use_awaitable));
    if (ec) {
        co_return error_reply(http::status::service_unavailable, "the lock service is unavailable",
                              "leader: " + ec.message());
    }
    if (!now) {
        co_return error_reply(http::status::not_found, "no leader");
    }
    co_return reply{http::status::ok,
                    "{\"leader\":" + json_string(now->value) +
                        ",\"term\":" + std::to_string(now->term) +
                        ",\"self\":" + (now->value == srv.address ? "true" : "false") + "}",
                    {}};
}

// Campaigns until the service stops, and again whenever a leadership is lost (its nodes out of
// reach past its validity). Stopping cancels the campaign, or ends the leadership: the guard's
// destructor resigns, and client::async_shutdown waits for that.
asio::awaitable<void> lead(server& srv)
{
    while (!srv.stopping) {
        auto [ec, leadership] =
            co_await srv.election.async_campaign(srv.address, asio::as_tuple(asio::use_awaitable));
        if (srv.stopping || ec == asio::error::operation_aborted) {
            co_return;
        }
        if (ec) {
            std::cerr << "election: " << ec.message() << "; campaigning again in 1 s\n";
            asio::steady_timer pause(srv.ex, 1s);
            co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
            continue;
        }
        std::cerr << "election " << srv.election.name() << ": leading, term "
                  << leadership.fencing_token() << "\n";
        auto [lost] = co_await leadership.async_wait_lost(asio::as_tuple(asio::use_awaitable));
        if (srv.stopping || lost == asio::error::operation_aborted) {
            co_return;
        }
        std::cerr << "election: leadership ended (" << lost.message() << "); campaigning again\n";
    }
}

// ---- a connection ----

struct route
{
    enum class kind { healthz, metrics, leader, reserve, other } what = kind::other;
    reply immediate;  // for healthz and errors
    std::string resource;
    std::chrono::milliseconds work_time{0};
};

bool valid_resource(std::string_view name)
{
    if (name.empty() || name.size() > max_resource_length) {
        return false;
    }
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == ':' ||
                        c == '~';
        if (!ok) {
            return false;
        }
    }
    return true;
}

route route_request(const http::request<http::string_body>& req)
{
    route r;
    const std::string_view target = req.target();
    const auto question = target.find('?');
    const std::string_view path = target.substr(0, question);
    const std::string_view query =
        question == std::string_view::npos ? std::string_view{} : target.substr(question + 1);

    if (path == "/healthz" || path == "/metrics" || path == "/leader") {
        if (req.method() != http::verb::get) {
            r.immediate = error_reply(http::status::method_not_allowed, "use GET");
            return r;
        }
        r.what = path == "/healthz"   ? route::kind::healthz
                 : path == "/metrics" ? route::kind::metrics
                                      : route::kind::leader;
        r.immediate = {http::status::ok, "{\"status\":\"ok\"}", {}};
        return r;
    }
    constexpr std::string_view prefix = "/reserve/";
    if (!path.starts_with(prefix)) {
        r.immediate = error_reply(http::status::not_found, "no such endpoint");
        return r;
    }
    if (req.method() != http::verb::post) {
        r.immediate = error_reply(http::status::method_not_allowed, "use POST");
        return r;
    }
    const std::string_view resource = path.substr(prefix.size());
    if (!valid_resource(resource)) {
        r.immediate = error_reply(http::status::bad_request,
                                  "the resource name must be 1 to 128 characters of "
                                  "A-Z a-z 0-9 - _ . : ~");
        return r;
    }
    std::string_view rest = query;
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const std::string_view param = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
        if (param.starts_with("work_ms=")) {
            auto v = parse_number(param.substr(8));
            if (!v || *v < 0 || *v > max_work_ms) {
                r.immediate = error_reply(http::status::bad_request,
                                          "work_ms must be a number of milliseconds from 0 to " +
                                              std::to_string(max_work_ms));
                return r;
            }
            r.work_time = std::chrono::milliseconds(*v);
        }
    }
    r.what = route::kind::reserve;
    r.resource = std::string(resource);
    return r;
}

// A request Beast could not parse (not a closed or idle connection).
bool is_malformed(const boost::system::error_code& ec)
{
    return ec.category() == make_error_code(http::error::bad_method).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
}

void log_request(const http::request<http::string_body>& req, int status,
                 steady::time_point received, const std::string& note)
{
    std::string line = std::string(req.method_string()) + ' ' + std::string(req.target()) + ' ' +
                       std::to_string(status) + ' ' + std::to_string(ms(steady::now() - received)) +
                       "ms";
    if (!note.empty()) {
        line += " (" + note + ')';
    }
    std::cerr << line + '\n' << std::flush;
}

asio::awaitable<void> session(server& srv, tcp::socket socket)
{
    // Stopping is handled explicitly below: after a cancellation, the 503 still goes out.
    co_await asio::this_coro::throw_if_cancelled(false);
    auto ex = co_await asio::this_coro::executor;
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;

    for (;;) {
        if (srv.stopping) {
            break;
        }
        http::request_parser<http::string_body> parser;
        parser.body_limit(64 * 1024);
        stream.expires_after(idle_timeout);
        auto [read_error, read_bytes] =
            co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
        if (read_error) {
            if (is_malformed(read_error) && !srv.stopping) {
                std::cerr << "- - 400 0ms (malformed request: " + read_error.message() + ")\n";
                http::response<http::string_body> res{http::status::bad_request, 11};
                res.set(http::field::content_type, "application/json");
                res.body() =
                    error_reply(http::status::bad_request, read_error.message()).body + "\n";
                res.keep_alive(false);
                res.prepare_payload();
                stream.expires_after(write_timeout);
                co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
            }
            break;  // closed by the client, idle, malformed, or stopping
        }
        const auto received = steady::now();
        const http::request<http::string_body> req = parser.release();
        stream.expires_never();  // the handler's own deadlines apply now

        route r = route_request(req);
        reply answer = std::move(r.immediate);
        if (r.what == route::kind::metrics) {
            answer = metrics_reply(srv);
        } else if (r.what == route::kind::leader) {
            answer = co_await leader_reply(srv);
        } else if (r.what == route::kind::reserve && srv.stopping) {
            answer = error_reply(http::status::service_unavailable, "shutting down", "stopping");
        } else if (r.what == route::kind::reserve) {
            // The handler races a read of the socket: if the client goes away first, the handler
            // is cancelled (terminal), and with it the pending acquire or the work.
            progress p;
            auto [order, handler_failure, handled, watch_failure] =
                co_await make_parallel_group(
                    asio::co_spawn(ex, reserve(srv, r.resource, r.work_time, received, p),
                                   asio::deferred),
                    asio::co_spawn(ex, client_gone(stream, buffer), asio::deferred))
                    .async_wait(wait_for_one(), asio::use_awaitable);
            if (order[0] == 0 && !handler_failure) {
                answer = std::move(handled);
            } else if (srv.stopping) {
                co_await asio::this_coro::reset_cancellation_state();
                answer = error_reply(http::status::service_unavailable, "shutting down",
                                     p.acquired ? "stopping: work cancelled, lock released"
                                                : "stopping: acquire cancelled");
            } else if (order[0] == 1) {
                log_request(req, 499, received,
                            p.acquired
                                ? "client gone during the work: cancelled, lock released"
                                : "client gone while waiting for the lock: acquire cancelled");
                break;
            } else {
                std::string what = "unknown error";
                try {
                    std::rethrow_exception(handler_failure);
                } catch (const std::exception& e) {
                    what = e.what();
                }
                answer = error_reply(http::status::internal_server_error, "internal error", what);
            }
        }

        log_request(req, static_cast<int>(answer.status), received, answer.note);
        http::response<http::string_body> res{answer.status, req.version()};
        res.set(http::field::server, "redlock-http-service");
        res.set(http::field::content_type, answer.content_type);
        res.keep_alive(req.keep_alive() && !srv.stopping);
        res.body() = std::move(answer.body) + "\n";
        res.prepare_payload();
        stream.expires_after(write_timeout);
        auto [write_error, written] =
            co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
        if (write_error || !res.keep_alive()) {
            break;
        }
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream.close();
}

void start_session(server& srv, tcp::socket socket)
{
    const std::uint64_t id = srv.next_session++;
    asio::cancellation_signal& stop = srv.sessions[id];
    asio::co_spawn(srv.ex, session(srv, std::move(socket)),
                   asio::bind_cancellation_slot(stop.slot(), [&srv, id](std::exception_ptr e) {
                       if (e) {
                           try {
                               std::rethrow_exception(e);
                           } catch (const std::exception& ex) {
                               std::cerr << "connection failed: " << ex.what() << "\n";
                           }
                       }
                       // Forget the stop signal after this handler has returned: its slot
                       // belongs to the coroutine that is finishing now.
                       asio::post(srv.ex, [&srv, id] {
                           srv.sessions.erase(id);
                           if (srv.stopping && srv.sessions.empty()) {
                               srv.drained.cancel();
                           }
                       });
                   }));
}

asio::awaitable<void> accept_loop(server& srv)
{
    for (;;) {
        auto [ec, socket] = co_await srv.acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
        if (srv.stopping) {
            co_return;
        }
        if (ec) {
            // E.g. out of file descriptors: say so, and do not spin.
            std::cerr << "accept: " << ec.message() << "\n";
            asio::steady_timer pause(srv.ex, 100ms);
            co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
            continue;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        start_session(srv, std::move(socket));
    }
}

// SIGINT/SIGTERM: stop accepting, cancel every connection's handler, let them answer 503, then
// wait for the lock releases the cancelled handlers left to their guards' destructors.
asio::awaitable<void> stop_on_signal(server& srv, asio::io_context& io)
{
    asio::signal_set signals(srv.ex, SIGINT, SIGTERM);
    auto [ec, number] = co_await signals.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) {
        co_return;
    }
    const auto start = steady::now();
    std::cerr << "signal " << number << ": stopping (" << srv.sessions.size()
              << " connection(s) open)\n";
    srv.stopping = true;
    srv.stop_campaign.emit(asio::cancellation_type::terminal);
    boost::system::error_code ignored;
    srv.acceptor.close(ignored);
    for (auto& [id, stop] : srv.sessions) {
        stop.emit(asio::cancellation_type::terminal);
    }
    if (!srv.sessions.empty()) {
        srv.drained.expires_after(drain_timeout);
        co_await srv.drained.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    const bool drained = srv.sessions.empty();
    // client::async_shutdown waits for the releases guards have scheduled, not for guards
    // still alive: the leadership's guard must be gone first.
    if (!srv.campaign_over) {
        srv.campaign_ended.expires_after(drain_timeout);
        co_await srv.campaign_ended.async_wait(asio::as_tuple(asio::use_awaitable));
    }

    asio::steady_timer limit(srv.ex, shutdown_timeout);
    auto [order, shutdown_error, limit_error] =
        co_await make_parallel_group(srv.locks.async_shutdown(asio::deferred),
                                     limit.async_wait(asio::deferred))
            .async_wait(wait_for_one(), asio::use_awaitable);
    if (order[0] == 1 || shutdown_error) {
        std::cerr << "lock client shutdown: "
                  << (order[0] == 1 ? std::string("timed out") : shutdown_error.message())
                  << "; unreleased keys expire by their TTL\n";
    }
    std::cerr << "stopped in " << ms(steady::now() - start) << " ms\n";
    if (!drained) {
        std::cerr << srv.sessions.size() << " connection(s) did not finish; dropping them\n";
        io.stop();
    }
}

}  // namespace

int main(int argc, char** argv)
{
    const settings s = parse_args(argc, argv);

    asio::io_context io;
    // Declared before the client: the observer and the watch must not outlive them.
    prometheus::Registry registry;
    redlock::prometheus_metrics metrics(registry);
    std::optional<redlock::client> locks;
    try {
        redlock::config cfg = redlock::config::from_urls(s.nodes);
        cfg.observer = metrics.observer();
        locks.emplace(io.get_executor(), std::move(cfg));
    } catch (const boost::system::system_error& e) {
        usage(std::string("--nodes: ") + e.what());
    }
    metrics.watch(*locks);

    server srv(io, *locks, s, registry);
    try {
        srv.acceptor.open(s.listen.protocol());
        srv.acceptor.set_option(tcp::acceptor::reuse_address(true));
        srv.acceptor.bind(s.listen);
        srv.acceptor.listen();
    } catch (const boost::system::system_error& e) {
        std::cerr << "http_service: cannot listen on " << s.listen << ": " << e.code().message()
                  << "\n";
        return 1;
    }
    const tcp::endpoint bound = srv.acceptor.local_endpoint();
    std::ostringstream address;
    address << bound;
    srv.address = address.str();
    std::cout << "listening on " << bound << std::endl;
    std::cerr << "http_service: " << s.nodes.size() << " node(s), request timeout "
              << s.request_timeout.count() << " ms\n";

    auto report = [](std::exception_ptr e) {
        if (e) {
            std::rethrow_exception(e);
        }
    };
    asio::co_spawn(io, accept_loop(srv), report);
    asio::co_spawn(io, stop_on_signal(srv, io), report);
    asio::co_spawn(io, lead(srv),
                   asio::bind_cancellation_slot(srv.stop_campaign.slot(),
                                                [&srv, report](std::exception_ptr e) {
                                                    srv.campaign_over = true;
                                                    srv.campaign_ended.cancel();
                                                    report(e);
                                                }));
    try {
        io.run();
    } catch (const std::exception& e) {
        std::cerr << "http_service: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
