// SPDX-License-Identifier: BSL-1.0
// redlock: a distributed flock(1) for shell scripts and cron, on the redlock library.
//
//   redlock run --nodes URL[,URL...] --key KEY [OPTIONS] -- COMMAND [ARG...]
//   redlock elect --nodes URL[,URL...] NAME PROPOSAL [-- COMMAND [ARG...]]
//   redlock elect --nodes URL[,URL...] -l NAME
//   redlock status --nodes URL[,URL...] KEY...
//
// See `redlock --help` and docs/cli.md.

#include "args.hpp"
#include "elect.hpp"
#include "help.hpp"
#include "run.hpp"
#include "status.hpp"

#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#ifndef REDLOCK_CLI_VERSION
#define REDLOCK_CLI_VERSION "unknown"
#endif

namespace {

// How the usage errors list the commands.
constexpr std::string_view command_list = "run, elect and status";

int usage_failure(std::string_view command, const std::string& message)
{
    const std::string help =
        command.empty() ? "redlock --help" : "redlock " + std::string(command) + " --help";
    std::cerr << "redlock" << (command.empty() ? "" : " ") << command << ": " << message
              << " (see '" << help << "')" << std::endl;
    return redlock_cli::usage_exit;
}

}  // namespace

int main(int argc, char** argv)
{
    using namespace redlock_cli;
    if (argc < 2) {
        return usage_failure("",
                             "no command given: use 'redlock run', 'redlock elect' or "
                             "'redlock status'");
    }
    const std::string_view command = argv[1];
    try {
        if (command == "--help" || command == "-h" || command == "help") {
            if (command == "help" && argc > 2) {
                const std::string_view topic = argv[2];
                if (topic == "run") {
                    std::cout << run_help;
                    return 0;
                }
                if (topic == "elect") {
                    std::cout << elect_help;
                    return 0;
                }
                if (topic == "status") {
                    std::cout << status_help;
                    return 0;
                }
                return usage_failure("", "no help on '" + std::string(topic) +
                                             "': the commands are " + std::string(command_list));
            }
            std::cout << main_help;
            return 0;
        }
        if (command == "--version") {
            std::cout << "redlock " << REDLOCK_CLI_VERSION << "\n";
            return 0;
        }
        if (command == "run") {
            run_args a;
            try {
                a = parse_run_args(argc, argv, 2);
            } catch (const usage_error& e) {
                return usage_failure(command, e.what());
            }
            if (a.help) {
                std::cout << run_help;
                return 0;
            }
            return run_command(a);
        }
        if (command == "elect") {
            elect_args a;
            try {
                a = parse_elect_args(argc, argv, 2);
            } catch (const usage_error& e) {
                return usage_failure(command, e.what());
            }
            if (a.help) {
                std::cout << elect_help;
                return 0;
            }
            return elect_command(a);
        }
        if (command == "status") {
            status_args a;
            try {
                a = parse_status_args(argc, argv, 2);
            } catch (const usage_error& e) {
                return usage_failure(command, e.what());
            }
            if (a.help) {
                std::cout << status_help;
                return 0;
            }
            return status_command(a);
        }
        if (!command.empty() && command.front() == '-') {
            return usage_failure(
                "", "unknown option '" + std::string(command) +
                        "' (options go after the command: " + std::string(command_list) + ")");
        }
        return usage_failure("", "unknown command '" + std::string(command) +
                                     "' (the commands are " + std::string(command_list) + ")");
    } catch (const std::exception& e) {
        std::cerr << "redlock: " << describe(e) << std::endl;
        return redlock_cli::internal_error;
    }
}
