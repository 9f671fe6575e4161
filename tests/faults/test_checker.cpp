// SPDX-License-Identifier: BSL-1.0
// Unit tests of the fault suite's checker (checker.hpp): no servers, no processes.
#define BOOST_TEST_MODULE fault_checker
#include <boost/test/unit_test.hpp>

#include "checker.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace redlock::faults {
// How Boost.Test prints an outcome in a failed assertion.
inline std::ostream& boost_test_print_type(std::ostream& os, outcome o)
{
    return os << to_string(o);
}
}  // namespace redlock::faults

using namespace redlock::faults;

namespace {

section make(std::string key, std::string owner, std::int64_t start, std::int64_t end,
             std::uint64_t token = 1, outcome write = outcome::ok)
{
    section s;
    s.key = std::move(key);
    s.owner = std::move(owner);
    s.token = token;
    s.start_ns = start;
    s.end_ns = end;
    s.until_ns = start + 1000;
    s.read = outcome::ok;
    s.write = write;
    s.shadow_written = true;
    return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_section_line_round_trips)
{
    section s = make("k1", "b3DuZ+/=", 100, 250, 42, outcome::stale);
    s.until_ns = 900;
    s.read = outcome::ok;
    s.shadow_written = false;
    auto line = parse_line(format_section(s) + "\n");
    BOOST_REQUIRE(line);
    auto back = parse_section(*line, 7);
    BOOST_REQUIRE(back);
    BOOST_TEST(back->worker == 7);
    BOOST_TEST(back->key == "k1");
    BOOST_TEST(back->owner == "b3DuZ+/=");
    BOOST_TEST(back->token == 42u);
    BOOST_TEST(back->start_ns == 100);
    BOOST_TEST(back->end_ns == 250);
    BOOST_TEST(back->until_ns == 900);
    BOOST_TEST(back->read == outcome::ok);
    BOOST_TEST(back->write == outcome::stale);
    BOOST_TEST(!back->shadow_written);
}

BOOST_AUTO_TEST_CASE(why_takes_the_rest_of_the_line_and_junk_is_refused)
{
    auto line = parse_line("acquire_failed key=k2 code=3 why=no quorum: 2 of 5 = too few");
    BOOST_REQUIRE(line);
    BOOST_TEST(line->kind == "acquire_failed");
    BOOST_TEST(*line->get("key") == "k2");
    BOOST_TEST(*line->get("why") == "no quorum: 2 of 5 = too few");
    BOOST_TEST(!line->get("missing"));

    BOOST_TEST(!parse_line(""));
    BOOST_TEST(!parse_line("=x"));
    BOOST_TEST(!parse_line("section novalue"));
    BOOST_TEST(parse_line("ready")->fields.empty());
    // A section line with a field missing or malformed is not a section.
    section s = make("k", "o", 1, 2);
    std::string text = format_section(s);
    BOOST_TEST(!parse_section(*parse_line(text.substr(0, text.find(" shadow="))), 0));
    auto bad = text;
    bad.replace(bad.find("token=1"), 7, "token=x");
    BOOST_TEST(!parse_section(*parse_line(bad), 0));
    BOOST_TEST(!parse_section(*parse_line("stop key=k token=1"), 0));
}

BOOST_AUTO_TEST_CASE(overlaps_are_per_key_between_different_owners)
{
    std::vector<section> v = {
        make("a", "o1", 0, 100),   make("a", "o2", 100, 200),  // touches the first: no overlap
        make("b", "o3", 50, 150),                              // other key
        make("a", "o4", 150, 400),                             // overlaps o2
        make("a", "o5", 300, 350),                             // inside o4
    };
    auto found = find_overlaps(v);
    BOOST_REQUIRE_EQUAL(found.size(), 2u);
    BOOST_TEST(found[0].earlier->owner == "o2");
    BOOST_TEST(found[0].later->owner == "o4");
    BOOST_TEST(found[1].earlier->owner == "o4");
    BOOST_TEST(found[1].later->owner == "o5");
    // until = start + 1000 in make(): both later sections began within validity.
    BOOST_TEST(found[0].in_validity);
    BOOST_TEST(found[1].in_validity);
}

BOOST_AUTO_TEST_CASE(an_overlap_after_the_earlier_owners_validity_is_told_apart)
{
    // The earlier owner was paused past its validity; the later one began after that.
    section paused = make("k", "slow", 0, 5000);
    paused.until_ns = 1000;
    std::vector<section> v = {paused, make("k", "fast", 1200, 1300)};
    auto found = find_overlaps(v);
    BOOST_REQUIRE_EQUAL(found.size(), 1u);
    BOOST_TEST(!found[0].in_validity);
}

BOOST_AUTO_TEST_CASE(readers_may_overlap_each_other_but_not_a_writer)
{
    section r1 = make("k", "r1", 0, 100), r2 = make("k", "r2", 50, 150);
    r1.shared = r2.shared = true;
    const section w = make("k", "w", 120, 200);
    const std::vector<section> readers = {r1, r2}, all = {r1, r2, w};
    BOOST_TEST(find_overlaps(readers).empty());
    const auto found = find_overlaps(all);
    BOOST_REQUIRE_EQUAL(found.size(), 1u);
    BOOST_TEST(found[0].earlier->owner == "r2");
    BOOST_TEST(found[0].later->owner == "w");
    // The flag survives the log line; an exclusive section's line does not carry it.
    const auto back = parse_section(*parse_line(format_section(r1)), 0);
    BOOST_REQUIRE(back);
    BOOST_TEST(back->shared);
    BOOST_TEST(format_section(w).find("shared") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(holders_at_once_are_counted_per_key_within_validity)
{
    BOOST_TEST(most_at_once_in_validity({}) == 0u);
    // a, b and c share [20, 30) on k; d is on another key; e ends as f starts (not at once).
    std::vector<section> s{make("k", "a", 0, 30),  make("k", "b", 10, 40), make("k", "c", 20, 50),
                           make("j", "d", 0, 100), make("i", "e", 0, 10),  make("i", "f", 10, 20)};
    BOOST_TEST(most_at_once_in_validity(s) == 3u);
    // c's validity ran out at 20, before it began: it never held a permit in validity.
    s[2].until_ns = 20;
    BOOST_TEST(most_at_once_in_validity(s) == 2u);
    // a's validity ends at 10, as b begins: a and b no longer overlap either.
    s[0].until_ns = 10;
    BOOST_TEST(most_at_once_in_validity(s) == 1u);
}

BOOST_AUTO_TEST_CASE(lost_updates_are_accepted_writes_minus_the_final_counter)
{
    std::vector<section> v = {make("a", "o1", 0, 10), make("a", "o2", 20, 30),
                              make("a", "o3", 40, 50), make("b", "o4", 0, 10)};
    final_counters finals{{{"a", 2}, {"b", 1}}, {{"a", 3}, {"b", 0}}};
    tally t = count(v, 5, finals);
    BOOST_TEST(t.acquisitions == 4u);
    BOOST_TEST(t.acquire_failures == 5u);
    BOOST_TEST(t.overlaps == 0u);
    BOOST_TEST(t.fenced_accepted == 4u);
    BOOST_TEST(t.stale_accepted == 1);  // a: 3 accepted, counter 2
    BOOST_TEST(t.phantom == 0);
    BOOST_TEST(t.unfenced_lost == 1);  // b: 1 shadow write, counter 0
}

BOOST_AUTO_TEST_CASE(rejects_errors_and_phantom_increments_are_counted)
{
    std::vector<section> v = {make("a", "o1", 0, 10, 5, outcome::ok),
                              make("a", "o2", 20, 30, 4, outcome::skipped),
                              make("a", "o3", 40, 50, 6, outcome::error)};
    v[1].read = outcome::stale;
    // The errored write may have been applied: 1 or 2 are both explained; 3 is not.
    for (long long final_value : {1LL, 2LL}) {
        tally t = count(v, 0, {{{"a", final_value}}, {{"a", 3}}});
        BOOST_TEST(t.fenced_rejects == 1u);
        BOOST_TEST(t.fenced_errors == 1u);
        BOOST_TEST(t.stale_accepted == 0);
        BOOST_TEST(t.phantom == 0);
    }
    BOOST_TEST(count(v, 0, {{{"a", 3}}, {{"a", 3}}}).phantom == 1);
}

BOOST_AUTO_TEST_CASE(safe_and_unsafe_expectations)
{
    tally clean;
    clean.acquisitions = 10;
    BOOST_TEST(violations(clean, {.safe = true}).empty());
    BOOST_TEST(violations(clean, {.safe = false}).size() == 3u);  // no overlap, reject, loss

    tally caught = clean;
    caught.overlaps = 1;
    caught.overlaps_in_validity = 1;
    caught.fenced_rejects = 1;
    caught.unfenced_lost = 1;
    BOOST_TEST(violations(caught, {.safe = false}).empty());
    BOOST_TEST(violations(caught, {.safe = false, .lock_broken = true}).empty());
    BOOST_TEST(violations(caught, {.safe = false, .lock_broken = false}).size() == 1u);
    BOOST_TEST(violations(caught, {.safe = true}).size() == 1u);

    tally leaked = caught;
    leaked.stale_accepted = 1;
    BOOST_TEST(violations(leaked, {.safe = false}).size() == 1u);
    tally idle;
    BOOST_TEST(violations(idle, {.safe = true}).size() == 1u);
    tally errors = clean;
    errors.fenced_errors = 2;
    BOOST_TEST(violations(errors, {.safe = true}).size() == 1u);
}

BOOST_AUTO_TEST_CASE(shown_expectations_require_overlaps_neither_way_but_no_lost_update)
{
    tally clean;
    clean.acquisitions = 10;
    BOOST_TEST(violations(clean, {.shown = true}).empty());
    tally caught = clean;
    caught.overlaps = 2;
    caught.overlaps_in_validity = 2;
    caught.fenced_rejects = 1;
    BOOST_TEST(violations(caught, {.shown = true}).empty());
    BOOST_TEST(violations(caught, {.safe = true, .shown = true}).empty());
    tally leaked = caught;
    leaked.stale_accepted = 1;
    BOOST_TEST(violations(leaked, {.shown = true}).size() == 1u);
    tally idle;
    BOOST_TEST(violations(idle, {.shown = true}).size() == 1u);
    BOOST_TEST(table_row("x", {.shown = true}, clean, true).find(" shown ") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(table_rows_line_up_with_the_header)
{
    tally t;
    t.acquisitions = 1234;
    t.overlaps = 3;
    t.overlaps_in_validity = 2;
    const std::string header = table_header();
    const std::string row = table_row("restart-at-once", {.safe = false}, t, true);
    const std::string first = header.substr(0, header.find('\n'));
    BOOST_TEST(row.size() - 1 == first.size() - std::string("result").size() + 2);
    BOOST_TEST(row.find("restart-at-once") == 0u);
    BOOST_TEST(row.find("unsafe") != std::string::npos);
    BOOST_TEST(row.find("3 (2)") != std::string::npos);
    BOOST_TEST(row.find(" ok\n") != std::string::npos);
}

namespace {

section by_process(int worker, std::int64_t start, std::int64_t end, std::string key = "k")
{
    section s = make(std::move(key), "owner-" + std::to_string(start), start, end);
    s.worker = worker;
    return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(no_sections_have_no_run)
{
    BOOST_TEST(!longest_same_process_run({}));
}

BOOST_AUTO_TEST_CASE(the_longest_run_is_measured_in_time_not_in_sections)
{
    // Process 1 runs three short sections in a row; process 2 later runs two long ones.
    const std::vector<section> s = {by_process(1, 0, 10),    by_process(1, 10, 20),
                                    by_process(1, 20, 30),   by_process(0, 30, 40),
                                    by_process(2, 40, 140),  by_process(2, 140, 240),
                                    by_process(0, 240, 250), by_process(1, 250, 260)};
    const auto run = longest_same_process_run(s);
    BOOST_REQUIRE(run);
    BOOST_TEST(run->worker == 2);
    BOOST_TEST(run->sections == 2u);
    BOOST_TEST(run->start_ns == 40);
    BOOST_TEST(run->end_ns == 240);
    BOOST_TEST(run->span_ns() == 200);
}

BOOST_AUTO_TEST_CASE(a_run_follows_start_order_whatever_the_log_order)
{
    // Logs of several processes are concatenated: order by start before counting runs.
    const std::vector<section> s = {by_process(0, 0, 10), by_process(0, 20, 30),
                                    by_process(1, 10, 20), by_process(1, 30, 40)};
    const auto run = longest_same_process_run(s);
    BOOST_REQUIRE(run);
    BOOST_TEST(run->sections == 1u);
    BOOST_TEST(run->span_ns() == 10);
}

BOOST_AUTO_TEST_CASE(runs_are_per_key)
{
    // Process 0 alternates between keys while process 1 works on "b": on "a" it is alone.
    const std::vector<section> s = {by_process(0, 0, 10, "a"), by_process(1, 5, 15, "b"),
                                    by_process(0, 20, 30, "a"), by_process(1, 25, 35, "b")};
    const auto run = longest_same_process_run(s);
    BOOST_REQUIRE(run);
    BOOST_TEST(run->key == "a");
    BOOST_TEST(run->worker == 0);
    BOOST_TEST(run->sections == 2u);
    BOOST_TEST(run->span_ns() == 30);
}

BOOST_AUTO_TEST_CASE(shares_per_process)
{
    const std::vector<section> s = {by_process(0, 0, 1), by_process(0, 1, 2), by_process(0, 2, 3),
                                    by_process(2, 3, 4), by_process(7, 4, 5)};
    const auto counts = sections_per_process(s, 3);
    BOOST_TEST(counts == (std::vector<std::size_t>{3, 0, 1}), boost::test_tools::per_element());
    BOOST_TEST(least_share(counts) == 0.0);
    BOOST_TEST(least_share({4, 2, 6}) == 0.5);
    BOOST_TEST(least_share({5, 5}) == 1.0);
    BOOST_TEST(least_share({}) == 0.0);
    BOOST_TEST(least_share({0, 0}) == 0.0);
}

namespace {

// A section of a fair waiter: called at `call`, held from `start` to `start + 1`.
section fair_grant(std::string owner, std::int64_t call, std::int64_t start, std::string key = "k")
{
    section s = make(std::move(key), std::move(owner), start, start + 1);
    s.call_ns = call;
    return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_call_moment_round_trips_and_is_optional)
{
    section s = fair_grant("o", 90, 100);
    auto back = parse_section(*parse_line(format_section(s)), 0);
    BOOST_REQUIRE(back);
    BOOST_TEST(back->call_ns == 90);
    s.call_ns = 0;
    BOOST_TEST(format_section(s).find("call=") == std::string::npos);
    back = parse_section(*parse_line(format_section(s)), 0);
    BOOST_REQUIRE(back);
    BOOST_TEST(back->call_ns == 0);
    BOOST_TEST(!parse_section(*parse_line(format_section(s) + " call=x"), 0));
}

BOOST_AUTO_TEST_CASE(an_overtaking_is_a_later_caller_granted_first)
{
    // a joined by 20; b called at 30 (after) but was granted at 40, before a (at 50).
    const std::vector<section> s = {fair_grant("a", 10, 50), fair_grant("b", 30, 40)};
    const auto c = count_overtakings(s, {{"a", 20}, {"b", 35}}, 0);
    BOOST_TEST(c.ordered_pairs == 1u);  // b joined at 35, after a called: no order applies
    BOOST_TEST(c.overtakings == 1u);
}

BOOST_AUTO_TEST_CASE(grants_in_join_order_are_no_overtaking)
{
    const std::vector<section> s = {fair_grant("a", 10, 40), fair_grant("b", 30, 50),
                                    fair_grant("c", 32, 60)};
    const auto c = count_overtakings(s, {{"a", 20}, {"b", 33}, {"c", 38}}, 0);
    BOOST_TEST(c.ordered_pairs == 2u);  // a before b, a before c; b and c are concurrent
    BOOST_TEST(c.overtakings == 0u);
}

BOOST_AUTO_TEST_CASE(a_caller_after_the_earlier_grant_is_no_contender)
{
    // b called at 45, after a's section began at 40: it cannot have come first.
    const std::vector<section> s = {fair_grant("a", 10, 40), fair_grant("b", 45, 50)};
    const auto c = count_overtakings(s, {{"a", 20}, {"b", 46}}, 0);
    BOOST_TEST(c.ordered_pairs == 0u);
    BOOST_TEST(c.overtakings == 0u);
}

BOOST_AUTO_TEST_CASE(joins_closer_than_the_margin_or_concurrent_are_not_counted)
{
    // b called 5 ns after a was seen joined: within a margin of 10 the order is unknown.
    const std::vector<section> s = {fair_grant("a", 10, 50), fair_grant("b", 25, 40)};
    BOOST_TEST(count_overtakings(s, {{"a", 20}}, 10).ordered_pairs == 0u);
    BOOST_TEST(count_overtakings(s, {{"a", 20}}, 4).overtakings == 1u);
    // b called before a was seen joined: concurrent, whoever is granted first.
    BOOST_TEST(count_overtakings(s, {{"a", 26}}, 0).ordered_pairs == 0u);
}

BOOST_AUTO_TEST_CASE(overtakings_need_a_join_moment_a_call_and_the_same_key)
{
    // Never seen joined, a is only ever the later caller; a section without a call moment
    // (another mode) takes no part; another key is another queue.
    section other_mode = fair_grant("x", 0, 45);
    const std::vector<section> s = {fair_grant("a", 10, 50), fair_grant("b", 30, 40), other_mode,
                                    fair_grant("c", 30, 40, "k2")};
    const auto c = count_overtakings(s, {{"x", 1}, {"c", 1}}, 0);
    BOOST_TEST(c.ordered_pairs == 0u);
    BOOST_TEST(c.overtakings == 0u);
}

BOOST_AUTO_TEST_CASE(the_longest_wait_runs_from_the_call_to_the_section)
{
    section other_mode = fair_grant("x", 0, 5000);
    const std::vector<section> s = {fair_grant("a", 10, 50), fair_grant("b", 30, 100), other_mode};
    BOOST_TEST(longest_wait_ns(s) == 70);
    BOOST_TEST(longest_wait_ns({}) == 0);
}

BOOST_AUTO_TEST_CASE(the_wait_bound_adds_a_turn_per_waiter_ahead)
{
    const fair_wait_terms one{.refresh_ns = 250,
                              .entry_ttl_ns = 750,
                              .retry_delay_max_ns = 100,
                              .node_deadline_ns = 50,
                              .hold_ns = 2,
                              .ahead = 0};
    // Its join, then its own turn: a refresh, two deadlines, the hold.
    BOOST_TEST(fair_wait_bound_ns(one) == 50 + 352);
    fair_wait_terms more = one;
    more.ahead = 7;
    BOOST_TEST(fair_wait_bound_ns(more) == 50 + 8 * 352);
    more.silent_ahead = 2;
    BOOST_TEST(fair_wait_bound_ns(more) == 50 + 8 * 352 + 2 * 750);
    // The first pause is a retry delay, which may be the longer one.
    more.retry_delay_max_ns = 400;
    BOOST_TEST(fair_wait_bound_ns(more) == 50 + 8 * 502 + 2 * 750);
}

// ---- elections ----

namespace {

leadership lead_of(int worker, std::uint64_t term, std::int64_t start, std::int64_t until)
{
    return {worker, "w" + std::to_string(worker), term, start, until, {}, {}};
}

// Reads the lines into a log; each must be accepted.
election_log read_all(const std::vector<std::pair<int, std::string>>& lines)
{
    election_log log;
    for (const auto& [worker, text] : lines) {
        auto line = parse_line(text);
        BOOST_REQUIRE(line);
        BOOST_REQUIRE(read_election_line(*line, worker, log));
    }
    return log;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_leadership_is_its_grant_extensions_loss_and_resignation)
{
    const auto log = read_all({{2, format_lead(lead_of(2, 7, 100, 1100))},
                               {2, "extended term=7 until=1500"},
                               {3, format_view({3, "w2", 7, 120})},
                               {2, "lost term=7 at=1490 why=lock lost; report"},
                               {2, "resign term=7 at=1495"},
                               {3, format_view({3, std::nullopt, 0, 1600})}});
    BOOST_REQUIRE_EQUAL(log.leaderships.size(), 1u);
    const leadership& l = log.leaderships.front();
    BOOST_TEST(l.worker == 2);
    BOOST_TEST(l.value == "w2");
    BOOST_TEST(l.term == 7u);
    BOOST_TEST(l.start_ns == 100);
    BOOST_TEST(l.until_ns == 1500);
    BOOST_TEST(l.lost_ns.value_or(0) == 1490);
    BOOST_TEST(l.resigned_ns.value_or(0) == 1495);
    BOOST_TEST(l.end_ns() == 1495);  // resigned before its validity ran out
    BOOST_REQUIRE_EQUAL(log.views.size(), 2u);
    BOOST_TEST(log.views[0].names(l));
    BOOST_TEST(log.views[0].at_ns == 120);
    BOOST_TEST(!log.views[1].value.has_value());
    BOOST_TEST(!log.views[1].names(l));
}

BOOST_AUTO_TEST_CASE(election_lines_without_their_leadership_or_fields_are_refused)
{
    election_log log;
    auto refused = [&](const std::string& text, int worker = 1) {
        auto line = parse_line(text);
        return line && !read_election_line(*line, worker, log);
    };
    BOOST_TEST(refused("extended term=3 until=10"));  // no leadership yet
    BOOST_TEST(refused("lead value=w1 term=x start=1 until=2"));
    BOOST_TEST(refused("lead term=3 start=1 until=2"));
    BOOST_TEST(refused("view leader= term=3 at=5"));
    BOOST_REQUIRE(read_election_line(*parse_line(format_lead(lead_of(1, 3, 1, 2))), 1, log));
    BOOST_TEST(refused("resign term=4 at=9"));     // another term
    BOOST_TEST(refused("resign term=3 at=9", 2));  // another worker's
    BOOST_TEST(refused("lost term=3"));
    // Lines of other kinds are none of the election's business.
    auto other = parse_line("section key=k token=1");
    BOOST_REQUIRE(other);
    BOOST_TEST(read_election_line(*other, 1, log));
    BOOST_TEST(log.leaderships.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_grant_within_the_previous_leaders_validity_is_an_overlap)
{
    // A fabricated second leader granted while the first was still valid: the check must see
    // it, whichever order the logs were read in.
    std::vector<leadership> all = {lead_of(1, 9, 2000, 3500), lead_of(0, 8, 1000, 2100)};
    auto overlaps = find_leader_overlaps(all);
    BOOST_REQUIRE_EQUAL(overlaps.size(), 1u);
    BOOST_TEST(overlaps[0].earlier->term == 8u);
    BOOST_TEST(overlaps[0].later->term == 9u);
    // Its validity ran out first, or it resigned first: no overlap.
    all[1].until_ns = 2000;
    BOOST_TEST(find_leader_overlaps(all).empty());
    all[1].until_ns = 2100;
    all[1].resigned_ns = 1999;
    BOOST_TEST(find_leader_overlaps(all).empty());
    // A resignation after the successor's grant does not excuse it.
    all[1].resigned_ns = 2050;
    BOOST_TEST(find_leader_overlaps(all).size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_later_leaders_term_must_grow)
{
    std::vector<leadership> all = {lead_of(0, 4, 0, 10), lead_of(1, 5, 20, 30),
                                   lead_of(2, 5, 40, 50), lead_of(0, 3, 60, 70),
                                   lead_of(1, 6, 80, 90)};
    const auto bad = terms_not_growing(all);
    BOOST_REQUIRE_EQUAL(bad.size(), 2u);
    BOOST_TEST(bad[0].earlier->start_ns == 20);  // a term repeated
    BOOST_TEST(bad[0].later->start_ns == 40);
    BOOST_TEST(bad[1].earlier->start_ns == 40);  // a term that went back
    BOOST_TEST(bad[1].later->start_ns == 60);
    all.erase(all.begin() + 2, all.begin() + 4);
    BOOST_TEST(terms_not_growing(all).empty());
}

BOOST_AUTO_TEST_CASE(the_first_leadership_after_a_moment)
{
    const std::vector<leadership> all = {lead_of(0, 4, 300, 900), lead_of(1, 2, 100, 200)};
    BOOST_TEST(first_leadership_after(all, 0)->term == 2u);
    BOOST_TEST(first_leadership_after(all, 100)->term == 4u);
    BOOST_TEST(!first_leadership_after(all, 300));
}

BOOST_AUTO_TEST_CASE(an_observers_lag_counts_only_when_its_last_view_names_the_leader)
{
    const leadership l = lead_of(0, 4, 1000, 2000);
    const std::vector<leader_view> views = {
        {1, "w3", 3, 500},  {1, std::nullopt, 0, 900},
        {1, "w0", 4, 1040}, {2, "w0", 4, 990},  // saw the publication before the campaign completed
        {3, "w0", 4, 1100}, {3, std::nullopt, 0, 1500}};
    BOOST_TEST(view_lag_ns(views, 1, l, 3000).value_or(-1) == 40);
    BOOST_TEST(view_lag_ns(views, 2, l, 3000).value_or(-1) == -10);
    BOOST_TEST(!view_lag_ns(views, 3, l, 3000));  // it saw nobody last
    BOOST_TEST(view_lag_ns(views, 3, l, 1200).value_or(-1) == 100);
    BOOST_TEST(!view_lag_ns(views, 1, l, 1000));  // not seen yet by then
    BOOST_TEST(!view_lag_ns(views, 4, l, 3000));  // no views at all
}

BOOST_AUTO_TEST_CASE(an_elections_violations_name_both_leaders)
{
    BOOST_TEST(election_violations(election_log{}).size() == 1u);  // nobody led
    BOOST_TEST(
        election_violations({{lead_of(0, 4, 0, 10), lead_of(1, 5, 20, 30)}, {{2, "w1", 5, 25}}})
            .empty());
    const auto both = election_violations(
        {{lead_of(0, 4, 0, 2'000'000), lead_of(1, 4, 1'000'000, 3'000'000)}, {}});
    BOOST_REQUIRE_EQUAL(both.size(), 2u);
    BOOST_TEST(both[0] ==
               "two leaders at once: w0 term 4 [0, 2] ms (until 2) and w1 term 4 "
               "[1, 3] ms (until 3)");
    BOOST_TEST(both[1].find("the term did not grow") == 0u);
}

BOOST_AUTO_TEST_CASE(a_view_must_name_a_granted_leader)
{
    election_log log{{lead_of(0, 4, 0, 10)},
                     {{1, "w0", 4, 5},
                      {1, std::nullopt, 0, 12},
                      {2, "w0", 5, 20},  // the right value in another term
                      {3, "w7", 4, 20}}};
    const auto unknown = views_of_no_leader(log);
    BOOST_REQUIRE_EQUAL(unknown.size(), 2u);
    BOOST_TEST(unknown[0]->worker == 2);
    BOOST_TEST(unknown[1]->worker == 3);
    const auto violated = election_violations(log);
    BOOST_REQUIRE_EQUAL(violated.size(), 2u);
    BOOST_TEST(violated[0] ==
               "observer w2 named w0 in term 5 at 0 ms, which no candidate was "
               "granted");
    // Up to a bound (a margin before a run's end): the view at 20 ns is not checked.
    BOOST_TEST(views_of_no_leader(log, 20).empty());
    BOOST_REQUIRE_EQUAL(views_of_no_leader(log, 21).size(), 2u);
    BOOST_TEST(election_violations(log, 20).empty());
}
