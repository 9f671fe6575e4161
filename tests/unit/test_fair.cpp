// SPDX-License-Identifier: BSL-1.0
// The arithmetic of a fair lock's queue: refresh and entry expiry, the ticket agreed from the
// nodes' proposals, and the options a fair lock refuses.

#include "lock/fair_rules.hpp"
#include "lock/hand_off_tally.hpp"
#include "protocol/fair_message.hpp"
#include "protocol/key_slot.hpp"
#include "protocol/key_space.hpp"
#include "protocol/scripts.hpp"

#include <boost/test/unit_test.hpp>

using namespace redlock::detail;
using namespace std::chrono_literals;
using redlock::node_outcome;
using redlock::node_status;

namespace {

node_outcome proposed(std::uint64_t p)
{
    node_outcome o;
    o.status = node_status::ok;
    o.fencing_token = p;
    return o;
}

node_outcome silent()
{
    node_outcome o;
    o.status = node_status::timed_out;
    return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fair_queue)

BOOST_AUTO_TEST_CASE(an_entry_outlives_two_missed_refreshes_and_a_crash_costs_one_expiry)
{
    const fair_timing t = fair_timing_for(8s);
    BOOST_TEST(t.refresh.count() == 2000);
    BOOST_TEST(t.entry_ttl.count() == 6000);
    BOOST_TEST((t.crash_bound() == 8s));
    // Never below a millisecond.
    BOOST_TEST(fair_timing_for(2ms).refresh.count() == 1);
    BOOST_TEST(fair_timing_for(2ms).entry_ttl.count() == 3);
}

BOOST_AUTO_TEST_CASE(the_ticket_is_the_largest_proposal_of_at_least_a_quorum)
{
    BOOST_TEST(agreed_ticket({proposed(7), proposed(12), proposed(9)}, 2).value() == 12u);
    // A node that did not answer proposes nothing; the others still make a quorum.
    BOOST_TEST(agreed_ticket({proposed(7), silent(), proposed(9)}, 2).value() == 9u);
    // Too few proposals: no ticket.
    BOOST_TEST(!agreed_ticket({proposed(7), silent(), silent()}, 2));
    BOOST_TEST(!agreed_ticket({}, 1));
    BOOST_TEST(agreed_ticket({proposed(1)}, 1).value() == 1u);
}

BOOST_AUTO_TEST_CASE(a_fair_lock_is_one_key_and_not_reentrant)
{
    BOOST_TEST(fair_problem({.fair = true}, 1).empty());
    BOOST_TEST(fair_problem({}, 2).empty());  // only fair locks are checked here
    BOOST_TEST(!fair_problem({.fair = true}, 2).empty());
    BOOST_TEST(!fair_problem({.reentrant = true, .fair = true}, 1).empty());
    BOOST_TEST(!fair_problem({.value = "mine", .fair = true}, 1).empty());
}

BOOST_AUTO_TEST_CASE(the_queue_lives_in_the_lock_keys_cluster_slot)
{
    for (queue_part part :
         {queue_part::order, queue_part::expiries, queue_part::states, queue_part::counter}) {
        BOOST_TEST(key_slot(queue_key("", "orders", part, true)) == key_slot("orders"));
        BOOST_TEST(key_slot(queue_key("app:", "app:{x}y", part, true)) == key_slot("app:{x}y"));
    }
    BOOST_TEST(queue_key("", "orders", queue_part::order) == "redlock:queue:orders");
    BOOST_TEST(queue_key("p:", "p:orders", queue_part::counter) == "p:redlock:ticket:orders");
    // A name whose '}' cannot be put in a tag is refused on a cluster, before any I/O.
    const std::vector<std::string> keys{"a}b"};
    BOOST_TEST(
        !cluster_key_problem({.keys = keys, .in_cluster = true, .scripts = &fair_scripts}).empty());
}

BOOST_AUTO_TEST_CASE(a_node_ahead_in_the_queue_reads_as_taken)
{
    resp::reply r;
    r.type = resp::kind::integer;
    node_failure why;
    for (long long answer : {-1LL, -2LL}) {
        r.integer = answer;
        BOOST_TEST((read_fair_acquire_reply(r, "v", why) == node_status::taken));
    }
    r.integer = 1;
    BOOST_TEST((read_fair_acquire_reply(r, "v", why) == node_status::ok));
    r.integer = -3;
    BOOST_TEST((read_fair_acquire_reply(r, "v", why) == node_status::error));
}

BOOST_AUTO_TEST_CASE(the_scripts_messages_name_a_head_or_hand_it_the_key)
{
    const auto named = read_fair_message("n:3f9a");
    BOOST_TEST_REQUIRE(named.has_value());
    BOOST_TEST(named->value == "3f9a");
    BOOST_TEST(!named->hand_off_stamp.has_value());
    // An owner value may hold anything, colons included.
    const auto handed = read_fair_message("h:12:a:b");
    BOOST_TEST_REQUIRE(handed.has_value());
    BOOST_TEST(handed->value == "a:b");
    BOOST_TEST((handed->hand_off_stamp == std::optional<std::uint64_t>(12)));
    BOOST_TEST(read_fair_message("n:")->value == "");
    for (std::string_view bad : {"", "n", "x:v", "h:", "h:12", "h::v", "h:1x:v", "h:-1:v", "3f9a",
                                 "h:99999999999999999999:v"}) {
        BOOST_TEST(!read_fair_message(bad).has_value(), bad);
    }
}

BOOST_AUTO_TEST_CASE(only_hand_offs_with_the_last_clean_ups_stamp_count)
{
    hand_off_tally t;
    BOOST_TEST(!t.heard(0, 1));  // no clean-up yet
    const redlock::detail::clock::time_point sent{std::chrono::seconds(7)};
    t.expect(1, sent, 3, 2);
    BOOST_TEST((t.sent_at() == sent));
    BOOST_TEST(!t.heard(0, 1));
    BOOST_TEST(!t.heard(0, 1));  // one node counts once
    BOOST_TEST(!t.heard(5, 1));  // no such node
    BOOST_TEST(!t.reached());
    // The next clean-up undoes what the earlier hand-offs set: they count no more.
    t.expect(2, sent, 3, 2);
    BOOST_TEST(!t.heard(1, 1));
    BOOST_TEST(!t.heard(1, 2));
    BOOST_TEST(t.heard(2, 2));
    BOOST_TEST(t.reached());
    BOOST_TEST((t.handed_by() == std::vector<bool>{false, true, true}));
    BOOST_TEST(!t.heard(0, 2));  // past the quorum: already told
    // An attempt: nothing counts until the next clean-up.
    t.stop();
    BOOST_TEST(!t.reached());
    BOOST_TEST(!t.heard(0, 2));
    BOOST_TEST(!t.heard(1, 2));
    BOOST_TEST(!t.reached());
}

BOOST_AUTO_TEST_SUITE_END()
