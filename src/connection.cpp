#include "detail/connection.hpp"

#include <redlock/error.hpp>

#include "detail/open_stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <array>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;
using generic_socket = asio::generic::stream_protocol::socket;
constexpr auto use_tuple = asio::as_tuple(use_awaitable);

namespace {

std::string millis(std::chrono::microseconds d)
{
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    return std::to_string(ms) + " ms";
}

}  // namespace

struct connection::request
{
    request(const asio::any_io_executor& ex, command c, clock::time_point deadline)
        : payload(std::move(c.payload)), fallback(std::move(c.fallback)), signal(ex, deadline)
    {
    }
    std::string payload;
    std::string fallback;
    // Expires at the request's deadline; cancelled when the outcome is known. One timer
    // is both the deadline and the wake-up.
    asio::steady_timer signal;
    bool done = false;
    bool abandoned = false;
    exec_result result;
};

connection_settings make_connection_settings(const redlock::config& cfg)
{
    connection_settings settings;
    settings.connect_timeout = cfg.connect_timeout;
    settings.backoff_min = cfg.reconnect_backoff_min;
    settings.backoff_max = cfg.reconnect_backoff_max;
    settings.log = cfg.logger;
    if (std::any_of(cfg.nodes.begin(), cfg.nodes.end(), [](const node& n) { return n.tls; })) {
        try {
            settings.tls = make_tls_context(cfg.tls.ca_file, cfg.tls.cert_file, cfg.tls.key_file,
                                            cfg.tls.verify_peer);
        } catch (const std::exception& e) {
            throw boost::system::system_error(make_error_code(error::invalid_argument),
                                              std::string("config.tls: ") + e.what());
        }
        settings.verify_name = cfg.tls.verify_peer;
    }
    return settings;
}

connection::connection(asio::any_io_executor strand, node endpoint, connection_settings settings)
    : strand_(std::move(strand)),
      endpoint_(std::move(endpoint)),
      name_(endpoint_.endpoint()),
      settings_(std::move(settings)),
      socket_(strand_),
      backoff_(settings.backoff_min)
{
}

connection::~connection() = default;

asio::awaitable<exec_result> connection::execute(command cmd, clock::time_point deadline)
{
    ++stats_.requests;
    const auto sent = clock::now();
    exec_result r = co_await exchange(std::move(cmd), deadline);
    switch (r.state) {
        case exec_result::status::replied:
            ++stats_.replies;
            stats_.latency_us +=
                std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - sent).count();
            break;
        case exec_result::status::timed_out:
            ++stats_.timeouts;
            break;
        case exec_result::status::failed:
            ++stats_.errors;
            break;
        case exec_result::status::cancelled:
            ++stats_.abandoned;
            break;
    }
    co_return r;
}

node_counters connection::counters() const
{
    node_counters c;
    c.endpoint = name_;
    c.requests = stats_.requests;
    c.replies = stats_.replies;
    c.errors = stats_.errors;
    c.timeouts = stats_.timeouts;
    c.abandoned = stats_.abandoned;
    c.reconnects = stats_.reconnects;
    c.latency_total = std::chrono::microseconds(stats_.latency_us.load());
    return c;
}

void connection::log(log_level level, const std::string& message) const
{
    if (settings_.log) {
        settings_.log(level, message);
    }
}

asio::awaitable<exec_result> connection::exchange(command cmd, clock::time_point deadline)
{
    if (state_ == state::closed) {
        co_return exec_result{exec_result::status::failed, {}, last_error_};
    }
    if (state_ == state::disconnected) {
        auto now = clock::now();
        if (now < retry_at_) {
            co_return exec_result{
                exec_result::status::failed,
                {},
                last_error_ + "; next connect in " + millis(remaining(retry_at_, now))};
        }
        start_connect();
    }
    auto req = std::make_shared<request>(strand_, std::move(cmd), deadline);
    write_queue_.push_back(req);
    start_writer();

    while (!req->done) {
        auto [ec] = co_await req->signal.async_wait(use_tuple);
        if (req->done) {
            break;
        }
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none) {
            abandon(req);
            co_return exec_result{exec_result::status::cancelled, {}, "cancelled"};
        }
        if (!ec || clock::now() >= deadline) {
            abandon(req);
            // A server that answers nothing in flight is stuck or gone: give up the
            // socket rather than queue behind it forever.
            bool all_abandoned = std::all_of(in_flight_.begin(), in_flight_.end(),
                                             [](const request_ptr& r) { return r->abandoned; });
            if (!in_flight_.empty() && all_abandoned) {
                fail_connection("no reply before the per-node deadline");
            }
            co_return exec_result{
                exec_result::status::timed_out, {}, "no reply before the per-node deadline"};
        }
    }
    co_return std::move(req->result);
}

void connection::close(const std::string& why)
{
    fail_connection(why);
    state_ = state::closed;
}

void connection::start_connect()
{
    state_ = state::connecting;
    asio::co_spawn(
        strand_, [self = shared_from_this(), g = generation_]() { return self->connect_loop(g); },
        asio::detached);
}

asio::awaitable<void> connection::connect_loop(std::uint64_t generation)
{
    auto self = shared_from_this();
    stream fresh(strand_);
    std::string failure = co_await open_stream(fresh, endpoint_, settings_.connect_timeout, true,
                                               settings_.tls.get(), settings_.verify_name);
    if (generation != generation_ || state_ != state::connecting) {
        co_return;  // closed or superseded while connecting
    }
    if (!failure.empty()) {
        fail_connection(failure);
        co_return;
    }
    socket_ = std::move(fresh);
    decoder_.reset();
    state_ = state::connected;
    if (connected_before_) {
        ++stats_.reconnects;
        log(log_level::info, "reconnected to " + name_);
    } else {
        log(log_level::debug, "connected to " + name_);
    }
    connected_before_ = true;
    backoff_ = settings_.backoff_min;
    start_writer();
}

void connection::start_writer()
{
    if (writing_ || state_ != state::connected || write_queue_.empty()) {
        return;
    }
    writing_ = true;
    asio::co_spawn(
        strand_, [self = shared_from_this(), g = generation_]() { return self->write_loop(g); },
        asio::detached);
}

asio::awaitable<void> connection::write_loop(std::uint64_t generation)
{
    // Everything queued while the previous write was under way goes out in one write.
    std::string batch;
    while (generation == generation_ && !write_queue_.empty()) {
        batch.clear();
        for (const request_ptr& r : write_queue_) {
            batch += r->payload;
            in_flight_.push_back(r);
        }
        write_queue_.clear();
        start_reader();
        auto [ec, n] = co_await socket_.write_all(asio::buffer(batch));
        (void)n;
        if (generation != generation_) {
            co_return;
        }
        if (ec) {
            fail_connection("write to " + name_ + " failed: " + ec.message());
            co_return;
        }
    }
    if (generation == generation_) {
        writing_ = false;
    }
}

void connection::start_reader()
{
    if (reading_) {
        return;
    }
    reading_ = true;
    asio::co_spawn(
        strand_, [self = shared_from_this(), g = generation_]() { return self->read_loop(g); },
        asio::detached);
}

// Reads only while replies are owed, so that an idle client leaves no work pending and
// io_context::run can return.
asio::awaitable<void> connection::read_loop(std::uint64_t generation)
{
    std::array<char, std::size_t{16} * 1024> buf;
    while (generation == generation_ && !in_flight_.empty()) {
        while (!in_flight_.empty()) {
            auto reply = decoder_.next();
            if (!reply) {
                break;
            }
            deliver(std::move(*reply));
        }
        if (!decoder_.error().empty()) {
            fail_connection("protocol error from " + name_ + ": " + decoder_.error());
            co_return;
        }
        if (in_flight_.empty()) {
            if (decoder_.has_buffered()) {
                // Redis answers each command once, in order: bytes beyond the last reply
                // owed mean the stream can no longer be matched to requests.
                fail_connection("protocol error from " + name_ +
                                ": data after the last reply owed (a reply nobody asked for)");
                co_return;
            }
            break;
        }
        auto [ec, n] = co_await socket_.read_some(asio::buffer(buf));
        if (generation != generation_) {
            co_return;
        }
        if (ec) {
            fail_connection(ec == asio::error::eof
                                ? "connection closed by " + name_
                                : "read from " + name_ + " failed: " + ec.message());
            co_return;
        }
        if (!decoder_.feed(buf.data(), n)) {
            fail_connection("protocol error from " + name_ + ": " + decoder_.error());
            co_return;
        }
    }
    if (generation == generation_) {
        reading_ = false;
    }
}

void connection::deliver(resp::reply reply)
{
    request_ptr r = std::move(in_flight_.front());
    in_flight_.pop_front();
    // A script the server no longer knows (SCRIPT FLUSH, a restart behind a proxy) goes again
    // as EVAL, even for a request given up on: it was meant to run.
    if (reply.is_error() && reply.text.starts_with("NOSCRIPT") && !r->fallback.empty()) {
        r->payload = std::move(r->fallback);
        r->fallback.clear();
        write_queue_.push_back(std::move(r));
        start_writer();
        return;
    }
    if (r->abandoned) {
        return;
    }
    r->result.reply = std::move(reply);
    complete(r, exec_result::status::replied, {});
}

void connection::complete(const request_ptr& r, exec_result::status s, std::string detail)
{
    r->done = true;
    r->result.state = s;
    r->result.detail = std::move(detail);
    r->signal.cancel();
}

void connection::abandon(const request_ptr& r)
{
    // A request not yet written still goes out; only its reply is dropped. A round that
    // stopped early at a quorum thus still sets the key on the remaining nodes (the lock
    // survives more node failures), and a cancelled acquire's clean-up, queued behind it on
    // the same connection, still deletes whatever it sets.
    r->abandoned = true;
}

void connection::fail_connection(const std::string& why)
{
    if (state_ != state::closed) {
        // The messages name the node and the cause; none carries a password.
        log(why.find("protocol error") != std::string::npos ? log_level::error : log_level::warning,
            "dropping the connection to " + name_ + ": " + why);
    }
    ++generation_;
    socket_.close();
    writing_ = false;
    reading_ = false;
    decoder_.reset();
    if (state_ != state::closed) {
        state_ = state::disconnected;
    }
    last_error_ = why;
    retry_at_ = clock::now() + backoff_;
    backoff_ = std::min(backoff_ * 2, settings_.backoff_max);
    auto pending = std::move(in_flight_);
    in_flight_.clear();
    for (request_ptr& r : write_queue_) {
        pending.push_back(std::move(r));
    }
    write_queue_.clear();
    for (const request_ptr& r : pending) {
        if (!r->abandoned && !r->done) {
            complete(r, exec_result::status::failed, why);
        }
    }
}

}  // namespace redlock::detail
