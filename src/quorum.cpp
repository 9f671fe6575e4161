#include "detail/quorum.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <numeric>
#include <random>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {

asio::awaitable<node_outcome> ask(std::shared_ptr<connection> node, command cmd, reply_reader read,
                                  std::string value, clock::time_point deadline,
                                  bool replies_with_token)
{
    auto sent = clock::now();
    exec_result r = co_await node->execute(std::move(cmd), deadline);
    node_outcome o;
    o.endpoint = node->name();
    o.latency = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - sent);
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
    co_return o;
}

}  // namespace

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
    // A gather of our own rather than the ranged experimental::make_parallel_group: in
    // Boost 1.81 that one can touch freed memory when its children complete while it is
    // still launching them (chriskohlhoff/asio#1630), which ASan showed here.
    auto ex = co_await asio::this_coro::executor;
    auto cs = co_await asio::this_coro::cancellation_state;
    struct gather
    {
        gather(const asio::any_io_executor& ex, std::size_t n)
            : outcomes(n),
              signals(n),
              finished(n, false),
              remaining(n),
              wake(ex, clock::time_point::max())
        {
            seen.nodes = n;
        }
        std::vector<node_outcome> outcomes;
        std::vector<asio::cancellation_signal> signals;
        std::vector<bool> finished;
        std::size_t remaining;
        tally seen;
        asio::steady_timer wake;
    };
    auto g = std::make_shared<gather>(ex, nodes.size());

    std::vector<std::size_t> order(nodes.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (r.shuffle) {
        thread_local std::mt19937 engine{std::random_device{}()};
        std::shuffle(order.begin(), order.end(), engine);
    }
    for (std::size_t i : order) {
        asio::co_spawn(ex, ask(nodes[i], r.cmd, r.read, r.value, r.deadline, r.replies_with_token),
                       asio::bind_cancellation_slot(
                           g->signals[i].slot(), [g, i, name = nodes[i]->name()](
                                                     const std::exception_ptr& e, node_outcome o) {
                               if (e) {
                                   o.endpoint = name;
                                   o.status = node_status::error;
                                   o.detail = "internal error while talking to the node";
                               }
                               g->seen.add(o.status);
                               g->outcomes[i] = std::move(o);
                               g->finished[i] = true;
                               --g->remaining;
                               g->wake.cancel();
                           }));
    }

    // Children complete on this strand, so the loop sees a consistent picture. Once the
    // outcome is decided (or the caller cancels) the rest are cancelled, and awaited, so
    // that no request outlives the round unaccounted.
    bool stopping = false;
    while (g->remaining > 0) {
        if (!stopping &&
            (decided(g->seen, r.rule) || cs.cancelled() != asio::cancellation_type::none)) {
            stopping = true;
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                if (!g->finished[i]) {
                    g->signals[i].emit(asio::cancellation_type::terminal);
                }
            }
            continue;
        }
        co_await g->wake.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    co_return std::move(g->outcomes);
}

}  // namespace redlock::detail
