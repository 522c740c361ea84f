"""A rewriter whose handlers read everything and change nothing returns its input byte for byte.

Every handler kind is registered: an element handler on ``*`` that reads the tag name, the
namespace, every attribute (through ``attributes``, ``get_attribute`` and ``has_attribute``),
the flags and the offset, and registers an end-tag handler that reads the end tag; text and
comment handlers on ``*``; and document handlers for the doctype, comments, text and the end.
The output must equal the input for random HTML-ish byte strings (tags, attributes with every
kind of quoting, comments, doctypes, raw text and RCDATA elements, SVG and MathML with CDATA
sections, character references, NUL, CR and CRLF, non-ASCII and invalid UTF-8) under random
chunkings, and for the corpus files (``tests/data/corpus/*.html``) fed in 1 KiB and in random
chunks.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunking import feed_bytes, random_chunking
from datapaths import corpus_dir
from html_strategies import chunked, html_documents

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


class Reader:
    """Handlers that read every member of every unit and change nothing.

    Inconsistencies between the ways of reading attributes are collected in ``problems``
    (checked after the output, so that they do not hide an identity failure)."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.problems: list[str] = []

    def _end_tag(self, end: Any) -> None:
        self.seen.append((end.name, end.implicit))

    def element(self, el: Any) -> None:
        self.seen.append((el.tag_name, el.namespace_uri, el.is_self_closing,
                          el.can_have_content, el.removed, el.offset))
        attrs = el.attributes
        for name, value in attrs:
            for key in (name, name.translate(ASCII_UPPER)):
                if not el.has_attribute(key):
                    self.problems.append(f"<{el.tag_name}>: has_attribute({key!r}) is False")
                if el.get_attribute(key) != value:
                    self.problems.append(f"<{el.tag_name}>: get_attribute({key!r}) == "
                                         f"{el.get_attribute(key)!r}, attributes say {value!r}")
        if el.has_attribute("no-such-attribute") or el.get_attribute("no-such-attribute"):
            self.problems.append("an absent attribute is found")
        self.seen.append(attrs)
        if el.can_have_content:
            el.on_end_tag(self._end_tag)

    def text(self, chunk: Any) -> None:
        self.seen.append((chunk.text, chunk.raw, chunk.text_type, chunk.last_in_text_node,
                          chunk.removed))

    def comments(self, comment: Any) -> None:
        self.seen.append((comment.text, comment.removed))

    def doctype(self, doctype: Any) -> None:
        self.seen.append((doctype.name, doctype.public_id, doctype.system_id))

    def end(self, end: Any) -> None:
        self.seen.append("end")


def make_rewriter(**kwargs: Any) -> tuple[Any, Reader]:
    from htmlstream.rewriter import Rewriter

    reader = Reader()
    rw = Rewriter(**kwargs)
    rw.on("*", reader)
    rw.on_document(reader)
    # A second, narrower rule too, so that several rules match some elements.
    rw.on("p, div > span, svg *, [class]", element=reader.element, text=reader.text)
    return rw, reader


@pytest.mark.parametrize("scripting", [True, False])
@SETTINGS
@given(data=html_documents(), cuts=st.data())
def test_identity_random_documents(scripting: bool, data: bytes, cuts: st.DataObject) -> None:
    rw, reader = make_rewriter(scripting=scripting)
    assert rw.rewrite(data) == data
    single = [data[i : i + 1] for i in range(len(data))]
    assert feed_bytes(rw.stream, single) == data, "single bytes"
    for _ in range(3):
        cut = cuts.draw(chunked(data))
        assert feed_bytes(rw.stream, cut) == data, cut
    assert not reader.problems, reader.problems[:5]


@settings(SETTINGS, max_examples=50)
@given(data=html_documents())
def test_identity_str(data: bytes) -> None:
    """``rewrite(str)`` gives back the same str."""
    text = data.decode("utf-8", "replace")
    rw, reader = make_rewriter()
    out = rw.rewrite(text)
    assert isinstance(out, str)
    assert out == text
    assert not reader.problems, reader.problems[:5]


@SETTINGS
@given(data=html_documents(), cuts=st.data())
def test_identity_handlers_see_same_units_for_every_chunking(
    data: bytes, cuts: st.DataObject
) -> None:
    """Element, end tag, comment, doctype and text handlers see the same things however the
    input is cut (text merged per node)."""
    from htmlstream.rewriter import Rewriter

    def run(chunks: list[bytes]) -> list[Any]:
        reader = Reader()
        pieces: list[Any] = []

        def text(chunk: Any) -> None:
            # text nodes, each merged from its pieces: decoded text, raw bytes, text types
            pieces.append((chunk.text, chunk.raw, chunk.text_type))
            if chunk.last_in_text_node:
                reader.seen.append(("text", "".join(p[0] for p in pieces),
                                    b"".join(p[1] for p in pieces), {p[2] for p in pieces}))
                pieces.clear()

        rw = Rewriter()
        rw.on("*", element=reader.element, comments=reader.comments)
        rw.on_document(doctype=reader.doctype, text=text)
        assert feed_bytes(rw.stream, chunks) == data
        assert not pieces, "a text node without its last piece"
        return reader.seen

    expected = run([data])
    cut = cuts.draw(chunked(data))
    assert run(cut) == expected, cut


def _corpus() -> list[Path]:
    root = corpus_dir()
    return sorted(root.glob("*.html"))


CORPUS = _corpus()


def test_corpus_present() -> None:
    assert CORPUS, f"no corpus files under {corpus_dir()}"


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_identity_corpus(path: Path) -> None:
    data = path.read_bytes()
    rw, reader = make_rewriter()
    kib = [data[i : i + 1024] for i in range(0, len(data), 1024)]
    assert feed_bytes(rw.stream, kib) == data, "1 KiB chunks"
    rng = random.Random(path.name)
    cut = random_chunking(data, rng, max_pieces=len(data) // 500)
    got = feed_bytes(rw.stream, cut)
    if got != data:
        at = next((i for i, (a, b) in enumerate(zip(got, data, strict=False)) if a != b),
                  min(len(got), len(data)))
        pytest.fail(f"random chunks: first difference at byte {at}: "
                    f"got {got[at - 40 : at + 40]!r}, expected {data[at - 40 : at + 40]!r}")
    assert not reader.problems, reader.problems[:5]


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_identity_corpus_crlf_and_latin1(path: Path) -> None:
    """The same corpus file with CRLF line ends, through a windows-1252 rewriter."""
    data = path.read_bytes().replace(b"\n", b"\r\n")
    rw, reader = make_rewriter(encoding="windows-1252")
    rng = random.Random(path.name + "crlf")
    cut = random_chunking(data, rng, max_pieces=200)
    assert feed_bytes(rw.stream, cut) == data
    assert not reader.problems, reader.problems[:5]
