// SPDX-License-Identifier: BSL-1.0
#pragma once

// Wake-ups on a Redis Cluster node: sharded pub/sub, whose channels live in slots like keys,
// so that a release message reaches only the master of its key's slot and whoever listens
// there. One subscriber per master, opened when a key of that master is first watched.

#include "node/cluster/cluster_link.hpp"
#include "node/subscriber.hpp"

#include <map>
#include <memory>
#include <string>
#include <utility>

namespace redlock::detail {

class shard_subscribers final : public wake_ups
{
  public:
    /// The masters are those `slots` names now (it routes the node's requests).
    shard_subscribers(boost::asio::any_io_executor strand, node cluster,
                      connection_settings settings, release_listener on_release,
                      std::string key_prefix, std::weak_ptr<const cluster_link> slots);

    /// Subscribes on the master of `key`'s slot. While the slot map is unknown, or after the
    /// slot moved on, the key's waiters fall back to their retry timers.
    void watch(std::string_view key, std::string_view suffix = {}) override;
    void unwatch(std::string_view key, std::string_view suffix = {}) override;
    void close() override;

  private:
    boost::asio::any_io_executor strand_;
    node cluster_;
    connection_settings settings_;
    release_listener on_release_;
    std::string key_prefix_;
    std::weak_ptr<const cluster_link> slots_;
    /// By master ("host:port").
    std::map<std::string, std::shared_ptr<subscriber>, std::less<>> masters_;
    struct watched
    {
        /// The subscriber the watches went to; null while the slot had no known master.
        std::shared_ptr<subscriber> on;
        std::size_t watches = 0;
    };
    /// By key and channel suffix.
    std::map<std::pair<std::string, std::string>, watched> keys_;
};

}  // namespace redlock::detail
