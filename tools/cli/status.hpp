// SPDX-License-Identifier: BSL-1.0
#pragma once

// `redlock status`: per node, who holds a key and for how much longer.

#include <redlock/config.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace redlock_cli {

struct status_args
{
    redlock::config nodes;
    std::vector<std::string> keys;
    std::chrono::milliseconds timeout{1000};
    bool help = false;
};

/// Parses the arguments after "status" (argv[first] on). Throws usage_error.
status_args parse_status_args(int argc, char** argv, int first);

/// Prints the report; returns 0 when every node answered, 1 otherwise.
int status_command(const status_args& args);

}  // namespace redlock_cli
