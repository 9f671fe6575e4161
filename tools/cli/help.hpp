// SPDX-License-Identifier: BSL-1.0
#pragma once

// The man-page style texts of `redlock --help`, `redlock run --help`,
// `redlock elect --help` and `redlock status --help`. docs/cli.md repeats them word for word
// (tools/test_cli.sh checks).

#include <string_view>

namespace redlock_cli {

extern const std::string_view main_help;
extern const std::string_view run_help;
extern const std::string_view elect_help;
extern const std::string_view status_help;

}  // namespace redlock_cli
