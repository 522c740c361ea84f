"""Tree-builder-feedback token oracle built on html5lib 1.1.

A browser's tokenizer does not run on its own: the tree builder switches it into
script data (``<script>``), RCDATA (``<title>``, ``<textarea>``), RAWTEXT
(``<style>``, ``<xmp>``, ``<iframe>``, ``<noembed>``, ``<noframes>``, and
``<noscript>`` when scripting is enabled) or PLAINTEXT (``<plaintext>``), and
allows CDATA sections only while the adjusted current node is in a foreign (SVG
or MathML) namespace.  This module records the tokens that html5lib's tokenizer
emits while html5lib's complete tree builder drives it, which is what our
tokenizer's own feedback has to reproduce.

Public API
----------
* :class:`TreeTest`, :func:`read_tree_construction_tests`,
  :func:`all_tree_construction_tests`: read html5lib ``.dat`` tree-construction
  tests and lol-html's regression ``.dat`` files.
* :func:`expected_tokens`: the oracle, in html5lib tokenizer-test JSON form.
* :func:`normalise_nul`: the normalisation needed before comparing (see NUL).
* :func:`html5lib_tree_agrees`: whether html5lib's *tree* for a test matches the
  test's expected ``#document``; where it does not, html5lib's tree builder is
  outdated or buggy for that input and the oracle's state switching is suspect.

Token format
------------
``["StartTag", name, {attrs}]`` (``True`` appended when self-closing),
``["EndTag", name]``, ``["Comment", text]``, ``["Character", text]`` and
``["DOCTYPE", name, public_id, system_id, correct]`` (``correct`` is
``not force-quirks``).  Adjacent character tokens (html5lib's ``Characters`` and
``SpaceCharacters``) are merged, also across the parse errors that html5lib
interleaves (parse errors are not recorded).  There is no EOF token.  Tokens are
copied when the tokenizer yields them, before the tree builder sees them: tag
and attribute names are the tokenizer's ASCII-lower-cased names (the tree
builder's SVG/MathML renaming such as ``foreignobject`` -> ``foreignObject`` or
``xlink:href`` -> ``xlink href`` is *not* applied), duplicate attributes are
already dropped (first one wins) and the tree builder's later in-place edits of
the token dicts cannot leak into the recording.  Tokens that the tree builder
synthesises (implied ``</p>`` and the like) are never recorded, and the tree
builder's dropping of a leading newline in ``<pre>``/``<listing>``/``<textarea>``
does not show: the newline is still in the recorded character data.  html5lib
reports a DOCTYPE without a name as name ``""``; it is recorded as ``None``, as
in the tokenizer tests (a present name is never empty).

html5lib 1.1 behaviour found (and what it means for comparisons)
----------------------------------------------------------------
Scripting flag
    ``HTMLParser.parse(data, scripting=...)`` exists; its default is
    ``scripting=False`` (noscript content parsed as markup, and ``<noscript>``
    in ``<head>`` uses the "in head noscript" mode).  With ``scripting=True``
    ``<noscript>`` switches the tokenizer to RAWTEXT, both in head and in body.
    Both modes are implemented by html5lib, so :func:`expected_tokens` supports
    both and defaults to ``scripting=True`` (a browser's default); pass
    ``scripting=False`` for ``#script-off`` tests.  A test with neither flag is
    meant to hold in both modes.

NUL (U+0000)
    html5lib follows the spec in the data state: a NUL is emitted as a
    U+0000 character (the tree builder later drops it in body, or turns it
    into U+FFFD in foreign content; neither affects the recording).  In
    RCDATA, RAWTEXT, script data (all its sub-states), PLAINTEXT, tag names,
    attribute names and values, comments, bogus comments and DOCTYPEs it is
    replaced by U+FFFD in the tokenizer, as the spec says.  The one deviation:
    inside a CDATA section html5lib emits U+FFFD where the spec emits U+0000
    (and leaves the replacement to the tree builder).  Use
    :func:`normalise_nul` on both token streams (it maps U+0000 to U+FFFD in
    character data only) when the input can contain NUL in foreign content.

Newlines
    The input stream normalises newlines before tokenizing: CR LF -> LF and a
    lone CR -> LF (also across html5lib's internal chunk boundaries).  So a
    recorded token contains U+000D only from a character reference such as
    ``&#13;`` (kept, as in the spec).  Normalise the input the same way before
    feeding our tokenizer (not our output, which would break ``&#13;``).  The
    ``domjs-unsafe.dat`` and ``plain-text-unsafe.dat`` tests contain raw CRs.

Other input preprocessing
    Control characters, non-characters and lone surrogates are passed through
    unchanged (html5lib only logs a parse error for them).  A leading U+FEFF in
    a ``str`` input is not stripped.  ``str`` input never triggers html5lib's
    encoding re-parse (``<meta charset>`` only matters for byte input).

PLAINTEXT
    ``<plaintext>`` (wherever the tree builder inserts it as an HTML element)
    switches to the PLAINTEXT state; the rest of the input, ``</plaintext>``
    included, is character data.  Inside foreign content it is an ordinary tag.

CDATA
    ``<![CDATA[`` opens a CDATA section only when the current node (html5lib
    looks at ``openElements[-1]``, not at the fragment's adjusted current node)
    is not in the HTML namespace; its content is emitted as character data with
    ``]]>`` stripped.  In HTML content ``<![CDATA[x]]>`` becomes the bogus
    comment ``"[CDATA[x]]"``.  An unterminated section runs to EOF.

Tokenizer proper
    Run stand-alone over html5lib-tests' ``tokenizer/*.test`` (7032 runs over
    initial states), html5lib 1.1's tokenizer with this module's recording
    passes everything except "NUL in CDATA section" (see NUL above).  So
    within one tokenizer state the oracle can be trusted; the risk lies in the
    tree builder's state switching, below.

Outdated tree builder
    html5lib 1.1 (2020) implements the tree builder of its day, and the
    html5lib-tests tree-construction files in our test data expect a newer
    one: html5lib's tree differs from ``#document`` in 171 of the 1600
    document tests that have one (:func:`html5lib_tree_agrees`).  Where the
    tree differs, the state switching may differ too.  What matters for
    tokens:

    * No ``<template>`` support: ``<template>`` is an ordinary element (in
      ``<head>`` it implies ``<body>``; in ``<select>`` or table contexts it is
      ignored or foster-parented), so everything depending on "in template"
      insertion modes follows other rules (99 of template.dat's 111 document
      tests disagree).
    * Pre-2025 ``<select>`` parsing ("in select" mode): only ``<script>`` and
      ``<template>`` are processed with "in head" rules; ``<style>``,
      ``<noembed>``, ``<plaintext>``, ``<svg>``, ``<math>``, ``<div>``, ``<hr>``,
      ``<button>`` etc. are ignored, so e.g. ``<select><div><style><b>`` gives a
      ``<b>`` start tag (no RAWTEXT), ``<select><plaintext>x</plaintext>`` an
      end tag (no PLAINTEXT) and ``<select><svg><![CDATA[x]]>`` a bogus comment
      (no CDATA); ``<input>``, ``<keygen>`` and ``<textarea>`` close the select.
      Current browsers (customizable ``<select>``) differ in these cases; lol-html's
      ``text_parsing_ambiguity.dat`` probes exactly them.
    * ``</p>`` and ``</br>`` in foreign content do not break out of it (tests26),
      so a following ``<![CDATA[`` is still CDATA for html5lib.
    * Tree-only differences without token impact: ``<isindex>`` is still
      expanded, old ``<ruby>``/``<rb>``/``<rtc>`` rules, ``<search>``,
      ``<dialog>``, ``<menuitem>``, ``<command>``, SVG attribute case fixes.

Scope
    Only document parsing is supported; html5lib's fragment parsing cannot
    take an SVG/MathML context element, so fragment tests are skipped.

Test-file formats
-----------------
html5lib ``.dat`` files: ``#data`` (the lines up to ``#errors``, joined with LF),
``#errors``, optional ``#new-errors``, optional ``#document-fragment`` (one line),
optional ``#script-off``/``#script-on``, then ``#document`` up to the blank line
before the next ``#data``.  lol-html's ``regression/*.dat`` files only have
``#data`` sections, each normally closed by a line holding a single ``#``; a
section may also end at the blank line before the next ``#data`` (the first test
of ``foreign_content.dat``).  Trailing blank separator lines are not part of the
data (lol-html's own harness keeps one as a trailing ``"\\n"`` in that case).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import html5lib
from html5lib import _tokenizer
from html5lib.constants import _ReparseException, tokenTypes

__all__ = [
    "Token",
    "TreeTest",
    "all_tree_construction_tests",
    "expected_tokens",
    "html5lib_tree_agrees",
    "html5lib_tree_dump",
    "normalise_nul",
    "read_tree_construction_tests",
]

#: One token in html5lib tokenizer-test JSON form, e.g. ``["Character", "x"]``.
Token = list[Any]

_HEADERS = frozenset(
    {
        "#data",
        "#errors",
        "#new-errors",
        "#document-fragment",
        "#script-off",
        "#script-on",
        "#document",
        "#",
    }
)

_START_TAG = tokenTypes["StartTag"]
_END_TAG = tokenTypes["EndTag"]
_COMMENT = tokenTypes["Comment"]
_CHARACTERS = tokenTypes["Characters"]
_SPACE_CHARACTERS = tokenTypes["SpaceCharacters"]
_DOCTYPE = tokenTypes["Doctype"]
_PARSE_ERROR = tokenTypes["ParseError"]


@dataclass(frozen=True)
class TreeTest:
    """One test case of a tree-construction ``.dat`` file.

    ``scripting`` is ``True`` for ``#script-on``, ``False`` for ``#script-off``
    and ``None`` when the test should hold in both modes.  ``line`` is the
    1-based line of the test's ``#data`` header.  ``document`` is the expected
    tree dump (``None`` in files without ``#document``, i.e. lol-html's).
    """

    file: str
    index: int
    data: str
    fragment_context: str | None
    scripting: bool | None
    line: int
    document: str | None = None

    @property
    def id(self) -> str:
        """A short, stable identifier such as ``tests1.dat:12``."""
        return f"{self.file}:{self.index}"

    @property
    def is_fragment(self) -> bool:
        """Whether the test uses the fragment parsing algorithm."""
        return self.fragment_context is not None

    def scripting_modes(self) -> tuple[bool, ...]:
        """The scripting modes the test applies to (both when unflagged)."""
        if self.scripting is None:
            return (True, False)
        return (self.scripting,)


def _strip_trailing_blank(lines: list[str]) -> list[str]:
    end = len(lines)
    while end and lines[end - 1] == "":
        end -= 1
    return lines[:end]


def read_tree_construction_tests(path: str | Path) -> list[TreeTest]:
    """Parse a tree-construction ``.dat`` file (html5lib or lol-html flavour).

    The file is decoded as UTF-8 without newline translation, so CR characters
    inside ``#data`` are preserved.
    """
    path = Path(path)
    lines = path.read_bytes().decode("utf-8").split("\n")
    tests: list[TreeTest] = []
    # Per-test accumulators.
    sections: dict[str, list[str]] = {}
    current: str | None = None
    start_line = 0

    def finish(explicit_end: bool = False) -> None:
        if "#data" not in sections:
            return
        data_lines = sections["#data"]
        if current == "#data" and not explicit_end:
            # lol-html style test ended by the next "#data" or EOF rather than
            # by "#": the trailing blank line is the test separator.
            data_lines = _strip_trailing_blank(data_lines)
        fragment = sections.get("#document-fragment")
        scripting: bool | None = None
        if "#script-on" in sections:
            scripting = True
        elif "#script-off" in sections:
            scripting = False
        document = sections.get("#document")
        tests.append(
            TreeTest(
                file=path.name,
                index=len(tests),
                data="\n".join(data_lines),
                fragment_context=fragment[0] if fragment else None,
                scripting=scripting,
                line=start_line,
                document=(
                    "\n".join(_strip_trailing_blank(document)) if document is not None else None
                ),
            )
        )

    for number, line in enumerate(lines, start=1):
        if line == "#data":
            # "#data" always starts a new test (it never occurs as data).
            finish()
            sections = {"#data": []}
            current = "#data"
            start_line = number
        elif line == "#" and current is not None:
            # lol-html's end-of-test marker.
            finish(explicit_end=True)
            sections = {}
            current = None
        elif line in _HEADERS and current is not None and current != "#document":
            current = line
            sections.setdefault(current, [])
        elif current is not None:
            sections[current].append(line)
    finish()
    return tests


def all_tree_construction_tests(
    root: str | Path,
    *,
    extra_dirs: Iterable[str | Path] | None = None,
) -> list[TreeTest]:
    """Read every ``*.dat`` directly in ``root`` plus lol-html's regressions.

    ``root`` is html5lib-tests' ``tree-construction`` folder; its sub-folders
    (``scripted/``) are not read.  ``extra_dirs`` defaults to lol-html's
    ``regression`` folder, looked up as ``../../lol-html/regression`` relative
    to ``root`` (i.e. next to ``html5lib-tests`` in ``tests/data``); pass
    an empty list to skip it.  Files are read in sorted order per folder.
    """
    root = Path(root)
    if extra_dirs is None:
        default = root.parent.parent / "lol-html" / "regression"
        extra_dirs = [default] if default.is_dir() else []
    tests: list[TreeTest] = []
    for folder in [root, *map(Path, extra_dirs)]:
        for dat in sorted(folder.glob("*.dat")):
            tests.extend(read_tree_construction_tests(dat))
    return tests


class _RecordingTokenizer(_tokenizer.HTMLTokenizer):
    """html5lib's tokenizer, recording a copy of every token it yields."""

    def __init__(self, stream: Any, parser: Any = None, **kwargs: Any) -> None:
        super().__init__(stream, parser=parser, **kwargs)
        self.recorded: list[Token] = []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        # Restarted from scratch on html5lib's encoding re-parse.
        self.recorded = []
        for token in super().__iter__():
            self._record(token)
            yield token

    def _record(self, token: dict[str, Any]) -> None:
        kind = token["type"]
        out = self.recorded
        if kind in (_CHARACTERS, _SPACE_CHARACTERS):
            if out and out[-1][0] == "Character":
                out[-1][1] += token["data"]
            else:
                out.append(["Character", token["data"]])
        elif kind == _START_TAG:
            entry: Token = ["StartTag", token["name"], dict(token["data"])]
            if token.get("selfClosing"):
                entry.append(True)
            out.append(entry)
        elif kind == _END_TAG:
            out.append(["EndTag", token["name"]])
        elif kind == _COMMENT:
            out.append(["Comment", token["data"]])
        elif kind == _DOCTYPE:
            out.append(
                [
                    "DOCTYPE",
                    token["name"] or None,
                    token["publicId"],
                    token["systemId"],
                    bool(token["correct"]),
                ]
            )
        elif kind != _PARSE_ERROR:  # pragma: no cover - html5lib has no others
            raise AssertionError(f"unknown html5lib token type {kind!r}")


class _RecordingParser(html5lib.HTMLParser):
    """``HTMLParser`` whose tokenizer records the tokens it yields."""

    tokenizer: _RecordingTokenizer

    def _parse(
        self,
        stream: Any,
        innerHTML: bool = False,
        container: str = "div",
        scripting: bool = False,
        **kwargs: Any,
    ) -> None:
        # Same as html5lib 1.1's HTMLParser._parse, with the recording tokenizer.
        self.innerHTMLMode = innerHTML
        self.container = container
        self.scripting = scripting
        self.tokenizer = _RecordingTokenizer(stream, parser=self, **kwargs)
        self.reset()
        try:
            self.mainLoop()
        except _ReparseException:
            self.reset()
            self.mainLoop()


def _new_parser() -> _RecordingParser:
    return _RecordingParser(
        tree=html5lib.getTreeBuilder("etree", fullTree=True), namespaceHTMLElements=False
    )


def expected_tokens(data: str, *, scripting: bool = True) -> list[Token]:
    """Tokens html5lib's tokenizer emits while its tree builder parses ``data``.

    ``data`` is parsed as a whole document (not a fragment) with the given
    scripting flag.  See the module docstring for the format and for html5lib's
    quirks (NUL in CDATA, newline normalisation).
    """
    parser = _new_parser()
    parser.parse(data, scripting=scripting)
    return parser.tokenizer.recorded


def normalise_nul(tokens: Iterable[Token]) -> list[Token]:
    """Copy of ``tokens`` with U+0000 in character data replaced by U+FFFD.

    Apply it to both sides of a comparison: html5lib emits U+FFFD for a NUL in
    a CDATA section where the spec's tokenizer emits U+0000.  (NUL elsewhere is
    already U+FFFD in both, except data-state character data, where both keep
    U+0000; this normalisation loses that distinction.)
    """
    result: list[Token] = []
    for token in tokens:
        if token[0] == "Character":
            result.append(["Character", token[1].replace("\x00", "\ufffd")])
        else:
            result.append(list(token))
    return result


def html5lib_tree_dump(data: str, *, scripting: bool = True) -> str:
    """html5lib's tree for ``data`` in the tree-construction ``#document`` form.

    Lines are given without the ``"| "`` prefix.  ``<template>`` contents are
    dumped as the template's children, since html5lib's etree builder has no
    separate content fragment.
    """
    parser = _new_parser()
    document = parser.parse(data, scripting=scripting)
    dump: str = parser.tree.testSerializer(document)
    lines = dump.split("\n")[1:]  # drop "#document"
    return "\n".join(line[3:] if line.startswith("|") else line for line in lines)


_CONTENT_LINE = re.compile(r"^\| ( *)content$")
_NODE_LINE = re.compile(r"^\| ( *)")


def _normalise_expected_document(document: str) -> str:
    """Strip ``"| "`` and fold template ``content`` into the template's children."""
    out: list[str] = []
    # Stack of indents of open "content" lines; deeper nodes are dedented.
    contents: list[int] = []
    for line in document.split("\n"):
        node = _NODE_LINE.match(line)
        if node is None:  # continuation of a multi-line text node
            out.append(line)
            continue
        indent = len(node.group(1))
        while contents and indent <= contents[-1]:
            contents.pop()
        if _CONTENT_LINE.match(line):
            contents.append(indent)
            continue
        out.append(" " * (indent - 2 * len(contents)) + line[2 + indent :])
    return "\n".join(out)


def html5lib_tree_agrees(test: TreeTest, *, scripting: bool | None = None) -> bool | None:
    """Whether html5lib's tree for ``test`` equals the test's ``#document``.

    Returns ``None`` when that cannot be checked (fragment test, or no expected
    document).  ``scripting`` defaults to the test's flag, or ``True`` when the
    test has none.  A ``False`` result means html5lib's tree builder disagrees
    with the current expectations for this input, so its tokenizer feedback
    (and thus :func:`expected_tokens`) may disagree with the spec too.
    """
    if test.is_fragment or test.document is None:
        return None
    if scripting is None:
        scripting = True if test.scripting is None else test.scripting
    expected = _normalise_expected_document(test.document)
    return html5lib_tree_dump(test.data, scripting=scripting) == expected


def _self_check(root: Path, *, verbose: bool = False) -> int:
    """Run the oracle over every document test and print counts.

    Returns a process exit status: 1 when the oracle raised for some input.
    """
    started = time.perf_counter()
    tests = all_tree_construction_tests(root)
    files = {t.file for t in tests}
    fragments = [t for t in tests if t.is_fragment]
    documents = [t for t in tests if not t.is_fragment]
    runs = 0
    token_count = 0
    failures: list[tuple[str, bool, str]] = []
    disagreeing: dict[str, list[str]] = {}
    for test in documents:
        disagrees = False
        for scripting in test.scripting_modes():
            runs += 1
            try:
                token_count += len(expected_tokens(test.data, scripting=scripting))
                disagrees |= html5lib_tree_agrees(test, scripting=scripting) is False
            except Exception as exc:  # the oracle itself failed
                failures.append((test.id, scripting, f"{type(exc).__name__}: {exc}"))
        if disagrees:
            disagreeing.setdefault(test.file, []).append(test.id)
    elapsed = time.perf_counter() - started
    checked = sum(1 for t in documents if t.document is not None)
    print(f"files: {len(files)}")
    print(f"tests: {len(tests)}")
    print(f"fragment tests skipped: {len(fragments)}")
    print(f"document tests: {len(documents)} ({runs} oracle runs over scripting modes)")
    print(f"tokens recorded: {token_count}")
    print(f"oracle failures/exceptions: {len(failures)}")
    for test_id, scripting, message in failures:
        print(f"  FAIL {test_id} scripting={scripting}: {message}")
    suspect = sum(len(ids) for ids in disagreeing.values())
    print(f"document tests where html5lib's tree != #document: {suspect} of {checked}")
    for file, ids in sorted(disagreeing.items(), key=lambda item: (-len(item[1]), item[0])):
        print(f"  {file}: {len(ids)}" + (f" ({', '.join(ids)})" if verbose else ""))
    print(f"elapsed: {elapsed:.1f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    _args = [a for a in sys.argv[1:] if a not in ("-v", "--verbose")]
    _default_root = (
        Path(os.environ.get("HTMLSTREAM_TESTDATA") or Path(__file__).resolve().parents[1] / "data")
        / "html5lib-tests"
        / "tree-construction"
    )
    sys.exit(
        _self_check(
            Path(_args[0]) if _args else _default_root,
            verbose=len(_args) != len(sys.argv) - 1,
        )
    )
