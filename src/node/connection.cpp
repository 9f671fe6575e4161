// SPDX-License-Identifier: BSL-1.0
#include "node/connection.hpp"

#include <redlock/error.hpp>

#include "core/error_reply.hpp"
#include "engine/exchange.hpp"
#include "engine/handshake.hpp"
#include "node/probe_fsm.hpp"
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
    if (!mux_.add(submission{.owner = owner, .index = index, .cmd = &cmd, .submitted = now})) {
        // The server has answered nothing for a per-node deadline: nothing new goes to it
        // until it answers, so that no round waits for it again.
        ++stats_.errors;
        owner->deliver(index, exec_result{exec_result::outcome::failed,
                                          {},
                                          "not sent: " + name_ +
                                              " has answered nothing for a per-node deadline",
                                          node_errc::timed_out});
        return;
    }
    runner_.write();
}

// Closed, in back-off after a failure, or waiting for a stuck server to answer a PING on a
// fresh socket: the request fails at once, with the cause.
void connection::refuse(request_owner& owner, std::uint32_t index, clock::time_point now)
{
    ++stats_.errors;
    std::string why = last_failure_.detail;
    if (const auto wait = fsm_.wait_left(now); wait.count() > 0) {
        why += "; next connect in " + std::to_string(wait.count()) + " ms";
    } else if (fsm_.probing() && fsm_.current() != connection_fsm::state::closed) {
        why += "; waiting for the server to answer";
    }
    owner.deliver(
        index, exec_result{exec_result::outcome::failed, {}, std::move(why), last_failure_.code});
}

void connection::gave_up(const request_owner&, std::uint32_t, bool timed_out)
{
    mux_.gave_up();
    if (!timed_out) {
        ++stats_.abandoned;
        return;
    }
    ++stats_.timeouts;
    check_silence_soon();
}

// The request went unanswered, and so did every request before it (replies come in order).
// Not acted on at once, though: the clean-up of a request that just timed out is queued in
// the same turn of the strand, and it must go out on this socket, behind that request. A
// fresh socket would not order it: a stopped server that resumes may run the clean-up first
// and the request it undoes after it. (Only what was written by then counts: while a write
// waits for a server that stopped reading, what is queued behind it cannot reach the server
// anyway.)
void connection::check_silence_soon()
{
    if (silence_check_posted_) {
        return;
    }
    silence_check_posted_ = true;
    asio::post(strand_, [self = shared_from_this(), g = fsm_.generation(),
                         mark = mux_.replies_read()] { self->check_silence(g, mark); });
}

void connection::check_silence(std::uint64_t generation, std::uint64_t mark)
{
    silence_check_posted_ = false;
    const bool silent_before = mux_.unresponsive();
    if (generation != fsm_.generation() || !mux_.went_silent(mark)) {
        return;
    }
    if (!silent_before) {
        log(log_level::warning, name_ +
                                    " answered nothing for a per-node deadline: nothing is "
                                    "sent to it until it answers");
    }
    if (mux_.looks_stuck()) {
        end_socket(failure_of(node_errc::timed_out), ending::stuck);
    }
}

void connection::resume_writes()
{
    if (mux_.resume_writes()) {
        runner_.write();
    }
}

void connection::close(const std::string& why)
{
    end_socket(node_failure{node_errc::closed, why}, ending::closed);
}

void connection::leave_unless_at(std::string_view server, const node_failure& why)
{
    if (fsm_.should_leave(server == reached_)) {
        end_socket(why, ending::left_master);
    }
}

void connection::leave(const node_failure& why)
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
    const probe_fsm attempt(generation);
    stream fresh(strand_);
    std::string reached;
    for (probe_fsm::action a = attempt.start();;) {
        switch (a.what) {
            case probe_fsm::step::open:
                a = attempt.opened(co_await open_node(fresh, endpoint_, settings_, true, reached),
                                   fsm_);
                break;
            case probe_fsm::step::ping:
                a = attempt.pinged(co_await answers_ping(fresh), fsm_);
                break;
            case probe_fsm::step::fail:
                end_socket(a.failure, ending::failed);
                co_return;
            case probe_fsm::step::drop:
                co_return;  // closed or superseded while connecting
            case probe_fsm::step::attach:
                attach(std::move(fresh), std::move(reached));
                co_return;
        }
    }
}

void connection::attach(stream fresh, std::string reached)
{
    reached_ = std::move(reached);
    if (fsm_.connected()) {
        ++stats_.reconnects;
        log(log_level::info, "reconnected to " + name_);
    } else {
        log(log_level::debug, "connected to " + name_);
    }
    runner_.attach(std::move(fresh), weak_from_this());
}

// Any reply shows that the server runs (see probe_fsm::opened).
asio::awaitable<node_failure> connection::answers_ping(stream& fresh)
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
    if (is_misconfiguration(classify_error_reply(own.text)) && !owner.acts_on(own)) {
        warned_misconfigured_ = true;
        log(log_level::warning,
            name_ + " cannot take locks: " + with_hint(own.text) + " (said once per node)");
    }
}

void connection::on_failure(const socket_failure& failure)
{
    end_socket(describe(failure), ending::failed);
}

// The code is probe_fsm's: a reset before any reply on a plain connection gets the hint of
// a TLS port.
node_failure connection::describe(const socket_failure& failure) const
{
    const node_errc code =
        probe_fsm::failure_code(failure, mux_.heard_from_server(), endpoint_.tls);
    if (code == node_errc::protocol_error) {
        return node_failure{code, "protocol error from " + name_ + ": " + failure.diagnostics};
    }
    const bool reading = failure.where == socket_failure::stage::reading;
    if (reading && failure.error == asio::error::eof) {
        return node_failure{code, "connection closed by " + name_};
    }
    node_failure why{code, (reading ? "read from " : "write to ") + name_ +
                               " failed: " + failure.error.message()};
    if (code == node_errc::tls_mismatch) {
        why.detail += " before any reply (";
        why.detail += plain_to_tls_hint;
        why.detail += ')';
    }
    return why;
}

// Whatever ends a socket: its requests fail with `why`, and `how` decides when the next one
// may open.
void connection::end_socket(const node_failure& why, ending how)
{
    if (fsm_.current() != connection_fsm::state::closed) {
        // The messages name the node and the cause; none carries a password.
        log(why.code == node_errc::protocol_error ? log_level::error : log_level::warning,
            "dropping the connection to " + name_ + ": " + why.detail);
    }
    // A stuck server's requests were all given up, and some may have no clean-up behind them
    // (it was refused once the server went silent): were they sent on after a partition
    // heals, they would take the lock on its nodes for a whole expiry.
    runner_.close(how == ending::stuck);
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
    last_failure_ = why;
    for (submission& s : mux_.fail_all()) {
        ++stats_.errors;
        s.owner->deliver(s.index,
                         exec_result{exec_result::outcome::failed, {}, why.detail, why.code});
    }
}

}  // namespace redlock::detail
