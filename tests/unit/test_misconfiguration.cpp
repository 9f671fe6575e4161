// SPDX-License-Identifier: BSL-1.0
#include "core/misconfiguration.hpp"
#include "quorum/quorum.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace redlock::detail;
using redlock::node_outcome;
using redlock::node_status;

BOOST_AUTO_TEST_SUITE(misconfiguration)

BOOST_AUTO_TEST_CASE(server_replies_that_retrying_cannot_fix_are_recognized_where_they_appear)
{
    // As the client words its details: error replies, and handshake replies.
    const std::string misconfigured[] = {
        "Redis error: WRONGPASS invalid username-password pair or user is disabled.",
        "AUTH on 127.0.0.1:7001 failed: WRONGPASS invalid username-password pair or user is "
        "disabled.; next connect in 100 ms",
        "AUTH on 127.0.0.1:7001 failed: ERR invalid password",
        "AUTH on 127.0.0.1:7001 failed: ERR AUTH <password> called without any password "
        "configured for the default user. Are you sure your configuration is correct?",
        "AUTH on 127.0.0.1:7001 failed: ERR Client sent AUTH, but no password is set",
        "Redis error: NOAUTH Authentication required.",
        "Redis error: NOPERM this user has no permissions to run the 'set' command",
        "Redis error: READONLY You can't write against a read only replica.",
        "Redis error: READONLY You can't write against a read only replica. script: 61be71b6, "
        "on @user_script:1.",
        "Redis error: MOVED 3999 127.0.0.1:7002",
        "Redis error: ASK 3999 127.0.0.1:7002",
        "Redis error: CROSSSLOT Keys in request don't hash to the same slot",
        "SELECT on 127.0.0.1:7001 failed: ERR SELECT is not allowed in cluster mode",
        "SELECT on 127.0.0.1:7001 failed: ERR DB index is out of range",
        "READONLY You can't write against a read only replica.",
        "TLS handshake failed: certificate verify failed (SSL routines) (127.0.0.1:7001)",
        std::string("TLS handshake unanswered, but the port answered a plain-text PING with "
                    "'PONG' (") +
            std::string(tls_to_plain_hint) + ")",
        std::string("read from 127.0.0.1:7001 failed: Connection reset by peer before any reply "
                    "(") +
            std::string(plain_to_tls_hint) + ")",
    };
    for (const std::string& d : misconfigured) {
        BOOST_TEST(is_misconfiguration(d), d);
    }
}

BOOST_AUTO_TEST_CASE(failures_that_may_pass_are_not_misconfigurations)
{
    const std::string transient[] = {
        "",
        "no reply before the per-node deadline",
        "connect to 127.0.0.1:7001 failed: Connection refused",
        "connect to 127.0.0.1:7001 timed out after 1000 ms",
        "connection closed by 127.0.0.1:7001",
        "read from 127.0.0.1:7001 failed: Connection reset by peer",
        "TLS handshake interrupted: Connection reset by peer (127.0.0.1:7001)",
        "cannot resolve host 'redis.example': Host not found (authoritative)",
        "Redis error: LOADING Redis is loading the dataset in memory",
        "Redis error: BUSY Redis is busy running a script.",
        "Redis error: MASTERDOWN Link with MASTER is down and replica-serve-stale-data is no",
        "Redis error: OOM command not allowed when used memory > 'maxmemory'.",
        "Redis error: CLUSTERDOWN Hash slot not served",
        "Redis error: MISCONF Redis is configured to save RDB snapshots",
        "Redis error: ERR syntax error",
        // A code must be the whole first word of the server's text.
        "Redis error: ASKING is not a reply",
        "Redis error: READONLYX",
        "unexpected reply 'MOVED 1 a:1'",
        "protocol error from 127.0.0.1:7001: invalid type byte",
    };
    for (const std::string& d : transient) {
        BOOST_TEST(!is_misconfiguration(d), d);
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
    BOOST_TEST(error_reply_hint("LOADING Redis is loading").empty());
    // The reply with its hint is still recognized.
    BOOST_TEST(is_misconfiguration("Redis error: " + with_hint("NOPERM no permissions")));
}

namespace {

std::vector<node_outcome> outcomes(std::initializer_list<std::pair<node_status, const char*>> l)
{
    std::vector<node_outcome> v;
    for (const auto& [status, detail] : l) {
        node_outcome o;
        o.status = status;
        o.detail = detail;
        v.push_back(o);
    }
    return v;
}

constexpr const char* replica =
    "Redis error: READONLY You can't write against a read only replica.";
constexpr const char* refused = "connect to 127.0.0.1:7001 failed: Connection refused";

}  // namespace

BOOST_AUTO_TEST_CASE(a_quorum_is_ruled_out_only_by_enough_misconfigured_nodes)
{
    using enum node_status;
    BOOST_TEST(quorum_ruled_out(outcomes({{error, replica}})));
    BOOST_TEST(!quorum_ruled_out(outcomes({{error, refused}})));
    // 3 nodes, quorum 2: one misconfigured node leaves two that may still grant.
    BOOST_TEST(!quorum_ruled_out(outcomes({{error, replica}, {ok, ""}, {ok, ""}})));
    BOOST_TEST(!quorum_ruled_out(outcomes({{error, replica}, {taken, ""}, {error, refused}})));
    BOOST_TEST(quorum_ruled_out(outcomes({{error, replica}, {error, replica}, {ok, ""}})));
    // 5 nodes, quorum 3: two misconfigured leave exactly three; three leave two.
    BOOST_TEST(!quorum_ruled_out(
        outcomes({{error, replica}, {error, replica}, {ok, ""}, {ok, ""}, {timed_out, ""}})));
    BOOST_TEST(quorum_ruled_out(
        outcomes({{error, replica}, {error, replica}, {error, replica}, {ok, ""}, {ok, ""}})));
    // Only errors count: a timed-out node's detail is never read as a misconfiguration.
    BOOST_TEST(!quorum_ruled_out(outcomes({{timed_out, replica}})));
    BOOST_TEST(!quorum_ruled_out({}));
}

BOOST_AUTO_TEST_CASE(a_servers_words_count_only_by_how_they_start)
{
    // Quoted replies may hold any text, the client's own TLS findings among it.
    BOOST_TEST(!is_misconfiguration("unexpected reply 'O\xcbTLS handshake failed:e'"));
    BOOST_TEST(
        !is_misconfiguration("unexpected reply 'x (a plain URL (redis://) for a TLS port?)'"));
    BOOST_TEST(!is_misconfiguration("Redis error: ERR TLS handshake failed: no"));
    BOOST_TEST(!is_misconfiguration("Redis error: ERR said: WRONGPASS"));
    BOOST_TEST(
        is_misconfiguration("Redis error: READONLY You can't write against a read only "
                            "replica. (the node is a replica: list masters)"));
}

BOOST_AUTO_TEST_SUITE_END()
