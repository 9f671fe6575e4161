// SPDX-License-Identifier: BSL-1.0
#include "protocol/key_space.hpp"

#include "protocol/key_slot.hpp"

namespace redlock::detail {
namespace {

constexpr std::string_view fence_infix = "redlock:fence:";
constexpr std::string_view release_infix = "redlock:released:";
constexpr std::string_view limit_infix = "redlock:limit:";
constexpr std::string_view leader_infix = "redlock:leader:";
constexpr std::string_view queue_infixes[] = {
    "redlock:queue:", "redlock:queue-expiry:", "redlock:queue-state:", "redlock:ticket:"};
constexpr std::string_view waiters_infixes[] = {"redlock:waiters:", "redlock:waiters-named:"};

// prefix + infix + the name inside `key`. Keys come from lock_keys, so they start with the
// prefix; a key that does not is taken whole rather than cut somewhere. With `in_key_slot`,
// a name in `key`'s cluster slot (see fence_key), empty when there is none.
std::string beside(std::string_view prefix, std::string_view infix, std::string_view key,
                   bool in_key_slot)
{
    const std::string_view name = key.starts_with(prefix) ? key.substr(prefix.size()) : key;
    std::string out;
    out.reserve(prefix.size() + infix.size() + name.size() + 2);
    out.append(prefix).append(infix).append(name);
    // Names whose hashed parts are the same share a slot; compared as text, since this runs
    // for every release (a CRC of each would cost more than the rest of the name).
    if (!in_key_slot || hashed_part(out) == hashed_part(key)) {
        return out;
    }
    // Braces around the whole key make it the tag, so the name hashes as the key does when
    // the key has no tag of its own (it has none here: with one in the name or in the
    // prefix, the name above already shares its slot).
    out.assign(prefix).append(infix).append("{").append(key).append("}");
    if (hashed_part(out) != hashed_part(key)) {
        return {};
    }
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

std::string fence_key(std::string_view prefix, std::string_view key, bool in_key_slot)
{
    return beside(prefix, fence_infix, key, in_key_slot);
}

std::string limit_key(std::string_view prefix, std::string_view key, bool in_key_slot)
{
    return beside(prefix, limit_infix, key, in_key_slot);
}

std::string leader_key(std::string_view prefix, std::string_view key, bool in_key_slot)
{
    return beside(prefix, leader_infix, key, in_key_slot);
}

std::string queue_key(std::string_view prefix, std::string_view key, queue_part part,
                      bool in_key_slot)
{
    return beside(prefix, queue_infixes[static_cast<int>(part)], key, in_key_slot);
}

std::string waiters_key(std::string_view prefix, std::string_view key, waiters_part part,
                        bool in_key_slot)
{
    return beside(prefix, waiters_infixes[static_cast<int>(part)], key, in_key_slot);
}

std::string client_channel_suffix(std::string_view channel_tag)
{
    std::string suffix;
    suffix.reserve(channel_tag.size() + 1);
    suffix += '/';
    suffix += channel_tag;
    return suffix;
}

std::string release_channel(std::string_view prefix, std::string_view key, bool in_key_slot)
{
    return beside(prefix, release_infix, key, in_key_slot);
}

}  // namespace redlock::detail
