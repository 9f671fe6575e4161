// SPDX-License-Identifier: BSL-1.0
// client::async_inspect: one read-only script on every node, each node's reply kept whole.
// Unlike a lock round (quorum.cpp), nothing is counted towards a quorum and no node is left
// out early: the caller wants every node's view, so the round waits for all of them or the
// deadline.

#include <redlock/client.hpp>
#include <redlock/error.hpp>
#include <redlock/inspect.hpp>

#include "core/error_reply.hpp"
#include "core/spawn.hpp"
#include "lock/client_impl.hpp"
#include "protocol/inspection.hpp"
#include "protocol/script_table.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <charconv>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {

// Sets `s`'s error for a reply that is not the script's answer.
void set_unexpected(const resp::reply& r, key_state& s)
{
    node_failure why = r.is_error() ? error_reply_failure(r.text)
                                    : node_failure{node_errc::unexpected_reply,
                                                   "unexpected reply to the inspection script"};
    s.code = why.code;
    s.error = std::move(why.detail);
}

bool is_bulk(const resp::reply& r)
{
    return r.type == resp::kind::bulk_string;
}

// A hold count as the reentrant scripts store it: a positive decimal integer.
std::optional<std::int64_t> hold_count(const std::string& text)
{
    std::int64_t n = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, n);
    if (ec != std::errc{} || p != end || n < 1) {
        return std::nullopt;
    }
    return n;
}

using inspect_result = std::tuple<error_code, std::vector<key_state>>;

// The requests of one inspection, one per node; the connections hold it while they are
// queued or in flight. Its coroutine waits on `wake`, cancelled once every node answered.
struct inspect_round final : request_owner
{
    inspect_round(const asio::any_io_executor& ex, std::string_view key, std::size_t nodes,
                  clock::time_point deadline)
        : cmd(inspect_command(key)),
          states(nodes),
          pending(nodes, 1),
          remaining(nodes),
          wake(ex, deadline)
    {
    }

    void deliver(std::uint32_t i, exec_result r) override
    {
        if (!pending[i]) {
            return;
        }
        key_state& s = states[i];
        if (r.status == exec_result::outcome::replied) {
            read_inspect_reply(r.reply, s);
        } else {
            s.code = r.code;
            s.error = r.detail.empty() ? "no reply" : std::move(r.detail);
        }
        pending[i] = 0;
        if (--remaining == 0 && waiting) {
            wake.cancel();
        }
    }

    bool given_up(std::uint32_t i) const noexcept override { return !pending[i]; }

    // Stops waiting for the nodes still pending, with `why` as their error; their replies
    // are read and dropped.
    void give_up(const std::vector<std::shared_ptr<node_link>>& nodes, const node_failure& why,
                 bool timed_out)
    {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (pending[i]) {
                pending[i] = 0;
                --remaining;
                states[i].code = why.code;
                states[i].error = why.detail;
                nodes[i]->gave_up(*this, static_cast<std::uint32_t>(i), timed_out);
            }
        }
    }

    command cmd;
    std::vector<key_state> states;
    std::vector<unsigned char> pending;
    std::size_t remaining;
    asio::steady_timer wake;
    bool waiting = false;
};

node_failure no_reply_within(std::chrono::milliseconds timeout)
{
    return node_failure{node_errc::timed_out,
                        "no reply within " + std::to_string(timeout.count()) + " ms"};
}

asio::awaitable<inspect_result> inspect_op(std::shared_ptr<client_impl> c, std::string key,
                                           std::chrono::milliseconds timeout)
{
    // Read-only: any cancellation may simply stop the waiting.
    co_await asio::this_coro::throw_if_cancelled(false);
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    auto cs = co_await asio::this_coro::cancellation_state;
    if (key.empty() || timeout.count() <= 0) {
        co_return inspect_result{error::invalid_argument, {}};
    }
    if (c->shut_down) {
        co_return inspect_result{error::shut_down, {}};
    }
    const auto& nodes = c->connections;
    auto round = std::make_shared<inspect_round>(c->strand, c->cfg.key_prefix + key, nodes.size(),
                                                 clock::now() + timeout);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        round->states[i].endpoint = nodes[i]->name();
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        nodes[i]->submit(round, static_cast<std::uint32_t>(i), round->cmd);
    }
    // Replies are delivered on this strand, between the waits.
    while (round->remaining > 0) {
        if (cancelled(cs)) {
            round->give_up(nodes, failure_of(node_errc::cancelled), false);
            co_return inspect_result{asio::error::operation_aborted, std::move(round->states)};
        }
        if (clock::now() >= round->wake.expiry()) {
            round->give_up(nodes, no_reply_within(timeout), true);
            break;
        }
        round->waiting = true;
        co_await round->wake.async_wait(asio::as_tuple(asio::use_awaitable));
        round->waiting = false;
    }
    co_return inspect_result{error_code{}, std::move(round->states)};
}

}  // namespace

command inspect_command(std::string_view key)
{
    return script_command(script_id::inspect, {std::string(key)}, {});
}

void read_inspect_reply(const resp::reply& r, key_state& s)
{
    s.kind = key_kind::missing;
    s.type.clear();
    s.holders.clear();
    s.ttl.reset();
    s.replica_of.clear();
    const auto& e = r.elements;
    if (r.type != resp::kind::array || e.size() < 3 || !is_bulk(e[0]) ||
        e[1].type != resp::kind::integer || !is_bulk(e[2])) {
        set_unexpected(r, s);
        return;
    }
    s.type = e[0].text;
    s.replica_of = e[2].text;
    if (s.type == "none") {
        return;
    }
    // PTTL: -1 for no expiry (-2, missing, cannot follow an existing TYPE in one script).
    if (e[1].integer >= 0) {
        s.ttl = std::chrono::milliseconds(e[1].integer);
    }
    s.kind = key_kind::other;
    if (s.type == "string") {
        if (e.size() != 4 || !is_bulk(e[3])) {
            set_unexpected(r, s);
            return;
        }
        s.kind = key_kind::plain;
        s.holders.push_back({e[3].text, 1});
    } else if (s.type == "hash") {
        if (e.size() != 4 || e[3].type != resp::kind::array || e[3].elements.size() % 2 != 0) {
            set_unexpected(r, s);
            return;
        }
        const auto& fields = e[3].elements;
        std::vector<lock_holder> holders;
        for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
            const auto count =
                is_bulk(fields[i + 1]) ? hold_count(fields[i + 1].text) : std::nullopt;
            if (!is_bulk(fields[i]) || !count) {
                return;  // a hash, but not of hold counts: not one of our locks
            }
            holders.push_back({fields[i].text, *count});
        }
        s.kind = key_kind::reentrant;
        s.holders = std::move(holders);
    }
}

void initiate_inspect(std::shared_ptr<client_impl> c, std::string key,
                      std::chrono::milliseconds timeout, inspect_handler h)
{
    const auto strand = c->strand;
    const auto executor = c->executor;
    spawn_operation(strand, executor, inspect_op(std::move(c), std::move(key), timeout),
                    std::move(h));
}

}  // namespace redlock::detail
