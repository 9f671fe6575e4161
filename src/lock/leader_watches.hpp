// SPDX-License-Identifier: BSL-1.0
#pragma once

// The observers of a client's elections that wait to hear of a change: a leader's
// publication, its resignation, a new leader (each announced on the election's channel,
// key_space.hpp's `leader_channel_suffix`). On the strand.

#include <boost/asio/steady_timer.hpp>

#include <map>
#include <string>
#include <string_view>

namespace redlock::detail {

/// One waiting observer: its wait, and whether an announcement came since it last looked
/// (one that comes while it reads the leader must not be lost to its next wait).
struct leader_watcher
{
    explicit leader_watcher(const boost::asio::any_io_executor& strand) : wake(strand) {}
    boost::asio::steady_timer wake;
    bool announced = false;
};

class leader_watches
{
  public:
    void add(const std::string& key, leader_watcher& w);
    void remove(const std::string& key, leader_watcher& w);
    /// An announcement on the election of lock key `key`: its observers look again.
    void announced(std::string_view key);

  private:
    std::multimap<std::string, leader_watcher*, std::less<>> watchers_;
};

}  // namespace redlock::detail
