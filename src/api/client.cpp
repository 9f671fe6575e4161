// SPDX-License-Identifier: BSL-1.0
// The client: its state, its shutdown, and the mutexes it makes.

#include <redlock/client.hpp>
#include <redlock/error.hpp>
#include <redlock/mutex.hpp>
#include <redlock/semaphore.hpp>

#include "core/spawn.hpp"
#include "core/strand.hpp"
#include "lock/client_impl.hpp"
#include "lock/election_rules.hpp"
#include "lock/lock_state.hpp"
#include "lock/owner_value.hpp"
#include "protocol/key_space.hpp"
#include "quorum/tally.hpp"

#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>

namespace redlock {
namespace detail {

namespace asio = boost::asio;

namespace {

using void_result = std::tuple<error_code>;

asio::awaitable<void_result> shutdown_op(std::shared_ptr<client_impl> c)
{
    co_await asio::this_coro::throw_if_cancelled(false);
    auto cs = co_await asio::this_coro::cancellation_state;
    c->shut_down = true;
    co_await c->background->drained();
    for (auto& n : c->connections) {
        n->close("client shut down");
    }
    for (auto& s : c->subscribers) {
        s->close();
    }
    co_return void_result{cancelled(cs) ? asio::error::operation_aborted : error_code{}};
}

}  // namespace

void initiate_shutdown(std::shared_ptr<client_impl> c, void_handler h)
{
    const auto strand = c->strand;
    const auto executor = c->executor;
    spawn_operation(strand, executor, shutdown_op(std::move(c)), std::move(h));
}

}  // namespace detail

client::client(const executor_type& ex, redlock::config cfg)
{
    if (std::string problem = validate(cfg); !problem.empty()) {
        throw boost::system::system_error(make_error_code(error::invalid_argument), problem);
    }
    impl_ = std::make_shared<detail::client_impl>(ex, std::move(cfg));
}

client::~client() = default;

client::executor_type client::get_executor() const noexcept
{
    return impl_->executor;
}

std::vector<node_counters> client::node_counters() const
{
    return detail::node_counters_of(*impl_);
}

std::vector<node_counters> detail::node_counters_of(const client_impl& c)
{
    std::vector<redlock::node_counters> all;
    all.reserve(c.connections.size());
    for (const auto& n : c.connections) {
        all.push_back(n->counters());
    }
    return all;
}

const config& client::config() const noexcept
{
    return impl_->cfg;
}

mutex client::make_mutex(std::string name, options opts)
{
    std::vector<std::string> keys;
    keys.push_back(std::move(name));
    return make_multi_mutex(std::move(keys), std::move(opts));
}

namespace {

[[noreturn]] void refuse(const std::string& problem)
{
    throw boost::system::system_error(make_error_code(error::invalid_argument), problem);
}

// The state of a lock of the kind `rules` over `names` with `opts`, with what it shares with
// every other kind: the options it refuses, its keys and display name, its quorum, and the
// check that a cluster can hold it (which depends on the options: fencing needs a counter in
// each key's slot).
std::shared_ptr<detail::mutex_state> lock_state_of(const std::shared_ptr<detail::client_impl>& c,
                                                   std::vector<std::string> names,
                                                   const detail::kind_rules& rules,
                                                   std::ptrdiff_t permits, redlock::options opts)
{
    std::string problem = validate(opts, names);
    if (problem.empty()) {
        problem = rules.refusal(opts, names.size(), permits);
    }
    if (!problem.empty()) {
        refuse(problem);
    }
    auto m = std::make_shared<detail::mutex_state>();
    m->client = c;
    m->opts = std::move(opts);
    if (rules.shared) {
        m->opts.fencing = false;  // holders together: tokens order holders one after another
    }
    if (names.size() != 1 || !c->cfg.key_prefix.empty()) {
        for (const std::string& key : names) {
            m->name += (m->name.empty() ? "" : ", ") + key;
        }
    }
    m->keys = detail::lock_keys(c->cfg.key_prefix, std::move(names));
    m->prefix = c->cfg.key_prefix;
    m->in_cluster = c->in_cluster;
    m->rules = &rules;
    m->permits = static_cast<std::size_t>(permits);
    m->quorum = rules.quorum(c->connections.size(), m->permits);
    if (detail::registers_waiters(rules, m->opts, m->keys.size(), m->in_cluster)) {
        m->waiter_tag = c->channel_tag;
    }
    if (m->in_cluster) {
        if (std::string why = detail::cluster_key_problem(m->shape()); !why.empty()) {
            refuse(why);
        }
    }
    return m;
}

}  // namespace

mutex client::make_multi_mutex(std::vector<std::string> names, options opts)
{
    const detail::kind_rules& rules = opts.fair ? detail::fair_kind : detail::mutex_kind;
    auto m = lock_state_of(impl_, std::move(names), rules, 1, std::move(opts));
    if (const redlock::options& o = m->opts; o.reentrant) {
        m->owner = !o.value.empty() ? o.value
                   : o.gen_value    ? o.gen_value()
                                    : detail::random_owner_value();
        if (m->owner.empty()) {
            refuse("options.gen_value returned an empty owner value");
        }
    }
    return detail::access::make<mutex>(std::move(m));
}

semaphore client::make_semaphore(std::string name, std::ptrdiff_t permits, options opts)
{
    std::vector<std::string> names;
    names.push_back(std::move(name));
    auto m =
        lock_state_of(impl_, std::move(names), detail::semaphore_kind, permits, std::move(opts));
    return detail::access::make<semaphore>(std::move(m));
}

semaphore client::make_semaphore(std::string name, std::ptrdiff_t permits)
{
    return make_semaphore(std::move(name), permits, options{});
}

rw_mutex client::make_rw_mutex(std::string name, options opts)
{
    const std::vector<std::string> names{std::move(name)};
    auto writers = lock_state_of(impl_, names, detail::write_kind, 1, opts);
    auto readers = lock_state_of(impl_, names, detail::read_kind, 1, std::move(opts));
    return rw_mutex(std::move(writers), std::move(readers));
}

election client::make_election(std::string name, options opts)
{
    std::vector<std::string> names;
    names.push_back(std::move(name));
    auto m = lock_state_of(impl_, std::move(names), detail::election_kind, 1,
                           detail::election_options(std::move(opts)));
    return detail::access::make<election>(std::move(m));
}

election client::make_election(std::string name)
{
    return make_election(std::move(name), options{});
}

rw_mutex client::make_rw_mutex(std::string name)
{
    return make_rw_mutex(std::move(name), options{});
}

mutex client::make_mutex(std::string name)
{
    return make_mutex(std::move(name), options{});
}

mutex client::make_multi_mutex(std::vector<std::string> names)
{
    return make_multi_mutex(std::move(names), options{});
}

}  // namespace redlock
