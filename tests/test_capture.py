"""Element.capture: an element's text content, inner or outer HTML, delivered where it ends.

Every case runs in every chunking (tests/chunking.py): what a capture delivers must not depend on
how the input was cut.  The output must stay the input byte for byte (a capture reads, it never
writes).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import htmlstream as hs
from chunking import chunkings
from html_strategies import chunked, html_documents
from htmlstream.units import Captured

Kind = str


def captured(html: str | bytes, selector: str, kind: Kind = "text", *,
             setup: Callable[[hs.Rewriter], None] | None = None,
             meta: bool = False, **options: object) -> list[list[Captured]]:
    """The captures of the elements ``selector`` matches, for every chunking of ``html`` (one
    list per chunking); the output is checked to be the input when nothing else changes it."""
    data = html.encode() if isinstance(html, str) else html
    results = []
    # (every chunking, and once with the open-element mirror kept exact at every tag and every
    # tag lexed in full: the same captures)
    for chunks, exact in [(c, False) for c in chunkings(data)] + [([data], True)]:
        got: list[Captured] = []
        rw = hs.Rewriter(adjust_charset_on_meta_tag=meta)
        if exact:
            rw._lazy_mirror = False
            rw._scanner = False
        rw.on(selector, element=lambda el, got=got: el.capture(got.append, kind, **options))
        if setup is not None:
            setup(rw)
        stream = rw.stream()
        out = b"".join(stream.feed(c) for c in chunks) + stream.close()
        if setup is None:
            assert out == data
        results.append(got)
    return results


def values(html: str | bytes, selector: str, kind: Kind = "text", **options: object) -> list[str]:
    """The values captured, the same in every chunking."""
    results = captured(html, selector, kind, **options)
    first = [c.value for c in results[0]]
    for res in results[1:]:
        assert [c.value for c in res] == first
    return first


# ---------------------------------------------------------------------------- text


@pytest.mark.parametrize(("html", "selector", "expected"), [
    ("<p>a<b>x</b>&amp;y</p>", "p", ["ax&y"]),
    ("<p>a<p>b", "p", ["a", "b"]),                              # implied end by <p>
    ("<ul><li>one<li>two</ul><p>z", "li", ["one", "two"]),      # by <li>, by </ul>
    ("<table><tr><td>a<td>b</table>", "td", ["a", "b"]),        # table cells
    ("<table><tr><td>a<td>b</table>", "tr", ["ab"]),
    ("<table><tr><td>a<td>b</table>", "table", ["ab"]),
    ("<dl><dt>t<dd>d</dl>", "dt, dd", ["t", "d"]),
    ("<select><option>a<option>b</select>", "option", ["a", "b"]),
    ("<p>a<!-- not text -->b</p>", "p", ["ab"]),                # comments are not text
    ("<div>x<script>if (a<b) f()</script><style>p{}</style></div>", "div",
     ["xif (a<b) f()p{}"]),                                     # script and style text are
    ("<title>A &amp; B &lt;</title>", "title", ["A & B <"]),    # RCDATA decoded
    ("<textarea>&lt;b&gt;</textarea>", "textarea", ["<b>"]),
    ("<pre>\nline</pre>", "pre", ["line"]),                     # first newline dropped
    ("<pre>\r\nline</pre>", "pre", ["line"]),
    ("<div><pre>\n\nx</pre></div>", "div", ["\nx"]),            # (one newline only)
    ("<pre><!---->\nx</pre>", "pre", ["\nx"]),                  # (not right after the tag)
    ("<div><pre>x</pre>\ny</div>", "div", ["x\ny"]),
    ("<div><pre><b></b>\ny</pre></div>", "div", ["\ny"]),
    ("<svg><textarea>\nt</textarea></svg>", "svg", ["\nt"]),  # (not an HTML textarea)
    ("<textarea>\nt</textarea>", "textarea", ["t"]),
    ("<listing>\nl</listing>", "listing", ["l"]),
    ("<p>a\r\nb\rc</p>", "p", ["a\nb\nc"]),                     # newlines normalised
    ("<p>caf&eacute; &#x263a; &notin; &notit &amp</p>", "p", ["café ☺ ∉ ¬it &"]),
    ("<p>a\x00b</p>", "p", ["ab"]),                             # NUL dropped in HTML text
    ("<svg><text>a\x00b</text></svg>", "text", ["a\ufffdb"]),
    ("<svg><text><![CDATA[a<b&amp;]]></text></svg>", "text", ["a<b&amp;"]),
    ("<div>a<template>b<p>c</p></template>d</div>", "div", ["ad"]),
    ("<template>b<p>c</p></template>", "template", [""]),
    ("<template><p>c</p></template>", "p", ["c"]),
    ("<p>x", "p", ["x"]),                                       # ended by the end of input
    ("<p>", "p", [""]),
    ("<div><p>a</div>b", "div", ["a"]),
    ("<b>bold <i>both</b> italic</i>", "b", ["bold both"]),
    ("<p>é ü</p>", "p", ["é ü"]),
    ("<p>€漢字😀</p>", "p", ["€漢字😀"]),
])
def test_text_content(html: str, selector: str, expected: list[str]) -> None:
    assert values(html, selector) == expected


def test_text_of_the_whole_document() -> None:
    html = ("<!DOCTYPE html>\n<html> <head>\n<title>t</title></head>\n <body>x <!-- c --> y"
            "<script>s()</script></body></html>\n")
    # (the white space before <head> is not in the tree; after </body> it goes into <body>,
    # which ends for the stream at </body>)
    assert values(html, "html") == ["\nt\n x  ys()"]
    assert values(html, "head") == ["\nt"]
    assert values(html, "body") == ["x  ys()"]


def test_text_in_a_legacy_encoding() -> None:
    html = b"<meta charset=windows-1252><p>caf\xe9 \x80</p>"
    got = captured(html, "p", meta=True)
    assert {tuple(c.value for c in r) for r in got} == {("café €",)}


def test_text_in_shift_jis() -> None:
    text = "日本語のテキスト"
    html = b"<meta charset=shift_jis><p>" + text.encode("shift_jis") + b"</p>"
    assert {tuple(c.value for c in r) for r in captured(html, "p", meta=True)} == {(text,)}


# ---------------------------------------------------------------------------- html


@pytest.mark.parametrize(("html", "selector", "inner", "outer"), [
    ("<p class=x>a<b>x</b>&amp;</p>", "p", ["a<b>x</b>&amp;"], ['<p class=x>a<b>x</b>&amp;</p>']),
    ("<p>a<p>b", "p", ["a", "b"], ["<p>a", "<p>b"]),
    ("<ul><li>one<li>two</ul>", "li", ["one", "two"], ["<li>one", "<li>two"]),
    ("<div><p>x</P ></DIV>", "div", ["<p>x</P >"], ["<div><p>x</P ></DIV>"]),
    ("<img src=a.png>", "img", [""], ["<img src=a.png>"]),      # void: at once
    ("<svg><path d=M0/></svg>", "path", [""], ["<path d=M0/>"]),
    ("<script>a</b></script>", "script", ["a</b>"], ["<script>a</b></script>"]),
    ("<p>x<!--c-->", "p", ["x<!--c-->"], ["<p>x<!--c-->"]),
])
def test_html(html: str, selector: str, inner: list[str], outer: list[str]) -> None:
    assert values(html, selector, "inner_html") == inner
    assert values(html, selector, "outer_html") == outer


def test_implicit_flag() -> None:
    for res in captured("<p>a<p>b</p><img>", "p, img"):
        assert [(c.value, c.implicit) for c in res] == [("a", True), ("b", False), ("", False)]


# ---------------------------------------------------------------------------- nesting and order


def test_nested_captures() -> None:
    html = "<div id=a>1<div id=b>2<div id=c>3</div>4</div>5</div>"
    assert values(html, "div") == ["3", "234", "12345"]         # delivered innermost first
    assert values(html, "div", "outer_html") == [
        "<div id=c>3</div>", "<div id=b>2<div id=c>3</div>4</div>", html]


def test_several_captures_of_one_element() -> None:
    for chunks in chunkings(b"<h1>T<i>i</i></h1>"):
        got: list[tuple[str, str]] = []
        rw = hs.Rewriter()

        def handler(el: hs.Element, got: list[tuple[str, str]] = got) -> None:
            for kind in ("outer_html", "text", "inner_html"):
                el.capture(lambda cap: got.append((cap.kind, cap.value)), kind)
            el.on_end_tag(lambda end: got.append(("end", end.name)))

        rw.on("h1", element=handler)
        stream = rw.stream()
        for c in chunks:
            stream.feed(c)
        stream.close()
        # (the captures in the order asked for, then the end-tag handlers)
        assert got == [("outer_html", "<h1>T<i>i</i></h1>"), ("text", "Ti"),
                       ("inner_html", "T<i>i</i>"), ("end", "h1")]


def test_with_other_handlers_rewriting() -> None:
    """A capture reads the input: what other handlers change or remove does not change it."""
    html = "<div><p>keep <b>gone</b> <a href=x>link</a></p></div>"

    def setup(rw: hs.Rewriter) -> None:
        rw.on("b", element=lambda el: el.remove())
        rw.on("a", element=lambda el: el.set_attribute("href", "y"))
        rw.on("p", element=lambda el: el.remove())              # the captured element itself
        rw.on("div", text=lambda t: t.replace("T"))

    for res in captured(html, "p", setup=setup):
        assert [c.value for c in res] == ["keep gone link"]
    for res in captured(html, "p", "inner_html", setup=setup):
        assert [c.value for c in res] == ["keep <b>gone</b> <a href=x>link</a>"]
    rw = hs.Rewriter()
    got: list[Captured] = []
    rw.on("p", element=lambda el: el.capture(got.append, "outer_html"))
    setup(rw)
    assert rw.rewrite(html) == "<div></div>"
    assert [c.value for c in got] == ["<p>keep <b>gone</b> <a href=x>link</a></p>"]


def test_inside_removed_content_no_capture_starts() -> None:
    """As for every handler: none runs inside content another handler removed."""
    got: list[Captured] = []
    rw = hs.Rewriter()
    rw.on("div", element=lambda el: el.remove())
    rw.on("p", element=lambda el: el.capture(got.append))
    assert rw.rewrite("<div><p>x</p></div><p>y</p>") == "<p>y</p>"
    assert [c.value for c in got] == ["y"]


def test_with_text_handlers() -> None:
    """Text handlers and text captures together: both see the text."""
    html = "<p>a&amp;b</p><p>c</p>"
    for chunks in chunkings(html.encode()):
        got: list[str] = []
        seen: list[str] = []
        rw = hs.Rewriter()
        rw.on("p", element=lambda el, got=got: el.capture(lambda cap: got.append(cap.value)))
        rw.on_document(text=lambda t, seen=seen: seen.append(t.text))
        stream = rw.stream()
        out = b"".join(stream.feed(c) for c in chunks) + stream.close()
        assert out == html.encode()
        assert got == ["a&b", "c"]
        assert "".join(seen) == "a&bc"


# ---------------------------------------------------------------------------- the cap


def test_cap_truncates() -> None:
    for res in captured("<p>abcdef</p><p>ab</p>", "p", max_bytes=3):
        assert [(c.value, c.truncated) for c in res] == [("abc", True), ("ab", False)]
    for res in captured("<p>abcdef</p>", "p", "outer_html", max_bytes=5):
        assert [(c.value, c.truncated) for c in res] == [("<p>ab", True)]
    # cut at a character boundary: half a character is left out, not replaced
    for res in captured("<p>éé</p>", "p", max_bytes=3):
        assert [(c.value, c.truncated) for c in res] == [("é", True)]
    for res in captured("<p>abc</p>", "p", max_bytes=0):
        assert [(c.value, c.truncated) for c in res] == [("", True)]
    for res in captured("<p>abc</p>", "p", max_bytes=3):
        assert [(c.value, c.truncated) for c in res] == [("abc", False)]


def test_cap_error() -> None:
    for chunks in chunkings(b"<div><p>abcdef</p></div>"):
        rw = hs.Rewriter()
        rw.on("p", element=lambda el: el.capture(print, on_limit="error", max_bytes=4))
        stream = rw.stream()
        with pytest.raises(hs.BufferLimitExceeded) as info:
            for c in chunks:
                stream.feed(c)
            stream.close()
        assert info.value.limit_name == "max_bytes"
        assert info.value.limit == 4
        assert info.value.offset == 5
        assert "<p>" in str(info.value)


def test_bounded_memory_on_a_big_element() -> None:
    """A capture holds max_bytes at most, however long the element."""
    got: list[Captured] = []
    rw = hs.Rewriter()
    rw.on("body", element=lambda el: el.capture(got.append, "outer_html", max_bytes=1000))
    stream = rw.stream()
    stream.feed(b"<body>")
    for _ in range(1000):
        stream.feed(b"<p>" + b"x" * 1000 + b"</p>")
    stream.close()
    assert got[0].truncated and len(got[0].value) == 1000


# ---------------------------------------------------------------------------- the API


def test_arguments_checked() -> None:
    rw = hs.Rewriter()
    errors: list[str] = []

    def handler(el: hs.Element) -> None:
        for call in (lambda: el.capture(print, "html"),
                     lambda: el.capture(print, max_bytes=-1),
                     lambda: el.capture(print, on_limit="ignore"),
                     lambda: el.capture("not callable")):    # type: ignore[arg-type]
            try:
                call()
            except (TypeError, ValueError) as exc:
                errors.append(type(exc).__name__)

    rw.on("p", element=handler)
    rw.rewrite("<p>x</p>")
    assert errors == ["ValueError", "ValueError", "ValueError", "TypeError"]


def test_expired_element() -> None:
    kept: list[hs.Element] = []
    rw = hs.Rewriter()
    rw.on("p", element=kept.append)
    rw.rewrite("<p>x</p>")
    with pytest.raises(hs.UnitExpired):
        kept[0].capture(print)


def test_callback_exception_stops_the_stream() -> None:
    def boom(c: Captured) -> None:
        raise KeyError("boom")

    rw = hs.Rewriter()
    rw.on("p", element=lambda el: el.capture(boom))
    with pytest.raises(KeyError):
        rw.rewrite("<p>x</p>")


def test_context_and_many_documents() -> None:
    """One rewriter, many documents: each stream's captures are its own."""
    rw = hs.Rewriter()
    rw.on("title", element=lambda el: el.capture(
        lambda c: el.context.__setitem__("title", c.value)))
    for i in range(3):
        ctx: dict[str, str] = {}
        rw.rewrite(f"<title>doc {i}</title>", context=ctx)
        assert ctx == {"title": f"doc {i}"}


# ---------------------------------------------------------------------------- property


def _all_captures(data: bytes, chunks: list[bytes]) -> tuple[bytes, list[tuple[str, ...]]]:
    got: list[tuple[str, ...]] = []
    rw = hs.Rewriter()

    def handler(el: hs.Element) -> None:
        name = el.tag_name
        for kind in ("text", "inner_html", "outer_html"):
            if el.can_have_content or kind == "outer_html":
                el.capture(lambda c, name=name: got.append(
                    (name, c.kind, c.value, str(c.implicit))), kind)

    rw.on("*", element=handler)
    stream = rw.stream()
    out = b"".join(stream.feed(c) for c in chunks) + stream.close()
    return out, got


@settings(max_examples=300, deadline=None)
@given(st.data(), html_documents())
def test_captures_chunk_invariant(data: st.DataObject, doc: bytes) -> None:
    """Any document, every element captured three ways: the same captures in any chunking,
    and the output is the input."""
    out, whole = _all_captures(doc, [doc])
    assert out == doc
    chunks = data.draw(chunked(doc))
    out, got = _all_captures(doc, chunks)
    assert out == doc
    assert got == whole
