// SPDX-License-Identifier: BSL-1.0
#include "lock/waiters.hpp"

#include "print_waiter_state.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

using namespace redlock::detail;
namespace asio = boost::asio;
using namespace std::chrono_literals;
using state = waiter_state;

namespace {

// Three acquires in the line of "k", in that order, each playing its coroutine's part as
// acquire.cpp does: a retry pause of an hour that only a wake-up ends early, and attempts.
// They want a lock whose releases let in what `Rule` says.
template <wake_rule Rule>
struct line_of_three_wanting
{
    asio::io_context io;
    std::vector<asio::steady_timer> timers;
    std::vector<waiter> waiters;
    std::vector<int> woken;  // indices, in the order their pauses ended
    waiter_queue queue;
    // The nodes whose writes a hand-off holds: none here, the hold is only passed around.
    const std::vector<std::shared_ptr<node_link>> no_nodes;
    // When the client got the key, for the bound on hand-offs: far enough ahead that a pause
    // a yield moves to end soon still ends long after the test.
    const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now() + 10min;

    line_of_three_wanting()
    {
        timers.reserve(3);
        waiters.reserve(3);
        for (int i = 0; i < 3; ++i) {
            timers.emplace_back(io, 1h);
            waiters.emplace_back(timers.back(), Rule);
            queue.enter("k", waiters.back());
        }
    }
    void pause_all()
    {
        for (std::size_t i = 0; i < 3; ++i) {
            pause(i);
        }
    }
    // Waiter i's attempt failed: it begins its pause.
    void pause(std::size_t i)
    {
        waiters[i].on(waiter_event::pause_begins);
        BOOST_TEST_REQUIRE(waiters[i].state() == state::pausing);
        timers[i].expires_after(1h);
        wait(i);
    }
    void wait(std::size_t i)
    {
        timers[i].async_wait([this, i](boost::system::error_code ec) {
            BOOST_TEST(ec == asio::error::operation_aborted);
            waiters[i].on(waiter_event::pause_ends);
            if (waiters[i].state() == state::pausing) {
                wait(i);  // its end was moved: it waits on
            } else {
                woken.push_back(static_cast<int>(i));
            }
        });
    }
    // Waiter i's attempt is queued, with any writes held for it, which its round then ends.
    void attempt(std::size_t i) { waiters[i].attempt_begins().end(); }
    // Waiter i attempted, got the lock, and left the line.
    void took_the_lock(std::size_t i)
    {
        attempt(i);
        BOOST_TEST(!queue.leave("k", waiters[i]));
    }
    state state_of(std::size_t i) const { return waiters[i].state(); }
    std::vector<int> run()
    {
        io.poll();
        io.restart();
        return std::exchange(woken, {});
    }
};

using line_of_three = line_of_three_wanting<wake_rule::one_owner>;
using readers_line = line_of_three_wanting<wake_rule::shared>;
using permits_line = line_of_three_wanting<wake_rule::one_permit>;

}  // namespace

BOOST_AUTO_TEST_SUITE(hand_off_rule)

BOOST_FIXTURE_TEST_CASE(a_hand_off_wakes_only_the_longest_waiting_pausing_waiter, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[0]);
    BOOST_TEST(state_of(0) == state::woken_by_hand_off);
    BOOST_TEST(state_of(1) == state::pausing);
    BOOST_TEST(state_of(2) == state::pausing);
    BOOST_TEST(run() == std::vector<int>{0});
    // The next hand-off goes to the next in line, while the first is still attempting.
    attempt(0);
    BOOST_TEST(queue.hand_off("k", "mine 2", nullptr) == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
    // Nobody left pausing but the last.
    attempt(1);
    BOOST_TEST(queue.hand_off("k", "mine 3", nullptr) == &waiters[2]);
    BOOST_TEST(queue.hand_off("k", "mine 4", nullptr) == nullptr);
}

BOOST_FIXTURE_TEST_CASE(a_hand_off_passes_over_a_waiter_that_is_attempting, line_of_three)
{
    pause(1);
    pause(2);
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[1]);
    BOOST_TEST(state_of(0) == state::attempting);
    BOOST_TEST(run() == std::vector<int>{1});
}

BOOST_FIXTURE_TEST_CASE(a_waiter_that_leaves_while_pausing_gives_up_its_place, line_of_three)
{
    pause_all();
    BOOST_TEST(!queue.leave("k", waiters[0]));
    BOOST_TEST(run().empty());  // nobody is woken in its place
    BOOST_TEST(queue.waiting("k") == 2u);
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
}

BOOST_FIXTURE_TEST_CASE(a_hand_off_can_hold_the_writes_for_the_woken_waiter, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", &no_nodes) == &waiters[0]);
    BOOST_TEST(static_cast<bool>(waiters[0].held_writes));
    BOOST_TEST(waiters[0].handed_value == "mine");
    BOOST_TEST(!static_cast<bool>(waiters[1].held_writes));
    BOOST_TEST(!static_cast<bool>(waiters[2].held_writes));
    BOOST_TEST(run() == std::vector<int>{0});
    // Its attempt takes the hold, to end it once queued.
    write_hold hold = waiters[0].attempt_begins();
    BOOST_TEST(static_cast<bool>(hold));
    BOOST_TEST(!static_cast<bool>(waiters[0].held_writes));
    BOOST_TEST(waiters[0].handed_value.empty());
    hold.end();
    // Having attempted, it leaves without passing anything on.
    BOOST_TEST(!queue.leave("k", waiters[0]));
    BOOST_TEST(run().empty());
    // Without holding: the woken waiter has nothing to take.
    BOOST_TEST(queue.hand_off("k", "again", nullptr) == &waiters[1]);
    BOOST_TEST(!static_cast<bool>(waiters[1].held_writes));
}

BOOST_FIXTURE_TEST_CASE(held_writes_pass_with_the_turn_of_a_waiter_that_leaves, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", &no_nodes) == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    // Cancelled before its attempt: the next in line is woken by the same hand-off and
    // resumes the writes.
    BOOST_TEST(!queue.leave("k", waiters[0]));
    BOOST_TEST(!static_cast<bool>(waiters[0].held_writes));
    BOOST_TEST(run() == std::vector<int>{1});
    BOOST_TEST(state_of(1) == state::woken_by_hand_off);
    BOOST_TEST(static_cast<bool>(waiters[1].held_writes));
    BOOST_TEST(waiters[1].handed_value == "mine");
    // It leaves too, and so does the last: nobody is left to take the turn, so the caller
    // of the last leave must resume the writes and announce the release.
    BOOST_TEST(!queue.leave("k", waiters[1]));
    BOOST_TEST(run() == std::vector<int>{2});
    BOOST_TEST(static_cast<bool>(waiters[2].held_writes));
    BOOST_TEST(queue.leave("k", waiters[2]));
    // It keeps the hold: the caller announces the release, then ends it.
    BOOST_TEST(static_cast<bool>(waiters[2].held_writes));
    BOOST_TEST(waiters[2].handed_value == "mine");
    BOOST_TEST(queue.waiting("k") == 0u);
}

BOOST_FIXTURE_TEST_CASE(held_writes_that_nobody_pausing_can_take_stay_with_the_caller,
                        line_of_three)
{
    pause(0);
    BOOST_TEST(queue.hand_off("k", "mine", &no_nodes) == &waiters[0]);
    // Waiters 1 and 2 are attempting: there is no pausing waiter to hand the turn to.
    BOOST_TEST(queue.leave("k", waiters[0]));
    BOOST_TEST(static_cast<bool>(waiters[0].held_writes));
    BOOST_TEST(state_of(1) == state::attempting);
    BOOST_TEST(state_of(2) == state::attempting);
    waiters[0].held_writes.end();
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(yield_rule)

BOOST_FIXTURE_TEST_CASE(hand_offs_within_the_longest_run_go_on, line_of_three)
{
    const auto max_run = longest_run(1000ms);
    BOOST_TEST((max_run == 250ms));
    pause_all();
    queue.granted({"k"}, t0);
    BOOST_TEST(queue.ours({"k"}));
    BOOST_TEST(queue.hand_off("k", "v1", nullptr, t0 + 100ms, max_run) == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    took_the_lock(0);
    queue.granted({"k"}, t0 + 110ms);  // the same run: it started at t0
    BOOST_TEST(queue.hand_off("k", "v2", nullptr, t0 + 240ms, max_run) == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
}

BOOST_FIXTURE_TEST_CASE(a_long_run_of_hand_offs_ends_in_a_yield, line_of_three)
{
    pause_all();
    // The client got the key at t0 and hands it on within the run's bound.
    queue.granted({"k"}, t0);
    BOOST_TEST(queue.hand_off("k", "v1", nullptr, t0 + 100ms, 250ms) == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    took_the_lock(0);
    // Past the bound: nobody of this client is woken, and the client yields the key.
    BOOST_TEST(queue.hand_off("k", "v2", nullptr, t0 + 300ms, 250ms) == nullptr);
    BOOST_TEST(queue.ours({"k"}));  // new acquires of this client join the line
    // The longest-waiting waiter's pause now ends after the courtesy, not in an hour; the
    // wait under way ended only because of the move, so it waits on.
    BOOST_TEST(state_of(1) == state::pause_moved);
    BOOST_TEST((timers[1].expiry() == t0 + 300ms + yield_courtesy));
    BOOST_TEST(state_of(2) == state::pausing);
    BOOST_TEST(run().empty());
    BOOST_TEST(state_of(1) == state::pausing);
    // Its own release's messages do not wake this client's waiters.
    BOOST_TEST(queue.released("k", "v2") == nullptr);
    BOOST_TEST(run().empty());
    // Another owner's release does, and ends the yield.
    BOOST_TEST(queue.released("k", "theirs") == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
    BOOST_TEST(state_of(1) == state::woken_by_release_message);
    BOOST_TEST(!queue.ours({"k"}));
}

BOOST_FIXTURE_TEST_CASE(a_yield_does_not_delay_a_pause_that_ends_sooner, line_of_three)
{
    // Waiter 0 is attempting, waiter 1's pause ends before the courtesy would.
    waiters[1].on(waiter_event::pause_begins);
    timers[1].expires_at(t0 + 1ms);
    pause(2);
    queue.granted({"k"}, t0);
    BOOST_TEST(queue.hand_off("k", "v", nullptr, t0 + 300ms, 250ms) == nullptr);
    BOOST_TEST(state_of(1) == state::pausing);
    BOOST_TEST((timers[1].expiry() == t0 + 1ms));
    // Only the longest-waiting pausing waiter's pause is considered.
    BOOST_TEST(state_of(2) == state::pausing);
    BOOST_TEST((timers[2].expiry() > t0 + 1min));
}

BOOST_FIXTURE_TEST_CASE(a_run_counts_from_the_grant_and_restarts_with_the_next_one, line_of_three)
{
    pause_all();
    queue.granted({"k"}, t0);
    BOOST_TEST(queue.hand_off("k", "v1", nullptr, t0 + 300ms, 250ms) == nullptr);  // yields
    run();
    // Another client held it meanwhile; this client's next grant starts a new run.
    BOOST_TEST(queue.released("k", "theirs") == &waiters[0]);
    run();
    queue.granted({"k"}, t0 + 400ms);
    BOOST_TEST(queue.hand_off("k", "v2", nullptr, t0 + 500ms, 250ms) == &waiters[1]);
}

BOOST_FIXTURE_TEST_CASE(the_key_is_ours_only_while_the_client_holds_or_yields_it, line_of_three)
{
    BOOST_TEST(!queue.ours({"k"}));
    BOOST_TEST(!queue.ours({"other"}));
    queue.granted({"k"}, {});
    BOOST_TEST(queue.ours({"other", "k"}));
    // A failed attempt says another owner holds it after all (an expired lock of ours).
    queue.attempt_failed({"k"});
    BOOST_TEST(!queue.ours({"k"}));
    // A hand-off to nobody leaves the key free.
    queue.granted({"k"}, {});
    BOOST_TEST(queue.hand_off("k", "v", nullptr) == nullptr);
    BOOST_TEST(!queue.ours({"k"}));
    // A yield keeps it until a release is seen, whatever attempts fail meanwhile.
    queue.granted({"k"}, t0);
    BOOST_TEST(queue.hand_off("k", "v2", nullptr, t0 + 1s, 250ms) == nullptr);
    queue.attempt_failed({"k"});
    BOOST_TEST(queue.ours({"k"}));
    BOOST_TEST(queue.released("k", "theirs") == nullptr);  // nobody pausing: all attempt
    BOOST_TEST(!queue.ours({"k"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(wake_up_rule)

BOOST_FIXTURE_TEST_CASE(a_release_message_wakes_one_waiter_per_client, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.released("k", "theirs") == &waiters[0]);
    BOOST_TEST(state_of(0) == state::woken_by_release_message);
    // The same release reported by the other nodes: the client has its contender already.
    for (int node = 1; node < 5; ++node) {
        BOOST_TEST(queue.released("k", "theirs") == nullptr);
    }
    BOOST_TEST(run() == std::vector<int>{0});
    // Some of them after the woken waiter took the lock and left: still nobody else woken.
    took_the_lock(0);
    BOOST_TEST(queue.released("k", "theirs") == nullptr);
    BOOST_TEST(run().empty());
    BOOST_TEST(state_of(1) == state::pausing);
    BOOST_TEST(state_of(2) == state::pausing);
    // A release by another owner is a new one.
    BOOST_TEST(queue.released("k", "later") == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
}

BOOST_FIXTURE_TEST_CASE(the_nodes_messages_of_a_handed_off_release_are_ignored, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    // The first waiter took the lock and left before every node's message came in.
    took_the_lock(0);
    for (int node = 0; node < 5; ++node) {
        BOOST_TEST(queue.released("k", "mine") == nullptr);
    }
    BOOST_TEST(run().empty());
    // Another owner's release still wakes the next in line.
    BOOST_TEST(queue.released("k", "theirs") == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
}

BOOST_FIXTURE_TEST_CASE(a_late_message_of_an_earlier_hand_off_is_still_ignored, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "first", nullptr) == &waiters[0]);
    BOOST_TEST(queue.hand_off("k", "second", nullptr) == &waiters[1]);
    BOOST_TEST(run() == (std::vector<int>{0, 1}));
    took_the_lock(0);
    took_the_lock(1);
    // A node that fell behind reports the first release only now.
    BOOST_TEST(queue.released("k", "first") == nullptr);
    BOOST_TEST(run().empty());
}

BOOST_FIXTURE_TEST_CASE(a_release_without_a_waiter_to_take_it_is_not_remembered, line_of_three)
{
    // Nobody pausing: the hand-off wakes nobody, so the nodes' messages count as usual.
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == nullptr);
    BOOST_TEST(queue.released("k", "mine") == nullptr);
    BOOST_TEST(state_of(0) == state::missed_release);
}

BOOST_FIXTURE_TEST_CASE(a_release_during_an_attempt_skips_one_pause, line_of_three)
{
    pause(1);
    pause(2);
    // Waiter 0 is attempting: it is the one that sees the release; nobody else is woken.
    BOOST_TEST(queue.released("k", "theirs") == nullptr);
    BOOST_TEST(state_of(0) == state::missed_release);
    BOOST_TEST(run().empty());
    // Its attempt fails: it tries again at once instead of pausing, spread as a wake-up by
    // that message would be.
    waiters[0].on(waiter_event::pause_begins);
    BOOST_TEST(state_of(0) == state::retrying_at_once);
    BOOST_TEST(follows_release_message(state_of(0)));
    attempt(0);
    // The release was answered: its other nodes' messages wake nobody.
    BOOST_TEST(queue.released("k", "theirs") == nullptr);
    // Another release during that attempt is seen too, but the next pause is not skipped.
    BOOST_TEST(queue.released("k", "again") == nullptr);
    BOOST_TEST(run().empty());
    pause(0);
    BOOST_TEST(state_of(0) == state::pausing);
}

// The nodes run a release one after another, and the first node's message may wake a waiter
// whose attempt reaches another node before the release does there.
BOOST_FIXTURE_TEST_CASE(a_later_nodes_message_of_its_release_is_seen_by_the_woken_attempt,
                        line_of_three)
{
    pause_all();
    BOOST_TEST(queue.released("k", "theirs") == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    attempt(0);
    BOOST_TEST(queue.released("k", "theirs") == nullptr);  // no second waiter woken
    BOOST_TEST(state_of(0) == state::missed_release);
    waiters[0].on(waiter_event::pause_begins);  // refused where the release came later
    BOOST_TEST(state_of(0) == state::retrying_at_once);
    BOOST_TEST(state_of(1) == state::pausing);
    BOOST_TEST(state_of(2) == state::pausing);
}

BOOST_FIXTURE_TEST_CASE(a_later_nodes_message_wakes_again_the_waiter_refused_before_it,
                        line_of_three)
{
    pause_all();
    BOOST_TEST(queue.released("k", "theirs") == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    attempt(0);
    pause(0);  // its attempt failed before the other nodes' messages came
    BOOST_TEST(queue.released("k", "theirs") == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    BOOST_TEST(state_of(1) == state::pausing);
    BOOST_TEST(state_of(2) == state::pausing);
    // Once it got the lock and left, the release's last messages wake nobody.
    took_the_lock(0);
    BOOST_TEST(queue.released("k", "theirs") == nullptr);
    BOOST_TEST(run().empty());
}

BOOST_FIXTURE_TEST_CASE(the_messages_of_a_yield_are_not_seen_by_the_clients_attempts, line_of_three)
{
    pause(1);
    pause(2);
    // Waiter 0 attempts (it joined while the client held the key); the client yields.
    queue.granted({"k"}, t0);
    BOOST_TEST(queue.hand_off("k", "mine", nullptr, t0 + 300ms, 250ms) == nullptr);
    // The nodes' messages of that release leave the head start to other clients.
    for (int node = 0; node < 3; ++node) {
        BOOST_TEST(queue.released("k", "mine") == nullptr);
    }
    BOOST_TEST(state_of(0) == state::attempting);
    timers[1].cancel();
    timers[2].cancel();
    run();
}

BOOST_FIXTURE_TEST_CASE(a_release_before_a_woken_waiter_attempts_is_not_missed, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[0]);
    // Another owner's release before waiter 0's attempt: the attempt comes after it anyway.
    BOOST_TEST(queue.released("k", "theirs") == nullptr);
    BOOST_TEST(state_of(0) == state::woken_by_hand_off);
    BOOST_TEST(run() == std::vector<int>{0});
    attempt(0);
    BOOST_TEST(state_of(0) == state::attempting);
    pause(0);  // a failed attempt pauses as usual
}

// Other clients hear of a release together: the attempt it prompts is spread (see
// release_wake_spread); a hand-off within the client is not.
BOOST_FIXTURE_TEST_CASE(only_a_wake_up_by_a_release_message_is_spread, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    BOOST_TEST(!follows_release_message(state_of(0)));
    took_the_lock(0);
    BOOST_TEST(queue.released("k", "theirs") == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
    BOOST_TEST(follows_release_message(state_of(1)));
    // A later wake-up by a hand-off is not spread, whatever woke the waiter before.
    attempt(1);
    pause(1);
    BOOST_TEST(queue.hand_off("k", "mine again", nullptr) == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
    BOOST_TEST(!follows_release_message(state_of(1)));
}

// Two fair waiters of "k" (owner values "a" and "b") and a plain one, each waiting as
// acquire.cpp's coroutine does.
struct fair_line
{
    asio::io_context io;
    asio::steady_timer ta{io, 1h}, tb{io, 1h}, tp{io, 1h};
    waiter a{ta}, b{tb}, plain{tp};
    waiter_queue queue;
    std::vector<char> woken;

    fair_line()
    {
        queue.enter("k", a, "a");
        queue.enter("k", b, "b");
        queue.enter("k", plain);
        for (auto [w, name] : {std::pair{&a, 'a'}, std::pair{&b, 'b'}}) {
            w->on(waiter_event::turn_wait_begins);
            w->pause().async_wait([this, w = w, name = name](boost::system::error_code) {
                w->on(waiter_event::pause_ends);
                woken.push_back(name);
            });
        }
        plain.on(waiter_event::pause_begins);
    }
    std::vector<char> run()
    {
        io.poll();
        io.restart();
        return std::exchange(woken, {});
    }
};

BOOST_FIXTURE_TEST_CASE(a_message_naming_a_fair_waiter_wakes_it_alone, fair_line)
{
    BOOST_TEST(queue.waiting("k") == 3u);
    BOOST_TEST(queue.released("k", "n:b") == &b);
    BOOST_TEST(b.state() == state::woken_as_head);
    BOOST_TEST(a.state() == state::queued);
    BOOST_TEST(plain.state() == state::pausing);  // not a release of the plain waiter's
    BOOST_TEST(run() == std::vector<char>{'b'});
    // The other nodes' messages come later: noted, nobody else woken.
    BOOST_TEST(queue.released("k", "n:b") == &b);
    BOOST_TEST(b.state() == state::woken_as_head);
    BOOST_TEST(run().empty());
    // During its attempt: it will attempt again at once.
    b.attempt_begins();
    queue.released("k", "n:b");
    BOOST_TEST(b.state() == state::missed_release);
}

BOOST_FIXTURE_TEST_CASE(hand_offs_and_other_messages_pass_fair_waiters_by, fair_line)
{
    // Another owner's release wakes the plain waiter, never a fair one.
    BOOST_TEST(queue.released("k", "someone") == &plain);
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == nullptr);
    BOOST_TEST(a.state() == state::queued);
    BOOST_TEST(b.state() == state::queued);
    BOOST_TEST(run().empty());
    // A woken fair waiter that leaves passes no turn: the nodes tell the next head.
    queue.released("k", "n:a");
    BOOST_TEST(!queue.leave("k", a));
    BOOST_TEST(b.state() == state::queued);
    BOOST_TEST(queue.waiting("k") == 2u);
    ta.cancel();
    tb.cancel();
    run();
}

BOOST_FIXTURE_TEST_CASE(a_fair_waiter_is_woken_once_a_quorum_handed_it_the_key, fair_line)
{
    // Its clean-up after attempt 3, to 5 nodes of which 3 make the lock, marked its entry.
    b.hand_offs.expect(3, {}, 5, 3);
    BOOST_TEST(queue.released("k", "h:3:b", 0) == nullptr);
    BOOST_TEST(queue.released("k", "h:3:b", 0) == nullptr);  // the same node again
    BOOST_TEST(queue.released("k", "h:2:b", 1) == nullptr);  // undone by that clean-up
    BOOST_TEST(queue.released("k", "h:3:b", 2) == nullptr);
    BOOST_TEST(b.state() == state::queued);
    BOOST_TEST(run().empty());
    BOOST_TEST(queue.released("k", "h:3:b", 4) == &b);
    BOOST_TEST(b.state() == state::woken_as_head);
    BOOST_TEST(b.hand_offs.reached());
    BOOST_TEST((b.hand_offs.handed_by() == std::vector<bool>{true, false, true, false, true}));
    BOOST_TEST(a.state() == state::queued);
    BOOST_TEST(run() == std::vector<char>{'b'});
    BOOST_TEST(queue.released("k", "h:3:b", 3) == nullptr);  // late: already woken
    ta.cancel();
    run();
}

BOOST_FIXTURE_TEST_CASE(hand_offs_do_not_count_during_an_attempt, fair_line)
{
    b.hand_offs.expect(1, {}, 3, 2);
    BOOST_TEST(queue.released("k", "h:1:b", 0) == nullptr);
    tb.cancel();
    run();
    b.attempt_begins();
    b.hand_offs.stop();  // as acquire.cpp's attempt round does
    BOOST_TEST(queue.released("k", "h:1:b", 1) == nullptr);
    BOOST_TEST(!b.hand_offs.reached());
    BOOST_TEST(b.state() == state::attempting);
    // A node that names it meanwhile makes it attempt again at once.
    BOOST_TEST(queue.released("k", "n:b", 2) == &b);
    BOOST_TEST(b.state() == state::missed_release);
    ta.cancel();
    run();
}

BOOST_AUTO_TEST_CASE(the_spread_of_a_release_wake_up_is_random_and_bounded)
{
    std::vector<std::chrono::microseconds> seen;
    for (int i = 0; i < 200; ++i) {
        const auto d = random_release_wake_delay();
        BOOST_TEST(d.count() >= 0);
        BOOST_TEST(d <= release_wake_spread);
        seen.push_back(d);
    }
    std::sort(seen.begin(), seen.end());
    // Uniform over a thousand microseconds: 200 draws do not all fall in a tenth of it.
    BOOST_TEST((seen.back() - seen.front()) > release_wake_spread / 10);
}

BOOST_FIXTURE_TEST_CASE(a_woken_waiter_that_leaves_before_attempting_passes_its_turn, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.released("k", "theirs") == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    // Its caller cancelled before it could attempt: the next in line gets the release, woken
    // the same way (its attempt is spread as well).
    BOOST_TEST(!queue.leave("k", waiters[0]));
    BOOST_TEST(run() == std::vector<int>{1});
    BOOST_TEST(state_of(1) == state::woken_by_release_message);
    // Waiter 1 attempts (its wake-up is used), then leaves: nobody else is woken.
    took_the_lock(1);
    BOOST_TEST(run().empty());
    BOOST_TEST(state_of(2) == state::pausing);
}

BOOST_FIXTURE_TEST_CASE(a_woken_waiter_passes_a_hand_off_as_a_hand_off, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[0]);
    BOOST_TEST(!queue.leave("k", waiters[0]));
    BOOST_TEST(run() == (std::vector<int>{0, 1}));
    BOOST_TEST(state_of(1) == state::woken_by_hand_off);
}

BOOST_FIXTURE_TEST_CASE(nothing_happens_for_other_keys_or_an_empty_line, line_of_three)
{
    pause_all();
    BOOST_TEST(queue.hand_off("other", "mine", nullptr) == nullptr);
    BOOST_TEST(queue.released("other", "theirs") == nullptr);
    BOOST_TEST(!queue.leave("other", waiters[0]));
    for (auto& w : waiters) {
        queue.leave("k", w);
    }
    BOOST_TEST(queue.waiting("k") == 0u);
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == nullptr);
    BOOST_TEST(queue.released("k", "theirs") == nullptr);
    BOOST_TEST(run().empty());
    for (auto& t : timers) {
        t.cancel();
    }
    BOOST_TEST(run().size() == 3u);
}

BOOST_FIXTURE_TEST_CASE(a_release_message_wakes_every_pausing_reader, readers_line)
{
    pause(0);
    pause(2);
    // Waiter 1 is attempting: it sees the release, and the others are woken all the same.
    BOOST_TEST(queue.released("k", "writer") == &waiters[0]);
    BOOST_TEST(state_of(1) == state::missed_release);
    BOOST_TEST(run() == (std::vector<int>{0, 2}));
    BOOST_TEST(state_of(0) == state::woken_by_release_message);
    BOOST_TEST(state_of(2) == state::woken_by_release_message);
    // The other nodes' messages of the same release wake nobody new: only waiter 0 again,
    // whose attempt failed before they came (it reached a node before the release did).
    attempt(0);
    pause(0);
    waiters[1].on(waiter_event::pause_begins);  // it saw the release: it retries at once
    attempt(1);
    pause(1);
    BOOST_TEST(queue.released("k", "writer") == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    BOOST_TEST(state_of(1) == state::pausing);
    timers[1].cancel();
    run();
}

BOOST_FIXTURE_TEST_CASE(each_permit_released_wakes_one_more_waiter, permits_line)
{
    pause_all();
    BOOST_TEST(queue.released("k", "first holder") == &waiters[0]);
    // The same release from another node: no second permit.
    BOOST_TEST(queue.released("k", "first holder") == nullptr);
    BOOST_TEST(run() == std::vector<int>{0});
    // Another holder's release while waiter 0 is still on its way: one more waiter.
    BOOST_TEST(queue.released("k", "second holder") == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
    BOOST_TEST(state_of(0) == state::woken_by_release_message);
    BOOST_TEST(state_of(2) == state::pausing);
    // While an attempt that has heard of no release is under way, it takes the next permit.
    attempt(0);
    attempt(1);
    pause(1);
    BOOST_TEST(queue.released("k", "third holder") == nullptr);
    BOOST_TEST(state_of(0) == state::missed_release);
    BOOST_TEST(run().empty());
    timers[1].cancel();
    timers[2].cancel();
    run();
}

BOOST_FIXTURE_TEST_CASE(
    a_permit_whose_waiter_was_refused_before_a_later_node_released_it_is_not_lost, permits_line)
{
    pause_all();
    BOOST_TEST(queue.released("k", "first holder") == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    attempt(0);
    pause(0);
    // The other nodes' messages of that release: the same waiter again, not one more.
    BOOST_TEST(queue.released("k", "first holder") == &waiters[0]);
    BOOST_TEST(queue.released("k", "first holder") == nullptr);
    BOOST_TEST(run() == std::vector<int>{0});
    BOOST_TEST(state_of(1) == state::pausing);
    timers[1].cancel();
    timers[2].cancel();
    run();
}

BOOST_FIXTURE_TEST_CASE(a_new_acquire_waits_while_a_release_is_on_its_way_to_the_line, permits_line)
{
    pause_all();
    BOOST_TEST(!queue.taking_a_release({"k"}));
    BOOST_TEST(queue.released("k", "holder") == &waiters[0]);
    BOOST_TEST(queue.taking_a_release({"other", "k"}));
    BOOST_TEST(!queue.taking_a_release({"other"}));
    // Once the woken waiter's attempt begins, what the release freed is its to take or lose.
    run();
    attempt(0);
    BOOST_TEST(!queue.taking_a_release({"k"}));
}

BOOST_AUTO_TEST_CASE(a_message_that_named_the_client_wakes_its_waiter_without_the_spread)
{
    line_of_three_wanting<wake_rule::one_owner> l;
    l.pause_all();
    BOOST_TEST(l.queue.released("k", "v1", 0, true) == &l.waiters[0]);
    BOOST_TEST(l.waiters[0].woken_alone);
    l.attempt(0);
    BOOST_TEST(!l.waiters[0].woken_alone);  // until its attempt
    // A message on the key's own channel: other clients were told too.
    l.pause(0);
    BOOST_TEST(l.queue.released("k", "v2", 0, false) == &l.waiters[0]);
    BOOST_TEST(!l.waiters[0].woken_alone);
}

BOOST_AUTO_TEST_CASE(the_client_waits_since_its_first_waiter_and_again_after_its_real_release)
{
    line_of_three_wanting<wake_rule::one_owner> l;
    const std::uint64_t first = l.queue.since("k");
    BOOST_TEST(first > 0u);
    BOOST_TEST(l.queue.since("other") == 0u);
    // A hand-off to a waiter of the client keeps its place among the waiting clients.
    l.pause_all();
    BOOST_TEST(l.queue.hand_off("k", "v1", nullptr, l.t0) == &l.waiters[0]);
    BOOST_TEST(l.queue.since("k") == first);
    // A release that goes out for real (here a yield, after a run as long as the bound)
    // takes the client out of the registry: its waiters register again from then on.
    while (waiting_since_now() == first) {
        // the clock's next microsecond
    }
    BOOST_TEST(l.queue.hand_off("k", "v2", nullptr, l.t0, std::chrono::steady_clock::duration{}) ==
               nullptr);
    BOOST_TEST(l.queue.since("k") > first);
}

BOOST_AUTO_TEST_CASE(a_waiter_of_several_keys_is_woken_by_any_of_them)
{
    asio::io_context io;
    asio::steady_timer t(io, 1h);
    waiter w(t);
    waiter_queue queue;
    queue.enter("a", w);
    queue.enter("b", w);
    w.on(waiter_event::pause_begins);
    bool woken = false;
    t.async_wait([&](boost::system::error_code) { woken = true; });
    BOOST_TEST(queue.hand_off("b", "mine", nullptr) == &w);
    io.poll();
    BOOST_TEST(woken);
    // Not pausing now: a release of "a" reaches it, and wakes nobody.
    BOOST_TEST(queue.released("a", "theirs") == nullptr);
    BOOST_TEST(w.state() == state::woken_by_hand_off);
    w.attempt_begins();
    BOOST_TEST(queue.released("a", "later") == nullptr);
    BOOST_TEST(w.state() == state::missed_release);
}

BOOST_AUTO_TEST_SUITE_END()
