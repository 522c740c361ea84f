"""Unit tests of the rewriter API: Rewriter, RewriterStream and the rewritable units.

Every test that feeds input runs it under many chunkings (``chunking.chunkings``: whole, byte by
byte, every 2-way split of short inputs, random cuts) through :func:`rewrite_all`, which also
checks that the output returned by each ``feed`` is final (a prefix of the whole output).
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from chunking import chunkings
from htmlstream.errors import (
    BufferLimitExceeded,
    EncodingError,
    HtmlStreamError,
    SelectorError,
)
from htmlstream.rewriter import Rewriter
from htmlstream.tokens import TextType
from htmlstream.units import UnitExpired

# --------------------------------------------------------------------------- helpers


def as_bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def run_cut(rw: Any, cut: list[bytes]) -> bytes:
    """Feed one chunking; check every piece returned is final; return the whole output."""
    stream = rw.stream()
    parts = [stream.feed(c) for c in cut]
    parts.append(stream.close())
    return b"".join(parts)


def rewrite_all(rw: Any, data: bytes | str, *, seed: int | str = 0) -> bytes:
    """The output of ``rw`` for ``data``, which must be the same for every chunking (and for
    ``rw.rewrite``)."""
    data = as_bytes(data)
    expected = rw.rewrite(data)
    for cut in chunkings(data, seed=seed, random_splits=6):
        got = run_cut(rw, cut)
        assert got == expected, f"chunking {[len(c) for c in cut]}: {got!r} != {expected!r}"
    return expected


def runs(factory: Callable[[], tuple[Any, list[Any]]], data: bytes | str
         ) -> tuple[bytes, list[Any]]:
    """``factory()`` gives a fresh (rewriter, log); the output and the log must be the same for
    every chunking.  Returns them."""
    data = as_bytes(data)
    rw, log = factory()
    expected = rw.rewrite(data)
    expected_log = list(log)
    for cut in chunkings(data, random_splits=6):
        rw, log = factory()
        got = run_cut(rw, cut)
        assert got == expected, f"chunking {[len(c) for c in cut]}: {got!r} != {expected!r}"
        assert log == expected_log, f"chunking {[len(c) for c in cut]}"
    return expected, expected_log


def on_element(selector: str, fn: Callable[[Any], Any], **kwargs: Any) -> Any:
    rw = Rewriter(**kwargs)
    rw.on(selector, element=fn)
    return rw


def check(selector: str, fn: Callable[[Any], Any], data: bytes | str, expected: bytes | str
          ) -> None:
    assert rewrite_all(on_element(selector, fn), data) == as_bytes(expected)


# --------------------------------------------------------------------------- registration


def test_no_rules_is_identity() -> None:
    data = b"<!DOCTYPE html><p class=x>a &amp; b<!--c--><script>x</script>"
    assert rewrite_all(Rewriter(), data) == data


def test_a_chunk_output_whole_is_not_copied() -> None:
    # With no handler nothing can change the output: a chunk read in place and output whole is
    # returned as it is (no copy); a chunk after one that ended inside a token, or that ends
    # inside one, is not.
    for stream in (Rewriter().stream(), Rewriter().stream(encoding="windows-1252")):
        chunks = [b"<p>hello</p> text", b" more <b", b">x</b> end", b" and text\n"]
        out = [stream.feed(chunk) for chunk in chunks]
        assert out[0] is chunks[0] and out[1] == b" more " and out[2] == b"<b>x</b> end"
        assert out[3] is chunks[3]
        assert b"".join(out) + stream.close() == b"".join(chunks)


def test_on_returns_rewriter_and_chains() -> None:
    rw = Rewriter()
    assert rw.on("b", element=lambda e: None) is rw
    assert rw.on_document(end=lambda e: None) is rw
    rw.on("a", element=lambda e: e.set_attribute("x", "1")).on(
        "b", element=lambda e: e.set_attribute("y", "2"))
    assert rewrite_all(rw, "<a></a><b></b>") == b'<a x="1"></a><b y="2"></b>'


def test_on_with_all_keyword_handlers() -> None:
    log: list[str] = []
    rw = Rewriter()
    rw.on("div", element=lambda e: log.append("el:" + e.tag_name),
          text=lambda t: log.append("text:" + t.text) if t.text else None,
          comments=lambda c: log.append("comment:" + c.text))
    rw.rewrite(b"x<div>a<!--b--></div>y<!--z-->")
    assert log == ["el:div", "text:a", "comment:b"]


def test_handler_object() -> None:
    class Handler:
        def __init__(self) -> None:
            self.log: list[str] = []

        def element(self, el: Any) -> None:
            self.log.append(el.tag_name)
            el.set_attribute("seen", "1")

        def text(self, chunk: Any) -> None:
            if chunk.text:
                chunk.replace(chunk.text.upper())

        def comments(self, comment: Any) -> None:
            comment.remove()

    def factory() -> tuple[Any, list[Any]]:
        h = Handler()
        rw = Rewriter()
        rw.on("p", h)
        return rw, h.log

    out, log = runs(factory, "<p>ab<!--c--><i>d</i></p>e")
    assert out == b'<p seen="1">AB<i>D</i></p>e'
    assert log == ["p"]


def test_handler_object_with_only_some_methods() -> None:
    class OnlyText:
        def text(self, chunk: Any) -> None:
            chunk.replace(chunk.text.replace("a", "b"))

    rw = Rewriter()
    rw.on("p", OnlyText())
    assert rewrite_all(rw, "<p>aaa</p>a") == b"<p>bbb</p>a"


def test_handler_object_keyword_added() -> None:
    class OnlyText:
        def text(self, chunk: Any) -> None:
            chunk.replace(chunk.text.upper())

    rw = Rewriter()
    rw.on("p", OnlyText(), element=lambda e: e.set_attribute("k", "v"))
    assert rewrite_all(rw, "<p>ab</p>") == b'<p k="v">AB</p>'


def test_handler_object_without_methods_is_refused() -> None:
    with pytest.raises(TypeError):
        Rewriter().on("p", object())


def test_non_callable_handler_is_refused() -> None:
    with pytest.raises(TypeError):
        Rewriter().on("p", element="not callable")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Rewriter().on_document(end=42)  # type: ignore[arg-type]


@pytest.mark.parametrize("selector", ["p:hover", "div >", "", "a[", "p:last-child", "::before"])
def test_bad_selector(selector: str) -> None:
    with pytest.raises(SelectorError) as info:
        Rewriter().on(selector, element=lambda e: None)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, HtmlStreamError)


def test_decorators() -> None:
    rw = Rewriter()

    @rw.element("img")
    def lazy(el: Any) -> None:
        el.set_attribute("loading", "lazy")

    @rw.text("p")
    def upper(chunk: Any) -> None:
        chunk.replace(chunk.text.upper())

    @rw.comments("div")
    def drop(comment: Any) -> None:
        comment.remove()

    assert callable(lazy) and lazy.__name__ == "lazy"
    assert upper.__name__ == "upper" and drop.__name__ == "drop"
    out = rewrite_all(rw, "<div><!--x--><p>ab<img src=i></p></div><!--y-->")
    assert out == b'<div><p>AB<img src=i loading="lazy"></p></div><!--y-->'


def test_on_document_passthrough_hook() -> None:
    """on_document(passthrough=...): called once, with the context and the reason, when a
    stream passes its input through; never for a document that is rewritten; in every
    chunking; the stream's end handlers do not run then."""
    calls: list[tuple[int, str]] = []
    ends: list[int] = []

    def hook(context: Any, reason: str) -> None:
        calls.append((id(context), reason))

    rw = Rewriter(sniff=True)
    rw.on_document(end=lambda e: ends.append(1), passthrough=hook)
    for data in (b"\xff\xfe<\x00p\x00>\x00", b"%PDF-1.7\n" + b"x" * 2000):
        for chunks in chunkings(data):
            calls.clear()
            ends.clear()
            stream = rw.stream()
            out = b"".join(stream.feed(c) for c in chunks) + stream.close()
            assert out == data
            assert calls == [(id(stream.context), stream.passthrough_reason)]
            assert ends == []
    calls.clear()
    assert rw.rewrite(b"<p>x</p>") == b"<p>x</p>"
    assert calls == [] and ends == [1]


def test_on_document_passthrough_hook_error_fails_the_stream() -> None:
    def hook(context: Any, reason: str) -> None:
        raise LookupError("from the hook")

    rw = Rewriter().on_document(passthrough=hook)
    stream = rw.stream()
    with pytest.raises(LookupError, match="from the hook"):
        stream.feed(b"\xfe\xff\x00<")
    with pytest.raises(HtmlStreamError, match="failed earlier"):
        stream.close()
    with pytest.raises(TypeError, match="passthrough must be a callable"):
        Rewriter().on_document(passthrough="hook")  # type: ignore[arg-type]


def test_on_document_keywords_and_object() -> None:
    class Doc:
        def __init__(self) -> None:
            self.log: list[Any] = []

        def doctype(self, d: Any) -> None:
            self.log.append(("doctype", d.name))

        def comments(self, c: Any) -> None:
            self.log.append(("comment", c.text))

        def text(self, t: Any) -> None:
            if t.last_in_text_node:
                self.log.append(("text-end",))

        def end(self, e: Any) -> None:
            self.log.append(("end",))
            e.append("<!--E-->", html=True)

    def factory() -> tuple[Any, list[Any]]:
        d = Doc()
        rw = Rewriter()
        rw.on_document(d)
        return rw, d.log

    out, log = runs(factory, "<!DOCTYPE html><p>a<!--c-->b</p>")
    assert out == b"<!DOCTYPE html><p>a<!--c-->b</p><!--E-->"
    assert log == [("doctype", "html"), ("text-end",), ("comment", "c"), ("text-end",), ("end",)]

    seen: list[str] = []
    rw = Rewriter()
    rw.on_document(doctype=lambda d: seen.append("d"), comments=lambda c: seen.append("c"),
                   text=lambda t: None, end=lambda e: seen.append("e"))
    rw.rewrite(b"<!doctype html><!--x-->")
    assert seen == ["d", "c", "e"]


def test_handlers_run_in_registration_order() -> None:
    log: list[str] = []
    rw = Rewriter()
    rw.on("div", element=lambda e: log.append("1"))
    rw.on("*", element=lambda e: log.append("2") if e.tag_name == "div" else None)
    rw.on("div.x", element=lambda e: log.append("3"))
    rw.rewrite(b"<div class=x></div>")
    assert log == ["1", "2", "3"]


def test_document_end_handlers_in_registration_order() -> None:
    rw = Rewriter()
    rw.on_document(end=lambda e: e.append("1"))
    rw.on_document(end=lambda e: e.append("2"))
    rw.on_document(end=lambda e: e.append("<3>", html=True))
    assert rewrite_all(rw, "<p>x") == b"<p>x12<3>"


# --------------------------------------------------------------------------- Element: reading


def test_tag_name_and_namespace() -> None:
    seen: list[tuple[str, str]] = []

    def factory() -> tuple[Any, list[Any]]:
        seen = []
        rw = on_element("*", lambda e: seen.append((e.tag_name, e.namespace_uri)))
        return rw, seen

    _, seen = runs(factory, "<DIV><svg><Circle/><foreignObject><P>x</P></foreignObject></svg>"
                            "<math><mi>y</mi></math></DIV>")
    html = "http://www.w3.org/1999/xhtml"
    svg = "http://www.w3.org/2000/svg"
    mathml = "http://www.w3.org/1998/Math/MathML"
    assert seen == [("div", html), ("svg", svg), ("circle", svg), ("foreignObject", svg),
                    ("p", html), ("math", mathml), ("mi", mathml)]


#: The HTML parser's "adjust SVG tag name" table (HTML Standard, tree construction): the source
#: name in any case, and the DOM's name.
SVG_TAG_NAMES = [
    "altGlyph", "altGlyphDef", "altGlyphItem", "animateColor", "animateMotion", "animateTransform",
    "clipPath", "feBlend", "feColorMatrix", "feComponentTransfer", "feComposite",
    "feConvolveMatrix", "feDiffuseLighting", "feDisplacementMap", "feDistantLight", "feDropShadow",
    "feFlood", "feFuncA", "feFuncB", "feFuncG", "feFuncR", "feGaussianBlur", "feImage", "feMerge",
    "feMergeNode", "feMorphology", "feOffset", "fePointLight", "feSpecularLighting", "feSpotLight",
    "feTile", "feTurbulence", "foreignObject", "glyphRef", "linearGradient", "radialGradient",
    "textPath",
]  # fmt: skip


def test_svg_tag_names_are_the_doms() -> None:
    # Every name of the table, written lower-case, upper-case and as the DOM spells it: the
    # element's tag_name and its end tag's name are the DOM's name.
    spellings = [(s, name) for name in SVG_TAG_NAMES
                 for s in (name.lower(), name.upper(), name)]
    doc = "<svg>" + "".join(f"<{s}></{s}>" for s, _ in spellings) + "</svg>"

    def factory() -> tuple[Any, list[Any]]:
        seen: list[Any] = []

        def el(e: Any) -> None:
            seen.append(e.tag_name)
            e.on_end_tag(lambda t: seen.append(("end", t.name)))

        return on_element("svg > *", el), seen

    out, seen = runs(factory, doc)
    assert out == doc.encode()          # reading changes nothing
    assert seen == [x for _, name in spellings for x in (name, ("end", name))]
    assert len(SVG_TAG_NAMES) == 37


def test_adjusted_names_only_in_svg() -> None:
    # HTML and MathML elements keep the lower-cased name; so do SVG elements not in the table.
    doc = ("<clipPath></clipPath><math><clipPath></clipPath><mi>x</mi><mglyph/></math>"
           "<svg><Rect/><fooBar></fooBar><foreignObject><linearGradient></linearGradient>"
           "</foreignObject></svg>")

    def factory() -> tuple[Any, list[Any]]:
        seen: list[Any] = []
        return on_element("*", lambda e: seen.append((e.tag_name, e.namespace_uri[-6:]))), seen

    _, seen = runs(factory, doc)
    assert [x for x in seen if x[0] not in ("html", "head", "body")] == [
        ("clippath", "/xhtml"), ("math", "MathML"), ("clippath", "MathML"), ("mi", "MathML"),
        ("mglyph", "MathML"), ("svg", "00/svg"), ("rect", "00/svg"), ("foobar", "00/svg"),
        ("foreignObject", "00/svg"), ("lineargradient", "/xhtml")]


def test_renamed_svg_element_writes_what_is_given() -> None:
    def factory() -> tuple[Any, list[Any]]:
        seen: list[Any] = []

        def el(e: Any) -> None:
            seen.append(e.tag_name)
            e.tag_name = "radialgradient"
            seen.append(e.tag_name)
            e.on_end_tag(lambda t: seen.append(t.name))

        return on_element("linearGradient", el), seen

    out, seen = runs(factory, "<svg><LINEARGRADIENT id=a></lineargradient></svg>")
    assert out == b"<svg><radialgradient id=a></radialgradient></svg>"
    assert seen == ["linearGradient", "radialgradient", "radialgradient"]

    def renamer() -> tuple[Any, list[Any]]:
        seen: list[Any] = []

        def el(e: Any) -> None:
            e.on_end_tag(lambda t: (seen.append(t.name), setattr(t, "name", "clipPath"),
                                    seen.append(t.name)))

        return on_element("textPath", el), seen

    out, seen = runs(renamer, "<svg><textpath>x</textPath></svg>")
    assert out == b"<svg><textpath>x</clipPath></svg>"
    assert seen == ["textPath", "clipPath"]


def test_foreign_attribute_names_are_the_doms() -> None:
    # attributes and attribute_details give the DOM's names: SVG's adjusted case (viewBox...),
    # MathML's definitionURL; the foreign attributes keep their qualified names (xlink:href).
    doc = ("<div VIEWBOX=1 definitionURL=2></div>"
           "<svg VIEWBOX=1 preserveaspectratio=2 XLink:Href=3 xml:lang=4 definitionurl=5 a=6>"
           "</svg><math DefinitionURL=1 viewbox=2 xlink:href=3></math>")

    def factory() -> tuple[Any, list[Any]]:
        seen: list[Any] = []

        def el(e: Any) -> None:
            seen.append(e.attributes)
            seen.append([d.name for d in e.attribute_details()])

        return on_element("div, svg, math", el), seen

    _, seen = runs(factory, doc)
    assert seen == [
        [("viewbox", "1"), ("definitionurl", "2")], ["viewbox", "definitionurl"],
        [("viewBox", "1"), ("preserveAspectRatio", "2"), ("xlink:href", "3"),
         ("xml:lang", "4"), ("definitionurl", "5"), ("a", "6")],
        ["viewBox", "preserveAspectRatio", "xlink:href", "xml:lang", "definitionurl", "a"],
        [("definitionURL", "1"), ("viewbox", "2"), ("xlink:href", "3")],
        ["definitionURL", "viewbox", "xlink:href"],
    ]


def test_get_attribute_by_dom_name() -> None:
    # get_attribute finds an attribute by the DOM's name (viewBox, definitionURL) and, as on
    # HTML elements, by any ASCII case of it, on every element: parsed markup never gives an
    # element two attributes whose names differ only in case.  set_attribute/remove_attribute
    # name the attribute as markup does; added names read back in the DOM's case.
    names = ["viewBox", "viewbox", "VIEWBOX", "xlink:href", "XLINK:HREF", "a", "A",
             "definitionURL", "definitionurl", "b"]
    doc = ("<p viewBox=1 xlink:href=2 a=3 definitionURL=4></p>"
           "<svg viewBox=1 xlink:href=2 a=3 definitionURL=4></svg>"
           "<math viewBox=1 xlink:href=2 a=3 definitionURL=4></math>")

    def factory() -> tuple[Any, list[Any]]:
        seen: list[Any] = []

        def el(e: Any) -> None:
            seen.append([e.get_attribute(n) for n in names])
            seen.append([e.has_attribute(n) for n in names] == [
                e.get_attribute(n) is not None for n in names])
            seen.append([e.get_raw_attribute(n) for n in names] == [
                None if e.get_attribute(n) is None else e.get_attribute(n).encode()
                for n in names])
            e.set_attribute("PATHLENGTH", "5")
            e.remove_attribute("VIEWBOX")
            seen.append((e.get_attribute("pathLength"), e.get_attribute("viewBox"),
                         e.attributes[-1], e.attributes[0]))

        return on_element("p, svg, math", el), seen

    out, seen = runs(factory, doc)
    values = ["1", "1", "1", "2", "2", "3", "3", "4", "4", None]
    assert seen == [
        values, True, True, ("5", None, ("pathlength", "5"), ("xlink:href", "2")),
        values, True, True, ("5", None, ("pathLength", "5"), ("xlink:href", "2")),
        values, True, True, ("5", None, ("pathlength", "5"), ("xlink:href", "2")),
    ]
    assert out == (b'<p xlink:href=2 a=3 definitionURL=4 pathlength="5"></p>'
                   b'<svg xlink:href=2 a=3 definitionURL=4 pathlength="5"></svg>'
                   b'<math xlink:href=2 a=3 definitionURL=4 pathlength="5"></math>')


def test_attributes_are_decoded() -> None:
    def factory() -> tuple[Any, list[Any]]:
        seen: list[Any] = []

        def el(e: Any) -> None:
            seen.append(e.attributes)
            seen.append((e.get_attribute("HREF"), e.get_attribute("title"),
                         e.get_attribute("missing"), e.has_attribute("data-x"),
                         e.has_attribute("nope"), e.get_attribute("data-x")))
        return on_element("a", el), seen

    _, seen = runs(factory, "<a HREF='/x?a=1&amp;b=2' title=\"caf&eacute; &lt;&#x41;&#66;\" "
                            "data-x href=dup>l</a>")
    assert seen[0] == [("href", "/x?a=1&b=2"), ("title", "caf\u00e9 <AB"), ("data-x", "")]
    assert seen[1] == ("/x?a=1&b=2", "caf\u00e9 <AB", None, True, False, "")


def test_attribute_newlines_and_unicode() -> None:
    def factory() -> tuple[Any, list[Any]]:
        seen: list[Any] = []
        return on_element("p", lambda e: seen.append(e.get_attribute("t"))), seen

    _, seen = runs(factory, b"<p t='a\r\nb\rc \xe2\x82\xac'>")
    assert seen == ["a\nb\nc \u20ac"]


def test_flags_and_offset() -> None:
    data = "<p>ab<br/><img src=x><svg><path/><g></g></svg><span/></p>"

    def factory() -> tuple[Any, list[Any]]:
        seen: list[Any] = []
        return on_element("*", lambda e: seen.append(
            (e.tag_name, e.is_self_closing, e.can_have_content, e.offset))), seen

    _, seen = runs(factory, data)
    assert seen == [
        ("p", False, True, 0), ("br", True, False, data.index("<br")),
        ("img", False, False, data.index("<img")), ("svg", False, True, data.index("<svg")),
        ("path", True, False, data.index("<path")), ("g", False, True, data.index("<g")),
        ("span", True, True, data.index("<span")),
    ]


def test_source_offsets() -> None:
    """Every unit's ``raw`` bytes are found at its ``offset`` in the input."""
    data = (b"<!DOCTYPE html>\n<!-- c --><div class=x>a &amp; b<br>\r\n<p>t</p>"
            b"<script>s</script></DIV>tail")

    def factory() -> tuple[Any, list[Any]]:
        units: list[Any] = []

        def element(e: Any) -> None:
            units.append(("element", e.offset, e.raw))
            if e.can_have_content:
                e.on_end_tag(lambda t: units.append(("end", t.offset, t.raw, t.implicit)))

        rw = Rewriter()
        rw.on("*", element=element)
        rw.on_document(doctype=lambda d: units.append(("doctype", d.offset, d.raw)),
                       comments=lambda c: units.append(("comment", c.offset, c.raw)),
                       text=lambda t: units.append(("text", t.offset, t.raw)))
        return rw, units

    rw, units = factory()
    rw.rewrite(data)
    kinds = set()
    for kind, offset, raw, *rest in units:
        kinds.add(kind)
        if kind == "end" and rest[0]:
            assert raw == b""
        assert data[offset : offset + len(raw)] == raw, (kind, offset, raw)
    assert kinds == {"element", "end", "doctype", "comment", "text"}
    ends = [(u[2], u[3]) for u in units if u[0] == "end"]
    assert (b"</DIV>", False) in ends and (b"</p>", False) in ends


# --------------------------------------------------------------------------- Element: changing


def test_set_tag_name_renames_start_and_end_tags() -> None:
    def rename(e: Any) -> None:
        e.tag_name = "section"
        assert e.tag_name == "section"

    check("div", rename, "<div class=a>x</DIV >y", '<section class=a>x</section>y')


def test_set_tag_name_unclosed_element() -> None:
    def rename(e: Any) -> None:
        e.tag_name = "span"

    check("b", rename, "<b>x", "<span>x")


@pytest.mark.parametrize("bad", ["", "a b", "a>", "1a", "a/b", "a\0"])
def test_set_tag_name_invalid(bad: str) -> None:
    def rename(e: Any) -> None:
        with pytest.raises(ValueError):
            e.tag_name = bad

    check("div", rename, "<div>x</div>", "<div>x</div>")


def test_set_attribute_new_and_existing() -> None:
    def el(e: Any) -> None:
        e.set_attribute("href", "/new")
        e.set_attribute("rel", "nofollow")

    check("a", el, "<a href='/old' class=c>l</a>", '<a href="/new" class=c rel="nofollow">l</a>')


def test_set_attribute_escapes_amp_and_quote() -> None:
    def el(e: Any) -> None:
        e.set_attribute("title", "a&b \"q\" 'r' <t>")

    check("p", el, "<p>", "<p title=\"a&amp;b &quot;q&quot; 'r' <t>\">")


def test_set_attribute_roundtrip_keeps_meaning() -> None:
    data = "<a href='/x?a=1&amp;b=2' title=\"&quot;q&quot; &amp;amp;\">l</a>"

    def el(e: Any) -> None:
        for name, value in e.attributes:
            e.set_attribute(name, value)

    out = rewrite_all(on_element("a", el), data)
    before: list[Any] = []
    after: list[Any] = []
    Rewriter().on("a", element=lambda e: before.append(e.attributes)).rewrite(data.encode())
    Rewriter().on("a", element=lambda e: after.append(e.attributes)).rewrite(out)
    assert before == after == [[("href", "/x?a=1&b=2"), ("title", '"q" &amp;')]]


@pytest.mark.parametrize("bad", ["", "a b", "a=b", "a>", 'a"', "a/", "a\0"])
def test_set_attribute_invalid_name(bad: str) -> None:
    def el(e: Any) -> None:
        with pytest.raises(ValueError):
            e.set_attribute(bad, "v")

    check("p", el, "<p>", "<p>")


def test_remove_attribute() -> None:
    def el(e: Any) -> None:
        e.remove_attribute("CLASS")
        assert not e.has_attribute("class")

    check("p", el, "<p id=i class='c' title=t>x</p>", "<p id=i title=t>x</p>")


def test_remove_absent_attribute_changes_nothing() -> None:
    check("p", lambda e: e.remove_attribute("nope"), "<P  id=i\n>x</P>", "<P  id=i\n>x</P>")


def test_insertion_order() -> None:
    def el(e: Any) -> None:
        e.before("1")
        e.before("2")
        e.after("3")
        e.after("4")
        e.prepend("5")
        e.prepend("6")
        e.append("7")
        e.append("8")

    check("div", el, "<div>x</div>", "12<div>65x78</div>43")


def test_insertion_text_is_escaped_html_is_not() -> None:
    def el(e: Any) -> None:
        e.before("<b>&amp;\"'</b>")
        e.before("<b>&amp;</b>", html=True)
        e.append("a<b>c")
        e.append("<i>c</i>", html=True)

    check("div", el, "<div>x</div>",
          "&lt;b&gt;&amp;amp;\"'&lt;/b&gt;<b>&amp;</b><div>xa&lt;b&gt;c<i>c</i></div>")


def test_insertion_into_rcdata_is_escaped() -> None:
    check("title", lambda e: e.append("a</title>&"), "<title>t</title>",
          "<title>ta&lt;/title&gt;&amp;</title>")


@pytest.mark.parametrize(
    ("tag", "content"),
    [("script", "if (a < b && c > d) {}"), ("style", "a > b { content: '&amp;' }")],
)
def test_text_in_script_and_style_not_escaped(tag: str, content: str) -> None:
    def el(e: Any) -> None:
        e.prepend(content)
        e.append(content)

    check(tag, el, f"<{tag}>x</{tag}>", f"<{tag}>{content}x{content}</{tag}>")


@pytest.mark.parametrize(
    ("tag", "content"),
    [("script", "</script>"), ("script", "a</SCRIPT >"), ("script", "x<!--y"),
     ("style", "</style>"), ("style", "a</STYLE\t"), ("style", "</style")],
)
def test_text_closing_raw_text_is_refused(tag: str, content: str) -> None:
    def el(e: Any) -> None:
        for method in (e.prepend, e.append, e.set_inner_content):
            with pytest.raises(ValueError):
                method(content)
        e.append(content, html=True)    # deliberate markup is allowed

    check(tag, el, f"<{tag}>x</{tag}>", f"<{tag}>x{content}</{tag}>")


def test_other_end_tags_in_raw_text_are_text() -> None:
    # ('</b>' cannot end a <style>: the tokenizer reads it as text, and so may a handler write it)
    def el(e: Any) -> None:
        e.prepend("</b>")
        e.append("</styles>")

    check("style", el, "<style>x</style>", "<style></b>x</styles></style>")


def test_around_raw_text_element_is_escaped_inside_is_not() -> None:
    def el(e: Any) -> None:
        e.before("<x>")
        e.after("&")
        e.set_inner_content("a<b && c")

    check("script", el, "<script>z</script>", "&lt;x&gt;<script>a<b && c</script>&amp;")


def test_text_replace_in_rcdata_and_cdata() -> None:
    def handler(t: Any) -> None:
        if t.text_type is TextType.CDATA_SECTION:
            with pytest.raises(ValueError):
                t.replace("x]]>y")
            if t.last_in_text_node:
                t.replace("<&>")
            else:
                t.remove()
        else:
            t.replace(t.text.upper())
            if t.last_in_text_node:
                t.after("<&>")

    rw = Rewriter()
    rw.on("title, svg", text=handler)
    out = rewrite_all(rw, "<title>t&amp;</title><svg><![CDATA[c]]></svg>")
    assert out == b"<title>T&amp;&lt;&amp;&gt;</title><svg><![CDATA[<&>]]></svg>"


def test_rename_void_and_implicitly_closed() -> None:
    def rename(e: Any) -> None:
        e.tag_name = "wbr" if e.tag_name == "br" else "section"

    check("br", rename, "<p><br>x</p>", "<p><wbr>x</p>")
    check("p", rename, "<p>a<p>b</p>", "<section>a<section>b</section>")


def test_set_inner_content() -> None:
    check("div", lambda e: e.set_inner_content("<new>"), "<div>a<b>c</b>d</div>e",
          "<div>&lt;new&gt;</div>e")
    check("div", lambda e: e.set_inner_content("<i>n</i>", html=True),
          "<div>a<!--c--><div>d</div></div>e", "<div><i>n</i></div>e")


def test_set_inner_content_after_prepend_append() -> None:
    def el(e: Any) -> None:
        e.prepend("P")
        e.append("A")
        e.set_inner_content("I")

    check("div", el, "<div>x</div>", "<div>I</div>")


def test_set_inner_content_unclosed() -> None:
    check("div", lambda e: e.set_inner_content("I"), "<div>abc<p>def", "<div>I")


def test_replace() -> None:
    check("div", lambda e: e.replace("<R>"), "a<div>b<i>c</i></div>d", "a&lt;R&gt;d")
    check("div", lambda e: e.replace("<R>", html=True), "a<div>b</div>d", "a<R>d")


def test_remove() -> None:
    def el(e: Any) -> None:
        e.remove()
        assert e.removed

    check("div", el, "a<div>b<i>c</i><!--x--></div>d", "ad")


def test_remove_keeps_before_after() -> None:
    def el(e: Any) -> None:
        e.before("B")
        e.after("A")
        e.remove()

    check("div", el, "a<div>b</div>d", "aBAd")


def test_remove_and_keep_content() -> None:
    def el(e: Any) -> None:
        e.remove_and_keep_content()
        assert e.removed

    check("div", el, "a<div class=x>b<i>c</i></div>d", "ab<i>c</i>d")


def test_remove_and_keep_content_with_insertions() -> None:
    def el(e: Any) -> None:
        e.remove_and_keep_content()
        e.before("1")
        e.prepend("2")
        e.append("3")
        e.after("4")

    check("div", el, "<div>x</div>", "12x34")


def test_remove_and_keep_content_with_set_inner_content() -> None:
    """Both orders give the new content without the tags (as lol-html does)."""
    def unwrap_then_inner(e: Any) -> None:
        e.remove_and_keep_content()
        e.set_inner_content("I")

    def inner_then_unwrap(e: Any) -> None:
        e.set_inner_content("I")
        e.remove_and_keep_content()

    check("div", unwrap_then_inner, "a<div>x<b>y</b></div>b", "aIb")
    check("div", inner_then_unwrap, "a<div>x<b>y</b></div>b", "aIb")


def test_removed_flag_initially_false() -> None:
    seen: list[bool] = []
    on_element("p", lambda e: seen.append(e.removed)).rewrite(b"<p>")
    assert seen == [False]


@pytest.mark.parametrize("tag", ["img", "br", "input", "hr", "meta", "source"])
def test_void_elements(tag: str) -> None:
    check(tag, lambda e: e.replace("R"), f"a<{tag} x=y>b", "aRb")
    check(tag, lambda e: e.remove(), f"a<{tag}/>b", "ab")
    check(tag, lambda e: e.remove_and_keep_content(), f"a<{tag}>b", "ab")

    def content(e: Any) -> None:
        assert not e.can_have_content
        e.before("[")
        e.after("]")
        e.prepend("no")
        e.append("no")
        e.set_inner_content("no")
        with pytest.raises(ValueError):
            e.on_end_tag(lambda end: None)

    check(tag, content, f"a<{tag}>b", f"a[<{tag}>]b")


def test_void_element_does_not_swallow_following() -> None:
    check("img", lambda e: e.set_inner_content("X"), "<img><p>x</p>", "<img><p>x</p>")
    check("br", lambda e: e.remove(), "<div><br>x</div>", "<div>x</div>")


def test_self_closing_foreign_element() -> None:
    check("circle", lambda e: e.remove(), "<svg><circle r=1 /><g>x</g></svg>",
          "<svg><g>x</g></svg>")
    check("g", lambda e: e.set_inner_content("I"), "<svg><g/>x</svg>", "<svg><g/>x</svg>")


def test_nested_removals() -> None:
    check("div", lambda e: e.remove(), "<div>a<div>b</div>c</div>d<div>e</div>f", "df")
    check("div", lambda e: e.set_inner_content("I"), "<div>a<div>b</div>c</div>d",
          "<div>I</div>d")

    def outer_keep_inner_remove(e: Any) -> None:
        if e.get_attribute("id") == "o":
            e.remove_and_keep_content()
        else:
            e.remove()

    check("div", outer_keep_inner_remove, "<div id=o>a<div>b</div>c</div>d", "acd")

    def inner_remove_outer_append(e: Any) -> None:
        if e.get_attribute("id") == "o":
            e.append("Z")
        else:
            e.remove()

    check("div", inner_remove_outer_append, "<div id=o>a<div>b</div>c</div>d",
          "<div id=o>acZ</div>d")


def test_handlers_inside_removed_content_change_nothing() -> None:
    rw = Rewriter()
    rw.on("div", element=lambda e: e.remove())
    rw.on("span", element=lambda e: e.after("S"))
    assert rewrite_all(rw, "<div><span>x</span></div><span>y</span>") == b"<span>y</span>S"


def test_element_content_handlers_scope() -> None:
    rw = Rewriter()
    rw.on("p", text=lambda t: t.replace(t.text.upper()), comments=lambda c: c.remove())
    data = "a<p>b<i>c<!--d-->e</i>f</p>g<!--h-->"
    assert rewrite_all(rw, data) == b"a<p>B<i>CE</i>F</p>g<!--h-->"


# --------------------------------------------------------------------------- EndTag


def test_end_tag_handler_explicit() -> None:
    def factory() -> tuple[Any, list[Any]]:
        log: list[Any] = []

        def end(t: Any) -> None:
            log.append((t.name, t.implicit))
            t.before("B")
            t.after("A")

        return on_element("div", lambda e: e.on_end_tag(end)), log

    out, log = runs(factory, "<div>a</DIV>b")
    assert out == b"<div>aB</DIV>Ab"
    assert log == [("div", False)]


def test_end_tag_rename_and_remove() -> None:
    def rename(t: Any) -> None:
        t.name = "span"
        assert t.name == "span"

    check("div", lambda e: e.on_end_tag(rename), "<div>a</div >b", "<div>a</span>b")
    check("div", lambda e: e.on_end_tag(lambda t: t.remove()), "<div>a</div>b", "<div>ab")


def test_end_tag_handlers_order() -> None:
    def el(e: Any) -> None:
        e.on_end_tag(lambda t: t.before("1"))
        e.on_end_tag(lambda t: t.before("2"))
        e.on_end_tag(lambda t: t.after("3"))
        e.on_end_tag(lambda t: t.after("4"))

    check("div", el, "<div>x</div>", "<div>x12</div>43")


def test_end_tag_after_element_after() -> None:
    def el(e: Any) -> None:
        e.after("E")
        e.on_end_tag(lambda t: t.after("T"))

    check("div", el, "<div>x</div>y", "<div>x</div>TEy")


IMPLICIT_CASES = [
    # (input, output with end.before("[") and end.after("]"), implicit flags)
    ("<div><p>a</div>", "<div><p>a[]</div>", [True]),
    ("<p>a<p>b", "<p>a[]<p>b[]", [True, True]),
    ("<p>a<div>b</div>", "<p>a[]<div>b</div>", [True]),
    ("<p>a", "<p>a[]", [True]),
    ("<p>a</p>", "<p>a[</p>]", [False]),
    ("<ul><li>a<li>b</ul>", "<ul><li>a[]<li>b[]</ul>", [True, True]),
]


@pytest.mark.parametrize(("data", "expected", "flags"), IMPLICIT_CASES)
def test_end_tag_handler_implicit(data: str, expected: str, flags: list[bool]) -> None:
    def factory() -> tuple[Any, list[Any]]:
        log: list[Any] = []

        def end(t: Any) -> None:
            log.append(t.implicit)
            t.before("[")
            t.after("]")

        return on_element("p, li", lambda e: e.on_end_tag(end)), log

    out, log = runs(factory, data)
    assert out == expected.encode()
    assert log == flags


def test_end_tag_implicit_rename_and_remove_do_nothing() -> None:
    def rename(t: Any) -> None:
        assert t.implicit
        t.name = "x"
        t.remove()

    check("p", lambda e: e.on_end_tag(rename), "<div><p>a</div>", "<div><p>a</div>")


def test_implicit_end_closes_removed_content() -> None:
    check("p", lambda e: e.set_inner_content("I"), "<p>a<div>b</div>", "<p>I<div>b</div>")
    check("p", lambda e: e.remove(), "<p>a<p>b", "")
    check("p", lambda e: e.remove(), "<div><p>a</div>c", "<div></div>c")


def test_end_tag_expired() -> None:
    kept: list[Any] = []
    on_element("div", lambda e: e.on_end_tag(kept.append)).rewrite(b"<div></div>")
    with pytest.raises(UnitExpired):
        kept[0].before("x")


# --------------------------------------------------------------------------- TextChunk


def text_log(selector: str | None, data: bytes | str) -> list[list[Any]]:
    """For every chunking: the merged text pieces per node, as (text, raw, type)."""
    data = as_bytes(data)
    results = []
    for cut in chunkings(data, random_splits=6):
        nodes: list[Any] = []
        current: list[Any] = []

        def text(t: Any, nodes: list[Any] = nodes, current: list[Any] = current) -> None:
            current.append((t.text, t.raw, t.text_type))
            if t.last_in_text_node:
                nodes.append(("".join(c[0] for c in current), b"".join(c[1] for c in current),
                              {c[2] for c in current}))
                current.clear()

        rw = Rewriter()
        if selector is None:
            rw.on_document(text=text)
        else:
            rw.on(selector, text=text)
        assert run_cut(rw, cut) == data
        assert current == [], "text node without a last chunk"
        results.append(nodes)
    for r in results[1:]:
        assert r == results[0]
    return results[0]


def test_text_decoded_raw_and_type() -> None:
    nodes = text_log(None, "a &amp; b&lt;<title>t&amp;</title><script>s&amp;</script>"
                           "<style>c&amp;</style><textarea>x&#65;</textarea>\r\nz")
    assert nodes == [
        ("a & b<", b"a &amp; b&lt;", {TextType.DATA}),
        ("t&", b"t&amp;", {TextType.RCDATA}),
        ("s&amp;", b"s&amp;", {TextType.SCRIPT_DATA}),
        ("c&amp;", b"c&amp;", {TextType.RAWTEXT}),
        ("xA", b"x&#65;", {TextType.RCDATA}),
        ("\nz", b"\r\nz", {TextType.DATA}),
    ]


def test_text_nodes_split_by_tags_and_comments() -> None:
    nodes = text_log(None, "a<b>b</b>c<!--x-->d")
    assert [n[0] for n in nodes] == ["a", "b", "c", "d"]


def test_text_selector_scope() -> None:
    nodes = text_log("p", "x<p>a<i>b</i>c</p>y")
    assert [n[0] for n in nodes] == ["a", "b", "c"]


def test_text_selector_scope_ends_where_browser_closes() -> None:
    nodes = text_log("p", "<p>a<div>b</div>c<p>d<li>e")
    assert [n[0] for n in nodes] == ["a", "d"]


def test_text_cdata_type() -> None:
    nodes = text_log(None, "<svg><![CDATA[a<b]]></svg>")
    assert [(n[0], n[2]) for n in nodes] == [("a<b", {TextType.CDATA_SECTION})]


def test_text_replace_remove_before_after() -> None:
    def factory(fn: Callable[[Any], None]) -> Any:
        rw = Rewriter()
        rw.on("p", text=fn)
        return rw

    def last_only(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        def handler(t: Any) -> None:
            if t.last_in_text_node:
                fn(t)
            else:
                t.remove()
        return handler

    data = "<p>hello &amp; bye</p>"
    assert rewrite_all(factory(last_only(lambda t: t.replace("<x>"))), data) == \
        b"<p>&lt;x&gt;</p>"
    assert rewrite_all(factory(last_only(lambda t: t.replace("<x>", html=True))), data) == \
        b"<p><x></p>"
    assert rewrite_all(factory(lambda t: t.remove()), data) == b"<p></p>"

    def around(t: Any) -> None:
        if t.last_in_text_node:
            t.after("<]>")
            t.after("[", html=True)

    assert rewrite_all(factory(around), "<p>ab</p>") == b"<p>ab[&lt;]&gt;</p>"


def test_text_replace_in_script() -> None:
    def handler(t: Any) -> None:
        if t.last_in_text_node:
            t.replace("a < b && c")
            with pytest.raises(ValueError):
                t.after("</script>")
        else:
            t.remove()

    rw = Rewriter()
    rw.on("script", text=handler)
    assert rewrite_all(rw, "<script>x</script>") == b"<script>a < b && c</script>"


def test_text_only_reading_keeps_invalid_bytes() -> None:
    data = b"<p>\xff\xfe a&amp \x00 \r\n \xe2\x82 &#0; \xed\xa0\x80</p>"
    rw = Rewriter()
    rw.on_document(text=lambda t: (t.text, t.raw, t.removed))
    assert rewrite_all(rw, data) == data


def test_text_removed_flag() -> None:
    seen: list[bool] = []

    def handler(t: Any) -> None:
        seen.append(t.removed)
        t.replace("")
        seen.append(t.removed)

    rw = Rewriter()
    rw.on_document(text=handler)
    rw.rewrite(b"a")
    assert seen[:2] == [False, True]


# --------------------------------------------------------------------------- Comment


def comments_rw(fn: Callable[[Any], None]) -> Any:
    rw = Rewriter()
    rw.on_document(comments=fn)
    return rw


def test_comment_text() -> None:
    seen: list[Any] = []

    def factory() -> tuple[Any, list[Any]]:
        seen = []
        return comments_rw(lambda c: seen.append(c.text)), seen

    _, seen = runs(factory, "<!-- a &amp; b --><!----><!--x\r\ny-->")
    assert seen == [" a &amp; b ", "", "x\ny"]


def test_comment_set_text() -> None:
    def fn(c: Any) -> None:
        c.text = "new"
        assert c.text == "new"

    assert rewrite_all(comments_rw(fn), "a<!-- old -->b") == b"a<!--new-->b"


@pytest.mark.parametrize("bad", ["a-->b", "x--!>", "-", ">x"])
def test_comment_set_text_invalid(bad: str) -> None:
    def fn(c: Any) -> None:
        with pytest.raises(ValueError):
            c.text = bad

    assert rewrite_all(comments_rw(fn), "<!--c-->") == b"<!--c-->"


def test_comment_before_after_replace_remove() -> None:
    def around(c: Any) -> None:
        c.before("1")
        c.before("<2>", html=True)
        c.after("3")
        c.after("<4>")

    assert rewrite_all(comments_rw(around), "<!--c-->") == b"1<2><!--c-->&lt;4&gt;3"

    def replace(c: Any) -> None:
        c.replace("<r>")
        assert c.removed

    assert rewrite_all(comments_rw(replace), "a<!--c-->b") == b"a&lt;r&gt;b"
    assert rewrite_all(comments_rw(lambda c: c.replace("<r>", html=True)), "<!--c-->") == b"<r>"
    assert rewrite_all(comments_rw(lambda c: c.remove()), "a<!--c-->b<!---->") == b"ab"


# --------------------------------------------------------------------------- Doctype, DocumentEnd


def test_doctype() -> None:
    data = ('<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
            '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"><p>x')

    def factory() -> tuple[Any, list[Any]]:
        seen: list[Any] = []
        rw = Rewriter()
        rw.on_document(doctype=lambda d: seen.append((d.name, d.public_id, d.system_id)))
        return rw, seen

    _, seen = runs(factory, data)
    assert seen == [("html", "-//W3C//DTD XHTML 1.0 Strict//EN",
                     "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd")]
    _, seen = runs(factory, "<!doctype HTML>")
    assert seen == [("html", None, None)]


def test_doctype_remove() -> None:
    rw = Rewriter()
    rw.on_document(doctype=lambda d: d.remove())
    assert rewrite_all(rw, "<!DOCTYPE html>\n<p>x") == b"\n<p>x"


def test_document_end_append() -> None:
    rw = Rewriter()
    rw.on_document(end=lambda e: (e.append("<a&b>"), e.append("<i>x</i>", html=True)))
    assert rewrite_all(rw, "<p>x") == b"<p>x&lt;a&amp;b&gt;<i>x</i>"
    assert rewrite_all(rw, "") == b"&lt;a&amp;b&gt;<i>x</i>"


# --------------------------------------------------------------------------- UnitExpired


def test_units_expire_after_their_handler() -> None:
    kept: dict[str, Any] = {}
    rw = Rewriter()
    rw.on("p", element=lambda e: kept.setdefault("element", e),
          text=lambda t: kept.setdefault("text", t),
          comments=lambda c: kept.setdefault("comment", c))
    rw.on_document(doctype=lambda d: kept.setdefault("doctype", d),
                   end=lambda e: kept.setdefault("end", e))
    out = rw.rewrite(b"<!DOCTYPE html><p>a<!--c--></p>")
    assert out == b"<!DOCTYPE html><p>a<!--c--></p>"
    calls: list[Callable[[], Any]] = [
        lambda: kept["element"].set_attribute("a", "b"),
        lambda: kept["element"].remove_attribute("a"),
        lambda: kept["element"].before("x"),
        lambda: kept["element"].after("x"),
        lambda: kept["element"].prepend("x"),
        lambda: kept["element"].append("x"),
        lambda: kept["element"].set_inner_content("x"),
        lambda: kept["element"].replace("x"),
        lambda: kept["element"].remove(),
        lambda: kept["element"].remove_and_keep_content(),
        lambda: kept["element"].on_end_tag(lambda t: None),
        lambda: setattr(kept["element"], "tag_name", "x"),
        lambda: kept["text"].replace("x"),
        lambda: kept["text"].before("x"),
        lambda: kept["text"].after("x"),
        lambda: kept["text"].remove(),
        lambda: kept["comment"].replace("x"),
        lambda: kept["comment"].before("x"),
        lambda: kept["comment"].remove(),
        lambda: setattr(kept["comment"], "text", "x"),
        lambda: kept["doctype"].remove(),
        lambda: kept["end"].append("x"),
    ]
    for call in calls:
        with pytest.raises(UnitExpired):
            call()
    assert issubclass(UnitExpired, HtmlStreamError)


def test_elements_kept_by_handlers_stay_as_they_were_left() -> None:
    # The engine reuses an Element that nothing else holds once its work is done: one that a
    # handler kept (itself, or a bound method of it) must not change as later elements pass.
    kept: list[Any] = []
    getters: list[Any] = []
    seen = 0

    def handler(el: Any) -> None:
        nonlocal seen
        seen += 1
        if seen % 2:
            el.set_attribute("href", f"new{seen}")
            kept.append(el)
        elif seen % 4 == 0:
            getters.append(el.get_attribute)

    rw = Rewriter()
    rw.on("a, img", element=handler)
    doc = (b'<a href=1 x=1 y=2>a</a><img src=2><a>b</a><a href=4 q>c</a>'
           b'<img id=5 alt="" src=5 title=t><a href=6>d</a><a HREF=7 class=c id=i z>e</a><img>')
    out = rw.rewrite(doc)
    assert out == (b'<a href="new1" x=1 y=2>a</a><img src=2><a href="new3">b</a><a href=4 q>c</a>'
                   b'<img id=5 alt="" src=5 title=t href="new5"><a href=6>d</a>'
                   b'<a HREF="new7" class=c id=i z>e</a><img>')
    assert [(el.tag_name, el.raw, el.get_attribute("href"), el.modified) for el in kept] == [
        ("a", b"<a href=1 x=1 y=2>", "new1", True), ("a", b"<a>", "new3", True),
        ("img", b'<img id=5 alt="" src=5 title=t>', "new5", True),
        ("a", b"<a HREF=7 class=c id=i z>", "new7", True)]
    assert kept[2].attributes == [("id", "5"), ("alt", ""), ("src", "5"), ("title", "t"),
                                  ("href", "new5")]
    assert [d.name for d in kept[3].attribute_details()] == ["href", "class", "id", "z"]
    assert [get("href") for get in getters] == ["4", None]
    for el in kept:
        with pytest.raises(UnitExpired):
            el.set_attribute("a", "b")


def test_a_reused_element_starts_afresh() -> None:
    # what a handler did to one element (a void one, an element with content) is not found
    # on the next: every change below is made on the first <a> or <img> of each pair only
    def first_only(el: Any) -> None:
        if el.get_attribute("id") == "1":
            el.before("[b]")
            el.after("[a]")
            el.set_attribute("k", "v")
            el.remove_attribute("x")
            el.tag_name = el.tag_name + "2"
        else:
            assert not el.modified and el.get_attribute("k") is None
            assert el.get_attribute("x") == "2" and el.tag_name in ("a", "img")

    rw = Rewriter()
    rw.on("[id]", element=first_only)
    assert rewrite_all(rw, "<img id=1 x=1><img id=2 x=2><a id=1 x=1>p</a><a id=2 x=2>q</a>") == (
        b'[b]<img2 id=1 k="v">[a]<img id=2 x=2>[b]<a2 id=1 k="v">p</a2>[a]<a id=2 x=2>q</a>')


# --------------------------------------------------------------------------- errors


class Boom(Exception):
    pass


def failing_cases() -> list[tuple[str, Callable[[Any, Exception], None], bytes]]:
    def raise_(exc: Exception) -> None:
        raise exc

    return [
        ("element", lambda rw, exc: rw.on("b", element=lambda e: raise_(exc)),
         b"<p>a</p><b>x</b><i>y</i>"),
        ("text", lambda rw, exc: rw.on("b", text=lambda t: raise_(exc)),
         b"<p>a</p><b>x</b>"),
        ("comment", lambda rw, exc: rw.on_document(comments=lambda c: raise_(exc)),
         b"<p>a</p><!--x-->"),
        ("doctype", lambda rw, exc: rw.on_document(doctype=lambda d: raise_(exc)),
         b"<!DOCTYPE html><p>a</p>"),
        ("end tag", lambda rw, exc: rw.on("b", element=lambda e: e.on_end_tag(
            lambda t: raise_(exc))), b"<p>a</p><b>x</b>y"),
        ("implicit end tag", lambda rw, exc: rw.on("b", element=lambda e: e.on_end_tag(
            lambda t: raise_(exc))), b"<p>a</p><b>x"),
        ("document end", lambda rw, exc: rw.on_document(end=lambda e: raise_(exc)),
         b"<p>a</p>"),
    ]


@pytest.mark.parametrize("kind", [c[0] for c in failing_cases()])
def test_handler_exception_propagates_and_fails_stream(kind: str) -> None:
    (setup, data), = [(s, d) for k, s, d in failing_cases() if k == kind]
    exc = Boom(kind)
    rw = Rewriter()
    setup(rw, exc)

    with pytest.raises(Boom) as info:
        rw.rewrite(data)
    assert info.value is exc

    for cut in chunkings(data, random_splits=4):
        stream = rw.stream()
        out = b""
        with pytest.raises(Boom) as info:
            for chunk in cut:
                out += stream.feed(chunk)
            out += stream.close()
        assert info.value is exc
        assert data.startswith(out), "bytes returned before the error must be final"
        with pytest.raises(HtmlStreamError):
            stream.feed(b"more")
        with pytest.raises(HtmlStreamError):
            stream.close()


def test_base_exception_propagates() -> None:
    rw = Rewriter()

    def stop(e: Any) -> None:
        raise KeyboardInterrupt

    rw.on("p", element=stop)
    stream = rw.stream()
    with pytest.raises(KeyboardInterrupt):
        stream.feed(b"<p>")
    with pytest.raises(HtmlStreamError):
        stream.feed(b"x")


def test_rewriter_usable_after_failed_stream() -> None:
    calls = []

    def maybe_fail(e: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise Boom
        e.set_attribute("ok", "1")

    rw = on_element("p", maybe_fail)
    with pytest.raises(Boom):
        rw.rewrite(b"<p>")
    assert rw.rewrite(b"<p>") == b'<p ok="1">'


def test_feed_after_close() -> None:
    stream = Rewriter().stream()
    assert stream.feed(b"<p>") + stream.close() == b"<p>"
    with pytest.raises(HtmlStreamError):
        stream.feed(b"x")
    with pytest.raises(HtmlStreamError):
        stream.close()


def test_feed_str_is_refused() -> None:
    stream = Rewriter().stream()
    with pytest.raises(TypeError):
        stream.feed("<p>")  # type: ignore[arg-type]


def test_buffer_limit() -> None:
    rw = Rewriter(max_buffer_size=256)
    stream = rw.stream()
    with pytest.raises(BufferLimitExceeded):
        stream.feed(b"<div ")
        for _ in range(100):
            stream.feed(b"a" * 10)
    with pytest.raises(HtmlStreamError):
        stream.feed(b">")


# --------------------------------------------------------------------------- inputs and outputs


def test_rewrite_str_gives_str() -> None:
    rw = on_element("p", lambda e: e.set_attribute("t", "caf\u00e9"))
    out = rw.rewrite("<p>\u20ac \U0001F600</p>")
    assert isinstance(out, str)
    assert out == '<p t="caf\u00e9">\u20ac \U0001F600</p>'


def test_rewrite_bytes_like() -> None:
    rw = on_element("p", lambda e: e.append("!"))
    assert rw.rewrite(bytearray(b"<p>a</p>")) == b"<p>a!</p>"
    assert rw.rewrite(memoryview(b"<p>a</p>")) == b"<p>a!</p>"
    stream = rw.stream()
    assert stream.feed(bytearray(b"<p>a")) + stream.feed(memoryview(b"</p>")) + \
        stream.close() == b"<p>a!</p>"


@pytest.mark.parametrize("first", [b"<p>a", b"p>a", b"\xef\xbb\xbf<p>a", b"\xef", b"\xfe",
                                   b"\xff\xfe", b"", b"\xc3\xa9<p>"])
@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_first_chunk_starts_the_engine_either_way(first: bytes, kind: type) -> None:
    # RewriterStream.feed starts the engine itself on a first bytes chunk that cannot hold a
    # byte order mark; every other first chunk takes the general start (decide): same output.
    rw = on_element("p", lambda e: e.append("!"))
    rest = [b"b</p>", b"<p>c</p>"]
    expected = rw.rewrite(first + b"".join(rest))
    stream = rw.stream()
    out = stream.feed(kind(first)) + b"".join(stream.feed(c) for c in rest) + stream.close()
    assert out == expected
    plain = Rewriter()
    stream = plain.stream()
    out = stream.feed(kind(first)) + b"".join(stream.feed(c) for c in rest) + stream.close()
    assert out == first + b"".join(rest)
    assert stream.offset == len(out)


def test_first_chunk_plain_start_keeps_the_stream_checks() -> None:
    rw = Rewriter()
    stream = rw.stream()
    assert stream.close() == b""
    with pytest.raises(HtmlStreamError):
        stream.feed(b"<p>")
    stream = rw.stream()
    assert stream.feed(b"<p>a") == b"<p>a"
    assert stream.close() == b""
    with pytest.raises(HtmlStreamError):
        stream.feed(b"<p>")
    with pytest.raises(TypeError):
        rw.stream().feed("<p>")     # type: ignore[arg-type]


def test_settings_changed_later_apply_to_streams_opened_later() -> None:
    # The settings are kept in the rewriter's RewriterSettings, which a stream reads when it
    # opens (and when it starts its engine): a change applies to the streams opened after it.
    rw = Rewriter()
    assert (rw.scripting, rw.strict, rw.sniff, rw.transcode, rw.on_limit) == \
        (True, False, False, False, "raise")
    assert rw._scanner is True and rw._lazy_mirror is True
    rw.on("p", element=lambda e: e.append("!"))
    noscript = b"<noscript><p>a</p></noscript>"
    opened = rw.stream()
    assert rw.rewrite(noscript) == noscript             # raw text: scripting is on
    rw.scripting = False
    assert rw.scripting is False
    assert rw.rewrite(noscript) == b"<noscript><p>a!</p></noscript>"
    assert opened.feed(noscript) + opened.close() == b"<noscript><p>a!</p></noscript>"
    rw.max_buffer_size = 16
    with pytest.raises(BufferLimitExceeded):
        rw.stream().feed(b"<!--" + b"x" * 100)
    rw.on_limit = "passthrough"
    stream = rw.stream()
    assert stream.feed(b"<!--" + b"x" * 100) + stream.close() == b"<!--" + b"x" * 100
    assert stream.passthrough_reason is not None
    rw.sniff = True
    stream = rw.stream()
    assert stream.passthrough_reason is None
    assert stream.feed(b'{"a": 1}') + stream.close() == b'{"a": 1}'
    assert stream.passthrough_reason == "not HTML: JSON"


def test_stream_encoding_checks_follow_the_settings() -> None:
    # Streams remember the labels they looked up, except where a setting changes the verdict.
    rw = Rewriter(encoding="iso-2022-jp", transcode=True)
    stream = rw.stream()
    assert stream.feed(b"<p>a") + stream.close() == b"\xef\xbb\xbf<p>a"
    assert stream.output_encoding == "utf-8"
    rw.transcode = False
    for _ in range(2):
        with pytest.raises(EncodingError):
            rw.stream()
        with pytest.raises(EncodingError):
            rw.stream(encoding="hz-gb-2312")            # the replacement encoding
    stream = rw.stream(encoding="latin1")
    assert (stream.encoding, stream.output_encoding) == ("windows-1252", "windows-1252")
    assert rw.stream(encoding="latin1").encoding == "windows-1252"


def test_rewrite_iter() -> None:
    rw = on_element("p", lambda e: e.append("!"))
    chunks = [b"<p>a", b"", b"</p", b"><p>b</p>"]
    parts = list(rw.rewrite_iter(chunks))
    assert b"".join(parts) == b"<p>a!</p><p>b!</p>"
    assert all(parts)
    assert b"".join(rw.rewrite_iter(iter([]))) == b""


def test_rewrite_aiter() -> None:
    rw = on_element("p", lambda e: e.append("!"))

    async def source() -> AsyncIterator[bytes]:
        for chunk in [b"<p>a", b"", b"</p", b"><p>b</p>"]:
            await asyncio.sleep(0)
            yield chunk

    async def main() -> list[bytes]:
        return [part async for part in rw.rewrite_aiter(source())]

    parts = asyncio.run(main())
    assert b"".join(parts) == b"<p>a!</p><p>b!</p>"
    assert all(parts)


def test_rewrite_file_paths(tmp_path: Path) -> None:
    src = tmp_path / "in.html"
    dst = tmp_path / "out.html"
    body = b"<p>x</p>" * 5000
    src.write_bytes(body)
    rw = on_element("p", lambda e: e.set_attribute("a", "1"))
    rw.rewrite_file(src, dst)
    assert dst.read_bytes() == b'<p a="1">x</p>' * 5000
    rw.rewrite_file(str(src), str(dst), chunk_size=7)
    assert dst.read_bytes() == b'<p a="1">x</p>' * 5000


def test_rewrite_file_objects() -> None:
    src = io.BytesIO(b"<p>x</p><p>y</p>")
    dst = io.BytesIO()
    on_element("p", lambda e: e.remove()).rewrite_file(src, dst, chunk_size=3)
    assert dst.getvalue() == b""
    assert not dst.closed and not src.closed


def test_windows_1252_encoding() -> None:
    seen: list[Any] = []

    def el(e: Any) -> None:
        seen.append(e.get_attribute("t"))
        e.set_attribute("u", "\u20ac\u00e9\u4e00")
        e.append("\u00e9")

    rw = on_element("p", el, encoding="windows-1252")
    out = rewrite_all(rw, b"<p t='\x80\xe9'>\xe9</p>")
    assert seen[0] == "\u20ac\u00e9"
    assert out == b"<p t='\x80\xe9' u=\"\x80\xe9&#19968;\">\xe9\xe9</p>"


def test_scripting_flag() -> None:
    data = "<noscript><p>x</p></noscript>"
    on = on_element("p", lambda e: e.remove())
    off = on_element("p", lambda e: e.remove(), scripting=False)
    assert rewrite_all(on, data) == data.encode()
    assert rewrite_all(off, data) == b"<noscript></noscript>"


def test_strict_flag_on_plain_document() -> None:
    rw = on_element("p", lambda e: e.append("!"), strict=True)
    assert rewrite_all(rw, "<!DOCTYPE html><p>a</p>") == b"<!DOCTYPE html><p>a!</p>"


# --------------------------------------------------------------------------- latency


@pytest.mark.parametrize("with_handlers", [False, True])
def test_output_latency(with_handlers: bool) -> None:
    """Each feed returns all its input except, at most, the unfinished token at its end."""
    rw = Rewriter()
    if with_handlers:
        rw.on("p", element=lambda e: e.get_attribute("x"), text=lambda t: t.text)
        rw.on_document(text=lambda t: t.text, comments=lambda c: c.text)
    steps = [  # (chunk, how many bytes of the input so far may still be held back)
        (b"<p>hello", 0),
        (b" world<b", 2),           # an unfinished tag
        (b">x<!-", 3),              # an unfinished comment
        (b"- c -->y &am", 3),       # a possible character reference
        (b"p; z\r", 1),             # a CR that may start a CRLF
        (b"\n", 0),
    ]
    stream = rw.stream()
    fed = total = b""
    for chunk, held in steps:
        fed += chunk
        total += stream.feed(chunk)
        assert fed.startswith(total)
        assert len(total) >= len(fed) - held, (fed, total)
    assert total + stream.close() == fed


def test_output_latency_with_changes() -> None:
    rw = Rewriter()
    rw.on("div", element=lambda e: (e.prepend("P"), e.set_attribute("a", "1")))
    stream = rw.stream()
    assert stream.feed(b"<div>hello") == b'<div a="1">Phello'
    assert stream.feed(b"</div") == b""
    assert stream.feed(b">x") == b"</div>x"


def test_output_latency_progress() -> None:
    """Feeding a long document one line at a time: each feed returns everything but at most
    the last unfinished token."""
    rw = on_element("a", lambda e: e.set_attribute("href", "#"))
    lines = [b"<ul>\n"] + [b'<li><a href="/%d">item %d</a></li>\n' % (i, i) for i in range(50)]
    stream = rw.stream()
    total = b""
    for line in lines:
        total += stream.feed(line)
        assert total.endswith(b"</li>\n") or total == b"<ul>\n"
    assert stream.close() == b""


# --------------------------------------------------------------------------- reuse and threads


def busy_rewriter() -> Any:
    rw = Rewriter()
    rw.on("a[href]", element=lambda e: e.set_attribute("href", e.get_attribute("href") + "#x"))
    rw.on("p", text=lambda t: t.replace(t.text.upper()))
    rw.on("div", element=lambda e: e.on_end_tag(lambda t: t.before("<!--/div-->", html=True)))
    rw.on_document(comments=lambda c: c.remove(), end=lambda e: e.append("END"))
    return rw


DOCS = [
    b"<div><p>para <a href=/a>link</a></p><!--c--></div>",
    b"<p>one<p>two<div>three",
    b"<!DOCTYPE html><title>t</title><div><div>nested</div></div>",
] + [b"<div>" + b"<p>x %d <a href='/%d'>y</a>" % (i, i) * 40 + b"</div>" for i in range(5)]


def test_reused_for_several_documents() -> None:
    expected = [busy_rewriter().rewrite(d) for d in DOCS]
    rw = busy_rewriter()
    assert [rw.rewrite(d) for d in DOCS] == expected
    assert [rw.rewrite(d) for d in reversed(DOCS)] == expected[::-1]
    # interleaved streams of one rewriter
    streams = [rw.stream() for _ in DOCS]
    outs = [b""] * len(DOCS)
    pos = [0] * len(DOCS)
    while any(p < len(d) for p, d in zip(pos, DOCS, strict=True)):
        for i, d in enumerate(DOCS):
            if pos[i] < len(d):
                outs[i] += streams[i].feed(d[pos[i] : pos[i] + 7])
                pos[i] += 7
    outs = [o + s.close() for o, s in zip(outs, streams, strict=True)]
    assert outs == expected


def test_threads() -> None:
    rw = busy_rewriter()
    expected = [rw.rewrite(d) for d in DOCS]
    results: dict[int, list[bytes]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(n: int) -> None:
        try:
            barrier.wait()
            got = []
            for _ in range(20):
                for d in DOCS:
                    stream = rw.stream()
                    out = b"".join(stream.feed(d[i : i + 13]) for i in range(0, len(d), 13))
                    got.append(out + stream.close())
            results[n] = got
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for n in range(4):
        assert results[n] == expected * 20


@pytest.mark.parametrize("kwargs", [{}, {"adjust_charset_on_meta_tag": True},
                                    {"transcode": True}, {"sniff": True}])
@pytest.mark.parametrize("meta", [b"", b"<meta charset=windows-1252>"])
def test_closed_stream_is_freed_without_the_garbage_collector(kwargs: dict[str, Any],
                                                              meta: bytes) -> None:
    # Nothing refers back to a closed stream (the lexer and sink are parted, the sink's
    # <meta charset> switch dropped): it goes as soon as its last reference does.
    import gc
    import weakref

    rw = Rewriter(**kwargs).on("p", element=lambda e: e.append("!"))
    gc.disable()
    try:
        for chunks in chunkings(meta + b"<p>a</p><p>b", random_splits=2, two_way=False):
            stream = rw.stream()
            for chunk in chunks:
                stream.feed(chunk)
            stream.close()
            ref = weakref.ref(stream)
            del stream
            assert ref() is None
    finally:
        gc.enable()


def test_adjust_charset_set_later_applies_to_streams_opened_later() -> None:
    texts: list[str] = []
    rw = Rewriter().on("p", text=lambda t: texts.append(t.text))
    data = b"<meta charset=windows-1252><p>caf\xe9</p>"
    for adjust, expected in ((False, "caf\ufffd"), (True, "caf\xe9"), (False, "caf\ufffd")):
        rw.adjust_charset_on_meta_tag = adjust
        for chunks in chunkings(data, random_splits=2, two_way=False):
            texts.clear()
            stream = rw.stream()
            assert b"".join(stream.feed(c) for c in chunks) + stream.close() == data
            assert "".join(texts) == expected
            assert stream.encoding == ("windows-1252" if adjust else "utf-8")
