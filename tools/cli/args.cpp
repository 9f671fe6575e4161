// SPDX-License-Identifier: BSL-1.0
#include "args.hpp"

#include <redlock/node.hpp>

#include <boost/system/system_error.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace redlock_cli {
namespace {

std::string quoted(std::string_view s)
{
    return "'" + std::string(s) + "'";
}

bool iequals(std::string_view a, std::string_view b)
{
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::toupper(static_cast<unsigned char>(x)) ==
                      std::toupper(static_cast<unsigned char>(y));
           });
}

struct named_signal
{
    std::string_view name;
    int number;
};

constexpr std::array<named_signal, 31> signals{{
    {"HUP", SIGHUP},       {"INT", SIGINT},   {"QUIT", SIGQUIT},     {"ILL", SIGILL},
    {"TRAP", SIGTRAP},     {"ABRT", SIGABRT}, {"IOT", SIGIOT},       {"BUS", SIGBUS},
    {"FPE", SIGFPE},       {"KILL", SIGKILL}, {"USR1", SIGUSR1},     {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2},     {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},     {"TERM", SIGTERM},
    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT},     {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP},     {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},     {"URG", SIGURG},
    {"XCPU", SIGXCPU},     {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF},
    {"WINCH", SIGWINCH},   {"IO", SIGIO},     {"SYS", SIGSYS},
}};

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view option, std::string_view text)
{
    const auto bad = [&](std::string_view why) -> usage_error {
        return usage_error(std::string(option) + ": " + std::string(why) + " " + quoted(text) +
                           " (use e.g. 500ms, 10s, 1.5s, 2m or 1h)");
    };
    // A number: digits, optionally a '.' and more digits. No sign, exponent or spaces.
    std::size_t i = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        ++i;
    }
    const std::size_t whole_digits = i;
    std::size_t fraction_digits = 0;
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
            ++i;
            ++fraction_digits;
        }
    }
    if (whole_digits + fraction_digits == 0) {
        throw bad("expected a duration, got");
    }
    if (whole_digits > 12 || fraction_digits > 9) {
        throw bad("duration out of range:");
    }
    const std::string_view number = text.substr(0, i);
    const std::string_view unit = text.substr(i);
    double scale = 0;
    if (unit == "ms") {
        scale = 1;
    } else if (unit == "s" || unit.empty()) {
        scale = 1000;
    } else if (unit == "m") {
        scale = 60 * 1000;
    } else if (unit == "h") {
        scale = 3600 * 1000;
    } else {
        throw bad("unknown unit in duration");
    }
    double value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc{} || end != number.data() + number.size()) {
        throw bad("expected a duration, got");
    }
    const double ms = std::round(value * scale);
    constexpr double longest = 365.0 * 24 * 3600 * 1000;
    if (!(ms <= longest)) {
        throw bad("duration longer than 365 days:");
    }
    return std::chrono::milliseconds(static_cast<long long>(ms));
}

std::string printable(std::string_view s)
{
    std::string out;
    for (unsigned char c : s) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        }
    }
    return out;
}

std::string format_duration(std::chrono::milliseconds d)
{
    const long long ms = d.count();
    if (ms != 0 && ms % 60000 == 0) {
        return std::to_string(ms / 60000) + " min";
    }
    if (ms % 1000 == 0) {
        return std::to_string(ms / 1000) + " s";
    }
    if (ms > 1000) {
        std::string s =
            std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
        while (s.back() == '0') {
            s.pop_back();
        }
        return s + " s";
    }
    return std::to_string(ms) + " ms";
}

int parse_signal(std::string_view option, std::string_view text)
{
    if (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0]))) {
        int n = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec == std::errc{} && end == text.data() + text.size() && n >= 1 && n <= SIGRTMAX) {
            return n;
        }
        throw usage_error(std::string(option) + ": no signal number " + quoted(text) + " (1.." +
                          std::to_string(SIGRTMAX) + ")");
    }
    std::string_view name = text;
    if (name.size() > 3 && iequals(name.substr(0, 3), "SIG")) {
        name.remove_prefix(3);
    }
    for (const named_signal& s : signals) {
        if (iequals(s.name, name)) {
            return s.number;
        }
    }
    throw usage_error(std::string(option) + ": unknown signal " + quoted(text) +
                      " (use a name such as TERM, INT, HUP, USR1, KILL, or a number)");
}

std::string signal_name(int signo)
{
    for (const named_signal& s : signals) {
        if (s.number == signo) {
            return "SIG" + std::string(s.name);
        }
    }
    return "signal " + std::to_string(signo);
}

std::string describe(const std::exception& e)
{
    std::string what = e.what();
    if (const auto* se = dynamic_cast<const boost::system::system_error*>(&e)) {
        // boost's what() is "<message>: <the error code's own message>".
        const std::string suffix = ": " + se->code().message();
        if (auto pos = what.rfind(suffix); pos != std::string::npos && pos > 0) {
            what.resize(pos);
        }
    }
    return what;
}

std::string describe_client_failure(const std::exception& e)
{
    std::string message = describe(e);
    if (message.starts_with("config.tls: ")) {
        message.erase(0, 12);
    }
    return message;
}

redlock::config parse_nodes(const std::vector<std::string>& lists, std::string_view source)
{
    const std::string prefix = std::string(source) + ": ";
    redlock::config cfg;
    for (const std::string& list : lists) {
        for (std::string_view url : redlock::split_node_urls(list)) {
            if (url.empty()) {
                throw usage_error(prefix +
                                  "empty URL in the list (URLs are separated by single "
                                  "commas; a comma in a password is written %2C)");
            }
            try {
                cfg.nodes.push_back(redlock::node::from_url(url));
            } catch (const std::exception& e) {
                throw usage_error(prefix + describe(e));
            }
        }
    }
    if (cfg.nodes.empty()) {
        throw usage_error("--nodes is required (or set REDLOCK_NODES)");
    }
    if (std::string problem = redlock::validate(cfg); !problem.empty()) {
        throw usage_error(prefix + problem);
    }
    return cfg;
}

bool key_prefix_option(arg_scanner& args, std::optional<std::string>& prefix)
{
    if (auto v = args.value_option("--key-prefix")) {
        prefix = *v;
        return true;
    }
    return false;
}

void apply_key_prefix(redlock::config& cfg, const std::optional<std::string>& option)
{
    std::string source = "--key-prefix";
    if (option) {
        cfg.key_prefix = *option;
    } else if (const char* env = std::getenv("REDLOCK_KEY_PREFIX"); env != nullptr) {
        cfg.key_prefix = env;
        source = "REDLOCK_KEY_PREFIX";
    }
    if (std::string problem = redlock::validate(cfg); !problem.empty()) {
        // The nodes were checked already: this is about the prefix, named as the user gave it.
        constexpr std::string_view field = "config.key_prefix";
        if (auto pos = problem.find(field); pos != std::string::npos) {
            problem.replace(pos, field.size(), source);
        }
        throw usage_error(problem);
    }
}

bool tls_option(arg_scanner& args, redlock::tls_settings& tls)
{
    if (auto v = args.value_option("--tls-ca")) {
        tls.ca_file = *v;
    } else if (auto v = args.value_option("--tls-cert")) {
        tls.cert_file = *v;
    } else if (auto v = args.value_option("--tls-key")) {
        tls.key_file = *v;
    } else {
        return false;
    }
    return true;
}

void check_tls(const redlock::config& cfg)
{
    const redlock::tls_settings& tls = cfg.tls;
    for (auto [option, file] :
         {std::pair{"--tls-ca", &tls.ca_file}, std::pair{"--tls-cert", &tls.cert_file},
          std::pair{"--tls-key", &tls.key_file}}) {
        if (!file->empty() && ::access(file->c_str(), R_OK) != 0) {
            throw usage_error(std::string(option) + ": cannot read " + quoted(*file) + ": " +
                              std::strerror(errno));
        }
    }
    if (tls.cert_file.empty() != tls.key_file.empty()) {
        throw usage_error("--tls-cert and --tls-key go together: give both or neither");
    }
    const bool any_tls = std::any_of(cfg.nodes.begin(), cfg.nodes.end(),
                                     [](const redlock::node& n) { return n.tls; });
    if (!any_tls && !(tls.ca_file.empty() && tls.cert_file.empty())) {
        throw usage_error("TLS options given, but no node uses rediss://");
    }
}

redlock::config nodes_from(const std::vector<std::string>& lists)
{
    if (lists.empty()) {
        if (const char* env = std::getenv("REDLOCK_NODES"); env != nullptr && *env != '\0') {
            return parse_nodes({env}, "REDLOCK_NODES");
        }
    }
    return parse_nodes(lists, "--nodes");
}

std::optional<std::string> arg_scanner::value_option(std::string_view name, std::string_view alias)
{
    if (!more()) {
        return std::nullopt;
    }
    const std::string_view arg = peek();
    if (arg == name || (!alias.empty() && arg == alias)) {
        take();
        if (!more()) {
            throw usage_error(std::string(arg) + " needs a value");
        }
        return std::string(take());
    }
    if (!alias.empty() && arg.size() > alias.size() && arg.starts_with(alias)) {
        take();
        return std::string(arg.substr(alias.size()));
    }
    if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
        take();
        return std::string(arg.substr(name.size() + 1));
    }
    return std::nullopt;
}

bool arg_scanner::flag(std::string_view name, std::string_view alias)
{
    if (!more()) {
        return false;
    }
    const std::string_view arg = peek();
    if (arg == name || (!alias.empty() && arg == alias)) {
        take();
        return true;
    }
    if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
        throw usage_error(std::string(name) + " takes no value");
    }
    return false;
}

}  // namespace redlock_cli
