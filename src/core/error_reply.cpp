// SPDX-License-Identifier: BSL-1.0
#include "core/error_reply.hpp"

#include <array>

namespace redlock::detail {
namespace {

struct known_reply
{
    // The start of the server's error text, up to a space, a comma or the end of the text.
    std::string_view start;
    node_errc code;
    // What to check; empty for replies that pass by themselves.
    std::string_view hint;
};

constexpr std::string_view credentials = "wrong user name or password: check the URL's credentials";
constexpr std::string_view no_password_set =
    "the server has no password set: remove it from the URL";
constexpr std::string_view cluster_mode =
    "the server is in cluster mode: list it as redis-cluster://host:port";

// The replies that mean the node, as configured, can never grant a lock, and CLUSTERDOWN.
// LOADING (a restart), BUSY (a long script), MASTERDOWN (a replica cut off), OOM (keys
// expire) and MISCONF (a failed snapshot that the next one may fix) pass by themselves:
// they are server errors like any other.
constexpr std::array<known_reply, 15> known_replies{{
    {"WRONGPASS", node_errc::authentication, credentials},
    {"ERR invalid password", node_errc::authentication, credentials},  // Redis before 6
    {"ERR invalid username-password pair", node_errc::authentication, credentials},
    {"NOAUTH", node_errc::authentication, "the server requires a password: put it in the URL"},
    // "ERR AUTH <password> called without any password configured ..."
    {"ERR AUTH", node_errc::authentication, no_password_set},
    {"ERR Client sent AUTH", node_errc::authentication, no_password_set},  // Redis before 6
    {"NOPERM", node_errc::no_permission,
     "the user's ACL does not allow the lock's commands or keys"},
    {"READONLY", node_errc::not_a_master, "the node is a replica: list masters"},
    {"MOVED", node_errc::redirected, cluster_mode},
    {"ASK", node_errc::redirected, cluster_mode},
    {"CROSSSLOT", node_errc::wrong_mode, cluster_mode},
    {"ERR SELECT is not allowed in cluster mode", node_errc::wrong_mode, cluster_mode},
    {"ERR This instance has cluster support disabled", node_errc::wrong_mode,
     "the server is not in cluster mode: list it as redis://host:port"},
    {"ERR DB index is out of range", node_errc::bad_database,
     "the server has fewer databases than the URL's db number"},
    {"CLUSTERDOWN", node_errc::cluster_down, {}},
}};

// The known reply that `text` starts with; null for none.
const known_reply* known(std::string_view text) noexcept
{
    for (const known_reply& k : known_replies) {
        if (text.starts_with(k.start) &&
            (text.size() == k.start.size() || text[k.start.size()] == ' ' ||
             text[k.start.size()] == ',')) {
            return &k;
        }
    }
    return nullptr;
}

}  // namespace

node_errc classify_error_reply(std::string_view reply_text) noexcept
{
    const known_reply* k = known(reply_text);
    return k ? k->code : node_errc::server_error;
}

std::string with_hint(std::string_view reply_text)
{
    std::string out(reply_text);
    if (const known_reply* k = known(reply_text); k && !k->hint.empty()) {
        out += " (";
        out += k->hint;
        out += ')';
    }
    return out;
}

node_failure error_reply_failure(std::string_view reply_text)
{
    return node_failure{classify_error_reply(reply_text), "Redis error: " + with_hint(reply_text)};
}

}  // namespace redlock::detail
