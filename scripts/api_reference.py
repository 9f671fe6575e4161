#!/usr/bin/env python3
"""Generates docs/api-reference.md from the `///` comments of the public headers.

Reads every public header include/redlock/*.hpp (not include/redlock/detail/) and writes
docs/api-reference.md: one section per header with its `/// \\file` description, then each
declaration of namespace redlock (classes, structs and enums with their public members,
enum values, fields, free functions, templates, aliases) as a cleaned-up signature (no
bodies, no async_initiate lambdas) followed by its `///` comment as Markdown.
Namespace redlock::detail, and declarations that only exist for it, are left out.

Usage, from anywhere:

    python3 scripts/api_reference.py            # (re)write docs/api-reference.md
    python3 scripts/api_reference.py --check    # exit 1 with a diff when it is out of date
    python3 scripts/api_reference.py --root DIR # another checkout
    python3 scripts/api_reference.py --undocumented  # list public declarations without ///

The headers are parsed with a small hand-written scanner, not a C++ front end: it relies on
the headers' regular style (one declaration after each `///` block, `/// \\overload`,
`/// \\file`). It refuses to guess: a `///` block that is not followed directly by a
declaration (blank line, preprocessor line, closing brace, inside a body) is an error, so
every comment in the public headers ends up attached to the declaration it documents.
The output depends on the headers only (no dates, sorted inputs), so --check is exact.

Python 3.11 standard library only. scripts/check_docs.py imports this module.
"""

from __future__ import annotations

import argparse
import bisect
import difflib
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

OUTPUT = Path("docs") / "api-reference.md"
HEADER_DIR = Path("include") / "redlock"
REGENERATE = "python3 scripts/api_reference.py"
REPO_ROOT = Path(__file__).resolve().parent.parent

# The reading order: the umbrella header, then the path of a user's program (client, its
# config, a lock, its guard, work under it, fencing), then the types those return. Headers
# not listed here follow in alphabetical order, so a new header is never silently skipped.
HEADER_ORDER = [
    "redlock.hpp",
    "client.hpp",
    "config.hpp",
    "node.hpp",
    "options.hpp",
    "mutex.hpp",
    "guard.hpp",
    "with_lock.hpp",
    "fence.hpp",
    "fenced_store.hpp",
    "report.hpp",
    "error.hpp",
    "observability.hpp",
]

# Public signatures that name a redlock::detail helper show what a user sees instead: a
# documented declaration names it only as an implementation device. Specific rules first;
# any other detail type becomes "/* unspecified */" (see rewrite_detail).
DETAIL_REWRITES = [
    # with_lock's return type: awaitable<T> where work(guard&) returns awaitable<T>; the
    # comment names that T.
    (re.compile(r"typename\s+detail::awaitable_value<.*?>::type(?=>)"), "T"),
]
DETAIL_NAME = re.compile(r"(?<![\w:])(typename\s+)?(::)?(redlock::)?detail::")

ACCESS_SPECIFIERS = ("public", "private", "protected")
CLASS_KEYS = ("class", "struct", "union")


class ParseError(Exception):
    """A header the scanner cannot read, or a `///` block it cannot attach."""


@dataclass
class Decl:
    """One declaration of a header, with the `///` block right before it."""

    kind: str  # namespace class struct union enum function field alias enumerator other
    name: str
    signature: str  # cleaned up, no body; template/requires clauses on their own lines
    doc: list[str]  # the comment's lines without the leading "/// "
    line: int
    access: str = "public"
    blank_before: bool = False  # a blank line separates it from the previous declaration
    children: list[Decl] = field(default_factory=list)
    internal: bool = False  # in a detail namespace, or names a detail type undocumented

    @property
    def is_overload(self) -> bool:
        return bool(self.doc) and re.match(r"\\overload\b", self.doc[0]) is not None

    @property
    def is_scope(self) -> bool:
        return self.kind in ("namespace", "class", "struct", "union", "enum")


@dataclass
class Header:
    path: Path
    name: str  # e.g. "client.hpp"
    file_doc: list[str]
    decls: list[Decl]
    includes: list[str]  # <redlock/...> headers it includes, in order


# ---------------------------------------------------------------------------------------
# Text helpers


def top_level(text: str):
    """Yields (index, char, depth) where depth counts open (), [], {} and template <>.

    '<' opens a template argument list only after a name (so `a < b` is rare enough not to
    matter in declarations) and never in `operator<`; '>' of `->` never closes one.
    """
    depth = 0
    for i, c in enumerate(text):
        if c in "([{":
            yield i, c, depth
            depth += 1
            continue
        if c in ")]}":
            depth -= 1
        elif c == "<":
            before = text[:i].rstrip()
            if before and (before[-1].isalnum() or before[-1] in "_>") and not before.endswith("operator"):
                yield i, c, depth
                depth += 1
                continue
        elif c == ">" and depth > 0 and not (i > 0 and text[i - 1] == "-"):
            depth -= 1
        yield i, c, depth


def matching(text: str, open_idx: int) -> int:
    """Index of the bracket closing the one at open_idx (any of ( [ { <)."""
    pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
    opener, closer = text[open_idx], pairs[text[open_idx]]
    depth = 0
    for i in range(open_idx, len(text)):
        c = text[i]
        if c == opener:
            depth += 1
        elif c == closer and not (closer == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i
    raise ParseError(f"unbalanced {opener!r} in {text!r}")


def normalize(text: str) -> str:
    """One line, single spaces, no space just inside brackets or before a comma."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"([(<\[]) ", r"\1", text)
    text = re.sub(r" ([)\]>,])", r"\1", text)
    return text


def split_template(text: str) -> tuple[str, str]:
    """('template <...>', rest) or ('', text)."""
    m = re.match(r"\s*template\s*<", text)
    if not m:
        return "", text
    end = matching(text, m.end() - 1)
    return normalize(text[: end + 1]).replace("template<", "template <"), text[end + 1 :]


def split_requires(text: str) -> tuple[str, str]:
    """('requires X', rest) for a leading requires-clause made of one primary expression."""
    m = re.match(r"\s*requires\s+", text)
    if not m:
        return "", text
    i = m.end()
    if text[i] == "(":
        end = matching(text, i) + 1
    else:
        end = i
        while end < len(text) and (text[end].isalnum() or text[end] in "_:"):
            end += 1
        if end < len(text) and text[end] == "<":
            end = matching(text, end) + 1
    return normalize(text[:end]), text[end:]


def declarator_parens(text: str) -> tuple[int, int] | None:
    """The (open, close) of a function's parameter list in a declaration head, or None.

    A function head has a top-level '(' after a name, and after its ')' only qualifiers, a
    trailing return type, a requires-clause, `= default`-like, or a mem-initializer list.
    `std::function<int()> f{}` is not one: its parentheses are inside a template argument.
    """
    for i, c, depth in top_level(text):
        if c != "(" or depth != 0:
            continue
        before = text[:i].rstrip()
        named = before and (before[-1].isalnum() or before[-1] == "_")
        if not named and not re.search(r"\boperator\s*\(\s*\)$", before):
            continue
        if re.search(r"\b(decltype|alignas|noexcept|static_assert|__attribute__|requires)$", before):
            continue
        if before.endswith("operator"):  # operator(): these parentheses are the name
            continue
        close = matching(text, i)
        rest = text[close + 1 :]
        while True:
            rest = rest.lstrip()
            m = re.match(r"(const|volatile|override|final|mutable)\b|&&|&", rest)
            if m:
                rest = rest[m.end() :]
                continue
            m = re.match(r"noexcept\b\s*", rest)
            if m:
                rest = rest[m.end() :]
                if rest.startswith("("):
                    rest = rest[matching(rest, 0) + 1 :]
                continue
            break
        if (
            rest == ""
            or rest.startswith("->")
            or rest.startswith("=")
            or rest.startswith("requires")
            or (rest.startswith(":") and not rest.startswith("::"))
        ):
            return i, close
        return None
    return None


def function_name(text: str, open_idx: int) -> str:
    before = text[:open_idx].rstrip()
    m = re.search(r"(operator\s*(\(\)|\[\]|[^\w\s(]+|\s[\w:<>&* ]+?)|~?\w+)$", before)
    if not m:
        raise ParseError(f"no function name in {text!r}")
    return normalize(m.group(0))


def cut_mem_initializers(text: str, close: int) -> str:
    """The head up to (not including) a constructor's mem-initializer list."""
    for i, c, depth in top_level(text):
        if i > close and depth == 0 and c == ":" and text[i - 1] != ":" and text[i + 1 : i + 2] != ":":
            return text[:i]
    return text


def rewrite_detail(signature: str) -> str:
    for pattern, replacement in DETAIL_REWRITES:
        signature = pattern.sub(replacement, signature)
    while m := DETAIL_NAME.search(signature):
        # The whole id-expression: names, '::' and balanced template arguments.
        end = m.end()
        while end < len(signature):
            if signature[end].isalnum() or signature[end] in "_:":
                end += 1
            elif signature[end] == "<":
                end = matching(signature, end) + 1
            else:
                break
        signature = signature[: m.start()] + "/* unspecified */" + signature[end:]
    return signature


def names_detail(text: str) -> bool:
    """True when the text names something of namespace redlock::detail (not asio::detail)."""
    return re.search(r"(?<![\w:])(::)?(redlock::)?detail::", text) is not None


# ---------------------------------------------------------------------------------------
# The scanner


class Scanner:
    """Reads one header into a tree of Decl, attaching each `///` block to what follows."""

    def __init__(self, text: str, path: Path):
        self.s = text
        self.i = 0
        self.path = path
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.file_doc: list[str] = []
        self.attached: set[int] = set()  # line numbers of /// lines that found a home

    # -- positions and errors
    def line(self, pos: int | None = None) -> int:
        return bisect.bisect_right(self.line_starts, self.i if pos is None else pos)

    def error(self, message: str, line: int | None = None) -> ParseError:
        return ParseError(f"{self.path}:{line or self.line()}: {message}")

    def eof(self) -> bool:
        return self.i >= len(self.s)

    def at(self, token: str) -> bool:
        return self.s.startswith(token, self.i)

    # -- lexical pieces
    def read_ws(self) -> int:
        """Skips whitespace; returns how many newlines it crossed (2+: a blank line)."""
        newlines = 0
        while not self.eof() and self.s[self.i] in " \t\r\n\f\v":
            newlines += self.s[self.i] == "\n"
            self.i += 1
        return newlines

    def rest_of_line(self) -> str:
        end = self.s.find("\n", self.i)
        end = len(self.s) if end < 0 else end
        text = self.s[self.i : end]
        self.i = end
        return text

    def skip_block_comment(self) -> None:
        if self.at("/**") or self.at("/*!"):
            raise self.error("Doxygen block comment: this project documents with /// only")
        end = self.s.find("*/", self.i + 2)
        if end < 0:
            raise self.error("unterminated /* comment")
        self.i = end + 2

    def skip_literal(self) -> str:
        quote = self.s[self.i]
        start = self.i
        # A digit separator (1'000) is not a character literal.
        prev, nxt = self.s[start - 1 : start], self.s[start + 1 : start + 2]
        if quote == "'" and prev.isalnum() and nxt.isalnum():
            self.i += 1
            return quote
        # A raw string literal R"delim( ... )delim" (any encoding prefix) ends at )delim".
        m = re.search(r"(?:u8|[uUL])?R$", self.s[max(0, start - 3) : start])
        if quote == '"' and m and not self.s[start - len(m.group(0)) - 1 : start - len(m.group(0))].isalnum():
            delim = self.s[start + 1 : self.s.index("(", start)]
            end = self.s.find(f"){delim}\"", start)
            if end < 0:
                raise self.error("unterminated raw string literal")
            self.i = end + len(delim) + 2
            return self.s[start : self.i]
        self.i += 1
        while not self.eof() and self.s[self.i] != quote:
            if self.s[self.i] == "\\":
                self.i += 1
            if self.s[self.i] == "\n":
                raise self.error("unterminated literal")
            self.i += 1
        self.i += 1
        return self.s[start : self.i]

    def skip_balanced(self) -> str:
        """Skips from an opening bracket to its match, over literals and comments."""
        pairs = {"(": ")", "[": "]", "{": "}"}
        stack = []
        start = self.i
        while not self.eof():
            c = self.s[self.i]
            if self.at("///") and not self.at("////"):
                raise self.error("/// comment inside a body or initializer: nothing to attach it to")
            if self.at("//"):
                self.rest_of_line()
                continue
            if self.at("/*"):
                self.skip_block_comment()
                continue
            if c in "\"'":
                self.skip_literal()
                continue
            if c in pairs:
                stack.append(pairs[c])
            elif c in ")]}":
                if not stack or stack.pop() != c:
                    raise self.error(f"unbalanced {c!r}")
                if not stack:
                    self.i += 1
                    return self.s[start : self.i]
            self.i += 1
        raise self.error("unterminated bracket")

    # -- scopes
    def parse_file(self) -> list[Decl]:
        return self.parse_scope("file")

    def parse_scope(self, kind: str) -> list[Decl]:
        """Declarations until the scope's closing brace (or the end of the file)."""
        decls: list[Decl] = []
        access = "private" if kind == "class" else "public"
        pending: list[tuple[int, str]] = []  # the /// block read so far
        blank = False
        while True:
            if self.read_ws() >= 2:
                pending = self.flush_file_doc(pending)
                if pending:
                    raise self.error(
                        "/// comment followed by a blank line: attach it to a declaration", pending[-1][0]
                    )
                blank = True
            if self.eof():
                pending = self.flush_file_doc(pending)
                if kind != "file":
                    raise self.error("missing closing brace")
                if pending:
                    raise self.error("/// comment at the end of the file", pending[-1][0])
                return decls
            if self.at("///") and not self.at("////"):
                line = self.line()
                text = self.rest_of_line()[3:]
                pending.append((line, text[1:] if text.startswith(" ") else text))
                continue
            if self.at("//"):
                self.rest_of_line()
                continue
            if self.at("/*"):
                self.skip_block_comment()
                continue
            pending = self.flush_file_doc(pending)
            c = self.s[self.i]
            if c == "#":
                if pending:
                    raise self.error("/// comment before a preprocessor line", pending[-1][0])
                while self.rest_of_line().endswith("\\") and not self.eof():
                    self.i += 1
                continue
            if c == "}":
                if kind == "file":
                    raise self.error("unmatched '}'")
                if pending:
                    raise self.error("/// comment before a closing brace", pending[-1][0])
                self.i += 1
                return decls
            if c == ";":
                self.i += 1
                continue
            line = self.line()
            decl = self.read_declaration(kind)
            if decl.kind == "access":
                if pending:
                    raise self.error("/// comment before an access specifier", pending[-1][0])
                access = decl.name
                continue
            decl.doc = [text for _, text in pending]
            decl.line = line
            decl.access = access
            decl.blank_before = blank
            self.attached.update(n for n, _ in pending)
            pending, blank = [], False
            decls.append(decl)

    def flush_file_doc(self, pending: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """Takes a `/// \\file` block as the header's description."""
        if pending and re.match(r"\\file\b", pending[0][1]):
            if self.file_doc:
                raise self.error("a second /// \\file block", pending[0][0])
            first = pending[0][1][len("\\file") :].strip()
            self.file_doc = ([first] if first else []) + [text for _, text in pending[1:]]
            self.attached.update(n for n, _ in pending)
            return []
        return pending

    def parse_enum_body(self) -> list[Decl]:
        """The enumerators up to the closing brace, each with its /// block."""
        values: list[Decl] = []
        pending: list[tuple[int, str]] = []
        while True:
            if self.read_ws() >= 2 and pending:
                raise self.error("/// comment followed by a blank line", pending[-1][0])
            if self.eof():
                raise self.error("unterminated enum")
            if self.at("///") and not self.at("////"):
                line = self.line()
                text = self.rest_of_line()[3:]
                pending.append((line, text[1:] if text.startswith(" ") else text))
                continue
            if self.at("//"):
                self.rest_of_line()
                continue
            if self.at("/*"):
                self.skip_block_comment()
                continue
            c = self.s[self.i]
            if c == "}":
                if pending:
                    raise self.error("/// comment before a closing brace", pending[-1][0])
                self.i += 1
                return values
            if c == ",":
                self.i += 1
                continue
            line = self.line()
            start = self.i
            while not self.eof() and self.s[self.i] not in ",}":
                if self.at("//"):
                    break
                if self.s[self.i] in "([{":
                    self.skip_balanced()
                else:
                    self.i += 1
            text = normalize(self.s[start : self.i])
            m = re.match(r"\w+", text)
            if not m:
                raise self.error(f"cannot read enumerator {text!r}")
            values.append(Decl("enumerator", m.group(0), text, [t for _, t in pending], line))
            self.attached.update(n for n, _ in pending)
            pending = []

    def read_declaration(self, scope_kind: str) -> Decl:
        """One declaration: up to its ';', its body, or its scope's closing brace."""
        head = ""
        depth = 0
        while True:
            if self.eof():
                raise self.error(f"unterminated declaration {normalize(head)!r}")
            c = self.s[self.i]
            if self.at("///") and not self.at("////"):
                raise self.error("/// comment inside a declaration: put it on the lines before")
            if self.at("//"):
                self.rest_of_line()
                head += " "
                continue
            if self.at("/*"):
                self.skip_block_comment()
                head += " "
                continue
            if c in "\"'":
                head += self.skip_literal()
                continue
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif depth == 0 and c == ";":
                self.i += 1
                return self.make_decl(head, has_body=False)
            elif (
                depth == 0
                and c == ":"
                and not self.at("::")
                and head.strip() in ACCESS_SPECIFIERS
                and scope_kind in CLASS_KEYS
            ):
                self.i += 1
                return Decl("access", head.strip(), "", [], self.line())
            elif depth == 0 and c == "{":
                what = self.classify_brace(head)
                if what == "namespace":
                    self.i += 1
                    name = re.search(r"namespace\s*([\w:]*)", head).group(1)
                    children = self.parse_scope("namespace")
                    return Decl("namespace", name, f"namespace {name}", [], 0, children=children)
                if what in CLASS_KEYS:
                    self.i += 1
                    decl = self.make_decl(head, has_body=False, scope=what)
                    decl.children = self.parse_scope(what)
                    self.expect_semicolon()
                    return decl
                if what == "enum":
                    self.i += 1
                    decl = self.make_decl(head, has_body=False, scope="enum")
                    decl.children = self.parse_enum_body()
                    self.expect_semicolon()
                    return decl
                if what == "function":
                    self.skip_balanced()
                    return self.make_decl(head, has_body=True)
                head += self.skip_balanced()  # a brace initializer: part of the declaration
                continue
            head += c
            self.i += 1

    def expect_semicolon(self) -> None:
        """Skips to the ';' after a class or enum body. A variable declared with the type
        (`} stats_;`) is not listed: public headers do not do that."""
        while not self.eof() and not self.at(";"):
            if self.at("///") and not self.at("////"):
                raise self.error("/// comment inside a declaration")
            if self.s[self.i] in "([{":
                self.skip_balanced()
            elif self.s[self.i] in "\"'":
                self.skip_literal()
            else:
                self.i += 1
        if self.eof():
            raise self.error("expected ';' after a class or enum body")
        self.i += 1

    @staticmethod
    def classify_brace(head: str) -> str:
        _, rest = split_template(head)
        rest = rest.strip()
        if re.match(r"(inline\s+)?namespace\b", rest):
            return "namespace"
        m = re.match(r"(class|struct|union|enum)\b", rest)
        if m and not any(c == "(" and d == 0 for _, c, d in top_level(rest)):
            return m.group(1)
        if declarator_parens(head):
            return "function"
        return "initializer"

    def make_decl(self, head: str, has_body: bool, scope: str = "") -> Decl:
        template, rest = split_template(head)
        requires, rest = split_requires(rest)
        rest = rest.strip()
        lines = [x for x in (template, requires) if x]
        if scope:
            m = re.match(
                r"(enum(?:\s+(?:class|struct))?|class|struct|union)\b\s*"  # class-key
                r"(?:\[\[.*?\]\]\s*)?"  # attributes
                r"([\w:]*(?:<.*?>)?)",  # name, maybe a specialization's; empty: anonymous
                rest,
                re.S,
            )
            if not m:
                raise self.error(f"cannot read the name of {normalize(rest)!r}")
            kind = "enum" if scope == "enum" else scope
            return Decl(kind, m.group(2), "\n".join(lines + [normalize(rest)]), [], 0)
        text = normalize(rest)
        m = re.match(r"using\s+(\w+)\s*=", text)
        if m:
            return Decl("alias", m.group(1), "\n".join(lines + [text + ";"]), [], 0)
        if re.match(r"(using|static_assert|typedef)\b|friend\s+(class|struct|union)\b", text):
            return Decl("other", "", "\n".join(lines + [text + ";"]), [], 0)
        m = re.match(r"(enum(?:\s+(?:class|struct))?|class|struct|union)\s+(\w+)\s*(:.*)?$", text)
        if m:  # a forward declaration (or an opaque enum)
            return Decl("forward", m.group(2), "\n".join(lines + [text + ";"]), [], 0)
        parens = declarator_parens(rest)
        if parens:
            name = function_name(rest, parens[0])
            if has_body:
                rest = cut_mem_initializers(rest, parens[1])
            # `inline` says how it is compiled, not how it is called.
            rest = re.sub(r"^inline\s+", "", rest)
            return Decl("function", name, "\n".join(lines + [normalize(rest) + ";"]), [], 0)
        if has_body:
            raise self.error(f"a body after something that is not a function: {text!r}")
        cut = len(text)
        for i, c, depth in top_level(text):
            bit_field = c == ":" and text[i - 1 : i + 1] != "::" and text[i : i + 2] != "::"
            if depth == 0 and (c in "={[" or bit_field):
                cut = i
                break
        m = re.search(r"(\w+)\s*$", text[:cut])
        if not m:
            raise self.error(f"cannot read the name of {text!r}")
        return Decl("field", m.group(1), "\n".join(lines + [text + ";"]), [], 0)


def read_header(path: Path, shown_as: Path | None = None) -> Header:
    text = path.read_text(encoding="utf-8")
    path = shown_as or path
    scanner = Scanner(text, path)
    decls = scanner.parse_file()
    doc_lines = {n for n, line in enumerate(text.splitlines(), 1) if re.match(r"\s*///(?!/)", line)}
    lost = sorted(doc_lines - scanner.attached)
    if lost:
        raise ParseError(f"{path}:{lost[0]}: /// comment not attached to any declaration")
    mark_internal(decls, in_detail=False)
    check_overloads(decls, path)
    includes = re.findall(r"^\s*#\s*include\s*<(redlock/[^>]+)>", text, re.M)
    return Header(path, path.name, scanner.file_doc, decls, includes)


def mark_internal(decls: list[Decl], in_detail: bool) -> None:
    """Namespace detail, and undocumented declarations that name its types, are internal."""
    for d in decls:
        detail_ns = d.kind == "namespace" and "detail" in d.name.split("::")
        names_it = not d.doc and d.kind != "namespace" and names_detail(d.signature)
        d.internal = in_detail or detail_ns or names_it
        mark_internal(d.children, d.internal)


def check_overloads(decls: list[Decl], path: Path) -> None:
    """`/// \\overload` must follow a declaration of the same name in the same scope."""
    seen: set[str] = set()
    for d in decls:
        if d.is_overload and d.name not in seen:
            raise ParseError(f"{path}:{d.line}: \\overload of {d.name} without an earlier one in its scope")
        seen.add(d.name)
        check_overloads(d.children, path)


def public_headers(root: Path) -> list[Path]:
    found = {p.name: p for p in (root / HEADER_DIR).glob("*.hpp")}
    ordered = [found.pop(name) for name in HEADER_ORDER if name in found]
    return ordered + [found[name] for name in sorted(found)]


def read_headers(root: Path) -> list[Header]:
    return [read_header(p, p.relative_to(root)) for p in public_headers(root)]


# ---------------------------------------------------------------------------------------
# Names (for scripts/check_docs.py)


def visible(d: Decl) -> bool:
    return not d.internal and d.access == "public" and d.kind not in ("other", "access")


@dataclass(frozen=True)
class PublicName:
    header: str  # e.g. "guard.hpp"
    kind: str  # as Decl.kind

    @property
    def is_type(self) -> bool:
        return self.kind in CLASS_KEYS or self.kind == "enum"


def public_names(headers: list[Header]) -> dict[str, PublicName]:
    """Every public qualified name the headers declare, e.g. "redlock::guard::until", with
    where it is declared. Constructors appear as "redlock::X::X", operators as
    "redlock::X::operator"."""
    names: dict[str, PublicName] = {}

    def walk(decls: list[Decl], prefix: str, header: str) -> None:
        for d in decls:
            if not visible(d):
                continue
            if d.kind == "namespace":
                walk(d.children, f"{prefix}{d.name}::", header)
                continue
            name = re.sub(r"<.*", "", d.name).lstrip("~")
            if name.startswith("operator"):
                name = "operator"  # how a doc writes it in a code span: X::operator()
            qualified = f"{prefix}{name}"
            names.setdefault(qualified, PublicName(header, d.kind))
            if d.kind in CLASS_KEYS:
                names.setdefault(f"{qualified}::{name}", PublicName(header, "function"))  # constructors
            walk(d.children, f"{qualified}::", header)

    for h in headers:
        walk(h.decls, "", h.name)
    return names


# ---------------------------------------------------------------------------------------
# Markdown


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading, from its rendered text (before de-duplication):
    lower case, punctuation other than '-' and '_' dropped, spaces turned into '-'."""
    text = text.strip().lower()
    kept = []
    for c in text:
        cat = unicodedata.category(c)
        if c in " -_" or cat[0] in "LNM" or cat == "Pc":
            kept.append("-" if c == " " else c)
    return "".join(kept)


def doc_markdown(lines: list[str]) -> str:
    """A /// block as Markdown: the comments are Markdown already; a few Doxygen commands
    are spelled out."""
    out = []
    for line in lines:
        line = re.sub(r"^\\brief\s*", "", line)
        line = re.sub(r"^\\(note|see|warning)\b\s*", lambda m: m.group(1).capitalize() + ": ", line)
        line = re.sub(r"^\\t?param\s+(\w+)\s*", r"- `\1`: ", line)
        line = re.sub(r"^\\returns?\b\s*", "Returns ", line)
        line = re.sub(r"^\\overload\b\s*", "Overload ", line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    text = "\n".join(out).strip("\n")
    # A bare `\overload` adds no text: its signature joins the one before (entries_of).
    return "" if text == "Overload" else text


WIDTH = 100  # the headers' .clang-format column limit


def wrap(line: str) -> list[str]:
    """A declaration longer than WIDTH with its parameters filled onto more lines, aligned
    after the opening parenthesis as clang-format does; other lines as they are."""
    if len(line) <= WIDTH:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    text = line.lstrip()
    try:
        parens = declarator_parens(text.rstrip(";"))
    except ParseError:
        parens = None
    if not parens:
        return [line]
    open_, close = parens
    params, start = [], open_ + 1
    for i, c, depth in top_level(text[open_ + 1 : close]):
        if c == "," and depth == 0:
            params.append(text[start : open_ + 1 + i].strip())
            start = open_ + 2 + i
    params.append(text[start:close].strip())
    column = len(indent) + open_ + 1
    if column > WIDTH // 2:
        column = len(indent) + 8
    pieces = [p + ("," if k < len(params) - 1 else text[close:]) for k, p in enumerate(params)]
    out = [indent + text[: open_ + 1] + pieces[0]]
    for piece in pieces[1:]:
        if len(out[-1]) + 1 + len(piece) <= WIDTH:
            out[-1] += " " + piece
        else:
            out.append(" " * column + piece)
    return out


def code_block(lines: list[str]) -> list[str]:
    return ["```cpp", *(part for line in lines for part in wrap(line)), "```"]


def synopsis(d: Decl) -> list[str]:
    """A class as its public declarations, or an enum with its values."""
    if d.kind == "enum":
        values = [v.signature for v in d.children]
        one_line = f"{d.signature} {{ {', '.join(values)} }};"
        if len(one_line) <= 96:
            return one_line.split("\n")
        return d.signature.split("\n") + ["{"] + [f"    {v}," for v in values] + ["};"]
    lines = d.signature.split("\n") + ["{"]
    if d.kind == "class":
        lines.append("  public:")
    first = True
    for m in d.children:
        if not visible(m):
            continue
        if m.blank_before and not first:
            lines.append("")
        first = False
        sig = rewrite_detail(m.signature)
        if m.kind in CLASS_KEYS or m.kind == "enum":
            sig = sig + ";"
        lines.extend("    " + s for s in sig.split("\n"))
    return lines + ["};"]


@dataclass
class Entry:
    """One heading's worth: declarations of one name, each with its comment."""

    heading: str
    level: int
    parts: list[tuple[list[str], str]]  # (code lines, markdown) per declaration group


def entries_of(decls: list[Decl], qualifier: str, level: int, for_class: bool) -> list[Entry]:
    """Headings for the visible declarations of one scope, in source order. Consecutive
    declarations of one name share a heading; a textless `\\overload` joins the code block
    before it. Undocumented class members appear in the class synopsis only."""
    out: list[Entry] = []
    for d in decls:
        if not visible(d):
            continue
        if d.kind == "namespace":
            out.extend(entries_of(d.children, f"{qualifier}{d.name}::", level, False))
            continue
        if not d.doc:
            # Undocumented: a class member shows in its class's synopsis only; at namespace
            # scope only redlock's own declarations are listed (not, say, a boost trait).
            if for_class and d.kind not in CLASS_KEYS and d.kind != "enum":
                continue
            if not for_class and not qualifier.startswith("redlock::"):
                continue
        heading = f"{qualifier}{d.name}"
        text = doc_markdown(d.doc)
        if d.kind in CLASS_KEYS or (d.kind == "enum" and d.children):
            code = synopsis(d)
        else:
            code = rewrite_detail(d.signature).split("\n")
        if d.is_overload and out and out[-1].heading == heading and not text:
            out[-1].parts[-1][0].extend(code)
            continue
        if out and out[-1].heading == heading:
            out[-1].parts.append((code, text))
        else:
            out.append(Entry(heading, level, [(code, text)]))
        if d.kind == "enum":
            items = []
            for v in d.children:
                vtext = doc_markdown(v.doc)
                item = f"- `{v.signature}`" + (f": {vtext}" if vtext else "")
                items.append(item.replace("\n", "\n  ").replace("\n  \n", "\n\n"))
            if any(v.doc for v in d.children):
                code, text = out[-1].parts[-1]
                out[-1].parts[-1] = (code, (text + "\n\n" if text else "") + "Values:\n\n" + "\n".join(items))
        if d.kind in CLASS_KEYS:
            member_prefix = re.sub(r"<.*", "", d.name) + "::"
            out.extend(entries_of(d.children, member_prefix, min(level + 1, 6), True))
    return out


def render(headers: list[Header]) -> str:
    body: list[str] = []
    headings: list[str] = ["API reference"]
    for h in headers:
        title = f"`<redlock/{h.name}>`"
        headings.append(title.strip("`"))
        body += [f"## {title}", ""]
        if h.file_doc:
            body += [doc_markdown(h.file_doc), ""]
        entries = entries_of(h.decls, "", 3, False)
        if not entries:
            own = [inc for inc in h.includes if inc.count("/") == 1]
            if own:
                body += ["Includes " + ", ".join(f"`<{inc}>`" for inc in own) + ".", ""]
        for e in entries:
            headings.append(e.heading)
            body += [f"{'#' * e.level} `{e.heading}`", ""]
            for code, text in e.parts:
                body += code_block(code) + [""]
                if text:
                    body += [text, ""]

    # Anchors, de-duplicated the way GitHub does (-1, -2, ... in document order).
    seen: dict[str, int] = {}
    anchors = []
    for heading in headings:
        slug = github_slug(heading)
        n = seen.get(slug, 0)
        anchors.append(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    header_anchor = {}
    for heading, anchor in zip(headings, anchors):
        if heading.startswith("<redlock/"):
            header_anchor[heading] = anchor

    top = [
        "<!-- Generated by `python3 scripts/api_reference.py` from the /// comments in",
        "     include/redlock/*.hpp. Do not edit: change the headers and regenerate. -->",
        "",
        "# API reference",
        "",
        "Generated from the `///` comments of the public headers in `include/redlock/` by",
        f"`{REGENERATE}`; do not edit it by hand. `python3 scripts/check_docs.py` (the",
        "`docs_check` test) fails when it is out of date. Everything is in namespace `redlock`;",
        "namespace `redlock::detail` is internal and not listed. Each class starts with its public",
        "declarations; its documented members follow.",
        "",
        "Headers:",
        "",
    ]
    toc = []
    for h in headers:
        key = f"<redlock/{h.name}>"
        summary = " ".join(doc_markdown(h.file_doc).split())
        toc.append(f"- [`{key}`](#{header_anchor[key]})" + (f": {summary}" if summary else ""))
    return "\n".join(top + toc + [""] + body).rstrip("\n") + "\n"


def generate(root: Path) -> str:
    return render(read_headers(root))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 with a diff if the file is out of date")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="repository root")
    parser.add_argument(
        "--undocumented", action="store_true", help="list public declarations without a /// comment"
    )
    args = parser.parse_args(argv)
    if args.undocumented:
        return list_undocumented(args.root)
    return check(args.root) if args.check else write(args.root)


def list_undocumented(root: Path) -> int:
    """Prints file:line and the declaration of each public one without a comment (they
    appear in the reference in their class's synopsis only, or with no text)."""

    def walk(decls: list[Decl], path: Path) -> None:
        for d in decls:
            if not visible(d) or (d.kind == "namespace" and not d.name.startswith("redlock")):
                continue
            if not d.doc and d.kind != "namespace":
                print(f"{path}:{d.line}: {d.signature.splitlines()[-1]}")
            walk(d.children, path)

    try:
        for h in read_headers(root):
            walk(h.decls, h.path)
    except ParseError as e:
        print(f"api_reference.py: {e}", file=sys.stderr)
        return 2
    return 0


def write(root: Path) -> int:
    try:
        text = generate(root)
    except ParseError as e:
        print(f"api_reference.py: {e}", file=sys.stderr)
        return 2
    out = root / OUTPUT
    if not out.exists() or out.read_text(encoding="utf-8") != text:
        out.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {OUTPUT}")
    else:
        print(f"{OUTPUT} is up to date")
    return 0


def check(root: Path, out=sys.stdout) -> int:
    """0 when docs/api-reference.md matches the headers; 1 (with a diff) when it does not."""
    try:
        text = generate(root)
    except ParseError as e:
        print(f"api_reference.py: {e}", file=out)
        return 1
    path = root / OUTPUT
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if current == text:
        return 0
    diff = difflib.unified_diff(
        current.splitlines(keepends=True), text.splitlines(keepends=True), f"a/{OUTPUT}", f"b/{OUTPUT}"
    )
    out.write("".join(diff))
    print(f"{OUTPUT} is out of date with include/redlock/*.hpp; regenerate it with: {REGENERATE}", file=out)
    return 1


if __name__ == "__main__":
    sys.exit(main())
