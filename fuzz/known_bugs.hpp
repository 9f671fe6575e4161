// SPDX-License-Identifier: BSL-1.0
#pragma once

// Known library bugs that the fuzz targets can step around (REDLOCK_FUZZ_SKIP_KNOWN=1), so
// that a long run can look for other findings. Their reproducers are in fuzz/regressions/.

#include <cstdlib>
#include <string_view>

namespace redlock_fuzz {

/// REDLOCK_FUZZ_SKIP_KNOWN=1 in the environment.
inline bool skip_known_bugs()
{
    static const bool skip = [] {
        const char* v = std::getenv("REDLOCK_FUZZ_SKIP_KNOWN");
        return v != nullptr && std::string_view(v) == "1";
    }();
    return skip;
}

/// "*" followed by six or more digits: hiredis 0.14 callocs a pointer per announced element
/// (16 GiB for *2147483647) and walks them all when the unfinished reply is freed (see
/// tests/hostile/test_memory.cpp).
inline bool has_huge_array_header(std::string_view wire)
{
    for (std::size_t i = 0; i < wire.size(); ++i) {
        if (wire[i] != '*') {
            continue;
        }
        std::size_t digits = 0;
        while (i + 1 + digits < wire.size() && wire[i + 1 + digits] >= '0' &&
               wire[i + 1 + digits] <= '9') {
            ++digits;
        }
        if (digits >= 6) {
            return true;
        }
    }
    return false;
}

}  // namespace redlock_fuzz
