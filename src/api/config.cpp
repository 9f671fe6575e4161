// SPDX-License-Identifier: BSL-1.0
#include <redlock/config.hpp>
#include <redlock/error.hpp>

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace redlock {
namespace {

[[noreturn]] void reject(const std::string& message)
{
    throw boost::system::system_error(make_error_code(error::invalid_argument), message);
}

bool unprintable(char ch)
{
    const auto byte = static_cast<unsigned char>(ch);
    return byte < 0x20 || byte == 0x7f;
}

// Part of a URL as a message may quote it: bytes that are not printable (a NUL, a newline,
// a terminal escape) as \xNN, so that the message stays one readable line.
std::string printable(std::string_view text)
{
    constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (char ch : text) {
        if (unprintable(ch)) {
            const auto byte = static_cast<unsigned char>(ch);
            out += "\\x";
            out += hex[byte >> 4];
            out += hex[byte & 0xf];
        } else {
            out += ch;
        }
    }
    return out;
}

// The URL with its credentials replaced, so that messages can quote it safely. Everything
// before the last '@' after the scheme is hidden, even when the URL is malformed.
std::string redacted(std::string_view url)
{
    auto at = url.rfind('@');
    if (at == std::string_view::npos) {
        return printable(url);
    }
    auto scheme_end = url.find("://");
    std::size_t start =
        scheme_end != std::string_view::npos && scheme_end < at ? scheme_end + 3 : 0;
    return printable(url.substr(0, start)) + "***" + printable(url.substr(at));
}

// Refuses `url`, which it quotes without its credentials, for the reason `why`.
[[noreturn]] void reject_url(std::string_view url, const std::string& why)
{
    reject("malformed node URL '" + redacted(url) + "': " + why);
}

// Why `host` cannot name a server (resolvers would reject it later, or worse, look up
// something else), or empty.
std::string bad_host(std::string_view host)
{
    for (char ch : host) {
        if (ch == ' ' || unprintable(ch)) {
            return "the host '" + printable(host) + "' contains " +
                   (ch == ' ' ? "a space" : "a control character");
        }
    }
    return {};
}

std::string percent_decode(std::string_view in, std::string_view url, std::string_view what)
{
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out += in[i];
            continue;
        }
        unsigned value = 0;
        bool complete = i + 2 < in.size();
        auto [end, ec] = complete ? std::from_chars(in.data() + i + 1, in.data() + i + 3, value, 16)
                                  : std::from_chars_result{in.data(), std::errc::invalid_argument};
        if (ec != std::errc{} || end != in.data() + i + 3) {
            reject_url(url, "bad percent-escape in the " + std::string(what));
        }
        out += static_cast<char>(value);
        i += 2;
    }
    return out;
}

template <class Int>
Int parse_number(std::string_view text, Int lo, Int hi, std::string_view url, std::string_view what)
{
    Int value{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < lo ||
        value > hi) {
        reject_url(url, std::string(what) + " '" + printable(text) + "' is not a number in " +
                            std::to_string(lo) + ".." + std::to_string(hi));
    }
    return value;
}

// user[:password], the part before '@'.
void parse_userinfo(std::string_view info, std::string_view url, node& n)
{
    auto colon = info.find(':');
    if (colon == std::string_view::npos) {
        n.username = percent_decode(info, url, "user name");
        return;
    }
    n.username = percent_decode(info.substr(0, colon), url, "user name");
    n.password = percent_decode(info.substr(colon + 1), url, "password");
}

// Why `prefix` cannot be config::key_prefix, or empty. Other programs must spell the keys
// the same way, so a stray newline (an environment variable read with its line end) would
// quietly lock other keys; and Redis Cluster hashes only the part between the key's first
// '{' and the next '}', so a prefix with an unclosed or empty tag would change which part of
// each lock name is hashed (hash tags in names would stop keeping keys in one slot).
std::string key_prefix_problem(std::string_view prefix)
{
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (unprintable(prefix[i])) {
            return "config.key_prefix '" + printable(prefix) + "' contains a control character (" +
                   printable(prefix.substr(i, 1)) + " at byte " + std::to_string(i) +
                   "): keys must be spelled the same by every client";
        }
    }
    const auto open = prefix.find('{');
    if (open == std::string_view::npos) {
        return {};
    }
    const auto close = prefix.find('}', open + 1);
    if (close == std::string_view::npos) {
        return "config.key_prefix '" + printable(prefix) +
               "' opens a hash tag '{' without closing it: on Redis Cluster the tag would run "
               "into the lock names";
    }
    if (close == open + 1) {
        return "config.key_prefix '" + printable(prefix) +
               "' holds an empty hash tag '{}': Redis Cluster would then ignore the hash tags "
               "of lock names";
    }
    return {};
}

}  // namespace

namespace {

// "host[:port]" or "[ipv6][:port]", as a URL's authority names one server.
server_address parse_host_port(std::string_view text, std::string_view url,
                               std::uint16_t default_port)
{
    server_address a{.host = {}, .port = default_port};
    std::string_view port_text;
    if (!text.empty() && text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string_view::npos) {
            reject_url(url, "unclosed '[' in the IPv6 host");
        }
        a.host = std::string(text.substr(1, close - 1));
        text = text.substr(close + 1);
        if (!text.empty()) {
            if (text.front() != ':') {
                reject_url(url, "unexpected '" + printable(text) + "' after the IPv6 host");
            }
            port_text = text.substr(1);
        }
    } else {
        if (text.find(':') != text.rfind(':')) {
            // Several colons: an IPv6 address without its brackets.
            reject_url(url, "put an IPv6 host in brackets, as in redis://[::1]:6379");
        }
        auto colon = text.find(':');
        a.host = std::string(text.substr(0, colon));
        if (colon != std::string_view::npos) {
            port_text = text.substr(colon + 1);
        }
    }
    if (a.host.empty()) {
        reject_url(url, "missing host");
    }
    if (std::string why = bad_host(a.host); !why.empty()) {
        reject_url(url, why);
    }
    if (!port_text.empty() || text.ends_with(':')) {
        a.port = parse_number<std::uint16_t>(port_text, 1, 65535, url, "port");
    }
    return a;
}

// "host[:port],host[:port],...": a Sentinel URL's Sentinels or a cluster URL's seeds.
std::vector<server_address> parse_host_list(std::string_view text, std::string_view url,
                                            std::uint16_t default_port)
{
    std::vector<server_address> list;
    for (std::size_t from = 0; from <= text.size();) {
        const auto comma = std::min(text.find(',', from), text.size());
        list.push_back(parse_host_port(text.substr(from, comma - from), url, default_port));
        from = comma + 1;
    }
    return list;
}

// The `?db=N` of a unix or Sentinel URL.
int parse_db_query(std::string_view query, std::string_view url)
{
    if (query.substr(0, 3) != "db=") {
        reject_url(url, "unknown query '" + printable(query) + "' (only db=N is understood)");
    }
    return parse_number<int>(query.substr(3), 0, 1 << 20, url, "database");
}

// What is wrong with the addresses of a Sentinel or cluster node (`what` names one of them).
std::string host_list_problem(const node& n, const std::string& what)
{
    for (const auto* list : {&n.sentinels, &n.cluster_seeds}) {
        for (const server_address& a : *list) {
            if (std::string why = bad_host(a.host); a.host.empty() || !why.empty()) {
                return " has a " + what + " with " +
                       (a.host.empty() ? std::string("no host") : why);
            }
            if (a.port == 0) {
                return " (" + printable(n.endpoint()) + ") has a " + what + " on port 0";
            }
        }
    }
    return {};
}

// What follows "scheme://" and the credentials.
struct url_parts
{
    /// The hosts, or a unix URL's socket path.
    std::string_view authority;
    /// After the first '/' of the authority; empty for a unix URL.
    std::string_view path;
    /// After the '?'.
    std::string_view query;
};

// Splits the URL after its scheme, and takes the credentials into `n`. A unix URL has no
// path after its authority: all of it is the socket's path.
url_parts split_url(std::string_view url, bool unix_socket, node& n)
{
    url_parts parts;
    std::string_view rest = url.substr(url.find("://") + 3);
    if (auto q = rest.find('?'); q != std::string_view::npos) {
        parts.query = rest.substr(q + 1);
        rest = rest.substr(0, q);
    }
    // Credentials end at the last '@' before the path: a socket path may contain '@'.
    if (auto at = rest.substr(0, rest.find('/')).rfind('@'); at != std::string_view::npos) {
        parse_userinfo(rest.substr(0, at), url, n);
        rest = rest.substr(at + 1);
    }
    if (auto slash = rest.find('/'); !unix_socket && slash != std::string_view::npos) {
        parts.path = rest.substr(slash + 1);
        rest = rest.substr(0, slash);
    }
    parts.authority = rest;
    return parts;
}

// unix:///path[?db=N]
void read_unix_url(const url_parts& parts, std::string_view url, node& n)
{
    const std::string_view path = parts.authority;
    if (path.empty() || path.front() != '/') {
        reject_url(url, "a unix socket URL needs an absolute path, as in unix:///run/redis.sock");
    }
    n.host.clear();
    n.port = 0;
    n.unix_path = std::string(path);
    if (!parts.query.empty()) {
        n.db = parse_db_query(parts.query, url);
    }
}

// redis-sentinel://host[:port],.../MASTER_NAME[?db=N]
void read_sentinel_url(const url_parts& parts, std::string_view url, node& n)
{
    if (parts.path.empty()) {
        reject_url(url,
                   "a Sentinel URL names the master after the Sentinels, as in "
                   "redis-sentinel://127.0.0.1:26379/mymaster");
    }
    n.master_name = percent_decode(parts.path, url, "master name");
    if (std::string why = bad_host(n.master_name); !why.empty()) {
        reject_url(url, "the master name '" + printable(n.master_name) +
                            "' contains a space or a control character");
    }
    n.sentinels = parse_host_list(parts.authority, url, 26379);
    n.host.clear();
    n.port = 0;
    if (!parts.query.empty()) {
        n.db = parse_db_query(parts.query, url);
    }
}

// redis-cluster://host[:port],...
void read_cluster_url(const url_parts& parts, std::string_view url, node& n)
{
    if (!parts.path.empty() || !parts.query.empty()) {
        reject_url(url, "a Redis Cluster has only database 0, so its URL has no path or query");
    }
    n.cluster_seeds = parse_host_list(parts.authority, url, 6379);
    n.host.clear();
    n.port = 0;
}

// redis://host[:port][/db]
void read_server_url(const url_parts& parts, std::string_view url, node& n)
{
    if (!parts.query.empty()) {
        reject_url(url, "unexpected query '" + printable(parts.query) +
                            "' (the database goes in the path, as in redis://host/2)");
    }
    if (parts.authority.find(',') != std::string_view::npos) {
        reject_url(url,
                   "a comma in the host (list nodes as separate URLs, "
                   "redis://a:6379,redis://b:6379; only Sentinel and cluster URLs list several "
                   "hosts)");
    }
    const server_address a = parse_host_port(parts.authority, url, n.port);
    n.host = a.host;
    n.port = a.port;
    if (!parts.path.empty()) {
        n.db = parse_number<int>(parts.path, 0, 1 << 20, url, "database");
    }
}

// What a URL's scheme says: how to read the rest, and whether the node speaks TLS.
struct url_scheme
{
    std::string_view name;
    bool tls;
    void (*read)(const url_parts&, std::string_view, node&);
};

constexpr url_scheme url_schemes[] = {
    {"redis", false, read_server_url},
    {"rediss", true, read_server_url},
    {"unix", false, read_unix_url},
    {"redis-sentinel", false, read_sentinel_url},
    {"rediss-sentinel", true, read_sentinel_url},
    {"redis-cluster", false, read_cluster_url},
    {"rediss-cluster", true, read_cluster_url},
};

// The scheme before "://", in any case.
const url_scheme& parse_scheme(std::string_view url)
{
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos) {
        reject_url(url,
                   "expected redis://host:port, rediss://host:port, unix:///path or "
                   "redis-sentinel://host:port/MASTER_NAME");
    }
    std::string name(url.substr(0, scheme_end));
    for (char& ch : name) {
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    for (const url_scheme& s : url_schemes) {
        if (name == s.name) {
            return s;
        }
    }
    reject_url(url, "unsupported scheme '" + printable(name) +
                        "' (expected redis, rediss, unix, redis-sentinel, rediss-sentinel, "
                        "redis-cluster or rediss-cluster)");
}

}  // namespace

node node::from_url(std::string_view url)
{
    node n;
    const url_scheme& scheme = parse_scheme(url);
    n.tls = scheme.tls;
    scheme.read(split_url(url, scheme.read == read_unix_url, n), url, n);
    return n;
}

namespace {

// Whether `text` begins with a URL scheme and "://".
bool starts_with_scheme(std::string_view text)
{
    const auto end = text.find("://");
    if (end == std::string_view::npos || end == 0 ||
        !std::isalpha(static_cast<unsigned char>(text[0]))) {
        return false;
    }
    return std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
    });
}

}  // namespace

std::vector<std::string_view> split_node_urls(std::string_view list)
{
    std::vector<std::string_view> urls;
    std::size_t begin = 0;
    for (std::size_t comma = list.find(','); comma != std::string_view::npos;
         comma = list.find(',', comma + 1)) {
        // A comma starts the next node only before a scheme; otherwise it separates the hosts
        // of one URL, or is a mistake that from_url names.
        if (comma + 1 == list.size() || list[comma + 1] == ',' ||
            starts_with_scheme(list.substr(comma + 1))) {
            urls.push_back(list.substr(begin, comma - begin));
            begin = comma + 1;
        }
    }
    urls.push_back(list.substr(begin));
    return urls;
}

config config::from_urls(std::initializer_list<std::string_view> urls)
{
    config cfg;
    for (std::string_view url : urls) {
        cfg.nodes.push_back(node::from_url(url));
    }
    return cfg;
}

config config::from_urls(const std::vector<std::string>& urls)
{
    config cfg;
    for (const std::string& url : urls) {
        cfg.nodes.push_back(node::from_url(url));
    }
    return cfg;
}

std::string validate(const config& cfg)
{
    if (cfg.nodes.empty()) {
        return "config.nodes is empty: give at least one Redis node";
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < cfg.nodes.size(); ++i) {
        const node& n = cfg.nodes[i];
        std::string where = "config.nodes[" + std::to_string(i) + "]";
        if (!n.sentinels.empty() && !n.cluster_seeds.empty()) {
            return where + " lists both Sentinels and cluster seeds: a node is one or the other";
        }
        if (!n.sentinels.empty() && n.master_name.empty()) {
            return where + " lists Sentinels but no master_name";
        }
        if (!n.cluster_seeds.empty() && n.db != 0) {
            return where + " (" + printable(n.endpoint()) +
                   ") is a Redis Cluster, which has only database 0";
        }
        const bool deployment = !n.sentinels.empty() || !n.cluster_seeds.empty();
        if (std::string why = host_list_problem(n, !n.sentinels.empty() ? "Sentinel" : "seed");
            !why.empty()) {
            return where + why;
        }
        if (!deployment && n.unix_path.empty() && n.host.empty()) {
            return where + " has neither a host nor a unix socket path";
        }
        const bool server = !deployment && n.unix_path.empty();
        if (std::string why = bad_host(n.host); server && !why.empty()) {
            return where.append(": ").append(why);
        }
        if (server && n.port == 0) {
            return where + " (" + printable(n.endpoint()) + ") has port 0";
        }
        if (n.db < 0) {
            return where + " (" + printable(n.endpoint()) + ") has a negative database number";
        }
        // Another database on the same server is still the same server.
        if (!seen.insert(n.endpoint()).second) {
            return where + " (" + n.endpoint() +
                   ") repeats an earlier node: the same server twice would count twice "
                   "towards the quorum";
        }
    }
    if (std::string why = key_prefix_problem(cfg.key_prefix); !why.empty()) {
        return why;
    }
    if (cfg.tls.cert_file.empty() != cfg.tls.key_file.empty()) {
        return "config.tls.cert_file and config.tls.key_file go together: give both or neither";
    }
    if (cfg.connect_timeout.count() <= 0) {
        return "config.connect_timeout must be positive";
    }
    if (cfg.reconnect_backoff_min.count() < 0 ||
        cfg.reconnect_backoff_max < cfg.reconnect_backoff_min) {
        return "config.reconnect_backoff_min must be >= 0 and <= config.reconnect_backoff_max";
    }
    return {};
}

}  // namespace redlock
