// SPDX-License-Identifier: BSL-1.0
#include <redlock/fence.hpp>

namespace redlock {

bool fence::admit(std::uint64_t token, std::string_view owner)
{
    if (!fence_admits(token, owner, newest_, owner_)) {
        return false;
    }
    if (token != newest_) {
        newest_ = token;
        owner_.assign(owner);
    }
    return true;
}

}  // namespace redlock
