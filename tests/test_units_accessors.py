"""Element accessors (issue 21): tag names and attribute names are interned and attribute values
copied without decoding where that gives the same answer; these tests hold the answers to the
general path's: names as the DOM gives them, ASCII-case-insensitive look-ups, decoded values,
``None`` for a missing attribute, changes made earlier in the same handler and by earlier
handlers, duplicates dropped, in every chunking."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chunking import chunkings, feed_bytes
from htmlstream.rewriter import Rewriter


def reads(doc: str | bytes, selector: str, read: Callable[[Any], Any], *,
          encoding: str = "utf-8", before: Callable[[Any], Any] | None = None) -> list[Any]:
    """What ``read(element)`` returns for each element ``selector`` matches (after the handler
    ``before``, if given), the same in every chunking of ``doc``."""
    data = doc if isinstance(doc, bytes) else doc.encode(encoding)
    results: list[list[Any]] = []
    for chunks in chunkings(data, random_splits=4, single_bytes=len(data) < 400):
        seen: list[Any] = []
        rw = Rewriter(encoding=encoding)
        if before is not None:
            rw.on(selector, element=before)
        rw.on(selector, element=lambda el, seen=seen: seen.append(read(el)))
        feed_bytes(rw.stream, chunks)
        results.append(seen)
    assert all(r == results[0] for r in results)
    return results[0]


def test_tag_names_interned_per_namespace() -> None:
    # clipPath hashes alike in HTML and SVG: each namespace gets its own name, whichever the
    # process met first
    doc = "<clipPath></clipPath><svg><clipPath/><CLIPPATH/></svg><CLIPPATH></CLIPPATH>"
    assert reads(doc, "clippath, svg *", lambda el: el.tag_name) == [
        "clippath", "clipPath", "clipPath", "clippath"]
    doc = "<svg><linearGradient/></svg><linearGradient></linearGradient>"
    assert reads(doc, "lineargradient, svg *", lambda el: el.tag_name) == [
        "linearGradient", "lineargradient"]


@pytest.mark.parametrize(("written", "name"), [
    ("DIV", "div"), ("H1", "h1"), ("h7", "h7"), ("my-element", "my-element"),
    ("Abcdefghijklmno", "abcdefghijklmno"), ("foreignobjectx", "foreignobjectx"),
    ("d\u00edv", "d\u00edv"), ("x\u212a", "x\u212a"), ("IMAGE", "image"),
])
def test_tag_names(written: str, name: str) -> None:
    doc = f"<p><{written} a=1></{written}><{name} a=2></p>"
    assert reads(doc, "[a]", lambda el: el.tag_name) == [name, name]


def test_tag_name_set_then_read() -> None:
    def rename(el: Any) -> None:
        el.tag_name = "Section"

    assert reads("<div>x</div><div>y</div>", "div", lambda el: el.tag_name,
                 before=rename) == ["Section", "Section"]


ATTRS = '<a HREF="/x?a=1&amp;b=2" Title="t&#x41;" data-X=\'q\' hidden rel="a\rb" z="\x00">l</a>'


@pytest.mark.parametrize(("name", "value"), [
    ("href", "/x?a=1&b=2"), ("HREF", "/x?a=1&b=2"), ("hReF", "/x?a=1&b=2"),
    ("title", "tA"), ("data-x", "q"), ("DATA-X", "q"), ("hidden", ""), ("rel", "a\nb"),
    ("z", "\ufffd"), ("missing", None), ("hre", None), ("hrefs", None), ("h\u00e9", None),
    ("", None),
])
def test_get_and_has_attribute(name: str, value: str | None) -> None:
    got = reads(ATTRS, "a", lambda el: (el.get_attribute(name), el.has_attribute(name)))
    assert got == [(value, value is not None)]


def test_attribute_values_in_other_encodings() -> None:
    doc = '<a href="/caf\xe9" title="plain">x</a>'.encode("windows-1252")
    got = reads(doc, "a", lambda el: (el.get_attribute("href"), el.get_attribute("title"),
                                      el.attributes), encoding="windows-1252")
    assert got == [("/caf\u00e9", "plain", [("href", "/caf\u00e9"), ("title", "plain")])]


def test_non_ascii_attribute_names() -> None:
    doc = '<p h\u00e9llo="1" H\u00c9LLO="2" \u212aey=k>x</p>'
    got = reads(doc, "p", lambda el: (el.get_attribute("h\u00e9llo"),
                                      el.has_attribute("h\u00e9llo"),
                                      el.get_attribute("H\u00c9LLO"),
                                      el.get_attribute("\u212aEY"), el.attributes))
    # ASCII letters fold, others do not: HÉLLO is an attribute of its own
    assert got == [("1", True, "2", "k", [("h\u00e9llo", "1"), ("h\u00c9llo", "2"),
                                          ("\u212aey", "k")])]


def test_changes_are_read_back() -> None:
    def change(el: Any) -> None:
        el.set_attribute("Href", "/new")
        el.remove_attribute("TITLE")
        el.set_attribute("data-added", "1")

    def read(el: Any) -> Any:
        return (el.get_attribute("href"), el.has_attribute("title"), el.get_attribute("title"),
                el.get_attribute("DATA-ADDED"), el.has_attribute("Data-Added"), el.attributes)

    got = reads('<a href="/old" title="t" class="c">x</a>', "a", read, before=change)
    assert got == [("/new", False, None, "1", True,
                    [("href", "/new"), ("class", "c"), ("data-added", "1")])]


def test_changes_in_the_same_handler() -> None:
    def handler(el: Any) -> Any:
        before = (el.get_attribute("href"), el.has_attribute("href"), el.attributes)
        el.set_attribute("HREF", "/b")
        middle = (el.get_attribute("href"), el.has_attribute("href"), el.attributes)
        el.remove_attribute("href")
        after = (el.get_attribute("href"), el.has_attribute("href"), el.attributes)
        el.set_attribute("href", "/c")
        return before, middle, after, el.get_attribute("Href"), el.attributes

    got = reads('<a href="/a" id=i>x</a>', "a", handler)
    assert got == [((("/a", True, [("href", "/a"), ("id", "i")])),
                    ("/b", True, [("href", "/b"), ("id", "i")]),
                    (None, False, [("id", "i")]),
                    "/c", [("href", "/c"), ("id", "i")])]


def test_attributes_drop_duplicates_and_keep_order() -> None:
    doc = '<p id=1 CLASS=a Id=2 class=b data-y="" ID=3 title=t>x</p>'
    assert reads(doc, "p", lambda el: el.attributes) == [
        [("id", "1"), ("class", "a"), ("data-y", ""), ("title", "t")]]
    assert reads(doc, "p", lambda el: el.get_attribute("ID")) == ["1"]


def test_foreign_attribute_names() -> None:
    doc = ('<svg ViewBox="0 0 1 1" viewbox="2" preserveaspectratio=none><path D="M0"/></svg>'
           '<math definitionurl=u><mi DefinitionURL=v>x</mi></math><p viewbox=h>y</p>')
    got = reads(doc, "svg, path, math, mi, p", lambda el: (el.attributes,
                                                          el.get_attribute("viewBox"),
                                                          el.get_attribute("definitionURL")))
    assert got == [
        ([("viewBox", "0 0 1 1"), ("preserveAspectRatio", "none")], "0 0 1 1", None),
        ([("d", "M0")], None, None),
        ([("definitionURL", "u")], None, "u"),
        ([("definitionURL", "v")], None, "v"),
        ([("viewbox", "h")], "h", None),
    ]


def test_attribute_names_with_nul_and_long_names() -> None:
    long = "data-" + "x" * 80
    doc = f'<p a\x00b=1 {long.upper()}=2 {"y" * 64}=3>x</p>'
    got = reads(doc, "p", lambda el: (el.attributes, el.get_attribute(long),
                                      el.get_attribute("a\x00b")))
    assert got == [([("a\ufffdb", "1"), (long, "2"), ("y" * 64, "3")], "2", "1")]


def test_many_attributes_and_many_names() -> None:
    # more attributes than the duplicate check by bytes takes, and more distinct names than
    # the interned names keep: the same answers
    many = " ".join(f"a{i}={i}" for i in range(40)) + " A3=dup"
    assert reads(f"<p {many}>x</p>", "p", lambda el: el.attributes) == [
        [(f"a{i}", str(i)) for i in range(40)]]
    doc = "".join(f"<i n{i}x=v{i} n{i}X=w M{i}=m>.</i>" for i in range(1500))
    got = Rewriter()
    seen: list[Any] = []
    got.on("i", element=lambda el: seen.append((el.attributes, el.get_attribute(f"N{len(seen)}X"),
                                                el.tag_name)))
    got.rewrite(doc)
    assert seen == [([(f"n{i}x", f"v{i}"), (f"m{i}", "m")], f"v{i}", "i") for i in range(1500)]


def test_values_that_need_decoding() -> None:
    doc = ('<a b="&lt;&gt;" c="x&y" d="\r\n\r" e="\u00e9\u00e8" f="&notit;" g=\'"\' '
           'h="\t\x0c ">x</a>')
    assert reads(doc, "a", lambda el: el.attributes) == [[
        ("b", "<>"), ("c", "x&y"), ("d", "\n\n"), ("e", "\u00e9\u00e8"), ("f", "&notit;"),
        ("g", '"'), ("h", "\t\x0c ")]]


def test_reading_changes_nothing() -> None:
    doc = '<a HREF="/x?a=1&amp;b=2" Title=t>l</a><svg viewbox=0><clipPath/></svg>'
    rw = Rewriter()
    rw.on("*", element=lambda el: (el.tag_name, el.attributes, el.get_attribute("href"),
                                   el.has_attribute("viewBox")))
    for chunks in chunkings(doc.encode()):
        assert feed_bytes(rw.stream, chunks) == doc.encode()


@pytest.mark.parametrize(("doc", "texts"), [
    ("<p>plain text, 1 < 2 > 0</p>", ["plain text, 1 < 2 > 0"]),
    ("<p>a &amp; b&lt;</p>", ["a & b<"]),
    ("<p>a\r\nb\rc</p>", ["a\nb\nc"]),
    ("<p>a\x00b</p>", ["a\x00b"]),
    ("<script>a &amp; b\x00\r\n</script>", ["a &amp; b\ufffd\n"]),
    ("<title>x &amp; y</title>", ["x & y"]),
    ("<style>x &amp; y\x00</style>", ["x &amp; y\ufffd"]),
    ("<p>caf\u00e9 &eacute;</p>", ["caf\u00e9 \u00e9"]),
])
def test_text_chunks(doc: str, texts: list[str]) -> None:
    # plain ASCII pieces are copied, the rest decoded: the same text, in both encodings
    for encoding in ("utf-8", "windows-1252"):
        raw = doc.encode(encoding)
        results = []
        for chunks in chunkings(raw, random_splits=4):
            seen: list[str] = []
            rw = Rewriter(encoding=encoding)
            rw.on_document(text=lambda chunk, seen=seen: seen.append(chunk.text))
            assert feed_bytes(rw.stream, chunks) == raw
            results.append("".join(seen))
        assert set(results) == {"".join(texts)}, encoding
