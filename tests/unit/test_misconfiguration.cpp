// SPDX-License-Identifier: BSL-1.0
// Which node failures retrying cannot fix, decided on their codes; and what the server's
// error replies mean, read from their first words.

#include "core/error_reply.hpp"
#include "core/node_error.hpp"
#include "quorum/quorum.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <utility>
#include <vector>

using namespace redlock::detail;
using redlock::node_errc;
using redlock::node_outcome;
using redlock::node_status;

BOOST_AUTO_TEST_SUITE(misconfiguration)

BOOST_AUTO_TEST_CASE(only_codes_that_the_next_attempt_would_meet_again_are_misconfigurations)
{
    const node_errc misconfigured[] = {
        node_errc::tls_failed,    node_errc::tls_mismatch, node_errc::authentication,
        node_errc::no_permission, node_errc::not_a_master, node_errc::wrong_mode,
        node_errc::redirected,    node_errc::bad_database,
    };
    for (node_errc c : misconfigured) {
        BOOST_TEST(is_misconfiguration(c), make_error_code(c).message());
        BOOST_TEST(is_misconfiguration(make_error_code(c)), make_error_code(c).message());
    }
    const node_errc transient[] = {
        node_errc::timed_out,       node_errc::connect_timed_out, node_errc::connect_failed,
        node_errc::connection_lost, node_errc::cluster_down,      node_errc::server_error,
        node_errc::protocol_error,  node_errc::unexpected_reply,  node_errc::not_replicated,
        node_errc::master_switched, node_errc::no_master,         node_errc::closed,
        node_errc::cancelled,       node_errc::decided_by_quorum, node_errc::quorum_impossible,
        node_errc::in_background,   node_errc::permits_mismatch,
    };
    for (node_errc c : transient) {
        BOOST_TEST(!is_misconfiguration(c), make_error_code(c).message());
    }
    BOOST_TEST(std::size(misconfigured) + std::size(transient) ==
               static_cast<std::size_t>(node_errc::permits_mismatch));
    // A code of another category with the same value is not a node's code.
    const auto tls_failed_value = static_cast<int>(node_errc::tls_failed);
    BOOST_TEST(!is_misconfiguration(
        boost::system::error_code(tls_failed_value, boost::system::generic_category())));
    BOOST_TEST(!is_misconfiguration(boost::system::error_code{}));
}

BOOST_AUTO_TEST_CASE(error_replies_are_classified_by_their_first_words)
{
    const std::pair<const char*, node_errc> replies[] = {
        {"WRONGPASS invalid username-password pair or user is disabled.",
         node_errc::authentication},
        {"ERR invalid password", node_errc::authentication},
        {"ERR invalid username-password pair", node_errc::authentication},
        {"ERR AUTH <password> called without any password configured for the default user. "
         "Are you sure your configuration is correct?",
         node_errc::authentication},
        {"ERR Client sent AUTH, but no password is set", node_errc::authentication},
        {"NOAUTH Authentication required.", node_errc::authentication},
        {"NOPERM this user has no permissions to run the 'set' command", node_errc::no_permission},
        {"READONLY You can't write against a read only replica.", node_errc::not_a_master},
        {"READONLY You can't write against a read only replica. script: 61be71b6, on "
         "@user_script:1.",
         node_errc::not_a_master},
        {"MOVED 3999 127.0.0.1:7002", node_errc::redirected},
        {"ASK 3999 127.0.0.1:7002", node_errc::redirected},
        {"CROSSSLOT Keys in request don't hash to the same slot", node_errc::wrong_mode},
        {"ERR SELECT is not allowed in cluster mode", node_errc::wrong_mode},
        {"ERR This instance has cluster support disabled", node_errc::wrong_mode},
        {"ERR DB index is out of range", node_errc::bad_database},
        {"CLUSTERDOWN Hash slot not served", node_errc::cluster_down},
        {"CLUSTERDOWN The cluster is down", node_errc::cluster_down},
        // Errors that pass by themselves.
        {"LOADING Redis is loading the dataset in memory", node_errc::server_error},
        {"BUSY Redis is busy running a script.", node_errc::server_error},
        {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is no",
         node_errc::server_error},
        {"OOM command not allowed when used memory > 'maxmemory'.", node_errc::server_error},
        {"MISCONF Redis is configured to save RDB snapshots", node_errc::server_error},
        {"ERR syntax error", node_errc::server_error},
        {"", node_errc::server_error},
        // A code must be the whole first word of the server's text.
        {"ASKING is not a reply", node_errc::server_error},
        {"READONLYX", node_errc::server_error},
        {"ERR said: WRONGPASS", node_errc::server_error},
        {"ERR TLS handshake failed: no", node_errc::server_error},
    };
    for (const auto& [text, code] : replies) {
        BOOST_TEST((classify_error_reply(text) == code), text);
    }
}

BOOST_AUTO_TEST_CASE(hints_say_what_to_check_and_keep_the_servers_words)
{
    BOOST_TEST(with_hint("READONLY You can't write against a read only replica.") ==
               "READONLY You can't write against a read only replica. (the node is a replica: "
               "list masters)");
    BOOST_TEST(with_hint("MOVED 3999 127.0.0.1:7002").find("cluster mode") != std::string::npos);
    BOOST_TEST(with_hint("WRONGPASS invalid username-password pair").find("password") !=
               std::string::npos);
    BOOST_TEST(with_hint("NOAUTH Authentication required.").find("requires a password") !=
               std::string::npos);
    // Replies without a hint stay as they are.
    BOOST_TEST(with_hint("ERR syntax error") == "ERR syntax error");
    BOOST_TEST(with_hint("LOADING Redis is loading") == "LOADING Redis is loading");
    BOOST_TEST(with_hint("CLUSTERDOWN The cluster is down") == "CLUSTERDOWN The cluster is down");
}

BOOST_AUTO_TEST_CASE(an_error_reply_is_a_failure_with_its_code_and_its_words)
{
    const node_failure f = error_reply_failure("NOPERM no permissions");
    BOOST_TEST(static_cast<bool>(f));
    BOOST_TEST((f.code == node_errc::no_permission));
    BOOST_TEST(f.detail ==
               "Redis error: NOPERM no permissions (the user's ACL does not allow the lock's "
               "commands or keys)");
    // The server's words may hold any text: only the code decides.
    const node_failure quoted = error_reply_failure("ERR said: WRONGPASS (a TLS URL?)");
    BOOST_TEST((quoted.code == node_errc::server_error));
    BOOST_TEST(!is_misconfiguration(quoted.code));
}

namespace {

struct node
{
    node_status status;
    node_errc code;
    const char* detail = "";
};

std::vector<node_outcome> outcomes(std::initializer_list<node> l)
{
    std::vector<node_outcome> v;
    for (const node& n : l) {
        node_outcome o;
        o.status = n.status;
        if (n.code != node_errc{}) {
            o.code = n.code;
        }
        o.detail = n.detail;
        v.push_back(o);
    }
    return v;
}

constexpr node replica{node_status::error, node_errc::not_a_master};
constexpr node refused{node_status::error, node_errc::connect_failed};
constexpr node ok{node_status::ok, node_errc{}};
constexpr node taken{node_status::taken, node_errc{}};
constexpr node late{node_status::timed_out, node_errc::timed_out};

}  // namespace

BOOST_AUTO_TEST_CASE(a_quorum_is_ruled_out_only_by_enough_misconfigured_nodes)
{
    BOOST_TEST(quorum_ruled_out(outcomes({replica})));
    BOOST_TEST(!quorum_ruled_out(outcomes({refused})));
    // 3 nodes, quorum 2: one misconfigured node leaves two that may still grant.
    BOOST_TEST(!quorum_ruled_out(outcomes({replica, ok, ok})));
    BOOST_TEST(!quorum_ruled_out(outcomes({replica, taken, refused})));
    BOOST_TEST(quorum_ruled_out(outcomes({replica, replica, ok})));
    // 5 nodes, quorum 3: two misconfigured leave exactly three; three leave two.
    BOOST_TEST(!quorum_ruled_out(outcomes({replica, replica, ok, ok, late})));
    BOOST_TEST(quorum_ruled_out(outcomes({replica, replica, replica, ok, ok})));
    // Only errors count: a timed-out node is never a misconfiguration.
    BOOST_TEST(!quorum_ruled_out(outcomes({{node_status::timed_out, node_errc::not_a_master}})));
    BOOST_TEST(!quorum_ruled_out({}));
}

BOOST_AUTO_TEST_CASE(a_quorum_is_ruled_out_by_codes_never_by_details)
{
    BOOST_TEST(!quorum_ruled_out(outcomes(
        {{node_status::error, node_errc::connect_failed, "Redis error: WRONGPASS invalid"}})));
    BOOST_TEST(
        quorum_ruled_out(outcomes({{node_status::error, node_errc::authentication, "refused"}})));
}

BOOST_AUTO_TEST_SUITE_END()
