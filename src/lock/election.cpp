// SPDX-License-Identifier: BSL-1.0
// An election's operations: campaign (a fair acquire, then the leader's publication),
// proclaim, leader and observe.

#include <redlock/election.hpp>
#include <redlock/error.hpp>

#include "core/spawn.hpp"
#include "lock/acquire.hpp"
#include "lock/client_impl.hpp"
#include "lock/election_rules.hpp"
#include "lock/fair_rules.hpp"
#include "lock/guard_op_fsm.hpp"
#include "lock/lock_rounds.hpp"
#include "lock/lock_state.hpp"
#include "lock/validity.hpp"
#include "lock/watchdog.hpp"
#include "protocol/election_requests.hpp"
#include "protocol/key_space.hpp"
#include "quorum/quorum.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

using void_result = std::tuple<error_code>;
using leader_result = std::tuple<error_code, std::optional<redlock::leader>>;

// A publication's version: the leader's own clock, which only grows, so that its later
// publications win over earlier ones on the nodes that missed some.
std::uint64_t next_version()
{
    return static_cast<std::uint64_t>(clock::now().time_since_epoch().count());
}

// Publishes `value` as the value of the leader that holds `l`: confirmed by a quorum, or lost
// when the lock is gone from a majority, or failed.
asio::awaitable<error_code> publish(const std::shared_ptr<lock_state>& l, std::string_view value)
{
    const mutex_state& m = *l->mutex;
    const options& o = m.opts;
    request req = proclaim_request(
        m.shape(), l->value, {.term = l->fencing_token, .version = next_version(), .value = value});
    // Made before the co_await: g++ 12 destroys a braced temporary inside one twice.
    round r{.cmd = std::move(req.cmd),
            .read = req.read,
            .value = l->value,
            .deadline = clock::now() + node_timeout(o.expiry, o.timeout_factor),
            .rule = stop_rule::quorum_reached,
            .quorum = m.quorum,
            .shuffle = o.shuffle_nodes};
    auto outcomes = co_await run_round(m.client->connections, std::move(r));
    const tally t = keep_report(*l, std::move(outcomes));
    if (t.reached()) {
        co_return error_code{};
    }
    if (definitely_gone(t)) {
        declare_lost(*l);
        co_return make_error_code(error::lost);
    }
    co_return make_error_code(error::failed);
}

asio::awaitable<guard_result> campaign_op(std::shared_ptr<mutex_state> m, std::string value)
{
    if (value.size() > max_published_value) {
        co_return guard_result{error::invalid_argument, guard{}};
    }
    auto [ec, g] = co_await acquire_op(m, false);
    if (ec) {
        co_return guard_result{ec, std::move(g)};
    }
    const auto l = access::state_of(g);
    if (const error_code published = co_await publish(l, value)) {
        // A leader nobody can read is no use: it resigns (its guard keeps the report).
        co_await g.async_release(asio::as_tuple(use_awaitable));
        co_return guard_result{error::failed, std::move(g)};
    }
    co_return guard_result{error_code{}, std::move(g)};
}

// Why `l` cannot publish for election `m`, if it cannot.
error_code proclaim_refusal(const mutex_state& m, const std::shared_ptr<lock_state>& l,
                            std::string_view value)
{
    if (value.size() > max_published_value) {
        return error::invalid_argument;
    }
    if (!l || l->mutex.get() != &m || !l->owns) {
        return error::not_held;
    }
    if (m.client->shut_down) {
        return error::shut_down;
    }
    if (l->lost) {
        return error::lost;
    }
    return {};
}

asio::awaitable<void_result> proclaim_op(std::shared_ptr<mutex_state> m,
                                         std::shared_ptr<lock_state> l, std::string value)
{
    co_await accept_cancellation();
    if (const error_code ec = proclaim_refusal(*m, l, value)) {
        co_return void_result{ec};
    }
    co_return void_result{co_await publish(l, value)};
}

// Who leads, as the nodes say now.
asio::awaitable<leader_view> read_leader(const mutex_state& m)
{
    const options& o = m.opts;
    request req = leader_read_request(m.shape());
    std::vector<resp::reply> replies;
    round r{.cmd = std::move(req.cmd),
            .read = req.read,
            .deadline = clock::now() + node_timeout(o.expiry, o.timeout_factor),
            .rule = stop_rule::all_answered,
            .quorum = m.quorum,
            .kept_replies = &replies};
    auto outcomes = co_await run_round(m.client->connections, std::move(r));
    std::vector<std::optional<leader_entry>> nodes(outcomes.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        if (outcomes[i].status == node_status::ok) {
            nodes[i] = leader_on(replies[i]);
        }
    }
    co_return view_of(nodes, m.quorum);
}

asio::awaitable<leader_result> leader_op(std::shared_ptr<mutex_state> m)
{
    auto cs = co_await accept_cancellation();
    leader_result out{error::shut_down, std::nullopt};
    if (!m->client->shut_down) {
        leader_view v = co_await read_leader(*m);
        std::get<0>(out) = cancelled(cs) ? make_error_code(asio::error::operation_aborted)
                           : !v.answered ? make_error_code(error::failed)
                                         : error_code{};
        if (!std::get<0>(out)) {
            std::get<1>(out) = std::move(v.who);
        }
    }
    co_return out;
}

// An observer's registration with the client and its subscribers, for as long as it waits.
class observation
{
  public:
    explicit observation(std::shared_ptr<mutex_state> m)
        : m_(std::move(m)), watcher_(m_->client->strand)
    {
        m_->client->observers->add(key(), watcher_);
        for (const auto& s : m_->client->subscribers) {
            s->watch(key(), leader_channel_suffix);
        }
    }
    observation(const observation&) = delete;
    observation& operator=(const observation&) = delete;
    ~observation()
    {
        for (const auto& s : m_->client->subscribers) {
            s->unwatch(key(), leader_channel_suffix);
        }
        m_->client->observers->remove(key(), watcher_);
    }

    const std::string& key() const { return m_->keys.front(); }
    leader_watcher& watcher() { return watcher_; }

  private:
    std::shared_ptr<mutex_state> m_;
    leader_watcher watcher_;
};

// How long an observer waits before it reads again, unless an announcement comes first: until
// the leader would lapse (a crashed one is not announced), and never longer than a queued
// waiter's refresh period (an announcement may be lost, or come before the subscription).
std::chrono::milliseconds next_look(const mutex_state& m, const leader_view& v)
{
    const std::chrono::milliseconds refresh = fair_timing_for(m.opts.expiry).refresh;
    if (!v.answered) {
        // A user's delay policy may throw (acquire reports that as delay_failed); an observer
        // only needs some pause, and looks again after its refresh period then.
        try {
            return std::max(m.opts.retry_delay(1), std::chrono::milliseconds{1});
        } catch (const std::exception&) {
            return refresh;
        }
    }
    if (v.lapses_in) {
        return std::min(refresh, *v.lapses_in + std::chrono::milliseconds{1});
    }
    return refresh;
}

asio::awaitable<leader_result> observe_op(std::shared_ptr<mutex_state> m,
                                          std::optional<redlock::leader> last_seen)
{
    auto cs = co_await accept_cancellation();
    observation watch(m);
    leader_watcher& w = watch.watcher();
    leader_view v;
    error_code ec;
    for (;;) {
        if (m->client->shut_down) {
            ec = error::shut_down;
            break;
        }
        w.announced = false;
        v = co_await read_leader(*m);
        if (cancelled(cs)) {
            ec = asio::error::operation_aborted;
            break;
        }
        if (v.answered && v.who != last_seen) {
            break;
        }
        if (!w.announced) {
            w.wake.expires_after(next_look(*m, v));
            co_await w.wake.async_wait(asio::as_tuple(use_awaitable));
            if (cancelled(cs)) {
                ec = asio::error::operation_aborted;
                break;
            }
        }
    }
    leader_result out{ec, ec ? std::nullopt : std::move(v.who)};
    co_return out;
}

}  // namespace

void initiate_campaign(std::shared_ptr<mutex_state> m, std::string value, guard_handler h)
{
    auto c = m->client;
    spawn_operation(c->strand, c->executor, campaign_op(std::move(m), std::move(value)),
                    std::move(h));
}

void initiate_proclaim(std::shared_ptr<mutex_state> m, std::shared_ptr<lock_state> l,
                       std::string value, void_handler h)
{
    auto c = m->client;
    spawn_operation(c->strand, c->executor,
                    proclaim_op(std::move(m), std::move(l), std::move(value)), std::move(h));
}

void initiate_leader(std::shared_ptr<mutex_state> m, leader_handler h)
{
    auto c = m->client;
    spawn_operation(c->strand, c->executor, leader_op(std::move(m)), std::move(h));
}

void initiate_observe(std::shared_ptr<mutex_state> m, std::optional<redlock::leader> last_seen,
                      leader_handler h)
{
    auto c = m->client;
    spawn_operation(c->strand, c->executor, observe_op(std::move(m), std::move(last_seen)),
                    std::move(h));
}

}  // namespace redlock::detail
