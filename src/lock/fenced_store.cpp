// SPDX-License-Identifier: BSL-1.0
// A fenced resource kept in one Redis server: every read and write is one script that
// checks the request's fencing token against the newest the key has seen (fence.hpp's rule).

#include <redlock/error.hpp>
#include <redlock/fenced_store.hpp>

#include "core/spawn.hpp"
#include "core/strand.hpp"
#include "node/connection.hpp"
#include "protocol/scripts.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/system_error.hpp>

#include <mutex>

namespace redlock {
namespace detail {

namespace asio = boost::asio;

namespace {

// Sets `refused` when the request may not pass: a token older than the key's newest, or
// the newest from another owner. Otherwise the key remembers the token and its owner.
#define REDLOCK_FENCE_CHECK                                                       \
    "local token = tonumber(ARGV[1])\n"                                           \
    "local newest = tonumber(redis.call('HGET', KEYS[1], 'token') or '0') or 0\n" \
    "local refused = token < newest or\n"                                         \
    "  (token == newest and redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2])\n"   \
    "if not refused and token > newest then\n"                                    \
    "  redis.call('HSET', KEYS[1], 'token', ARGV[1], 'owner', ARGV[2])\n"         \
    "end\n"

// {0} refused; {1} admitted, no value; {1, value} admitted.
constexpr std::string_view fenced_read = REDLOCK_FENCE_CHECK R"lua(
if refused then return {0} end
local value = redis.call('HGET', KEYS[1], 'value')
if value then return {1, value} end
return {1}
)lua";

// 0 refused; 1 written.
constexpr std::string_view fenced_write = REDLOCK_FENCE_CHECK R"lua(
if refused then return 0 end
redis.call('HSET', KEYS[1], 'value', ARGV[3])
return 1
)lua";

#undef REDLOCK_FENCE_CHECK

const std::string& sha_of(std::string_view script)
{
    static const std::string read_sha = script_sha1(fenced_read);
    static const std::string write_sha = script_sha1(fenced_write);
    return script.data() == fenced_read.data() ? read_sha : write_sha;
}

}  // namespace

class fenced_store_impl
{
  public:
    fenced_store_impl(const asio::any_io_executor& ex, const redlock::config& cfg)
        : executor(ex),
          strand(make_client_strand(ex)),
          node(make_link(strand, cfg.nodes.front(), make_connection_settings(cfg)))
    {
    }

    asio::any_io_executor executor;
    asio::any_io_executor strand;
    std::shared_ptr<node_link> node;
    std::atomic<std::chrono::milliseconds::rep> timeout_ms{1000};

    // Runs one fenced script; on success `reply` is the script's answer.
    asio::awaitable<error_code> run(std::string_view script, std::string key, std::uint64_t token,
                                    std::string owner, const char* value, resp::reply& reply)
    {
        auto cs = co_await accept_cancellation();
        if (token == 0) {
            note_error("fencing token 0: the guard was acquired without options::fencing");
            co_return error::invalid_argument;
        }
        const std::string token_text = std::to_string(token);
        command cmd = value ? script_command(script, sha_of(script), {key},
                                             {token_text, owner, std::string_view(value)})
                            : script_command(script, sha_of(script), {key}, {token_text, owner});
        exec_result r = co_await execute(
            *node, std::move(cmd), clock::now() + std::chrono::milliseconds(timeout_ms.load()));
        if (cancelled(cs) || r.status == exec_result::outcome::cancelled) {
            co_return asio::error::operation_aborted;
        }
        if (r.status != exec_result::outcome::replied) {
            note_error(node->name() + ": " + r.detail);
            co_return error::failed;
        }
        if (r.reply.is_error()) {
            note_error(node->name() + ": Redis error: " + r.reply.text);
            co_return error::failed;
        }
        reply = std::move(r.reply);
        co_return error_code{};
    }

    void note_error(std::string what)
    {
        std::lock_guard lock(error_mutex);
        last_error = std::move(what);
    }

    mutable std::mutex error_mutex;
    std::string last_error;  // guarded by error_mutex
};

namespace {

using read_result = std::tuple<error_code, std::optional<std::string>>;

std::string unexpected_reply(const fenced_store_impl& s)
{
    return s.node->name() + ": unexpected reply to a fenced request";
}

asio::awaitable<read_result> read_op(std::shared_ptr<fenced_store_impl> s, std::string key,
                                     std::uint64_t token, std::string owner)
{
    resp::reply reply;
    error_code ec =
        co_await s->run(fenced_read, std::move(key), token, std::move(owner), nullptr, reply);
    if (ec) {
        co_return read_result{ec, std::nullopt};
    }
    auto& e = reply.elements;
    if (reply.type != resp::kind::array || e.empty() || e[0].type != resp::kind::integer) {
        s->note_error(unexpected_reply(*s));
        co_return read_result{error::failed, std::nullopt};
    }
    if (e[0].integer == 0) {
        co_return read_result{error::stale_token, std::nullopt};
    }
    if (e.size() > 1) {
        co_return read_result{error_code{}, std::move(e[1].text)};
    }
    co_return read_result{error_code{}, std::nullopt};
}

asio::awaitable<std::tuple<error_code>> write_op(std::shared_ptr<fenced_store_impl> s,
                                                 std::string key, std::string value,
                                                 std::uint64_t token, std::string owner)
{
    resp::reply reply;
    error_code ec = co_await s->run(fenced_write, std::move(key), token, std::move(owner),
                                    value.c_str(), reply);
    if (!ec && reply.type != resp::kind::integer) {
        s->note_error(unexpected_reply(*s));
        ec = error::failed;
    } else if (!ec && reply.integer == 0) {
        ec = error::stale_token;
    }
    co_return std::tuple<error_code>{ec};
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

}  // namespace detail

fenced_store::fenced_store(const executor_type& ex, const config& cfg)
{
    if (cfg.nodes.size() != 1) {
        throw boost::system::system_error(
            make_error_code(error::invalid_argument),
            "fenced_store: config.nodes must name exactly one node (the protected resource's "
            "server), got " +
                std::to_string(cfg.nodes.size()));
    }
    if (std::string problem = validate(cfg); !problem.empty()) {
        throw boost::system::system_error(make_error_code(error::invalid_argument), problem);
    }
    impl_ = std::make_shared<detail::fenced_store_impl>(ex, cfg);
}

fenced_store::~fenced_store()
{
    if (impl_) {
        // The connection lives on the strand; requests still pending fail and complete.
        boost::asio::post(impl_->strand,
                          [node = impl_->node] { node->close("fenced_store closed"); });
    }
}

fenced_store::executor_type fenced_store::get_executor() const noexcept
{
    return impl_ ? impl_->executor : executor_type{};
}

void fenced_store::set_timeout(std::chrono::milliseconds timeout)
{
    impl_->timeout_ms = std::max<std::chrono::milliseconds::rep>(timeout.count(), 1);
}

std::string fenced_store::last_error() const
{
    std::lock_guard lock(impl_->error_mutex);
    return impl_->last_error;
}

}  // namespace redlock
