"""The per-matched-element path: what the engine does for every element a rule matches.

Four shortcuts are taken there, each checked here against the general path it replaces, in
every chunking of each input:

- A program whose selectors are all *simple* (a tag name and attribute names that must be
  there, ``a[href]``; no combinator, pseudo-class or other attribute test) is matched by a loop
  over its few states (``Matcher._match_simple``) instead of the candidate queue.  The oracle is
  the same selectors inside ``:is()``, which the general path matches (with flags).
- A reused Element keeps its emptied list of attribute changes for the next ``set_attribute``.
- ``set_attribute`` after a read of the same name (the same ``str`` object) takes the span that
  read found, and the tag is written without a second search.
- ``get_attribute``/``has_attribute``/``set_attribute``/``remove_attribute`` are method
  descriptors (CPython specializes their calls), with signatures and keyword arguments as
  before.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from chunking import chunkings, feed_bytes
from htmlstream import Element, Rewriter, UnitExpired

DOC = (
    b"<!DOCTYPE html><html><head><title>t</title><link href=x.css rel=stylesheet></head>"
    b"<body><a href=1>one</a><a>no href</a><A HREF=3 TITLE=t>three</A>"
    b"<a title=t href='4'>four</a><a hrefx=5>five</a><a href>six</a><a href=>seven</a>"
    b"<a data-x=1 href=&amp;8>eight</a><p><a href=9 href=99>nine</a></p>"
    b"<img src=i.png><img><image src=j.png><area href=10 shape=rect>"
    b"<svg viewBox='0 0 1 1'><a href=11 xlink:href=y>svg</a><image href=k.png/></svg>"
    b"<math><a href=12>math</a></math><custom-el href=13>c</custom-el>"
    b"<table><tr><td><a href=14>cell</a></td></tr></table>"
    b"<b><a href=15>formatting<p>adopted</b>after</a>"
    b"</body></html>"
)

SELECTOR_SETS = [
    ["a[href]"],
    ["a[href][title]"],
    ["a[HREF]"],
    ["a[href]", "img[src]"],
    ["a[href]", "a[href]"],
    ["a", "a[href]"],
    ["img", "area[href][shape]", "a[href]"],
    ["svg[viewBox]", "image[href]"],
    ["a[href]", "img[src]", "area[href]", "link[href]", "image[src]"],
    ["custom-el[href]"],
    ["a[title]", "img"],
]


def _matches(selectors: list[str], doc: bytes = DOC, **options: Any) -> list[list[tuple]]:
    """Per rule, (tag name, offset, href or src) of each element it matched; the same in
    every chunking."""
    got: list[list[tuple]] = [[] for _ in selectors]
    rw = Rewriter(**options)
    for i, selector in enumerate(selectors):
        def record(el: Any, i: int = i) -> None:
            got[i].append((el.tag_name, el.offset, el.get_attribute("href"),
                           el.get_attribute("src")))
        rw.on(selector, element=record)
    first: list[list[tuple]] | None = None
    for chunks in chunkings(doc, random_splits=4, split_samples=8):
        for g in got:
            g.clear()
        feed_bytes(rw.stream, chunks)
        if first is None:
            first = [list(g) for g in got]
        else:
            assert got == first, [len(c) for c in chunks]
    assert first is not None
    return first


@pytest.mark.parametrize("selectors", SELECTOR_SETS, ids=lambda s: " , ".join(s))
def test_simple_programs_match_as_the_general_path(selectors: list[str]) -> None:
    simple = _matches(selectors)
    general = _matches([f":is({s})" for s in selectors])
    assert simple == general
    assert any(simple)


def test_simple_program_results() -> None:
    (links,) = _matches(["a[href]"])
    assert [href for _, _, href, _ in links] == [
        "1", "3", "4", "", "", "&8", "9", "11", "12", "14", "15"]
    assert [name for name, *_ in links].count("a") == len(links)
    (pairs,) = _matches(["a[href][title]"])
    assert [href for _, _, href, _ in pairs] == ["3", "4"]


def test_simple_programs_on_implied_elements() -> None:
    # an implied element has no tag, so no attributes: [attr] never matches it, a bare name does
    doc = b"<p>text</p>"
    (body,) = _implied(["body"], doc)
    assert body == [("body", True)]
    assert _implied(["body[class]"], doc) == [[]]
    assert _implied(["body[class]", "p"], doc) == [[], [("p", False)]]


def _implied(selectors: list[str], doc: bytes) -> list[list[tuple]]:
    got: list[list[tuple]] = [[] for _ in selectors]
    rw = Rewriter()
    for i, selector in enumerate(selectors):
        rw.on(selector, element=lambda el, i=i: got[i].append((el.tag_name, el.implied)),
              implied=True)
    first: list[list[tuple]] | None = None
    for chunks in chunkings(doc):
        for g in got:
            g.clear()
        feed_bytes(rw.stream, chunks)
        if first is None:
            first = [list(g) for g in got]
        assert got == first
    assert first is not None
    return first


def _rewrite(handler: Any, doc: bytes, selector: str = "a, img") -> bytes:
    rw = Rewriter()
    rw.on(selector, element=handler)
    outputs = {feed_bytes(rw.stream, chunks) for chunks in chunkings(doc, random_splits=4)}
    assert len(outputs) == 1
    return outputs.pop()


def test_read_then_write_takes_the_span_the_read_found() -> None:
    # (in <a b= href=7>, b's value is "href=7")
    doc = (b'<a href=1 title=t>a</a><a HREF=2>b</a><a title=t>c</a><a href=4 href=44>d</a>'
           b'<a x href="5">e</a><a href=6 b=>f</a><a b= href=7>g</a><img src=8>')
    name = "href"

    def read_write(el: Any) -> None:      # the same str object read, then set
        value = el.get_attribute(name)
        el.set_attribute(name, f"[{value}]")

    assert _rewrite(read_write, doc) == (
        b'<a href="[1]" title=t>a</a><a HREF="[2]">b</a><a title=t href="[None]">c</a>'
        b'<a href="[4]" href=44>d</a><a x href="[5]">e</a><a href="[6]" b=>f</a>'
        b'<a b= href=7 href="[None]">g</a><img src=8 href="[None]">')

    def has_write(el: Any) -> None:
        if el.has_attribute(name):
            el.set_attribute(name, "x")
        else:
            el.set_attribute("data-none", "y")

    assert _rewrite(has_write, doc) == (
        b'<a href="x" title=t>a</a><a HREF="x">b</a><a title=t data-none="y">c</a>'
        b'<a href="x" href=44>d</a><a x href="x">e</a><a href="x" b=>f</a>'
        b'<a b= href=7 data-none="y">g</a><img src=8 data-none="y">')

    def read_other_then_write(el: Any) -> None:     # a read of another name, another case
        el.get_attribute("title")
        el.get_attribute("HREF")
        el.set_attribute("href", "z")

    assert _rewrite(read_other_then_write, doc) == (
        b'<a href="z" title=t>a</a><a HREF="z">b</a><a title=t href="z">c</a>'
        b'<a href="z" href=44>d</a><a x href="z">e</a><a href="z" b=>f</a>'
        b'<a b= href=7 href="z">g</a><img src=8 href="z">')

    def read_remove_set(el: Any) -> None:
        el.get_attribute(name)
        el.remove_attribute(name)
        el.set_attribute(name, "r")

    assert _rewrite(read_remove_set, doc) == (
        b'<a title=t href="r">a</a><a href="r">b</a><a title=t href="r">c</a>'
        b'<a href="r">d</a><a x href="r">e</a><a b="" href="r">f</a>'
        b'<a b= href=7 href="r">g</a><img src=8 href="r">')


def test_reads_and_changes_on_reused_elements_start_afresh() -> None:
    # every third element keeps two changes, the others one or none: the changes list a
    # reused Element keeps must come back empty
    doc = b"".join(b'<a href=%d title=t%d>x</a>' % (i, i) for i in range(12))
    seen = 0

    def handler(el: Any) -> None:
        nonlocal seen
        seen += 1
        assert el.get_attribute("data-n") is None
        assert el.get_attribute("href") is not None
        if seen % 3 == 0:
            el.set_attribute("href", "two")
            el.set_attribute("data-n", "2")
        elif seen % 3 == 1:
            el.set_attribute("href", "one")
        assert el.get_attribute("href") in ("one", "two", el.attributes[0][1])

    rw = Rewriter()
    rw.on("a[href]", element=handler)
    out = rw.rewrite(doc)
    assert out == b"".join(
        (b'<a href="two" title=t%d data-n="2">x</a>' % i) if (i + 1) % 3 == 0 else
        (b'<a href="one" title=t%d>x</a>' % i) if (i + 1) % 3 == 1 else
        (b'<a href=%d title=t%d>x</a>' % (i, i)) for i in range(12))


def test_kept_elements_keep_their_changes() -> None:
    kept: list[Any] = []
    name = "href"

    def handler(el: Any) -> None:
        el.set_attribute(name, el.get_attribute(name) + "!")
        if el.get_attribute(name) == "2!":
            kept.append(el)

    rw = Rewriter()
    rw.on("a[href]", element=handler)
    assert rw.rewrite(b"<a href=1></a><a href=2></a><a href=3></a><a href=4></a>") == (
        b'<a href="1!"></a><a href="2!"></a><a href="3!"></a><a href="4!"></a>')
    (el,) = kept
    assert el.get_attribute("href") == "2!" and el.has_attribute("HREF")
    assert el.attributes == [("href", "2!")]
    with pytest.raises(UnitExpired):
        el.set_attribute("href", "x")


def test_attribute_methods_keep_signatures_and_keywords() -> None:
    for method, params in (("get_attribute", ["name"]), ("has_attribute", ["name"]),
                           ("set_attribute", ["name", "value"]),
                           ("remove_attribute", ["name"])):
        signature = inspect.signature(getattr(Element, method))
        assert [p for p in signature.parameters if p != "self"] == params
        assert (getattr(Element, method).__doc__ or "").strip()

    def handler(el: Any) -> None:
        assert el.get_attribute(name="href") == "1"
        assert el.has_attribute(name="HREF")
        el.set_attribute(name="href", value="2")
        el.remove_attribute(name="title")
        with pytest.raises(TypeError):
            el.get_attribute(1)
        with pytest.raises(TypeError):
            el.set_attribute("href", 2)

    rw = Rewriter()
    rw.on("a", element=handler)
    assert rw.rewrite(b"<a href=1 title=t>x</a>") == b'<a href="2">x</a>'


@pytest.mark.parametrize("bad", ["&amp;", "\r", "\0", "\u00e9", "&"])
def test_values_of_every_length_with_a_byte_to_decode_anywhere(bad: str) -> None:
    # plain values are copied sixteen bytes at a time, the last ones with one overlapping
    # load: a byte that needs decoding anywhere, in a value of any length, is decoded
    expected = {"&amp;": "&", "\r": "\n", "\0": "\ufffd", "\u00e9": "\u00e9", "&": "&"}[bad]
    values = []
    for n in range(40):
        for at in range(n + 1):
            values.append("v" * at + bad + "w" * (n - at))
        values.append("x" * n)
    doc = "".join(f'<a href="{v}">' for v in values).encode("utf-8")
    got: list[str | None] = []
    rw = Rewriter()
    rw.on("a[href]", element=lambda el: got.append(el.get_attribute("href")))
    rw.rewrite(doc)
    assert got == [v.replace(bad, expected) for v in values]


def test_raw_bytes_of_reused_elements() -> None:
    # a reused Element refills its raw bytes in place when nothing else holds them: raw values
    # a handler kept stay as they were, a hash cached on one is not the next one's, and tags
    # longer than the room left get new bytes
    lengths = [1, 70, 3, 200, 2, 600, 5, 40, 900, 0, 64, 63, 65]
    doc = b"".join(b'<a href="%s">x</a>' % (b"h" * n) for n in lengths)
    kept: list[bytes] = []
    hashes: list[bool] = []
    seen = 0

    def handler(el: Any) -> None:
        nonlocal seen
        seen += 1
        raw = el.raw
        hashes.append(hash(raw) == hash(bytes(bytearray(raw))) and raw == el.raw)
        if seen % 4 == 0:
            kept.append(raw)                # the bytes kept, not the element
        assert el.get_attribute("href") == "h" * lengths[seen - 1]

    for chunks in chunkings(doc, random_splits=4, split_samples=8):
        seen = 0
        kept.clear()
        hashes.clear()
        rw = Rewriter()
        rw.on("a[href]", element=handler)
        assert feed_bytes(rw.stream, chunks) == doc
        assert all(hashes) and len(hashes) == len(lengths)
        assert kept == [b'<a href="%s">' % (b"h" * lengths[i]) for i in range(3, len(lengths), 4)]


NAMES = ["href", "HrEf", "data-1", "data-\x11", "abcdefgh", "ABCDEFGH", "abcdefghi", "a", "A",
         "x@", "x`", "x[", "x{", "a-b", "a\rb", "long-attribute-name"]


@pytest.mark.parametrize("name", NAMES)
def test_attribute_names_compared_as_words(name: str) -> None:
    # names of up to eight bytes are compared as one word (ASCII case folded at letters only):
    # '@' is not '`', nor '[' '{', nor a control byte a digit, at any place in a tag or chunk
    present = [n for n in NAMES if "\r" not in n]
    doc = "".join(f'<p {n}="{i}">' for i, n in enumerate(present)).encode("ascii")
    want = [str(i) if n.lower() == name.lower() else None for i, n in enumerate(present)]
    got: list[str | None] = []
    has: list[bool] = []
    rw = Rewriter()

    def read(el: Any) -> None:
        got.append(el.get_attribute(name))
        has.append(el.has_attribute(name))

    rw.on("p", element=read)
    for chunks in chunkings(doc, random_splits=4, split_samples=8):
        got.clear()
        has.clear()
        feed_bytes(rw.stream, chunks)
        assert got == want
        assert has == [w is not None for w in want]
    if "\r" not in name and "\x11" not in name and "@" not in name and "`" not in name:
        selector = f"p[{name}]" if name.replace("-", "").isalnum() else None
        if selector is not None:
            (matched,) = _matches([selector], doc)
            assert len(matched) == sum(w is not None for w in want)
