// SPDX-License-Identifier: BSL-1.0
#include "detail/key_space.hpp"

namespace redlock::detail {
namespace {

constexpr std::string_view fence_infix = "redlock:fence:";
constexpr std::string_view release_infix = "redlock:released:";

// prefix + infix + the name inside `key`. Keys come from lock_keys, so they start with the
// prefix; a key that does not is taken whole rather than cut somewhere.
std::string beside(std::string_view prefix, std::string_view infix, std::string_view key)
{
    const std::string_view name = key.starts_with(prefix) ? key.substr(prefix.size()) : key;
    std::string out;
    out.reserve(prefix.size() + infix.size() + name.size());
    out.append(prefix).append(infix).append(name);
    return out;
}

}  // namespace

std::vector<std::string> lock_keys(std::string_view prefix, std::vector<std::string> names)
{
    if (!prefix.empty()) {
        for (std::string& name : names) {
            name.insert(0, prefix);
        }
    }
    return names;
}

std::string fence_key(std::string_view prefix, std::string_view key)
{
    return beside(prefix, fence_infix, key);
}

std::string release_channel(std::string_view prefix, std::string_view key)
{
    return beside(prefix, release_infix, key);
}

std::optional<std::string> released_key(std::string_view prefix, std::string_view channel)
{
    if (!channel.starts_with(prefix) || !channel.substr(prefix.size()).starts_with(release_infix)) {
        return std::nullopt;
    }
    std::string key(prefix);
    key.append(channel.substr(prefix.size() + release_infix.size()));
    return key;
}

}  // namespace redlock::detail
