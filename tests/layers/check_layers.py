#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Fails when a file in src/ includes a header of a higher layer, or calls code defined there.

The layers, bottom up, are the folders of src/ (a subfolder such as node/cluster/ belongs to
its top folder). A file may include headers of its own layer and of the layers below it;
docs/architecture.md describes what each holds.

Includes alone miss the public headers: a member such as `node::endpoint()` is declared in
include/redlock/, which every layer may include, but defined in the layer of the public types
(src/api/). So, given the library's object files, the check also reads their symbols (with
`nm`): an object of a lower layer that refers to a function or variable defined (not inline,
not a template instance) in an object of a higher layer calls up, whatever header declared it.

Usage: check_layers.py SRC_DIR [OBJECT_FILE...]
"""
import os
import re
import subprocess
import sys

LAYERS = ["core", "resp", "net", "engine", "protocol", "node", "quorum", "lock", "api", "blocking",
          "prometheus"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
# The source an object file was compiled from, as CMake names it: .../src/<layer>/....cpp.o
OBJECT_SOURCE = re.compile(r"/src/((?:%s)/.+?)\.o(?:bj)?$" % "|".join(LAYERS))
# nm's types of a definition that the linker takes from one object only: text, data, bss and
# read-only data. Weak definitions (inline functions, template instances) are in every
# object that uses them, so they say nothing about who calls whom.
STRONG = set("TDBRG")


def layer_of(path):
    top = path.split("/", 1)[0]
    return top if top in LAYERS else None


def include_problems(src):
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
    return problems


def symbols(obj):
    """The symbols `obj` defines strongly, and those it refers to without defining."""
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            undefined.add(name)
        elif kind in STRONG:
            defined.add(name)
    return defined, undefined


def demangled(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True,
                         text=True).stdout
    return out.splitlines()


def call_problems(objects):
    problems = []
    sources = {}
    for obj in objects:
        m = OBJECT_SOURCE.search(obj.replace(os.sep, "/"))
        if not m:
            problems.append(f"{obj}: not the object of a file in a layer folder")
            continue
        if not os.path.exists(obj):
            problems.append(f"{obj}: missing (build the library before this test)")
            continue
        sources[obj] = m.group(1)
    table = {obj: symbols(obj) for obj in sources}
    definer = {}
    for obj, (defined, _) in table.items():
        for name in defined:
            definer[name] = sources[obj]
    calls = []
    for obj, (_, undefined) in sorted(table.items(), key=lambda item: sources[item[0]]):
        own = layer_of(sources[obj])
        for name in sorted(undefined):
            where = definer.get(name)
            if where and LAYERS.index(layer_of(where)) > LAYERS.index(own):
                calls.append((sources[obj], own, name, where))
    for (caller, own, _, where), readable in zip(calls, demangled([c[2] for c in calls])):
        problems.append(f"{caller} ({own}) calls {readable}, defined in {where} "
                        f"({layer_of(where)}), a higher layer")
    return problems


def main(argv):
    src = argv[1] if len(argv) > 1 else "src"
    # CMake's $<TARGET_OBJECTS:...> may reach here as one ';'-separated argument.
    objects = [obj for arg in argv[2:] for obj in arg.split(";") if obj]
    problems = include_problems(src) + call_problems(objects)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) or call(s) against the layers")
        return 1
    print("layers: every include" + (" and every call" if objects else "") + " points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
