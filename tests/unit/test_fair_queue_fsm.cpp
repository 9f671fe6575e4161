// SPDX-License-Identifier: BSL-1.0
// A fair acquire's place in the queue, without a server: its own decisions, and how the
// acquire's machine follows them.
#include "lock/acquire_fsm.hpp"
#include "lock/fair_queue_fsm.hpp"
#include "lock/waiters.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <initializer_list>
#include <string>
#include <vector>

using namespace redlock::detail;
using namespace std::chrono_literals;
using step = acquire_step;
namespace asio = boost::asio;
using redlock::node_outcome;
using redlock::node_status;

namespace {

const auto t0 = clock::time_point{} + 1h;
const fair_timing timing{.refresh = 2s, .entry_ttl = 6s};

// A place in the queue of a lock of three nodes (two agree), that takes hand-offs.
fair_queue_rules queue_rules(bool joins = true, bool takes_hand_offs = true)
{
    return {.joins = joins,
            .timing = timing,
            .takes_hand_offs = takes_hand_offs,
            .nodes = 3,
            .quorum = 2};
}

acquire_rules acquire_with(int tries, clock::time_point give_up_at = clock::time_point::max())
{
    return {.tries = tries, .give_up_at = give_up_at};
}

// A join's answers: each node's proposal, 0 for a node that gave none.
std::vector<node_outcome> proposals(std::initializer_list<std::uint64_t> each)
{
    std::vector<node_outcome> outcomes;
    for (std::uint64_t p : each) {
        node_outcome o;
        o.status = p > 0 ? node_status::ok : node_status::timed_out;
        o.fencing_token = p;
        outcomes.push_back(o);
    }
    return outcomes;
}

const attempt_result granted{.quorum_with_validity = true};
const attempt_result taken{.taken_by_other = true, .some_taken = true};
const attempt_result split{.some_taken = true};

// An acquire with a place in the queue, as acquire.cpp drives them: the queue decides, the
// acquire's machine asks it.
struct queued_acquire
{
    hand_off_tally hand_offs;  // its waiter's
    fair_queue_fsm queue;
    acquire_fsm fsm;

    explicit queued_acquire(int tries, clock::time_point give_up_at = clock::time_point::max(),
                            fair_queue_rules rules = queue_rules())
        : queue(rules, hand_offs), fsm(acquire_with(tries, give_up_at), &queue)
    {
    }
    queued_acquire(const queued_acquire&) = delete;

    // The join's round answered: the queue takes the ticket, the machine moves on.
    acquire_fsm::action join(std::initializer_list<std::uint64_t> each, bool cancelled = false)
    {
        auto outcomes = proposals(each);
        const bool agreed = queue.joined(outcomes);
        return fsm.joined(agreed, false, cancelled);
    }
    // An attempt (which refreshes the entry) with `r`, and its clean-up sent at `now`.
    acquire_fsm::action fail(attempt_result r, clock::time_point now = t0)
    {
        queue.attempt_begins();
        BOOST_TEST((fsm.attempted(r, false).step == step::clean_up));
        queue.clean_up_sent(fsm.attempt_number(), now);
        return fsm.cleaned_up(false, false, now);
    }
    // Joined, and a first attempt found the lock held: into its first wait (the retry delay).
    void behind_the_holder()
    {
        fsm.start(false);
        join({4, 5, 0});
        fail(taken);
        fsm.delay_chosen(100ms, t0);
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(fair_queue)

BOOST_AUTO_TEST_CASE(an_acquire_joins_the_queue_then_attempts_with_the_largest_proposal)
{
    queued_acquire a(3);
    const auto first = a.fsm.start(false);
    BOOST_TEST((first.step == step::join));
    // It listens for its turn once its entry can be committed, from its first attempt.
    BOOST_TEST(!first.watch_releases);
    auto outcomes = proposals({4, 0, 9});
    BOOST_TEST(a.queue.joined(outcomes));
    BOOST_TEST((a.queue.ticket() == std::optional<std::uint64_t>(9)));
    // Proposals are no fencing tokens: the report must not show them as such.
    BOOST_TEST(outcomes[2].fencing_token == 0u);
    const auto attempt = a.fsm.joined(true, false, false);
    BOOST_TEST((attempt.step == step::attempt));
    BOOST_TEST(attempt.watch_releases);
    BOOST_TEST(a.fsm.attempt_number() == 1);
    BOOST_TEST((a.fsm.attempted(granted, false).step == step::grant));  // the entry stays
    // The ticket is agreed: no later attempt joins again.
    BOOST_TEST(!a.queue.join_first());
}

BOOST_AUTO_TEST_CASE(a_join_without_a_quorum_is_retried_and_its_entries_taken_back_at_the_end)
{
    queued_acquire a(2);
    a.fsm.start(false);
    const auto retry = a.join({3, 0, 0});
    BOOST_TEST(!a.queue.ticket());
    BOOST_TEST((retry.step == step::choose_delay));
    a.fsm.delay_chosen(100ms, t0);
    BOOST_TEST((a.fsm.paused(false).step == step::join));
    BOOST_TEST((a.join({0, 0, 7}).step == step::leave));
    BOOST_TEST((a.fsm.left().ec == redlock::error::failed));
    // Nodes that cannot be fixed by retrying end it after one join.
    queued_acquire refused(5);
    refused.fsm.start(false);
    BOOST_TEST((refused.fsm.joined(false, true, false).step == step::leave));
    BOOST_TEST((refused.fsm.left().ec == redlock::error::misconfigured));
}

BOOST_AUTO_TEST_CASE(a_waiter_behind_another_waits_for_its_turn_at_most_a_refresh_period)
{
    queued_acquire a(5);
    a.fsm.start(false);
    a.join({1, 2, 3});
    // The first wait is the retry delay: its subscription may not be confirmed yet.
    BOOST_TEST((a.fail(taken).step == step::choose_delay));
    a.fsm.delay_chosen(100ms, t0);
    BOOST_TEST((a.fsm.paused(false).step == step::attempt));
    const auto wait = a.fail(taken);
    BOOST_TEST((wait.step == step::pause));
    BOOST_TEST((wait.delay == timing.refresh));
    // Its turn (or its refresh time): the next attempt refreshes its entry, no new join.
    BOOST_TEST((a.fsm.paused(false).step == step::attempt));
    BOOST_TEST(a.fsm.attempt_number() == 3);
    // Other failures keep the random retry delay.
    BOOST_TEST((a.fail(split).step == step::choose_delay));
    BOOST_TEST((a.fsm.delay_chosen(100ms, t0).step == step::pause));
}

BOOST_AUTO_TEST_CASE(the_wait_ends_the_turn_wait_early_and_then_the_acquire)
{
    queued_acquire a(10, t0 + 800ms);
    a.behind_the_holder();
    a.fsm.paused(false);
    BOOST_TEST((a.fail(taken, t0 + 300ms).delay == 500ms));
    a.fsm.paused(false);
    BOOST_TEST((a.fail(taken, t0 + 800ms).step == step::leave));
    BOOST_TEST((a.fsm.left().ec == redlock::error::taken));
}

BOOST_AUTO_TEST_CASE(a_message_naming_the_waiter_ends_its_turn_wait_and_its_attempt_follows)
{
    asio::io_context io;
    asio::steady_timer pause(io, 1h);
    waiter w(pause);
    waiter_queue line;
    line.enter("k", w, "me");
    fair_queue_fsm queue(queue_rules(), w.hand_offs);
    acquire_fsm fsm(acquire_with(5), &queue);
    fsm.start(false);
    auto outcomes = proposals({3, 3, 3});
    fsm.joined(queue.joined(outcomes), false, false);
    queue.attempt_begins();
    fsm.attempted(taken, false);
    queue.clean_up_sent(fsm.attempt_number(), t0);
    fsm.cleaned_up(false, false, t0);
    fsm.delay_chosen(100ms, t0);
    fsm.paused(false);
    queue.attempt_begins();
    w.attempt_begins();
    fsm.attempted(taken, false);
    const auto stamp = queue.clean_up_sent(fsm.attempt_number(), t0);
    BOOST_TEST((fsm.cleaned_up(false, false, t0).step == step::pause));
    w.on(waiter_event::turn_wait_begins);
    // Another waiter's message passes it by; a hand-off by one node of three is not a quorum.
    BOOST_TEST(line.released("k", "n:other", 0) == nullptr);
    BOOST_TEST(line.released("k", "h:" + std::to_string(*stamp) + ":me", 0) == nullptr);
    BOOST_TEST(!queue.handed_over());
    // Its own name wakes it: its attempt follows at once.
    BOOST_TEST(line.released("k", "n:me", 1) == &w);
    BOOST_TEST((w.state() == waiter_state::woken_as_head));
    w.on(waiter_event::pause_ends);
    BOOST_TEST((fsm.paused(false).step == step::attempt));
    // A second node's hand-off, late: it counts, but that attempt unmarked the entry first.
    queue.attempt_begins();
    w.attempt_begins();
    BOOST_TEST(line.released("k", "h:" + std::to_string(*stamp) + ":me", 2) == nullptr);
    BOOST_TEST(!queue.handed_over());
    line.leave("k", w);
}

BOOST_AUTO_TEST_CASE(only_a_quorum_of_hand_offs_with_the_last_clean_ups_stamp_hands_over)
{
    hand_off_tally hand_offs;
    fair_queue_fsm q(queue_rules(), hand_offs);
    // No ticket yet: its entry is no committed head, and no clean-up marks it.
    BOOST_TEST(!q.clean_up_sent(1, t0));
    BOOST_TEST(q.join_first());
    auto outcomes = proposals({2, 2, 0});
    BOOST_TEST(q.joined(outcomes));
    q.attempt_begins();
    BOOST_TEST((q.clean_up_sent(1, t0) == std::optional<std::uint64_t>(1)));
    BOOST_TEST(!hand_offs.heard(0, 1));
    // The next attempt unmarks the entry: what node 1 says of stamp 1 no longer counts.
    q.attempt_begins();
    BOOST_TEST(!hand_offs.heard(1, 1));
    BOOST_TEST(!q.handed_over());
    const auto sent = t0 + 3s;
    BOOST_TEST((q.clean_up_sent(2, sent) == std::optional<std::uint64_t>(2)));
    // A stale stamp (its clean-up may have deleted that key) is ignored.
    BOOST_TEST(!hand_offs.heard(0, 1));
    BOOST_TEST(!hand_offs.heard(0, 2));
    BOOST_TEST(hand_offs.heard(2, 2));
    BOOST_TEST(q.handed_over());
    BOOST_TEST((q.handed_by() == std::vector<bool>{true, false, true}));
    // Its validity counts from the clean-up's sending, for the entry's life.
    const hand_off_validity v = q.handed_validity(0.01);
    BOOST_TEST((v.start == sent));
    BOOST_TEST((v.until == valid_until(sent, timing.entry_ttl, 0.01)));
}

BOOST_AUTO_TEST_CASE(a_fenced_or_replicated_waiter_is_never_marked_for_hand_offs)
{
    hand_off_tally hand_offs;
    fair_queue_fsm q(queue_rules(true, false), hand_offs);
    q.join_first();
    auto outcomes = proposals({2, 2, 2});
    q.joined(outcomes);
    q.attempt_begins();
    BOOST_TEST(!q.clean_up_sent(1, t0));
    BOOST_TEST(!hand_offs.heard(0, 1));
    BOOST_TEST(!q.handed_over());
}

BOOST_AUTO_TEST_CASE(a_waiter_handed_the_key_by_a_quorum_holds_it_without_an_attempt)
{
    queued_acquire a(3);
    a.behind_the_holder();
    BOOST_TEST((a.fsm.handed_over(true, false).step == step::grant));
    BOOST_TEST(a.fsm.attempt_number() == 1);
    // No validity left (it waited past its entry's life): it attempts, keeping the keys.
    queued_acquire late(3);
    late.behind_the_holder();
    BOOST_TEST((late.fsm.handed_over(false, false).step == step::attempt));
    BOOST_TEST(late.fsm.attempt_number() == 2);
}

BOOST_AUTO_TEST_CASE(a_cancelled_waiter_leaves_the_queue_at_once)
{
    // While it waits for its turn.
    queued_acquire waiting(3);
    waiting.behind_the_holder();
    BOOST_TEST((waiting.fsm.paused(true).step == step::leave));
    BOOST_TEST((waiting.fsm.left().ec == asio::error::operation_aborted));
    // During its join.
    queued_acquire joining(3);
    joining.fsm.start(false);
    BOOST_TEST((joining.join({1, 1, 1}, true).step == step::leave));
    BOOST_TEST((joining.fsm.left().ec == asio::error::operation_aborted));
    // Handed the key meanwhile: leaving deletes the keys handed to it.
    queued_acquire handed(3);
    handed.behind_the_holder();
    BOOST_TEST((handed.fsm.handed_over(true, true).step == step::leave));
    BOOST_TEST((handed.fsm.left().ec == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(giving_up_leaves_the_queue_once_before_completing)
{
    queued_acquire a(2);
    a.behind_the_holder();
    a.fsm.paused(false);
    // Out of tries: it leaves, then completes with what the last attempt found.
    BOOST_TEST((a.fail(taken).step == step::leave));
    const auto done = a.fsm.left();
    BOOST_TEST((done.step == step::complete));
    BOOST_TEST((done.ec == redlock::error::taken));
    // The entries are gone: nothing more to leave.
    BOOST_TEST(!a.queue.leaves());
}

BOOST_AUTO_TEST_CASE(try_acquire_makes_one_attempt_without_joining)
{
    queued_acquire a(1, clock::time_point::max(), queue_rules(false));
    const auto first = a.fsm.start(false);
    BOOST_TEST((first.step == step::attempt));
    BOOST_TEST(!first.watch_releases);
    const auto done = a.fail(taken);
    BOOST_TEST((done.step == step::complete));  // nothing to leave
    BOOST_TEST((done.ec == redlock::error::taken));
    BOOST_TEST(!a.queue.ticket());
}

BOOST_AUTO_TEST_SUITE_END()
