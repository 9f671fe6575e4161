// SPDX-License-Identifier: BSL-1.0
#include "quorum/quorum.hpp"

#include "core/node_error.hpp"
#include "quorum/round_fsm.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

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
// (and so the command) while requests are queued or in flight. `fsm` decides; the round's
// coroutine (see `run_round`), and once it returned its background wait (`drive_background`),
// do what it says. Both wait on `wake`, which expires at the round's deadline and is cancelled
// when the fsm asks for a wake-up.
struct round_state final : request_owner, std::enable_shared_from_this<round_state>
{
    round_state(const asio::any_io_executor& ex, round&& r, std::size_t nodes)
        : cmd(std::move(r.cmd)),
          how{.read = r.read,
              .value = r.value,
              .replicas = r.replicas,
              .replies_with_token = r.replies_with_token},
          background(std::move(r.background)),
          kept(r.kept_replies),
          outcomes(nodes),
          fsm(nodes, r.quorum, r.rule, r.deadline, background != nullptr),
          started(clock::now()),
          wake(ex, r.deadline)
    {
    }

    std::chrono::microseconds since_start(clock::time_point now) const
    {
        return std::chrono::duration_cast<std::chrono::microseconds>(now - started);
    }

    void deliver(std::uint32_t i, exec_result r) override
    {
        if (!fsm.pending(i)) {
            return;
        }
        // Once the caller has the outcomes, `how.value` may be gone: a reply only counts down.
        node_status status = node_status::abandoned;
        if (!fsm.handed_over()) {
            outcomes[i].latency = since_start(clock::now());
            // A read of data keeps the reply, which read_result takes.
            resp::reply reply = kept != nullptr ? r.reply : resp::reply{};
            status = read_result(outcomes[i], std::move(r), how);
            if (kept != nullptr && status == node_status::ok) {
                (*kept)[i] = std::move(reply);
            }
        }
        if (fsm.answered(i, status)) {
            wake.cancel();
        }
    }

    bool given_up(std::uint32_t i) const noexcept override { return !fsm.pending(i); }

    // Node i's deadline passed while the caller waits. Its request stays in the connection's
    // pipeline; its reply is dropped. The connection hears of it: a server that lets every
    // request in flight time out is considered stuck.
    void time_out(std::uint32_t i, node_link& node, clock::time_point now)
    {
        node_outcome& o = outcomes[i];
        o.latency = since_start(now);
        o.status = node_status::timed_out;
        set_failure(o, node_errc::timed_out);
        node.gave_up(*this, i, true);
    }

    // The caller gets the outcomes: nodes still pending are abandoned, for `why` (their code,
    // without its message: see `run_round`).
    std::vector<node_outcome> hand_over(node_errc why, clock::time_point now)
    {
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            if (fsm.pending(i)) {
                outcomes[i].latency = since_start(now);
                outcomes[i].status = node_status::abandoned;
                outcomes[i].code = why;
            }
        }
        return std::move(outcomes);
    }

    // The round's caller has its outcome; the requests still pending go on until they are
    // answered or time out, counted by `background`.
    void continue_in_background(const std::vector<std::shared_ptr<node_link>>& nodes)
    {
        background->begin();
        tail_nodes.assign(nodes.begin(), nodes.end());
        drive_background();
    }

    // Does what the fsm says while the round goes on without its caller, up to the next wait.
    void drive_background()
    {
        const clock::time_point now = clock::now();
        for (;;) {
            const round_fsm::action a = fsm.next(now, false);
            switch (a.step) {
                case round_step::wait:
                    wake.async_wait([self = shared_from_this()](const boost::system::error_code&) {
                        self->drive_background();
                    });
                    return;
                case round_step::give_up:
                    if (auto node = tail_nodes[a.node].lock()) {
                        node->gave_up(*this, a.node, a.timed_out);
                    }
                    break;
                case round_step::background_done:
                    tail_nodes.clear();
                    background->end();
                    break;
                default:
                    return;
            }
        }
    }

    command cmd;
    // `how.value` is read only until the caller has the outcomes (see `round::value`).
    reply_reading how;
    std::shared_ptr<background_work> background;
    // Replies kept for the caller (`round::kept_replies`), until it has the outcomes.
    std::vector<resp::reply>* kept;
    std::vector<node_outcome> outcomes;
    round_fsm fsm;
    clock::time_point started;
    asio::steady_timer wake;
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

namespace {

// Queues the command on every node (shuffled, if asked), but those `skip` names.
void submit_all(const std::shared_ptr<round_state>& st,
                const std::vector<std::shared_ptr<node_link>>& nodes, bool shuffle,
                const std::vector<bool>& skip, std::string_view skip_detail)
{
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
            st->outcomes[i].status = node_status::missing;
            st->outcomes[i].detail = std::string(skip_detail);
            st->fsm.skipped(i);
        } else {
            nodes[i]->submit(st, static_cast<std::uint32_t>(i), st->cmd);
        }
    }
}

}  // namespace

asio::awaitable<std::vector<node_outcome>> run_round(
    const std::vector<std::shared_ptr<node_link>>& nodes, round r)
{
    // No coroutine per node: each connection tells the round's state of its reply, and the
    // round's coroutine wakes once the fsm says the outcome is decided, or at the deadline.
    auto ex = co_await asio::this_coro::executor;
    auto cs = co_await asio::this_coro::cancellation_state;
    const bool shuffle = r.shuffle;
    // Ended once the requests are queued, and also if queueing them fails.
    write_hold hold = std::move(r.ends_hold);
    const std::vector<bool> skip = std::move(r.skip);
    const std::string_view skip_detail = r.skip_detail;
    if (r.kept_replies != nullptr) {
        r.kept_replies->assign(nodes.size(), resp::reply{});
    }
    auto st = std::make_shared<round_state>(ex, std::move(r), nodes.size());
    submit_all(st, nodes, shuffle, skip, skip_detail);
    hold.end();

    // Replies are delivered on this strand, so the loop sees a consistent picture. The steps
    // between two waits take no time: they share one reading of the clock.
    std::vector<node_outcome> handed;
    clock::time_point now = clock::now();
    for (;;) {
        const bool cancelled = cs.cancelled() != asio::cancellation_type::none;
        const round_fsm::action a = st->fsm.next(now, cancelled);
        switch (a.step) {
            case round_step::wait:
                co_await st->wake.async_wait(asio::as_tuple(asio::use_awaitable));
                now = clock::now();
                break;
            case round_step::time_out:
                st->time_out(a.node, *nodes[a.node], now);
                break;
            case round_step::give_up:
                nodes[a.node]->gave_up(*st, a.node, a.timed_out);
                break;
            case round_step::hand_over:
                handed = st->hand_over(a.why, now);
                break;
            case round_step::continue_in_background:
                st->continue_in_background(nodes);
                co_return handed;
            case round_step::background_done:
            case round_step::complete:
                co_return st->fsm.handed_over() ? std::move(handed) : std::move(st->outcomes);
        }
    }
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
