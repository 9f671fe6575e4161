// SPDX-License-Identifier: BSL-1.0
#pragma once

// What a client keeps for each of its nodes, made together because they are wired together:
// the link its requests go through and the source of its wake-ups. A cluster's wake-ups
// subscribe on the master of each key's slot, which they learn from the cluster's link; any
// other node's wake-ups have a pub/sub connection of their own.

#include <redlock/node.hpp>

#include "node/connection.hpp"
#include "node/node_link.hpp"
#include "node/subscriber.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>

namespace redlock::detail {

struct linked_node
{
    std::shared_ptr<node_link> link;
    std::shared_ptr<wake_ups> wakes;
};

/// The link to `n` and its wake-ups, which tell `on_release` of each release message.
/// `key_prefix` is the client's config::key_prefix; `sharded`: the client has a cluster node,
/// so that every node's channels are named for sharded pub/sub (see `subscriber`).
linked_node make_linked_node(const boost::asio::any_io_executor& strand, const node& n,
                             const connection_settings& settings, release_listener on_release,
                             const std::string& key_prefix, bool sharded);

}  // namespace redlock::detail
