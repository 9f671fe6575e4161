#include "detail/quorum.hpp"

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

constexpr const char* deadline_passed = "no reply before the per-node deadline";

// One round's requests, one per node, all of the same command: the connections hold it
// (and so the command) while requests are queued or in flight; the round's coroutine waits
// on `wake`, which expires at the round's deadline and is cancelled once there is something
// to decide.
struct round_state final : request_owner
{
    round_state(const asio::any_io_executor& ex, round&& r,
                const std::vector<std::shared_ptr<connection>>& nodes)
        : cmd(std::move(r.cmd)),
          read(r.read),
          value(std::move(r.value)),
          rule(r.rule),
          replies_with_token(r.replies_with_token),
          outcomes(nodes.size()),
          pending(nodes.size(), 1),
          remaining(nodes.size()),
          started(clock::now()),
          wake(ex, r.deadline)
    {
        seen.nodes = nodes.size();
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            outcomes[i].endpoint = nodes[i]->name();
        }
    }

    void deliver(std::uint32_t i, exec_result r) override
    {
        if (!pending[i]) {
            return;
        }
        node_outcome& o = outcomes[i];
        o.latency = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started);
        switch (r.state) {
            case exec_result::status::replied:
                o.status = read(r.reply, value, o.detail);
                if (replies_with_token && o.status == node_status::ok && r.reply.integer > 0) {
                    o.fencing_token = static_cast<std::uint64_t>(r.reply.integer);
                }
                break;
            case exec_result::status::timed_out:
                o.status = node_status::timed_out;
                o.detail = std::move(r.detail);
                break;
            case exec_result::status::failed:
                o.status = node_status::error;
                o.detail = std::move(r.detail);
                break;
            case exec_result::status::cancelled:
                o.status = node_status::abandoned;
                break;
        }
        pending[i] = 0;
        --remaining;
        seen.add(o.status);
        // The round's coroutine only needs waking once the outcome is decided.
        if (waiting && decided(seen, rule)) {
            waiting = false;
            wake.cancel();
        }
    }

    bool given_up(std::uint32_t i) const noexcept override { return !pending[i]; }

    // Stops waiting for node i: abandoned (the round stopped early, or was cancelled) or
    // timed out. Its request stays in the connection's pipeline; its reply is dropped.
    void give_up(std::size_t i, connection& node, bool timed_out)
    {
        node_outcome& o = outcomes[i];
        o.latency = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started);
        o.status = timed_out ? node_status::timed_out : node_status::abandoned;
        if (timed_out) {
            o.detail = deadline_passed;
        }
        pending[i] = 0;
        --remaining;
        seen.add(o.status);
        node.gave_up(timed_out);
    }

    command cmd;
    reply_reader read;
    std::string value;
    stop_rule rule;
    bool replies_with_token;
    std::vector<node_outcome> outcomes;
    boost::container::small_vector<unsigned char, 8> pending;
    std::size_t remaining;
    tally seen;
    clock::time_point started;
    asio::steady_timer wake;
    bool waiting = false;
};

// See `round::resumes_held_writes`.
class held_writes
{
  public:
    held_writes(const std::vector<std::shared_ptr<connection>>& nodes, bool held)
        : nodes_(nodes), held_(held)
    {
    }
    held_writes(const held_writes&) = delete;
    held_writes& operator=(const held_writes&) = delete;
    ~held_writes() { resume(); }
    void resume()
    {
        if (std::exchange(held_, false)) {
            resume_writes(nodes_);
        }
    }

  private:
    const std::vector<std::shared_ptr<connection>>& nodes_;
    bool held_;
};

}  // namespace

void hold_writes(const std::vector<std::shared_ptr<connection>>& nodes)
{
    for (const auto& node : nodes) {
        node->hold_writes();
    }
}

void resume_writes(const std::vector<std::shared_ptr<connection>>& nodes)
{
    for (const auto& node : nodes) {
        node->resume_writes();
    }
}

tally count(const std::vector<node_outcome>& outcomes)
{
    tally t;
    t.nodes = outcomes.size();
    for (const node_outcome& o : outcomes) {
        t.add(o.status);
    }
    return t;
}

asio::awaitable<std::vector<node_outcome>> run_round(
    const std::vector<std::shared_ptr<connection>>& nodes, round r)
{
    // No coroutine per node: each connection tells the round's state of its reply, and the
    // round's coroutine wakes once the outcome is decided, or at the deadline.
    auto ex = co_await asio::this_coro::executor;
    auto cs = co_await asio::this_coro::cancellation_state;
    const bool shuffle = r.shuffle;
    const clock::time_point deadline = r.deadline;
    // Writes held for this round are resumed once its requests are queued, and also if
    // queueing them fails: they must never stay held.
    held_writes held(nodes, r.resumes_held_writes);
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
        nodes[i]->submit(st, static_cast<std::uint32_t>(i), st->cmd);
    }
    held.resume();

    // Replies are delivered on this strand, so the loop sees a consistent picture. Once the
    // outcome is decided (or the caller cancels, or the deadline passes) the nodes still
    // pending are given up: their requests stay in the pipelines, their replies are dropped.
    while (st->remaining > 0) {
        const bool cancelled = cs.cancelled() != asio::cancellation_type::none;
        if (decided(st->seen, st->rule) || cancelled) {
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                if (st->pending[i]) {
                    st->give_up(i, *nodes[i], false);
                }
            }
            break;
        }
        if (clock::now() >= deadline) {
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                if (st->pending[i]) {
                    st->give_up(i, *nodes[i], true);
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

}  // namespace redlock::detail
