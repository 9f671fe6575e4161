// SPDX-License-Identifier: BSL-1.0
#include <redlock/options.hpp>

namespace redlock {

std::string validate(const options& opts, std::string_view name)
{
    if (name.empty()) {
        return "the lock name is empty: it is the Redis key, give it a name";
    }
    if (opts.expiry.count() <= 0) {
        return "options.expiry must be positive (got " + std::to_string(opts.expiry.count()) +
               " ms)";
    }
    // Far beyond any sensible TTL, and far enough inside steady_clock's range that the
    // validity arithmetic (in nanoseconds) cannot overflow.
    constexpr auto longest = std::chrono::hours(24 * 365);
    if (opts.expiry > longest) {
        return "options.expiry must be at most 365 days (got " +
               std::to_string(opts.expiry.count()) + " ms)";
    }
    if (opts.wait && *opts.wait > longest) {
        return "options.wait must be at most 365 days";
    }
    if (opts.tries < 1) {
        return "options.tries must be at least 1 (got " + std::to_string(opts.tries) + ")";
    }
    if (opts.wait && opts.wait->count() < 0) {
        return "options.wait must not be negative";
    }
    if (opts.wait_for_replicas < 0) {
        return "options.wait_for_replicas must not be negative (got " +
               std::to_string(opts.wait_for_replicas) + "; 0 means no WAIT)";
    }
    if (opts.auto_extend_limit < 0) {
        return "options.auto_extend_limit must not be negative (0 means no limit)";
    }
    if (opts.fencing && opts.reentrant) {
        // Each hold would get its own token, and the newer one would fence off the older
        // holds of the same owner.
        return "options.fencing cannot be combined with options.reentrant: a fencing token "
               "names one acquisition, a reentrant lock is several holds of one owner";
    }
    // Written as !(in range) so that NaN is rejected too.
    if (!(opts.drift_factor >= 0.0 && opts.drift_factor < 1.0)) {
        return "options.drift_factor must be in [0, 1) (got " + std::to_string(opts.drift_factor) +
               ")";
    }
    if (!(opts.timeout_factor >= 0.0 && opts.timeout_factor < 1.0)) {
        return "options.timeout_factor must be in [0, 1) (got " +
               std::to_string(opts.timeout_factor) + ")";
    }
    auto drift_ms = static_cast<double>(opts.expiry.count()) * opts.drift_factor + 2.0;
    if (drift_ms >= static_cast<double>(opts.expiry.count())) {
        return "options.expiry (" + std::to_string(opts.expiry.count()) +
               " ms) leaves no validity after the drift allowance (expiry * drift_factor + 2 ms)";
    }
    return {};
}

std::string validate(const options& opts, const std::vector<std::string>& names)
{
    if (names.empty()) {
        return "the lock has no keys: give at least one name";
    }
    if (names.size() == 1) {
        // An index would only puzzle the caller of a plain lock, who gave one name.
        return validate(opts, names.front());
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i].empty()) {
            return "lock name " + std::to_string(i) + " (of " + std::to_string(names.size()) +
                   ") is empty: each is a Redis key, give it a name";
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (names[j] == names[i]) {
                return "the lock names the key '" + names[i] + "' twice";
            }
        }
    }
    return validate(opts, names.front());
}

}  // namespace redlock
