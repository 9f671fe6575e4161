// SPDX-License-Identifier: BSL-1.0
#pragma once

// The node layer's face to the layers above: a link to one Redlock node, which takes requests
// and tells their owners the outcomes. A node is one server (`connection`) or a whole Redis
// Cluster (`cluster_link`); quorum rounds, inspections and hand-offs see only this.

#include <redlock/config.hpp>
#include <redlock/node.hpp>
#include <redlock/observability.hpp>

#include "core/clock.hpp"
#include "engine/request.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace redlock::detail {

struct connection_settings;

/// One Redlock node as the layers above see it. All members but `counters` run on the
/// client's strand.
class node_link
{
  public:
    virtual ~node_link() = default;

    /// The node as reports name it.
    virtual const std::string& name() const noexcept = 0;

    /// Queues `cmd` (which `owner` keeps alive) as request `index` of `owner`; its outcome
    /// goes to `owner->deliver` (perhaps before `submit` returns, when the node is known to
    /// be down). Connects on demand.
    virtual void submit(std::shared_ptr<request_owner> owner, std::uint32_t index,
                        const command& cmd) = 0;

    /// The owner of request `index`, submitted here, gave it up (after marking it given up),
    /// at its deadline when `timed_out`: a link whose server lets every request time out
    /// gives up its socket.
    virtual void gave_up(const request_owner& owner, std::uint32_t index, bool timed_out) = 0;

    /// Holds back writes until as many `resume_writes` calls: requests submitted meanwhile
    /// are queued and go out together. A hand-off holds them so that the release and the
    /// next owner's attempt reach the server in one write.
    virtual void hold_writes() noexcept = 0;
    virtual void resume_writes() = 0;

    /// Fails every pending request with `why` and refuses new ones.
    virtual void close(const std::string& why) = 0;

    /// The counters so far; safe from any thread.
    virtual node_counters counters() const = 0;
};

/// Sends `cmd` to `link` and waits for its outcome until `deadline`, or until the awaiting
/// coroutine is cancelled. A request that is given up on stays in the pipeline so that its
/// reply is read and dropped, never matched to a later request. Awaited on the strand.
boost::asio::awaitable<exec_result> execute(node_link& link, command cmd,
                                            clock::time_point deadline);

/// The link for `n`: a `cluster_link` for a Redis Cluster node, a `sentinel_link` for a
/// Sentinel node, a `connection` otherwise.
std::shared_ptr<node_link> make_link(boost::asio::any_io_executor strand, const node& n,
                                     const connection_settings& settings);

}  // namespace redlock::detail
