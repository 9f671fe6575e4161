// SPDX-License-Identifier: BSL-1.0
#include "node/sentinel/sentinel.hpp"

#include "core/error_reply.hpp"
#include "engine/exchange.hpp"
#include "engine/handshake.hpp"
#include "engine/pubsub.hpp"
#include "node/sentinel/sentinel_resolve_fsm.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <charconv>
#include <vector>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {

// How long the watch waits before trying the next Sentinel after one failed.
constexpr std::chrono::milliseconds watch_retry_pause{500};

std::optional<std::uint16_t> port_number(std::string_view text)
{
    unsigned value = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || p != end || value == 0 || value > 65535) {
        return std::nullopt;
    }
    return static_cast<std::uint16_t>(value);
}

// Asks one Sentinel `question` (one command): the reply, or why there is none.
asio::awaitable<node_failure> ask_sentinel(const node& sentinel, const std::string& question,
                                           asio::ssl::context* tls, bool verify_name,
                                           std::chrono::milliseconds timeout, resp::reply& reply)
{
    stream q(co_await asio::this_coro::executor);
    node_failure why = co_await connect_and_greet(q, sentinel, false, tls, verify_name, timeout);
    if (!why) {
        std::vector<resp::reply> replies;
        why = co_await exchange(q, question, 1, replies, "Sentinel " + sentinel.endpoint());
        if (!why) {
            reply = std::move(replies.front());
        }
    }
    q.close();
    co_return why;
}

// Runs the lookup `sentinel_resolve_fsm` decides; `s` ends at the master.
asio::awaitable<node_failure> open_master(stream& s, const node& n, bool select_db,
                                          asio::ssl::context* tls, bool verify_name,
                                          std::chrono::milliseconds timeout, std::string& reached)
{
    sentinel_resolve_fsm lookup(n, timeout);
    for (sentinel_resolve_fsm::action a = lookup.start();;) {
        resp::reply reply;
        std::vector<resp::reply> replies;
        switch (a.what) {
            case sentinel_resolve_fsm::step::ask_sentinel: {
                node_failure why = co_await within_deadline(
                    ask_sentinel(a.server, a.payload, tls, verify_name, a.timeout, reply),
                    a.timeout, "asking Sentinel " + a.server.endpoint());
                a = lookup.sentinel_answered(std::move(why), reply);
                break;
            }
            case sentinel_resolve_fsm::step::connect_master:
                reached = lookup.reached();
                a = lookup.master_connected(co_await connect_and_greet(s, a.server, select_db, tls,
                                                                       verify_name, a.timeout));
                break;
            case sentinel_resolve_fsm::step::ask_role: {
                node_failure why = co_await exchange(s, a.payload, 1, replies, reached);
                if (!why) {
                    reply = std::move(replies.front());
                }
                a = lookup.role_answered(std::move(why), reply);
                break;
            }
            case sentinel_resolve_fsm::step::complete:
                co_return std::move(a.failure);
        }
    }
}

}  // namespace

asio::awaitable<node_failure> open_node(stream& s, const node& n,
                                        const connection_settings& settings, bool select_db,
                                        std::string& reached)
{
    const auto timeout = settings.connect_timeout;
    asio::ssl::context* tls = settings.tls.get();
    const bool verify_name = settings.verify_name;
    if (n.sentinels.empty()) {
        reached = n.endpoint();
        co_return co_await open_stream(s, n, timeout, select_db, tls, verify_name);
    }
    co_return co_await within_deadline(
        open_master(s, n, select_db, tls, verify_name, timeout, reached), timeout,
        "finding the master of " + n.endpoint());
}

node sentinel_server(const node& n, const server_address& a)
{
    node s;
    s.host = a.host;
    s.port = a.port;
    s.tls = n.tls;
    return s;
}

node node_at(const node& n, const server_address& a)
{
    node server = n;
    server.sentinels.clear();
    server.master_name.clear();
    server.cluster_seeds.clear();
    server.host = a.host;
    server.port = a.port;
    return server;
}

std::optional<server_address> read_master_address(const resp::reply& r, node_failure& why)
{
    if (r.type == resp::kind::nil) {
        why = node_failure{node_errc::no_master, "it knows no master by that name"};
        return std::nullopt;
    }
    if (r.is_error()) {
        why = error_reply_failure(r.text);
        return std::nullopt;
    }
    if (r.type != resp::kind::array || r.elements.size() != 2 ||
        r.elements[0].type != resp::kind::bulk_string || r.elements[0].text.empty() ||
        r.elements[1].type != resp::kind::bulk_string) {
        why = node_failure{node_errc::unexpected_reply,
                           "unexpected reply to SENTINEL get-master-addr-by-name"};
        return std::nullopt;
    }
    const auto port = port_number(r.elements[1].text);
    if (!port) {
        why = node_failure{node_errc::unexpected_reply,
                           "unexpected port in the reply to SENTINEL get-master-addr-by-name"};
        return std::nullopt;
    }
    return server_address{.host = r.elements[0].text, .port = *port};
}

std::optional<server_address> switched_master(std::string_view message,
                                              std::string_view master_name)
{
    std::array<std::string_view, 5> words;
    std::size_t count = 0;
    while (!message.empty()) {
        const auto space = message.find(' ');
        if (count == words.size()) {
            return std::nullopt;
        }
        words[count++] = message.substr(0, space);
        message = space == std::string_view::npos ? std::string_view{} : message.substr(space + 1);
    }
    if (count != words.size() || words[0] != master_name || words[3].empty()) {
        return std::nullopt;
    }
    const auto port = port_number(words[4]);
    if (!port) {
        return std::nullopt;
    }
    return server_address{.host = std::string(words[3]), .port = *port};
}

sentinel_watch::sentinel_watch(asio::any_io_executor strand, node n, connection_settings settings,
                               listener on_switch)
    : strand_(std::move(strand)),
      node_(std::move(n)),
      settings_(std::move(settings)),
      on_switch_(std::move(on_switch)),
      opening_(strand_),
      runner_(mux_, *this),
      timer_(strand_)
{
}

void sentinel_watch::start()
{
    if (running_ || stopped_ || node_.sentinels.empty()) {
        return;
    }
    running_ = true;
    asio::co_spawn(
        strand_, [self = shared_from_this()] { return self->run(); }, asio::detached);
}

void sentinel_watch::stop()
{
    stopped_ = true;
    opening_.close();
    runner_.close();
    (void)mux_.fail_all();
    timer_.cancel();
}

asio::awaitable<void> sentinel_watch::run()
{
    for (std::size_t next = 0; !stopped_; next = (next + 1) % node_.sentinels.size()) {
        co_await listen(node_.sentinels[next]);
        if (stopped_) {
            break;
        }
        timer_.expires_after(watch_retry_pause);
        co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    running_ = false;
}

// Subscribes on one Sentinel and hears its messages until the socket fails or the watch
// stops.
asio::awaitable<void> sentinel_watch::listen(const server_address& sentinel)
{
    const node server = sentinel_server(node_, sentinel);
    opening_ = stream(strand_);
    const node_failure why =
        co_await open_stream(opening_, server, settings_.connect_timeout, false,
                             settings_.tls.get(), settings_.verify_name);
    if (why || stopped_) {
        co_return;
    }
    (void)mux_.add(subscription(request_kind::subscribe, "SUBSCRIBE", "+switch-master"));
    runner_.attach(std::move(opening_), weak_from_this());
    timer_.expires_at(asio::steady_timer::time_point::max());
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
}

void sentinel_watch::on_push(resp::reply& message)
{
    if (const auto m = read_message(message)) {
        if (auto master = switched_master(m->payload, node_.master_name)) {
            on_switch_(*master);
        }
    }
}

void sentinel_watch::on_failure(const socket_failure&)
{
    (void)mux_.fail_all();
    timer_.cancel();
}

}  // namespace redlock::detail
