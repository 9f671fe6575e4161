// SPDX-License-Identifier: BSL-1.0
#pragma once

// Which profile the fault suite runs: the CI profile, or each scenario ten times longer.

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <string_view>

namespace redlock::faults {

/// The soak profile: `REDLOCK_FAULTS_SOAK` set (and not "0"), or `--soak` after `--`.
inline bool soak_requested()
{
    if (const char* v = std::getenv("REDLOCK_FAULTS_SOAK"); v && *v && std::string_view(v) != "0")
        return true;
    auto& suite = boost::unit_test::framework::master_test_suite();
    for (int i = 1; i < suite.argc; ++i)
        if (std::string_view(suite.argv[i]) == "--soak")
            return true;
    return false;
}

}  // namespace redlock::faults
