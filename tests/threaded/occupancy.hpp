// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <atomic>

namespace redlock::test {

// How many threads (or coroutines on several threads) are inside at once, and the most there
// ever were.
struct occupancy
{
    std::atomic<int> inside{0};
    std::atomic<int> most{0};

    void enter()
    {
        const int now = ++inside;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
    }
    void leave() { --inside; }
};

}  // namespace redlock::test
