// SPDX-License-Identifier: BSL-1.0
// The decisions of finding a Sentinel node's master: which Sentinel is asked next, what its
// reply means, when the lookup gives up and with which code, and what the master's ROLE must
// say.
#include "node/sentinel/sentinel_resolve_fsm.hpp"
#include "reply_builders.hpp"

#include <boost/test/unit_test.hpp>

using namespace redlock::detail;
using namespace redlock::test;
using namespace std::chrono_literals;
using redlock::node_errc;
using step = sentinel_resolve_fsm::step;

namespace {

redlock::node sentinel_node(std::size_t sentinels)
{
    redlock::node n;
    n.master_name = "locks";
    n.password = "secret";
    n.db = 2;
    for (std::size_t i = 0; i < sentinels; ++i) {
        n.sentinels.push_back(
            redlock::server_address{.host = "10.0.0.1", .port = std::uint16_t(26379 + i)});
    }
    return n;
}

resp::reply address(std::string host, std::string port)
{
    return array({bulk(std::move(host)), bulk(std::move(port))});
}

const resp::reply nil{};

}  // namespace

BOOST_AUTO_TEST_SUITE(sentinel_resolve_decisions)

BOOST_AUTO_TEST_CASE(the_first_sentinel_that_names_a_master_wins_and_role_confirms_it)
{
    const auto n = sentinel_node(2);
    sentinel_resolve_fsm lookup(n, 900ms);
    auto a = lookup.start();
    BOOST_TEST((a.what == step::ask_sentinel));
    BOOST_TEST(a.server.port == 26379);
    BOOST_TEST(a.server.password.empty());  // Sentinels are asked without the node's password
    BOOST_TEST(a.timeout.count() == 300);   // a third: two Sentinels and the master
    std::string question;
    resp::append_command(question, {"SENTINEL", "get-master-addr-by-name", "locks"});
    BOOST_TEST(a.payload == question);

    a = lookup.sentinel_answered({}, address("10.0.0.9", "6390"));
    BOOST_TEST((a.what == step::connect_master));
    BOOST_TEST(a.server.host == "10.0.0.9");
    BOOST_TEST(a.server.port == 6390);
    BOOST_TEST(a.server.password == "secret");  // the master gets the node's credentials
    BOOST_TEST(a.server.db == 2);
    BOOST_TEST(a.server.sentinels.empty());
    BOOST_TEST(lookup.reached() == "10.0.0.9:6390");

    a = lookup.master_connected({});
    BOOST_TEST((a.what == step::ask_role));
    std::string role;
    resp::append_command(role, {"ROLE"});
    BOOST_TEST(a.payload == role);
    a = lookup.role_answered({}, array({bulk("master"), resp::reply{}}));
    BOOST_TEST((a.what == step::complete));
    BOOST_TEST(!a.failure);
}

BOOST_AUTO_TEST_CASE(a_sentinel_down_unknowing_or_refusing_passes_to_the_next)
{
    const auto n = sentinel_node(4);
    sentinel_resolve_fsm lookup(n, 1000ms);
    lookup.start();
    auto a = lookup.sentinel_answered(node_failure{node_errc::connect_timed_out, "timed out"}, nil);
    BOOST_TEST((a.what == step::ask_sentinel));
    BOOST_TEST(a.server.port == 26380);
    a = lookup.sentinel_answered({}, nil);  // knows no master by that name
    BOOST_TEST(a.server.port == 26381);
    a = lookup.sentinel_answered({}, error("ERR unknown command 'SENTINEL'"));
    BOOST_TEST(a.server.port == 26382);
    a = lookup.sentinel_answered({}, address("10.0.0.9", "6390"));
    BOOST_TEST((a.what == step::connect_master));
}

BOOST_AUTO_TEST_CASE(after_the_last_sentinel_the_lookup_gives_up_with_no_master)
{
    const auto n = sentinel_node(3);
    sentinel_resolve_fsm lookup(n, 1000ms);
    lookup.start();
    lookup.sentinel_answered(node_failure{node_errc::connect_failed, "refused"}, nil);
    lookup.sentinel_answered({}, nil);
    const auto a = lookup.sentinel_answered({}, address("10.0.0.9", "0"));  // a malformed port
    BOOST_TEST((a.what == step::complete));
    BOOST_TEST((a.failure.code == node_errc::no_master));
    BOOST_TEST(a.failure.detail.find("Sentinel 10.0.0.1:26380: it knows no master") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(sentinels_that_all_fail_alike_give_their_shared_code)
{
    const auto n = sentinel_node(2);
    sentinel_resolve_fsm lookup(n, 1000ms);
    lookup.start();
    const node_failure refused{node_errc::authentication, "AUTH failed"};
    lookup.sentinel_answered(refused, nil);
    const auto a = lookup.sentinel_answered(refused, nil);
    BOOST_TEST((a.failure.code == node_errc::authentication));
}

BOOST_AUTO_TEST_CASE(a_master_that_cannot_be_reached_fails_the_lookup)
{
    const auto n = sentinel_node(2);
    sentinel_resolve_fsm lookup(n, 1000ms);
    lookup.start();
    lookup.sentinel_answered({}, address("10.0.0.9", "6390"));
    const auto a = lookup.master_connected(node_failure{node_errc::connect_failed, "refused"});
    BOOST_TEST((a.what == step::complete));
    BOOST_TEST((a.failure.code == node_errc::connect_failed));
    BOOST_TEST(a.failure.detail == "the master the Sentinels name: refused");
}

BOOST_AUTO_TEST_CASE(a_master_whose_role_is_not_master_is_a_switch_in_progress)
{
    const auto n = sentinel_node(1);
    sentinel_resolve_fsm lookup(n, 1000ms);
    lookup.start();
    lookup.sentinel_answered({}, address("10.0.0.9", "6390"));
    lookup.master_connected({});
    auto a = lookup.role_answered({}, array({bulk("slave"), bulk("10.0.0.8")}));
    BOOST_TEST((a.failure.code == node_errc::master_switched));
    BOOST_TEST(a.failure.detail.find("its ROLE is 'slave'") != std::string::npos);
    a = lookup.role_answered({}, error("LOADING Redis is loading the dataset"));
    BOOST_TEST((a.failure.code == node_errc::master_switched));
    // An ACL that forbids ROLE: the Sentinels' word stands.
    a = lookup.role_answered({}, error("NOPERM this user has no permissions to run 'role'"));
    BOOST_TEST((a.what == step::complete));
    BOOST_TEST(!a.failure);
    a = lookup.role_answered(node_failure{node_errc::connection_lost, "closed"}, nil);
    BOOST_TEST((a.failure.code == node_errc::connection_lost));
    BOOST_TEST(a.failure.detail == "ROLE on 10.0.0.9:6390 failed: closed");
}

BOOST_AUTO_TEST_SUITE_END()
