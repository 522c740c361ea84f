"""recipes.https_upgrade: what is upgraded, what is left, the report, <style> text in every
chunking, the upgrade-insecure-requests <meta>, the HSTS preload list."""

from __future__ import annotations

import warnings

import pytest

from chunking import feed_bytes
from htmlstream import Rewriter, recipes
from htmlstream.recipes.https import (
    STYLE_CARRY,
    UIR_META,
    http_host,
    refresh_url_span,
    upgrade_css,
    upgrade_srcset,
    upgrade_url,
)
from recipe_checks import corpus, rewrite_all


def known(host: str) -> bool:
    return host in {"example.com", "a.example.com", "xn--bcher-kva.example"}


def up(hosts: object = ("example.com",), **kw: object) -> Rewriter:
    kw.setdefault("hsts_preload", False)
    return Rewriter().use(recipes.https_upgrade(hosts, **kw))  # type: ignore[arg-type]


def run(doc: str, rw: Rewriter | None = None, **kw: object) -> tuple[str, recipes.UpgradeReport]:
    out, ctx = rewrite_all(rw or up(**kw), doc)
    return out.decode("utf-8"), ctx["https_upgrade"]


# --------------------------------------------------------------------------- URL reading


@pytest.mark.parametrize(("value", "expected"), [
    ("http://example.com/", "https://example.com/"),
    ("HTTP://EXAMPLE.COM/x", "https://EXAMPLE.COM/x"),
    ("HtTp://example.com", "https://example.com"),
    ("  http://example.com/a b ", "  https://example.com/a b "),
    ("\x01\x1f http://example.com/\x00", "\x01\x1f https://example.com/\x00"),
    ("h\tt\ntp://example.com/", "https://example.com/"),
    ("http:\t//example.com/", "https:\t//example.com/"),
    ("http://exa\tmple.com/", "https://exa\tmple.com/"),
    ("http:\\\\example.com\\x", "https:\\\\example.com\\x"),
    ("http:/\\example.com/", "https:/\\example.com/"),
    ("http:///example.com/", "https:///example.com/"),
    ("http://user:pw@example.com:8080/p?q#f", "https://user:pw@example.com:8080/p?q#f"),
    ("http://evil.org@example.com/", "https://evil.org@example.com/"),
    ("http://example.com.:80", "https://example.com."),
    # (port 80 is HTTP's default, not HTTPS's: left out, as a browser's HSTS upgrade does)
    ("http://example.com:80/a", "https://example.com/a"),
    ("http://u:p@example.com:080?q", "https://u:p@example.com?q"),
    ("http://example.com:8\t0#f", "https://example.com#f"),
    ("http://example.com:80 ", "https://example.com "),
    ("http://example.com:/x", "https://example.com:/x"),
    ("http://example.com:443/", "https://example.com:443/"),
    ("http://ex%61mple.com/", "https://ex%61mple.com/"),
    ("http://example.com?x", "https://example.com?x"),
    ("http://example.com#x", "https://example.com#x"),
    ("http://b\u00fccher.example/", "https://b\u00fccher.example/"),
    ("http://A.Example.com/&amp;", "https://A.Example.com/&amp;"),
    # left alone
    ("http://example.com.evil.org/", None),
    ("http://example.com@evil.org/", None),
    ("http://sub.example.com/", None),
    ("//example.com/", None),
    ("/http://example.com/", None),
    ("x http://example.com/", None),
    ("https://example.com/", None),
    ("ftp://example.com/", None),
    ("javascript:http://example.com/", None),
    ("http:example.com", None),
    # (one slash: a path on the page's own host when the page is HTTP, and "https:/x" would be
    # a path on an HTTPS page: left alone)
    ("http:/example.com/", None),
    ("http:\\example.com/", None),
    ("http:", None),
    ("http://", None),
    ("httpx://example.com/", None),
    ("http ://example.com/", None),
    ("", None),
])
def test_upgrade_url(value: str, expected: str | None) -> None:
    report = recipes.UpgradeReport()
    assert upgrade_url(value, known, report) == (value if expected is None else expected)
    assert report.total_upgraded == (expected is not None)


def test_http_host() -> None:
    assert http_host("http://[::1]:80/") == (0, "[::1]")
    assert http_host("http://EXAMPLE.com:8080") == (0, "example.com")
    assert http_host(" http://@/") == (1, None)
    assert http_host("https://example.com") is None


@pytest.mark.parametrize(("value", "expected"), [
    ("http://example.com/a.png 1x, http://example.com/b.png 2x",
     "https://example.com/a.png 1x, https://example.com/b.png 2x"),
    ("http://example.com/a,b.png 100w,http://evil.org/c.png 200w",
     "https://example.com/a,b.png 100w,http://evil.org/c.png 200w"),
    # No white space: one URL (a comma inside a URL is part of it), as browsers read it.
    ("http://example.com/a.png,http://example.com/b.png",
     "https://example.com/a.png,http://example.com/b.png"),
    ("http://example.com/a.png, http://example.com/b.png,",
     "https://example.com/a.png, https://example.com/b.png,"),
    ("  ,, http://example.com/a.png  (x, y) 1x ,\nhttp://example.com/b.png",
     "  ,, https://example.com/a.png  (x, y) 1x ,\nhttps://example.com/b.png"),
    ("a.png 1x, //example.com/b.png 2x", "a.png 1x, //example.com/b.png 2x"),
])
def test_srcset_entry_by_entry(value: str, expected: str) -> None:
    assert upgrade_srcset(value, known, None) == expected


@pytest.mark.parametrize(("value", "url"), [
    ("0; url=http://example.com/", "http://example.com/"),
    ("0;URL='http://example.com/x' ", "http://example.com/x"),
    ('5 , url = "http://example.com/y"', "http://example.com/y"),
    ("0 http://example.com/z", "http://example.com/z"),
    ("1.5; http://example.com/w", "http://example.com/w"),
    ("0", None),
    ("x; url=http://example.com/", None),
    ("0x; url=http://example.com/", None),
])
def test_refresh_url(value: str, url: str | None) -> None:
    span = refresh_url_span(value)
    assert (None if span is None else value[span[0]:span[1]]) == url


def test_css() -> None:
    css = ("@import 'http://example.com/a.css'; @IMPORT url(HTTP://example.com/b.css);"
           " a { background: URL( \"http://example.com/c.png\" ) } b { x: url(http://evil.org/) }"
           " c { content: 'http://example.com/' } d { x: url(//example.com/) }")
    report = recipes.UpgradeReport()
    new, end = upgrade_css(css, known, report)
    assert end == len(css)
    assert new == css.replace("'http://example.com/a", "'https://example.com/a").replace(
        "HTTP://example.com/b", "https://example.com/b").replace(
        '"http://example.com/c', '"https://example.com/c')
    assert report.upgraded == {"example.com": 3}
    assert report.left == {"evil.org": 1}


# --------------------------------------------------------------------------- documents


DOC = """<!DOCTYPE html><html><head>
<link rel=stylesheet href="http://example.com/s.css"><link rel=canonical href=http://evil.org/>
<base href="http://example.com/base/">
<meta http-equiv="Refresh" content="30; url=http://example.com/next">
<style>@import "http://example.com/i.css";
body { background: url(http://example.com/bg.png) } p { x: url(http://evil.org/p.png) }</style>
</head><body background="http://example.com/b.png" style="background:url('http://example.com/s.png')">
<img src="http://example.com/i.png" srcset="http://example.com/1.png 1x, http://evil.org/2.png 2x">
<picture><source srcset="http://example.com/p.webp"></picture>
<video poster="http://example.com/v.jpg" src="http://example.com/v.mp4"><track src="http://example.com/t.vtt"></video>
<audio src="http://example.com/a.mp3"></audio><iframe src="http://example.com/f"></iframe>
<object data="http://example.com/o.swf"></object><embed src="http://example.com/e">
<form action="http://example.com/post"><button formaction="http://example.com/b">b</button>
<input type=image src="http://example.com/in.png"></form>
<a href="http://example.com/page" ping="http://example.com/ping http://evil.org/ping">a</a>
<area href="http://example.com/area">
<link rel=preload as=image imagesrcset="http://example.com/l.png 1x">
<svg><image href="http://example.com/s.svg"/><use xlink:href="http://example.com/u.svg#i"/>
<a href="http://example.com/svg-link"><text>t</text></a><script href="http://example.com/s.js"/></svg>
<math><mi href="http://example.com/m">m</mi></math>
<p title="http://example.com/not-a-url-attribute">http://example.com/text</p>
<script src="http://example.com/s.js">var u = "http://example.com/in-script";</script>
<img src="//example.com/rel.png"><img src="/x.png"><img src="https://example.com/ok.png">
</body></html>"""


def test_document() -> None:
    out, report = run(DOC)
    for upgraded in ["s.css", "base/", "next", "i.css", "bg.png", "b.png", "s.png", "i.png",
                     "1.png", "p.webp", "v.jpg", "v.mp4", "t.vtt", "a.mp3", "/f", "o.swf",
                     "/e", "post", "/b", "in.png", "/ping", "l.png", "s.svg", "u.svg#i",
                     "s.js"]:
        assert f"https://example.com/{upgraded.lstrip('/')}" in out, upgraded
        assert f"http://example.com/{upgraded.lstrip('/')}" not in out, upgraded
    for left in ["http://evil.org/", "http://evil.org/p.png", "http://evil.org/2.png",
                 "http://evil.org/ping", "http://example.com/page", "http://example.com/area",
                 "http://example.com/svg-link", "http://example.com/m",
                 "http://example.com/not-a-url-attribute", "http://example.com/text",
                 "http://example.com/in-script", "//example.com/rel.png"]:
        assert left in out, left
    # Only the scheme changed, and nothing else: the output is the input with "https".
    assert out.replace("https://", "http://") == DOC.replace("https://", "http://")
    assert report.upgraded == {"example.com": 26}
    assert report.left == {"evil.org": 4}


def test_links() -> None:
    out, report = run(DOC, links=True)
    for link in ["page", "area", "svg-link"]:
        assert f"https://example.com/{link}" in out
    # MathML Core has no links (href on MathML elements is MathML 3, which Chromium never had).
    assert "http://example.com/m" in out
    assert report.upgraded == {"example.com": 29}


def test_untouched_documents_are_byte_identical() -> None:
    doc = DOC.replace("http://example.com", "http://other.example")
    out, report = run(doc)
    assert out == doc
    assert report.total_upgraded == 0
    doc = "<p>no URLs\r\n<style>a{b:c}\r\n</style><img src=x.png>"
    assert run(doc)[0] == doc


def test_attribute_written_in_place() -> None:
    # The engine writes a changed attribute as name="value" where it stood; the value's
    # characters are kept (references decoded and escaped again: &amp; stays &amp;).
    doc = "<img alt=x SRC = 'HTTP://example.com/a?b=1&amp;c=\"2' width=1>"
    out, _ = run(doc)
    assert out == '<img alt=x SRC="https://example.com/a?b=1&amp;c=&quot;2" width=1>'
    out, _ = run("<audio src=http://example.com/a.mp3>")
    assert out == '<audio src="https://example.com/a.mp3">'



def test_report_counts_per_host() -> None:
    rw = up(["example.com", "*.cdn.example"])
    _, ctx = rewrite_all(rw, '<img src="http://a.cdn.example/x"><img src="http://b.cdn.example'
                             '/x"><img src="http://cdn.example/x"><img src="http://a.cdn.example">')
    report = ctx["https_upgrade"]
    assert report.upgraded == {"a.cdn.example": 2, "b.cdn.example": 1}
    assert report.left == {"cdn.example": 1}
    # Every document has a report, even one with no URL at all.
    assert rewrite_all(rw, "")[1]["https_upgrade"] == recipes.UpgradeReport()


@pytest.mark.parametrize("data", [
    b"\xfe\xff",                                                    # (found by hypothesis)
    b"\xff\xfe",
    '<img src="http://example.com/x">'.encode("utf-16"),
    '<img src="http://example.com/x">'.encode("utf-16-be"),          # (no BOM: utf-16be declared)
])
def test_report_when_the_stream_passes_through(data: bytes) -> None:
    """A stream that passes its input through (UTF-16, not transcoded) runs no handler, yet
    the report is there after close(), empty, with the reason (issue 38)."""
    encoding = "utf-16be" if not data.startswith((b"\xfe\xff", b"\xff\xfe")) else "utf-8"
    rw = Rewriter(encoding=encoding).use(recipes.https_upgrade(["example.com"],
                                                               hsts_preload=False))
    out, ctx = rewrite_all(rw, data)
    assert out == data
    report = ctx["https_upgrade"]
    assert report.upgraded == {} and report.left == {}
    assert report.passthrough_reason is not None
    assert "not ASCII-compatible" in report.passthrough_reason
    assert "https_upgrade.style_carry" not in ctx


def test_report_when_a_limit_passes_the_rest_through() -> None:
    """After a limit with on_limit="passthrough", the report counts what was read before it,
    and says why the rest was not.  (Where a limit strikes depends on the chunking by design:
    the buffer holds a token cut by a chunk's end; so this feeds 16-byte chunks.)"""
    rw = Rewriter(max_buffer_size=64, on_limit="passthrough").use(
        recipes.https_upgrade(["example.com"], hsts_preload=False))
    doc = ('<img src="http://example.com/a"><p ' + "x" * 200 + '><img src="http://example.com/b">'
           ).encode()
    ctx: dict[str, object] = {}
    out = feed_bytes(lambda: rw.stream(context=ctx),
                     [doc[i:i + 16] for i in range(0, len(doc), 16)])
    report = ctx["https_upgrade"]
    assert isinstance(report, recipes.UpgradeReport)
    assert report.upgraded == {"example.com": 1}
    assert report.passthrough_reason is not None
    assert "max_buffer_size" in report.passthrough_reason
    assert out.startswith(b'<img src="https://example.com/a">')
    assert out.endswith(b'<img src="http://example.com/b">')


def test_report_of_a_document_read_to_its_end_has_no_passthrough_reason() -> None:
    _, ctx = rewrite_all(up(), '<img src="http://example.com/a">')
    assert ctx["https_upgrade"].passthrough_reason is None


def test_host_patterns() -> None:
    assert run('<img src="http://anything.test/">', hosts=["*"])[0] == (
        '<img src="https://anything.test/">')
    assert run('<img src="http://X.EXAMPLE.com/">', hosts=["*.example.com"])[0] == (
        '<img src="https://X.EXAMPLE.com/">')
    assert run('<img src="http://example.com/">', hosts=["*.example.com"])[0] == (
        '<img src="http://example.com/">')
    assert run('<img src="http://EXAMPLE.com/">', hosts=["Example.COM."])[0] == (
        '<img src="https://EXAMPLE.com/">')
    # A predicate gets the host lower-cased, in ASCII, without port and final dot.
    seen: list[str] = []
    run('<img src="http://B\u00dcCHER.example.:81/">',
        hosts=lambda h: seen.append(h) or True)
    assert set(seen) == {"xn--bcher-kva.example"}
    with pytest.raises(ValueError):
        recipes.https_upgrade(["exa*mple.com"], hsts_preload=False)
    with pytest.raises(TypeError):
        recipes.https_upgrade([b"example.com"], hsts_preload=False)  # type: ignore[list-item]


def test_hsts_preload_list() -> None:
    pytest.importorskip("hstspreload")
    # .dev is preloaded as a whole top-level domain.
    out, report = run('<img src="http://example.dev/"><img src="http://example.invalid/">',
                      rw=Rewriter().use(recipes.https_upgrade()))
    assert out == '<img src="https://example.dev/"><img src="http://example.invalid/">'
    assert report.left == {"example.invalid": 1}
    out, _ = run('<img src="http://example.dev/">',
                 rw=Rewriter().use(recipes.https_upgrade(hsts_preload=False)))
    assert out == '<img src="http://example.dev/">'


def test_without_hstspreload(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    monkeypatch.setitem(sys.modules, "hstspreload", None)   # import fails
    with pytest.raises(ImportError, match=r"htmlstream\[hsts\]"):
        recipes.https_upgrade()
    with pytest.warns(RuntimeWarning, match=r"htmlstream\[hsts\]"):
        recipe = recipes.https_upgrade(["example.com"])
    assert Rewriter().use(recipe).rewrite('<img src="http://example.com/">') == (
        '<img src="https://example.com/">')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recipes.https_upgrade(["example.com"], hsts_preload=False)


# --------------------------------------------------------------------------- <style> text


def test_style_text_in_every_chunking() -> None:
    css = ("a{background:url(http://example.com/a.png)}\r\n"
           "@import 'http://example.com/b.css';@import url(  http://evil.org/x);"
           "b{c:URL(\"http://a.example.com:8080/q?x#y\")}u{r:l}url(http://example.com)")
    doc = f"<style>{css}</style><svg><style>x{{y:url(http://example.com/s)}}</style></svg>"
    out, report = run(doc, hosts=["example.com", "a.example.com"])
    assert out == doc.replace("url(http://example.com/a", "url(https://example.com/a").replace(
        "'http://example.com/b", "'https://example.com/b").replace(
        '"http://a.example', '"https://a.example').replace(
        "url(http://example.com)", "url(https://example.com)").replace(
        "url(http://example.com/s)", "url(https://example.com/s)")
    assert report.upgraded == {"example.com": 4, "a.example.com": 1}
    assert report.left == {"evil.org": 1}


def test_style_carry_is_bounded() -> None:
    # A long run of text after url( with no URL; a host too long to decide is left.
    long_host = "a" * 400 + ".example.com"
    doc = ("<style>" + "x" * 5000 + "url(" + " " * 50 + "y" * 3000 + ")" + "url(http://"
           + long_host + "/)" + "url(http://example.com/z)</style>")
    rw = up(["*"])
    stream = rw.stream()
    carried = []
    for i in range(0, len(doc), 7):
        stream.feed(doc[i:i + 7].encode())
        carried.append(len(stream.context.get("https_upgrade.style_carry", "")))
    out = stream.feed(b"") + stream.close()
    assert max(carried) <= STYLE_CARRY
    assert "url(http://" + long_host in rw.rewrite(doc)
    assert rw.rewrite(doc).endswith("url(https://example.com/z)</style>")
    assert out is not None


# --------------------------------------------------------------------------- the CSP <meta>


@pytest.mark.parametrize(("doc", "expected"), [
    ("<html><head><title>t</title></head><body>x",
     f"<html><head>{UIR_META}<title>t</title></head><body>x"),
    ("<!doctype html><title>t</title><p>x", f"<!doctype html>{UIR_META}<title>t</title><p>x"),
    ("<!doctype html><p>x", f"<!doctype html>{UIR_META}<p>x"),
    ("<body>x", f"{UIR_META}<body>x"),
    ("", UIR_META),
])
def test_upgrade_insecure_requests(doc: str, expected: str) -> None:
    assert run(doc, upgrade_insecure_requests=True)[0] == expected


# --------------------------------------------------------------------------- corpus


@pytest.mark.parametrize("path", corpus(), ids=lambda p: p.name)
def test_corpus(path: object) -> None:
    data = path.read_bytes()  # type: ignore[attr-defined]
    rw = up(["*"], links=True)
    out, ctx = rewrite_all(rw, data, single_bytes=False, random_splits=3)
    report = ctx["https_upgrade"]
    # Only schemes changed: as many "https" more as URLs were upgraded, nothing else.
    assert out.replace(b"https:", b"http:") == data.replace(b"https:", b"http:").replace(
        b"HTTP:", b"http:").replace(b"Http:", b"http:") or report.total_upgraded == 0
    assert len(out) - len(data) == report.total_upgraded
    assert report.total_left == 0


def test_mathml_style_is_not_css() -> None:
    """MathML's <style> is an element like any other (no CSS in it): its text is left alone,
    in every chunking; SVG's <style> holds CSS, as HTML's does."""
    from chunking import chunkings, feed_bytes

    rw = Rewriter().use(recipes.https_upgrade(["*"], hsts_preload=False))
    math = b"<math><style>a{b:url(http://x.test/i)} a@a<<<<<<b</style></math>"
    for cut in chunkings(math):
        assert feed_bytes(rw.stream, cut) == math
    svg = b"<svg><style>a{b:url(http://x.test/i)}</style></svg>"
    assert rw.rewrite(svg) == svg.replace(b"http:", b"https:")


@pytest.mark.parametrize("doc", [
    # (found by the atheris target: the CSS carry "u" written back after "</" in a <style> the
    # input never closes made "</u", which the raw-text guard refused in some chunkings only)
    b"<ul><foreignObject><style><math></ul>x'<noscript>'<b><<<<",
    b"<style>a</url(http://example.com/x)</STYLE><p>b",
    b"<xmp></u</ur</url(http://example.com/x) @i</@import</xmp>",
])
def test_style_carry_next_to_other_end_tags_in_raw_text(doc: bytes) -> None:
    out, _ = rewrite_all(up(("*",)), doc)
    assert out.count(b"</") == doc.count(b"</")
