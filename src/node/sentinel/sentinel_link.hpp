// SPDX-License-Identifier: BSL-1.0
#pragma once

// The node layer for a node that is the master a set of Sentinels names
// (redis-sentinel://): a `connection` whose sockets go to that master (`open_node` asks the
// Sentinels), wrapped to follow a failover. It reads the replies delivered through it: a
// READONLY (the master turned into a replica) makes the connection leave that server, and the
// next request asks the Sentinels again; and it listens to the Sentinels (`sentinel_watch`)
// for +switch-master. All members run on the client's strand.

#include "node/connection.hpp"
#include "node/sentinel/sentinel.hpp"

#include <memory>
#include <string>

namespace redlock::detail {

class sentinel_link final : public node_link, public std::enable_shared_from_this<sentinel_link>
{
  public:
    sentinel_link(boost::asio::any_io_executor strand, node n, connection_settings settings);
    ~sentinel_link() override;

    const std::string& name() const noexcept override { return link_->name(); }
    /// Passes the request to the connection, its owner wrapped so that the reply is read
    /// here first.
    void submit(std::shared_ptr<request_owner> owner, std::uint32_t index,
                const command& cmd) override;
    void gave_up(const request_owner& owner, std::uint32_t index, bool timed_out) override
    {
        link_->gave_up(owner, index, timed_out);
    }
    void hold_writes() noexcept override { link_->hold_writes(); }
    void resume_writes() override { link_->resume_writes(); }
    /// Closes the connection and stops the watch.
    void close(const std::string& why) override;
    node_counters counters() const override { return link_->counters(); }

    /// The Sentinels announced `master` as the node's master: unless the connection is there,
    /// its socket is given up (its requests fail) and the next request connects again at once.
    void master_switched(const server_address& master);

  private:
    struct followed;

    void delivered(const followed& request, std::uint32_t index, exec_result result);
    void note_master();

    boost::asio::any_io_executor strand_;
    node node_;
    connection_settings settings_;
    std::shared_ptr<connection> link_;
    // Started once the master first answered; stopped by `close`.
    std::shared_ptr<sentinel_watch> watch_;
    // The master last named in the log.
    std::string named_;
};

}  // namespace redlock::detail
