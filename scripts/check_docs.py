#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Checks README.md and docs/**/*.md for broken references; exits 1 if it finds any.

Usage, from anywhere (ctest runs it as the `docs_check` test):

    python3 scripts/check_docs.py [--doxygen PATH] [REPOSITORY_ROOT]

What it checks, each failure reported as file:line:

1. Links. Every relative Markdown link or image, inline `[text](path#anchor)` or by
   reference (`[text][label]` with `[label]: path`), and relative `href`/`src` in HTML,
   must name a file or directory of the repository; an `#anchor` into a Markdown file
   must be one of its headings' GitHub anchors (lower case, punctuation dropped, spaces
   to '-', repeated headings -1, -2, ...) or an explicit `<a name|id>`, and an anchor
   into another file a line anchor (#L12, #L12-L20). Links with a scheme (https:,
   mailto:) are not fetched.
2. Names in code (code spans, fenced and indented code blocks; prose is not checked):
   - `redlock::name` and `redlock::name::member` must be public names of the headers
     include/redlock/*.hpp (classes, structs, enums and their values, functions,
     fields, aliases, public members; `X::X` for a constructor), as Doxygen reads them;
   - `type::member` with `type` one of redlock's public classes, structs or enums
     (`guard::until`, `options::expiry`, `error::lost`), checked the same way;
   - `redlock::detail::...` names an implementation detail (where a doc explains the
     library's inside): each of its parts must still be an identifier of src/ or
     include/redlock/ (detail helpers live in both), so a renamed function is noticed;
   - `#include <redlock/...>` must name an existing header.
   The few legitimate redlock:: names that are not C++ declarations are in ALLOWED below.
3. The API reference builds: Doxygen runs over the public headers with the repository's
   Doxyfile (XML output only, in a temporary directory), and each of its warnings (an
   undocumented public declaration, a broken command in a /// comment) is a problem. The
   public names of check 2 come from that XML.

Python 3.11 standard library only, and Doxygen (`doxygen` on PATH, or --doxygen).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
import urllib.parse
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

# redlock:: names that docs may use although no header declares them, and why.
ALLOWED = {
    "redlock::redlock": "the imported target of the CMake package (target_link_libraries)",
    "redlock::prometheus": "the imported target of the package's component prometheus",
}

IDENT = r"[A-Za-z_]\w*"
QUALIFIED_NAME = re.compile(rf"(?<![\w:])redlock((?:::~?{IDENT})+)")
INCLUDE = re.compile(r"#\s*include\s*<(redlock/[^>\s]+)>")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
INLINE_LINK = re.compile(
    r"!?\[((?:[^\[\]\\]|\\.|\[[^\[\]]*\])*)\]"  # [text], one level of nested brackets
    r"\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"  # (destination
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"  # optional "title")
)
REFERENCE_LINK = re.compile(r"(?<![\w\]\\])!?\[((?:[^\[\]\\]|\\.)+)\]\[((?:[^\[\]\\]|\\.)*)\]")
REFERENCE_DEF = re.compile(r"^ {0,3}\[((?:[^\[\]\\]|\\.)+)\]:\s*(<[^>]*>|\S+)")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)


@dataclass
class Markdown:
    """A Markdown file cut into what the checks need."""

    path: Path
    code: list[tuple[int, str]] = field(default_factory=list)  # (line, text) of code
    prose: list[tuple[int, str]] = field(default_factory=list)  # (line, text), code masked
    anchors: set[str] = field(default_factory=set)
    definitions: dict[str, tuple[int, str]] = field(default_factory=dict)  # reference links


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading, from its rendered text (before de-duplication):
    lower case, punctuation other than '-' and '_' dropped, spaces turned into '-'."""
    kept = []
    for c in text.strip().lower():
        category = unicodedata.category(c)
        if c in " -_" or category[0] in "LNM" or category == "Pc":
            kept.append("-" if c == " " else c)
    return "".join(kept)


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each code span, backticks included (CommonMark: a run of n
    backticks closes at the next run of exactly n; backslash escapes outside spans)."""
    spans = []
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] != "`":
            i += 1
            continue
        n = len(text[i:]) - len(text[i:].lstrip("`"))
        j = i + n
        while True:
            k = text.find("`" * n, j)
            if k < 0:
                break
            run = len(text[k:]) - len(text[k:].lstrip("`"))
            if run == n:
                spans.append((i, k + n))
                break
            j = k + run
        i = spans[-1][1] if spans and spans[-1][0] == i else i + n
    return spans


def heading_text(raw: str) -> str:
    """The rendered text of a heading, which GitHub's anchor is made from."""
    out, last = [], 0
    for start, end in code_spans(raw):
        out.append(strip_inline(raw[last:start]))
        out.append(raw[start:end].strip("`").strip())
        last = end
    out.append(strip_inline(raw[last:]))
    return "".join(out)


def strip_inline(text: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # _emphasis_, not snake_case
    return text.replace("*", "")


def parse_markdown(path: Path) -> Markdown:
    doc = Markdown(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    fence: tuple[str, int] | None = None  # (char, length) of the open fence
    in_list = False
    block: list[tuple[int, str]] = []  # the prose lines of the current paragraph
    slugs: dict[str, int] = {}

    def add_anchor(text: str) -> None:
        slug = github_slug(text)
        n = slugs.get(slug, 0)
        doc.anchors.add(slug if n == 0 else f"{slug}-{n}")
        slugs[slug] = n + 1

    def flush() -> None:
        # Code spans may run over line breaks within a paragraph: mask them per paragraph.
        if not block:
            return
        text = "\n".join(t for _, t in block)
        first = block[0][0]
        masked = list(text)
        for start, end in code_spans(text):
            line = first + text.count("\n", 0, start)
            doc.code.append((line, text[start:end].strip("`")))
            for k in range(start, end):
                if masked[k] != "\n":
                    masked[k] = " "
        masked_text = "".join(masked)
        for offset, line_text in zip(range(len(block)), masked_text.split("\n")):
            doc.prose.append((first + offset, line_text))
        block.clear()

    previous_blank = True
    for number, line in enumerate(lines, 1):
        if fence:
            m = re.match(r"^\s*(`{3,}|~{3,})\s*$", line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1]:
                fence = None
            else:
                doc.code.append((number, line))
            continue
        m = FENCE.match(line)
        if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
            flush()
            fence = (m.group(2)[0], len(m.group(2)))
            previous_blank = False
            continue
        if not line.strip():
            flush()
            previous_blank = True
            continue
        indented = line.startswith("    ") or line.startswith("\t")
        continues_code = bool(doc.code) and doc.code[-1][0] == number - 1
        if indented and not in_list and not block and (previous_blank or continues_code):
            doc.code.append((number, line))  # an indented code block
            previous_blank = False
            continue
        if LIST_ITEM.match(line):
            in_list = True
            flush()
        elif not indented and previous_blank:
            in_list = False
        previous_blank = False
        m = ATX_HEADING.match(line)
        if m:
            flush()
            add_anchor(heading_text(m.group(2) or ""))
            block.append((number, line))
            flush()
            continue
        if block and not LIST_ITEM.match(line) and re.match(r"^ {0,3}(=+|-+)\s*$", line):
            # A setext heading: the paragraph above is its text.
            add_anchor(heading_text(" ".join(t.strip() for _, t in block)))
            flush()
            continue
        m = REFERENCE_DEF.match(line)
        if m:
            doc.definitions[normalize_label(m.group(1))] = (number, m.group(2).strip("<>"))
            continue
        if line.lstrip().startswith("|"):
            flush()  # a table row: cells do not share code spans
            block.append((number, line))
            flush()
            continue
        block.append((number, line))
    flush()
    for _, text in doc.prose:
        for m in HTML_ANCHOR.finditer(text):
            doc.anchors.add(m.group(1))
    return doc


def normalize_label(label: str) -> str:
    return " ".join(label.lower().split())


class DoxygenError(Exception):
    pass


def run_doxygen(root: Path, doxygen: str, out_dir: Path) -> list[str]:
    """Runs Doxygen with the repository's Doxyfile, XML output only, into out_dir; returns its
    warnings (one string each, paths relative to root)."""
    config = (f'@INCLUDE = "{root / "Doxyfile"}"\n'
              f'OUTPUT_DIRECTORY = "{out_dir}"\n'
              "GENERATE_HTML = NO\n"
              "GENERATE_XML = YES\n"
              "WARN_AS_ERROR = NO\n")  # all warnings are reported below, not only the first
    try:
        result = subprocess.run([doxygen, "-"], input=config, cwd=root, capture_output=True,
                                text=True, timeout=120)
    except OSError as e:
        raise DoxygenError(f"cannot run {doxygen}: {e}") from e
    if result.returncode != 0 or not (out_dir / "xml" / "index.xml").is_file():
        raise DoxygenError(f"{doxygen} failed (exit status {result.returncode}):\n"
                           f"{result.stderr.strip()}")
    prefix = str(root) + "/"
    return [w.replace(prefix, "") for w in result.stderr.splitlines() if w.strip()]


@dataclass(frozen=True)
class PublicName:
    kind: str  # Doxygen's: class, struct, union, enum, enumvalue, function, variable, typedef

    @property
    def is_type(self) -> bool:
        return self.kind in ("class", "struct", "union", "enum")


def public_names(xml_dir: Path) -> dict[str, PublicName]:
    """Every public qualified name Doxygen found in namespace redlock, e.g.
    "redlock::guard::until" (not redlock::detail). Constructors appear as "redlock::X::X",
    operators as "redlock::X::operator", enum values as "redlock::error::lost"."""
    names: dict[str, PublicName] = {}

    def public(name: str) -> bool:
        return (name == "redlock" or name.startswith("redlock::")) and not name.startswith("redlock::detail")

    for path in sorted(xml_dir.glob("*.xml")):
        if path.name == "index.xml" or path.name.startswith(("dir_", "Doxyfile")):
            continue
        for compound in ElementTree.parse(path).getroot().iter("compounddef"):
            scope = compound.findtext("compoundname", "")
            kind = compound.get("kind", "")
            if kind not in ("namespace", "class", "struct", "union") or not public(scope):
                continue
            if kind == "namespace" and scope != "redlock":
                names.setdefault(scope, PublicName(kind))  # one inside redlock: redlock::blocking
            if kind != "namespace":
                if compound.get("prot", "public") != "public":
                    continue
                names.setdefault(scope, PublicName(kind))
                short = scope.rsplit("::", 1)[-1]
                names.setdefault(f"{scope}::{short}", PublicName("function"))  # constructors
            for member in compound.iter("memberdef"):
                if member.get("prot") != "public":
                    continue
                name = member.findtext("name", "").lstrip("~")
                if name.startswith("operator"):
                    name = "operator"  # how a doc writes it in a code span: X::operator()
                qualified = f"{scope}::{name}"
                names.setdefault(qualified, PublicName(member.get("kind", "")))
                for value in member.iter("enumvalue"):
                    names.setdefault(f"{qualified}::{value.findtext('name')}", PublicName("enumvalue"))
    return names


class Checker:
    def __init__(self, root: Path, doxygen: str):
        self.root = root.resolve()
        self.doxygen = doxygen
        self.warnings: list[str] = []  # Doxygen's
        self.problems: list[tuple[str, int, str]] = []  # (file, line, message)
        self.docs: dict[Path, Markdown] = {}
        self.links = 0
        self.names = 0

    def report(self, path: Path, line: int, message: str) -> None:
        self.problems.append((str(path.relative_to(self.root)), line, message))

    def markdown(self, path: Path) -> Markdown:
        path = path.resolve()
        if path not in self.docs:
            self.docs[path] = parse_markdown(path)
        return self.docs[path]

    # -- links
    def check_links(self, doc: Markdown) -> None:
        for number, text in doc.prose:
            for m in INLINE_LINK.finditer(text):
                self.check_target(doc, number, m.group(2).strip("<>"))
            for m in REFERENCE_LINK.finditer(text):
                label = normalize_label(m.group(2) or m.group(1))
                if label not in doc.definitions:
                    link = f"[{m.group(1)}][{m.group(2)}]"
                    self.report(doc.path, number, f"link {link}: no definition [{label}]: ...")
            for m in HTML_LINK.finditer(text):
                self.check_target(doc, number, m.group(1))
        for label, (number, target) in sorted(doc.definitions.items()):
            self.check_target(doc, number, target)

    def check_target(self, doc: Markdown, number: int, target: str) -> None:
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("//"):
            return  # https:, mailto: ...: not this checker's business (no network)
        self.links += 1
        path_part, _, anchor = target.partition("#")
        path_part = urllib.parse.unquote(path_part)
        anchor = urllib.parse.unquote(anchor)
        if not path_part:
            dest = doc.path
        elif path_part.startswith("/"):
            dest = self.root / path_part.lstrip("/")  # GitHub: relative to the repository root
        else:
            dest = doc.path.parent / path_part
        dest = dest.resolve()
        if not dest.is_relative_to(self.root):
            self.report(doc.path, number, f"link {target}: points outside the repository")
            return
        if not dest.exists():
            self.report(doc.path, number, f"link {target}: {dest.relative_to(self.root)} does not exist")
            return
        if not anchor:
            return
        if dest.is_dir():
            self.report(doc.path, number, f"link {target}: an anchor into a directory")
        elif dest.suffix.lower() in (".md", ".markdown"):
            if anchor.lower() not in {a.lower() for a in self.markdown(dest).anchors}:
                where = dest.relative_to(self.root)
                self.report(doc.path, number, f"link {target}: no heading with anchor #{anchor} in {where}")
        elif not re.fullmatch(r"L\d+(-L\d+)?", anchor):
            self.report(doc.path, number, f"link {target}: #{anchor} is not a line anchor (#L12)")

    # -- names
    def load_names(self) -> bool:
        with tempfile.TemporaryDirectory(prefix="redlock-doxygen-") as out:
            try:
                warnings = run_doxygen(self.root, self.doxygen, Path(out))
            except DoxygenError as e:
                self.problems.append(("Doxyfile", 0, f"the API reference does not build: {e}"))
                return False
            self.warnings = warnings
            self.public = public_names(Path(out) / "xml")
        if not self.public:
            self.problems.append(("Doxyfile", 0, "Doxygen found no public name in namespace redlock"))
            return False
        # Public types that docs name without the namespace: guard::until, error::lost; and
        # namespaces inside redlock, as in blocking::mutex::lock.
        self.types = sorted(
            {
                n.split("::")[1]
                for n, kind in self.public.items()
                if n.count("::") == 1 and (kind.is_type or kind.kind == "namespace")
            },
            key=lambda t: (-len(t), t),
        )
        alternatives = "|".join(self.types) or "(?!)"
        self.type_member = re.compile(rf"(?<![\w:])({alternatives})((?:::~?{IDENT})+)")
        identifiers: set[str] = set()
        for pattern in ("src/**/*.hpp", "src/**/*.cpp", "include/redlock/**/*.hpp"):
            for p in self.root.glob(pattern):
                identifiers.update(re.findall(r"\w+", p.read_text(encoding="utf-8", errors="replace")))
        self.internal_identifiers = identifiers
        return True

    def check_names(self, doc: Markdown) -> None:
        for number, text in doc.code:
            for m in INCLUDE.finditer(text):
                if not (self.root / "include" / m.group(1)).is_file():
                    self.report(doc.path, number, f"#include <{m.group(1)}>: no such header in include/")
            for m in QUALIFIED_NAME.finditer(text):
                self.check_name(doc, number, "redlock" + m.group(1))
            for m in self.type_member.finditer(text):
                self.check_name(doc, number, "redlock::" + m.group(1) + m.group(2), written=m.group(0))

    def check_name(self, doc: Markdown, number: int, name: str, written: str | None = None) -> None:
        self.names += 1
        parts = name.split("::")
        if name in ALLOWED:
            return
        if parts[1] == "detail":
            missing = [p for p in parts[2:] if p.lstrip("~") not in self.internal_identifiers]
            if missing:
                self.report(doc.path, number, f"{name}: no {', '.join(missing)} in src/ or include/redlock/")
            return
        # A destructor X::~X is looked up as the constructor X::X, an operator as "operator".
        lookup = "::".join("operator" if p.startswith("operator") else p.lstrip("~") for p in parts)
        if lookup not in self.public:
            self.report(doc.path, number, f"{written or name}: not a public name of include/redlock/*.hpp")

    # -- everything
    def run(self, files: list[Path]) -> int:
        names_ok = self.load_names()
        for path in files:
            doc = self.markdown(path)
            self.check_links(doc)
            if names_ok:
                self.check_names(doc)
        for file, line, message in sorted(self.problems):
            print(f"{file}:{line}: {message}" if line else f"{file}: {message}")
        for warning in self.warnings:
            print(f"doxygen: {warning}")
        if self.problems or self.warnings:
            print(f"check_docs.py: {len(self.problems)} broken reference(s), "
                  f"{len(self.warnings)} Doxygen warning(s)")
            return 1
        print(f"check_docs.py: {len(files)} files, {self.links} links, {self.names} names: all resolve; "
              f"Doxygen: {len(self.public)} public names, no warnings")
        return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository root (default: this script's checkout)")
    parser.add_argument("--doxygen", default=shutil.which("doxygen"),
                        help="the doxygen executable (default: doxygen on PATH)")
    args = parser.parse_args(argv[1:])
    if not args.doxygen:
        print("check_docs.py: doxygen not found (apt-get install doxygen, or --doxygen PATH)")
        return 2
    root = args.root.resolve()
    files = [root / "README.md"] + sorted((root / "docs").glob("**/*.md"))
    files = [f for f in files if f.is_file()]
    return Checker(root, args.doxygen).run(files)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
