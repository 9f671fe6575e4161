// SPDX-License-Identifier: BSL-1.0
#include "engine/exchange.hpp"

#include "engine/multiplexer.hpp"
#include "engine/runner.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>
#include <optional>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {

// One exchange: its request (the command and its owner), the multiplexer and runner that
// carry it, and the timer the awaiting coroutine waits on, cancelled once it is settled.
struct exchange_run final : request_owner, socket_user
{
    explicit exchange_run(const asio::any_io_executor& ex)
        : io(mux, *this), settled(ex, asio::steady_timer::time_point::max())
    {
    }

    // The reply goes through on_reply: nothing is delivered to the owner.
    void deliver(std::uint32_t, exec_result) override {}
    bool given_up(std::uint32_t) const noexcept override { return false; }

    void on_reply(reader_action& step) override
    {
        reply = std::move(step.reply);
        answered = true;
    }
    // Settled only once the write completed too: the socket is handed back with no I/O
    // under way.
    void on_idle() override
    {
        if (answered) {
            settled.cancel();
        }
    }
    void on_failure(const socket_failure& f) override
    {
        failure = f;
        (void)mux.fail_all();
        settled.cancel();
    }

    command cmd;
    multiplexer mux;
    runner io;
    asio::steady_timer settled;
    resp::reply reply;
    bool answered = false;
    std::optional<socket_failure> failure;
};

node_failure reason_of(const socket_failure& f, const std::string& name)
{
    if (f.where == socket_failure::stage::matching) {
        return node_failure{node_errc::protocol_error,
                            "protocol error from " + name + ": " + f.diagnostics};
    }
    return node_failure{node_errc::connection_lost, f.error.message()};
}

}  // namespace

asio::awaitable<node_failure> exchange(stream& s, const std::string& commands, std::size_t count,
                                       std::vector<resp::reply>& replies, const std::string& name)
{
    replies.clear();
    auto run = std::make_shared<exchange_run>(co_await asio::this_coro::executor);
    run->cmd.payload = commands;
    run->cmd.replies = static_cast<std::uint8_t>(count);
    // The exchange owns its multiplexer, so the request names it without owning it: an
    // owning pointer would be a cycle that outlives an exchange whose coroutine is destroyed
    // unresumed (its io_context shut down mid-handshake).
    const std::shared_ptr<request_owner> owner(std::shared_ptr<void>{}, run.get());
    (void)run->mux.add(submission{.owner = owner, .cmd = &run->cmd});
    run->io.attach(std::move(s), run);
    co_await run->settled.async_wait(asio::as_tuple(asio::use_awaitable));
    if (run->failure) {
        co_return reason_of(*run->failure, name);
    }
    if (!run->answered) {
        // Cancelled: the request and the runner's handlers let go of the exchange.
        run->io.close();
        (void)run->mux.fail_all();
        co_return failure_of(node_errc::cancelled);
    }
    s = run->io.detach();
    if (count > 1) {
        replies = std::move(run->reply.elements);
    } else {
        replies.push_back(std::move(run->reply));
    }
    co_return node_failure{};
}

}  // namespace redlock::detail
