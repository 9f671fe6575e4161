#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Plots scenario scaling of redlock_bench: the servers' CPU per grant and the grants/s
against the number of contending processes, one line per lock kind.

    bench/plot_scaling.py [--png bench-scaling.png] RUN.log...

Each RUN.log is the output of a `redlock_bench --scenario scaling` run; only its
`RESULT {json}` lines of scenario "scaling" are read. Rows of the same kind and process count
are combined across runs by their median. Prints the figures as a Markdown table and draws
the PNG with gnuplot (apt-get install gnuplot-nox), as bench/plot.py does; without gnuplot
only the table is printed. The baseline row (kind "uncontended", one process on a key of its
own) is drawn as a horizontal line in the CPU panel. Python 3 standard library only.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

# Lines in this order, then any other kind (a peer's) in the order met.
KIND_ORDER = ["plain", "fair", "semaphore", "rw", "node-redlock"]


def read_rows(paths):
    """{(kind, processes): [row, ...]} of the scaling RESULT lines in `paths`."""
    rows = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.startswith("RESULT "):
                    continue
                try:
                    r = json.loads(line[len("RESULT "):])
                except json.JSONDecodeError:
                    continue
                if r.get("scenario") == "scaling":
                    rows.setdefault((r["kind"], r["processes"]), []).append(r)
    return rows


def median(rows, field):
    """The median of `field` over `rows`, or None when no row has a number there."""
    values = [r[field] for r in rows if isinstance(r.get(field), (int, float))]
    return statistics.median(values) if values else None


def kinds_of(rows):
    met = []
    for kind, _ in rows:
        if kind != "uncontended" and kind not in met:
            met.append(kind)
    return sorted(met, key=lambda k: (KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER),
                                      met.index(k)))


def fmt(v, digits=3):
    """`v` with `digits` significant digits, but whole above 10^digits: no exponents."""
    if v is None:
        return "-"
    return f"{v:.0f}" if abs(v) >= 10 ** digits else f"{v:.{digits}g}"


def table(rows):
    lines = ["| kind | processes | grants/s | vs hold ceiling | least / mean | server commands "
             "per grant | server CPU ms per grant | CPU vs uncontended | violations |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for kind in ["uncontended"] + kinds_of(rows):
        for (k, p) in sorted(key for key in rows if key[0] == kind):
            g = rows[(k, p)]
            lines.append(
                f"| {k} | {p} | {fmt(median(g, 'grants_per_s'))} | "
                f"{fmt(median(g, 'vs_hold_ceiling'), 2)} | "
                f"{fmt(median(g, 'per_process_min_vs_mean'), 2)} | "
                f"{fmt(median(g, 'server_commands_per_grant'))} | "
                f"{fmt(median(g, 'server_cpu_ms_per_grant'))} | "
                f"{fmt(median(g, 'server_cpu_vs_uncontended'), 2)} | "
                f"{sum(r.get('violations', 0) for r in g)} |")
    return "\n".join(lines)


def plot(rows, png, title):
    if not shutil.which("gnuplot"):
        print("plot_scaling.py: gnuplot not found (apt-get install gnuplot-nox): no plot",
              file=sys.stderr)
        return False
    kinds = kinds_of(rows)
    if not kinds:
        print("plot_scaling.py: no contended rows: no plot", file=sys.stderr)
        return False
    counts = sorted({p for (k, p) in rows if k != "uncontended"})
    baseline = median(rows.get(("uncontended", 1), []), "server_cpu_ms_per_grant")
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for kind in kinds:
            files[kind] = os.path.join(tmp, f"{len(files)}.dat")
            with open(files[kind], "w", encoding="utf-8") as f:
                f.write("# processes server_cpu_ms_per_grant grants_per_s\n")
                for p in counts:
                    g = rows.get((kind, p))
                    if not g:
                        continue
                    cpu = median(g, "server_cpu_ms_per_grant")
                    rate = median(g, "grants_per_s")
                    f.write(f"{p} {'NaN' if cpu is None else cpu} "
                            f"{'NaN' if rate is None else rate}\n")
        xtics = "set xtics (" + ", ".join(f"'{p}' {p}" for p in counts) + ")"
        xrange = f"set xrange [{counts[0] * 0.8}:{counts[-1] * 1.25}]"
        styles = [7, 5, 9, 11, 13, 15]

        def lines(column):
            return ", \\\n     ".join(
                f"'{files[k]}' using 1:{column} with linespoints lw 2 "
                f"pt {styles[i % len(styles)]} title '{k}'" for i, k in enumerate(kinds))

        cpu_plot = lines(2)
        if baseline:
            cpu_plot += (f", \\\n     {baseline} with lines lw 1 dt 2 lc rgb 'black' "
                         "title 'uncontended cycle'")
        script = [
            "set terminal pngcairo size 900,900 font 'sans,11'",
            f"set output '{png}'",
            f'set multiplot layout 2,1 title "{title}"',
            # Contention can cost orders of magnitude more than a lone cycle: log scales.
            "set logscale xy",
            "set grid xtics ytics",
            "set key top left box opaque Left reverse",
            xtics,
            xrange,
            "set xlabel 'contending processes'",
            "set ylabel 'servers CPU per grant (ms, all nodes)'",
            "plot " + cpu_plot,
            "set ylabel 'grants/s'",
            "set key bottom left box opaque Left reverse",
            "plot " + lines(3),
            "unset multiplot",
        ]
        gp = os.path.join(tmp, "scaling.gp")
        with open(gp, "w", encoding="utf-8") as f:
            f.write("\n".join(script) + "\n")
        subprocess.run(["gnuplot", gp], check=True)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", default="bench-scaling.png")
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args()
    rows = read_rows(a.logs)
    if not rows:
        sys.exit("plot_scaling.py: no scaling RESULT lines in " + " ".join(a.logs))
    print(table(rows))
    hold = median([r for g in rows.values() for r in g if r["kind"] != "uncontended"], "hold_ms")
    title = ("redlock: the servers' cost per grant under contention"
             + (f" (hold {hold:g} ms, median of runs)" if hold is not None else ""))
    if plot(rows, os.path.abspath(a.png), title):
        print(f"plot_scaling.py: wrote {a.png}")


if __name__ == "__main__":
    main()
