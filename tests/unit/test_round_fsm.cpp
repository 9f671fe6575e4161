// SPDX-License-Identifier: BSL-1.0
// The decisions of one Redlock round, without a server: when the caller stops waiting, why the
// nodes still pending were given up, the deadline, cancellation, WAIT's answers, skipped nodes
// and the requests left in the background.
#include "quorum/round_fsm.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

using namespace redlock::detail;
using namespace std::chrono_literals;
using redlock::node_errc;
using redlock::node_outcome;
using redlock::node_status;
using step = round_step;

namespace {

const auto t0 = clock::time_point{} + 1h;
const auto deadline = t0 + 100ms;

round_fsm make(std::size_t nodes, stop_rule rule, bool background = false, std::size_t quorum = 0)
{
    return round_fsm(nodes, quorum, rule, deadline, background);
}

// Asks `fsm` at `now` until it waits, completes or hands the loop to the background, as a
// driver would, and lists the steps it took, e.g. "give up 1, complete" ("time out 0" for a
// node timed out while the caller waits, "give up 4 at deadline" for one given up at the
// background's deadline). `background`, when given, is the client's count of background work,
// begun and ended as the steps say.
std::string drive(round_fsm& fsm, clock::time_point now, bool cancelled = false,
                  int* background = nullptr)
{
    std::string steps;
    for (int n = 0; n < 32; ++n) {
        const round_fsm::action a = fsm.next(now, cancelled);
        steps += steps.empty() ? "" : ", ";
        switch (a.step) {
            case step::wait:
                return steps + "wait";
            case step::time_out:
                steps += "time out " + std::to_string(a.node);
                break;
            case step::give_up:
                steps += "give up " + std::to_string(a.node) + (a.timed_out ? " at deadline" : "");
                break;
            case step::hand_over:
                steps += "hand over";
                break;
            case step::continue_in_background:
                if (background) {
                    ++*background;
                }
                return steps + "continue in background";
            case step::background_done:
                if (background) {
                    --*background;
                }
                steps += "background done";
                break;
            case step::complete:
                return steps + "complete";
        }
    }
    return steps + "...";
}

// The reason the first step, a hand-over, gives.
node_errc handed_over_for(round_fsm& fsm, clock::time_point now, bool cancelled = false)
{
    const round_fsm::action a = fsm.next(now, cancelled);
    BOOST_TEST((a.step == step::hand_over));
    return a.why;
}

resp::reply simple(std::string text)
{
    return resp::reply{
        .type = resp::kind::simple_string, .integer = 0, .text = std::move(text), .elements = {}};
}

resp::reply integer(std::int64_t n)
{
    return resp::reply{.type = resp::kind::integer, .integer = n, .text = {}, .elements = {}};
}

exec_result replied(resp::reply r)
{
    exec_result e;
    e.status = exec_result::outcome::replied;
    e.reply = std::move(r);
    return e;
}

// A SET NX reply followed by WAIT's count.
exec_result replied_with_wait(std::int64_t acknowledged)
{
    resp::reply both{.type = resp::kind::array, .integer = 0, .text = {}, .elements = {}};
    both.elements = {simple("OK"), integer(acknowledged)};
    return replied(std::move(both));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(round_decisions)

BOOST_AUTO_TEST_CASE(a_quorum_of_oks_ends_the_wait_and_the_rest_is_given_up)
{
    round_fsm fsm = make(3, stop_rule::quorum_reached);
    BOOST_TEST(drive(fsm, t0) == "wait");
    BOOST_TEST(!fsm.answered(0, node_status::ok));
    BOOST_TEST(fsm.answered(2, node_status::ok));
    BOOST_TEST(fsm.pending(1));
    BOOST_TEST((handed_over_for(fsm, t0) == node_errc::decided_by_quorum));
    BOOST_TEST(fsm.handed_over());
    // Given up without a time-out: its link must not count it against the server.
    BOOST_TEST(drive(fsm, t0) == "give up 1, complete");
    BOOST_TEST(!fsm.pending(1));
    BOOST_TEST(fsm.remaining() == 0u);
    // Its reply, if it still comes, is dropped.
    BOOST_TEST(!fsm.answered(1, node_status::ok));
    BOOST_TEST(fsm.seen().ok == 2u);
}

BOOST_AUTO_TEST_CASE(the_rule_says_whether_an_impossible_quorum_ends_the_wait)
{
    // fail_fast (and release, valid): the outcome is known once a quorum is out of reach.
    round_fsm fast = make(3, stop_rule::outcome_known);
    drive(fast, t0);
    BOOST_TEST(!fast.answered(0, node_status::taken));
    BOOST_TEST(fast.answered(1, node_status::error));
    BOOST_TEST((handed_over_for(fast, t0) == node_errc::quorum_impossible));
    BOOST_TEST(drive(fast, t0) == "give up 2, complete");

    // Without it, an acquire waits for every node.
    round_fsm patient = make(3, stop_rule::quorum_reached);
    drive(patient, t0);
    BOOST_TEST(!patient.answered(0, node_status::taken));
    BOOST_TEST(!patient.answered(1, node_status::error));
    BOOST_TEST(patient.answered(2, node_status::ok));
    BOOST_TEST(drive(patient, t0) == "complete");
    BOOST_TEST(!patient.handed_over());
}

BOOST_AUTO_TEST_CASE(a_clean_up_stops_once_a_quorum_replied_whatever_it_said)
{
    round_fsm fsm = make(5, stop_rule::quorum_replied);
    drive(fsm, t0);
    BOOST_TEST(!fsm.answered(0, node_status::missing));
    BOOST_TEST(!fsm.answered(1, node_status::taken));
    BOOST_TEST(!fsm.answered(4, node_status::timed_out));
    BOOST_TEST(fsm.answered(3, node_status::ok));
    BOOST_TEST((handed_over_for(fsm, t0) == node_errc::decided_by_quorum));

    // Three failures of five: a quorum can no longer reply.
    round_fsm failing = make(5, stop_rule::quorum_replied);
    drive(failing, t0);
    BOOST_TEST(!failing.answered(0, node_status::error));
    BOOST_TEST(!failing.answered(1, node_status::ok));
    BOOST_TEST(!failing.answered(2, node_status::timed_out));
    BOOST_TEST(failing.answered(3, node_status::abandoned));
    BOOST_TEST((handed_over_for(failing, t0) == node_errc::quorum_impossible));
}

BOOST_AUTO_TEST_CASE(a_semaphore_needs_its_own_quorum)
{
    // 3 nodes, 2 permits: every node must grant.
    round_fsm fsm = make(3, stop_rule::outcome_known, false, semaphore_quorum(3, 2));
    drive(fsm, t0);
    BOOST_TEST(!fsm.answered(0, node_status::ok));
    BOOST_TEST(!fsm.answered(1, node_status::ok));
    BOOST_TEST(fsm.answered(2, node_status::ok));
    BOOST_TEST(fsm.seen().reached());

    round_fsm short_of_one = make(3, stop_rule::outcome_known, false, semaphore_quorum(3, 2));
    drive(short_of_one, t0);
    BOOST_TEST(short_of_one.answered(1, node_status::taken));
    BOOST_TEST((handed_over_for(short_of_one, t0) == node_errc::quorum_impossible));
}

BOOST_AUTO_TEST_CASE(at_the_deadline_every_node_still_pending_times_out)
{
    round_fsm fsm = make(4, stop_rule::outcome_known);
    BOOST_TEST(drive(fsm, deadline - 1ms) == "wait");
    BOOST_TEST(!fsm.answered(1, node_status::ok));
    // The second time-out already rules a quorum of 3 out; the last node still times out,
    // it is not abandoned for an impossible quorum.
    BOOST_TEST(drive(fsm, deadline) == "time out 0, time out 2, time out 3, complete");
    BOOST_TEST(fsm.seen().failed == 3u);
    BOOST_TEST(fsm.seen().ok == 1u);
    BOOST_TEST(!fsm.handed_over());
    BOOST_TEST(fsm.remaining() == 0u);
}

BOOST_AUTO_TEST_CASE(when_every_node_answered_the_round_completes_without_giving_any_up)
{
    round_fsm fsm = make(3, stop_rule::all_answered);
    drive(fsm, t0);
    BOOST_TEST(!fsm.answered(0, node_status::ok));
    BOOST_TEST(!fsm.answered(1, node_status::ok));
    BOOST_TEST(fsm.answered(2, node_status::error));
    BOOST_TEST(drive(fsm, t0) == "complete");
    BOOST_TEST(!fsm.handed_over());
    BOOST_TEST(fsm.seen().answered() == 3u);
    // Asked again, it still has nothing to do.
    BOOST_TEST(drive(fsm, deadline) == "complete");
}

BOOST_AUTO_TEST_CASE(an_answer_before_the_driver_waits_wakes_nothing)
{
    // Outcomes delivered while the requests are being submitted (a node known to be down)
    // decide before the first wait: the driver sees it when it asks.
    round_fsm fsm = make(3, stop_rule::outcome_known);
    BOOST_TEST(!fsm.answered(0, node_status::error));
    BOOST_TEST(!fsm.answered(1, node_status::error));
    BOOST_TEST((handed_over_for(fsm, t0) == node_errc::quorum_impossible));
    // A second answer after the wake-up wakes nothing more.
    round_fsm woken = make(3, stop_rule::outcome_known);
    drive(woken, t0);
    woken.answered(0, node_status::ok);
    BOOST_TEST(woken.answered(1, node_status::ok));
    BOOST_TEST(!woken.answered(2, node_status::ok));
}

BOOST_AUTO_TEST_CASE(a_cancelled_caller_gets_its_outcomes_at_once)
{
    // Before any reply.
    round_fsm early = make(3, stop_rule::quorum_reached);
    BOOST_TEST((handed_over_for(early, t0, true) == node_errc::cancelled));
    BOOST_TEST(drive(early, t0, true) == "give up 0, give up 1, give up 2, complete");

    // After some replies, while waiting.
    round_fsm later = make(3, stop_rule::quorum_reached);
    drive(later, t0);
    later.answered(1, node_status::ok);
    BOOST_TEST((handed_over_for(later, t0 + 5ms, true) == node_errc::cancelled));
    BOOST_TEST(drive(later, t0 + 5ms, true) == "give up 0, give up 2, complete");
    BOOST_TEST(later.seen().ok == 1u);

    // Cancelled and past the deadline at once: cancelled, not timed out.
    round_fsm both = make(2, stop_rule::quorum_reached);
    BOOST_TEST((handed_over_for(both, deadline, true) == node_errc::cancelled));

    // With every node answered, there is nothing left to give up.
    round_fsm answered = make(1, stop_rule::quorum_reached);
    answered.answered(0, node_status::ok);
    BOOST_TEST(drive(answered, t0, true) == "complete");
}

BOOST_AUTO_TEST_CASE(a_cancellation_after_the_hand_over_changes_nothing)
{
    int background = 0;
    round_fsm fsm = make(3, stop_rule::outcome_known, true);
    drive(fsm, t0);
    fsm.answered(0, node_status::ok);
    BOOST_TEST(fsm.answered(1, node_status::ok));
    BOOST_TEST((handed_over_for(fsm, t0) == node_errc::in_background));
    BOOST_TEST(drive(fsm, t0, false, &background) == "continue in background");
    // The caller is gone: its cancellation does not give the last node up.
    BOOST_TEST(drive(fsm, t0 + 1ms, true, &background) == "wait");
    BOOST_TEST(fsm.pending(2));
    BOOST_TEST(background == 1);
    BOOST_TEST(fsm.answered(2, node_status::ok));
    BOOST_TEST(drive(fsm, t0 + 2ms, true, &background) == "background done, complete");
    BOOST_TEST(background == 0);
}

BOOST_AUTO_TEST_CASE(a_round_that_goes_on_in_the_background_says_so_even_when_cancelled)
{
    round_fsm fsm = make(3, stop_rule::outcome_known, true);
    BOOST_TEST((handed_over_for(fsm, t0, true) == node_errc::in_background));
    BOOST_TEST(drive(fsm, t0) == "continue in background");
    BOOST_TEST(fsm.remaining() == 3u);
}

BOOST_AUTO_TEST_CASE(wait_s_short_count_makes_an_ok_an_error)
{
    const reply_reading how{.read = read_acquire_reply, .value = "v", .replicas = 1};
    node_outcome o;
    BOOST_TEST((read_result(o, replied_with_wait(0), how) == node_status::error));
    BOOST_TEST((o.code == node_errc::not_replicated));
    BOOST_TEST(!o.detail.empty());

    node_outcome acknowledged;
    BOOST_TEST((read_result(acknowledged, replied_with_wait(1), how) == node_status::ok));
    BOOST_TEST(!acknowledged.code);

    // Counted as errors: two oks that were not replicated leave 5 nodes without a quorum.
    round_fsm fsm = make(5, stop_rule::outcome_known);
    drive(fsm, t0);
    for (std::uint32_t i = 0; i < 2; ++i) {
        node_outcome each;
        BOOST_TEST(!fsm.answered(i, read_result(each, replied_with_wait(0), how)));
    }
    node_outcome third;
    BOOST_TEST(fsm.answered(2, read_result(third, replied_with_wait(0), how)));
    BOOST_TEST(fsm.seen().failed == 3u);
    BOOST_TEST((handed_over_for(fsm, t0) == node_errc::quorum_impossible));
}

BOOST_AUTO_TEST_CASE(a_fenced_ok_keeps_its_token_behind_wait_s_count)
{
    const reply_reading how{
        .read = read_fenced_acquire_reply, .value = "v", .replicas = 1, .replies_with_token = true};
    node_outcome o;
    resp::reply both{.type = resp::kind::array, .integer = 0, .text = {}, .elements = {}};
    both.elements = {integer(42), integer(1)};
    BOOST_TEST((read_result(o, replied(std::move(both)), how) == node_status::ok));
    BOOST_TEST(o.fencing_token == 42u);

    node_outcome plain;
    const reply_reading without_wait{
        .read = read_fenced_acquire_reply, .value = "v", .replies_with_token = true};
    BOOST_TEST((read_result(plain, replied(integer(7)), without_wait) == node_status::ok));
    BOOST_TEST(plain.fencing_token == 7u);
    node_outcome held;
    BOOST_TEST((read_result(held, replied(integer(-1)), without_wait) == node_status::taken));
    BOOST_TEST(held.fencing_token == 0u);
}

BOOST_AUTO_TEST_CASE(a_request_that_failed_timed_out_or_was_cancelled_keeps_its_cause)
{
    const reply_reading how{.read = read_acquire_reply};
    const auto failed = [&](exec_result::outcome what, node_errc code) {
        exec_result e;
        e.status = what;
        e.code = code;
        e.detail = "why";
        node_outcome o;
        const node_status s = read_result(o, std::move(e), how);
        BOOST_TEST((o.code == code));
        BOOST_TEST(o.detail == "why");
        return s;
    };
    BOOST_TEST(
        (failed(exec_result::outcome::failed, node_errc::connection_lost) == node_status::error));
    BOOST_TEST(
        (failed(exec_result::outcome::timed_out, node_errc::timed_out) == node_status::timed_out));
    BOOST_TEST(
        (failed(exec_result::outcome::cancelled, node_errc::cancelled) == node_status::abandoned));
}

BOOST_AUTO_TEST_CASE(skipped_nodes_count_as_missing_at_once)
{
    round_fsm fsm = make(3, stop_rule::outcome_known);
    fsm.skipped(0);
    fsm.skipped(2);
    BOOST_TEST(!fsm.pending(0));
    BOOST_TEST(fsm.pending(1));
    BOOST_TEST(fsm.seen().missing == 2u);
    BOOST_TEST(fsm.remaining() == 1u);
    // Two missing of three: no quorum can say ok, and a quorum of answers (missing ones) is
    // in, so the one node sent to is not awaited.
    BOOST_TEST((handed_over_for(fsm, t0) == node_errc::decided_by_quorum));
    BOOST_TEST(drive(fsm, t0) == "give up 1, complete");

    // Every node skipped: the round completes before it waits.
    round_fsm none = make(2, stop_rule::quorum_reached);
    none.skipped(1);
    none.skipped(0);
    BOOST_TEST(drive(none, t0) == "complete");
    BOOST_TEST(!none.handed_over());
}

BOOST_AUTO_TEST_CASE(replies_in_the_background_only_count_down)
{
    int background = 0;
    round_fsm fsm = make(5, stop_rule::outcome_known, true);
    drive(fsm, t0);
    fsm.answered(4, node_status::ok);
    fsm.answered(0, node_status::ok);
    BOOST_TEST(fsm.answered(2, node_status::ok));
    BOOST_TEST((handed_over_for(fsm, t0) == node_errc::in_background));
    BOOST_TEST(drive(fsm, t0, false, &background) == "continue in background");
    BOOST_TEST(drive(fsm, t0, false, &background) == "wait");
    // One of two left: no wake-up, and the caller's counts stay as they were handed over.
    BOOST_TEST(!fsm.answered(1, node_status::error));
    BOOST_TEST(fsm.seen().failed == 0u);
    BOOST_TEST(fsm.remaining() == 1u);
    // A wake-up for something else: the background waits on.
    BOOST_TEST(drive(fsm, t0 + 1ms, false, &background) == "wait");
    BOOST_TEST(fsm.answered(3, node_status::taken));
    BOOST_TEST(fsm.seen().taken == 0u);
    BOOST_TEST(drive(fsm, t0 + 2ms, false, &background) == "background done, complete");
    BOOST_TEST(background == 0);
}

BOOST_AUTO_TEST_CASE(the_background_ends_at_the_deadline_telling_the_nodes_of_the_time_out)
{
    int background = 0;
    round_fsm fsm = make(5, stop_rule::outcome_known, true);
    drive(fsm, t0);
    fsm.answered(0, node_status::ok);
    fsm.answered(1, node_status::ok);
    fsm.answered(2, node_status::ok);
    handed_over_for(fsm, t0);
    drive(fsm, t0, false, &background);
    drive(fsm, t0, false, &background);
    BOOST_TEST(!fsm.answered(3, node_status::ok));
    BOOST_TEST(background == 1);
    // The timer expired: node 4 is given up, its link told of a time-out.
    BOOST_TEST(drive(fsm, deadline, false, &background) ==
               "give up 4 at deadline, background done, complete");
    BOOST_TEST(background == 0);
    BOOST_TEST(!fsm.pending(4));
    // A reply that still comes for it is dropped.
    BOOST_TEST(!fsm.answered(4, node_status::ok));
    BOOST_TEST(drive(fsm, deadline + 1ms, false, &background) == "complete");
    BOOST_TEST(background == 0);
}

BOOST_AUTO_TEST_CASE(a_round_given_up_without_a_background_leaves_no_background_work)
{
    int background = 0;
    round_fsm fsm = make(3, stop_rule::quorum_reached);
    drive(fsm, t0);
    fsm.answered(0, node_status::ok);
    fsm.answered(1, node_status::ok);
    handed_over_for(fsm, t0);
    BOOST_TEST(drive(fsm, t0, false, &background) == "give up 2, complete");
    BOOST_TEST(background == 0);
}

BOOST_AUTO_TEST_SUITE_END()
