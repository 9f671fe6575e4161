// SPDX-License-Identifier: BSL-1.0
// The codes of node outcomes (redlock::node_errc): their category, messages, round trip; and
// failures joined from several servers.

#include <redlock/error.hpp>
#include <redlock/node_error.hpp>

#include "core/node_error.hpp"

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

using redlock::node_errc;
using namespace redlock::detail;

namespace {

constexpr int last_code = static_cast<int>(node_errc::in_background);

}  // namespace

BOOST_AUTO_TEST_SUITE(node_error)

BOOST_AUTO_TEST_CASE(the_category_is_named_redlock_node)
{
    BOOST_TEST(std::string(redlock::node_error_category().name()) == "redlock.node");
    BOOST_TEST(
        (&make_error_code(node_errc::timed_out).category() == &redlock::node_error_category()));
}

BOOST_AUTO_TEST_CASE(every_code_has_its_own_message)
{
    std::set<std::string> messages;
    for (int v = 1; v <= last_code; ++v) {
        const std::string m = make_error_code(static_cast<node_errc>(v)).message();
        BOOST_TEST(!m.empty());
        BOOST_TEST(m.find("unknown") == std::string::npos, m);
        messages.insert(m);
    }
    BOOST_TEST(messages.size() == static_cast<std::size_t>(last_code));
    const std::string beyond = make_error_code(static_cast<node_errc>(last_code + 1)).message();
    BOOST_TEST(beyond.find("unknown") != std::string::npos, beyond);
}

BOOST_AUTO_TEST_CASE(codes_round_trip_through_error_code)
{
    for (int v = 1; v <= last_code; ++v) {
        const auto e = static_cast<node_errc>(v);
        const boost::system::error_code ec = e;  // is_error_code_enum
        BOOST_TEST(ec.failed());
        BOOST_TEST(ec.value() == v);
        BOOST_TEST((ec == e));
        BOOST_TEST((static_cast<node_errc>(ec.value()) == e));
    }
    // Equal values of the library's two categories are different codes.
    BOOST_TEST((make_error_code(node_errc::timed_out) != make_error_code(redlock::error::taken)));
    BOOST_TEST(static_cast<int>(node_errc::timed_out) == static_cast<int>(redlock::error::taken));
}

BOOST_AUTO_TEST_CASE(the_messages_of_deadlines_and_nodes_not_awaited_are_their_details)
{
    // What reports show for them (stored reports keep only the code of a node not awaited).
    BOOST_TEST(failure_of(node_errc::timed_out).detail == "no reply before the per-node deadline");
    BOOST_TEST(failure_of(node_errc::decided_by_quorum).detail ==
               "not awaited: the outcome was decided by a quorum of the other nodes");
    BOOST_TEST(failure_of(node_errc::quorum_impossible).detail ==
               "not awaited: a quorum was no longer possible");
    BOOST_TEST(failure_of(node_errc::cancelled).detail ==
               "not awaited: the operation was cancelled");
    BOOST_TEST(failure_of(node_errc::in_background).detail.find("goes on in the background") !=
               std::string::npos);
    BOOST_TEST((failure_of(node_errc::cancelled).code == node_errc::cancelled));
}

BOOST_AUTO_TEST_CASE(a_failure_is_true_only_with_a_code)
{
    BOOST_TEST(!node_failure{});
    BOOST_TEST(!(node_failure{{}, "words without a code"}));
    BOOST_TEST(static_cast<bool>(node_failure{node_errc::server_error, {}}));
}

BOOST_AUTO_TEST_CASE(failures_of_several_servers_keep_the_code_they_share)
{
    failure_list all_refused;
    all_refused.add({node_errc::authentication, "AUTH on a:1 failed: WRONGPASS"});
    all_refused.add({node_errc::authentication, "AUTH on b:1 failed: WRONGPASS"});
    const node_failure shared = all_refused.joined("no server told", node_errc::cluster_down);
    BOOST_TEST((shared.code == node_errc::authentication));
    BOOST_TEST(shared.detail ==
               "no server told: AUTH on a:1 failed: WRONGPASS; AUTH on b:1 failed: WRONGPASS");

    // Servers that fail differently: one may still come back.
    failure_list mixed;
    mixed.add({node_errc::authentication, "a"});
    mixed.add({node_errc::connect_failed, "b"});
    mixed.add({node_errc::authentication, "c"});
    const node_failure otherwise = mixed.joined("none", node_errc::no_master);
    BOOST_TEST((otherwise.code == node_errc::no_master));
    BOOST_TEST(otherwise.detail == "none: a; b; c");

    BOOST_TEST(
        (failure_list{}.joined("none", node_errc::cluster_down).code == node_errc::cluster_down));
}

BOOST_AUTO_TEST_SUITE_END()
