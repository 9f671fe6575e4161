// SPDX-License-Identifier: BSL-1.0
#pragma once

// Command-line parsing shared by the redlock tool's commands: durations, signals, node lists
// and a small long-option scanner. Every problem is a usage_error with a one-line message.

#include <redlock/config.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace redlock_cli {

/// EX_USAGE of sysexits.h: the command line is wrong.
inline constexpr int usage_exit = 64;
/// EX_SOFTWARE of sysexits.h: something failed inside redlock itself.
inline constexpr int internal_error = 70;

/// A command-line problem: the message is one line, without the program name.
class usage_error : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

/// Parses "500ms", "10s", "1.5s", "2m", "1h", or a bare number of seconds ("10"). Throws
/// usage_error naming `option` when `text` is not such a duration or exceeds 365 days.
std::chrono::milliseconds parse_duration(std::string_view option, std::string_view text);

/// Printable ASCII as is; a backslash and other bytes as \\ and \xNN: a value (any bytes)
/// on one line of output.
std::string printable(std::string_view s);

/// "1.5 s", "250 ms", "2 m" ...: a duration for messages.
std::string format_duration(std::chrono::milliseconds d);

/// Parses a signal name (TERM, SIGTERM, term) or number (15). Throws usage_error.
int parse_signal(std::string_view option, std::string_view text);

/// "SIGTERM", or "signal 42" for one without a name.
std::string signal_name(int signo);

/// Parses lists of node URLs (split by redlock::split_node_urls, each through
/// redlock::node::from_url) into a config and validates it. Throws usage_error with the library's
/// message (which never repeats a password), prefixed with `source` ("--nodes" or "REDLOCK_NODES").
redlock::config parse_nodes(const std::vector<std::string>& lists, std::string_view source);

/// The node lists given with --nodes, or else $REDLOCK_NODES; parsed as parse_nodes does.
redlock::config nodes_from(const std::vector<std::string>& lists);

/// A message of a `boost::system::system_error` thrown for invalid_argument, without the
/// generic text of the error code that `what()` appends.
std::string describe(const std::exception& e);

/// Why making a client from the command line's config failed (a TLS file that OpenSSL cannot
/// load, or a config the parser let through): `describe(e)`, without the "config.tls: "
/// prefix, since the file is named and came from --tls-*.
std::string describe_client_failure(const std::exception& e);

/// Scans arguments of one command: `--name value`, `--name=value`, flags, `--` and
/// positional arguments.
class arg_scanner
{
  public:
    arg_scanner(int argc, char** argv, int first) : argc_(argc), argv_(argv), next_(first) {}

    /// True while arguments remain.
    bool more() const { return next_ < argc_; }
    /// The next argument, not consumed.
    std::string_view peek() const { return argv_[next_]; }
    /// Consumes and returns the next argument.
    std::string_view take() { return argv_[next_++]; }
    /// Index of the next argument.
    int index() const { return next_; }

    /// When the next argument is the option `name` (or `--name=...`, or its short form
    /// `alias` as `-x VALUE` or `-xVALUE`) taking a value, consumes it and its value and
    /// returns the value. Throws usage_error when the value is missing.
    std::optional<std::string> value_option(std::string_view name, std::string_view alias = {});
    /// When the next argument is the flag `name` (or its short form `alias`, if any),
    /// consumes it. Throws usage_error for `--flag=value`.
    bool flag(std::string_view name, std::string_view alias = {});

  private:
    int argc_;
    char** argv_;
    int next_;
};

/// Parses --key-prefix PREFIX when it is next.
bool key_prefix_option(arg_scanner& args, std::optional<std::string>& prefix);

/// Sets `cfg.key_prefix` from --key-prefix (`option`), or else from $REDLOCK_KEY_PREFIX, and
/// checks it. Throws usage_error naming the source.
void apply_key_prefix(redlock::config& cfg, const std::optional<std::string>& option);

/// Parses --tls-ca FILE, --tls-cert FILE and --tls-key FILE when one of them is next.
bool tls_option(arg_scanner& args, redlock::tls_settings& tls);

/// Checks the TLS options against the nodes: files readable, certificate and key together,
/// and some rediss:// node to use them. Throws usage_error.
void check_tls(const redlock::config& cfg);

}  // namespace redlock_cli
