// SPDX-License-Identifier: BSL-1.0
// The decisions of opening a socket: what the greeting sends, how its replies are judged and
// which code a refusal maps to, when TLS is started and when a plain-text PING checks the port.
#include "engine/handshake_fsm.hpp"
#include "reply_builders.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

using namespace redlock::detail;
using namespace redlock::test;
using namespace std::chrono_literals;
using redlock::node_errc;
using step = handshake_fsm::step;

namespace {

redlock::node server(std::string password = {}, int db = 0)
{
    redlock::node n;
    n.host = "10.0.0.7";
    n.port = 6380;
    n.password = std::move(password);
    n.db = db;
    return n;
}

std::string encoded(std::initializer_list<std::string_view> args)
{
    std::string out;
    resp::append_command(out, args);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(handshake_decisions)

BOOST_AUTO_TEST_CASE(a_node_without_password_or_db_is_ready_once_connected)
{
    const auto n = server();
    const handshake_fsm fsm(n, true, false, 1000ms);
    BOOST_TEST((fsm.start().what == step::connect));
    const auto a = fsm.connected({});
    BOOST_TEST((a.what == step::complete));
    BOOST_TEST(!a.failure);
}

BOOST_AUTO_TEST_CASE(a_failed_connect_completes_with_its_failure)
{
    const auto n = server("secret", 2);
    const handshake_fsm fsm(n, true, false, 1000ms);
    const auto a = fsm.connected(node_failure{node_errc::connect_failed, "refused"});
    BOOST_TEST((a.what == step::complete));
    BOOST_TEST((a.failure.code == node_errc::connect_failed));
    BOOST_TEST(a.failure.detail == "refused");
}

BOOST_AUTO_TEST_CASE(the_greeting_sends_auth_then_select)
{
    auto n = server("secret", 3);
    const handshake_fsm fsm(n, true, false, 1000ms);
    auto a = fsm.connected({});
    BOOST_TEST((a.what == step::greet));
    BOOST_TEST(a.replies == 2u);
    BOOST_TEST(a.payload == encoded({"AUTH", "secret"}) + encoded({"SELECT", "3"}));

    n.username = "locker";
    const handshake_fsm with_user(n, true, false, 1000ms);
    a = with_user.connected({});
    BOOST_TEST(a.payload == encoded({"AUTH", "locker", "secret"}) + encoded({"SELECT", "3"}));

    const std::vector<resp::reply> ok{status("OK"), status("OK")};
    const auto done = with_user.greeted({}, ok);
    BOOST_TEST((done.what == step::complete));
    BOOST_TEST(!done.failure);
}

BOOST_AUTO_TEST_CASE(select_only_when_asked_and_not_db_0)
{
    const auto n = server({}, 5);
    const handshake_fsm sentinel(n, false, false, 1000ms);
    BOOST_TEST((sentinel.connected({}).what == step::complete));
    const handshake_fsm lock_node(n, true, false, 1000ms);
    const auto a = lock_node.connected({});
    BOOST_TEST((a.what == step::greet));
    BOOST_TEST(a.payload == encoded({"SELECT", "5"}));
    BOOST_TEST(a.replies == 1u);
}

BOOST_AUTO_TEST_CASE(a_refused_password_is_an_authentication_failure_named_by_its_step)
{
    const auto n = server("wrong", 1);
    const handshake_fsm fsm(n, true, false, 1000ms);
    const std::vector<resp::reply> wrongpass{
        error("WRONGPASS invalid username-password pair or user is disabled."), status("OK")};
    auto a = fsm.greeted({}, wrongpass);
    BOOST_TEST((a.what == step::complete));
    BOOST_TEST((a.failure.code == node_errc::authentication));
    BOOST_TEST(a.failure.detail.starts_with("AUTH on 10.0.0.7:6380 failed: WRONGPASS"));

    // A server without a password refuses AUTH: the URL's password is wrong too.
    const std::vector<resp::reply> no_password{
        error("ERR AUTH <password> called without any password configured for the default user."),
        status("OK")};
    a = fsm.greeted({}, no_password);
    BOOST_TEST((a.failure.code == node_errc::authentication));
}

BOOST_AUTO_TEST_CASE(a_refused_select_maps_to_its_code)
{
    const auto n = server({}, 99);
    const handshake_fsm fsm(n, true, false, 1000ms);
    const std::vector<resp::reply> out_of_range{error("ERR DB index is out of range")};
    auto a = fsm.greeted({}, out_of_range);
    BOOST_TEST((a.failure.code == node_errc::bad_database));
    BOOST_TEST(a.failure.detail.starts_with("SELECT on 10.0.0.7:6380 failed: "));

    const std::vector<resp::reply> cluster{error("ERR SELECT is not allowed in cluster mode")};
    a = fsm.greeted({}, cluster);
    BOOST_TEST((a.failure.code == node_errc::wrong_mode));

    // An error the library does not know is the server's, which may pass.
    const std::vector<resp::reply> loading{error("LOADING Redis is loading the dataset")};
    a = fsm.greeted({}, loading);
    BOOST_TEST((a.failure.code == node_errc::server_error));
}

BOOST_AUTO_TEST_CASE(the_first_refusal_decides)
{
    const auto n = server("secret", 4);
    const handshake_fsm fsm(n, true, false, 1000ms);
    const std::vector<resp::reply> both{error("NOAUTH Authentication required."),
                                        error("ERR DB index is out of range")};
    BOOST_TEST((fsm.greeted({}, both).failure.code == node_errc::authentication));
}

BOOST_AUTO_TEST_CASE(a_failed_exchange_names_the_handshake_unless_a_protocol_error_does)
{
    const auto n = server("secret");
    const handshake_fsm fsm(n, true, false, 1000ms);
    auto a = fsm.greeted(node_failure{node_errc::connection_lost, "connection closed"}, {});
    BOOST_TEST((a.failure.code == node_errc::connection_lost));
    BOOST_TEST(a.failure.detail == "handshake with 10.0.0.7:6380 failed: connection closed");
    a = fsm.greeted(node_failure{node_errc::protocol_error, "protocol error from x"}, {});
    BOOST_TEST(a.failure.detail == "protocol error from x");
}

BOOST_AUTO_TEST_CASE(tls_starts_after_connect_and_needs_a_context)
{
    auto n = server("secret");
    n.tls = true;
    const handshake_fsm without(n, true, false, 1000ms);
    auto a = without.connected({});
    BOOST_TEST((a.what == step::complete));
    BOOST_TEST((a.failure.code == node_errc::tls_failed));

    const handshake_fsm fsm(n, true, true, 1000ms);
    a = fsm.connected({});
    BOOST_TEST((a.what == step::start_tls));
    BOOST_TEST(a.probe_after.count() == 100);  // capped
    BOOST_TEST((fsm.tls_done({}).what == step::greet));
    a = fsm.tls_done(node_failure{node_errc::tls_failed, "certificate verify failed"});
    BOOST_TEST((a.failure.code == node_errc::tls_failed));
    BOOST_TEST(a.failure.detail == "certificate verify failed (10.0.0.7:6380)");

    // A short deadline leaves three quarters of it to the handshake.
    const handshake_fsm quick(n, true, true, 200ms);
    BOOST_TEST(quick.connected({}).probe_after.count() == 50);
}

BOOST_AUTO_TEST_CASE(a_redis_reply_to_the_plain_ping_means_the_port_has_no_tls)
{
    auto f = handshake_fsm::plain_ping_answered(status("PONG"));
    BOOST_TEST((f.code == node_errc::tls_mismatch));
    f = handshake_fsm::plain_ping_answered(error("NOAUTH Authentication required."));
    BOOST_TEST((f.code == node_errc::tls_mismatch));
    resp::reply other;
    other.type = resp::kind::bulk_string;
    other.text = "HTTP/1.1";
    BOOST_TEST(!handshake_fsm::plain_ping_answered(other));
}

BOOST_AUTO_TEST_SUITE_END()
