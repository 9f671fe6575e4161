// SPDX-License-Identifier: BSL-1.0
#include "node/connection.hpp"

#include <redlock/error.hpp>

#include "core/misconfiguration.hpp"
#include "engine/exchange.hpp"
#include "engine/handshake.hpp"
#include "node/sentinel/sentinel.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <vector>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {

// A failure to open a socket that says the server's bytes are not Redis replies (in the
// handshake, or asking a Sentinel) is logged as an error; any other as a warning.
log_level open_failure_level(const std::string& failure)
{
    return failure.find("protocol error") != std::string::npos ? log_level::error
                                                               : log_level::warning;
}

}  // namespace

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
      fsm_(settings_.backoff_min, settings_.backoff_max),
      runner_(mux_, *this)
{
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

void connection::submit(std::shared_ptr<request_owner> owner, std::uint32_t index,
                        const command& cmd)
{
    ++stats_.requests;
    const clock::time_point now = clock::now();
    switch (fsm_.admit(now)) {
        case connection_fsm::admission::refuse:
            refuse(*owner, index, now);
            return;
        case connection_fsm::admission::probe:
            start_connect();
            refuse(*owner, index, now);
            return;
        case connection_fsm::admission::connect:
            start_connect();
            break;
        case connection_fsm::admission::queue:
            break;
    }
    const std::shared_ptr<request_owner> told = owner;
    const multiplexer::awaited awaited = mux_.add(
        submission{.owner = std::move(owner), .index = index, .cmd = &cmd, .submitted = now});
    runner_.write();
    if (awaited == multiplexer::awaited::no) {
        ++stats_.errors;
        told->deliver(index, exec_result{exec_result::outcome::failed,
                                         {},
                                         "not waited for: " + name_ +
                                             " has answered nothing for a per-node deadline"});
    }
}

// Closed, in back-off after a failure, or waiting for a stuck server to answer a PING on a
// fresh socket: the request fails at once, with the cause.
void connection::refuse(request_owner& owner, std::uint32_t index, clock::time_point now)
{
    ++stats_.errors;
    std::string why = last_error_;
    if (const auto wait = fsm_.wait_left(now); wait.count() > 0) {
        why += "; next connect in " + std::to_string(wait.count()) + " ms";
    } else if (fsm_.probing() && fsm_.current() != connection_fsm::state::closed) {
        why += "; waiting for the server to answer";
    }
    owner.deliver(index, exec_result{exec_result::outcome::failed, {}, std::move(why)});
}

void connection::gave_up(const request_owner&, std::uint32_t, bool timed_out)
{
    if (!timed_out) {
        ++stats_.abandoned;
        (void)mux_.gave_up(false);
        return;
    }
    ++stats_.timeouts;
    if (!mux_.unresponsive()) {
        log(log_level::warning, name_ +
                                    " answered nothing for a per-node deadline: requests go "
                                    "out but are not waited for until it answers");
    }
    if (mux_.gave_up(true)) {
        check_stuck_soon();
    }
}

// A server that answers nothing in flight is stuck or gone: give up the socket rather than
// queue behind it forever. Not at once, though: the clean-up of a request that just timed out
// is queued in the same turn of the strand, and it must go out on this socket, behind that
// request. A fresh socket would not order it: a stopped server that resumes may run the
// clean-up first and the request it undoes after it. (Only what was written by then counts:
// while a write waits for a server that stopped reading, what is queued behind it cannot
// reach the server anyway.)
void connection::check_stuck_soon()
{
    if (stuck_check_posted_) {
        return;
    }
    stuck_check_posted_ = true;
    asio::post(strand_, [self = shared_from_this(), g = fsm_.generation()] {
        self->stuck_check_posted_ = false;
        if (g == self->fsm_.generation() && self->mux_.looks_stuck()) {
            self->end_socket("no reply before the per-node deadline", ending::stuck);
        }
    });
}

void connection::resume_writes()
{
    if (mux_.resume_writes()) {
        runner_.write();
    }
}

void connection::close(const std::string& why)
{
    end_socket(why, ending::closed);
}

void connection::leave_unless_at(std::string_view server, const std::string& why)
{
    if (fsm_.should_leave(server == reached_)) {
        end_socket(why, ending::left_master);
    }
}

void connection::leave(const std::string& why)
{
    end_socket(why, ending::left_master);
}

void connection::start_connect()
{
    asio::co_spawn(
        strand_, [self = shared_from_this(), g = fsm_.generation()] { return self->connect(g); },
        asio::detached);
}

asio::awaitable<void> connection::connect(std::uint64_t generation)
{
    auto self = shared_from_this();
    stream fresh(strand_);
    std::string reached;
    std::string failure = co_await open_node(fresh, endpoint_, settings_, true, reached);
    if (!fsm_.accepts(generation)) {
        co_return;  // closed or superseded while connecting
    }
    if (failure.empty() && fsm_.probing()) {
        failure = co_await answers_ping(fresh);
        if (!fsm_.accepts(generation)) {
            co_return;
        }
    }
    if (!failure.empty()) {
        end_socket(failure, ending::failed, open_failure_level(failure));
        co_return;
    }
    reached_ = std::move(reached);
    if (fsm_.connected()) {
        ++stats_.reconnects;
        log(log_level::info, "reconnected to " + name_);
    } else {
        log(log_level::debug, "connected to " + name_);
    }
    runner_.attach(std::move(fresh), weak_from_this());
}

// A stopped server (SIGSTOP, a frozen VM) still accepts connections: its kernel completes
// them. Only an answer shows that it runs again.
asio::awaitable<std::string> connection::answers_ping(stream& fresh)
{
    std::string ping;
    resp::append_command(ping, {"PING"});
    std::vector<resp::reply> replies;
    co_return co_await within_deadline(exchange(fresh, ping, 1, replies, name_),
                                       settings_.connect_timeout, "PING " + name_);
}

void connection::on_reply(reader_action& step)
{
    fsm_.answered();
    const submission& request = step.request;
    const resp::reply& own = own_reply(*request.cmd, step.reply);
    if (own.is_error() && !warned_misconfigured_) {
        warn_if_misconfigured(*request.owner, own);
    }
    if (step.what == reader_action::type::drop) {
        return;
    }
    ++stats_.replies;
    stats_.latency_us +=
        std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - request.submitted)
            .count();
    request.owner->deliver(request.index,
                           exec_result{exec_result::outcome::replied, std::move(step.reply), {}});
}

// A replica (or a cluster node) among the nodes does not stop a quorum of the others from
// locking, so the reports alone may go unread: say it once in the log. Not for a reply the
// request's owner acts on itself (a redirection a cluster's router follows).
void connection::warn_if_misconfigured(const request_owner& owner, const resp::reply& own)
{
    if (!error_reply_hint(own.text).empty() && !owner.acts_on(own)) {
        warned_misconfigured_ = true;
        log(log_level::warning,
            name_ + " cannot take locks: " + with_hint(own.text) + " (said once per node)");
    }
}

void connection::on_failure(const socket_failure& failure)
{
    end_socket(
        describe(failure), ending::failed,
        failure.where == socket_failure::stage::matching ? log_level::error : log_level::warning);
}

// A TLS port resets a connection whose first bytes are not a TLS handshake. A reset before
// any reply on a plain connection is therefore reported with that hint; it makes the node
// count as misconfigured (a reset after replies is a dropped connection, which may pass).
std::string connection::describe(const socket_failure& failure) const
{
    if (failure.where == socket_failure::stage::matching) {
        return "protocol error from " + name_ + ": " + failure.diagnostics;
    }
    const bool reading = failure.where == socket_failure::stage::reading;
    if (reading && failure.error == asio::error::eof) {
        return "connection closed by " + name_;
    }
    std::string why =
        (reading ? "read from " : "write to ") + name_ + " failed: " + failure.error.message();
    if (failure.error == asio::error::connection_reset && !mux_.heard_from_server() &&
        !endpoint_.tls) {
        why += " before any reply (";
        why += plain_to_tls_hint;
        why += ')';
    }
    return why;
}

// Whatever ends a socket: its requests fail with `why`, and `how` decides when the next one
// may open.
void connection::end_socket(const std::string& why, ending how, log_level level)
{
    if (fsm_.current() != connection_fsm::state::closed) {
        // The messages name the node and the cause; none carries a password.
        log(level, "dropping the connection to " + name_ + ": " + why);
    }
    runner_.close();
    const clock::time_point now = clock::now();
    switch (how) {
        case ending::failed:
            fsm_.failed(now);
            break;
        case ending::stuck:
            fsm_.stuck(now);
            break;
        case ending::left_master:
            fsm_.left_master(now);
            break;
        case ending::closed:
            fsm_.close();
            break;
    }
    last_error_ = why;
    for (submission& s : mux_.fail_all()) {
        ++stats_.errors;
        s.owner->deliver(s.index, exec_result{exec_result::outcome::failed, {}, why});
    }
}

}  // namespace redlock::detail
