// SPDX-License-Identifier: BSL-1.0
#pragma once

// The node layer for a node that is a whole Redis Cluster (redis-cluster://): one pipelined
// `connection` per server, the slot map learned from CLUSTER SLOTS, each request sent to the
// master of its command's slot, MOVED and ASK followed. All members run on the client's
// strand.

#include "node/cluster/cluster_map_fsm.hpp"
#include "node/connection.hpp"

#include <boost/asio/steady_timer.hpp>

#include <map>
#include <mutex>
#include <utility>

namespace redlock::detail {

class cluster_link final : public node_link, public std::enable_shared_from_this<cluster_link>
{
  public:
    cluster_link(boost::asio::any_io_executor strand, node cluster, connection_settings settings);

    const std::string& name() const noexcept override { return name_; }

    /// Sends `cmd` to the master of its slot (`slot_of`; any master when it has none). Until the
    /// slot map is known, or while a slot has no master in it, the request waits for the map to be
    /// learned; it fails if that fails.
    void submit(std::shared_ptr<request_owner> owner, std::uint32_t index,
                const command& cmd) override;
    /// Tells the connection the request is on now.
    void gave_up(const request_owner& owner, std::uint32_t index, bool timed_out) override;
    /// Holds every server's writes, those connected later too.
    void hold_writes() noexcept override;
    void resume_writes() override;
    void close(const std::string& why) override;
    /// The sums over the cluster's servers.
    node_counters counters() const override;

    /// The master of `slot` in the slot map as it is now; nullopt while unknown.
    std::optional<server_address> master_of(std::uint16_t slot) const;

  private:
    struct routed;
    friend struct routed;

    /// Where `r` goes now (`waited`: it waited for a map, learned since).
    void route(const std::shared_ptr<routed>& r, bool waited);
    void send(const std::shared_ptr<routed>& r, std::size_t server);
    void delivered(const std::shared_ptr<routed>& r, exec_result result);
    const std::shared_ptr<connection>& connection_at(std::size_t server);
    void learn_map_soon();
    boost::asio::awaitable<void> learn_map();
    boost::asio::awaitable<cluster_map_fsm::learning> ask_for_map(std::size_t source);
    void fail_waiting(const node_failure& why);
    // Tells `r`'s owner that it failed with `why`.
    static void fail(const routed& r, const node_failure& why);

    boost::asio::any_io_executor strand_;
    node cluster_;
    std::string name_;
    connection_settings settings_;
    /// The servers the map knows, the slot map and its learning.
    cluster_map_fsm map_;
    /// One connection per server `map_` numbers, made when first used; never removed, so that
    /// numbers stay valid.
    std::vector<std::shared_ptr<connection>> servers_;
    /// Guards `servers_` against `counters` from other threads (the strand adds to it).
    mutable std::mutex servers_mutex_;
    /// Requests waiting for the slot map.
    std::vector<std::shared_ptr<routed>> waiting_;
    /// Requests on their way, by owner and index, for `gave_up`.
    std::map<std::pair<const request_owner*, std::uint32_t>, std::weak_ptr<routed>> live_;
    std::size_t sweep_at_ = 64;
    unsigned writes_held_ = 0;
};

}  // namespace redlock::detail
