// SPDX-License-Identifier: BSL-1.0
#include "core/misconfiguration.hpp"

#include <array>

namespace redlock::detail {
namespace {

struct known_reply
{
    // The start of the server's error text, up to a space or the end of the text.
    std::string_view start;
    std::string_view hint;
};

constexpr std::string_view credentials = "wrong user name or password: check the URL's credentials";
constexpr std::string_view no_password_set =
    "the server has no password set: remove it from the URL";
constexpr std::string_view cluster_mode =
    "the server is in cluster mode: list it as redis-cluster://host:port";

// Error replies that mean the node, as configured, can never grant a lock. Left out on
// purpose, because they pass by themselves: LOADING (a restart), BUSY (a long script),
// MASTERDOWN (a replica cut off), OOM (keys expire), MISCONF (a failed snapshot that the next
// one may fix), CLUSTERDOWN (a cluster that regains its slots).
constexpr std::array<known_reply, 14> known_replies{{
    {"WRONGPASS", credentials},
    {"ERR invalid password", credentials},  // Redis before 6
    {"ERR invalid username-password pair", credentials},
    {"NOAUTH", "the server requires a password: put it in the URL"},
    {"NOPERM", "the user's ACL does not allow the lock's commands or keys"},
    {"ERR AUTH", no_password_set},              // "ERR AUTH <password> called without any..."
    {"ERR Client sent AUTH", no_password_set},  // Redis before 6
    {"READONLY", "the node is a replica: list masters"},
    {"MOVED", cluster_mode},
    {"ASK", cluster_mode},
    {"CROSSSLOT", cluster_mode},
    {"ERR SELECT is not allowed in cluster mode", cluster_mode},
    {"ERR This instance has cluster support disabled",
     "the server is not in cluster mode: list it as redis://host:port"},
    {"ERR DB index is out of range", "the server has fewer databases than the URL's db number"},
}};

// The hint of the known reply that `text` starts with.
std::string_view hint_at(std::string_view text) noexcept
{
    for (const known_reply& k : known_replies) {
        if (text.starts_with(k.start) &&
            (text.size() == k.start.size() || text[k.start.size()] == ' ' ||
             text[k.start.size()] == ',')) {
            return k.hint;
        }
    }
    return {};
}

constexpr std::string_view tls_failed = "TLS handshake failed:";

}  // namespace

std::string_view error_reply_hint(std::string_view reply_text) noexcept
{
    return hint_at(reply_text);
}

std::string with_hint(std::string_view reply_text)
{
    std::string out(reply_text);
    if (const std::string_view hint = hint_at(reply_text); !hint.empty()) {
        out += " (";
        out += hint;
        out += ')';
    }
    return out;
}

bool is_misconfiguration(std::string_view detail) noexcept
{
    // A reply quoted in the detail counts only by how it starts: a server's words may hold any
    // text, the client's own findings below among it.
    constexpr std::string_view redis_error = "Redis error: ";
    if (detail.starts_with(redis_error)) {
        return !hint_at(detail.substr(redis_error.size())).empty();
    }
    if (detail.starts_with("unexpected reply")) {
        return false;
    }
    // A TLS handshake that the server's TLS refused (a certificate, a protocol version) fails
    // again the same way; one broken off by the connection is reported otherwise (stream.cpp).
    if (detail.find(tls_failed) != std::string_view::npos ||
        detail.find(tls_to_plain_hint) != std::string_view::npos ||
        detail.find(plain_to_tls_hint) != std::string_view::npos) {
        return true;
    }
    // The server's words start the detail, or follow the client's "...: " prefix.
    if (!hint_at(detail).empty()) {
        return true;
    }
    for (std::size_t at = detail.find(": "); at != std::string_view::npos;
         at = detail.find(": ", at + 2)) {
        if (!hint_at(detail.substr(at + 2)).empty()) {
            return true;
        }
    }
    return false;
}

}  // namespace redlock::detail
