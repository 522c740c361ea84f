"""No way around the rewrite (issue 35): ``Range``, ``If-Range``, ``Accept-Encoding`` and ``HEAD``
through the proxy and the ASGI, WSGI, aiohttp and httpx integrations, for every recipe, with
real Range-capable applications on 127.0.0.1 (Starlette's ``StaticFiles``, aiohttp's
``FileResponse``, a WSGI file server) and an origin that honours any content coding asked for
(br, zstd, and a made-up one).  Django is in tests/test_integrations_django.py (its settings are
that module's), mitmproxy in tests/test_integrations_mitmproxy.py (its own venv).

What is asserted, for each request: the page never comes back unrewritten (the recipe's mark of
the original is absent, what it adds is there), never as a 206, never in a coding nobody
decoded; an image's range still gets its 206 with the right bytes; ``HEAD`` answers the headers
of the ``GET``.  Each application writes the page cut in several chunkings.  The brotli and zstd
extras are made absent through htmlstream.http's own lookup of them (and in a subprocess by
tests/test_http.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import pathlib
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any, Self

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("aiohttp")
pytest.importorskip("starlette")

import brotli  # noqa: E402
from aiohttp import web  # noqa: E402

try:
    from compression import zstd  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    from backports import zstd  # type: ignore[no-redef,unused-ignore]

import htmlstream  # noqa: E402
import htmlstream.http  # noqa: E402
from htmlstream import recipes  # noqa: E402
from htmlstream.integrations import asgi as asgi_mw  # noqa: E402
from htmlstream.integrations import wsgi as wsgi_mw  # noqa: E402
from htmlstream.integrations.aiohttp import rewrite_middleware  # noqa: E402
from htmlstream.integrations.httpx import RewritingTransport  # noqa: E402
from htmlstream.integrations.proxy import ReverseProxy  # noqa: E402
from http_servers import Origin  # noqa: E402
from integration_servers import app_chunkings, uvicorn_server, waitress_server  # noqa: E402

PAGE = (b"<!doctype html><html><head><meta charset=utf-8><title>t</title>"
        b"<script>var x = 1;</script></head><body>\n"
        b"<p>Write to alice@example.com or <a href='mailto:alice@example.com'>mail</a>.</p>\n"
        b"<p><a href='http://example.com/page'>link</a> <img src='x.png' onerror='alert(1)'></p>\n"
        + b"".join(b"<p>line %d of the page, long enough to be cut many ways</p>\n" % i
                   for i in range(150))
        + b"</body></html>\n")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
INJECTED = b"<!-- injected by htmlstream -->"

#: recipe -> (its rewriter, what of the original page must never come back)
RECIPES: dict[str, tuple[Callable[[], htmlstream.Rewriter], bytes]] = {
    "https": (lambda: htmlstream.Rewriter().use(recipes.https_upgrade(
        hosts=["example.com"], links=True, hsts_preload=False)), b"http://example.com/page"),
    "emails": (lambda: htmlstream.Rewriter().use(recipes.obfuscate_emails(random=7)),
               b"alice@example.com"),
    "csp": (lambda: htmlstream.Rewriter().use(recipes.csp_nonce()), b"<script>var"),
    "inject": (lambda: htmlstream.Rewriter().use(recipes.inject(body_end=INJECTED.decode())),
               b"</p>\n</body>"),
    "sanitize": (lambda: htmlstream.Rewriter().use(recipes.sanitize()), b"onerror"),
}
for _name, (_make, _mark) in RECIPES.items():
    assert _mark in PAGE and _mark not in _make().rewrite(PAGE), _name

#: The requests for the page: none may get it unrewritten.
PAGE_REQUESTS: list[dict[str, str]] = [
    {},
    {"Range": "bytes=0-"},
    {"Range": "bytes=0-10"},
    {"Range": "bytes=100-"},
    {"Range": "bytes=-500"},
    {"Range": "bytes=0-10, 20-30"},
    {"Range": "bytes=0-10", "If-Range": '"anything"'},
    {"If-Range": "Tue, 01 Dec 2026 10:00:00 GMT", "Range": "bytes=0-"},
    # A request that says it is for a video: its range goes on; the page's 206 is refused.
    {"Range": "bytes=0-10", "Sec-Fetch-Dest": "video"},
    {"Range": "bytes=0-", "Sec-Fetch-Dest": "image"},
    {"Cache-Control": "no-transform"},
]
CODINGS_ASKED = ["br", "zstd", "made-up", "br, zstd, made-up", "zstd;q=1, br;q=0.9, gzip;q=0.1",
                 "*", "gzip", "deflate"]


class Got:
    """A response read raw and decoded here (httpx decodes zstd only with a library of its
    own): ``status_code``, ``headers``, ``content``."""

    def __init__(self, client: Any, method: str, url: str, headers: dict[str, str]) -> None:
        with client.stream(method, url, headers=headers) as r:
            raw = b"".join(r.iter_raw())
        self.status_code = r.status_code
        self.headers = r.headers
        coding = r.headers.get("content-encoding", "identity").lower()
        self.content = decode(coding, raw)


def decode(coding: str, data: bytes) -> bytes:
    if coding == "gzip":
        return gzip.decompress(data)
    if coding == "deflate":
        return zlib.decompress(data)
    if coding == "br":
        return brotli.decompress(data)  # type: ignore[no-any-return]
    if coding == "zstd":
        return zstd.decompress(data)  # type: ignore[no-any-return]
    return data


def check_page(recipe: str, response: Any) -> None:
    """The page through an integration: rewritten (200) or refused (502), never the original
    bytes, a byte range of them, or a body in a coding that was not decoded."""
    _, mark = RECIPES[recipe]
    body = response.content
    assert response.status_code in (200, 502), (response.status_code, body[:200])
    assert mark not in body, (recipe, response.status_code, response.headers)
    coding = response.headers.get("content-encoding", "identity").lower()
    assert coding in ("identity", "gzip", "deflate", "br", "zstd"), coding
    if response.status_code == 200:
        # The whole page (from its first line to its last), never a range of it.
        assert b"line 0 of the page" in body and b"line 149 of the page" in body, body[-200:]
        if recipe == "inject":
            assert INJECTED in body
        assert "content-range" not in response.headers
    else:
        assert b"line 1 of the page" not in body


# ------------------------------------------------------------------------------ content codings


def encode(coding: str, data: bytes) -> bytes:
    if coding == "gzip":
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    if coding == "br":
        return brotli.compress(data)  # type: ignore[no-any-return]
    if coding == "zstd":
        return zstd.compress(data)  # type: ignore[no-any-return]
    return data     # "made-up": the bytes as they are, under a name nobody decodes


def chosen_coding(accept: str | None) -> str:
    """What an origin that honours any coding asked for picks: the first one named (made-up
    ones too), ``*`` as brotli; identity when none."""
    for item in (accept or "").split(","):
        name, _, params = item.strip().partition(";")
        name = name.strip().lower()
        if not name or name == "identity" or params.replace(" ", "") == "q=0":
            continue
        return "br" if name == "*" else name
    return "identity"


def cuts(data: bytes, n: int) -> list[bytes]:
    """The body as the application writes it: the ``n``-th of tests/chunking.py's chunkings
    (whole, two-way and random splits), or pieces of 7 bytes (integration_servers)."""
    ways = app_chunkings(data)
    return ways[n % len(ways)]


# ------------------------------------------------------------------------------ the applications


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("static")
    (root / "page.html").write_bytes(PAGE)
    (root / "img.png").write_bytes(PNG)
    return root


def aiohttp_routes(files: pathlib.Path) -> list[tuple[str, str, Any]]:
    """An aiohttp app: FileResponse for the files (Range-capable), and a page in whatever
    coding is asked (``/coded/{n}``, ``n`` the chunking) or always in a made-up one."""

    async def static(request: web.Request) -> web.StreamResponse:
        n = int(request.query.get("n", "0"))
        return web.FileResponse(files / request.match_info["name"],
                                chunk_size=[256 * 1024, 7, 301, 4096][n % 4])

    async def coded(request: web.Request) -> web.StreamResponse:
        coding = chosen_coding(request.headers.get("Accept-Encoding"))
        if request.match_info["how"] == "always-made-up":
            coding = "made-up"
        headers = {"Content-Type": "text/html; charset=utf-8", "Vary": "Accept-Encoding"}
        if coding != "identity":
            headers["Content-Encoding"] = coding
        resp = web.StreamResponse(headers=headers)
        await resp.prepare(request)
        if request.method != "HEAD":
            for piece in cuts(encode(coding, PAGE), int(request.query.get("n", "0"))):
                await resp.write(piece)
        await resp.write_eof()
        return resp

    return [("*", "/static/{name}", static), ("*", "/coded/{how}", coded)]


def starlette_app(files: pathlib.Path) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    async def coded(request: Request) -> Response:
        coding = chosen_coding(request.headers.get("accept-encoding"))
        if request.path_params["how"] == "always-made-up":
            coding = "made-up"
        body = encode(coding, PAGE)
        headers = {"vary": "accept-encoding"}
        if coding != "identity":
            headers["content-encoding"] = coding

        async def pieces() -> Any:
            for piece in cuts(body, int(request.query_params.get("n", "0"))):
                yield piece

        return StreamingResponse(pieces(), media_type="text/html; charset=utf-8",
                                 headers=headers)

    return Starlette(routes=[Mount("/static", StaticFiles(directory=files)),
                             Route("/coded/{how}", coded)])


def wsgi_app(files: pathlib.Path) -> Any:
    """A WSGI file server that honours Range (one range, 206) and If-Range (any validator as
    matching), and a page in whatever coding is asked."""

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        pieces = serve(environ, start_response)
        return [] if environ["REQUEST_METHOD"] == "HEAD" else pieces

    def serve(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        path = environ["PATH_INFO"]
        n = int((environ.get("QUERY_STRING") or "n=0").partition("=")[2] or 0)
        if path.startswith("/coded/"):
            coding = chosen_coding(environ.get("HTTP_ACCEPT_ENCODING"))
            if path.endswith("/always-made-up"):
                coding = "made-up"
            headers = [("Content-Type", "text/html; charset=utf-8")]
            if coding != "identity":
                headers.append(("Content-Encoding", coding))
            start_response("200 OK", headers)
            return cuts(encode(coding, PAGE), n)
        name = path.removeprefix("/static/")
        data = (files / name).read_bytes()
        kind = "text/html; charset=utf-8" if name.endswith(".html") else "image/png"
        headers = [("Content-Type", kind), ("Accept-Ranges", "bytes"), ("ETag", '"f"')]
        spec = environ.get("HTTP_RANGE", "")
        if spec.startswith("bytes=") and "," not in spec:
            first, _, last = spec[6:].partition("-")
            start = int(first) if first else len(data) - int(last)
            end = int(last) if first and last else len(data) - 1
            headers += [("Content-Range", f"bytes {start}-{end}/{len(data)}"),
                        ("Content-Length", str(end - start + 1))]
            start_response("206 Partial Content", headers)
            return cuts(data[start:end + 1], n)
        start_response("200 OK", [*headers, ("Content-Length", str(len(data)))])
        return cuts(data, n)

    return app


@contextlib.contextmanager
def serving(kind: str, rewriter: htmlstream.Rewriter, files: pathlib.Path
            ) -> Iterator[tuple[Any, str]]:
    """A client and the base URL of ``kind`` (an integration) rewriting with ``rewriter``."""
    client = httpx.Client(timeout=10)
    if kind == "asgi":
        app = asgi_mw.HtmlRewriteMiddleware(starlette_app(files), rewriter)
        with uvicorn_server(app) as url, client:
            yield client, url
    elif kind == "wsgi":
        with waitress_server(wsgi_mw.HtmlRewriteMiddleware(wsgi_app(files), rewriter)) as url, \
                client:
            yield client, url
    elif kind == "aiohttp":
        with Origin(middlewares=[rewrite_middleware(rewriter)],
                    routes=aiohttp_routes(files)) as origin, client:
            yield client, origin.url("")
    elif kind == "httpx":
        client = httpx.Client(timeout=10, transport=RewritingTransport(rewriter))
        with Origin(routes=aiohttp_routes(files)) as origin, client:
            yield client, origin.url("")
    else:
        with Origin(routes=aiohttp_routes(files)) as origin, \
                ProxyThread(rewriter, origin.url("")) as proxy, client:
            yield client, proxy.url("")


class ProxyThread:
    """A :class:`ReverseProxy` in a thread of its own (its own event loop)."""

    def __init__(self, rewriter: htmlstream.Rewriter, upstream: str) -> None:
        self.proxy = ReverseProxy(rewriter, upstream, read_timeout=5.0, connect_timeout=5.0)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(15)

    def __enter__(self) -> Self:
        self._thread.start()
        self.port = self.run(self.proxy.start("127.0.0.1", 0))[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self.run(self.proxy.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


INTEGRATIONS = ["proxy", "asgi", "wsgi", "aiohttp", "httpx"]


@pytest.fixture(params=[True, False], ids=["extras", "no-extras"])
def extras(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """With the brotli and zstd extras, or as if they were not installed (htmlstream.http's
    own lookup of them says so)."""
    if not request.param:
        monkeypatch.setattr(htmlstream.http, "_modules", {"br": None, "zstd": None})
    assert ("br" in htmlstream.http.decodable_codings()) is request.param
    return bool(request.param)


# ------------------------------------------------------------------------------ the tests


@pytest.mark.parametrize("kind", INTEGRATIONS)
@pytest.mark.parametrize("recipe", list(RECIPES))
def test_ranges_never_give_the_page_unrewritten(kind: str, recipe: str, files: pathlib.Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    rewriter = RECIPES[recipe][0]()
    caplog.set_level(logging.WARNING)
    with serving(kind, rewriter, files) as (client, base):
        for n in (0, 1, 4, 6):
            for headers in PAGE_REQUESTS:
                try:
                    r = client.get(f"{base}/static/page.html?n={n}", headers=headers)
                except htmlstream.http.ResponseRefused as exc:
                    assert kind == "httpx" and "Partial Content" in exc.reason
                    continue
                check_page(recipe, r)
                if "Sec-Fetch-Dest" not in headers:
                    assert r.status_code == 200, (headers, r.status_code)
            # An image's range still gets its 206, with the right bytes.
            r = client.get(f"{base}/static/img.png?n={n}", headers={"Range": "bytes=10-99"})
            assert r.status_code == 206 and r.content == PNG[10:100]
            assert r.headers["content-range"] == f"bytes 10-99/{len(PNG)}"
            r = client.get(f"{base}/static/img.png?n={n}",
                           headers={"Range": "bytes=5-", "Sec-Fetch-Dest": "image"})
            assert r.status_code == 206 and r.content == PNG[5:]


@pytest.mark.parametrize("kind", INTEGRATIONS)
def test_refusals_are_logged(kind: str, files: pathlib.Path,
                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with serving(kind, RECIPES["emails"][0](), files) as (client, base):
        url = f"{base}/static/page.html"
        headers = {"Range": "bytes=0-10", "Sec-Fetch-Dest": "video"}
        if kind == "httpx":
            with pytest.raises(htmlstream.http.ResponseRefused, match="206 Partial Content"):
                client.get(url, headers=headers)
            return
        r = client.get(url, headers=headers)
        assert r.status_code == 502
    assert "Partial Content of a response that would be rewritten" in caplog.text


@pytest.mark.parametrize("kind", INTEGRATIONS)
def test_codings_never_give_the_page_unrewritten(kind: str, extras: bool, files: pathlib.Path
                                                 ) -> None:
    rewriter = RECIPES["emails"][0]()
    with serving(kind, rewriter, files) as (client, base):
        for n, asked in enumerate(CODINGS_ASKED):
            r = Got(client, "GET", f"{base}/coded/honours?n={n}", {"Accept-Encoding": asked})
            check_page("emails", r)
            assert r.status_code == 200, asked      # the origin was asked for what decodes
            coding = r.headers.get("content-encoding", "identity")
            if kind != "httpx":
                # What the client gets: a coding it asked for (or none).
                assert coding == "identity" or coding in asked or asked == "*", (asked, coding)
                assert coding in ({"identity", "gzip", "deflate"}
                                  | ({"br", "zstd"} if extras else set()))
        # An origin that sends a coding nobody asked for: refused.
        for asked in ("br", "gzip"):
            try:
                r = Got(client, "GET", f"{base}/coded/always-made-up", {"Accept-Encoding": asked})
            except htmlstream.http.ResponseRefused as exc:
                assert kind == "httpx" and "made-up" in exc.reason
                continue
            assert r.status_code == 502 and b"alice" not in r.content


@pytest.mark.parametrize("kind", INTEGRATIONS)
@pytest.mark.parametrize("path", ["/static/page.html", "/static/img.png", "/coded/honours"])
def test_head_answers_the_headers_of_the_get(kind: str, path: str, files: pathlib.Path) -> None:
    rewriter = RECIPES["https"][0]()
    with serving(kind, rewriter, files) as (client, base):
        for asked in ("identity", "gzip", "br"):
            get = client.get(f"{base}{path}", headers={"Accept-Encoding": asked})
            head = client.head(f"{base}{path}", headers={"Accept-Encoding": asked})
            assert head.status_code == get.status_code == 200
            assert head.content == b""
            # (The date may differ; Transfer-Encoding is framing, hop by hop.)
            framing = {"date": "", "transfer-encoding": "", "connection": "", "keep-alive": ""}
            assert dict(head.headers) | framing == dict(get.headers) | framing, (
                asked, dict(head.headers), dict(get.headers))
            if path.endswith(".html"):
                assert "content-length" not in get.headers or int(
                    get.headers["content-length"]) != len(PAGE)
                if "etag" in get.headers:
                    assert get.headers["etag"].startswith("W/")


def test_app_that_compresses_itself_is_warned_about_once(files: pathlib.Path) -> None:
    htmlstream.http._warned.discard("ASGI middleware")
    rewriter = RECIPES["emails"][0]()
    with pytest.warns(RuntimeWarning, match="compresses its HTML itself") as record, \
            serving("asgi", rewriter, files) as (client, base):
        for _ in range(3):
            r = Got(client, "GET", f"{base}/coded/honours", {"Accept-Encoding": "gzip"})
            check_page("emails", r)
            assert r.headers["content-encoding"] == "gzip"
    assert len([w for w in record if "compresses" in str(w.message)]) == 1
