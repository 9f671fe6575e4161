// SPDX-License-Identifier: BSL-1.0
#include "checker.hpp"

#include <algorithm>
#include <charconv>
#include <set>

namespace redlock::faults {
namespace {

template <class T>
std::optional<T> number(std::string_view s)
{
    T v{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
        return std::nullopt;
    return v;
}

std::string pad(std::string s, std::size_t width, bool right)
{
    if (s.size() >= width)
        return s;
    const std::string fill(width - s.size(), ' ');
    return right ? fill + s : s + fill;
}

// Column widths of the table; the first column is the scenario name.
constexpr std::size_t name_width = 24;
constexpr std::size_t kind_width = 6;
constexpr std::size_t number_width = 9;
constexpr std::size_t overlap_width = 12;

}  // namespace

std::string_view to_string(outcome o)
{
    switch (o) {
        case outcome::ok:
            return "ok";
        case outcome::stale:
            return "stale";
        case outcome::error:
            return "error";
        case outcome::skipped:
            return "skipped";
    }
    return "?";
}

std::optional<outcome> parse_outcome(std::string_view s)
{
    for (auto o : {outcome::ok, outcome::stale, outcome::error, outcome::skipped})
        if (to_string(o) == s)
            return o;
    return std::nullopt;
}

std::optional<std::string_view> log_line::get(std::string_view name) const
{
    auto it = fields.find(name);
    if (it == fields.end())
        return std::nullopt;
    return std::string_view(it->second);
}

std::optional<log_line> parse_line(std::string_view line)
{
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
        line.remove_suffix(1);
    log_line out;
    const auto space = line.find(' ');
    out.kind = std::string(line.substr(0, space));
    if (out.kind.empty() || out.kind.find('=') != std::string::npos)
        return std::nullopt;
    std::string_view rest = space == std::string_view::npos ? "" : line.substr(space + 1);
    while (!rest.empty()) {
        const auto eq = rest.find('=');
        if (eq == 0 || eq == std::string_view::npos)
            return std::nullopt;
        const std::string_view name = rest.substr(0, eq);
        if (name.find(' ') != std::string_view::npos)
            return std::nullopt;
        rest.remove_prefix(eq + 1);
        if (name == "why") {  // free text to the end of the line
            out.fields.emplace(name, rest);
            break;
        }
        const auto end = rest.find(' ');
        out.fields.emplace(name, rest.substr(0, end));
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    }
    return out;
}

std::optional<section> parse_section(const log_line& line, int worker)
{
    if (line.kind != "section")
        return std::nullopt;
    auto key = line.get("key");
    auto token = line.get("token");
    auto owner = line.get("owner");
    auto start = line.get("start");
    auto end = line.get("end");
    auto until = line.get("until");
    auto read = line.get("read");
    auto write = line.get("write");
    auto shadow = line.get("shadow");
    if (!key || !token || !owner || !start || !end || !until || !read || !write || !shadow)
        return std::nullopt;
    section s;
    s.worker = worker;
    s.key = std::string(*key);
    s.owner = std::string(*owner);
    auto t = number<std::uint64_t>(*token);
    auto b = number<std::int64_t>(*start);
    auto e = number<std::int64_t>(*end);
    auto u = number<std::int64_t>(*until);
    auto r = parse_outcome(*read);
    auto w = parse_outcome(*write);
    if (s.key.empty() || s.owner.empty() || !t || !b || !e || !u || !r || !w || *e < *b ||
        (*shadow != "ok" && *shadow != "skipped"))
        return std::nullopt;
    s.token = *t;
    s.start_ns = *b;
    s.end_ns = *e;
    s.until_ns = *u;
    s.read = *r;
    s.write = *w;
    s.shadow_written = *shadow == "ok";
    s.shared = line.get("shared") == "1";
    if (auto call = line.get("call")) {
        auto c = number<std::int64_t>(*call);
        if (!c)
            return std::nullopt;
        s.call_ns = *c;
    }
    return s;
}

std::string format_section(const section& s)
{
    return "section key=" + s.key + " token=" + std::to_string(s.token) + " owner=" + s.owner +
           " start=" + std::to_string(s.start_ns) + " end=" + std::to_string(s.end_ns) +
           " until=" + std::to_string(s.until_ns) + " read=" + std::string(to_string(s.read)) +
           " write=" + std::string(to_string(s.write)) +
           " shadow=" + (s.shadow_written ? "ok" : "skipped") + (s.shared ? " shared=1" : "") +
           (s.call_ns != 0 ? " call=" + std::to_string(s.call_ns) : std::string());
}

std::vector<overlap> find_overlaps(const std::vector<section>& sections)
{
    std::map<std::string_view, std::vector<const section*>> by_key;
    for (const auto& s : sections)
        by_key[s.key].push_back(&s);
    std::vector<overlap> out;
    for (auto& [key, list] : by_key) {
        std::sort(list.begin(), list.end(), [](const section* a, const section* b) {
            return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns < b->end_ns;
        });
        // Sorted by start, the sections that overlap list[i] from later on are the ones that
        // start before it ends. Touching ends (one ends the very nanosecond the next starts)
        // do not count: the end is taken before the release begins.
        for (std::size_t i = 0; i < list.size(); ++i) {
            for (std::size_t j = i + 1; j < list.size() && list[j]->start_ns < list[i]->end_ns;
                 ++j) {
                if (list[j]->owner == list[i]->owner || (list[j]->shared && list[i]->shared))
                    continue;
                out.push_back({list[i], list[j], list[j]->start_ns < list[i]->until_ns});
            }
        }
    }
    std::sort(out.begin(), out.end(), [](const overlap& a, const overlap& b) {
        return a.earlier->start_ns < b.earlier->start_ns;
    });
    return out;
}

std::size_t most_at_once_in_validity(const std::vector<section>& sections)
{
    // A sweep per key over the windows' edges; at one instant an end comes before a start.
    std::map<std::string_view, std::vector<std::pair<std::int64_t, int>>> edges;
    for (const auto& s : sections) {
        const std::int64_t end = std::min(s.end_ns, s.until_ns);
        if (end <= s.start_ns)
            continue;  // began past its validity: no window
        edges[s.key].emplace_back(s.start_ns, +1);
        edges[s.key].emplace_back(end, -1);
    }
    std::size_t most = 0;
    for (auto& [key, list] : edges) {
        std::sort(list.begin(), list.end());
        long inside = 0;
        for (const auto& [at, step] : list) {
            inside += step;
            most = std::max(most, static_cast<std::size_t>(std::max(inside, 0L)));
        }
    }
    return most;
}

tally count(const std::vector<section>& sections, std::size_t acquire_failures,
            const final_counters& finals)
{
    tally t;
    t.acquisitions = sections.size();
    t.acquire_failures = acquire_failures;
    for (const auto& o : find_overlaps(sections)) {
        ++t.overlaps;
        t.overlaps_in_validity += o.in_validity ? 1 : 0;
    }
    std::map<std::string, long long> accepted, uncertain, shadow_writes;
    std::set<std::string> keys;
    for (const auto& s : sections) {
        keys.insert(s.key);
        if (s.read == outcome::stale || s.write == outcome::stale)
            ++t.fenced_rejects;
        if (s.read == outcome::error || s.write == outcome::error)
            ++t.fenced_errors;
        if (s.write == outcome::ok)
            ++t.fenced_accepted, ++accepted[s.key];
        if (s.write == outcome::error)
            ++uncertain[s.key];  // may or may not have been applied
        if (s.shadow_written)
            ++shadow_writes[s.key];
    }
    for (const auto& [k, v] : finals.fenced)
        keys.insert(k);
    for (const auto& [k, v] : finals.shadow)
        keys.insert(k);
    auto final_of = [](const std::map<std::string, long long>& m, const std::string& k) {
        auto it = m.find(k);
        return it == m.end() ? 0LL : it->second;
    };
    for (const auto& k : keys) {
        const long long fenced = final_of(finals.fenced, k);
        t.stale_accepted += std::max(0LL, accepted[k] - fenced);
        t.phantom += std::max(0LL, fenced - accepted[k] - uncertain[k]);
        t.unfenced_lost += std::max(0LL, shadow_writes[k] - final_of(finals.shadow, k));
    }
    return t;
}

std::vector<std::string> violations(const tally& t, const expectation& e)
{
    std::vector<std::string> out;
    if (t.acquisitions == 0)
        out.push_back("no critical section ran at all");
    if (t.stale_accepted != 0)
        out.push_back(std::to_string(t.stale_accepted) +
                      " fenced update(s) lost: a stale write got past the fence");
    if (t.phantom != 0)
        out.push_back("the fenced counters hold " + std::to_string(t.phantom) +
                      " more increment(s) than the writes that were accepted");
    if (t.fenced_errors != 0)
        // The resource server is never faulted; an error there also makes the lost-update
        // count inexact (an errored write may have been applied).
        out.push_back(std::to_string(t.fenced_errors) +
                      " fenced request(s) failed against the never-faulted resource server");
    if (e.shown)
        return out;
    if (e.safe) {
        if (t.overlaps != 0)
            out.push_back(std::to_string(t.overlaps) + " overlapping critical section(s) (" +
                          std::to_string(t.overlaps_in_validity) +
                          " within the earlier owner's validity) in a safe scenario");
        return out;
    }
    if (t.overlaps == 0)
        out.push_back("no overlapping critical sections: the fault did not take effect");
    if (t.fenced_rejects == 0)
        out.push_back("no request was refused by the fence");
    if (t.unfenced_lost == 0)
        out.push_back("the unfenced shadow counter lost no update: the overlap never raced");
    if (e.lock_broken && *e.lock_broken && t.overlaps_in_validity == 0)
        out.push_back(
            "no overlap began within the earlier owner's validity: the lock did not fail");
    if (e.lock_broken && !*e.lock_broken && t.overlaps_in_validity != 0)
        out.push_back(std::to_string(t.overlaps_in_validity) +
                      " overlap(s) began within the earlier owner's validity: the lock itself "
                      "failed, not just the paused client");
    return out;
}

std::optional<same_process_run> longest_same_process_run(const std::vector<section>& sections)
{
    std::map<std::string_view, std::vector<const section*>> by_key;
    for (const auto& s : sections)
        by_key[s.key].push_back(&s);
    std::optional<same_process_run> best;
    for (auto& [key, list] : by_key) {
        std::stable_sort(list.begin(), list.end(), [](const section* a, const section* b) {
            return a->start_ns < b->start_ns;
        });
        same_process_run current;
        for (const section* s : list) {
            if (current.sections == 0 || s->worker != current.worker) {
                current = {s->worker, s->key, 0, s->start_ns, s->end_ns};
            }
            ++current.sections;
            current.end_ns = std::max(current.end_ns, s->end_ns);
            if (!best || current.span_ns() > best->span_ns())
                best = current;
        }
    }
    return best;
}

std::vector<std::size_t> sections_per_process(const std::vector<section>& sections, int processes)
{
    std::vector<std::size_t> out(static_cast<std::size_t>(std::max(processes, 0)), 0);
    for (const auto& s : sections)
        if (s.worker >= 0 && s.worker < processes)
            ++out[static_cast<std::size_t>(s.worker)];
    return out;
}

double least_share(const std::vector<std::size_t>& per_process)
{
    if (per_process.empty())
        return 0.0;
    std::size_t total = 0;
    for (auto n : per_process)
        total += n;
    if (total == 0)
        return 0.0;
    const double mean = static_cast<double>(total) / static_cast<double>(per_process.size());
    return static_cast<double>(*std::min_element(per_process.begin(), per_process.end())) / mean;
}

std::string table_header()
{
    std::string h = pad("scenario", name_width, false) + " " + pad("kind", kind_width, false) +
                    pad("acquired", number_width, true) + pad("acq fail", number_width, true) +
                    pad("overlaps", overlap_width, true) + pad("rejected", number_width, true) +
                    pad("stale ok", number_width, true) + pad("unfenced", number_width, true) +
                    "  result\n";
    h += pad("", name_width + 1 + kind_width + 2 * number_width, false) +
         pad("(in valid.)", overlap_width, true) + pad("by fence", number_width, true) +
         pad("(lost)", number_width, true) + pad("lost", number_width, true) + "\n";
    return h;
}

std::string table_row(std::string_view scenario, const expectation& e, const tally& t, bool passed)
{
    const std::string overlaps =
        std::to_string(t.overlaps) + " (" + std::to_string(t.overlaps_in_validity) + ")";
    return pad(std::string(scenario), name_width, false) + " " +
           pad(e.shown  ? "shown"
               : e.safe ? "safe"
                        : "unsafe",
               kind_width, false) +
           pad(std::to_string(t.acquisitions), number_width, true) +
           pad(std::to_string(t.acquire_failures), number_width, true) +
           pad(overlaps, overlap_width, true) +
           pad(std::to_string(t.fenced_rejects), number_width, true) +
           pad(std::to_string(t.stale_accepted), number_width, true) +
           pad(std::to_string(t.unfenced_lost), number_width, true) + "  " +
           (passed ? "ok" : "FAIL") + "\n";
}

overtaking_count count_overtakings(const std::vector<section>& sections, const join_moments& joined,
                                   std::int64_t margin_ns)
{
    struct granted
    {
        std::string_view key;
        std::int64_t call_ns;
        std::optional<std::int64_t> joined_by;
        std::int64_t start_ns;
    };
    std::vector<granted> g;
    for (const auto& s : sections) {
        if (s.call_ns == 0)
            continue;
        auto it = joined.find(s.owner);
        g.push_back({s.key, s.call_ns,
                     it == joined.end() ? std::nullopt : std::optional<std::int64_t>(it->second),
                     s.start_ns});
    }
    overtaking_count out;
    for (const auto& a : g) {
        if (!a.joined_by)
            continue;
        for (const auto& b : g) {
            if (&a == &b || a.key != b.key || *a.joined_by + margin_ns >= b.call_ns ||
                b.call_ns >= a.start_ns)
                continue;
            ++out.ordered_pairs;
            if (b.start_ns < a.start_ns)
                ++out.overtakings;
        }
    }
    return out;
}

std::int64_t longest_wait_ns(const std::vector<section>& sections)
{
    std::int64_t longest = 0;
    for (const auto& s : sections)
        if (s.call_ns != 0)
            longest = std::max(longest, s.start_ns - s.call_ns);
    return longest;
}

std::int64_t fair_wait_bound_ns(const fair_wait_terms& t)
{
    const std::int64_t pause = std::max(t.refresh_ns, t.retry_delay_max_ns);
    const std::int64_t turn = pause + 2 * t.node_deadline_ns + t.hold_ns;
    return t.node_deadline_ns + static_cast<std::int64_t>(t.ahead + 1) * turn +
           static_cast<std::int64_t>(t.silent_ahead) * t.entry_ttl_ns;
}

std::int64_t leadership::end_ns() const
{
    return resigned_ns ? std::min(until_ns, *resigned_ns) : until_ns;
}

bool leader_view::names(const leadership& l) const
{
    return value && *value == l.value && term == l.term;
}

std::string format_lead(const leadership& l)
{
    return "lead value=" + l.value + " term=" + std::to_string(l.term) +
           " start=" + std::to_string(l.start_ns) + " until=" + std::to_string(l.until_ns);
}

std::string format_view(const leader_view& v)
{
    // "-" for nobody: a proposal of the workers is never "-".
    return "view leader=" + v.value.value_or("-") + " term=" + std::to_string(v.term) +
           " at=" + std::to_string(v.at_ns);
}

bool read_election_line(const log_line& line, int worker, election_log& log)
{
    const std::string_view kind = line.kind;
    if (kind != "lead" && kind != "extended" && kind != "lost" && kind != "resign" &&
        kind != "view")
        return true;
    const auto term = number<std::uint64_t>(line.get("term").value_or(""));
    if (!term)
        return false;
    if (kind == "lead") {
        const auto value = line.get("value");
        const auto start = number<std::int64_t>(line.get("start").value_or(""));
        const auto until = number<std::int64_t>(line.get("until").value_or(""));
        if (!value || value->empty() || !start || !until)
            return false;
        log.leaderships.push_back({worker, std::string(*value), *term, *start, *until, {}, {}});
        return true;
    }
    if (kind == "view") {
        const auto leader = line.get("leader");
        const auto at = number<std::int64_t>(line.get("at").value_or(""));
        if (!leader || leader->empty() || !at)
            return false;
        log.views.push_back(
            {worker,
             *leader == "-" ? std::nullopt : std::optional<std::string>(std::string(*leader)),
             *term, *at});
        return true;
    }
    // The worker's latest leadership: it leads once at a time.
    auto it = std::find_if(log.leaderships.rbegin(), log.leaderships.rend(),
                           [&](const leadership& l) { return l.worker == worker; });
    if (it == log.leaderships.rend() || it->term != *term)
        return false;
    const auto at =
        number<std::int64_t>(line.get(kind == "extended" ? "until" : "at").value_or(""));
    if (!at)
        return false;
    if (kind == "extended")
        it->until_ns = std::max(it->until_ns, *at);
    else if (kind == "lost")
        it->lost_ns = *at;
    else
        it->resigned_ns = *at;
    return true;
}

namespace {

std::vector<const leadership*> by_start(const std::vector<leadership>& all)
{
    std::vector<const leadership*> out;
    for (const auto& l : all)
        out.push_back(&l);
    std::stable_sort(out.begin(), out.end(), [](const leadership* a, const leadership* b) {
        return a->start_ns < b->start_ns;
    });
    return out;
}

}  // namespace

std::vector<leadership_pair> find_leader_overlaps(const std::vector<leadership>& all)
{
    const auto sorted = by_start(all);
    std::vector<leadership_pair> out;
    // Sorted by start, the leaderships that overlap sorted[i] from later on are those that
    // start before it ends.
    for (std::size_t i = 0; i < sorted.size(); ++i)
        for (std::size_t j = i + 1; j < sorted.size() && sorted[j]->start_ns < sorted[i]->end_ns();
             ++j)
            out.push_back({sorted[i], sorted[j]});
    return out;
}

std::vector<leadership_pair> terms_not_growing(const std::vector<leadership>& all)
{
    const auto sorted = by_start(all);
    std::vector<leadership_pair> out;
    for (std::size_t i = 1; i < sorted.size(); ++i)
        if (sorted[i]->term <= sorted[i - 1]->term)
            out.push_back({sorted[i - 1], sorted[i]});
    return out;
}

const leadership* first_leadership_after(const std::vector<leadership>& all, std::int64_t after_ns)
{
    const leadership* first = nullptr;
    for (const auto& l : all)
        if (l.start_ns > after_ns && (!first || l.start_ns < first->start_ns))
            first = &l;
    return first;
}

std::optional<std::int64_t> view_lag_ns(const std::vector<leader_view>& views, int worker,
                                        const leadership& l, std::int64_t at_ns)
{
    const leader_view* last = nullptr;
    std::optional<std::int64_t> first_naming;
    for (const auto& v : views) {
        if (v.worker != worker || v.at_ns > at_ns)
            continue;
        if (!last || v.at_ns >= last->at_ns)
            last = &v;
        if (v.names(l) && (!first_naming || v.at_ns < *first_naming))
            first_naming = v.at_ns;
    }
    if (!last || !last->names(l))
        return std::nullopt;
    return *first_naming - l.start_ns;
}

std::string describe(const leadership& l)
{
    return "w" + std::to_string(l.worker) + " term " + std::to_string(l.term) + " [" +
           std::to_string(l.start_ns / 1'000'000) + ", " + std::to_string(l.end_ns() / 1'000'000) +
           "] ms (until " + std::to_string(l.until_ns / 1'000'000) +
           (l.resigned_ns ? ", resigned" : "") + (l.lost_ns ? ", lost" : "") + ")";
}

std::vector<const leader_view*> views_of_no_leader(const election_log& log, std::int64_t until_ns)
{
    std::vector<const leader_view*> out;
    for (const auto& v : log.views)
        if (v.value && v.at_ns < until_ns &&
            std::none_of(log.leaderships.begin(), log.leaderships.end(),
                         [&](const leadership& l) { return v.names(l); }))
            out.push_back(&v);
    return out;
}

std::vector<std::string> election_violations(const election_log& log, std::int64_t views_until_ns)
{
    const std::vector<leadership>& all = log.leaderships;
    std::vector<std::string> out;
    if (all.empty())
        out.push_back("nobody ever led");
    for (const auto& p : find_leader_overlaps(all))
        out.push_back("two leaders at once: " + describe(*p.earlier) + " and " +
                      describe(*p.later));
    for (const auto& p : terms_not_growing(all))
        out.push_back("the term did not grow: " + describe(*p.earlier) + " then " +
                      describe(*p.later));
    for (const leader_view* v : views_of_no_leader(log, views_until_ns))
        out.push_back("observer w" + std::to_string(v->worker) + " named " + *v->value +
                      " in term " + std::to_string(v->term) + " at " +
                      std::to_string(v->at_ns / 1'000'000) + " ms, which no candidate was granted");
    return out;
}

}  // namespace redlock::faults
