// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state behind a client: its connections, its waiters and its background work.

#include <redlock/config.hpp>

#include "lock/leader_watches.hpp"
#include "lock/waiters.hpp"
#include "node/connection.hpp"
#include "node/subscriber.hpp"
#include "quorum/background_work.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <memory>
#include <vector>

namespace redlock::detail {

class watchdog;

class client_impl
{
  public:
    client_impl(const boost::asio::any_io_executor& ex, redlock::config cfg);

    /// The executor the user gave; completions without an executor of their own run here.
    boost::asio::any_io_executor executor;
    /// Every piece of the client's own work runs on this strand.
    boost::asio::any_io_executor strand;
    redlock::config cfg;
    /// One pipelined connection per node, in the order of `cfg.nodes`.
    std::vector<std::shared_ptr<node_link>> connections;
    /// The acquires waiting to retry, by key (wake-ups and hand-offs); on the strand.
    std::shared_ptr<waiter_queue> waiters = std::make_shared<waiter_queue>();
    /// The observers of elections waiting for an announcement; on the strand.
    std::shared_ptr<leader_watches> observers = std::make_shared<leader_watches>();
    /// Wake-ups, one source per node (a pub/sub connection, or one per master of a cluster);
    /// they connect only when needed.
    std::vector<std::shared_ptr<wake_ups>> subscribers;
    /// A node is a Redis Cluster: helper keys and channels go in their lock key's slot, and
    /// releases are announced with sharded pub/sub (key_space.hpp).
    bool in_cluster = false;
    /// Names this client's channel for its fair waiters' messages (`client_channel_suffix`):
    /// random, so that clients seldom share one (which would only wake them needlessly).
    std::string channel_tag;

    /// Releases scheduled by guard destructors, and requests that releases and clean-ups
    /// left in flight: async_shutdown waits for them.
    std::shared_ptr<background_work> background;
    std::atomic<bool> shut_down{false};
    /// The watchdog while it has locks scheduled (its timer wait owns it); on the strand.
    std::weak_ptr<watchdog> watch;
};

}  // namespace redlock::detail
