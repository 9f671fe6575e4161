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

// A request follows at most this many redirections: a slot moves once at a time, so more
// mean the masters disagree about it (a failover under way), which a new map settles.
constexpr int max_redirections = 5;
// The slot map is learned again at most this often, however many requests fail meanwhile.
constexpr std::chrono::milliseconds map_interval{100};

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
      slot_owner_(cluster_slots, 0),
      backoff_(settings_.backoff_min)
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
    route(r);
}

void cluster_link::gave_up(const request_owner& owner, std::uint32_t index, bool timed_out)
{
    const auto it = live_.find({&owner, index});
    if (it == live_.end()) {
        return;
    }
    if (auto r = it->second.lock(); r && r->via != 0) {
        servers_[r->via - 1].link->gave_up(*r, 0, timed_out);
    }
    live_.erase(it);
}

void cluster_link::route(const std::shared_ptr<routed>& r)
{
    if (closed_) {
        fail(*r, last_failure_);
        return;
    }
    // A request given up on still goes to its master, as on a connection: a round that
    // stopped early at a quorum still sets the key here, and a clean-up still deletes it.
    if (map_known_) {
        const std::optional<std::uint16_t> slot = slot_of(*r->cmd);
        if (!slot) {
            // A command without keys: any master may run it.
            const auto any = std::find_if(slot_owner_.begin(), slot_owner_.end(),
                                          [](std::uint16_t owner) { return owner != 0; });
            send(r, *any - 1u);  // a known map has a master
            return;
        }
        if (const std::uint16_t owner = slot_owner_[*slot]; owner != 0) {
            send(r, owner - 1);
            return;
        }
    } else if (clock::now() < retry_at_) {
        fail(*r, last_failure_);
        return;
    }
    r->via = 0;
    waiting_.push_back(r);
    learn_map_soon();
}

void cluster_link::send(const std::shared_ptr<routed>& r, std::size_t server)
{
    r->via = server + 1;
    servers_[server].link->submit(r, 0, r->to_send());
    if (r->given_up(0)) {
        // Given up while it waited for the map: the connection reads its reply and drops it.
        servers_[server].link->gave_up(*r, 0, false);
    }
}

void cluster_link::delivered(const std::shared_ptr<routed>& r, exec_result result)
{
    if (result.status == exec_result::outcome::replied && r->asking) {
        result.reply = without_asking(std::move(result.reply), r->cmd->replies);
    }
    if (result.status == exec_result::outcome::failed) {
        // The server may have failed over to a replica: the map says where its slots went.
        learn_map_soon();
    }
    const resp::reply& first =
        result.status == exec_result::outcome::replied && r->cmd->replies > 1 &&
                result.reply.type == resp::kind::array && !result.reply.elements.empty()
            ? result.reply.elements.front()
            : result.reply;
    if (result.status == exec_result::outcome::replied && first.is_error()) {
        if (auto redirect = read_redirection(first.text, servers_[r->via - 1].where)) {
            if (r->redirections < max_redirections) {
                ++r->redirections;
                const std::size_t to = server_at(redirect->to);
                r->asking = redirect->ask;
                if (redirect->ask) {
                    if (!r->with_asking) {
                        r->with_asking = std::make_unique<command>(*r->cmd);
                        r->with_asking->payload.insert(0, asking_prefix());
                        const auto shift = static_cast<std::uint32_t>(asking_prefix().size());
                        r->with_asking->script_at += shift;
                        r->with_asking->key_at += r->cmd->key_at != 0 ? shift : 0;
                        r->with_asking->replies = static_cast<std::uint8_t>(r->cmd->replies + 1);
                        r->with_asking->own_reply = 1;
                    }
                } else {
                    slot_owner_[redirect->slot] = static_cast<std::uint16_t>(to + 1);
                    learn_map_soon();  // a slot moved: others may have too
                }
                send(r, to);
                return;
            }
            // The masters disagree about the slot: until a new map settles it, the cluster
            // cannot serve it.
            result = exec_result{exec_result::outcome::failed,
                                 {},
                                 "followed " + std::to_string(max_redirections) +
                                     " redirections without reaching the master of slot " +
                                     std::to_string(redirect->slot) + ", the last to " +
                                     address_name(redirect->to),
                                 node_errc::cluster_down};
        } else if (classify_error_reply(first.text) == node_errc::cluster_down) {
            learn_map_soon();
        }
    }
    live_.erase({r->owner.get(), r->index});
    if (!r->given_up(0)) {
        r->owner->deliver(r->index, std::move(result));
    }
}

std::size_t cluster_link::server_at(const server_address& a)
{
    const std::string address = address_name(a);
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        if (servers_[i].address == address) {
            return i;
        }
    }
    auto c = std::make_shared<connection>(strand_, node_at(cluster_, a), settings_);
    for (unsigned i = 0; i < writes_held_; ++i) {
        c->hold_writes();
    }
    std::lock_guard lock(servers_mutex_);
    servers_.push_back(server{a, address, std::move(c)});
    return servers_.size() - 1;
}

void cluster_link::learn_map_soon()
{
    if (closed_) {
        return;
    }
    if (learning_) {
        learn_again_ = true;
        return;
    }
    learning_ = true;
    asio::co_spawn(
        strand_, [self = shared_from_this()] { return self->learn_map(); }, asio::detached);
}

asio::awaitable<void> cluster_link::learn_map()
{
    auto self = shared_from_this();
    do {
        learn_again_ = false;
        if (map_known_ && clock::now() < learned_at_ + map_interval) {
            asio::steady_timer pause(strand_, learned_at_ + map_interval);
            co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        if (closed_) {
            break;
        }
        // The masters known so far first (after a failover most of them still answer), then
        // the seeds.
        std::vector<std::size_t> sources;
        for (std::uint16_t owner : slot_owner_) {
            if (owner != 0 &&
                std::find(sources.begin(), sources.end(), owner - 1) == sources.end()) {
                sources.push_back(owner - 1);
            }
        }
        for (const server_address& seed : cluster_.cluster_seeds) {
            if (const std::size_t s = server_at(seed);
                std::find(sources.begin(), sources.end(), s) == sources.end()) {
                sources.push_back(s);
            }
        }
        failure_list failures;
        bool learned = false;
        for (std::size_t source : sources) {
            const node_failure why = co_await ask_for_map(source);
            if (!why) {
                learned = true;
                break;
            }
            failures.add(why);
            if (closed_) {
                break;
            }
        }
        learned_at_ = clock::now();
        if (learned) {
            backoff_ = settings_.backoff_min;
            auto ready = std::move(waiting_);
            waiting_.clear();
            for (auto& r : ready) {
                const std::optional<std::uint16_t> slot = slot_of(*r->cmd);
                if (!map_known_ || (slot && slot_owner_[*slot] == 0)) {
                    live_.erase({r->owner.get(), r->index});
                    if (!r->given_up(0)) {
                        fail(*r, node_failure{node_errc::cluster_down,
                                              "slot " + std::to_string(*slot) + " of " + name_ +
                                                  " has no master (CLUSTER SLOTS leaves it out)"});
                    }
                    continue;
                }
                route(r);
            }
        } else if (!closed_) {
            last_failure_ = failures.joined("no server of " + name_ + " told the slot map",
                                            node_errc::cluster_down);
            if (!map_known_) {
                retry_at_ = clock::now() + backoff_;
                backoff_ = std::min(backoff_ * 2, settings_.backoff_max);
            }
            fail_waiting(last_failure_);
        }
    } while (learn_again_ && !closed_);
    learning_ = false;
}

asio::awaitable<node_failure> cluster_link::ask_for_map(std::size_t source)
{
    command ask;
    resp::append_command(ask.payload, {"CLUSTER", "SLOTS"});
    // Each source may take the connect timeout: a stopped master is passed over after it.
    const std::shared_ptr<connection> c = servers_[source].link;
    exec_result r = co_await execute(*c, std::move(ask), clock::now() + settings_.connect_timeout);
    if (r.status != exec_result::outcome::replied) {
        co_return node_failure{r.code, std::move(r.detail)};
    }
    node_failure why;
    auto map = read_slot_map(r.reply, servers_[source].where, why);
    if (!map) {
        why.detail.insert(0, "CLUSTER SLOTS on " + servers_[source].address + ": ");
        co_return why;
    }
    apply(*map);
    co_return node_failure{};
}

void cluster_link::apply(const std::vector<slot_range>& map)
{
    std::fill(slot_owner_.begin(), slot_owner_.end(), std::uint16_t{0});
    for (const slot_range& range : map) {
        const auto owner = static_cast<std::uint16_t>(server_at(range.master) + 1);
        std::fill(slot_owner_.begin() + range.first, slot_owner_.begin() + range.last + 1, owner);
    }
    map_known_ = true;
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
    for (server& s : servers_) {
        s.link->hold_writes();
    }
}

void cluster_link::resume_writes()
{
    if (writes_held_ == 0) {
        return;
    }
    --writes_held_;
    for (server& s : servers_) {
        s.link->resume_writes();
    }
}

void cluster_link::close(const std::string& why)
{
    closed_ = true;
    last_failure_ = node_failure{node_errc::closed, why};
    for (server& s : servers_) {
        s.link->close(why);
    }
    fail_waiting(last_failure_);
}

std::optional<server_address> cluster_link::master_of(std::uint16_t slot) const
{
    if (const std::uint16_t owner = slot_owner_[slot]; owner != 0) {
        return servers_[owner - 1u].where;
    }
    return std::nullopt;
}

node_counters cluster_link::counters() const
{
    node_counters sum;
    sum.endpoint = name_;
    std::lock_guard lock(servers_mutex_);
    for (const server& s : servers_) {
        const node_counters c = s.link->counters();
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
