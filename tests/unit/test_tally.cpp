// SPDX-License-Identifier: BSL-1.0
#include "quorum/tally.hpp"

#include <boost/test/unit_test.hpp>

using redlock::node_status;
using namespace redlock::detail;

namespace {

tally make(std::size_t nodes, std::size_t ok, std::size_t taken = 0, std::size_t missing = 0,
           std::size_t failed = 0)
{
    return tally{.nodes = nodes, .ok = ok, .taken = taken, .missing = missing, .failed = failed};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(quorum_tally)

BOOST_AUTO_TEST_CASE(quorum_is_a_strict_majority)
{
    const std::size_t expected[] = {1, 2, 2, 3, 3, 4, 4};
    for (std::size_t n = 1; n <= 7; ++n) {
        BOOST_TEST(quorum_of(n) == expected[n - 1], "n = " << n);
        BOOST_TEST(make(n, 0).quorum() == expected[n - 1]);
    }
}

BOOST_AUTO_TEST_CASE(add_counts_each_status)
{
    tally t{.nodes = 6};
    for (auto s : {node_status::ok, node_status::taken, node_status::missing,
                   node_status::timed_out, node_status::error, node_status::abandoned}) {
        t.add(s);
    }
    t.add(node_status::ok);
    BOOST_TEST(t.ok == 2u);
    BOOST_TEST(t.taken == 1u);
    BOOST_TEST(t.missing == 1u);
    BOOST_TEST(t.failed == 3u);  // timed out, error and abandoned
    BOOST_TEST(t.answered() == 7u);
}

BOOST_AUTO_TEST_CASE(reached_needs_quorum_of_ok)
{
    BOOST_TEST(!make(5, 2).reached());
    BOOST_TEST(make(5, 3).reached());
    BOOST_TEST(make(1, 1).reached());
    BOOST_TEST(!make(2, 1).reached());
}

BOOST_AUTO_TEST_CASE(impossible_when_pending_nodes_cannot_make_quorum)
{
    BOOST_TEST(!make(5, 0).impossible());
    BOOST_TEST(!make(5, 0, 0, 0, 2).impossible());  // 3 pending could still say ok
    BOOST_TEST(make(5, 0, 0, 0, 3).impossible());
    BOOST_TEST(make(5, 0, 2, 1).impossible());
    BOOST_TEST(!make(5, 2, 1, 1).impossible());  // 2 ok + 1 pending = 3
    BOOST_TEST(make(5, 2, 2, 1).impossible());
    BOOST_TEST(!make(5, 3, 2).impossible());
    BOOST_TEST(make(2, 0, 0, 1).impossible());
}

BOOST_AUTO_TEST_CASE(taken_by_other_needs_quorum_of_taken)
{
    BOOST_TEST(!make(5, 0, 2).taken_by_other());
    BOOST_TEST(make(5, 0, 3).taken_by_other());
    BOOST_TEST(make(1, 0, 1).taken_by_other());
    BOOST_TEST(!make(3, 1, 1, 1).taken_by_other());
}

BOOST_AUTO_TEST_CASE(all_answered_waits_for_every_node)
{
    BOOST_TEST(!decided(make(5, 3), stop_rule::all_answered));
    BOOST_TEST(!decided(make(5, 0, 0, 0, 4), stop_rule::all_answered));
    BOOST_TEST(decided(make(5, 3, 1, 0, 1), stop_rule::all_answered));
    BOOST_TEST(decided(make(5, 0, 0, 0, 5), stop_rule::all_answered));
}

BOOST_AUTO_TEST_CASE(quorum_reached_stops_on_success_only)
{
    BOOST_TEST(decided(make(5, 3), stop_rule::quorum_reached));
    BOOST_TEST(!decided(make(5, 2), stop_rule::quorum_reached));
    BOOST_TEST(!decided(make(5, 0, 3), stop_rule::quorum_reached));  // impossible, but waits
    BOOST_TEST(decided(make(5, 2, 3), stop_rule::quorum_reached));   // everyone answered
}

BOOST_AUTO_TEST_CASE(outcome_known_stops_on_success_or_impossibility)
{
    BOOST_TEST(decided(make(5, 3), stop_rule::outcome_known));
    BOOST_TEST(decided(make(5, 0, 3), stop_rule::outcome_known));
    BOOST_TEST(decided(make(5, 1, 0, 2, 1), stop_rule::outcome_known));
    BOOST_TEST(!decided(make(5, 2, 1), stop_rule::outcome_known));
    BOOST_TEST(!decided(make(5, 0), stop_rule::outcome_known));
    BOOST_TEST(!decided(make(3, 1, 1), stop_rule::outcome_known));
}

BOOST_AUTO_TEST_CASE(quorum_replied_counts_any_reply)
{
    // Any reply shows the node no longer holds the value: ok, taken and missing all count.
    BOOST_TEST(decided(make(5, 1, 1, 1), stop_rule::quorum_replied));
    BOOST_TEST(decided(make(5, 0, 3), stop_rule::quorum_replied));
    BOOST_TEST(!decided(make(5, 1, 1), stop_rule::quorum_replied));
    // One node stopped of five: the four others decide it without waiting for its deadline.
    BOOST_TEST(decided(make(5, 0, 0, 3), stop_rule::quorum_replied));
    // Failures: decided once a quorum of replies can no longer come.
    BOOST_TEST(!decided(make(5, 1, 0, 0, 2), stop_rule::quorum_replied));
    BOOST_TEST(decided(make(5, 0, 0, 0, 3), stop_rule::quorum_replied));
    BOOST_TEST(decided(make(3, 0, 0, 0, 2), stop_rule::quorum_replied));
}

BOOST_AUTO_TEST_SUITE_END()
