#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Fails when a file in src/ includes a header of a higher layer.

The layers, bottom up, are the folders of src/ (a subfolder such as node/cluster/ belongs to
its top folder). A file may include headers of its own layer and of the layers below it;
docs/architecture.md describes what each holds.
Usage: check_layers.py SRC_DIR
"""
import os
import re
import sys

LAYERS = ["core", "resp", "net", "engine", "protocol", "node", "quorum", "lock", "api", "blocking"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def layer_of(path):
    top = path.split("/", 1)[0]
    return top if top in LAYERS else None


def main(src):
    problems = []
    for folder, _, names in os.walk(src):
        for name in sorted(names):
            if not name.endswith((".cpp", ".hpp")):
                continue
            rel = os.path.relpath(os.path.join(folder, name), src)
            own = layer_of(rel)
            if own is None:
                problems.append(f"{rel}: not in a layer folder ({', '.join(LAYERS)})")
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                text = f.read()
            for included in INCLUDE.findall(text):
                if not os.path.exists(os.path.join(src, included)):
                    continue  # a public header (include/redlock/...) or a generated one
                theirs = layer_of(included)
                if theirs is None or LAYERS.index(theirs) > LAYERS.index(own):
                    problems.append(f"{rel} ({own}) includes {included} ({theirs}), a higher layer")
    for p in problems:
        print(p)
    print(f"{len(problems)} include(s) against the layers" if problems else "layers: every include points down")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "src"))
