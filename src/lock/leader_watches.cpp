// SPDX-License-Identifier: BSL-1.0
#include "lock/leader_watches.hpp"

namespace redlock::detail {

void leader_watches::add(const std::string& key, leader_watcher& w)
{
    watchers_.emplace(key, &w);
}

void leader_watches::remove(const std::string& key, leader_watcher& w)
{
    auto [first, last] = watchers_.equal_range(key);
    for (auto it = first; it != last; ++it) {
        if (it->second == &w) {
            watchers_.erase(it);
            return;
        }
    }
}

void leader_watches::announced(std::string_view key)
{
    auto [first, last] = watchers_.equal_range(key);
    for (auto it = first; it != last; ++it) {
        it->second->announced = true;
        it->second->wake.cancel();
    }
}

}  // namespace redlock::detail
