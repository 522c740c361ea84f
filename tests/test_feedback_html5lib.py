"""Tree-builder feedback against a complete HTML parser: html5lib-tests tree construction.

``htmlstream.tokenize(data, feedback=True)`` must produce the token stream a browser's tokenizer
produces while its tree builder drives it.  The oracle is html5lib 1.1 (pure Python, with a
complete tree builder): ``tests/oracles/html5lib_feedback.py`` records the tokens its tokenizer
emits while its tree builder parses the same input.

Inputs: every ``#data`` of ``html5lib-tests/tree-construction/*.dat`` (1,600 document tests) and
of lol-html's ``regression/*.dat`` (34 inputs), i.e. 1,634 document tests; the 192 fragment tests
(``#document-fragment``) are skipped, as html5lib cannot parse fragments in an SVG/MathML context
and the simulator only parses documents.  Each test runs in each scripting mode it applies to
(``#script-on``/``#script-off``, else both): 3,233 runs.

How the tests are run:

* The input's CR and CRLF are turned into LF first (the oracle's input stream does that; our
  tokenizer normalises newlines in what it decodes, which would also turn ``&#13;`` into LF).
* Our tokens are converted to the html5lib format (``chunking.normalize_tokens``) and both
  sides go through ``normalise_nul`` (html5lib emits U+FFFD for NUL in CDATA sections).
  Nothing else is normalised: parse errors are not compared (neither side reports them), but
  every token, attribute and character must be equal.
* Every input is also fed in chunks: byte by byte and in two random chunkings
  (``chunking.chunkings``); every chunking must give the same tokens, and the raw bytes of the
  tokens must rebuild the input.

Known oracle differences (``ORACLE_DIFFERENCES``): html5lib 1.1's tree builder is older than the
tests (its tree differs from ``#document`` in 171 of the 1,600 document tests).  Only five inputs
get different *tokens* from it, all for one reason: **pre-2025 ``<select>`` parsing** (the "in
select" insertion mode ignored ``<plaintext>``, ``<noembed>``, ``<style>``, ``<div>``,
``<template>`` contents... inside ``<select>``; the current standard parses them as anywhere
else).  For those the expected tokens are written out from the current standard (and agree with
the test's ``#document`` where it has one), and the test also checks that html5lib still reads
them the old way, so a stale entry is noticed.  No test is marked xfail.

A second test follows the open-element stack: after every tag, our simulator's stack of open
elements (names and namespaces) must equal html5lib's ``openElements``, for every document test
whose html5lib tree equals the expected ``#document`` (where html5lib's tree builder is current).
One known difference (``STACK_DIFFERENCES``): html5lib 1.1 runs the adoption agency algorithm's
inner loop at most three times (the pre-2016 rule), so it leaves elements on the stack that the
current algorithm removes; the tree is the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import html5lib
import pytest
from html5lib import _tokenizer
from html5lib.constants import namespaces, tokenTypes

import htmlstream as hs
from chunking import chunkings, feed_all, normalize_tokens
from datapaths import conformance_data_dir
from oracles.html5lib_feedback import (
    TreeTest,
    all_tree_construction_tests,
    expected_tokens,
    html5lib_tree_agrees,
    normalise_nul,
)

#: A slow differential suite against an outside implementation: `make test-fast` skips it.
pytestmark = pytest.mark.oracle


def _testdata_dir() -> Path:
    """The test data (``HTMLSTREAM_TESTDATA`` or ``tests/data``)."""
    return conformance_data_dir()


TREE_DIR = _testdata_dir() / "html5lib-tests" / "tree-construction"
LOLHTML_DIR = _testdata_dir() / "lol-html" / "regression"

# (The data is part of the repository: a missing folder fails, it does not skip.)
ALL_TESTS = all_tree_construction_tests(TREE_DIR, extra_dirs=[LOLHTML_DIR])
DOCUMENT_TESTS = [t for t in ALL_TESTS if not t.is_fragment]
FRAGMENT_TESTS = [t for t in ALL_TESTS if t.is_fragment]

PRE_2025_SELECT = (
    "html5lib 1.1 parses <select> content with the pre-2025 'in select' insertion mode, which "
    "ignores most tags (so no text state switch); the current standard parses them as "
    "anywhere else"
)

#: test id -> (reason, tokens by the current HTML standard).  Same in both scripting modes.
ORACLE_DIFFERENCES: dict[str, tuple[str, list[list[Any]]]] = {
    # #document: <select><plaintext>"</plaintext>X"
    "tests18.dat:13": (PRE_2025_SELECT, [
        ["DOCTYPE", "html", None, None, True],
        ["StartTag", "select", {}],
        ["StartTag", "plaintext", {}],
        ["Character", "</plaintext>X"],
    ]),
    # #document: <select> (foster-parented) <plaintext>"a<caption>b", then <table>
    "tests18.dat:14": (PRE_2025_SELECT, [
        ["DOCTYPE", "html", None, None, True],
        ["StartTag", "table", {}],
        ["StartTag", "select", {}],
        ["StartTag", "plaintext", {}],
        ["Character", "a<caption>b"],
    ]),
    # lol-html's ambiguity probes: <noembed> in <select> is RAWTEXT to the end.
    "text_parsing_ambiguity.dat:0": (PRE_2025_SELECT, [
        ["StartTag", "select", {}],
        ["StartTag", "noembed", {}],
        ["Character", "</select><script x='a@b'a>y='a@b'//a@b%0a\\u0061lert(1)</script x>"],
    ]),
    # <div> is inserted in <select>, and <style> in it is RAWTEXT.
    "text_parsing_ambiguity.dat:5": (PRE_2025_SELECT, [
        ["StartTag", "select", {}],
        ["StartTag", "div", {}],
        ["StartTag", "style", {}],
        ["Character", "<div></div>"],
        ["EndTag", "style"],
        ["EndTag", "div"],
        ["EndTag", "select"],
    ]),
    # <template> in <select> is a template (html5lib 1.1 also has no template support);
    # <style> in its contents is RAWTEXT.
    "text_parsing_ambiguity.dat:8": (PRE_2025_SELECT + "; html5lib 1.1 has no <template>", [
        ["StartTag", "select", {}],
        ["StartTag", "template", {}],
        ["StartTag", "template", {}],
        ["EndTag", "template"],
        ["StartTag", "style", {}],
        ["Character", "<div></div>"],
        ["EndTag", "style"],
        ["EndTag", "template"],
        ["EndTag", "select"],
    ]),
}

OLD_ADOPTION_AGENCY = (
    "html5lib 1.1 stops the adoption agency's inner loop after three steps (pre-2016 rule) and "
    "leaves cite/i elements on the stack that the current algorithm removes (same tree)"
)

#: test id -> (reason, {tag index: our stack after that tag, by the current standard}).
STACK_DIFFERENCES: dict[str, tuple[str, dict[int, list[tuple[str, str]]]]] = {
    # <cite><b><cite><i><cite><i><cite><i><div>X</b>TEST: after </b> the current algorithm has
    # removed cite, i and cite (inner loop steps 4-6), cloned two i, and popped the new <b>.
    "tests22.dat:4": (OLD_ADOPTION_AGENCY, {
        9: [("html", "html"), ("body", "html"), ("cite", "html"), ("i", "html"), ("i", "html"),
            ("div", "html")],
    }),
}


def prepare(data: str) -> bytes:
    """The input as our tokenizer is fed it: CR/CRLF as LF, UTF-8."""
    return data.replace("\r\n", "\n").replace("\r", "\n").encode("utf-8", "surrogatepass")


def case_params() -> list[Any]:
    params = []
    for test in DOCUMENT_TESTS:
        for scripting in test.scripting_modes():
            ident = f"{test.id}-script_{'on' if scripting else 'off'}"
            params.append(pytest.param(test, scripting, id=ident))
    return params


CASES = case_params()


@pytest.mark.parametrize(("test", "scripting"), CASES)
def test_feedback_tokens(test: TreeTest, scripting: bool) -> None:
    data = prepare(test.data)
    oracle = normalise_nul(expected_tokens(test.data, scripting=scripting))
    if test.id in ORACLE_DIFFERENCES:
        reason, expected = ORACLE_DIFFERENCES[test.id]
        assert oracle != expected, f"html5lib now agrees ({reason}): remove {test.id}"
    else:
        expected = oracle

    def factory() -> hs.Tokenizer:
        return hs.Tokenizer(feedback=True, scripting=scripting)

    for n, chunks in enumerate(chunkings(data, seed=test.id, random_splits=2, two_way=False)):
        tokens = feed_all(factory, chunks)
        where = "whole input" if n == 0 else f"chunking {chunks!r}"
        assert b"".join(t.raw for t in tokens) == data, f"raw bytes differ ({where})"
        got = normalise_nul(normalize_tokens(tokens))
        assert got == expected, f"{test.id} {data!r} scripting={scripting} ({where})"


# ------------------------------------------------------------------------- the stack

_NS = {namespaces["html"]: "html", namespaces["svg"]: "svg", namespaces["mathml"]: "math",
       None: "html"}
_TAG_TOKENS = (tokenTypes["StartTag"], tokenTypes["EndTag"])


class _StackTokenizer(_tokenizer.HTMLTokenizer):
    """html5lib's tokenizer, noting the tree builder's open elements after each tag.

    A token is fully processed by the time the tokenizer is asked for the next one, so the stack
    is read when the token after a tag is yielded (parse-error tokens change nothing)."""

    def __iter__(self) -> Any:
        self.stacks: list[list[tuple[str, str]]] = []
        after_tag = False
        for token in super().__iter__():
            if token["type"] != tokenTypes["ParseError"]:
                if after_tag:
                    self.stacks.append([(e.name.lower(), _NS[e.namespace])
                                        for e in self.parser.tree.openElements])
                after_tag = token["type"] in _TAG_TOKENS
            yield token


class _StackParser(html5lib.HTMLParser):
    tokenizer: _StackTokenizer

    def _parse(self, stream: Any, innerHTML: bool = False, container: str = "div",
               scripting: bool = False, **kwargs: Any) -> None:
        self.innerHTMLMode = innerHTML
        self.container = container
        self.scripting = scripting
        self.tokenizer = _StackTokenizer(stream, parser=self, **kwargs)
        self.reset()
        self.mainLoop()


def html5lib_stacks(data: str, scripting: bool) -> list[list[tuple[str, str]]]:
    parser = _StackParser(tree=html5lib.getTreeBuilder("etree", fullTree=True),
                          namespaceHTMLElements=False)
    parser.parse(data, scripting=scripting)
    return parser.tokenizer.stacks


def our_stacks(data: bytes, scripting: bool) -> list[list[tuple[str, str]]]:
    """Our stack after every tag.  The input is fed in chunks that end at each ``>``: a tag
    ends there, so nothing after it has been seen when its stack is read."""
    tokenizer = hs.Tokenizer(feedback=True, scripting=scripting)
    simulator = tokenizer._lexer.feedback
    stacks = []
    cuts = [i + 1 for i, byte in enumerate(data) if byte == 0x3E]
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        for token in tokenizer.feed(data[start:end]):
            if token.kind in ("start_tag", "end_tag"):
                stacks.append(simulator.open_elements())
    tokenizer.close()
    return stacks


def stack_params() -> list[Any]:
    """Document tests whose html5lib tree is the expected one (elsewhere html5lib's stack is not
    authoritative: its tree builder is older than the test)."""
    params = []
    for test in DOCUMENT_TESTS:
        for scripting in test.scripting_modes():
            if html5lib_tree_agrees(test, scripting=scripting) is True:
                ident = f"{test.id}-script_{'on' if scripting else 'off'}"
                params.append(pytest.param(test, scripting, id=ident))
    return params


STACK_CASES = stack_params()


@pytest.mark.parametrize(("test", "scripting"), STACK_CASES)
def test_open_element_stack(test: TreeTest, scripting: bool) -> None:
    theirs = html5lib_stacks(test.data, scripting)
    ours = our_stacks(prepare(test.data), scripting)
    known = STACK_DIFFERENCES.get(test.id, ("", {}))[1]
    # html5lib notes no stack after the last token; the tags before it must all agree.
    for i, stack in enumerate(theirs):
        assert i < len(ours), f"{test.id}: fewer tags than html5lib"
        if i in known:
            assert stack != known[i], f"html5lib now agrees: remove {test.id} tag {i}"
            assert ours[i] == known[i], f"{test.id} after tag {i}"
        else:
            assert ours[i] == stack, f"{test.id} {test.data!r} after tag {i}"


def test_counts() -> None:
    """Guard against silently losing test files (and keep the docstring's numbers honest)."""
    html5lib_docs = [t for t in DOCUMENT_TESTS if not t.file.endswith(
        ("foreign_content.dat", "limits_bailouts.dat", "script.dat",
         "text_parsing_ambiguity.dat"))]
    assert len(html5lib_docs) >= 1600
    assert len(FRAGMENT_TESTS) >= 192
    assert len(CASES) >= 3233
    assert len(STACK_CASES) >= 2800
    assert set(ORACLE_DIFFERENCES) <= {t.id for t in DOCUMENT_TESTS}
