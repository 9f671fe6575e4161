#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Summarizes a callgrind profile of redlock_bench for docs/benchmarks.md.

    bench/callgrind_summary.py CALLGRIND_OUT [--ops N] [--top 15]
                               [--against OTHER_OUT --against-ops M --against-name TEXT]

Reads the profile with callgrind_annotate (valgrind's) and prints markdown: where the
instructions go by kind (allocation, Asio machinery, the library's own lines, ...), the
hottest functions by their own instructions, the library's own functions, and with --ops
(lock operations in the profiled window: acquire and release count one each) instructions
and heap allocations per operation; with --against, the same two figures of another profile
(the raw sender's) and the ratio between them. Python 3 standard library only.
"""

import argparse
import re
import subprocess
from collections import defaultdict

LINE = re.compile(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")

# (category, test on "file:function [object]") in order; the first that matches wins.
CATEGORIES = [
    ("heap allocation (malloc/free, operator new/delete)",
     lambda f, fn, obj: "/malloc/" in f or "arena.c" in f
     or re.match(r"operator (new|delete)", fn) is not None
     or fn in ("malloc", "free", "calloc", "cfree", "realloc", "_mid_memalign")),
    ("libc string and memory ops (memcpy, strlen, ...)",
     lambda f, fn, obj: "libc.so" in obj and ("/string/" in f or "multiarch" in f)),
    ("pthread mutex lock/unlock (Asio's scheduler and strand locks)",
     lambda f, fn, obj: "pthread_mutex" in fn),
    ("RESP encoding and reply decoding (src/resp/)", lambda f, fn, obj: "/src/resp/" in f),
    ("redlock's own source lines (src/, include/redlock/)",
     lambda f, fn, obj: "/src/" in f and "redlock" in f or "include/redlock" in f),
    ("Asio executors and strands (any_executor, strand, scheduler, handler alloc)",
     lambda f, fn, obj: "boost/asio" in f and any(
         s in f for s in ("any_executor", "strand", "scheduler", "executor_function",
                          "executor_op", "thread_info_base", "recycling_allocator",
                          "handler_alloc", "io_context", "dispatch", "post",
                          "work_dispatcher", "bind_handler", "conditionally_enabled",
                          "posix_mutex", "posix_event", "op_queue"))),
    ("Asio coroutine machinery (awaitable, co_spawn, deferred, any_completion_handler)",
     lambda f, fn, obj: "boost/asio" in f and any(
         s in f for s in ("awaitable", "co_spawn", "use_awaitable", "deferred",
                          "any_completion_handler", "as_tuple", "cancellation",
                          "async_result", "this_coro")) or f.endswith("/coroutine")),
    ("Asio timers and sockets (timer queue, epoll reactor, socket ops)",
     lambda f, fn, obj: "boost/asio" in f),
    ("libstdc++ inline code (strings, shared_ptr, vectors, functions)",
     lambda f, fn, obj: "/c++/" in f or "libstdc++" in obj),
    ("the benchmark's own code", lambda f, fn, obj: "/bench/" in f),
    ("vdso (clock reads)", lambda f, fn, obj: "vdso" in obj),
]


def short(name, limit=110):
    """A function name without its argument and template lists."""
    out, depth = [], 0
    for ch in name:
        if ch in "(<":
            depth += 1
        if depth == 0:
            out.append(ch)
        if ch in ")>":
            depth = max(0, depth - 1)
    s = "".join(out).strip()
    return s if len(s) <= limit else s[:limit] + "..."


def annotate(path):
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--inclusive=no", "--auto=no", path],
        check=True, capture_output=True, text=True).stdout
    total, rows = None, []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        rest = m.group(2)
        if rest.startswith("PROGRAM TOTALS"):
            total = ir
            continue
        obj = ""
        mo = re.search(r"\s\[(/[^\]]*)\]$", rest)
        if mo:
            obj, rest = mo.group(1), rest[:mo.start()]
        f, _, fn = rest.partition(":")
        rows.append((ir, f, fn, obj))
    return total, rows


ALLOCATORS = ("operator new", "malloc", "calloc", "realloc", "memalign", "aligned_alloc",
              "posix_memalign", "_mid_memalign")


def is_allocator(name):
    base = short(name).split("'")[0]
    return any(base == a or base.startswith(a + ".") or base.startswith(a + "(")
               or (a == "operator new" and base.startswith(a)) for a in ALLOCATORS)


def allocation_sites(path):
    """Heap allocations by the function that asked for them: calls into the allocator
    family (operator new, malloc, calloc, realloc, memalign, ...) from outside it, so that
    operator new -> malloc counts once."""
    names, objects, sites = {}, {}, defaultdict(int)
    caller = target = None
    obj = ""

    def name_of(line, key):
        m = re.match(key + r"=\((\d+)\)(?: (.*))?", line.strip())
        if not m:
            return None
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "?")

    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("ob="):
                m = re.match(r"ob=\((\d+)\)(?: (.*))?", line.strip())
                if m:
                    if m.group(2):
                        objects[m.group(1)] = m.group(2)
                    obj = objects.get(m.group(1), "")
            elif line.startswith("fn="):
                caller = name_of(line, "fn")
                if caller and caller.startswith("0x"):
                    caller = f"{caller} in {obj.split('/')[-1]}"
            elif line.startswith("cfn="):
                target = name_of(line, "cfn")
            elif line.startswith("calls=") and target is not None:
                if is_allocator(target) and caller and not is_allocator(caller):
                    sites[short(caller)] += int(line.split("=")[1].split()[0])
                target = None
    return sites


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("--ops", type=int, default=0,
                    help="lock operations (acquires + releases) in the profiled window")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--against", help="another profile, to compare per operation")
    ap.add_argument("--against-ops", type=int, default=0,
                    help="operations in the other profile's window")
    ap.add_argument("--against-name", default="the other profile")
    a = ap.parse_args()
    total, rows = annotate(a.profile)

    by_cat = defaultdict(int)
    for ir, f, fn, obj in rows:
        for name, test in CATEGORIES:
            if test(f, fn, obj):
                by_cat[name] += ir
                break
        else:
            by_cat["other"] += ir

    print(f"Instructions (Ir) in the profiled window: {total:,}.")
    sites = allocation_sites(a.profile)
    if a.ops:
        print(f"Per lock operation (acquire or release, {a.ops:,} in the window): "
              f"{total / a.ops:,.0f} instructions in the client and "
              f"{sum(sites.values()) / a.ops:,.1f} heap allocations.")
    if a.ops and a.against and a.against_ops:
        other_total, _ = annotate(a.against)
        other_allocs = sum(allocation_sites(a.against).values()) / a.against_ops
        other_ir = other_total / a.against_ops
        allocs = sum(sites.values()) / a.ops
        print(f"{a.against_name} ({a.against_ops:,} operations in its window): "
              f"{other_ir:,.0f} instructions and {other_allocs:,.1f} heap allocations per "
              f"operation; the ratio: {total / a.ops / other_ir:.2f} x the instructions, "
              + (f"{allocs / other_allocs:.1f} x the allocations." if other_allocs
                 else "no allocations to compare with."))
    print()
    print("| where the client's instructions go (own instructions, by kind) | share |")
    print("|---|---|")
    for name, ir in sorted(by_cat.items(), key=lambda x: -x[1]):
        print(f"| {name} | {100 * ir / total:.1f}% |")
    print()

    merged = defaultdict(int)
    for ir, f, fn, obj in rows:
        where = obj.split("/")[-1] if obj and "redlock_bench" not in obj else f.split("/")[-1]
        merged[(short(fn), where)] += ir
    print(f"| top {a.top} functions by own instructions | source | share |")
    print("|---|---|---|")
    for (fn, where), ir in sorted(merged.items(), key=lambda x: -x[1])[:a.top]:
        print(f"| `{fn}` | {where} | {100 * ir / total:.1f}% |")
    print()

    per = "per lock operation" if a.ops else "in the window"
    print(f"| who asks for heap memory (first caller into the allocator) | allocations {per} |")
    print("|---|---|")
    for fn, n in sorted(sites.items(), key=lambda x: -x[1])[:a.top]:
        print(f"| `{fn}` | {n / a.ops if a.ops else n:,.1f} |")
    print()

    symbols = defaultdict(int)
    for ir, f, fn, obj in rows:
        name = short(fn)
        if name.startswith("redlock::") or "redlock::" in name.split("::{")[0][:40]:
            symbols[name] += ir
    print("| library functions by their own instructions, Asio and libstdc++ code inlined "
          "into them included | share |")
    print("|---|---|")
    for fn, ir in sorted(symbols.items(), key=lambda x: -x[1])[:a.top]:
        print(f"| `{fn}` | {100 * ir / total:.2f}% |")
    print()

    own = defaultdict(int)
    for ir, f, fn, obj in rows:
        if "/src/" in f and "redlock" in f:
            own[(short(fn), f.split("/")[-1])] += ir
    print("| library functions by the instructions of their own source lines "
          "(Asio and libstdc++ code inlined into them not counted) | file | share |")
    print("|---|---|---|")
    for (fn, where), ir in sorted(own.items(), key=lambda x: -x[1])[:a.top]:
        print(f"| `{fn}` | {where} | {100 * ir / total:.2f}% |")


if __name__ == "__main__":
    main()
