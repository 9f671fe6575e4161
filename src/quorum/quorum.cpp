// SPDX-License-Identifier: BSL-1.0
#include "quorum/quorum.hpp"

#include "core/node_error.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <random>
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {

// A node outcome whose code's message tells it in full: a deadline passed, or the node was
// not awaited.
void set_failure(node_outcome& o, node_errc why)
{
    node_failure f = failure_of(why);
    o.code = f.code;
    o.detail = std::move(f.detail);
}

// One round's requests, one per node, all of the same command: the connections hold it
// (and so the command) while requests are queued or in flight; the round's coroutine waits
// on `wake`, which expires at the round's deadline and is cancelled once there is something
// to decide. A round that completes with requests still pending may go on without its
// coroutine (see `continue_in_background`).
struct round_state final : request_owner, std::enable_shared_from_this<round_state>
{
    round_state(const asio::any_io_executor& ex, round&& r,
                const std::vector<std::shared_ptr<node_link>>& nodes)
        : cmd(std::move(r.cmd)),
          read(r.read),
          value(r.value),
          rule(r.rule),
          replies_with_token(r.replies_with_token),
          replicas(r.replicas),
          background(std::move(r.background)),
          outcomes(nodes.size()),
          pending(nodes.size(), 1),
          remaining(nodes.size()),
          started(clock::now()),
          deadline(r.deadline),
          wake(ex, r.deadline)
    {
        seen.nodes = nodes.size();
        seen.need = r.quorum;
    }

    void deliver(std::uint32_t i, exec_result r) override
    {
        if (!pending[i]) {
            return;
        }
        if (handed_over) {
            // The caller has the outcomes: a reply in the background only counts down.
            pending[i] = 0;
            --remaining;
            wake_if_decided();
            return;
        }
        node_outcome& o = outcomes[i];
        o.latency = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started);
        switch (r.status) {
            case exec_result::outcome::replied: {
                node_failure why;
                o.status = replicas > 0 ? read_replicated_reply(r.reply, read, value, replicas, why)
                                        : read(r.reply, value, why);
                o.code = why.code;
                o.detail = std::move(why.detail);
                // An ok reply followed by WAIT's is well-formed: its first element is the
                // command's own.
                const resp::reply& own = replicas > 0 && o.status == node_status::ok
                                             ? r.reply.elements.front()
                                             : r.reply;
                if (replies_with_token && o.status == node_status::ok && own.integer > 0) {
                    o.fencing_token = static_cast<std::uint64_t>(own.integer);
                }
                break;
            }
            case exec_result::outcome::timed_out:
                o.status = node_status::timed_out;
                break;
            case exec_result::outcome::failed:
                o.status = node_status::error;
                break;
            case exec_result::outcome::cancelled:
                o.status = node_status::abandoned;
                break;
        }
        if (r.status != exec_result::outcome::replied) {
            o.code = r.code;
            o.detail = std::move(r.detail);
        }
        pending[i] = 0;
        --remaining;
        seen.add(o.status);
        wake_if_decided();
    }

    // The round's coroutine (or its background wait) only needs waking once the outcome is
    // decided; in the background, once every request is answered.
    void wake_if_decided()
    {
        if (waiting && (handed_over ? remaining == 0 : decided(seen, rule))) {
            waiting = false;
            wake.cancel();
        }
    }

    bool given_up(std::uint32_t i) const noexcept override { return !pending[i]; }

    // Node i does not get the round's command (see `round::skip`).
    void skip(std::size_t i, std::string_view why)
    {
        node_outcome& o = outcomes[i];
        o.status = node_status::missing;
        o.detail = std::string(why);
        pending[i] = 0;
        --remaining;
        seen.add(o.status);
    }

    // Stops waiting for node i at the deadline. Its request stays in the connection's
    // pipeline; its reply is dropped. The connection hears of it: a server that lets every
    // request in flight time out is considered stuck.
    void time_out(std::size_t i, node_link& node)
    {
        if (!handed_over) {
            node_outcome& o = outcomes[i];
            o.latency =
                std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started);
            o.status = node_status::timed_out;
            set_failure(o, node_errc::timed_out);
            seen.add(o.status);
        }
        pending[i] = 0;
        --remaining;
        node.gave_up(*this, static_cast<std::uint32_t>(i), true);
    }

    // Hands the outcomes to the round's caller: nodes still pending are abandoned, for `why`
    // (their code, without its message: see `run_round`). What still arrives for them only
    // counts down `remaining`.
    std::vector<node_outcome> hand_over(node_errc why)
    {
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            if (pending[i]) {
                outcomes[i].latency =
                    std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started);
                outcomes[i].status = node_status::abandoned;
                outcomes[i].code = why;
            }
        }
        handed_over = true;
        return std::move(outcomes);
    }

    // Stops waiting for the nodes still pending (their replies are dropped).
    void abandon(const std::vector<std::shared_ptr<node_link>>& nodes)
    {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (pending[i]) {
                pending[i] = 0;
                --remaining;
                nodes[i]->gave_up(*this, static_cast<std::uint32_t>(i), false);
            }
        }
    }

    // The round's caller has its outcome; the requests still pending go on until they are
    // answered or time out, counted by `background`.
    void continue_in_background(const std::vector<std::shared_ptr<node_link>>& nodes)
    {
        background->begin();
        tail_nodes.assign(nodes.begin(), nodes.end());
        wait_in_background();
    }

    void wait_in_background()
    {
        waiting = true;
        wake.async_wait([self = shared_from_this()](const boost::system::error_code&) {
            self->waiting = false;
            if (self->remaining > 0 && clock::now() < self->deadline) {
                self->wait_in_background();
                return;
            }
            for (std::size_t i = 0; i < self->tail_nodes.size(); ++i) {
                if (!self->pending[i]) {
                    continue;
                }
                if (auto node = self->tail_nodes[i].lock()) {
                    self->time_out(i, *node);
                } else {
                    self->pending[i] = 0;
                    --self->remaining;
                }
            }
            self->tail_nodes.clear();
            self->background->end();
        });
    }

    command cmd;
    reply_reader read;
    // Read only until `handed_over` (see `round::value`).
    std::string_view value;
    stop_rule rule;
    bool replies_with_token;
    int replicas;
    std::shared_ptr<background_work> background;
    std::vector<node_outcome> outcomes;
    boost::container::small_vector<unsigned char, 8> pending;
    std::size_t remaining;
    tally seen;
    clock::time_point started;
    clock::time_point deadline;
    asio::steady_timer wake;
    bool waiting = false;
    // The caller has the outcomes (`hand_over`).
    bool handed_over = false;
    // While the round goes on in the background: the nodes its requests went to. Weak: the
    // connections hold the round while its requests are pending, and a cycle would keep both
    // alive when the io_context is destroyed with the round under way.
    std::vector<std::weak_ptr<node_link>> tail_nodes;
};

}  // namespace

namespace {

// Nobody waits for its replies.
struct broadcast_owner final : request_owner
{
    command cmd;
    void deliver(std::uint32_t, exec_result) override {}
    bool given_up(std::uint32_t) const noexcept override { return false; }
};

}  // namespace

void broadcast(const std::vector<std::shared_ptr<node_link>>& nodes, command cmd)
{
    auto owner = std::make_shared<broadcast_owner>();
    owner->cmd = std::move(cmd);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        nodes[i]->submit(owner, static_cast<std::uint32_t>(i), owner->cmd);
    }
}

tally count(const std::vector<node_outcome>& outcomes, std::size_t quorum)
{
    tally t;
    t.nodes = outcomes.size();
    t.need = quorum;
    for (const node_outcome& o : outcomes) {
        t.add(o.status);
    }
    return t;
}

asio::awaitable<std::vector<node_outcome>> run_round(
    const std::vector<std::shared_ptr<node_link>>& nodes, round r)
{
    // No coroutine per node: each connection tells the round's state of its reply, and the
    // round's coroutine wakes once the outcome is decided, or at the deadline.
    auto ex = co_await asio::this_coro::executor;
    auto cs = co_await asio::this_coro::cancellation_state;
    const bool shuffle = r.shuffle;
    // Ended once the requests are queued, and also if queueing them fails.
    write_hold hold = std::move(r.ends_hold);
    const std::vector<bool> skip = std::move(r.skip);
    const std::string_view skip_detail = r.skip_detail;
    auto st = std::make_shared<round_state>(ex, std::move(r), nodes);

    std::size_t order_buf[16];
    std::vector<std::size_t> order_vec;
    std::size_t* order = order_buf;
    if (nodes.size() > std::size(order_buf)) {
        order_vec.resize(nodes.size());
        order = order_vec.data();
    }
    std::iota(order, order + nodes.size(), std::size_t{0});
    if (shuffle) {
        thread_local std::mt19937 engine{std::random_device{}()};
        std::shuffle(order, order + nodes.size(), engine);
    }
    for (std::size_t k = 0; k < nodes.size(); ++k) {
        const std::size_t i = order[k];
        if (i < skip.size() && skip[i]) {
            st->skip(i, skip_detail);
        } else {
            nodes[i]->submit(st, static_cast<std::uint32_t>(i), st->cmd);
        }
    }
    hold.end();

    // Replies are delivered on this strand, so the loop sees a consistent picture.
    while (st->remaining > 0) {
        const bool cancelled = cs.cancelled() != asio::cancellation_type::none;
        if (decided(st->seen, st->rule) || cancelled) {
            const node_errc why = st->background ? node_errc::in_background
                                  : cancelled    ? node_errc::cancelled
                                  : st->seen.reached() || st->seen.replied() >= st->seen.quorum()
                                      ? node_errc::decided_by_quorum
                                      : node_errc::quorum_impossible;
            std::vector<node_outcome> now = st->hand_over(why);
            if (st->background) {
                st->continue_in_background(nodes);
            } else {
                st->abandon(nodes);
            }
            co_return now;
        }
        if (clock::now() >= st->deadline) {
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                if (st->pending[i]) {
                    st->time_out(i, *nodes[i]);
                }
            }
            break;
        }
        st->waiting = true;
        co_await st->wake.async_wait(asio::as_tuple(asio::use_awaitable));
        st->waiting = false;
    }
    co_return std::move(st->outcomes);
}

bool quorum_ruled_out(const std::vector<node_outcome>& outcomes, std::size_t quorum) noexcept
{
    std::size_t misconfigured = 0;
    for (const node_outcome& o : outcomes) {
        if (o.status == node_status::error && is_misconfiguration(o.code)) {
            ++misconfigured;
        }
    }
    const std::size_t need = quorum != 0 ? quorum : quorum_of(outcomes.size());
    return misconfigured > 0 && outcomes.size() - misconfigured < need;
}

}  // namespace redlock::detail
