// SPDX-License-Identifier: BSL-1.0
#include "node/node_link.hpp"

#include "core/node_error.hpp"
#include "node/cluster/cluster_link.hpp"
#include "node/connection.hpp"
#include "node/sentinel/sentinel_link.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// One request awaited by `execute`.
struct single_request final : request_owner
{
    single_request(const asio::any_io_executor& ex, command c, clock::time_point deadline)
        : cmd(std::move(c)), signal(ex, deadline)
    {
    }
    void deliver(std::uint32_t, exec_result r) override
    {
        if (abandoned) {
            return;
        }
        result = std::move(r);
        done = true;
        signal.cancel();
    }
    bool given_up(std::uint32_t) const noexcept override { return abandoned; }

    command cmd;
    // Expires at the request's deadline; cancelled when the outcome is known.
    asio::steady_timer signal;
    bool done = false;
    bool abandoned = false;
    exec_result result;
};

exec_result given_up(exec_result::outcome status, node_errc why)
{
    node_failure f = failure_of(why);
    return exec_result{status, {}, std::move(f.detail), f.code};
}

}  // namespace

asio::awaitable<exec_result> execute(node_link& link, command cmd, clock::time_point deadline)
{
    auto req = std::make_shared<single_request>(co_await asio::this_coro::executor, std::move(cmd),
                                                deadline);
    link.submit(req, 0, req->cmd);
    while (!req->done) {
        auto [ec] = co_await req->signal.async_wait(use_tuple);
        if (req->done) {
            break;
        }
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none) {
            req->abandoned = true;
            link.gave_up(*req, 0, false);
            co_return given_up(exec_result::outcome::cancelled, node_errc::cancelled);
        }
        if (!ec || clock::now() >= deadline) {
            req->abandoned = true;
            link.gave_up(*req, 0, true);
            co_return given_up(exec_result::outcome::timed_out, node_errc::timed_out);
        }
    }
    co_return std::move(req->result);
}

std::shared_ptr<node_link> make_link(asio::any_io_executor strand, const node& n,
                                     const connection_settings& settings)
{
    if (!n.cluster_seeds.empty()) {
        return std::make_shared<cluster_link>(std::move(strand), n, settings);
    }
    if (!n.sentinels.empty()) {
        return std::make_shared<sentinel_link>(std::move(strand), n, settings);
    }
    return std::make_shared<connection>(std::move(strand), n, settings);
}

}  // namespace redlock::detail
