// SPDX-License-Identifier: BSL-1.0
#pragma once

// `redlock elect`: a campaign in a leader election that runs a command while it leads, or a
// listener that prints each leader.

#include "run.hpp"

#include <string>

namespace redlock_cli {

struct elect_args
{
    /// The nodes, the timing, the command and how it is stopped, as `redlock run` takes them;
    /// `key` is the election's NAME.
    run_args run;
    /// The value the leader publishes.
    std::string proposal;
    /// -l: follow the election instead of campaigning.
    bool listen = false;
    bool help = false;
};

/// Parses the arguments after "elect" (argv[first] on). Throws usage_error.
elect_args parse_elect_args(int argc, char** argv, int first);

/// Campaigns (or with -l listens); returns the exit status (see `redlock elect --help`).
int elect_command(const elect_args& args);

}  // namespace redlock_cli
