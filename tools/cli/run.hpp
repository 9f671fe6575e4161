// SPDX-License-Identifier: BSL-1.0
#pragma once

// `redlock run`: a command under a lock, stopped when the lock is lost.

#include <redlock/config.hpp>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace redlock_cli {

class arg_scanner;

/// Which lock `redlock run` takes under its key.
enum class lock_kind {
    /// The default, and -x: the writer of a read-write lock, which excludes its readers and
    /// every other writer.
    exclusive,
    /// -s: a reader of a read-write lock, beside its other readers.
    shared,
    /// --permits N: one permit of an N-permit semaphore.
    permit,
    /// --fair: a fair mutex (`options::fair`), granted in the order its waiters came.
    fair,
};

struct run_args
{
    redlock::config nodes;
    std::string key;
    lock_kind kind = lock_kind::exclusive;
    /// For lock_kind::permit: how many holders the semaphore admits.
    std::ptrdiff_t permits = 1;
    std::chrono::milliseconds expiry{30000};
    /// nullopt: wait forever (the default, as flock(1) does); 0: a single attempt.
    std::optional<std::chrono::milliseconds> wait;
    /// The exit status when another owner holds the lock.
    int conflict_exit_code = 1;
    int stop_signal = SIGTERM;
    std::chrono::milliseconds kill_after{10000};
    bool process_group = false;
    bool quiet = false;
    bool verbose = false;
    bool help = false;
    std::vector<std::string> command;
};

/// Parses the arguments after "run" (argv[first] on). Throws usage_error.
run_args parse_run_args(int argc, char** argv, int first);

/// Runs the command under the lock; returns the exit status (see `redlock run --help`).
int run_command(const run_args& args);

// The options `redlock elect` shares with `redlock run`, each parsed when it is next.

/// What --nodes, --tls-* and --key-prefix chose, until every option is read.
struct node_choices
{
    std::vector<std::string> node_lists;
    redlock::tls_settings tls;
    std::optional<std::string> key_prefix;
};

/// --nodes, --tls-ca, --tls-cert, --tls-key and --key-prefix: the nodes, and how to reach them.
bool node_option(arg_scanner& args, node_choices& c);
/// Sets `a.nodes` from the choices (or $REDLOCK_NODES and $REDLOCK_KEY_PREFIX) and checks them.
/// Throws usage_error.
void apply_node_choices(run_args& a, const node_choices& c);
/// --expiry, --wait, -n and -E: how long the lock is held and waited for, and the exit status
/// when another owner holds it.
bool timing_option(arg_scanner& args, run_args& a);
/// --signal, --kill-after and --process-group: how the command is stopped.
bool command_option(arg_scanner& args, run_args& a);
/// -q and -v: what redlock prints.
bool output_option(arg_scanner& args, run_args& a);
/// At the first argument that no option took: consumes "--", or throws usage_error for an
/// unknown option. The command follows.
void end_options(arg_scanner& args);
/// The library's check of --expiry and --wait, its message naming the options instead of the
/// fields. Throws usage_error.
void check_lock_options(const run_args& a);

}  // namespace redlock_cli
