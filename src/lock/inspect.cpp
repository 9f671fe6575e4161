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
#include "protocol/key_space.hpp"
#include "protocol/script_table.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
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

// A decimal integer, as the scripts store hold counts, expiries and limits.
std::optional<std::int64_t> whole_number(const resp::reply& r)
{
    if (!is_bulk(r)) {
        return std::nullopt;
    }
    std::int64_t n = 0;
    const char* end = r.text.data() + r.text.size();
    const auto [p, ec] = std::from_chars(r.text.data(), end, n);
    if (ec != std::errc{} || p != end) {
        return std::nullopt;
    }
    return n;
}

// The holder of one entry that expires at `expiry` (the server's ms) if it is still live at
// `now`.
std::optional<lock_holder> live_entry(std::string value, holder_role role, std::int64_t expiry,
                                      std::int64_t now)
{
    if (expiry <= now) {
        return std::nullopt;
    }
    return lock_holder{std::move(value), 1, role, std::chrono::milliseconds(expiry - now)};
}

// A read-write lock's hash: every field a mode ('r', 'w' or 'i'), ':' and an owner value,
// every value an expiry. False when `fields` are something else.
bool read_read_write(const std::vector<resp::reply>& fields, std::int64_t now, key_state& s)
{
    std::vector<lock_holder> holders;
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
        const std::string& field = fields[i].text;
        const auto expiry = whole_number(fields[i + 1]);
        if (!is_bulk(fields[i]) || field.size() < 2 || field[1] != ':' || !expiry) {
            return false;
        }
        const holder_role role = field[0] == 'r'   ? holder_role::reader
                                 : field[0] == 'w' ? holder_role::writer
                                 : field[0] == 'i' ? holder_role::waiting_writer
                                                   : holder_role::owner;
        if (role == holder_role::owner) {
            return false;
        }
        if (auto h = live_entry(field.substr(2), role, *expiry, now)) {
            holders.push_back(std::move(*h));
        }
    }
    s.kind = key_kind::read_write;
    s.holders = std::move(holders);
    return true;
}

// A hash: a reentrant lock's hold counts, or a read-write lock's entries when the reply has
// the server's time; neither leaves the kind `other`.
void read_hash(const resp::reply& r, key_state& s)
{
    const auto& e = r.elements;
    if (e.size() < 4 || e[3].type != resp::kind::array || e[3].elements.size() % 2 != 0) {
        set_unexpected(r, s);
        return;
    }
    const auto& fields = e[3].elements;
    const auto now = e.size() > 4 ? whole_number(e[4]) : std::nullopt;
    if (now && !fields.empty() && read_read_write(fields, *now, s)) {
        return;
    }
    std::vector<lock_holder> holders;
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
        const auto count = is_bulk(fields[i + 1]) ? hold_count(fields[i + 1].text) : std::nullopt;
        if (!is_bulk(fields[i]) || !count) {
            return;  // a hash, but not of hold counts: not one of our locks
        }
        holders.push_back({fields[i].text, *count, holder_role::owner, std::nullopt});
    }
    s.kind = key_kind::reentrant;
    s.holders = std::move(holders);
}

// A sorted set: a semaphore's permits {owner value: expiry}, then the server's time and the
// limit ('' when none is stored).
void read_semaphore(const resp::reply& r, key_state& s)
{
    const auto& e = r.elements;
    const auto now = e.size() == 6 ? whole_number(e[4]) : std::nullopt;
    if (!now || e[3].type != resp::kind::array || e[3].elements.size() % 2 != 0 || !is_bulk(e[5])) {
        set_unexpected(r, s);
        return;
    }
    const auto& entries = e[3].elements;
    std::vector<lock_holder> holders;
    for (std::size_t i = 0; i + 1 < entries.size(); i += 2) {
        const auto expiry = whole_number(entries[i + 1]);
        if (!is_bulk(entries[i]) || !expiry) {
            return;  // a sorted set, but not of expiries: not one of our semaphores
        }
        if (auto h = live_entry(entries[i].text, holder_role::owner, *expiry, *now)) {
            holders.push_back(std::move(*h));
        }
    }
    s.kind = key_kind::semaphore;
    s.holders = std::move(holders);
    s.permits = whole_number(e[5]).value_or(0);
}

// A fair lock's queue: the server's time `now`, then four elements per entry in the queue's
// order (value, ticket, state, expiry). An entry past its expiry, or without one (the node
// dropped it), is left out. False when `queue` is something else.
// An entry's state: 'p' pending, 'c' committed, or 'c' and the stamp that lets a release hand
// it the key.
bool committed_state(std::string_view state)
{
    return !state.empty() && state.front() == 'c';
}

bool read_queue(const resp::reply& now_reply, const resp::reply& queue, key_state& s)
{
    const auto now = whole_number(now_reply);
    const auto& e = queue.elements;
    if (!now || queue.type != resp::kind::array || e.size() % 4 != 0) {
        return false;
    }
    std::vector<queued_waiter> waiters;
    for (std::size_t i = 0; i < e.size(); i += 4) {
        const auto ticket = whole_number(e[i + 1]);
        if (!is_bulk(e[i]) || !ticket || *ticket < 0 || !is_bulk(e[i + 2]) || !is_bulk(e[i + 3])) {
            return false;
        }
        const auto expiry = whole_number(e[i + 3]);
        if (expiry && *expiry > *now) {
            waiters.push_back({e[i].text, static_cast<std::uint64_t>(*ticket),
                               committed_state(e[i + 2].text),
                               std::chrono::milliseconds(*expiry - *now)});
        }
    }
    s.queue = std::move(waiters);
    return true;
}

using inspect_result = std::tuple<error_code, std::vector<key_state>>;

// The requests of one inspection, one per node; the connections hold it while they are
// queued or in flight. Its coroutine waits on `wake`, cancelled once every node answered.
struct inspect_round final : request_owner
{
    inspect_round(const asio::any_io_executor& ex, command c, std::size_t nodes,
                  clock::time_point deadline)
        : cmd(std::move(c)), states(nodes), pending(nodes, 1), remaining(nodes), wake(ex, deadline)
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
    // A semaphore's limit and a fair lock's queue live beside its key, in its slot on a
    // cluster.
    const std::string full_key = c->cfg.key_prefix + key;
    auto round = std::make_shared<inspect_round>(
        c->strand, inspect_command(inspected_keys_of(c->cfg.key_prefix, full_key, c->in_cluster)),
        nodes.size(), clock::now() + timeout);
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

inspected_keys inspected_keys_of(std::string_view prefix, std::string_view key, bool in_cluster)
{
    inspected_keys k{std::string(key), limit_key(prefix, key, in_cluster), {}};
    k.queue = {queue_key(prefix, key, queue_part::order, in_cluster),
               queue_key(prefix, key, queue_part::expiries, in_cluster),
               queue_key(prefix, key, queue_part::states, in_cluster)};
    return k;
}

command inspect_command(const inspected_keys& keys)
{
    std::vector<std::string> names{keys.key};
    if (!keys.limit.empty()) {
        names.push_back(keys.limit);
        for (const std::string& part : keys.queue) {
            if (!part.empty()) {
                names.push_back(part);
            }
        }
    }
    return script_command(script_id::inspect, names, {});
}

void read_inspect_reply(const resp::reply& r, key_state& s)
{
    s.kind = key_kind::missing;
    s.type.clear();
    s.holders.clear();
    s.ttl.reset();
    s.permits = 0;
    s.queue.clear();
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
        if (e.size() == 5 && !read_queue(e[3], e[4], s)) {
            set_unexpected(r, s);
        }
        return;
    }
    // PTTL: -1 for no expiry (-2, missing, cannot follow an existing TYPE in one script).
    if (e[1].integer >= 0) {
        s.ttl = std::chrono::milliseconds(e[1].integer);
    }
    s.kind = key_kind::other;
    if (s.type == "string") {
        if ((e.size() != 4 && e.size() != 6) || !is_bulk(e[3]) ||
            (e.size() == 6 && !read_queue(e[4], e[5], s))) {
            set_unexpected(r, s);
            return;
        }
        s.kind = key_kind::plain;
        s.holders.push_back({e[3].text, 1, holder_role::owner, std::nullopt});
        // A fair holder keeps its entry at the head until it releases: it waits no more.
        std::erase_if(s.queue, [&](const queued_waiter& w) { return w.value == e[3].text; });
    } else if (s.type == "hash") {
        read_hash(r, s);
    } else if (s.type == "zset") {
        read_semaphore(r, s);
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
