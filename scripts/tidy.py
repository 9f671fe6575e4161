#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""clang-tidy on every source file of src/, skipping the files it already passed unchanged.

    scripts/tidy.py BUILD_DIR [--jobs N]

BUILD_DIR is a clang build with compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS) whose
library is built: the compiler's dependency files (.o.d) beside its objects name every header a
file includes. A file passed when clang-tidy found nothing in it; the pass is remembered under
a digest of clang-tidy's version, .clang-tidy, the compile command and the contents of the file
and of every header it includes. A later run (another checkout of the same sources too: paths
count from the checkout) checks only the files whose digest changed, as ccache compiles only
what changed. The cache is $REDLOCK_TIDY_CACHE, else ~/.cache/redlock-clang-tidy.

Exit status 0 when every file passes, 1 when clang-tidy reports anything (its output is
printed), 2 for a build directory that lacks what is needed.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def digest_of_file(path, memo):
    if path not in memo:
        memo[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return memo[path]


def dependencies(depfile):
    """The files a make-style dependency file names, its target left out."""
    text = depfile.read_text().replace("\\\n", " ")
    _, _, deps = text.partition(":")
    return [d for d in deps.split() if d]


def relative(text, build):
    """`text` with the checkout's and the build directory's paths made relative."""
    return text.replace(str(build), "<build>").replace(str(REPO), "<repo>")


def file_digest(entry, build, common, memo):
    """The digest under which `entry` (a compile_commands.json entry) passes; None without a
    dependency file, empty when a file it names is gone."""
    args = entry.get("command") or " ".join(entry["arguments"])
    output = args.split(" -o ", 1)[1].split()[0] if " -o " in args else None
    if output is None:
        return None
    depfile = Path(entry["directory"]) / (output + ".d")
    if not depfile.exists():
        return None
    h = hashlib.sha256(common)
    h.update(relative(args, build).encode())
    for dep in sorted(dependencies(depfile)):
        path = (Path(entry["directory"]) / dep).resolve()
        if not path.exists():
            return ""  # the build is older than the sources: check the file, remember nothing
        h.update(relative(str(path), build).encode())
        h.update(digest_of_file(path, memo).encode())
    return h.hexdigest()


def tidy(build, source):
    result = subprocess.run(
        ["clang-tidy", "-p", str(build), "--quiet", source],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    # "N warnings generated." is clang's count of the warnings it suppressed: not a finding.
    lines = [l for l in result.stdout.splitlines() if not l.endswith(" warnings generated.")
             and not l.endswith(" warning generated.")]
    return result.returncode, "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    options = parser.parse_args()
    build = Path(options.build).resolve()
    commands = build / "compile_commands.json"
    if not commands.exists():
        print(f"tidy.py: no {commands} (configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON)",
              file=sys.stderr)
        return 2
    cache = Path(os.environ.get("REDLOCK_TIDY_CACHE")
                 or Path.home() / ".cache" / "redlock-clang-tidy")
    cache.mkdir(parents=True, exist_ok=True)

    version = subprocess.run(["clang-tidy", "--version"], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
    common = (version + (REPO / ".clang-tidy").read_text()).encode()
    src = str(REPO / "src") + os.sep
    entries = [e for e in json.loads(commands.read_text()) if e["file"].startswith(src)]
    memo = {}
    todo = []
    for entry in entries:
        digest = file_digest(entry, build, common, memo)
        if digest is None:
            print(f"tidy.py: no dependency file for {entry['file']}: is the library built?",
                  file=sys.stderr)
            return 2
        if not digest or not (cache / digest).exists():
            todo.append((entry["file"], digest))

    failures = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
        results = pool.map(lambda item: (item, tidy(build, item[0])), todo)
        for (source, digest), (status, output) in results:
            if status == 0 and not output.strip():
                if digest:
                    (cache / digest).touch()
                continue
            failures += 1
            print(output or f"{source}: clang-tidy exited {status}")
    print(f"tidy.py: {len(entries)} files, {len(entries) - len(todo)} passed before unchanged, "
          f"{len(todo)} checked, {failures} with findings")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
