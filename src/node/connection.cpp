// SPDX-License-Identifier: BSL-1.0
#include "node/connection.hpp"

#include <redlock/error.hpp>

#include "core/misconfiguration.hpp"
#include "engine/exchange.hpp"
#include "engine/handshake.hpp"
#include "node/sentinel/sentinel.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <array>

namespace redlock::detail {

namespace asio = boost::asio;
using generic_socket = asio::generic::stream_protocol::socket;

namespace {

std::string millis(std::chrono::microseconds d)
{
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    return std::to_string(ms) + " ms";
}

}  // namespace

struct connection::buffers
{
    std::array<char, std::size_t{16} * 1024> read;
    std::string write;
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

connection::~connection()
{
    // A client destroyed without async_shutdown: the watch must not keep the io_context busy
    // for a connection that is gone. It lives on the strand.
    if (watch_) {
        asio::post(strand_, [w = std::move(watch_)] { w->stop(); });
    }
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
    if (state_ == state::closed) {
        ++stats_.errors;
        owner->deliver(index, exec_result{exec_result::outcome::failed, {}, last_error_});
        return;
    }
    if (state_ == state::disconnected) {
        auto now = clock::now();
        if (now < retry_at_) {
            ++stats_.errors;
            owner->deliver(index, exec_result{exec_result::outcome::failed,
                                              {},
                                              last_error_ + "; next connect in " +
                                                  millis(remaining(retry_at_, now))});
            return;
        }
        start_connect();
    }
    if (probing_) {
        // The server stopped answering: until a new socket has had an answer, nothing is
        // sent to it (see connect_loop).
        ++stats_.errors;
        owner->deliver(index, exec_result{exec_result::outcome::failed,
                                          {},
                                          last_error_ + "; waiting for the server to answer"});
        return;
    }
    if (!unresponsive_) {
        write_queue_.push_back(entry{std::move(owner), &cmd, clock::now(), index, false});
        write_batch();
        return;
    }
    // Written all the same, so that it keeps its place behind the requests before it (a
    // clean-up behind its attempt), but its owner is not kept waiting for a server that has
    // answered nothing for a whole per-node deadline: its reply is read and dropped.
    std::shared_ptr<request_owner> told = owner;
    write_queue_.push_back(entry{std::move(owner), &cmd, clock::now(), index, false, {}, true});
    ++given_up_;
    write_batch();
    ++stats_.errors;
    told->deliver(index, exec_result{exec_result::outcome::failed,
                                     {},
                                     "not waited for: " + name_ +
                                         " has answered nothing for a per-node deadline"});
}

void connection::gave_up(const request_owner&, std::uint32_t, bool timed_out)
{
    ++given_up_;
    if (!timed_out) {
        ++stats_.abandoned;
        return;
    }
    ++stats_.timeouts;
    // The request went unanswered, and so did every request before it (replies come in
    // order): until the server answers something, nobody waits for it (see submit).
    if (!unresponsive_) {
        unresponsive_ = true;
        log(log_level::warning, name_ +
                                    " answered nothing for a per-node deadline: requests go "
                                    "out but are not waited for until it answers");
    }
    // A server that answers nothing in flight is stuck or gone: give up the socket rather
    // than queue behind it forever. Not at once, though: the clean-up of a request that just
    // timed out is queued in the same turn of the strand, and it must go out on this socket,
    // behind that request. A fresh socket would not order it: a stopped server that resumes
    // may run the clean-up first and the request it undoes after it. (Only what was written
    // by then counts: while a write waits for a server that stopped reading, what is queued
    // behind it cannot reach the server anyway.)
    if (!stuck_check_posted_ && looks_stuck()) {
        stuck_check_posted_ = true;
        asio::post(strand_, [self = shared_from_this(), g = generation_] {
            self->stuck_check_posted_ = false;
            if (g == self->generation_ && self->looks_stuck()) {
                self->fail_connection("no reply before the per-node deadline");
                self->probing_ = true;
            }
        });
    }
}

bool connection::looks_stuck()
{
    // Only worth looking when there are as many requests given up, queued or in flight, as
    // in flight. A request given up stays given up, so the scan resumes where it stopped:
    // with a stopped server, thousands of requests may be in flight.
    if (in_flight_.empty() || given_up_ < in_flight_.size()) {
        return false;
    }
    while (given_up_prefix_ < in_flight_.size() && in_flight_[given_up_prefix_].given_up()) {
        ++given_up_prefix_;
    }
    return given_up_prefix_ == in_flight_.size();
}

void connection::close(const std::string& why)
{
    fail_connection(why);
    state_ = state::closed;
    if (watch_) {
        watch_->stop();
    }
}

void connection::master_switched(const server_address& master)
{
    const std::string now = node_at(endpoint_, master).endpoint();
    if ((state_ != state::connected && state_ != state::connecting) ||
        (state_ == state::connected && now == reached_)) {
        return;  // nothing open to give up, or already there
    }
    // Whatever the old master still accepts is lost once it turns into a replica.
    leave_old_master("the Sentinels switched the master '" + endpoint_.master_name + "' to " + now);
}

void connection::leave_old_master(const std::string& why)
{
    fail_connection(why);
    // A new master is there to be asked: no back-off.
    retry_at_ = clock::now();
    backoff_ = settings_.backoff_min;
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
    std::string reached;
    std::string failure = co_await open_node(fresh, endpoint_, settings_.connect_timeout, true,
                                             settings_.tls.get(), settings_.verify_name, reached);
    if (generation != generation_ || state_ != state::connecting) {
        co_return;  // closed or superseded while connecting
    }
    if (failure.empty() && probing_) {
        failure = co_await answers_ping(fresh);
        if (generation != generation_ || state_ != state::connecting) {
            co_return;
        }
    }
    if (!failure.empty()) {
        fail_connection(failure);
        co_return;
    }
    if (probing_) {
        probing_ = false;
        backoff_ = settings_.backoff_min;
    }
    if (!endpoint_.sentinels.empty()) {
        if (reached != reached_) {
            log(log_level::info, name_ + ": the master is " + reached);
        }
        if (!watch_) {
            std::weak_ptr<connection> weak = self;
            watch_ = std::make_shared<sentinel_watch>(strand_, endpoint_, settings_,
                                                      [weak](const server_address& master) {
                                                          if (auto c = weak.lock()) {
                                                              c->master_switched(master);
                                                          }
                                                      });
        }
        watch_->start();
    }
    reached_ = reached;
    socket_ = std::move(fresh);
    scripts_sent_.clear();
    silent_so_far_ = true;
    buffers_ = std::make_shared<buffers>();
    decoder_.reset();
    state_ = state::connected;
    if (connected_before_) {
        ++stats_.reconnects;
        log(log_level::info, "reconnected to " + name_);
    } else {
        log(log_level::debug, "connected to " + name_);
    }
    connected_before_ = true;
    write_batch();
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

void connection::resume_writes()
{
    if (writes_held_ > 0 && --writes_held_ == 0) {
        write_batch();
    }
}

// Everything queued so far goes out in one write; what is queued while it is under way goes
// in the next one. A request goes out at once unless a write is under way (or writes are
// held): not deferred further, since a round that stops early must still have sent its
// request to every node by the time it completes.
void connection::write_batch()
{
    if (writing_ || writes_held_ > 0 || state_ != state::connected || write_queue_.empty()) {
        return;
    }
    writing_ = true;
    std::string& batch = buffers_->write;
    batch.clear();
    for (entry& e : write_queue_) {
        // The first use of a script on a socket sends its text (EVAL, which also loads it);
        // later ones send only its SHA-1 (EVALSHA), which the server then knows, since it
        // runs a connection's commands in order. Waiting for a NOSCRIPT instead would cost a
        // round trip, and would re-send the request behind later ones: a clean-up behind the
        // next attempt with the same value, or one that never runs because a stuck socket
        // was given up before its NOSCRIPT was read.
        if (e.cmd->script != nullptr) {
            if (std::find(scripts_sent_.begin(), scripts_sent_.end(), e.cmd->script) ==
                scripts_sent_.end()) {
                scripts_sent_.push_back(e.cmd->script);
                e.fallback = true;
            }
        }
        batch += e.fallback ? e.cmd->fallback : e.cmd->payload;
        in_flight_.push_back(std::move(e));
    }
    write_queue_.clear();
    start_reader();
    socket_.async_write_all(asio::buffer(batch),
                            [self = shared_from_this(), g = generation_, bufs = buffers_](
                                const boost::system::error_code& ec, std::size_t) {
                                if (g != self->generation_) {
                                    return;
                                }
                                self->writing_ = false;
                                if (ec) {
                                    self->fail_connection(self->broken_off("write to", ec));
                                    return;
                                }
                                self->write_batch();
                            });
}

void connection::start_reader()
{
    if (reading_) {
        return;
    }
    reading_ = true;
    read_more();
}

// Reads only while replies are owed, so that an idle client leaves no work pending and
// io_context::run can return.
void connection::read_more()
{
    const std::uint64_t generation = generation_;
    while (!in_flight_.empty()) {
        auto reply = decoder_.next();
        if (!reply) {
            break;
        }
        deliver(std::move(*reply));
        if (generation != generation_) {
            return;  // the socket was given up meanwhile
        }
    }
    if (!decoder_.error().empty()) {
        fail_connection("protocol error from " + name_ + ": " + decoder_.error());
        return;
    }
    if (in_flight_.empty()) {
        if (decoder_.has_buffered()) {
            // Redis answers each command once, in order: bytes beyond the last reply owed
            // mean the stream can no longer be matched to requests.
            fail_connection("protocol error from " + name_ +
                            ": data after the last reply owed (a reply nobody asked for)");
            return;
        }
        reading_ = false;
        return;
    }
    socket_.async_read_some(
        asio::buffer(buffers_->read),
        [self = shared_from_this(), g = generation_, bufs = buffers_](
            const boost::system::error_code& ec, std::size_t n) { self->on_read(g, ec, n); });
}

void connection::on_read(std::uint64_t generation, const boost::system::error_code& ec,
                         std::size_t n)
{
    if (generation != generation_) {
        return;
    }
    if (ec) {
        fail_connection(ec == asio::error::eof ? "connection closed by " + name_
                                               : broken_off("read from", ec));
        return;
    }
    if (!decoder_.feed(buffers_->read.data(), n)) {
        fail_connection("protocol error from " + name_ + ": " + decoder_.error());
        return;
    }
    read_more();
}

void connection::deliver(resp::reply reply)
{
    unresponsive_ = false;
    if (entry& front = in_flight_.front(); front.cmd->replies > 1) {
        front.gathered.push_back(std::move(reply));
        if (front.gathered.size() < front.cmd->replies) {
            return;
        }
        reply = resp::reply{};
        reply.type = resp::kind::array;
        reply.elements = std::move(front.gathered);
        front.gathered.clear();
    }
    entry e = std::move(in_flight_.front());
    in_flight_.pop_front();
    if (given_up_prefix_ > 0) {
        --given_up_prefix_;
    }
    // The command's own reply, of several perhaps (behind an ASKING, before a WAIT).
    const resp::reply& first = e.cmd->replies > 1 ? reply.elements[e.cmd->own_reply] : reply;
    if (first.is_error() && e.fallback) {
        // An EVAL refused before it ran (a redirection, CLUSTERDOWN, OOM, ...) loaded nothing:
        // the script's next use on this socket sends its text again. (After one that ran and
        // failed this costs one EVAL more.)
        std::erase(scripts_sent_, e.cmd->script);
    }
    // A script the server no longer knows (SCRIPT FLUSH, a restart behind a proxy) goes again
    // as EVAL, even for a request given up on: it was meant to run. (Behind whatever was
    // written since: only a flush in mid-connection leads here.)
    if (first.is_error() && !e.fallback && !e.cmd->fallback.empty() &&
        first.text.starts_with("NOSCRIPT")) {
        std::erase(scripts_sent_, e.cmd->script);
        e.fallback = true;
        write_queue_.push_back(std::move(e));
        write_batch();
        return;
    }
    if (silent_so_far_) {
        // The server answers on this socket: the back-off starts again from its least.
        silent_so_far_ = false;
        backoff_ = settings_.backoff_min;
    }
    if (first.is_error() && !endpoint_.sentinels.empty() && first.text.starts_with("READONLY")) {
        // The server the Sentinels named has become a replica since: not a misconfiguration
        // but a failover, which asking the Sentinels again follows.
        const std::string why = reached_ + ", the master '" + endpoint_.master_name +
                                "' the Sentinels named, has become a replica (" + first.text +
                                "): asking the Sentinels again";
        if (!e.given_up()) {
            complete(e, exec_result{exec_result::outcome::failed, {}, why});
        }
        leave_old_master(why);  // and the requests behind it
        return;
    }
    if (first.is_error() && !warned_misconfigured_ &&
        !(settings_.cluster_server &&
          (first.text.starts_with("MOVED ") || first.text.starts_with("ASK ")))) {
        warn_if_misconfigured(first.text);
    }
    if (e.given_up()) {
        --given_up_;
        return;
    }
    complete(e, exec_result{exec_result::outcome::replied, std::move(reply), {}});
}

// A replica (or a cluster node) among the nodes does not stop a quorum of the others from
// locking, so the reports alone may go unread: say it once in the log.
void connection::warn_if_misconfigured(std::string_view reply_text)
{
    if (!error_reply_hint(reply_text).empty()) {
        warned_misconfigured_ = true;
        log(log_level::warning,
            name_ + " cannot take locks: " + with_hint(reply_text) + " (said once per node)");
    }
}

void connection::complete(entry& e, exec_result result)
{
    if (result.status == exec_result::outcome::replied) {
        ++stats_.replies;
        stats_.latency_us +=
            std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - e.sent).count();
    } else {
        ++stats_.errors;
    }
    e.owner->deliver(e.index, std::move(result));
}

// A TLS port resets a connection whose first bytes are not a TLS handshake. A reset before
// any reply on a plain connection is therefore reported with that hint; it makes the node
// count as misconfigured (a reset after replies is a dropped connection, which may pass).
std::string connection::broken_off(std::string_view what, const boost::system::error_code& ec) const
{
    std::string why = std::string(what) + ' ' + name_ + " failed: " + ec.message();
    if (ec == asio::error::connection_reset && silent_so_far_ && !endpoint_.tls) {
        why += " before any reply (";
        why += plain_to_tls_hint;
        why += ')';
    }
    return why;
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
    given_up_ = 0;
    given_up_prefix_ = 0;
    unresponsive_ = false;
    decoder_.reset();
    if (state_ != state::closed) {
        state_ = state::disconnected;
    }
    last_error_ = why;
    retry_at_ = clock::now() + backoff_;
    backoff_ = std::min(backoff_ * 2, settings_.backoff_max);
    auto pending = std::move(in_flight_);
    in_flight_.clear();
    for (entry& e : write_queue_) {
        pending.push_back(std::move(e));
    }
    write_queue_.clear();
    for (entry& e : pending) {
        if (!e.given_up()) {
            complete(e, exec_result{exec_result::outcome::failed, {}, why});
        }
    }
}

}  // namespace redlock::detail
