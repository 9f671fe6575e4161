// SPDX-License-Identifier: BSL-1.0
// options::retry_delay's policy. The public member is defined here, in the layer that calls it
// (an acquisition's pause between attempts), not with options' validation in src/api/.

#include <redlock/options.hpp>

#include <random>

namespace redlock {

std::chrono::milliseconds delay_policy::operator()(int attempt) const
{
    if (fn_) {
        auto d = fn_(attempt);
        return d.count() < 0 ? std::chrono::milliseconds(0) : d;
    }
    // Each thread draws from its own engine: no lock, and no shared sequence for
    // contenders in one process to march in step with.
    thread_local std::mt19937 engine{std::random_device{}()};
    std::uniform_int_distribution<int> ms(50, 250);
    return std::chrono::milliseconds(ms(engine));
}

}  // namespace redlock
