// SPDX-License-Identifier: BSL-1.0
#include "node/cluster/cluster_map_fsm.hpp"

#include "core/error_reply.hpp"
#include "protocol/key_slot.hpp"

#include <algorithm>
#include <utility>

namespace redlock::detail {

cluster_map_fsm::cluster_map_fsm(std::vector<server_address> seeds, std::string name,
                                 std::chrono::milliseconds backoff_min,
                                 std::chrono::milliseconds backoff_max)
    : seeds_(std::move(seeds)),
      name_(std::move(name)),
      backoff_min_(backoff_min),
      backoff_max_(std::max(backoff_min, backoff_max)),
      backoff_(backoff_min),
      slot_owner_(cluster_slots, 0)
{
}

std::size_t cluster_map_fsm::server_at(const server_address& a)
{
    std::string address = address_name(a);
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        if (servers_[i].address == address) {
            return i;
        }
    }
    servers_.push_back(server{a, std::move(address)});
    return servers_.size() - 1;
}

std::optional<std::size_t> cluster_map_fsm::master_of(std::uint16_t slot) const
{
    if (const std::uint16_t owner = slot_owner_[slot]; owner != 0) {
        return owner - 1u;
    }
    return std::nullopt;
}

cluster_map_fsm::route cluster_map_fsm::route_for(std::optional<std::uint16_t> slot,
                                                  clock::time_point now, bool waited) const
{
    using step = route::step;
    if (waited && slot && slot_owner_[*slot] == 0) {
        return route{step::refuse, 0,
                     node_failure{node_errc::cluster_down,
                                  "slot " + std::to_string(*slot) + " of " + name_ +
                                      " has no master (CLUSTER SLOTS leaves it out)"}};
    }
    if (closed_) {
        return route{step::refuse, 0, last_failure_};
    }
    if (known_) {
        if (!slot) {
            // A command without keys: any master may run it (a known map has one).
            const auto any = std::find_if(slot_owner_.begin(), slot_owner_.end(),
                                          [](std::uint16_t owner) { return owner != 0; });
            return route{step::send, *any - 1u};
        }
        if (const std::uint16_t owner = slot_owner_[*slot]; owner != 0) {
            return route{step::send, owner - 1u};
        }
        return route{step::wait};
    }
    if (now < retry_at_) {
        return route{step::refuse, 0, last_failure_};
    }
    return route{step::wait};
}

bool cluster_map_fsm::learn_soon() noexcept
{
    if (closed_) {
        return false;
    }
    if (learning_) {
        learn_again_ = true;
        return false;
    }
    learning_ = true;
    return true;
}

cluster_map_fsm::learning cluster_map_fsm::next_round(clock::time_point now)
{
    learn_again_ = false;
    if (known_ && now < learned_at_ + map_interval) {
        return learning{.what = learning::step::pause, .until = learned_at_ + map_interval};
    }
    return paused(now);
}

cluster_map_fsm::learning cluster_map_fsm::paused(clock::time_point now)
{
    if (closed_) {
        return stop();
    }
    return begin_asking(now);
}

// The masters known so far first (after a failover most of them still answer), then the
// seeds.
cluster_map_fsm::learning cluster_map_fsm::begin_asking(clock::time_point now)
{
    sources_.clear();
    for (std::uint16_t owner : slot_owner_) {
        if (owner != 0 &&
            std::find(sources_.begin(), sources_.end(), owner - 1u) == sources_.end()) {
            sources_.push_back(owner - 1u);
        }
    }
    for (const server_address& seed : seeds_) {
        if (const std::size_t s = server_at(seed);
            std::find(sources_.begin(), sources_.end(), s) == sources_.end()) {
            sources_.push_back(s);
        }
    }
    next_source_ = 0;
    failures_ = failure_list{};
    return ask_next(now);
}

cluster_map_fsm::learning cluster_map_fsm::ask_next(clock::time_point now)
{
    if (next_source_ < sources_.size()) {
        return learning{.what = learning::step::ask, .source = sources_[next_source_++]};
    }
    learned_at_ = now;
    last_failure_ =
        failures_.joined("no server of " + name_ + " told the slot map", node_errc::cluster_down);
    if (!known_) {
        retry_at_ = now + backoff_;
        backoff_ = std::min(backoff_ * 2, backoff_max_);
    }
    return learning{.what = learning::step::failed, .failure = last_failure_};
}

cluster_map_fsm::learning cluster_map_fsm::answered(node_failure failure, const resp::reply& reply,
                                                    clock::time_point now)
{
    const std::size_t source = sources_[next_source_ - 1];
    if (!failure) {
        if (auto map = read_slot_map(reply, servers_[source].where, failure)) {
            apply(*map);
            learned_at_ = now;
            backoff_ = backoff_min_;
            return learning{.what = learning::step::learned};
        }
        failure.detail.insert(0, "CLUSTER SLOTS on " + servers_[source].address + ": ");
    }
    failures_.add(failure);
    if (closed_) {
        learned_at_ = now;
        return stop();
    }
    return ask_next(now);
}

cluster_map_fsm::learning cluster_map_fsm::round_done(clock::time_point now)
{
    if (learn_again_ && !closed_) {
        return next_round(now);
    }
    return stop();
}

cluster_map_fsm::learning cluster_map_fsm::stop()
{
    learning_ = false;
    return learning{.what = learning::step::stop};
}

void cluster_map_fsm::apply(const std::vector<slot_range>& map)
{
    std::fill(slot_owner_.begin(), slot_owner_.end(), std::uint16_t{0});
    for (const slot_range& range : map) {
        const auto owner = static_cast<std::uint16_t>(server_at(range.master) + 1);
        std::fill(slot_owner_.begin() + range.first, slot_owner_.begin() + range.last + 1, owner);
    }
    known_ = true;
}

cluster_map_fsm::verdict cluster_map_fsm::outcome(bool failed, const resp::reply& first,
                                                  int redirections, std::size_t via)
{
    if (failed) {
        return verdict{.learn = true};  // the server may have failed over to a replica
    }
    if (!first.is_error()) {
        return verdict{};
    }
    const auto redirect = read_redirection(first.text, servers_[via].where);
    if (!redirect) {
        return verdict{.learn = classify_error_reply(first.text) == node_errc::cluster_down};
    }
    if (redirections >= max_redirections) {
        // The masters disagree about the slot: until a new map settles it, the cluster cannot
        // serve it.
        return verdict{.failure =
                           node_failure{node_errc::cluster_down,
                                        "followed " + std::to_string(max_redirections) +
                                            " redirections without reaching the master of slot " +
                                            std::to_string(redirect->slot) + ", the last to " +
                                            address_name(redirect->to)}};
    }
    const std::size_t to = server_at(redirect->to);
    if (redirect->ask) {
        return verdict{.follow = true, .ask = true, .to = to};  // this request only
    }
    // MOVED: the slot lives there now, and others may have moved too.
    slot_owner_[redirect->slot] = static_cast<std::uint16_t>(to + 1);
    return verdict{.follow = true, .to = to, .learn = true};
}

void cluster_map_fsm::close(node_failure why)
{
    closed_ = true;
    last_failure_ = std::move(why);
}

}  // namespace redlock::detail
