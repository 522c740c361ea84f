"""htmlstream.extract, Extractor and Field: records, sources, early stop, chunk invariance."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

import htmlstream as hs
from chunking import chunkings
from datapaths import corpus_dir
from htmlstream import Extractor, Field, extract
from http_servers import Origin, Reply

HEAD_ONLY = {
    "title": "title::text",
    "og_title": 'meta[property="og:title"]::attr(content)',
    "canonical": "link[rel=canonical]::attr(href)",
}

PAGE = (b"<!DOCTYPE html><html><head><meta charset=utf-8><title>The &amp; title</title>"
        b'<meta property="og:title" content="OG &quot;t&quot;">'
        b'<link rel=canonical href="https://example.com/p">'
        b"</head><body><h1>Head<b>line</b></h1>"
        b'<ul><li><a href="/1">one</a><li><a href="/2">two</a><li><a>none</a></ul>'
        b'<div class=price>12 <span>EUR</span></div>' + b"<p>filler</p>" * 20000
        + b"</body></html>")


def record(data: bytes, fields: Mapping[str, str | Field], **options: Any) -> dict[str, Any]:
    """The record of ``data`` fed in every chunking (the same in all), fed to the end."""
    first: dict[str, Any] | None = None
    for chunks in chunkings(data, random_splits=4, split_samples=8):
        ex = Extractor(fields, **options)
        for chunk in chunks:
            ex.feed(chunk)
        rec = ex.close()
        if first is None:
            first = rec
        assert rec == first, chunks
    assert first is not None
    return first


# ---------------------------------------------------------------------------- Field.parse


@pytest.mark.parametrize(("spec", "field"), [
    ("title::text", Field("title")),
    ("title", Field("title")),
    ("  h1  ", Field("h1")),
    ("a::attr(href)", Field("a", attr="href")),
    ("a::attr( 'data-x' )", Field("a", attr="data-x")),
    ("div.price::html", Field("div.price", html=True)),
    ("a::attr(href)*", Field("a", attr="href", many=True)),
    ("li*", Field("li", many=True)),
    ("li::text *", Field("li", many=True)),
    ("ul > *", Field("ul > *")),
    ("*", Field("*")),
    ("ul>*", Field("ul>*")),
    ("ul *::text*", Field("ul *", many=True)),
    ("a[href$='*']", Field("a[href$='*']")),
])
def test_field_parse(spec: str, field: Field) -> None:
    assert Field.parse(spec) == field


@pytest.mark.parametrize("spec", ["a::attr()", "a::href", "::text", "", "a[", "p::text::html"])
def test_field_parse_errors(spec: str) -> None:
    with pytest.raises(hs.SelectorError):
        Field.parse(spec)


def test_field_checks() -> None:
    with pytest.raises(ValueError):
        Field("a", attr="href", html=True)
    with pytest.raises(ValueError):
        Field("a", text=False)
    with pytest.raises(ValueError):
        Field("a", limit=2)
    with pytest.raises(ValueError):
        Field("a", many=True, limit=0)
    assert Field("a", attr="x").kind == "attr"
    assert Field("a", html=True).kind == "html"
    assert Field("a").kind == "text"


# ---------------------------------------------------------------------------- records


def test_record() -> None:
    fields: dict[str, str | Field] = {
        **HEAD_ONLY,
        "h1": "h1",
        "h1_html": "h1::html",
        "links": "a::attr(href)*",
        "link_texts": "li a*",
        "price": Field("div.price"),
        "two_items": Field("li", many=True, limit=2),
        "missing": "table td",
        "missing_many": "table td*",
    }
    assert record(PAGE[:2000], fields) == {
        "title": "The & title",
        "og_title": 'OG "t"',
        "canonical": "https://example.com/p",
        "h1": "Headline",
        "h1_html": "Head<b>line</b>",
        "links": ["/1", "/2"],
        "link_texts": ["one", "two", "none"],
        "price": "12 EUR",
        "two_items": ["one", "two"],
        "missing": None,
        "missing_many": [],
    }


def test_many_in_document_order() -> None:
    """Nested matches end innermost first; the list is in document (start tag) order."""
    html = b"<div>a<div>b<div>c</div></div></div><div>d</div>"
    assert record(html, {"d": "div*"}) == {"d": ["abc", "bc", "c", "d"]}
    assert record(html, {"d": "div"}) == {"d": "abc"}
    assert record(html, {"d": Field("div", many=True, limit=2)}) == {"d": ["abc", "bc"]}


def test_attr_first_element_that_has_it() -> None:
    assert record(b"<a>x</a><a href=y>z</a>", {"h": "a::attr(href)"}) == {"h": "y"}
    assert record(b"<a href>x</a>", {"h": "a::attr(href)"}) == {"h": ""}


def test_truncated() -> None:
    ex = Extractor({"p": "p", "q": "q"}, max_bytes=4)
    ex.feed(b"<p>abcdefgh</p><q>abc</q>")
    assert ex.close() == {"p": "abcd", "q": "abc"}
    assert ex.truncated == ["p"]
    ex = Extractor({"p": "p"}, max_bytes=4, on_limit="error")
    with pytest.raises(hs.BufferLimitExceeded):
        ex.feed(b"<p>abcdefgh</p>")


def test_encodings() -> None:
    doc = b"<meta charset=windows-1252><title>caf\xe9</title>"
    assert record(doc, {"t": "title"}) == {"t": "café"}
    assert record(b"<title>caf\xe9</title>", {"t": "title"}, encoding="latin1") == {"t": "café"}
    # a declared encoding wins over <meta charset>
    assert record("<meta charset=utf-8><title>café</title>".encode("windows-1252"),
                  {"t": "title"}, encoding="windows-1252") == {"t": "café"}
    assert extract("<title>café ☺</title>", {"t": "title"}) == {"t": "café ☺"}
    assert extract(b"\xef\xbb\xbf<title>caf\xc3\xa9</title>", {"t": "title"},
                   encoding="windows-1252") == {"t": "café"}


def test_no_fields() -> None:
    assert extract(b"<p>x", {}) == {}
    assert Extractor({}).done


def test_bad_arguments() -> None:
    with pytest.raises(TypeError):
        extract(b"", {"a": 1})          # type: ignore[dict-item]
    with pytest.raises(TypeError):
        extract(b"", ["a"])             # type: ignore[arg-type]
    with pytest.raises(TypeError):
        extract(12, {"a": "a"})
    with pytest.raises(ValueError):
        Extractor({"a": "a"}, on_limit="ignore")
    with pytest.raises(TypeError):
        Extractor({"a": "a"}).feed("text")     # type: ignore[arg-type]
    with pytest.raises(TypeError):
        extract(io.StringIO("<p>"), {"a": "p"})


def test_close_twice_and_feed_after() -> None:
    ex = Extractor({"p": "p*"})
    ex.feed(b"<p>a")
    assert ex.close() == {"p": ["a"]}
    ex.feed(b"<p>b")
    assert ex.close() == {"p": ["a"]}
    assert "closed" in repr(ex)


def test_extractors_share_compiled_fields_but_not_state() -> None:
    fields = {"t": "title", "all": "p*"}
    results: list[dict[str, Any]] = []

    def work(n: int) -> None:
        for i in range(50):
            results.append(extract(f"<title>{n}-{i}</title><p>{i}".encode(), fields))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 200
    for rec in results:
        _, i = rec["t"].split("-")
        assert rec["all"] == [i]


# ---------------------------------------------------------------------------- early stop


def test_done_after_the_head() -> None:
    """A head-only extraction is done before the body: the rest is never read."""
    for chunks in chunkings(PAGE[:400], random_splits=4, split_samples=8):
        ex = Extractor(HEAD_ONLY)
        for chunk in chunks:
            ex.feed(chunk)
        assert ex.done
        assert ex.close() == {"title": "The & title", "og_title": 'OG "t"',
                              "canonical": "https://example.com/p"}


def test_head_scoped_fields_final_at_the_body() -> None:
    fields = {"title": "title", "canonical": "head link[rel=canonical]::attr(href)",
              "metas": "head > meta::attr(name)*"}
    ex = Extractor(fields)
    ex.feed(b"<title>t</title><meta name=a><link rel=x></head>  <meta name=b>")
    assert not ex.done          # (after </head>, a <meta> still goes into <head>)
    ex.feed(b"<div>")
    assert ex.done
    assert ex.close() == {"title": "t", "canonical": None, "metas": ["a", "b"]}
    ex = Extractor(fields)
    ex.feed(b"<title>t</title><body>")         # an explicit body tag is enough
    assert ex.done
    ex = Extractor({"x": "head p, body p"})    # not scoped: final at the end only
    ex.feed(b"<body><div>")
    assert not ex.done


def test_not_done_while_a_single_field_is_open() -> None:
    ex = Extractor({"h": "h1"})
    ex.feed(b"<h1>a")
    assert not ex.done
    ex.feed(b"b</h1>")
    assert ex.done
    assert ex.close() == {"h": "ab"}


def test_many_final_at_limit() -> None:
    ex = Extractor({"li": Field("li", many=True, limit=2)})
    ex.feed(b"<ul><li>a<li>b")
    assert not ex.done          # the second <li> is still open
    ex.feed(b"<li>c")
    assert ex.done
    assert ex.close() == {"li": ["a", "b"]}


def test_extract_stops_reading_sources() -> None:
    size = len(PAGE)
    # bytes: read in 64 KiB pieces, the first is enough
    assert extract(PAGE, HEAD_ONLY)["title"] == "The & title"
    # a file: one read of CHUNK_SIZE
    f = io.BytesIO(PAGE)
    assert extract(f, HEAD_ONLY)["canonical"] == "https://example.com/p"
    assert f.tell() < size
    # an iterable: a generator is closed when reading stops
    state = {"sent": 0, "closed": False}

    def gen() -> Iterator[bytes]:
        try:
            for i in range(0, size, 100):
                state["sent"] += 1
                yield PAGE[i:i + 100]
        finally:
            state["closed"] = True

    assert extract(gen(), HEAD_ONLY)["og_title"] == 'OG "t"'
    assert state["closed"] and state["sent"] < 10
    assert extract(iter([PAGE[:10], PAGE[10:]]), {"h": "h1"}) == {"h": "Headline"}
    assert extract([PAGE], {"n": "li*"}) == {"n": ["one", "two", "none"]}


def test_bytes_read_on_the_corpus() -> None:
    """The head-only extraction of real pages reads up to about where their <head> ends."""
    for path in sorted(corpus_dir().glob("*.html")):
        data = path.read_bytes()
        ex = Extractor({"title": "title", "canonical": "head link[rel=canonical]::attr(href)",
                        "og": 'head meta[property^="og:"]::attr(content)*'})
        for i in range(0, len(data), 1024):
            ex.feed(data[i:i + 1024])
            if ex.done:
                break
        assert ex.done
        head_end = data.lower().find(b"<body")
        if head_end < 0:
            head_end = data.lower().find(b"</head>")
        assert ex.bytes_read <= max(head_end, 0) + 4096 + 1024, path.name
        assert ex.close()["title"]


# ---------------------------------------------------------------------------- httpx


@pytest.fixture(scope="module")
def origin() -> Iterator[Origin]:
    with Origin() as o:
        yield o


def test_streamed_httpx_response(origin: Origin) -> None:
    chunks = [PAGE[i:i + 4096] for i in range(0, len(PAGE), 4096)]
    url = origin.serve("/page", Reply(chunks, [("Content-Type", "text/html; charset=utf-8")],
                                      delay=0.01))
    with httpx.Client(timeout=10) as client, client.stream("GET", url) as response:
        rec = extract(response, HEAD_ONLY)
        assert response.is_closed
        assert response.num_bytes_downloaded < len(PAGE)
    assert rec["title"] == "The & title"
    assert origin.record("/page").disconnected or not origin.record("/page").done


def test_httpx_response_charset(origin: Origin) -> None:
    body = "<title>café</title>".encode("windows-1252")
    url = origin.serve("/latin", Reply([body], [("Content-Type",
                                                 "text/html; charset=windows-1252")]))
    with httpx.Client(timeout=10) as client, client.stream("GET", url) as response:
        assert extract(response, {"t": "title"}) == {"t": "café"}


def test_scripting() -> None:
    html = b"<body><noscript><img src=a.png><p>no js</p></noscript><p>js</p>"
    assert record(html, {"img": "img::attr(src)*", "p": "p*"}) == {"img": [], "p": ["js"]}
    assert record(html, {"img": "img::attr(src)*", "p": "p*"}, scripting=False) == {
        "img": ["a.png"], "p": ["no js", "js"]}


def test_nested_html_in_document_order() -> None:
    html = b"<ul><li>a<ul><li>b</ul><li>c</ul>"
    assert record(html, {"li": "li::html*"}) == {"li": ["a<ul><li>b</ul>", "b", "c"]}


def test_aextract() -> None:
    import asyncio

    from htmlstream.extraction import aextract

    state = {"closed": False, "sent": 0}

    async def chunks() -> Any:
        try:
            for i in range(0, len(PAGE), 100):
                state["sent"] += 1
                yield PAGE[i:i + 100]
        finally:
            state["closed"] = True

    rec = asyncio.run(aextract(chunks(), HEAD_ONLY))
    assert rec["title"] == "The & title"
    assert state["closed"] and state["sent"] < 10

    async def with_httpx(url: str) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=10) as client, client.stream("GET", url) as resp:
            result = await aextract(resp, HEAD_ONLY)
            assert resp.is_closed
            return result

    with Origin() as origin:
        url = origin.serve("/a", Reply([PAGE[i:i + 4096] for i in range(0, len(PAGE), 4096)],
                                       [("Content-Type", "text/html")], delay=0.01))
        assert asyncio.run(with_httpx(url))["canonical"] == "https://example.com/p"
    with pytest.raises(TypeError):
        asyncio.run(aextract(b"<p>", {"p": "p"}))


def test_utf16_and_iso2022jp() -> None:
    doc = "<title>caf\u00e9 \u65e5\u672c</title><p>x"
    assert record(b"\xff\xfe" + doc.encode("utf-16-le"), {"t": "title"}) == {
        "t": "caf\u00e9 \u65e5\u672c"}
    assert record(doc.encode("utf-16-be"), {"t": "title"}, encoding="utf-16be") == {
        "t": "caf\u00e9 \u65e5\u672c"}
    assert extract(doc.replace("caf\u00e9 ", "").encode("iso-2022-jp"), {"t": "title"},
                   encoding="iso-2022-jp") == {"t": "\u65e5\u672c"}


def test_start_tags_the_tree_builder_ignores() -> None:
    """They make no element: no value (the Element a handler gets cannot have content)."""
    html = b"<p><td class=a>x</td></p><head><br><table><tr><td class=b>y</table><svg><g/></svg>"
    assert record(html, {"td": "td", "tds": "td::attr(class)*", "br": "br::html*",
                         "g": "g::html*", "head": "head::attr(class)"}) == {
        "td": "y", "tds": ["b"], "br": [""], "g": [""], "head": None}
