// SPDX-License-Identifier: BSL-1.0
#include "lock/wake_rule.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace redlock::detail;
using state = waiter_state;

namespace {

constexpr wake_rule owner = wake_rule::one_owner;
constexpr wake_rule reader = wake_rule::shared;
constexpr wake_rule permit = wake_rule::one_permit;

// What a release does to each member of `line`, one letter each: '.' nothing, 's' seen,
// 'w' woken.
std::string effects_of(const std::vector<line_member>& line)
{
    std::string letters;
    for (release_effect e : release_effects(line)) {
        letters += e == release_effect::woken ? 'w' : e == release_effect::seen ? 's' : '.';
    }
    return letters;
}

std::vector<line_member> all_pausing(std::size_t n, wake_rule rule)
{
    return std::vector<line_member>(n, line_member{state::pausing, rule});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(wake_rules)

BOOST_AUTO_TEST_CASE(an_empty_line_is_left_alone)
{
    BOOST_TEST(effects_of({}).empty());
}

BOOST_AUTO_TEST_CASE(a_lock_of_one_owner_wakes_the_head_alone)
{
    BOOST_TEST(effects_of(all_pausing(4, owner)) == "w...");
    // A pause that a yield moved is a pause all the same.
    BOOST_TEST(effects_of({{state::pause_moved, owner}, {state::pausing, owner}}) == "w.");
}

BOOST_AUTO_TEST_CASE(a_lock_of_one_owner_wakes_nobody_while_the_client_has_a_contender)
{
    for (state contender : {state::attempting, state::missed_release, state::retrying_at_once,
                            state::woken_by_hand_off, state::woken_by_release_message}) {
        BOOST_TEST(
            effects_of({{state::pausing, owner}, {contender, owner}, {state::pausing, owner}}) ==
            ".s.");
    }
}

BOOST_AUTO_TEST_CASE(readers_are_woken_together)
{
    BOOST_TEST(effects_of(all_pausing(4, reader)) == "wwww");
    // A reader that is attempting does not hold the others back: they may all hold together.
    BOOST_TEST(effects_of({{state::pausing, reader},
                           {state::attempting, reader},
                           {state::pausing, reader},
                           {state::woken_by_release_message, reader}}) == "wsws");
}

BOOST_AUTO_TEST_CASE(a_waiting_writer_goes_before_the_readers_of_its_client)
{
    // Its intent keeps new readers out: they wait for its release, whoever waited longest.
    BOOST_TEST(
        effects_of({{state::pausing, owner}, {state::pausing, reader}, {state::pausing, reader}}) ==
        "w..");
    BOOST_TEST(
        effects_of({{state::pausing, reader}, {state::pausing, owner}, {state::pausing, reader}}) ==
        ".w.");
    // A reader attempting is no contender for the writer's turn.
    BOOST_TEST(effects_of({{state::attempting, reader},
                           {state::pausing, owner},
                           {state::pausing, reader}}) == "sw.");
    // A writer attempting is: nobody is woken.
    BOOST_TEST(effects_of({{state::pausing, reader},
                           {state::attempting, owner},
                           {state::pausing, owner}}) == ".s.");
}

BOOST_AUTO_TEST_CASE(each_release_of_a_permit_wakes_one_more_waiter)
{
    BOOST_TEST(effects_of(all_pausing(4, permit)) == "w...");
    // The first release woke the head; the next one is a permit more, for the next waiter.
    BOOST_TEST(effects_of({{state::woken_by_release_message, permit},
                           {state::pausing, permit},
                           {state::pausing, permit}}) == "sw.");
    BOOST_TEST(effects_of({{state::retrying_at_once, permit},
                           {state::missed_release, permit},
                           {state::pausing, permit}}) == "ssw");
}

BOOST_AUTO_TEST_CASE(a_contender_that_had_heard_of_no_release_takes_the_permit)
{
    BOOST_TEST(effects_of({{state::pausing, permit},
                           {state::attempting, permit},
                           {state::pausing, permit}}) == ".s.");
}

BOOST_AUTO_TEST_CASE(nobody_pausing_means_nobody_woken)
{
    for (wake_rule rule : {owner, reader, permit}) {
        BOOST_TEST(effects_of({{state::attempting, rule}, {state::woken_by_hand_off, rule}}) ==
                   "ss");
    }
}

BOOST_AUTO_TEST_SUITE_END()
