#include "status.hpp"

#include "args.hpp"
#include "resp_client.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

namespace redlock_cli {
namespace {

using steady = std::chrono::steady_clock;

// Printable ASCII as is; a backslash and other bytes as \\ and \xNN.
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

// What one node says about one key.
struct key_state
{
    enum class kind { free, held, other, error } type = kind::free;
    // held: owner values; for a reentrant lock (a hash) each with its hold count.
    std::vector<std::pair<std::string, std::string>> holders;
    bool reentrant = false;
    long long pttl = -2;
    // other: the key's type; error: the message.
    std::string text;
};

key_state error_state(std::string message)
{
    key_state s;
    s.type = key_state::kind::error;
    s.text = std::move(message);
    return s;
}

// Reads the key: its type, then its value(s) and TTL. A key that vanishes in between reads
// as free.
key_state read_key(resp_connection& c, const std::string& key)
{
    using kind = resp_value::kind;
    const resp_value type = c.command({"TYPE", key});
    if (type.type == kind::error) {
        return error_state("TYPE: " + type.text);
    }
    key_state s;
    if (type.text == "none") {
        return s;
    }
    if (type.text == "string") {
        const resp_value v = c.command({"GET", key});
        if (v.type == kind::nil) {
            return s;
        }
        if (v.type != kind::bulk) {
            return error_state("GET: " + (v.type == kind::error ? v.text : "unexpected reply"));
        }
        s.holders.emplace_back(v.text, "");
    } else if (type.text == "hash") {
        const resp_value v = c.command({"HGETALL", key});
        if (v.type != kind::array) {
            return error_state("HGETALL: " + (v.type == kind::error ? v.text : "unexpected reply"));
        }
        for (std::size_t i = 0; i + 1 < v.elements.size(); i += 2) {
            s.holders.emplace_back(v.elements[i].text, v.elements[i + 1].text);
        }
        if (s.holders.empty()) {
            return s;
        }
        s.reentrant = true;
    } else {
        s.type = key_state::kind::other;
        s.text = type.text;
        return s;
    }
    const resp_value ttl = c.command({"PTTL", key});
    if (ttl.type != resp_value::kind::integer) {
        return error_state("PTTL: " + (ttl.type == kind::error ? ttl.text : "unexpected reply"));
    }
    if (ttl.integer == -2) {
        return key_state{};  // expired meanwhile
    }
    s.type = key_state::kind::held;
    s.pttl = ttl.integer;
    return s;
}

std::string describe_state(const key_state& s)
{
    switch (s.type) {
        case key_state::kind::free:
            return "free";
        case key_state::kind::other:
            return "not a lock (a " + s.text + ")";
        case key_state::kind::error:
            return "error: " + s.text;
        case key_state::kind::held:
            break;
    }
    std::string out = "held by ";
    for (std::size_t i = 0; i < s.holders.size(); ++i) {
        out += (i ? ", " : "") + printable(s.holders[i].first);
        if (s.reentrant) {
            out += " (count " + printable(s.holders[i].second) + ")";
        }
    }
    out += s.pttl >= 0 ? ", ttl " + std::to_string(s.pttl) + " ms" : ", no expiry";
    return out;
}

std::string summary(const std::string& key, const std::vector<key_state>& states)
{
    const std::size_t n = states.size();
    const std::size_t quorum = n / 2 + 1;
    std::map<std::string, std::size_t> by_owner;
    std::size_t held = 0, free = 0, other = 0, failed = 0;
    for (const key_state& s : states) {
        switch (s.type) {
            case key_state::kind::free:
                ++free;
                break;
            case key_state::kind::other:
                ++other;
                break;
            case key_state::kind::error:
                ++failed;
                break;
            case key_state::kind::held:
                ++held;
                for (const auto& h : s.holders) {
                    ++by_owner[h.first];
                }
                break;
        }
    }
    const std::string nodes = " of " + std::to_string(n) + " node" + (n == 1 ? "" : "s");
    const std::string name = printable(key) + ": ";
    auto top = std::max_element(by_owner.begin(), by_owner.end(),
                                [](const auto& x, const auto& y) { return x.second < y.second; });
    if (top != by_owner.end() && top->second >= quorum) {
        return name + "locked by " + printable(top->first) + " on " + std::to_string(top->second) +
               nodes + " (quorum " + std::to_string(quorum) + ")";
    }
    if (free == n) {
        return name + "free on " + std::to_string(n) + nodes;
    }
    std::string parts;
    const auto add = [&](std::size_t count, const char* what) {
        if (count > 0) {
            parts +=
                (parts.empty() ? "" : ", ") + std::string(what) + " on " + std::to_string(count);
        }
    };
    add(held, "held");
    add(free, "free");
    add(other, "not a lock");
    add(failed, "unreadable");
    // Unreadable nodes might hold the lock: say so when they could make up a majority.
    const std::size_t best = top == by_owner.end() ? 0 : top->second;
    const char* verdict = best + failed >= quorum ? "unknown (" : "not locked (";
    return name + verdict + parts + nodes + "; quorum " + std::to_string(quorum) + ")";
}

}  // namespace

status_args parse_status_args(int argc, char** argv, int first)
{
    status_args a;
    std::vector<std::string> node_lists;
    redlock::tls_settings tls;
    arg_scanner args(argc, argv, first);
    bool options_done = false;
    while (args.more()) {
        if (options_done) {
            a.keys.emplace_back(args.take());
        } else if (args.flag("--help", "-h")) {
            a.help = true;
            return a;
        } else if (auto v = args.value_option("--nodes")) {
            node_lists.push_back(*v);
        } else if (auto v = args.value_option("--key")) {
            a.keys.push_back(*v);
        } else if (auto v = args.value_option("--timeout")) {
            a.timeout = parse_duration("--timeout", *v);
            if (a.timeout.count() == 0) {
                throw usage_error("--timeout must be more than 0");
            }
        } else if (tls_option(args, tls)) {
        } else if (args.peek() == "--") {
            args.take();
            options_done = true;
        } else if (args.peek().size() > 1 && args.peek().front() == '-') {
            throw usage_error("unknown option '" + std::string(args.peek()) + "'");
        } else {
            a.keys.emplace_back(args.take());
        }
    }
    a.nodes = nodes_from(node_lists);
    a.nodes.tls = tls;
    check_tls(a.nodes);
    if (a.keys.empty()) {
        throw usage_error("no KEY given: name the lock(s) to show");
    }
    for (const std::string& k : a.keys) {
        if (k.empty()) {
            throw usage_error("a KEY must not be empty");
        }
    }
    return a;
}

int status_command(const status_args& a)
{
    // A server closing a TLS connection must be an error on that node, not a SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    const std::size_t n = a.nodes.nodes.size();
    // states[key][node]
    std::vector<std::vector<key_state>> states(a.keys.size(), std::vector<key_state>(n));
    bool all_answered = true;
    for (std::size_t i = 0; i < n; ++i) {
        const redlock::node& node = a.nodes.nodes[i];
        std::size_t done = 0;  // keys read from this node
        try {
            resp_connection c(node, a.nodes.tls, steady::now() + a.timeout);
            for (; done < a.keys.size(); ++done) {
                states[done][i] = read_key(c, a.keys[done]);
            }
        } catch (const resp_error& e) {
            const std::string what = std::string(e.what()) == "timed out"
                                         ? "no answer within " + format_duration(a.timeout)
                                         : e.what();
            for (; done < a.keys.size(); ++done) {
                states[done][i] = error_state(what);
            }
        }
        for (auto& per_key : states) {
            if (per_key[i].type == key_state::kind::error) {
                all_answered = false;
            }
        }
    }

    std::size_t width = 0;
    for (const redlock::node& node : a.nodes.nodes) {
        width = std::max(width, node.endpoint().size());
    }
    for (std::size_t k = 0; k < a.keys.size(); ++k) {
        std::cout << summary(a.keys[k], states[k]) << "\n";
        for (std::size_t i = 0; i < n; ++i) {
            std::string endpoint = a.nodes.nodes[i].endpoint();
            endpoint.resize(width, ' ');
            std::cout << "  " << endpoint << "  " << describe_state(states[k][i]) << "\n";
        }
    }
    std::cout.flush();
    return all_answered ? 0 : 1;
}

}  // namespace redlock_cli
