"""Markdown at the edge (issue 36): content negotiation of ``Accept: text/markdown`` in
``htmlstream.http.ResponseRewrite(markdown=...)`` and in the three integrations that take it
(the ASGI middleware under uvicorn, the aiohttp middleware, ``htmlstream proxy --markdown``),
with real servers and clients on 127.0.0.1; and Chromium through the proxy, which gets HTML.

What is checked: a request preferring Markdown gets the rewritten page converted (the same
Markdown as ``htmlstream.markdown`` of the rewritten HTML, in every chunking of the page),
``Content-Type: text/markdown; charset=utf-8``, ``Vary: Accept``, ``x-markdown-tokens`` (the
estimate of the whole Markdown) and the configured ``Content-Signal``, no ``ETag``; any other
request gets the HTML with ``Vary: Accept``; compressed origin pages are decoded and the
Markdown re-encoded; a ``Range`` never gets the page's bytes past the conversion; a ``HEAD``
answers the headers of the ``GET``.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import htmlstream
from chunking import chunkings
from htmlstream.http import (
    MarkdownOptions,
    ResponseRefused,
    ResponseRewrite,
    markdown_requested,
)
from htmlstream.recipes.markdown import estimate_tokens

aiohttp = pytest.importorskip("aiohttp")
httpx = pytest.importorskip("httpx")

from http_servers import Origin, Reply  # noqa: E402
from integration_servers import PAGE, RW, app_chunkings, uvicorn_server  # noqa: E402

#: What a Markdown response must hold: the rewritten page (links upgraded), converted.
HTML_OUT = RW.rewrite(PAGE)
MARKDOWN = htmlstream.markdown(HTML_OUT, encoding="utf-8").encode()
assert b"](https://example.com/7)" in MARKDOWN
TOKENS = str(estimate_tokens(MARKDOWN.decode()))
SIGNAL = "ai-train=no, search=yes, ai-input=yes"
OPTIONS = MarkdownOptions(content_signal=SIGNAL)

MD_ACCEPT = "text/markdown"
AGENT_ACCEPT = "text/markdown, text/html;q=0.9"
BROWSER_ACCEPT = ("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
                  "image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7")
HTML_HEADERS = [("Content-Type", "text/html; charset=utf-8"), ("ETag", '"v1"'),
                ("Vary", "Accept-Encoding")]


def fields(headers: object, name: str) -> list[str]:
    """Every value of the field ``name`` (httpx headers, or pairs of str or bytes)."""
    if isinstance(headers, httpx.Headers):
        return headers.get_list(name)
    out = []
    for k, v in headers:  # type: ignore[attr-defined]
        k = k.decode() if isinstance(k, bytes) else k
        if k.lower() == name:
            out.append(v.decode() if isinstance(v, bytes) else v)
    return out


def assert_markdown_headers(headers: object, *, tokens: bool = True) -> None:
    assert fields(headers, "content-type") == ["text/markdown; charset=utf-8"]
    vary = ", ".join(fields(headers, "vary")).lower()
    assert "accept" in [v.strip() for v in vary.split(",")], vary
    assert fields(headers, "content-signal") == [SIGNAL]
    assert fields(headers, "etag") == []
    assert fields(headers, "x-markdown-tokens") == ([TOKENS] if tokens else [])


def assert_html_headers(headers: object) -> None:
    assert fields(headers, "content-type") == ["text/html; charset=utf-8"]
    vary = [v.strip().lower() for v in ", ".join(fields(headers, "vary")).split(",")]
    assert "accept" in vary and "accept-encoding" in vary
    assert fields(headers, "etag") == ['W/"v1"']
    assert not fields(headers, "content-signal") and not fields(headers, "x-markdown-tokens")


# ------------------------------------------------------------------------ the decision


@pytest.mark.parametrize(("accept", "markdown"), [
    (None, False), ("", False), ("*/*", False), ("text/html", False), (BROWSER_ACCEPT, False),
    (MD_ACCEPT, True), (AGENT_ACCEPT, True), ("text/markdown, text/html", True),
    ("text/html, text/markdown;q=0.5", False), ("text/markdown;q=0", False),
    ("text/*, text/html;q=0.1", True), ("TEXT/MARKDOWN", True),
])
def test_markdown_requested(accept: str | None, markdown: bool) -> None:
    headers = [] if accept is None else [("Accept", accept)]
    assert markdown_requested(headers) is markdown
    assert markdown_requested([(k.encode(), v.encode()) for k, v in headers]) is markdown
    assert markdown_requested(dict(headers)) is markdown


def test_markdown_requested_reads_every_accept_field() -> None:
    # Two fields are one list: text/html;q=0.5 in the second does not outweigh the first's.
    assert markdown_requested([("accept", "text/html;q=0.5"), ("Accept", "text/markdown")])
    assert not markdown_requested([("accept", "text/markdown;q=0.5"), ("Accept", "text/html")])
    assert not markdown_requested(None)


def run(t: ResponseRewrite[str], chunks: list[bytes]) -> tuple[bytes, list[tuple[str, str]],
                                                            bool]:
    """Feed ``chunks``; the body, the headers, and whether they were decided before the end."""
    out = []
    early = None
    for chunk in chunks:
        out.append(t.feed(chunk))
        if t.decided and early is None:
            early = t.headers
    out.append(t.close())
    return b"".join(out), t.headers, early is not None


@pytest.mark.parametrize("coding", ["identity", "gzip"])
def test_response_rewrite_markdown_in_every_chunking(coding: str) -> None:
    body = gzip.compress(PAGE) if coding == "gzip" else PAGE
    headers = HTML_HEADERS + ([("Content-Encoding", "gzip")] if coding == "gzip" else [])
    for chunks in chunkings(body, single_bytes=False, split_samples=6, random_splits=6):
        t = ResponseRewrite(RW, "GET", 200, headers, request_headers=[("Accept", MD_ACCEPT)],
                            markdown=OPTIONS)
        out, sent, early = run(t, chunks)
        assert not early        # (held to its end, to count its tokens)
        assert (gzip.decompress(out) if coding == "gzip" else out) == MARKDOWN
        assert_markdown_headers(sent)
        assert fields(sent, "content-encoding") == ([coding] if coding == "gzip" else [])
        assert t.markdown and t.markdown_tokens == int(TOKENS)


@pytest.mark.parametrize("hold", [0, 100])
def test_response_rewrite_markdown_streams_past_hold(hold: int) -> None:
    # Past hold_chars the Markdown streams, without x-markdown-tokens (no trailers).
    for chunks in chunkings(PAGE, single_bytes=False, split_samples=4, random_splits=4):
        if len(chunks) < 4:
            continue
        t = ResponseRewrite(RW, "GET", 200, HTML_HEADERS, request_headers=[("Accept", MD_ACCEPT)],
                            markdown=MarkdownOptions(content_signal=SIGNAL, hold_chars=hold))
        out, sent, early = run(t, chunks)
        assert out == MARKDOWN and early
        assert_markdown_headers(sent, tokens=False)
        assert t.markdown_tokens is None


@pytest.mark.parametrize("accept", [None, "text/html", BROWSER_ACCEPT])
def test_response_rewrite_html_varies(accept: str | None) -> None:
    for chunks in chunkings(PAGE, single_bytes=False, split_samples=4, random_splits=4):
        request = [] if accept is None else [("Accept", accept)]
        t = ResponseRewrite(RW, "GET", 200, HTML_HEADERS, request_headers=request,
                            markdown=OPTIONS)
        out, sent, _ = run(t, chunks)
        assert out == HTML_OUT and not t.markdown
        assert_html_headers(sent)


def test_response_rewrite_without_option_unchanged() -> None:
    t = ResponseRewrite(RW, "GET", 200, HTML_HEADERS, request_headers=[("Accept", MD_ACCEPT)])
    out, sent, _ = run(t, [PAGE])
    assert out == HTML_OUT
    assert fields(sent, "vary") == ["Accept-Encoding"]


def test_head_answers_the_get_headers() -> None:
    t = ResponseRewrite(RW, "HEAD", 200, [*HTML_HEADERS, ("Content-Length", "8000")],
                        request_headers=[("Accept", MD_ACCEPT)], markdown=OPTIONS)
    assert t.decided and t.markdown
    # (no body, so no x-markdown-tokens; no Content-Length either, as for any rewritten HEAD)
    assert_markdown_headers(t.headers, tokens=False)
    assert not fields(t.headers, "content-length")
    t = ResponseRewrite(RW, "HEAD", 200, HTML_HEADERS, request_headers=[("Accept", "text/html")],
                        markdown=OPTIONS)
    assert_html_headers(t.headers)


def test_not_html_passes_untouched() -> None:
    headers = [("Content-Type", "image/png"), ("ETag", '"i"')]
    t = ResponseRewrite(RW, "GET", 200, headers, request_headers=[("Accept", MD_ACCEPT)],
                        markdown=OPTIONS)
    assert t.decided and not t.markdown and t.headers == headers
    assert t.feed(b"\x89PNG") == b"\x89PNG"
    # Served as text/html but JSON: passed as it is, not converted, no Vary.
    t = ResponseRewrite(RW, "GET", 200, HTML_HEADERS, request_headers=[("Accept", MD_ACCEPT)],
                        markdown=OPTIONS)
    body = b'{"a": "<p>x</p>"}' * 100
    out, sent, _ = run(t, [body])
    assert out == body and sent == HTML_HEADERS and not t.markdown


def test_range_and_codings_never_bypass() -> None:
    # A partial page is refused whatever the Accept; an unknown coding too.
    for accept in (MD_ACCEPT, BROWSER_ACCEPT):
        with pytest.raises(ResponseRefused):
            ResponseRewrite(RW, "GET", 206, [*HTML_HEADERS, ("Content-Range", "bytes 0-9/99")],
                            request_headers=[("Accept", accept), ("Range", "bytes=0-9")],
                            markdown=OPTIONS)
        with pytest.raises(ResponseRefused):
            ResponseRewrite(RW, "GET", 200, [*HTML_HEADERS, ("Content-Encoding", "x-unknown")],
                            request_headers=[("Accept", accept)], markdown=OPTIONS)


def test_vary_not_repeated_and_bytes_headers() -> None:
    headers = [(b"content-type", b"text/html"), (b"vary", b"Accept, Accept-Encoding")]
    t = ResponseRewrite(RW, "GET", 200, headers,
                        request_headers=[(b"accept", b"text/markdown")], markdown=OPTIONS)
    out, sent, _ = run(t, [PAGE])     # type: ignore[arg-type]
    assert out == MARKDOWN
    assert [v for k, v in sent if k == b"vary"] == [b"Accept, Accept-Encoding"]
    assert (b"content-type", b"text/markdown; charset=utf-8") in sent
    # A response without headers, an ASGI request: bytes headers added.
    t2: ResponseRewrite[bytes] = ResponseRewrite(
        RW, "GET", 200, [], request_headers=[(b"accept", b"text/markdown")], markdown=OPTIONS)
    t2.feed(PAGE)
    t2.close()
    assert all(isinstance(k, bytes) and isinstance(v, bytes) for k, v in t2.headers)


def test_legacy_encoding_converted_to_utf8() -> None:
    page = "<p>caf\u00e9 \u20ac</p>".encode("windows-1252")
    t = ResponseRewrite(RW, "GET", 200, [("Content-Type", "text/html; charset=windows-1252")],
                        request_headers=[("Accept", MD_ACCEPT)], markdown=OPTIONS)
    out, sent, _ = run(t, [page])
    assert out.decode("utf-8") == "caf\u00e9 \u20ac\n"
    assert fields(sent, "content-type") == ["text/markdown; charset=utf-8"]


def test_options_checked() -> None:
    with pytest.raises(ValueError):
        MarkdownOptions(content_signal="a\r\nSet-Cookie: x=1")
    with pytest.raises(ValueError):
        MarkdownOptions(hold_chars=-1)
    with pytest.raises(TypeError):
        ResponseRewrite(RW, "GET", 200, HTML_HEADERS, markdown=True)  # type: ignore[arg-type]
    t = ResponseRewrite(RW, "GET", 200, HTML_HEADERS, markdown=OPTIONS)
    with pytest.raises(ValueError):
        t.early_headers()


# ------------------------------------------------------------------------ ASGI (uvicorn)


def asgi_app(chunks_of: dict[str, list[bytes]]) -> object:
    """An ASGI app serving ``PAGE`` at /N in the N-th chunking, with ``HTML_HEADERS``."""

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        assert scope["type"] == "http"
        chunks = chunks_of[str(scope["path"])]
        await send({"type": "http.response.start", "status": 200,  # type: ignore[operator]
                    "headers": [(k.lower().encode(), v.encode()) for k, v in HTML_HEADERS]})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk,  # type: ignore[operator]
                        "more_body": True})
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]

    return app


@pytest.fixture(scope="module")
def asgi_server() -> Iterator[tuple[str, list[str]]]:
    from htmlstream.integrations.asgi import HtmlRewriteMiddleware

    paths = {f"/{i}": chunks for i, chunks in enumerate(app_chunkings(PAGE))}
    app = HtmlRewriteMiddleware(asgi_app(paths), RW, markdown=OPTIONS)  # type: ignore[arg-type]
    with uvicorn_server(app) as url:
        yield url, list(paths)


def test_asgi_markdown_and_html(asgi_server: tuple[str, list[str]]) -> None:
    url, paths = asgi_server
    with httpx.Client(timeout=10) as client:
        for path in paths:
            md = client.get(url + path, headers={"Accept": AGENT_ACCEPT})
            assert md.status_code == 200 and md.content == MARKDOWN
            assert_markdown_headers(md.headers)
            for accept in (BROWSER_ACCEPT, "*/*"):
                html = client.get(url + path, headers={"Accept": accept})
                assert html.content == HTML_OUT
                assert_html_headers(html.headers)
        head = client.head(url + paths[0], headers={"Accept": MD_ACCEPT})
        assert_markdown_headers(head.headers, tokens=False)


# ------------------------------------------------------------------------ aiohttp


def test_aiohttp_markdown_and_html() -> None:
    from htmlstream.integrations.aiohttp import rewrite_middleware

    with Origin(middlewares=[rewrite_middleware(RW, markdown=OPTIONS)]) as origin:
        paths = []
        for i, chunks in enumerate(app_chunkings(PAGE)):
            paths.append(origin.serve(f"/s{i}", Reply(chunks, headers=HTML_HEADERS)))
        paths.append(origin.serve("/whole", Reply([PAGE], headers=HTML_HEADERS, whole=True)))
        with httpx.Client(timeout=10) as client:
            for url in paths:
                md = client.get(url, headers={"Accept": MD_ACCEPT})
                assert md.status_code == 200 and md.content == MARKDOWN
                assert_markdown_headers(md.headers)
                html = client.get(url, headers={"Accept": BROWSER_ACCEPT})
                assert html.content == HTML_OUT
                assert_html_headers(html.headers)
            for url in (paths[0], paths[-1]):
                head = client.head(url, headers={"Accept": MD_ACCEPT})
                assert fields(head.headers, "content-type") == ["text/markdown; charset=utf-8"]
                assert fields(head.headers, "content-signal") == [SIGNAL]


# ------------------------------------------------------------------------ the proxy


@pytest.fixture
def origin() -> Iterator[Origin]:
    with Origin() as o:
        yield o


def test_proxy_markdown_gzip_range_head(origin: Origin) -> None:
    from test_proxy import ProxyThread

    zipped = gzip.compress(PAGE)
    gz_headers = [*HTML_HEADERS, ("Content-Encoding", "gzip")]
    urls = []
    for i, chunks in enumerate(app_chunkings(zipped)[:6]):
        urls.append(f"/z{i}")
        origin.serve(f"/z{i}", Reply(chunks, headers=gz_headers))
    origin.serve("/plain", Reply([PAGE[i:i + 500] for i in range(0, len(PAGE), 500)],
                                 headers=HTML_HEADERS))
    with ProxyThread(origin.url(""), markdown=OPTIONS) as proxy, \
            httpx.Client(timeout=10) as client:
        for path in [*urls, "/plain"]:
            md = client.get(proxy.url(path), headers={"Accept": MD_ACCEPT,
                                                      "Accept-Encoding": "gzip"})
            assert md.content == MARKDOWN      # (httpx decoded the gzip)
            assert_markdown_headers(md.headers)
            if path != "/plain":
                assert md.headers["content-encoding"] == "gzip"
            html = client.get(proxy.url(path), headers={"Accept": BROWSER_ACCEPT})
            assert html.content == HTML_OUT
            assert_html_headers(html.headers)
        # A Range request gets the whole Markdown (the Range is not forwarded for a page).
        ranged = client.get(proxy.url("/plain"), headers={"Accept": MD_ACCEPT,
                                                          "Range": "bytes=0-99"})
        assert ranged.status_code == 200 and ranged.content == MARKDOWN
        head = client.head(proxy.url("/plain"), headers={"Accept": MD_ACCEPT})
        assert head.status_code == 200
        assert_markdown_headers(head.headers, tokens=False)


def test_proxy_partial_page_refused(origin: Origin) -> None:
    from test_proxy import ProxyThread

    origin.serve("/partial", Reply([PAGE[:100]], status=206, headers=[
        *HTML_HEADERS, ("Content-Range", f"bytes 0-99/{len(PAGE)}")]))
    with ProxyThread(origin.url(""), markdown=OPTIONS) as proxy:
        res = httpx.get(proxy.url("/partial"), headers={"Accept": MD_ACCEPT}, timeout=10)
        assert res.status_code == 502 and PAGE[:50] not in res.content


# ------------------------------------------------------------------------ the command, Chromium

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y "
                    "chromium)")
def test_cli_proxy_markdown_httpx_and_chromium(origin: Origin, tmp_path: Path) -> None:
    from test_proxy_browser import cli_proxy

    page = PAGE.replace(b"<body>", b"<body><h1 id=title>The page</h1>")
    zipped = gzip.compress(page)
    origin.serve("/page", Reply([zipped[i:i + 300] for i in range(0, len(zipped), 300)],
                                headers=[*HTML_HEADERS, ("Content-Encoding", "gzip")],
                                delay=0.002))
    origin.serve("/favicon.ico", Reply([b""], status=404))
    expected = htmlstream.markdown(RW.rewrite(page), encoding="utf-8").encode()
    with cli_proxy(origin.url(""), "--markdown", "--content-signal", SIGNAL,
                   "--on", "a[href]", "--set-attr", "data-x=1") as (proxy, _):
        md = httpx.get(f"{proxy}/page", headers={"Accept": MD_ACCEPT}, timeout=10)
        assert md.status_code == 200
        assert md.content.startswith(b"# The page\n\n")
        assert md.content.count(b"](http") == expected.count(b"](http")
        assert md.headers["content-type"] == "text/markdown; charset=utf-8"
        assert md.headers["content-signal"] == SIGNAL
        assert md.headers["x-markdown-tokens"] == str(estimate_tokens(md.text))
        assert "accept" in md.headers["vary"].lower()
        html = httpx.get(f"{proxy}/page", headers={"Accept": BROWSER_ACCEPT}, timeout=10)
        assert html.headers["content-type"] == "text/html; charset=utf-8"
        assert b'data-x="1"' in html.content
        assert CHROMIUM is not None
        res = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
             "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
             f"{proxy}/page"],
            capture_output=True, text=True, timeout=120, check=False)
        assert res.returncode == 0, res.stderr[-2000:]
        # Chromium asked as a browser does: it got the page, parsed it as HTML.
        assert '<h1 id="title">The page</h1>' in res.stdout
        assert res.stdout.count('data-x="1"') == 120
        assert "# The page" not in res.stdout


# ------------------------------------------------------------------------ async handlers


def test_async_handlers_markdown_in_every_chunking() -> None:
    # A rewriter whose handler waits (issue 30): the output before each wait goes through the
    # converter too, and is held with the rest until the end (to count the tokens).
    import asyncio

    rw = htmlstream.Rewriter()

    @rw.element("a[href]")
    async def upgrade(el: htmlstream.Element) -> None:
        await asyncio.sleep(0)
        el.set_attribute("href", (el.get_attribute("href") or "").replace("http:", "https:"))

    async def run_async(chunks: list[bytes], hold: int) -> tuple[list[bytes], list[str]]:
        t = ResponseRewrite(rw, "GET", 200, HTML_HEADERS, request_headers=[("Accept", MD_ACCEPT)],
                            markdown=MarkdownOptions(content_signal=SIGNAL, hold_chars=hold))
        pieces: list[bytes] = []
        decided_at: list[str] = []
        for chunk in chunks:
            async for piece in t.afeed_iter(chunk):
                assert t.decided
                pieces.append(piece)
        async for piece in t.aclose_iter():
            pieces.append(piece)
        decided_at.extend(fields(t.headers, "x-markdown-tokens"))
        return pieces, decided_at

    for chunks in chunkings(PAGE, single_bytes=False, split_samples=3, random_splits=3):
        pieces, tokens = asyncio.run(run_async(chunks, 1 << 20))
        assert b"".join(pieces) == MARKDOWN and tokens == [TOKENS]
        pieces, tokens = asyncio.run(run_async(chunks, 0))
        assert b"".join(pieces) == MARKDOWN and tokens == []


def test_cli_content_signal_needs_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    from htmlstream.cli import main

    assert main(["proxy", "--upstream", "http://127.0.0.1:1", "--content-signal", "a=b"]) == 2
    assert "--content-signal needs --markdown" in capsys.readouterr().err
    assert main(["proxy", "--upstream", "http://127.0.0.1:1", "--markdown",
                 "--content-signal", "a\r\nSet-Cookie: b"]) == 2
    assert "line break" in capsys.readouterr().err
