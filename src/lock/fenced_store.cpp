// SPDX-License-Identifier: BSL-1.0
// A fenced resource kept in one Redis server: every read and write is one script that
// checks the request's fencing token against the newest the key has seen (fence.hpp's rule).

#include <redlock/error.hpp>
#include <redlock/fenced_store.hpp>

#include "core/spawn.hpp"
#include "lock/fenced_store_impl.hpp"
#include "protocol/script_table.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/system_error.hpp>

#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

namespace redlock::detail {

namespace asio = boost::asio;

asio::awaitable<access_result> fenced_store_impl::run(std::string key, std::uint64_t token,
                                                      std::string owner,
                                                      std::optional<std::string> value)
{
    auto cs = co_await accept_cancellation();
    if (token == 0) {
        note_error("fencing token 0: the guard was acquired without options::fencing");
        co_return access_result{error::invalid_argument, std::nullopt};
    }
    std::vector<std::string> written;
    if (value) {
        written.push_back(std::move(*value));
    }
    command cmd = script_command(script_id::fenced_access, {std::move(key)},
                                 {std::to_string(token), owner}, written);
    exec_result r = co_await execute(*node, std::move(cmd),
                                     clock::now() + std::chrono::milliseconds(timeout_ms.load()));
    if (cancelled(cs) || r.status == exec_result::outcome::cancelled) {
        co_return access_result{asio::error::operation_aborted, std::nullopt};
    }
    if (r.status != exec_result::outcome::replied) {
        note_error(node->name() + ": " + r.detail);
        co_return access_result{error::failed, std::nullopt};
    }
    if (r.reply.is_error()) {
        note_error(node->name() + ": Redis error: " + r.reply.text);
        co_return access_result{error::failed, std::nullopt};
    }
    // {0} refused; {1} admitted; {1, value} a read admitted.
    auto& e = r.reply.elements;
    if (r.reply.type != resp::kind::array || e.empty() || e.size() > 2 ||
        e[0].type != resp::kind::integer ||
        (e.size() == 2 && e[1].type != resp::kind::bulk_string)) {
        note_error(node->name() + ": unexpected reply to a fenced request");
        co_return access_result{error::failed, std::nullopt};
    }
    if (e[0].integer == 0) {
        co_return access_result{error::stale_token, std::nullopt};
    }
    if (e.size() == 2) {
        co_return access_result{error_code{}, std::move(e[1].text)};
    }
    co_return access_result{error_code{}, std::nullopt};
}

namespace {

asio::awaitable<access_result> read_op(std::shared_ptr<fenced_store_impl> s, std::string key,
                                       std::uint64_t token, std::string owner)
{
    co_return co_await s->run(std::move(key), token, std::move(owner), std::nullopt);
}

asio::awaitable<std::tuple<error_code>> write_op(std::shared_ptr<fenced_store_impl> s,
                                                 std::string key, std::string value,
                                                 std::uint64_t token, std::string owner)
{
    access_result r = co_await s->run(std::move(key), token, std::move(owner), std::move(value));
    co_return std::tuple<error_code>{std::get<0>(r)};
}

}  // namespace

void initiate_fenced_read(std::shared_ptr<fenced_store_impl> s, std::string key,
                          std::uint64_t token, std::string owner, read_handler h)
{
    auto strand = s->strand;
    auto fallback = s->executor;
    spawn_operation(strand, fallback,
                    read_op(std::move(s), std::move(key), token, std::move(owner)), std::move(h));
}

void initiate_fenced_write(std::shared_ptr<fenced_store_impl> s, std::string key, std::string value,
                           std::uint64_t token, std::string owner, write_handler h)
{
    auto strand = s->strand;
    auto fallback = s->executor;
    spawn_operation(
        strand, fallback,
        write_op(std::move(s), std::move(key), std::move(value), token, std::move(owner)),
        std::move(h));
}

}  // namespace redlock::detail
