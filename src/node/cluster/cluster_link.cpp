// SPDX-License-Identifier: BSL-1.0
#include "node/cluster/cluster_link.hpp"

#include "core/error_reply.hpp"
#include "node/sentinel/sentinel.hpp"
#include "protocol/key_slot.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {

const std::string& asking_prefix()
{
    static const std::string text = [] {
        std::string t;
        resp::append_command(t, {"ASKING"});
        return t;
    }();
    return text;
}

// The reply of the request itself when ASKING went before it: ASKING's own reply removed.
resp::reply without_asking(resp::reply r, std::uint8_t replies)
{
    if (r.type != resp::kind::array || r.elements.size() != std::size_t{replies} + 1) {
        return r;
    }
    r.elements.erase(r.elements.begin());
    if (replies == 1) {
        return std::move(r.elements.front());
    }
    return r;
}

}  // namespace

// One request of an owner on its way through the cluster: the owner the connections report
// to, which passes the outcome on unless it is a redirection to follow.
struct cluster_link::routed final : request_owner, std::enable_shared_from_this<routed>
{
    void deliver(std::uint32_t, exec_result result) override
    {
        if (auto l = link.lock()) {
            l->delivered(shared_from_this(), std::move(result));
        } else {
            owner->deliver(index, std::move(result));
        }
    }
    bool given_up(std::uint32_t) const noexcept override { return owner->given_up(index); }
    // Redirections are followed here, not misconfigurations of a cluster's server.
    bool acts_on(const resp::reply& refusal) const noexcept override
    {
        return classify_error_reply(refusal.text) == node_errc::redirected ||
               owner->acts_on(refusal);
    }

    // The command as it goes to the server it is sent to now.
    const command& to_send() const noexcept { return asking ? *with_asking : *cmd; }

    std::weak_ptr<cluster_link> link;
    std::shared_ptr<request_owner> owner;
    std::uint32_t index = 0;
    const command* cmd = nullptr;
    // After an ASK: ASKING, then the command, both to the importing master.
    bool asking = false;
    std::unique_ptr<command> with_asking;
    int redirections = 0;
    // The connection it waits on (1 + index in servers_), 0 while it waits for the map.
    std::size_t via = 0;
};

cluster_link::cluster_link(asio::any_io_executor strand, node cluster, connection_settings settings)
    : strand_(std::move(strand)),
      cluster_(std::move(cluster)),
      name_(cluster_.endpoint()),
      settings_(std::move(settings)),
      map_(cluster_.cluster_seeds, name_, settings_.backoff_min, settings_.backoff_max)
{
}

void cluster_link::submit(std::shared_ptr<request_owner> owner, std::uint32_t index,
                          const command& cmd)
{
    auto r = std::make_shared<routed>();
    r->link = weak_from_this();
    r->owner = std::move(owner);
    r->index = index;
    r->cmd = &cmd;
    // Requests that ended without passing through here (refused at once) leave expired
    // entries: swept whenever the map has doubled since the last sweep.
    if (live_.size() >= sweep_at_) {
        std::erase_if(live_, [](const auto& entry) { return entry.second.expired(); });
        sweep_at_ = std::max<std::size_t>(64, 2 * live_.size());
    }
    live_[{r->owner.get(), index}] = r;
    route(r, false);
}

void cluster_link::gave_up(const request_owner& owner, std::uint32_t index, bool timed_out)
{
    const auto it = live_.find({&owner, index});
    if (it == live_.end()) {
        return;
    }
    if (auto r = it->second.lock(); r && r->via != 0) {
        servers_[r->via - 1]->gave_up(*r, 0, timed_out);
    }
    live_.erase(it);
}

// A request given up on still goes to its master, as on a connection: a round that stopped
// early at a quorum still sets the key there, and a clean-up still deletes it.
void cluster_link::route(const std::shared_ptr<routed>& r, bool waited)
{
    const cluster_map_fsm::route to = map_.route_for(slot_of(*r->cmd), clock::now(), waited);
    switch (to.what) {
        case cluster_map_fsm::route::step::send:
            send(r, to.server);
            return;
        case cluster_map_fsm::route::step::refuse:
            live_.erase({r->owner.get(), r->index});
            fail(*r, to.failure);
            return;
        case cluster_map_fsm::route::step::wait:
            r->via = 0;
            waiting_.push_back(r);
            learn_map_soon();
            return;
    }
}

void cluster_link::send(const std::shared_ptr<routed>& r, std::size_t server)
{
    r->via = server + 1;
    // A copy: the submit may add connections (a request failed at once reaches its owner,
    // which may send more).
    const std::shared_ptr<connection> link = connection_at(server);
    link->submit(r, 0, r->to_send());
    if (r->given_up(0)) {
        // Given up while it waited for the map: the connection reads its reply and drops it.
        link->gave_up(*r, 0, false);
    }
}

void cluster_link::delivered(const std::shared_ptr<routed>& r, exec_result result)
{
    const bool replied = result.status == exec_result::outcome::replied;
    if (replied && r->asking) {
        result.reply = without_asking(std::move(result.reply), r->cmd->replies);
    }
    const resp::reply& first = replied && r->cmd->replies > 1 &&
                                       result.reply.type == resp::kind::array &&
                                       !result.reply.elements.empty()
                                   ? result.reply.elements.front()
                                   : result.reply;
    const cluster_map_fsm::verdict v = map_.outcome(result.status == exec_result::outcome::failed,
                                                    first, r->redirections, r->via - 1);
    if (v.learn) {
        learn_map_soon();
    }
    if (v.follow) {
        ++r->redirections;
        r->asking = v.ask;
        if (v.ask && !r->with_asking) {
            r->with_asking = std::make_unique<command>(*r->cmd);
            r->with_asking->payload.insert(0, asking_prefix());
            const auto shift = static_cast<std::uint32_t>(asking_prefix().size());
            r->with_asking->script_at += shift;
            r->with_asking->key_at += r->cmd->key_at != 0 ? shift : 0;
            r->with_asking->replies = static_cast<std::uint8_t>(r->cmd->replies + 1);
            r->with_asking->own_reply = 1;
        }
        send(r, v.to);
        return;
    }
    if (v.failure) {
        result = exec_result{exec_result::outcome::failed, {}, v.failure.detail, v.failure.code};
    }
    live_.erase({r->owner.get(), r->index});
    if (!r->given_up(0)) {
        r->owner->deliver(r->index, std::move(result));
    }
}

// The connection to the server `map_` numbers `server`, made when first needed.
const std::shared_ptr<connection>& cluster_link::connection_at(std::size_t server)
{
    while (servers_.size() <= server) {
        auto c = std::make_shared<connection>(
            strand_, node_at(cluster_, map_.where(servers_.size())), settings_);
        for (unsigned i = 0; i < writes_held_; ++i) {
            c->hold_writes();
        }
        std::lock_guard lock(servers_mutex_);
        servers_.push_back(std::move(c));
    }
    return servers_[server];
}

void cluster_link::learn_map_soon()
{
    if (map_.learn_soon()) {
        asio::co_spawn(
            strand_, [self = shared_from_this()] { return self->learn_map(); }, asio::detached);
    }
}

// Runs the learning `map_` decides.
asio::awaitable<void> cluster_link::learn_map()
{
    auto self = shared_from_this();
    using step = cluster_map_fsm::learning::step;
    for (cluster_map_fsm::learning a = map_.next_round(clock::now());;) {
        switch (a.what) {
            case step::pause: {
                asio::steady_timer pause(strand_, a.until);
                co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
                a = map_.paused(clock::now());
                break;
            }
            case step::ask:
                a = co_await ask_for_map(a.source);
                break;
            case step::learned: {
                auto ready = std::move(waiting_);
                waiting_.clear();
                for (auto& r : ready) {
                    route(r, true);
                }
                a = map_.round_done(clock::now());
                break;
            }
            case step::failed:
                fail_waiting(a.failure);
                a = map_.round_done(clock::now());
                break;
            case step::stop:
                co_return;
        }
    }
}

asio::awaitable<cluster_map_fsm::learning> cluster_link::ask_for_map(std::size_t source)
{
    command ask;
    resp::append_command(ask.payload, {"CLUSTER", "SLOTS"});
    // Each source may take the connect timeout: a stopped master is passed over after it.
    const std::shared_ptr<connection> c = connection_at(source);
    exec_result r = co_await execute(*c, std::move(ask), clock::now() + settings_.connect_timeout);
    node_failure failure;
    if (r.status != exec_result::outcome::replied) {
        failure = node_failure{r.code, std::move(r.detail)};
    }
    co_return map_.answered(std::move(failure), r.reply, clock::now());
}

void cluster_link::fail_waiting(const node_failure& why)
{
    auto failed = std::move(waiting_);
    waiting_.clear();
    for (auto& r : failed) {
        live_.erase({r->owner.get(), r->index});
        if (!r->given_up(0)) {
            fail(*r, why);
        }
    }
}

void cluster_link::fail(const routed& r, const node_failure& why)
{
    if (r.given_up(0)) {
        return;
    }
    r.owner->deliver(r.index, exec_result{exec_result::outcome::failed, {}, why.detail, why.code});
}

void cluster_link::hold_writes() noexcept
{
    ++writes_held_;
    for (const auto& link : servers_) {
        link->hold_writes();
    }
}

void cluster_link::resume_writes()
{
    if (writes_held_ == 0) {
        return;
    }
    --writes_held_;
    for (const auto& link : servers_) {
        link->resume_writes();
    }
}

void cluster_link::close(const std::string& why)
{
    const node_failure closed{node_errc::closed, why};
    map_.close(closed);
    for (const auto& link : servers_) {
        link->close(why);
    }
    fail_waiting(closed);
}

std::optional<server_address> cluster_link::master_of(std::uint16_t slot) const
{
    if (const auto master = map_.master_of(slot)) {
        return map_.where(*master);
    }
    return std::nullopt;
}

node_counters cluster_link::counters() const
{
    node_counters sum;
    sum.endpoint = name_;
    std::lock_guard lock(servers_mutex_);
    for (const auto& link : servers_) {
        const node_counters c = link->counters();
        sum.requests += c.requests;
        sum.replies += c.replies;
        sum.errors += c.errors;
        sum.timeouts += c.timeouts;
        sum.abandoned += c.abandoned;
        sum.reconnects += c.reconnects;
        sum.latency_total += c.latency_total;
    }
    return sum;
}

}  // namespace redlock::detail
