// SPDX-License-Identifier: BSL-1.0
#pragma once

// The fault suite's checker: pure logic over what the workers logged and what the resource
// server holds at the end. No I/O, no servers, so that it has unit tests of its own.
//
// A worker logs one `section` line per critical section it ran (see worker.cpp). From these the
// checker counts:
// - overlaps: pairs of critical sections on the same key by different owners whose
//   [start, end] intervals intersect on CLOCK_MONOTONIC (system-wide, so the processes of one
//   machine compare). Of these, "in validity" are those where the later section began before
//   the earlier owner's lock validity (`guard::until()`) ran out: the lock itself failed, not
//   just a client that overran its lock (a pause past its TTL);
// - fenced rejects: sections whose fenced read or write the resource refused as stale;
// - stale accepted: lost updates of the fenced counter, (fenced writes accepted) - (final
//   counter), summed over keys. Every write stores read + 1, so any write that slipped past the
//   fence with a stale read shows up as a missing increment;
// - unfenced lost: the same for the shadow counter that the same sections update with a plain
//   GET/SET, i.e. what would have been lost without fencing.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::faults {

enum class outcome { ok, stale, error, skipped };

std::string_view to_string(outcome o);
std::optional<outcome> parse_outcome(std::string_view s);

// One critical section, as a worker logged it. Times are CLOCK_MONOTONIC nanoseconds.
struct section
{
    int worker = 0;
    std::string key;
    std::uint64_t token = 0;
    std::string owner;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::int64_t until_ns = 0;  // the guard's validity deadline
    outcome read = outcome::skipped;
    outcome write = outcome::skipped;
    bool shadow_written = false;  // the unfenced SET went through
    bool shared = false;          // a read (shared) lock: readers may overlap each other
    // Mode waiters: when the acquire that led to this section was called (0: not logged).
    std::int64_t call_ns = 0;
};

// A line of a worker's log: "<kind> name=value ...". A field named `why` takes the rest of the
// line, so that error messages may contain spaces.
struct log_line
{
    std::string kind;
    std::map<std::string, std::string, std::less<>> fields;

    // The field, or std::nullopt.
    std::optional<std::string_view> get(std::string_view name) const;
};

// nullopt for a line that is not "kind name=value ..." (e.g. stray output of a library).
std::optional<log_line> parse_line(std::string_view line);
// A `section` line as a section; nullopt when a field is missing or malformed.
std::optional<section> parse_section(const log_line& line, int worker);

// The inverse of parse_section (the worker formats its lines with it).
std::string format_section(const section& s);

struct overlap
{
    const section* earlier = nullptr;  // by start time
    const section* later = nullptr;
    bool in_validity = false;  // later->start_ns < earlier->until_ns
};

// Every overlapping pair (same key, different owners, not both shared), ordered by the earlier
// section's start. The pairs point into `sections`, so a temporary is refused.
std::vector<overlap> find_overlaps(const std::vector<section>& sections);
std::vector<overlap> find_overlaps(std::vector<section>&&) = delete;

// ---- locks with several holders ----
//
// A semaphore of L permits admits at most L holders at once. What counts is each section
// within its owner's validity, [start, min(end, until)]: a client that overruns its permit is
// not the lock's failure.

// The most sections of one key whose validity windows share an instant (touching ends do not
// count), over all keys; 0 without sections.
std::size_t most_at_once_in_validity(const std::vector<section>& sections);

// The resource server's counters at the end, per key (absent key: 0).
struct final_counters
{
    std::map<std::string, long long> fenced;
    std::map<std::string, long long> shadow;
};

struct tally
{
    std::size_t acquisitions = 0;  // critical sections run
    std::size_t acquire_failures = 0;
    std::size_t overlaps = 0;
    std::size_t overlaps_in_validity = 0;
    std::size_t fenced_rejects = 0;   // sections refused by the fence (read or write)
    std::size_t fenced_accepted = 0;  // fenced writes that succeeded
    std::size_t fenced_errors = 0;    // fenced reads/writes that failed otherwise
    long long stale_accepted = 0;     // lost fenced updates; must be 0
    long long phantom = 0;            // final counter above accepted + uncertain writes; must be 0
    long long unfenced_lost = 0;      // lost shadow updates
};

tally count(const std::vector<section>& sections, std::size_t acquire_failures,
            const final_counters& finals);

// What a scenario must show.
struct expectation
{
    // Safe: no overlap at all. Unsafe: at least one overlap, caught by the fence (>= 1 reject),
    // where the unfenced shadow counter lost an update (what the fence saved).
    bool safe = true;
    // Unsafe only: whether the overlap must be within the earlier owner's validity (the lock
    // failed: true), or must all lie past it (the lock held, the client overran it: false).
    std::optional<bool> lock_broken{};
    // Shown, not asserted: whether owners overlap depends on timing (e.g. when a failover
    // strikes), so the overlaps are counted and printed but required neither way; `safe` and
    // `lock_broken` are ignored. The fence must still lose nothing.
    bool shown = false;
};

// Empty when the tally meets the expectation; otherwise one message per violation.
std::vector<std::string> violations(const tally& t, const expectation& e);

// ---- sharing one key between processes ----
//
// With several processes contending for one key, the lock should pass between them: a process
// whose own waiters keep handing the lock to each other must not keep it from the others. The
// `worker` of a section is the process that ran it.

// Consecutive critical sections on one key run by the same process.
struct same_process_run
{
    int worker = -1;
    std::string key;
    std::size_t sections = 0;
    std::int64_t start_ns = 0;  // the first section's start
    std::int64_t end_ns = 0;    // the last section's end
    std::int64_t span_ns() const { return end_ns - start_ns; }
};

// The longest such run in time over all keys; nullopt without sections. Sections are ordered
// by start per key; another process's section in between ends a run.
std::optional<same_process_run> longest_same_process_run(const std::vector<section>& sections);

// Sections per process, for processes 0 .. processes - 1 (others are not counted).
std::vector<std::size_t> sections_per_process(const std::vector<section>& sections, int processes);

// The least served process's count as a fraction of the mean count (1: perfectly even; 0 for
// no processes or no sections at all).
double least_share(const std::vector<std::size_t>& per_process);

// ---- the fair lock ----
//
// A fair lock grants in the order waiters joined its queue (docs/safety.md): a waiter has
// joined once its entry is committed on a majority of nodes, and if A had joined before B's
// join began, B may not be granted before A. Neither moment is seen by the worker itself, so
// each is replaced by a bound on the safe side, which makes the count exact rather than
// racy: a pair it counts is an overtaking, whatever the timing.
// - A joined no later than `joined_by`: the moment the driver, polling the nodes' queues,
//   had seen A's entry committed on a majority (each node's commit happened before the
//   reply that showed it, so the latest of those replies bounds them all).
// - B's join began no earlier than `call_ns`: B's worker read the clock before calling
//   acquire, and the join is the acquire's first request.
// - B was granted before A when B's section started first: both held the lock, and a holder
//   starts its section after its grant and releases after its section ends, so with no
//   overlap (checked apart, find_overlaps) the order of the sections is the order of the
//   grants.
// All three are CLOCK_MONOTONIC readings, one clock for every process of the machine, taken
// on possibly different CPUs: `margin_ns` is added to A's bound for the clock's reads across
// CPUs, so that a pair whose moments are closer than that is not counted.

// The moment by which each owner value (acquisition) was seen joined, by owner value.
using join_moments = std::map<std::string, std::int64_t, std::less<>>;

struct overtaking_count
{
    // Pairs of granted acquisitions where one (A) had joined before the other (B) called,
    // and B called before A's section began: those the order applies to and where B could
    // have come first at all (one that calls after A's section began is granted after A).
    // Shows that the count had something to count.
    std::size_t ordered_pairs = 0;
    // Of these, the pairs granted in the opposite order.
    std::size_t overtakings = 0;
};

// Over the sections of one key with a `call_ns`; sections whose owner has no join moment
// (granted without being seen in the queue) take part only as the later caller B.
overtaking_count count_overtakings(const std::vector<section>& sections, const join_moments& joined,
                                   std::int64_t margin_ns);

// From acquire called to section started, the longest of all sections with a `call_ns`
// (0 without any): how long a waiter waited, its own join and attempts included.
std::int64_t longest_wait_ns(const std::vector<section>& sections);

// What bounds a fair waiter's wait.
struct fair_wait_terms
{
    std::int64_t refresh_ns = 0;    // a waiter attempts at least this often (expiry / 4)
    std::int64_t entry_ttl_ns = 0;  // an entry outlives its last refresh this long (3 refreshes)
    std::int64_t retry_delay_max_ns = 0;  // the longest retry delay (a waiter's first pause)
    std::int64_t node_deadline_ns = 0;    // the per-node deadline of one request round
    std::int64_t hold_ns = 0;             // how long a holder holds before it releases
    std::size_t ahead = 0;                // waiters ahead at the join
    std::size_t silent_ahead = 0;         // of these, waiters that stopped refreshing
};

// The longest a fair waiter may wait, from its acquire call to its grant, with at most a
// minority of nodes stopped:
//   deadline                                        its join round
//   + (ahead + 1) * (pause + 2 * deadline + hold)   a turn of each waiter ahead, and its own
//   + silent_ahead * entry_ttl                      entries left by waiters that went silent
// where pause = max(refresh, retry_delay_max). Each turn: the head attempts within one pause
// of the previous release at the latest (told of its turn at once, or on its refresh when
// the message was lost or came during its attempt; its first pause after joining is a retry
// delay), its attempt and then its release are each decided by the running majority within
// one deadline, and it holds `hold` in between (its own turn has no release). A waiter ahead
// that stopped refreshing keeps its place until its entry expires, one entry_ttl, then the
// next head attempts on its own refresh, already counted in that head's turn.
std::int64_t fair_wait_bound_ns(const fair_wait_terms& t);

// ---- elections ----
//
// A worker in mode elect (worker.cpp) runs one candidate and one observer of an election. Its
// candidate logs a `lead` line when its campaign completes (value, term, the moment, the
// guard's validity), an `extended` line with the new validity each time the watchdog extends
// it, a `lost` line when the guard reports the loss, and a `resign` line before its release
// begins; its observer logs a `view` line for each leader it sees (or nobody). Times are
// CLOCK_MONOTONIC nanoseconds, as the sections'.

// One leadership, as its candidate logged it.
struct leadership
{
    int worker = 0;
    std::string value;  // the proposal it published
    std::uint64_t term = 0;
    std::int64_t start_ns = 0;  // the campaign completed
    std::int64_t until_ns = 0;  // the validity, as last logged (at the grant or an extension)
    std::optional<std::int64_t> resigned_ns;  // the resignation began
    std::optional<std::int64_t> lost_ns;      // the guard reported the loss

    // Until when this leader may claim to lead: its validity, or the moment its resignation
    // began if that came first (from then on its successor may be granted). A validity
    // extension that the log missed (the process killed in between) only makes this earlier,
    // so that an overlap found with it is one.
    std::int64_t end_ns() const;
};

// What an observer saw: a leader (its value and term), or nobody.
struct leader_view
{
    int worker = 0;
    std::optional<std::string> value;  // nullopt: nobody leads
    std::uint64_t term = 0;
    std::int64_t at_ns = 0;  // when the observe completed

    // Whether it names `l`: the same value and term.
    bool names(const leadership& l) const;
};

struct election_log
{
    std::vector<leadership> leaderships;  // in the order read (per worker, in its order)
    std::vector<leader_view> views;
};

// The lines of the grant and of a view (the worker formats its lines with them).
std::string format_lead(const leadership& l);
std::string format_view(const leader_view& v);

// Adds what a line of worker `worker` says about an election to `log`: `lead` and `view` add
// one; `extended` (until=), `lost` and `resign` (at=) update the worker's latest leadership,
// which must have the line's term. False for such a line that is malformed or names no
// leadership of that worker; true for others (kinds that are no election's are ignored).
bool read_election_line(const log_line& line, int worker, election_log& log);

// Two leaderships, the earlier first (by start).
struct leadership_pair
{
    const leadership* earlier = nullptr;
    const leadership* later = nullptr;
};

// Two leaders at once: every pair where the later one began before the earlier one's end_ns()
// (its validity, or its resignation's start). The pairs point into `all`.
std::vector<leadership_pair> find_leader_overlaps(const std::vector<leadership>& all);
std::vector<leadership_pair> find_leader_overlaps(std::vector<leadership>&&) = delete;

// Each pair of successive leaderships (by start) whose term did not grow.
std::vector<leadership_pair> terms_not_growing(const std::vector<leadership>& all);
std::vector<leadership_pair> terms_not_growing(std::vector<leadership>&&) = delete;

// The first leadership that began after `after_ns`, or nullptr.
const leadership* first_leadership_after(const std::vector<leadership>& all, std::int64_t after_ns);

// How long `worker`'s observer took to see `l`, when its last view at or before `at_ns` names
// `l`: from l's start to its first view naming it (negative when the observer saw the
// publication before the campaign completed). nullopt when its last view by then names
// another leader or nobody, or it logged none.
std::optional<std::int64_t> view_lag_ns(const std::vector<leader_view>& views, int worker,
                                        const leadership& l, std::int64_t at_ns);

// "w<worker> term <t> [start, end] ms (until <u>)", for messages.
std::string describe(const leadership& l);

// The views before `until_ns` that name a leader (value and term) that no candidate logged a
// grant of. A reader names only a leader that a quorum of nodes names, which a candidate that
// never completed its campaign is not. The end of a run can cut a campaign short after its
// publication and before its grant is logged: a scenario whose leaders may still change at
// its end checks the views up to a margin before it (the end's first signal less the longest
// a publication round can take before its grant is logged).
std::vector<const leader_view*> views_of_no_leader(
    const election_log& log, std::int64_t until_ns = std::numeric_limits<std::int64_t>::max());
std::vector<const leader_view*> views_of_no_leader(election_log&&, std::int64_t = 0) = delete;

// What an election's log must never show, one message each (empty when none): two leaders at
// once (find_leader_overlaps), a term that did not grow (terms_not_growing) and a view before
// `views_until_ns` of no leader (views_of_no_leader); and "no leader at all" when there is
// none.
std::vector<std::string> election_violations(
    const election_log& log,
    std::int64_t views_until_ns = std::numeric_limits<std::int64_t>::max());

// The table: a header (two lines) and one row per scenario.
std::string table_header();
std::string table_row(std::string_view scenario, const expectation& e, const tally& t, bool passed);

}  // namespace redlock::faults
