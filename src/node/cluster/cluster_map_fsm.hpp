// SPDX-License-Identifier: BSL-1.0
#pragma once

// What a cluster node knows of its cluster and how it learns more, without I/O: the servers
// heard of (seeds, masters in a map, targets of redirections), numbered in the order they
// were heard of; the slot map; where a request goes; when to ask CLUSTER SLOTS, of which
// server, and what the answer means; what MOVED and ASK mean for the map and the request.
// `cluster_link` keeps one connection per server number and does what it says.
// Unit-tested in tests/unit/test_cluster_map_fsm.cpp.

#include <redlock/node.hpp>

#include "core/clock.hpp"
#include "core/node_error.hpp"
#include "node/cluster/cluster_map.hpp"
#include "resp/resp.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

class cluster_map_fsm
{
  public:
    /// Where a request goes now.
    struct route
    {
        enum class step {
            /// To the server numbered `server`.
            send,
            /// Nowhere yet: it waits for the map being learned (`learn_soon`).
            wait,
            /// It fails at once with `failure`.
            refuse,
        };
        step what = step::wait;
        std::size_t server = 0;
        node_failure failure{};
    };

    /// What the learning does next.
    struct learning
    {
        enum class step {
            /// Wait until `until` (maps are asked for at most every `map_interval`); then
            /// `paused`.
            pause,
            /// Ask the server numbered `source` for CLUSTER SLOTS, within the connect
            /// timeout; then `answered`.
            ask,
            /// A map was learned: route the waiting requests again; then `round_done`.
            learned,
            /// No server told the map: the waiting requests fail with `failure`; then
            /// `round_done`.
            failed,
            /// Learning stops until `learn_soon` starts it again.
            stop,
        };
        step what = step::stop;
        clock::time_point until{};
        std::size_t source = 0;
        node_failure failure{};
    };

    /// What a request's outcome means.
    struct verdict
    {
        /// Send the request again to the server numbered `to` (after ASKING when `ask`);
        /// otherwise pass the outcome on (`failure` instead, when set).
        bool follow = false;
        bool ask = false;
        std::size_t to = 0;
        /// The map may be out of date: `learn_soon`.
        bool learn = false;
        node_failure failure{};
    };

    /// A slot map is learned again at most this often, however many requests fail meanwhile.
    static constexpr std::chrono::milliseconds map_interval{100};
    /// A request follows at most this many redirections: a slot moves once at a time, so
    /// more mean the masters disagree about it (a failover under way), which a new map
    /// settles.
    static constexpr int max_redirections = 5;

    /// `name`: the cluster node as reports name it; the back-off between failed attempts to
    /// learn a first map doubles from `backoff_min` to `backoff_max`.
    cluster_map_fsm(std::vector<server_address> seeds, std::string name,
                    std::chrono::milliseconds backoff_min, std::chrono::milliseconds backoff_max);

    /// The number of `a`, which is added to the servers heard of when new.
    std::size_t server_at(const server_address& a);
    std::size_t servers() const noexcept { return servers_.size(); }
    const server_address& where(std::size_t server) const { return servers_[server].where; }
    /// The master of `slot` in the map as it is now; nullopt while unknown.
    std::optional<std::size_t> master_of(std::uint16_t slot) const;

    /// Where a request for `slot` (nullopt: a command without keys, which any master runs)
    /// goes at `now`. `waited`: it waited for the map, which was learned since; a slot the map
    /// leaves without a master then fails it (`cluster_down`).
    route route_for(std::optional<std::uint16_t> slot, clock::time_point now, bool waited) const;

    /// The map may be out of date: true when learning is to start now; if it runs already,
    /// it runs another round after this one.
    bool learn_soon() noexcept;
    /// The first step of a learning round at `now`.
    learning next_round(clock::time_point now);
    /// The pause before a round ended.
    learning paused(clock::time_point now);
    /// The source asked last answered `reply` at `now`, or `failure` (not reached, timed out).
    learning answered(node_failure failure, const resp::reply& reply, clock::time_point now);
    /// The waiting requests were routed again, or failed.
    learning round_done(clock::time_point now);

    /// A request sent to the server numbered `via` after `redirections` redirections came
    /// back: `failed` (no reply: the server may have failed over), or with `first` (its
    /// first reply).
    verdict outcome(bool failed, const resp::reply& first, int redirections, std::size_t via);

    /// For good: requests fail with `why`, and no map is learned any more.
    void close(node_failure why);
    bool closed() const noexcept { return closed_; }

  private:
    struct server
    {
        server_address where;
        std::string address;
    };

    learning begin_asking(clock::time_point now);
    learning ask_next(clock::time_point now);
    learning stop();
    void apply(const std::vector<slot_range>& map);

    std::vector<server_address> seeds_;
    std::string name_;
    std::chrono::milliseconds backoff_min_;
    std::chrono::milliseconds backoff_max_;
    std::chrono::milliseconds backoff_;
    std::vector<server> servers_;
    /// For each slot: 1 + the number of its master; 0 while unknown.
    std::vector<std::uint16_t> slot_owner_;
    bool known_ = false;
    bool learning_ = false;
    bool learn_again_ = false;
    clock::time_point learned_at_{};
    /// While no map could be learned: when to try again, and why it failed.
    clock::time_point retry_at_{};
    node_failure last_failure_;
    bool closed_ = false;
    /// The round's sources in order, the next one, and why those asked did not tell.
    std::vector<std::size_t> sources_;
    std::size_t next_source_ = 0;
    failure_list failures_;
};

}  // namespace redlock::detail
