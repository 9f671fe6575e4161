// SPDX-License-Identifier: BSL-1.0
#include "lock/waiters.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

using namespace redlock::detail;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// Three acquires waiting on "k", each with a retry pause that only a wake-up ends early.
struct three_waiters
{
    asio::io_context io;
    std::vector<asio::steady_timer> timers;
    std::vector<waiter> waiters;
    std::vector<int> woken;  // indices, in the order their pauses ended
    waiter_queue queue;
    // The nodes whose writes a hand-off holds: none here, the hold is only passed around.
    const std::vector<std::shared_ptr<node_link>> no_nodes;

    three_waiters()
    {
        timers.reserve(3);
        waiters.reserve(3);
        for (int i = 0; i < 3; ++i) {
            timers.emplace_back(io, 1h);
            waiters.emplace_back(timers.back());
            queue.enter("k", waiters.back());
        }
    }
    void pause_all()
    {
        for (std::size_t i = 0; i < 3; ++i) {
            pause(i);
        }
    }
    void pause(std::size_t i)
    {
        waiters[i].pausing = true;
        timers[i].expires_after(1h);
        timers[i].async_wait([this, i](boost::system::error_code ec) {
            BOOST_TEST(ec == asio::error::operation_aborted);
            woken.push_back(static_cast<int>(i));
        });
    }
    // Waiter i attempted (using its wake-up and any writes held for it), got the lock, and
    // left the line.
    void took_the_lock(std::size_t i)
    {
        waiters[i].woken = false;
        waiters[i].held_writes.end();
        BOOST_TEST(!queue.leave("k", waiters[i]));
    }
    std::vector<int> run()
    {
        io.poll();
        io.restart();
        return std::exchange(woken, {});
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(waiter_queue_rules)

BOOST_FIXTURE_TEST_CASE(a_hand_off_wakes_only_the_longest_waiting, three_waiters)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[0]);
    BOOST_TEST(!waiters[0].pausing);
    BOOST_TEST(run() == std::vector<int>{0});
    // The next hand-off goes to the next in line, while the first is still attempting.
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
}

BOOST_FIXTURE_TEST_CASE(a_waiter_that_leaves_gives_its_turn_to_the_next, three_waiters)
{
    pause_all();
    queue.leave("k", waiters[0]);
    BOOST_TEST(queue.waiting("k") == 2u);
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
}

BOOST_FIXTURE_TEST_CASE(a_woken_waiter_that_leaves_without_attempting_passes_its_turn,
                        three_waiters)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    // Its caller cancelled before it could attempt: the next in line gets the release.
    queue.leave("k", waiters[0]);
    BOOST_TEST(run() == std::vector<int>{1});
    // Waiter 1 attempts (its wake-up is used), then leaves: nobody else is woken.
    took_the_lock(1);
    BOOST_TEST(run().empty());
}

BOOST_FIXTURE_TEST_CASE(a_node_release_wakes_one_when_nobody_attempts, three_waiters)
{
    pause_all();
    BOOST_TEST(queue.released("k", "theirs") == &waiters[0]);
    // The same release reported by the other nodes: the client has its contender already.
    for (int node = 1; node < 5; ++node) {
        BOOST_TEST(queue.released("k", "theirs") == nullptr);
    }
    BOOST_TEST(run() == std::vector<int>{0});
    // Some of them after the woken waiter took the lock and left: still nobody else woken.
    took_the_lock(0);
    BOOST_TEST(queue.released("k", "theirs") == nullptr);
    BOOST_TEST(run().empty());
    BOOST_TEST(!waiters[1].missed);
    BOOST_TEST(!waiters[2].missed);
    // A release by another owner is a new one.
    BOOST_TEST(queue.released("k", "later") == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
}

// Other clients hear of a release together: the attempt it prompts is spread (see
// release_wake_spread); a hand-off within the client is not.
BOOST_FIXTURE_TEST_CASE(only_a_wake_up_by_another_owners_release_is_spread, three_waiters)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == &waiters[0]);
    BOOST_TEST(!waiters[0].by_release_message);
    BOOST_TEST(run() == std::vector<int>{0});
    took_the_lock(0);
    BOOST_TEST(queue.released("k", "theirs") == &waiters[1]);
    BOOST_TEST(waiters[1].by_release_message);
    BOOST_TEST(run() == std::vector<int>{1});
    // Waiter 1 leaves before its attempt: the next in line takes its turn, spread as well.
    queue.leave("k", waiters[1]);
    BOOST_TEST(run() == std::vector<int>{2});
    BOOST_TEST(waiters[2].by_release_message);
    // A later wake-up by a hand-off is not spread, whatever woke the waiter before.
    waiters[2].woken = false;
    pause(2);
    BOOST_TEST(queue.hand_off("k", "mine again", nullptr) == &waiters[2]);
    BOOST_TEST(!waiters[2].by_release_message);
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

BOOST_FIXTURE_TEST_CASE(the_nodes_messages_of_a_handed_off_release_are_ignored, three_waiters)
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

BOOST_FIXTURE_TEST_CASE(a_late_message_of_an_earlier_hand_off_is_still_ignored, three_waiters)
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

BOOST_FIXTURE_TEST_CASE(a_release_without_a_waiter_to_take_it_is_not_remembered, three_waiters)
{
    // Nobody pausing: the hand-off wakes nobody, so the nodes' messages count as usual.
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == nullptr);
    BOOST_TEST(queue.released("k", "mine") == nullptr);
    BOOST_TEST(waiters[0].missed);
}

BOOST_FIXTURE_TEST_CASE(a_release_during_an_attempt_is_noted_not_lost, three_waiters)
{
    pause(1);
    pause(2);
    // Waiter 0 is attempting: it is the one that notes the release; nobody else is woken.
    BOOST_TEST(queue.released("k", "theirs") == nullptr);
    BOOST_TEST(waiters[0].missed);
    BOOST_TEST(run().empty());
}

BOOST_FIXTURE_TEST_CASE(nothing_happens_for_other_keys_or_an_empty_queue, three_waiters)
{
    pause_all();
    BOOST_TEST(queue.hand_off("other", "mine", nullptr) == nullptr);
    BOOST_TEST(queue.released("other", "theirs") == nullptr);
    for (auto& w : waiters) {
        queue.leave("k", w);
    }
    BOOST_TEST(queue.waiting("k") == 0u);
    BOOST_TEST(queue.hand_off("k", "mine", nullptr) == nullptr);
    BOOST_TEST(run().empty());
    for (auto& t : timers) {
        t.cancel();
    }
    BOOST_TEST(run().size() == 3u);
}

BOOST_FIXTURE_TEST_CASE(a_hand_off_can_hold_the_writes_for_the_woken_waiter, three_waiters)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", &no_nodes) == &waiters[0]);
    BOOST_TEST(static_cast<bool>(waiters[0].held_writes));
    BOOST_TEST(waiters[0].handed_value == "mine");
    BOOST_TEST(!static_cast<bool>(waiters[1].held_writes));
    BOOST_TEST(!static_cast<bool>(waiters[2].held_writes));
    BOOST_TEST(run() == std::vector<int>{0});
    took_the_lock(0);
    // Without holding: the woken waiter has nothing to resume.
    BOOST_TEST(queue.hand_off("k", "again", nullptr) == &waiters[1]);
    BOOST_TEST(!static_cast<bool>(waiters[1].held_writes));
}

BOOST_FIXTURE_TEST_CASE(held_writes_pass_with_the_turn_of_a_waiter_that_leaves, three_waiters)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", &no_nodes) == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    // Cancelled before its attempt: the next in line is woken and resumes the writes.
    BOOST_TEST(!queue.leave("k", waiters[0]));
    BOOST_TEST(!static_cast<bool>(waiters[0].held_writes));
    BOOST_TEST(run() == std::vector<int>{1});
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

BOOST_FIXTURE_TEST_CASE(a_woken_waiter_whose_attempt_failed_to_start_still_resumes, three_waiters)
{
    pause_all();
    BOOST_TEST(queue.hand_off("k", "mine", &no_nodes) == &waiters[0]);
    BOOST_TEST(run() == std::vector<int>{0});
    // Its wake-up was used, but it left before its attempt's requests were queued: the
    // release was not taken, so the turn and the writes pass on as if it had not attempted.
    waiters[0].woken = false;
    BOOST_TEST(!queue.leave("k", waiters[0]));
    BOOST_TEST(run() == std::vector<int>{1});
    BOOST_TEST(static_cast<bool>(waiters[1].held_writes));
}

BOOST_AUTO_TEST_CASE(a_waiter_of_several_keys_is_woken_by_any_of_them)
{
    asio::io_context io;
    asio::steady_timer t(io, 1h);
    waiter w(t);
    waiter_queue queue;
    queue.enter("a", w);
    queue.enter("b", w);
    w.pausing = true;
    bool woken = false;
    t.async_wait([&](boost::system::error_code) { woken = true; });
    BOOST_TEST(queue.hand_off("b", "mine", nullptr) == &w);
    io.poll();
    BOOST_TEST(woken);
    // Attempting now: a release of "a" is noted on it.
    BOOST_TEST(queue.released("a", "theirs") == nullptr);
    BOOST_TEST(w.missed);
}

BOOST_FIXTURE_TEST_CASE(a_long_run_of_hand_offs_ends_in_a_yield, three_waiters)
{
    using namespace std::chrono_literals;
    const auto t0 = std::chrono::steady_clock::now();
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
    // wait under way ended only because of the move.
    BOOST_TEST(waiters[1].rescheduled);
    BOOST_TEST((timers[1].expiry() == t0 + 300ms + yield_courtesy));
    BOOST_TEST(!waiters[2].rescheduled);
    BOOST_TEST(run() == std::vector<int>{1});
    BOOST_TEST(waiters[1].pausing);
    // Its own release's messages do not wake this client's waiters.
    BOOST_TEST(queue.released("k", "v2") == nullptr);
    // Another owner's release does, and ends the yield.
    waiters[1].rescheduled = false;
    pause(1);
    BOOST_TEST(queue.released("k", "theirs") == &waiters[1]);
    BOOST_TEST(run() == std::vector<int>{1});
    BOOST_TEST(!queue.ours({"k"}));
}

BOOST_FIXTURE_TEST_CASE(a_run_counts_from_the_grant_and_restarts_with_the_next_one, three_waiters)
{
    using namespace std::chrono_literals;
    const auto t0 = std::chrono::steady_clock::now();
    pause_all();
    queue.granted({"k"}, t0);
    BOOST_TEST(queue.hand_off("k", "v1", nullptr, t0 + 300ms, 250ms) == nullptr);  // yields
    run();
    // Another client held it meanwhile; this client's next grant starts a new run.
    BOOST_TEST(queue.released("k", "theirs") != nullptr);
    run();
    queue.granted({"k"}, t0 + 400ms);
    BOOST_TEST(queue.hand_off("k", "v2", nullptr, t0 + 500ms, 250ms) != nullptr);
}

BOOST_AUTO_TEST_SUITE_END()
