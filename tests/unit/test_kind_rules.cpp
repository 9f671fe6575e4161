// SPDX-License-Identifier: BSL-1.0
// The rows of rules, one per kind of lock: what each kind decides for the shared path.
#include "lock/kind_rules.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace redlock::detail;

namespace {

tally attempt(std::size_t nodes, std::size_t need, std::size_t taken)
{
    tally t;
    t.nodes = nodes;
    t.need = need;
    t.taken = taken;
    t.failed = nodes - taken;
    return t;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(kind_rows)

BOOST_AUTO_TEST_CASE(a_semaphore_needs_its_permit_quorum_and_is_full_before_a_quorum_is_taken)
{
    BOOST_TEST(mutex_kind.quorum(5, 1) == 3u);
    BOOST_TEST(semaphore_kind.quorum(5, 3) == semaphore_quorum(5, 3));
    BOOST_TEST(semaphore_kind.quorum(5, 3) == 4u);
    // Five nodes, a quorum of four: two full nodes leave too few for this client.
    BOOST_TEST(!semaphore_kind.taken(attempt(5, 4, 1)));
    BOOST_TEST(semaphore_kind.taken(attempt(5, 4, 2)));
    // A mutex is taken only when another owner holds a majority.
    BOOST_TEST(!mutex_kind.taken(attempt(5, 3, 2)));
    BOOST_TEST(mutex_kind.taken(attempt(5, 3, 3)));
}

BOOST_AUTO_TEST_CASE(each_row_points_at_the_scripts_and_the_waiting_of_its_kind)
{
    BOOST_TEST(mutex_kind.scripts == &mutex_scripts);
    BOOST_TEST(fair_kind.scripts == &fair_scripts);
    BOOST_TEST(semaphore_kind.scripts == &semaphore_scripts);
    BOOST_TEST(read_kind.scripts == &reader_scripts);
    BOOST_TEST(write_kind.scripts == &writer_scripts);
    BOOST_TEST((fair_kind.waits == waiting::queue));
    for (const kind_rules* row : {&mutex_kind, &semaphore_kind, &read_kind, &write_kind}) {
        BOOST_TEST((row->waits == waiting::retry), row->name);
        BOOST_TEST(row->scripts->join == nullptr, row->name);
    }
    BOOST_TEST(fair_kind.scripts->join != nullptr);
    // Only readers hold together; only the writer keeps an intent; only a plain mutex is
    // handed between the client's own acquires.
    BOOST_TEST(read_kind.shared);
    BOOST_TEST((read_kind.wakes == wake_rule::shared));
    BOOST_TEST((semaphore_kind.wakes == wake_rule::one_permit));
    BOOST_TEST(write_kind.writer_intent);
    BOOST_TEST(!read_kind.writer_intent);
    // A refused attempt writes nothing, except a fair lock's, which commits its entry.
    BOOST_TEST(!fair_kind.refusal_writes_nothing);
    for (const kind_rules* row : {&mutex_kind, &semaphore_kind, &read_kind, &write_kind}) {
        BOOST_TEST(row->refusal_writes_nothing, row->name);
    }
    BOOST_TEST(mutex_kind.hands_off_in_client);
    BOOST_TEST(!fair_kind.hands_off_in_client);
    BOOST_TEST(semaphore_kind.release_wakes_own);
    BOOST_TEST(write_kind.release_wakes_own);
}

BOOST_AUTO_TEST_CASE(each_row_refuses_the_options_its_kind_cannot_take)
{
    redlock::options fair;
    fair.fair = true;
    BOOST_TEST(mutex_kind.refusal(fair, 1, 1).empty());
    BOOST_TEST(fair_kind.refusal(fair, 1, 1).empty());
    BOOST_TEST(!fair_kind.refusal(fair, 2, 1).empty());  // one queue, one key
    BOOST_TEST(!semaphore_kind.refusal(fair, 1, 2).empty());
    // A read-write lock has no fair queue: refused, not ignored.
    BOOST_TEST(read_kind.refusal(fair, 1, 1).find("options.fair") == 0u);
    BOOST_TEST(write_kind.refusal(fair, 1, 1).find("options.fair") == 0u);
    BOOST_TEST(!semaphore_kind.refusal(redlock::options{}, 1, 0).empty());
}

BOOST_AUTO_TEST_SUITE_END()
