// SPDX-License-Identifier: BSL-1.0
#include "status.hpp"

#include "args.hpp"

#include <redlock/client.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <csignal>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <utility>

namespace redlock_cli {
namespace {

namespace asio = boost::asio;

std::string with_ttl(const redlock::lock_holder& h)
{
    return printable(h.value) + (h.ttl ? " (ttl " + std::to_string(h.ttl->count()) + " ms)" : "");
}

// A read-write lock's or a semaphore's live entries, each with its own expiry.
std::string describe_entries(const redlock::key_state& s)
{
    using redlock::holder_role;
    if (s.kind == redlock::key_kind::semaphore) {
        std::string out = std::to_string(s.holders.size()) +
                          (s.permits > 0 ? " of " + std::to_string(s.permits) : "") +
                          " permit(s) in use";
        for (std::size_t i = 0; i < s.holders.size(); ++i) {
            out += (i ? ", " : ": ") + with_ttl(s.holders[i]);
        }
        return out;
    }
    std::string readers, out;
    for (const redlock::lock_holder& h : s.holders) {
        if (h.role == holder_role::reader) {
            readers += (readers.empty() ? "" : ", ") + with_ttl(h);
        } else {
            out += std::string(out.empty() ? "" : "; ") +
                   (h.role == holder_role::writer ? "written by " : "a writer waiting: ") +
                   with_ttl(h);
        }
    }
    if (!readers.empty()) {
        out = "read by " + readers + (out.empty() ? "" : "; ") + out;
    }
    return out.empty() ? "free (a read-write lock with only expired entries)" : out;
}

// A fair lock's queue on one node, the next in line first: "; queue: a (ttl 300 ms), ...".
std::string describe_queue(const redlock::key_state& s)
{
    std::string out;
    for (std::size_t i = 0; i < s.queue.size(); ++i) {
        const redlock::queued_waiter& w = s.queue[i];
        out += (i ? ", " : "; queue: ") + printable(w.value) + " (" +
               (w.committed ? "" : "joining, ") + "ttl " + std::to_string(w.ttl.count()) + " ms)";
    }
    return out;
}

// Who holds the key on one node.
std::string describe_holders(const redlock::key_state& s)
{
    // A replica refuses lock writes; what it holds is a copy of its master's keys.
    const std::string replica =
        s.replica_of.empty() ? "" : "a replica of " + printable(s.replica_of) + ", not a master: ";
    switch (s.kind) {
        case redlock::key_kind::missing:
            return replica + "free";
        case redlock::key_kind::other:
            return replica + "not a lock (a " + s.type + ")";
        case redlock::key_kind::read_write:
        case redlock::key_kind::semaphore:
            return replica + describe_entries(s);
        case redlock::key_kind::plain:
        case redlock::key_kind::reentrant:
            break;
    }
    std::string out = replica + "held by ";
    for (std::size_t i = 0; i < s.holders.size(); ++i) {
        out += (i ? ", " : "") + printable(s.holders[i].value);
        if (s.kind == redlock::key_kind::reentrant) {
            out += " (count " + std::to_string(s.holders[i].count) + ")";
        }
    }
    out += s.ttl ? ", ttl " + std::to_string(s.ttl->count()) + " ms" : ", no expiry";
    return out;
}

std::string describe_state(const redlock::key_state& s)
{
    if (!s.error.empty()) {
        return "error: " + s.error;
    }
    return describe_holders(s) + describe_queue(s);
}

// For a read-write lock or a semaphore: who holds it on enough nodes, or "" when nobody
// does (summary then says how the nodes are split). Entries on replicas or unreadable
// nodes never count.
std::string entries_summary(const std::string& key, const std::vector<redlock::key_state>& states)
{
    using redlock::holder_role;
    const std::size_t n = states.size();
    std::map<std::pair<holder_role, std::string>, std::size_t> nodes_of;
    bool semaphore = false;
    std::int64_t permits = 0;
    for (const redlock::key_state& s : states) {
        if (!s.error.empty() || !s.replica_of.empty()) {
            continue;
        }
        semaphore = semaphore || s.kind == redlock::key_kind::semaphore;
        permits = std::max(permits, s.permits);
        for (const auto& h : s.holders) {
            ++nodes_of[{h.role, h.value}];
        }
    }
    // A permit needs more than a majority (semaphore::quorum()); the rest a majority.
    const std::size_t limit = static_cast<std::size_t>(std::max<std::int64_t>(permits, 1));
    const std::size_t quorum = semaphore ? n * limit / (limit + 1) + 1 : n / 2 + 1;
    std::map<holder_role, std::size_t> holding;
    std::string writer;
    for (const auto& [who, count] : nodes_of) {
        if (count >= quorum) {
            ++holding[who.first];
            writer = who.first == holder_role::writer ? printable(who.second) : writer;
        }
    }
    const std::string nodes = " (each on a quorum: " + std::to_string(quorum) + " of " +
                              std::to_string(n) + " node" + (n == 1 ? "" : "s") + ")";
    const std::string name = printable(key) + ": ";
    if (semaphore && holding[holder_role::owner] > 0) {
        return name + std::to_string(holding[holder_role::owner]) +
               (permits > 0 ? " of " + std::to_string(permits) : "") + " permit(s) in use" + nodes;
    }
    if (!writer.empty()) {
        return name + "write-locked by " + writer + nodes;
    }
    if (holding[holder_role::reader] > 0) {
        return name + "read-locked by " + std::to_string(holding[holder_role::reader]) +
               " reader(s)" +
               (holding[holder_role::waiting_writer] > 0 ? ", a writer waiting" : "") + nodes;
    }
    return "";
}

std::string holders_summary(const std::string& key, const std::vector<redlock::key_state>& states)
{
    if (std::string s = entries_summary(key, states); !s.empty()) {
        return s;
    }
    const std::size_t n = states.size();
    const std::size_t quorum = n / 2 + 1;
    std::map<std::string, std::size_t> by_owner;
    std::size_t held = 0, free = 0, other = 0, failed = 0, replicas = 0;
    for (const redlock::key_state& s : states) {
        if (!s.error.empty()) {
            ++failed;
            continue;
        }
        // A lock cannot be taken on a replica: it never counts towards a quorum.
        if (!s.replica_of.empty()) {
            ++replicas;
            continue;
        }
        switch (s.kind) {
            case redlock::key_kind::missing:
                ++free;
                break;
            case redlock::key_kind::other:
                ++other;
                break;
            case redlock::key_kind::plain:
            case redlock::key_kind::reentrant:
                ++held;
                for (const auto& h : s.holders) {
                    ++by_owner[h.value];
                }
                break;
            case redlock::key_kind::read_write:
            case redlock::key_kind::semaphore:
                ++held;  // entries_summary tells who holds it
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
    add(replicas, "a replica (not a master)");
    // Unreadable nodes might hold the lock: say so when they could make up a majority.
    const std::size_t best = top == by_owner.end() ? 0 : top->second;
    const char* verdict = best + failed >= quorum ? "unknown (" : "not locked (";
    return name + verdict + parts + nodes + "; quorum " + std::to_string(quorum) + ")";
}

// A fair lock's waiters that are queued on a majority of the masters, in the order they
// will be granted (by ticket, which every node of a committed waiter agrees on): "; 2 waiting
// in line: a, b". Empty when nobody is.
std::string queue_summary(const std::vector<redlock::key_state>& states)
{
    std::map<std::string, std::pair<std::uint64_t, std::size_t>> seen;  // value: ticket, nodes
    for (const redlock::key_state& s : states) {
        if (!s.error.empty() || !s.replica_of.empty()) {
            continue;
        }
        for (const redlock::queued_waiter& w : s.queue) {
            auto [it, fresh] = seen.try_emplace(w.value, w.ticket, 0);
            it->second.first = std::max(it->second.first, w.ticket);
            ++it->second.second;
        }
    }
    std::vector<std::pair<std::uint64_t, std::string>> line;
    for (const auto& [value, where] : seen) {
        if (where.second >= states.size() / 2 + 1) {
            line.emplace_back(where.first, value);
        }
    }
    std::sort(line.begin(), line.end());
    std::string out;
    for (std::size_t i = 0; i < line.size(); ++i) {
        out += (i ? ", " : "; " + std::to_string(line.size()) + " waiting in line: ") +
               printable(line[i].second);
    }
    return out;
}

std::string summary(const std::string& key, const std::vector<redlock::key_state>& states)
{
    return holders_summary(key, states) + queue_summary(states);
}

}  // namespace

status_args parse_status_args(int argc, char** argv, int first)
{
    status_args a;
    std::vector<std::string> node_lists;
    redlock::tls_settings tls;
    std::optional<std::string> key_prefix;
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
        } else if (key_prefix_option(args, key_prefix)) {
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
    apply_key_prefix(a.nodes, key_prefix);
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
    redlock::config cfg = a.nodes;
    cfg.connect_timeout = a.timeout;
    asio::io_context io(1);
    std::optional<redlock::client> locks;
    try {
        locks.emplace(io.get_executor(), std::move(cfg));
    } catch (const std::exception& e) {
        std::cerr << "redlock status: " << describe_client_failure(e) << std::endl;
        return usage_exit;
    }
    // states[key], one entry per node. All keys are read at once; the connections close
    // once the last has been read.
    std::vector<std::vector<redlock::key_state>> states(a.keys.size());
    std::size_t outstanding = a.keys.size();
    for (std::size_t k = 0; k < a.keys.size(); ++k) {
        locks->async_inspect(
            a.keys[k], a.timeout,
            [&, k](boost::system::error_code ec, std::vector<redlock::key_state> s) {
                if (ec) {
                    throw boost::system::system_error(ec, "reading " + a.keys[k]);
                }
                states[k] = std::move(s);
                if (--outstanding == 0) {
                    locks->async_shutdown([](boost::system::error_code) {});
                }
            });
    }
    io.run();
    const std::size_t n = a.nodes.nodes.size();
    bool all_answered = true;
    for (const auto& per_key : states) {
        for (const redlock::key_state& s : per_key) {
            all_answered = all_answered && s.error.empty();
        }
    }

    std::size_t width = 0;
    for (const redlock::node& node : a.nodes.nodes) {
        width = std::max(width, node.endpoint().size());
    }
    for (std::size_t k = 0; k < a.keys.size(); ++k) {
        // The Redis key itself, so that a prefix in the environment is never a surprise.
        std::cout << summary(a.nodes.key_prefix + a.keys[k], states[k]) << "\n";
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
