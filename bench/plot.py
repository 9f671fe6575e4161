#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Turns redlock_bench runs into the tables of docs/benchmarks.md and a latency plot.

    bench/plot.py [--doc docs/benchmarks.md] [--png docs/benchmarks-latency.png]
                  [--block NAME] RUN.log...
    bench/plot.py --check [--doc docs/benchmarks.md]

Each RUN.log is the output of one redlock_bench run; only its `RESULT {json}` lines are read.
Figures of the same scenario and parameters are combined across runs by their median (the
spread is shown where it matters); a column or target that no run measured (logs of an older
program) is left out. The tables replace whatever lies between the markers
<!-- bench:results:begin --> and <!-- bench:results:end --> in the document (with --block
NAME, <!-- bench:NAME:begin --> and <!-- bench:NAME:end -->: a document may hold several
blocks, each from runs of its own), so the prose around them is kept; a document without the
markers gets them appended. A block's first line names the logs (relative to the repository
when they are in it), so that --check (the docs test) can regenerate every block from them
and compare: keep the logs of published figures in bench/results/. The plot (acquire latency
percentiles against concurrency) is drawn by gnuplot (apt-get install gnuplot-nox); without
gnuplot only the tables are written.
Python 3 standard library only.
"""

import argparse
import difflib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

DEFAULT_BLOCK = "results"


def markers(name):
    """The begin and end markers of the generated block `name`."""
    return f"<!-- bench:{name}:begin -->", f"<!-- bench:{name}:end -->"


BLOCK_NAMES = re.compile(r"<!-- bench:([A-Za-z0-9_-]+):begin -->")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
LOGS = "<!-- bench:logs"  # the first line of the block: the logs it was generated from

# Published figures of established Redlock libraries on a machine of this kind (2 vCPUs, 5
# local Redis nodes), for comparison; this program does not measure them.
PEER_NAMES = "redsync, node-redlock and redis-plus-plus"
PEERS = {
    "cycles_c64": (5400, 7400),
    "acquire_p50_c1_us": (135, 300),
    "contended_acq_per_s": (490, 650),
    "contended_gap_mean_us": (150, 390),
    "contended_handoffs_per_s": (3, 24),
}


# Notes under the contended table, each with the field it explains (None: always).
CONTENDED_NOTES = [
    ("Gap: from the previous holder's release completing to the next acquire completing (it "
     "can be negative: the next acquire may reach its quorum before the releaser has every "
     "node's reply); \"from release start\": from the previous holder leaving the critical "
     "section. Handoff: the lock goes to another worker. \"After 1 ms idle\": the raw round "
     "measured after the machine idled as long as a hold, since idle CPUs (of this VM "
     "especially) wake slowly.", None),
    ("Per-worker min ÷ mean: the least served worker's acquisitions against an even share (1 "
     "is perfectly even).", "per_worker_min_vs_mean"),
    ("Longest run: the most consecutive acquisitions by one worker (with a client per worker, "
     "one client) while the others waited, and how long it lasted from its first acquisition "
     "to leaving its last critical section.", "longest_same_worker_run"),
    (f"Peers: {PEERS['contended_acq_per_s'][0]}–{PEERS['contended_acq_per_s'][1]} "
     f"acquisitions/s, mean gaps {PEERS['contended_gap_mean_us'][0]}–"
     f"{PEERS['contended_gap_mean_us'][1]} us, {PEERS['contended_handoffs_per_s'][0]}–"
     f"{PEERS['contended_handoffs_per_s'][1]} handoffs/s with their default retry delays.", None),
]


def flatten(obj, prefix=""):
    out = {}
    for k, v in obj.items():
        key = prefix + k
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def group_key(r):
    s = r["scenario"]
    if s == "server":
        if r.get("measure") == "latency":
            return ("server", "latency")
        return ("server", "throughput", r["depth"], r["connections_per_node"])
    if s in ("uncontended", "degraded"):
        return (s, r["concurrency"])
    if s == "contended":
        return (s, r["workers"], r["hold_ms"], r["retry"], r["clients"], r.get("stopped_nodes", 0),
                r.get("fair", False))
    if s == "degraded_contended":
        return (s, r["workers"], r["hold_ms"])
    if s == "held":
        return (s, r["k"], r["expiry_ms"], r["extended_by"])
    if s == "cluster":
        return (s, r["masters"], r["concurrency"])
    if s == "rw":
        return (s, r["readers"], r["writers"], r["hold_ms"])
    if s == "semaphore":
        return (s, r["permits"], r["workers"], r["hold_ms"])
    if s == "fair":
        return (s, r["workers"], r["hold_ms"])
    return (s,)


class Group:
    """The results of one scenario and parameter set, one per run."""

    def __init__(self):
        self.runs = []

    def values(self, field):
        vals = [r[field] for r in self.runs if isinstance(r.get(field), (int, float))
                and not isinstance(r.get(field), bool)]
        return vals

    def med(self, field):
        vals = self.values(field)
        return statistics.median(vals) if vals else None

    def lo(self, field):
        vals = self.values(field)
        return min(vals) if vals else None

    def hi(self, field):
        vals = self.values(field)
        return max(vals) if vals else None

    def first(self, field):
        for r in self.runs:
            if field in r:
                return r[field]
        return None


def read_runs(paths):
    groups = {}
    metas = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.startswith("RESULT "):
                    continue
                r = json.loads(line[len("RESULT "):])
                if r["scenario"] in ("meta", "meta_end"):
                    metas.append((path, r))
                    continue
                groups.setdefault(group_key(r), Group()).runs.append(flatten(r))
    return groups, metas


def num(v, digits=0):
    if v is None:
        return "–"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def cores(v, digits=2):
    """CPU in cores; negative means unknown (servers given with --nodes)."""
    return "–" if v is None or v < 0 else num(v, digits)


def spread(g, field, digits=0):
    """median (min–max) when there are several runs."""
    m = g.med(field)
    if m is None:
        return "–"
    if len(g.values(field)) < 2:
        return num(m, digits)
    return f"{num(m, digits)} ({num(g.lo(field), digits)}–{num(g.hi(field), digits)})"


def ratio(a, b, digits=2):
    if a is None or b in (None, 0):
        return "–"
    return f"{a / b:.{digits}f}"


def idle_round_text(lat):
    """The SET round after an idle pause, for logs that have it (older runs do not)."""
    p50 = lat.med("round_set_quorum_after_idle_us.p50")
    if p50 is None:
        return ""
    return (f"; the same `SET NX PX` round until the quorum's reply after "
            f"{num(lat.med('idle_pause_ms'))} ms of idle machine (as a hand-off after a 1 ms "
            f"hold sees it) {num(p50)} / {num(lat.med('round_set_quorum_after_idle_us.p99'))}")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def round_trips(g, field):
    """A gap in round trips of the same run; none when the run measured no round (a run
    without the server scenario reports 0)."""
    return g.med(field) or None


def column_table(groups, keys, columns):
    """A table with one row per key of `groups` and one column per (title, cell) pair, where
    cell(key, group) gives the text. A column whose cells are all "–" (the field is absent
    from every run, as in logs of older versions of the program) is left out."""
    cells = [[cell(k, groups[k]) for _, cell in columns] for k in keys]
    kept = [i for i in range(len(columns))
            if any(not set(str(row[i]).split(" / ")) <= {"–"} for row in cells)]
    return table([columns[i][0] for i in kept], [[row[i] for i in kept] for row in cells])


def section(lines, title, body, note=None):
    lines += [f"### {title}", "", body, ""]
    if note:
        lines += [note, ""]


def errors(g):
    return f"{num(g.hi('acquire_errors'))}/{num(g.hi('release_errors'))}"


def bound_by_depth(g):
    """A cluster's raw cycles/s at each pipeline depth measured: "16: 1,000, 64: 2,000"."""
    prefix = "bound_cycles_per_s_by_depth."
    depths = sorted({int(f[len(prefix):]) for r in g.runs for f in r if f.startswith(prefix)})
    return ", ".join(f"{d}: {num(g.med(prefix + str(d)))}" for d in depths) or "–"


def render(groups, metas, png_name, sources):
    lines = []
    runs = len([m for m in metas if m[1]["scenario"] == "meta"])
    meta = next((m for _, m in metas if m["scenario"] == "meta"), {})
    loads = [m["loadavg"] for _, m in metas if m["scenario"] == "meta"]
    folders = sorted({os.path.dirname(s) for s in sources})
    lines.append(LOGS + " " + " ".join(sources) + " -->")
    lines.append(
        f"Generated by `bench/plot.py` from {runs} run(s)"
        + (f" (logs in `{'`, `'.join(f + '/' for f in folders)}`)" if folders else "")
        + ": each figure is the median over the runs (min–max in brackets where shown). "
        f"Machine: {meta.get('cpus', '?')} CPUs ({meta.get('cpu_model', '?')}), kernel "
        f"{meta.get('kernel', '?')}, redis {meta.get('redis_version', '?')}, "
        + (f"{meta.get('nodes', '?')} nodes, " if any(k[0] != "cluster" for k in groups)
           else "")
        + f"g++ {meta.get('compiler', '?')}"
        f"{'' if meta.get('optimized', True) else ' (NOT optimized)'}, "
        f"{num(meta.get('duration_s'), 1)} s per measurement. "
        f"Load average (1, 5, 15 min) at the start of each run: {'; '.join(loads)}.")
    lines.append("")

    # --- server bound -----------------------------------------------------------------
    srv = sorted((k for k in groups if k[:2] == ("server", "throughput")),
                 key=lambda k: (k[3], k[2]))
    pipelined = max((groups[k].med("cycles_per_s") or 0 for k in srv if k[2] > 1), default=0)
    unpipelined = max((groups[k].med("cycles_per_s") or 0 for k in srv if k[2] == 1), default=0)
    lat = groups.get(("server", "latency"))
    if lat or srv:
        lines.append("### (d) The servers' bound: the same commands sent raw")
        lines.append("")
    if lat:
        lines.append(
            "Round trips without load (p50 / p99, us): one node, `SET NX PX` "
            f"{num(lat.med('node_set_us.p50'))} / {num(lat.med('node_set_us.p99'))}, "
            f"compare-and-delete {num(lat.med('node_delete_us.p50'))} / "
            f"{num(lat.med('node_delete_us.p99'))}; all nodes at once, `SET NX PX` until the "
            f"quorum's reply {num(lat.med('round_set_quorum_us.p50'))} / "
            f"{num(lat.med('round_set_quorum_us.p99'))}, until the last reply "
            f"{num(lat.med('round_set_us.p50'))} / {num(lat.med('round_set_us.p99'))}, "
            f"compare-and-delete until the last reply {num(lat.med('round_delete_us.p50'))} / "
            f"{num(lat.med('round_delete_us.p99'))}" + idle_round_text(lat) + ".")
        lines.append("")
    if srv:
        lines.append(column_table(groups, srv, [
            ("depth", lambda k, g: k[2]),
            ("connections per node", lambda k, g: k[3]),
            ("commands/s", lambda k, g: spread(g, "commands_per_s")),
            ("5-node cycles/s", lambda k, g: spread(g, "cycles_per_s")),
            ("batch p50 us", lambda k, g: num(g.med("batch_us.p50"))),
            ("client cores", lambda k, g: cores(g.med("client_cores"))),
            ("servers cores", lambda k, g: cores(g.med("servers_cores"))),
            ("replies as expected",
             lambda k, g: "yes" if all(r.get("replies_as_expected") for r in g.runs) else "NO"),
        ]))
        lines.append("")
        lines.append(
            f"Bound used for the ratios below: pipelined {num(pipelined)} cycles/s (best depth "
            f"> 1), unpipelined {num(unpipelined)} cycles/s (depth 1). A cycle is `SET NX PX` "
            "plus the compare-and-delete on every node, 10 commands with 5 nodes.")
        lines.append("")

    # --- uncontended ----------------------------------------------------------------------
    unc = sorted(k for k in groups if k[0] == "uncontended")
    if unc:
        notes = []
        c1 = groups.get(("uncontended", 1))
        c64 = groups.get(("uncontended", 64))
        if c64:
            lo, hi = PEERS["cycles_c64"]
            notes.append(f"C=64: {num(c64.med('cycles_per_s'))} cycles/s = "
                         f"{ratio(c64.med('cycles_per_s'), hi, 1)}x to "
                         f"{ratio(c64.med('cycles_per_s'), lo, 1)}x the peers' "
                         f"{num(lo)}–{num(hi)}")
        if c1:
            lo, hi = PEERS["acquire_p50_c1_us"]
            notes.append(f"C=1: acquire p50 {num(c1.med('acquire_us.p50'))} us against the "
                         f"peers' {lo}–{hi} us ({ratio(lo, c1.med('acquire_us.p50'), 1)}x to "
                         f"{ratio(hi, c1.med('acquire_us.p50'), 1)}x faster)")
        note = f"Against {PEER_NAMES}: " + "; ".join(notes) + "." if notes else None
        if png_name:
            image = f"![acquire latency percentiles against concurrency]({png_name})"
            note = f"{note}\n\n{image}" if note else image
        section(lines, "(a) Uncontended: C coroutines, each on its own key", column_table(groups, unc, [
            ("C", lambda k, g: k[1]),
            ("cycles/s", lambda k, g: spread(g, "cycles_per_s")),
            ("÷ pipelined bound", lambda k, g: ratio(g.med("cycles_per_s"), pipelined)),
            ("÷ unpipelined bound", lambda k, g: ratio(g.med("cycles_per_s"), unpipelined)),
            (f"÷ best peer at C=64 ({num(PEERS['cycles_c64'][1])})",
             lambda k, g: ratio(g.med("cycles_per_s"), PEERS["cycles_c64"][1]) if k[1] == 64 else "–"),
            ("acquire p50 us", lambda k, g: spread(g, "acquire_us.p50")),
            ("p99", lambda k, g: num(g.med("acquire_us.p99"))),
            ("p99.9", lambda k, g: num(g.med("acquire_us.p999"))),
            ("release p50 us", lambda k, g: num(g.med("release_us.p50"))),
            ("release p50 ÷ acquire p50", lambda k, g: num(g.med("release_p50_vs_acquire_p50"), 2)),
            ("acquire p50 ÷ raw quorum round", lambda k, g: num(g.med("acquire_p50_vs_raw_round"), 2)),
            ("client cores", lambda k, g: cores(g.med("client_cores"))),
            ("servers cores", lambda k, g: cores(g.med("servers_cores"))),
            ("errors acq/rel (max)", lambda k, g: errors(g)),
        ]), note)

    # --- degraded -----------------------------------------------------------------------
    deg = sorted(k for k in groups if k[0] == "degraded")
    if deg:
        section(lines, "(e) Degraded: uncontended with one node stopped", column_table(groups, deg, [
            ("C", lambda k, g: k[1]),
            ("nodes stopped",
             lambda k, g: f"{num(g.first('stopped_nodes'))} of {num(g.first('nodes'))}"),
            ("all up cycles/s", lambda k, g: spread(g, "up_cycles_per_s")),
            ("one stopped cycles/s", lambda k, g: spread(g, "cycles_per_s")),
            ("÷ all up", lambda k, g: spread(g, "throughput_vs_up", 2)),
            ("all up acquire p50 us", lambda k, g: num(g.med("up_acquire_us.p50"))),
            ("one stopped acquire p50 us", lambda k, g: num(g.med("acquire_us.p50"))),
            ("÷ all up", lambda k, g: num(g.med("acquire_p50_vs_up"), 2)),
            ("all up release p50 us", lambda k, g: num(g.med("up_release_us.p50"))),
            ("one stopped release p50 us", lambda k, g: num(g.med("release_us.p50"))),
            ("÷ all up", lambda k, g: num(g.med("release_p50_vs_up"), 2)),
            ("one stopped max us: acquire / release",
             lambda k, g: f"{num(g.med('acquire_us.max'))} / {num(g.med('release_us.max'))}"),
            ("errors acq/rel (max)", lambda k, g: errors(g)),
        ]), "The same loop as (a) run twice in a row: with every node up, then with one node "
            "stopped (SIGSTOP) once the client is connected, so that it accepts requests and "
            "never answers, and continued (SIGCONT) afterwards. Four nodes still make the "
            "quorum, so every acquire and release must succeed; what the stopped node may cost "
            "is its per-node deadline (expiry × timeout_factor, 400 ms by default) wherever "
            "an operation waits for every node instead of for the decision.")

    # --- contended ----------------------------------------------------------------------
    con = sorted((k for k in groups if k[0] == "contended"),
                 key=lambda k: (not k[6], k[3] != "fast", k[4], k[1], k[2], -k[5]), reverse=True)
    if con:
        section(lines, "(b) Contended: workers competing for one key", column_table(groups, con, [
            ("workers", lambda k, g: k[1]),
            ("hold ms", lambda k, g: k[2]),
            ("retry delay", lambda k, g: g.first("retry_delay")),
            ("clients", lambda k, g: k[4] + (f", {k[5]} node stopped" if k[5] else "")
             + (", fair lock" if k[6] else "")),
            ("acquisitions/s", lambda k, g: spread(g, "acquisitions_per_s")),
            ("÷ hold ceiling", lambda k, g: num(g.med("vs_hold_ceiling"), 2)),
            ("handoffs/s", lambda k, g: spread(g, "handoffs_per_s", 1)),
            ("gap mean us", lambda k, g: num(g.med("gap_after_release_done_us.mean"))),
            ("gap p50 us", lambda k, g: num(g.med("gap_after_release_done_us.p50"))),
            ("gap p50 from release start us",
             lambda k, g: num(g.med("gap_after_release_start_us.p50"))),
            ("handoff gap p50 from release start us",
             lambda k, g: num(g.med("handoff_gap_after_release_start_us.p50"))),
            ("handoff gap ÷ node RTT",
             lambda k, g: num(round_trips(g, "handoff_gap_p50_in_node_round_trips"), 1)),
            ("handoff gap ÷ quorum round",
             lambda k, g: num(round_trips(g, "handoff_gap_p50_in_quorum_rounds"), 1)),
            ("handoff gap ÷ quorum round after 1 ms idle",
             lambda k, g: num(round_trips(g, "handoff_gap_p50_in_quorum_rounds_after_idle"), 1)),
            ("per-worker min / max (all runs)",
             lambda k, g: f"{num(g.lo('per_worker_min'))} / {num(g.hi('per_worker_max'))}"),
            ("per-worker min ÷ mean (lowest run)",
             lambda k, g: num(g.lo("per_worker_min_vs_mean"), 2)),
            ("longest run by one worker: acquisitions / ms",
             lambda k, g: f"{num(g.med('longest_same_worker_run'))} / "
                          f"{num(g.med('longest_same_worker_run_ms'), 1)}"),
            ("violations (sum)", lambda k, g: num(sum(g.values("violations")))),
        ]), " ".join(note for note, field in CONTENDED_NOTES
                     if field is None or any(groups[k].values(field) for k in con)))

    # --- degraded contended ------------------------------------------------------------
    dcon = sorted(k for k in groups if k[0] == "degraded_contended")
    if dcon:
        section(lines, "(g) Degraded contended: a process per worker, one node stopped",
                column_table(groups, dcon, [
                    ("workers", lambda k, g: k[1]),
                    ("hold ms", lambda k, g: k[2]),
                    ("nodes stopped",
                     lambda k, g: f"{num(g.first('stopped_nodes'))} of {num(g.first('nodes'))}"),
                    ("all up acquisitions/s", lambda k, g: spread(g, "up_acquisitions_per_s")),
                    ("one stopped acquisitions/s", lambda k, g: spread(g, "acquisitions_per_s")),
                    ("÷ all up", lambda k, g: spread(g, "throughput_vs_up", 2)),
                ]), "(b) with a process per worker and the library's retry delay, run twice: with "
                    "every node up, then with one node stopped (SIGSTOP) for the whole run. The "
                    "rows of (b) with a node stopped are the second run's.")

    # --- held -----------------------------------------------------------------------------
    held = sorted(k for k in groups if k[0] == "held")
    if held:
        section(lines, "(c) Held: K guards kept alive at once", column_table(groups, held, [
            ("K", lambda k, g: num(k[1])),
            ("expiry", lambda k, g: f"{k[2] / 1000:g} s"),
            ("extended by", lambda k, g: k[3]),
            ("client bytes per guard", lambda k, g: spread(g, "bytes_per_guard")),
            ("acquired/s", lambda k, g: num(g.med("acquire_per_s"))),
            ("extensions/s", lambda k, g: num(g.med("extends_per_s"))),
            ("extend p50 us", lambda k, g: num(g.med("extend_us.p50"))),
            ("client cores", lambda k, g: spread(g, "client_cores", 3)),
            ("client CPU us per extension", lambda k, g: num(g.med("cpu_us_per_extend"), 1)),
            ("servers cores", lambda k, g: cores(g.med("servers_cores"))),
            ("still owned (min)", lambda k, g: f"{num(g.lo('still_owned'))} of {num(k[1])}"),
            ("extend errors (max)", lambda k, g: num(g.hi("extend_errors"))),
        ]))

    # --- cluster --------------------------------------------------------------------------
    clu = sorted(k for k in groups if k[0] == "cluster")
    if clu:
        section(lines, "(f) Cluster: one node that is a Redis Cluster", column_table(groups, clu, [
            ("masters", lambda k, g: k[1]),
            ("C", lambda k, g: k[2]),
            ("cycles/s", lambda k, g: spread(g, "cycles_per_s")),
            ("raw bound cycles/s", lambda k, g: spread(g, "bound.cycles_per_s")),
            ("÷ raw bound", lambda k, g: spread(g, "vs_bound", 2)),
            ("raw cycles/s by depth", lambda k, g: bound_by_depth(g)),
            ("acquire p50 us", lambda k, g: num(g.med("acquire_us.p50"))),
            ("p99", lambda k, g: num(g.med("acquire_us.p99"))),
            ("release p50 us", lambda k, g: num(g.med("release_us.p50"))),
            ("client cores", lambda k, g: num(g.med("client_cores"), 2)),
            ("servers cores", lambda k, g: cores(g.med("servers_cores"))),
            ("client CPU us per cycle", lambda k, g: num(g.med("client_cpu_us_per_cycle"), 1)),
            ("servers CPU us per cycle",
             lambda k, g: cores(g.med("servers_cpu_us_per_cycle"), 1)),
            ("rest of the machine cores: measurement / raw bound",
             lambda k, g: f"{cores(g.med('others_cores'))} / {cores(g.med('bound.others_cores'))}"),
            ("raw bound: client / servers CPU us per cycle",
             lambda k, g: f"{num(g.med('bound.client_cpu_us_per_cycle'), 1)} / "
                          f"{cores(g.med('bound.servers_cpu_us_per_cycle'), 1)}"),
            ("errors acq/rel (max)", lambda k, g: errors(g)),
        ]), "One node, `redis-cluster://` with every server as a seed (quorum 1), whose "
            "masters share the 16,384 slots evenly; C coroutines, each looping `acquire` then "
            "`release` on a key of its own, so that the keys spread over the masters by their "
            "slots. A cycle is one acquire and one release: a `SET NX PX` and a "
            "compare-and-delete, both on the key's master. Raw bound: the same two requests "
            "sent straight to each master on one connection per master, pipelined, on keys of "
            "that master's slots, summed over the masters, at each pipeline depth (the best "
            "counts). CPU per cycle: cores ÷ cycles/s; the servers' is summed over the masters, "
            "and each cycle runs on one of them. Rest of the machine: the CPU used meanwhile by "
            "everything else (other programs, and kernel work charged to no process), which the "
            "measurement could not use.")

    kinds = render_kinds(lines, groups)

    # --- targets ------------------------------------------------------------------------
    checks = target_checks(groups, unc, deg, con, held, pipelined, clu) + kind_checks(groups, kinds)
    if checks:
        section(lines, "Targets", table(
            ["target", "measured (median)", "met"],
            [[t, m, (note + ": " if note else "") + ("yes" if ok else "**no**")]
             for t, m, note, ok in checks]))
    return "\n".join(lines).rstrip() + "\n"


def violations(g):
    """Violations summed over the runs, and the errors' maximum, as a cell."""
    return f"{num(sum(g.values('violations')))} / {num(g.hi('errors'))}"


def render_kinds(lines, groups):
    """The sections of the lock kinds beside the plain mutex; returns their keys by scenario."""
    kinds = {s: sorted(k for k in groups if k[0] == s) for s in ("rw", "semaphore", "fair")}
    if kinds["rw"]:
        section(lines, "(h) Read-write lock: readers and a writer on one key",
                column_table(groups, kinds["rw"], [
                    ("readers : writers", lambda k, g: f"{k[1]} : {k[2]}"),
                    ("hold ms", lambda k, g: k[3]),
                    ("acquisitions/s", lambda k, g: spread(g, "acquisitions_per_s")),
                    ("reads/s", lambda k, g: num(g.med("reads_per_s"))),
                    ("writes/s", lambda k, g: num(g.med("writes_per_s"))),
                    ("mutex ceiling /s", lambda k, g: num(g.med("mutex_ceiling_per_s"))),
                    ("÷ mutex ceiling", lambda k, g: spread(g, "vs_mutex_ceiling", 2)),
                    ("client cores", lambda k, g: cores(g.med("client_cores"))),
                    ("servers cores", lambda k, g: cores(g.med("servers_cores"))),
                    ("violations (sum) / errors (max)", lambda k, g: violations(g)),
                ]), "Workers of one client, each looping acquire (shared for a reader), hold, "
                    "release. Mutex ceiling: 1 / the mean measured hold of the same run, the rate "
                    "of exclusive holds one after the other.")
    if kinds["semaphore"]:
        section(lines, "(i) Semaphore: workers wanting a permit",
                column_table(groups, kinds["semaphore"], [
                    ("permits", lambda k, g: k[1]),
                    ("workers", lambda k, g: k[2]),
                    ("hold ms", lambda k, g: k[3]),
                    ("acquisitions/s", lambda k, g: spread(g, "acquisitions_per_s")),
                    ("÷ ceiling", lambda k, g: spread(g, "vs_ceiling", 2)),
                    ("permits in use (mean)", lambda k, g: spread(g, "permits_in_use", 2)),
                    ("client cores", lambda k, g: cores(g.med("client_cores"))),
                    ("servers cores", lambda k, g: cores(g.med("servers_cores"))),
                    ("violations (sum) / errors (max)", lambda k, g: violations(g)),
                ]), "Workers of one client, each looping acquire, hold, release. Ceiling: "
                    "permits / the mean measured hold. Permits in use: the time each holder "
                    "spent inside the measured window, summed, over the window.")
    if kinds["fair"]:
        section(lines, "(j) Fair lock: first come, first served",
                column_table(groups, kinds["fair"], [
                    ("workers", lambda k, g: k[1]),
                    ("hold ms", lambda k, g: k[2]),
                    ("acquisitions/s", lambda k, g: spread(g, "acquisitions_per_s")),
                    ("÷ hold ceiling", lambda k, g: spread(g, "vs_hold_ceiling", 2)),
                    ("unfair acquisitions/s", lambda k, g: num(g.med("unfair_acquisitions_per_s"))),
                    ("÷ unfair", lambda k, g: spread(g, "vs_unfair", 2)),
                    ("least worker ÷ mean", lambda k, g: spread(g, "per_worker_min_vs_mean", 2)),
                    ("unfair: least worker ÷ mean",
                     lambda k, g: num(g.med("unfair_per_worker_min_vs_mean"), 2)),
                    ("overtakings", lambda k, g: spread(g, "overtakings")),
                    ("unfair overtakings", lambda k, g: num(g.med("unfair_overtakings"))),
                    ("violations (sum) / errors (max)", lambda k, g: violations(g)),
                ]), "A client per worker, each looping acquire, hold, release, on a mutex with "
                    "`options::fair`, then the same on one without it (the unfair lock), in the "
                    "same run. Hold ceiling: 1 / the mean measured hold. Overtakings: pairs of acquisitions by different workers where the "
                    "second's acquire began while the first's was waiting, and the second got "
                    "the lock first.")
    return kinds


def kind_checks(groups, kinds):
    """(target, measured, note, met) for the lock kinds beside the plain mutex."""
    checks = []
    for k in kinds["rw"]:
        v = groups[k].med("vs_mutex_ceiling")
        checks.append((f"(h) {k[1]} readers : {k[2]} writer: ≥ 2 × the mutex ceiling",
                       f"{num(v, 2)}×", None, v is not None and v >= 2))
    for k in kinds["fair"]:
        g = groups[k]
        share = g.med("per_worker_min_vs_mean")
        passed = g.med("overtakings")
        checks.append((f"(j) fair, {k[1]} workers: least worker ≥ 0.9 of the mean",
                       num(share, 2), None, share is not None and share >= 0.9))
        checks.append((f"(j) fair, {k[1]} workers: overtakings = 0", num(passed), None,
                       passed == 0))
        ceiling = g.med("vs_hold_ceiling")
        if ceiling is not None:
            checks.append((f"(j) fair, {k[1]} workers, a client each: ≥ 0.85 of the hold's "
                           "ceiling", num(ceiling, 2), None, ceiling >= 0.85))
    return checks


def target_checks(groups, unc, deg, con, held, pipelined, clu):
    """(target, measured, note, met) for each performance target the runs have data for."""
    checks = []
    best = max(unc, key=lambda k: groups[k].med("cycles_per_s") or 0, default=None)
    if best and best[1] >= 64:
        rate = groups[best].med("cycles_per_s")
        checks.append(("(a) C=64 or 256: ≥ 40,000 cycles/s", f"{num(rate)} (C={best[1]})",
                       None, rate >= 40000))
    c256 = groups.get(("uncontended", 256))
    if c256 and pipelined:
        rate = c256.med("cycles_per_s")
        checks.append(("(a) C=256: ≥ 0.8 of the pipelined bound", ratio(rate, pipelined), None,
                       rate / pipelined >= 0.8))
    if ("uncontended", 1) in groups:
        g1 = groups[("uncontended", 1)]
        p50 = g1.med("acquire_us.p50")
        checks.append(("(a) C=1: acquire p50 ≤ 80 us", f"{num(p50)} us", None, p50 <= 80))
        raw = g1.med("acquire_p50_vs_raw_round")
        if raw:
            checks.append(("(a) C=1: acquire p50 ≤ 1.1 × the raw quorum round", f"{num(raw, 2)}×",
                           None, raw <= 1.1))
        rel = g1.med("release_p50_vs_acquire_p50")
        if rel is not None:
            checks.append(("(a) C=1: release p50 ≤ 1.05 × acquire p50", f"{num(rel, 2)}×", None,
                           rel <= 1.05))
    if ("degraded", 64) in groups:
        t = groups[("degraded", 64)].med("throughput_vs_up")
        checks.append(("(e) C=64, one node stopped: ≥ 0.8 of the all-up throughput",
                       num(t, 2), None, t is not None and t >= 0.8))
    for k in deg:
        r = groups[k].med("release_p50_vs_up")
        checks.append((f"(e) C={k[1]}, one node stopped: release p50 ≤ 1.5 × all up",
                       f"{num(r, 2)}×", None, r is not None and r <= 1.5))

    def per_variant(label, value, digits, good):
        """One target over the contended variants; left out when no run measured it."""
        values = [value(groups[k]) for k in con]
        if all(v is None for v in values):
            return
        met = sum(1 for v in values if v is not None and good(v))
        cells = [f"{k[3]}/{k[4]}{'/fair' if k[6] else ''} {num(v, digits)}"
                 for k, v in zip(con, values)]
        checks.append((label, ", ".join(cells), f"{met} of {len(con)} variants", met == len(con)))

    def done_in_round_trips(g):
        # The handoff gap counted from the releaser's release completing, in node round trips
        # of the same run (the program reports the one from release start).
        vals = []
        for r in g.runs:
            start = r.get("handoff_gap_after_release_start_us.p50")
            trips = r.get("handoff_gap_p50_in_node_round_trips")
            done = r.get("handoff_gap_after_release_done_us.p50")
            if start and trips and done is not None:
                vals.append(done / (start / trips))
        return statistics.median(vals) if vals else None

    per_variant("(b) handoff gap p50 (from release start) ≤ 2 node round trips",
                lambda g: round_trips(g, "handoff_gap_p50_in_node_round_trips"), 1,
                lambda v: v <= 2)
    per_variant("(b) handoff gap p50 (from the release completing) ≤ 2 node round trips",
                done_in_round_trips, 1, lambda v: v <= 2)
    per_variant("(b) acquisitions/s ≥ 0.9 of the 1 ms hold's ceiling",
                lambda g: g.med("vs_hold_ceiling"), 2, lambda v: v >= 0.9)
    per_variant("(b) no worker at 0 acquisitions (min over runs)",
                lambda g: g.lo("per_worker_min"), 0, lambda v: v > 0)
    per_variant("(b) every worker at least half the mean share (lowest run)",
                lambda g: g.lo("per_worker_min_vs_mean"), 2, lambda v: v >= 0.5)
    per_variant("(b) mutual-exclusion violations = 0 (sum over runs)",
                lambda g: sum(g.values("violations")) if g.values("violations") else None, 0,
                lambda v: v == 0)
    for k in held:
        if k[1] >= 100000:
            g = groups[k]
            b = g.med("bytes_per_guard")
            c = g.med("client_cores")
            checks.append((f"(c) K={num(k[1])}: ≤ 1 KiB per guard", f"{num(b)} bytes", None,
                           b <= 1024))
            checks.append((f"(c) K={num(k[1])}: client < 1/3 core at {k[2] / 1000:g} s expiry",
                           f"{num(c, 3)} cores", None, c < 1 / 3))
    for k in clu:
        r = groups[k].med("vs_bound")
        checks.append((f"(f) {k[1]} master(s), C={k[2]}: ≥ 0.7 of the same cluster's raw bound",
                       num(r, 2), None, r is not None and r >= 0.7))
    return checks


def split_doc(text, path, name=DEFAULT_BLOCK):
    """(before, block, after) of a document around its generated block `name` (block None when
    it has none)."""
    begin, end = markers(name)
    if text.count(begin) > 1 or text.count(end) > 1:
        sys.exit(f"plot.py: {path} has more than one {begin} ... {end} block; keep one")
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        block, tail = rest.split(end, 1)
        return head, block.strip("\n") + "\n", tail.lstrip("\n")
    return text, None, ""


def write_doc(path, body, name=DEFAULT_BLOCK):
    begin, end = markers(name)
    block = f"{begin}\n{body}{end}\n"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    else:
        text = "# Benchmarks\n\n## Results\n\n"
    head, old, tail = split_doc(text, path, name)
    if old is not None:
        text = head + block + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def plot(groups, png):
    if not shutil.which("gnuplot"):
        print("plot.py: gnuplot not found (apt-get install gnuplot-nox): no plot",
              file=sys.stderr)
        return False
    unc = sorted(k for k in groups if k[0] == "uncontended")
    if not unc:
        return False
    lat = groups.get(("server", "latency"))
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "latency.dat")
        with open(data, "w", encoding="utf-8") as f:
            f.write("# C p50 p90 p99 p99.9 release_p50\n")
            for k in unc:
                g = groups[k]
                f.write(f"{k[1]} {g.med('acquire_us.p50')} {g.med('acquire_us.p90')} "
                        f"{g.med('acquire_us.p99')} {g.med('acquire_us.p999')} "
                        f"{g.med('release_us.p50')}\n")
        quorum = lat.med("round_set_quorum_us.p50") if lat else None
        script = [
            "set terminal pngcairo size 900,560 font 'sans,11'",
            f"set output '{png}'",
            "set title 'redlock acquire latency, uncontended (5 nodes, median of runs)'",
            "set xlabel 'concurrent coroutines (C), each on its own key'",
            "set ylabel 'latency (us)'",
            "set logscale xy",
            "set grid xtics ytics mytics",
            "set key top left box opaque Left reverse",
            "set xtics (" + ", ".join(f"'{k[1]}' {k[1]}" for k in unc) + ")",
            f"set xrange [{unc[0][1] * 0.7}:{unc[-1][1] * 1.4}]",
        ]
        plots = [
            f"'{data}' using 1:2 with linespoints lw 2 pt 7 title 'acquire p50'",
            f"'{data}' using 1:3 with linespoints lw 2 pt 5 title 'acquire p90'",
            f"'{data}' using 1:4 with linespoints lw 2 pt 9 title 'acquire p99'",
            f"'{data}' using 1:5 with linespoints lw 2 pt 11 title 'acquire p99.9'",
            f"'{data}' using 1:6 with linespoints lw 1 dt 2 pt 6 lc rgb 'black' "
            "title 'release p50'",
        ]
        if quorum:
            plots.append(f"{quorum} with lines lw 1 dt 3 lc rgb 'gray40' "
                         "title 'raw SET NX PX round to quorum, p50 (no load)'")
        script.append("plot " + ", \\\n     ".join(plots))
        gp = os.path.join(tmp, "latency.gp")
        with open(gp, "w", encoding="utf-8") as f:
            f.write("\n".join(script) + "\n")
        subprocess.run(["gnuplot", gp], check=True)
    return True


def repo_relative(path):
    """A log's path as the document records it: relative to the repository when inside it."""
    path = os.path.abspath(path)
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def check(doc, png):
    """0 when every generated block of `doc` is what its own logs give now; 1 with a diff
    otherwise. The logs are those each block's first line names, and must lie in the
    repository."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    names = list(dict.fromkeys(BLOCK_NAMES.findall(text))) or [DEFAULT_BLOCK]
    return max(check_block(doc, png, text, name) for name in names)


def check_block(doc, png, text, name):
    """check() for the block `name`."""
    _, block, _ = split_doc(text, doc, name)
    if block is None or not block.startswith(LOGS):
        print(f"plot.py: {doc} has no generated block {name} naming its logs ({LOGS} ...)")
        return 1
    sources = block.split("\n", 1)[0][len(LOGS):].replace("-->", "").split()
    outside = [s for s in sources if os.path.isabs(s) or not os.path.isfile(os.path.join(ROOT, s))]
    if outside or not sources:
        print(f"plot.py: block {name} of {doc} was generated from logs that are not in the "
              f"repository: {' '.join(outside) or '(none)'}; copy them to bench/results/NAME/ "
              f"and rerun bench/plot.py with them")
        return 1
    groups, metas = read_runs([os.path.join(ROOT, s) for s in sources])
    png_name = os.path.relpath(png, os.path.dirname(os.path.abspath(doc)))
    expected = render(groups, metas, png_name if os.path.isfile(png) else None, sources)
    if expected == block:
        print(f"plot.py: the tables of block {name} of {doc} match {len(sources)} log(s)")
        return 0
    option = "" if name == DEFAULT_BLOCK else f" --block {name}"
    print(f"plot.py: the tables of block {name} of {doc} differ from what bench/plot.py makes "
          f"of its logs (rerun: bench/plot.py --doc {doc}{option} {' '.join(sources)}):")
    sys.stdout.writelines(difflib.unified_diff(block.splitlines(True), expected.splitlines(True),
                                               "document", "generated"))
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--png", default=os.path.join(ROOT, "docs", "benchmarks-latency.png"))
    ap.add_argument("--block", default=DEFAULT_BLOCK,
                    help="the generated block to write (<!-- bench:BLOCK:begin --> ...)")
    ap.add_argument("--stdout", action="store_true", help="print the tables, write nothing")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when the document's tables differ from what its logs give")
    ap.add_argument("logs", nargs="*")
    a = ap.parse_args()
    if a.check:
        sys.exit(check(a.doc, a.png))
    if not a.logs:
        ap.error("no logs given")
    groups, metas = read_runs(a.logs)
    if not groups:
        sys.exit("plot.py: no RESULT lines in " + " ".join(a.logs))
    sources = [repo_relative(p) for p in a.logs]
    png_name = os.path.relpath(a.png, os.path.dirname(os.path.abspath(a.doc)) or ".")
    if a.stdout:
        print(render(groups, metas, None, sources))
        return
    have_png = plot(groups, os.path.abspath(a.png)) or os.path.isfile(a.png)
    write_doc(a.doc, render(groups, metas, png_name if have_png else None, sources), a.block)
    print(f"plot.py: wrote block {a.block} of {a.doc}" + (f" and {a.png}" if have_png else ""))


if __name__ == "__main__":
    main()
