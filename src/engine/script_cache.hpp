// SPDX-License-Identifier: BSL-1.0
#pragma once

// The scripts one socket's server has been sent the text of: their later uses go by SHA-1
// alone (EVALSHA). A server keeps scripts for all its connections, but only what was sent on
// this socket is known to have reached this server (a restart, a failover or SCRIPT FLUSH
// empties its cache), so a fresh socket starts with an empty cache.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace redlock::detail {

/// A script's identity within the process: opaque, never 0 (0 is "no script"). The
/// multiplexer derives it from the command it sends (`script_of` in multiplexer.cpp), so
/// that whatever names a script there (the address of its text, an entry of a script table)
/// maps to one id.
using script_id = std::uintptr_t;

/// A handful of scripts at most: a flat vector beats a set here.
class script_cache
{
  public:
    bool knows(script_id id) const noexcept
    {
        return std::find(ids_.begin(), ids_.end(), id) != ids_.end();
    }
    void remember(script_id id)
    {
        if (!knows(id)) {
            ids_.push_back(id);
        }
    }
    void forget(script_id id) noexcept { std::erase(ids_, id); }
    void clear() noexcept { ids_.clear(); }

  private:
    std::vector<script_id> ids_;
};

}  // namespace redlock::detail
