// SPDX-License-Identifier: BSL-1.0
#include "node/linked_node.hpp"

#include "node/cluster/cluster_link.hpp"
#include "node/cluster/shard_subscribers.hpp"

#include <utility>

namespace redlock::detail {

linked_node make_linked_node(const boost::asio::any_io_executor& strand, const node& n,
                             const connection_settings& settings, release_listener on_release,
                             const std::string& key_prefix, bool sharded)
{
    if (!n.cluster_seeds.empty()) {
        auto cluster = std::make_shared<cluster_link>(strand, n, settings);
        auto wake = std::make_shared<shard_subscribers>(strand, n, settings, std::move(on_release),
                                                        key_prefix, cluster);
        return {std::move(cluster), std::move(wake)};
    }
    return {make_link(strand, n, settings),
            std::make_shared<subscriber>(strand, n, settings, std::move(on_release), key_prefix,
                                         sharded)};
}

}  // namespace redlock::detail
