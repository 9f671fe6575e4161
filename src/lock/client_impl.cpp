// SPDX-License-Identifier: BSL-1.0
#include "lock/client_impl.hpp"

#include "core/strand.hpp"
#include "lock/owner_value.hpp"
#include "node/linked_node.hpp"
#include "protocol/election_requests.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

namespace redlock::detail {

client_impl::client_impl(const boost::asio::any_io_executor& ex, redlock::config config)
    : executor(ex),
      strand(make_client_strand(ex)),
      cfg(std::move(config)),
      background(std::make_shared<background_work>(strand))
{
    const connection_settings settings = make_connection_settings(cfg);
    in_cluster = std::any_of(cfg.nodes.begin(), cfg.nodes.end(),
                             [](const node& n) { return !n.cluster_seeds.empty(); });
    channel_tag = random_channel_tag();
    for (const node& n : cfg.nodes) {
        // A message on a key's channels: an election's announcement for its observers, else
        // a release for the waiters.
        const auto wake_waiters = [w = waiters, o = observers, index = connections.size()](
                                      std::string_view key, std::string_view value, bool named) {
            if (is_leader_announcement(value)) {
                o->announced(key);
            } else {
                w->released(key, value, index, named);
            }
        };
        linked_node linked =
            make_linked_node(strand, n, settings, wake_waiters, cfg.key_prefix, in_cluster);
        connections.push_back(std::move(linked.link));
        subscribers.push_back(std::move(linked.wakes));
    }
}

}  // namespace redlock::detail
