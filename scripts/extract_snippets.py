#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Writes each C++ code block of a Markdown file to a source file of its own, so that the
test suite compiles (and runs) the code the documentation shows.

    python3 scripts/extract_snippets.py MARKDOWN OUT_DIR

A C++ block is a fenced block whose info string is `cpp` or `c++`. Block n of README.md is
written to OUT_DIR/README_n.cpp (n from 1), starting with a #line directive, so that a
compiler's messages name the Markdown file and line. Files are rewritten only when their
text changes (no needless rebuilds), and other README_*.cpp files in OUT_DIR are removed.
Prints the paths written, one per line, for CMake to read.

Python 3.11 standard library only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)")


def cpp_blocks(text: str) -> list[tuple[int, list[str]]]:
    """(first code line, lines) of each C++ fenced block, in order."""
    blocks: list[tuple[int, list[str]]] = []
    fence: str | None = None
    current: list[str] | None = None
    first = 0
    for number, line in enumerate(text.split("\n"), 1):
        if fence is None:
            m = OPEN.match(line)
            if m:
                fence = m.group(1)
                is_cpp = m.group(2).lower() in ("cpp", "c++")
                current = [] if is_cpp else None
                first = number + 1
            continue
        stripped = line.strip()
        if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
            if current is not None:
                blocks.append((first, current))
            fence, current = None, None
        elif current is not None:
            current.append(line)
    if fence is not None:
        raise ValueError(f"a code block opened at line {first - 1} is never closed")
    return blocks


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    markdown, out_dir = Path(argv[1]).resolve(), Path(argv[2])
    try:
        blocks = cpp_blocks(markdown.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"extract_snippets.py: {markdown}: {e}", file=sys.stderr)
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for n, (first, lines) in enumerate(blocks, 1):
        path = out_dir / f"{markdown.stem}_{n}.cpp"
        text = f'#line {first} "{markdown}"\n' + "\n".join(lines) + "\n"
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    for stale in out_dir.glob(f"{markdown.stem}_*.cpp"):
        if stale not in written:
            stale.unlink()
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
