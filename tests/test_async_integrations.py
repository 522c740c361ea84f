"""Async handlers in the integrations (issue 30): the ASGI middleware under uvicorn runs a
rewriter with async handlers, gives the sync rewriter's output in every chunking (plain and
gzip), and sends the output before a waiting handler's element before it waits; WSGI and Django
refuse such a rewriter."""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import htmlstream as hs
from chunking import chunkings
from htmlstream.http import ResponseRewrite
from htmlstream.integrations.asgi import HtmlRewriteMiddleware, Receive, Scope, Send
from integration_servers import PAGE, app_chunkings, uvicorn_server


def _upgrade(el: hs.Element) -> None:
    href = el.get_attribute("href") or ""
    if href.startswith("http:"):
        el.set_attribute("href", "https:" + href[5:])


async def _upgrade_async(el: hs.Element) -> None:
    await asyncio.sleep(0)
    _upgrade(el)


SYNC_RW = hs.Rewriter().on("a[href]", element=_upgrade)
ASYNC_RW = hs.Rewriter().on("a[href]", element=_upgrade_async)
EXPECTED = SYNC_RW.rewrite(PAGE)
CHUNKINGS = app_chunkings(PAGE)
GZ = gzip.compress(PAGE)
GZ_CHUNKINGS = app_chunkings(GZ)

#: The flushing test's page and gate (set by the test's client thread).
FLUSH_PAGE = b"<!doctype html><p>" + b"before " * 200 + b"</p><a href=http://x/>x</a><p>after</p>"
GATE = threading.Event()


async def _gated(el: hs.Element) -> None:
    loop = asyncio.get_running_loop()
    # (the test's client sets the gate from its thread when it has read the first bytes)
    assert await loop.run_in_executor(None, GATE.wait, 10)
    el.set_attribute("gated", "1")


GATED_RW = hs.Rewriter().on("a", element=_gated)


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    query = scope.get("query_string", b"").decode()
    headers = [(b"content-type", b"text/html; charset=utf-8")]
    if path == "/flush":
        chunks = [FLUSH_PAGE]
    elif path == "/gz":
        chunks = GZ_CHUNKINGS[int(query)]
        headers.append((b"content-encoding", b"gzip"))
    else:
        chunks = CHUNKINGS[int(query)]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for c in chunks:
        await send({"type": "http.response.body", "body": c, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _router(scope: Scope, receive: Receive, send: Send) -> None:
    app = GATED_APP if scope.get("path") == "/flush" else ASYNC_APP
    await app(scope, receive, send)


ASYNC_APP = HtmlRewriteMiddleware(_app, ASYNC_RW)
GATED_APP = HtmlRewriteMiddleware(_app, GATED_RW)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with uvicorn_server(_router) as url:
        yield url


def test_asgi_async_handlers_equal_sync_in_every_chunking(server: str) -> None:
    with httpx.Client(timeout=10) as client:
        for n in range(len(CHUNKINGS)):
            r = client.get(f"{server}/page?{n}")
            assert r.content == EXPECTED, n
        for n in range(len(GZ_CHUNKINGS)):
            r = client.get(f"{server}/gz?{n}")
            assert r.headers["content-encoding"] == "gzip"
            assert r.content == EXPECTED, n       # (httpx decodes the gzip)


def test_asgi_sends_the_output_before_the_wait(server: str) -> None:
    """The bytes before the waiting handler's element reach the client before the handler's
    gate is opened."""
    GATE.clear()
    prefix = FLUSH_PAGE[:FLUSH_PAGE.index(b"<a")]
    got = b""
    with httpx.Client(timeout=10) as client, client.stream("GET", f"{server}/flush") as r:
        pieces = r.iter_raw()
        while len(got) < len(prefix):
            got += next(pieces)
        assert got == prefix
        assert not GATE.is_set()
        GATE.set()
        for piece in pieces:
            got += piece
    assert got == FLUSH_PAGE.replace(b"<a href=http://x/>", b'<a href=http://x/ gated="1">')


def test_response_rewrite_async_face_gzip_every_chunking() -> None:
    """htmlstream.http.ResponseRewrite with async handlers: afeed_iter/aclose_iter, gzip
    decoded, rewritten and re-encoded (the output before a wait encoded and flushed)."""
    headers = [("Content-Type", "text/html"), ("Content-Encoding", "gzip")]

    async def run() -> None:
        for chunks in chunkings(GZ, single_bytes=False, random_splits=3, split_samples=3):
            rewrite = ResponseRewrite(ASYNC_RW, "GET", 200, headers)
            out = b""
            for c in chunks:
                async for piece in rewrite.afeed_iter(c):
                    out += piece
            async for piece in rewrite.aclose_iter():
                out += piece
            assert gzip.decompress(out) == EXPECTED
            with pytest.raises(TypeError, match="afeed_iter"):
                ResponseRewrite(ASYNC_RW, "GET", 200, headers).feed(c)
    asyncio.run(run())


def test_wsgi_and_django_refuse_async_handlers() -> None:
    from htmlstream.integrations.wsgi import HtmlRewriteMiddleware as WsgiMiddleware

    def wsgi_app(environ: Any, start_response: Any) -> list[bytes]:
        return []

    with pytest.raises(TypeError, match=r"async handlers.*ASGI middleware"):
        WsgiMiddleware(wsgi_app, ASYNC_RW)
    WsgiMiddleware(wsgi_app, SYNC_RW)       # (sync handlers: fine)

    from django.conf import settings
    if not settings.configured:
        settings.configure()
    from django.core.exceptions import ImproperlyConfigured

    from htmlstream.integrations.django import HtmlRewriteMiddleware as DjangoMiddleware

    class Middleware(DjangoMiddleware):
        rewriter = ASYNC_RW

    with pytest.raises(ImproperlyConfigured, match="async handlers"):
        Middleware(lambda request: None)


def test_aiohttp_middleware_runs_async_handlers() -> None:
    """The aiohttp middleware with async handlers: whole responses and streamed ones, plain and
    gzip, in several chunkings, give the sync rewriter's output."""
    from htmlstream.integrations.aiohttp import rewrite_middleware
    from http_servers import Origin, Reply

    html = [("Content-Type", "text/html; charset=utf-8")]
    with Origin(middlewares=[rewrite_middleware(ASYNC_RW)]) as origin, \
            httpx.Client(timeout=10) as client:
        url = origin.serve("/whole", Reply([PAGE], html, whole=True))
        r = client.get(url)
        assert r.content == EXPECTED
        assert r.headers["content-length"] == str(len(EXPECTED))
        url = origin.serve("/whole-gz", Reply([GZ], [*html, ("Content-Encoding", "gzip")],
                                              whole=True))
        assert client.get(url).content == EXPECTED
        for n, chunks in enumerate(CHUNKINGS[:4]):
            url = origin.serve(f"/stream-{n}", Reply(chunks, html))
            r = client.get(url)
            assert r.content == EXPECTED, n
            assert r.headers["transfer-encoding"] == "chunked"
        for n, chunks in enumerate(GZ_CHUNKINGS[:3]):
            url = origin.serve(f"/stream-gz-{n}",
                               Reply(chunks, [*html, ("Content-Encoding", "gzip")]))
            assert client.get(url).content == EXPECTED, n


def test_reverse_proxy_runs_async_handlers() -> None:
    from htmlstream.integrations.proxy import ReverseProxy
    from http_servers import Origin, Reply

    html = [("Content-Type", "text/html; charset=utf-8")]
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(15)

    try:
        with Origin() as origin, httpx.Client(timeout=10) as client:
            proxy = ReverseProxy(ASYNC_RW, origin.url(""))
            port = run(proxy.start("127.0.0.1", 0))[1]
            try:
                for n, chunks in enumerate(CHUNKINGS[:4]):
                    origin.serve(f"/p{n}", Reply(chunks, html))
                    assert client.get(f"http://127.0.0.1:{port}/p{n}").content == EXPECTED, n
                origin.serve("/gz", Reply(GZ_CHUNKINGS[1], [*html, ("Content-Encoding", "gzip")]))
                assert client.get(f"http://127.0.0.1:{port}/gz").content == EXPECTED
            finally:
                run(proxy.close())
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def test_cli_proxy_handlers_module(tmp_path: Any) -> None:
    """``htmlstream proxy --handlers MODULE:NAME`` loads a rewriter with async handlers."""
    import os
    import subprocess
    import sys

    from htmlstream.cli import main
    from http_servers import Origin, Reply

    (tmp_path / "my_handlers.py").write_text(
        "import asyncio\n"
        "import htmlstream as hs\n"
        "rewriter = hs.Rewriter()\n"
        "@rewriter.element('p')\n"
        "async def mark(el):\n"
        "    await asyncio.sleep(0)\n"
        "    el.set_attribute('class', 'x')\n")
    assert main(["proxy", "--upstream", "http://127.0.0.1:9", "--handlers", "nomodule:x"]) != 0
    assert main(["proxy", "--upstream", "http://127.0.0.1:9", "--handlers", "bad"]) != 0
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    with Origin() as origin:
        origin.serve("/cli", Reply([PAGE[:3000], PAGE[3000:]],
                                   [("Content-Type", "text/html; charset=utf-8")]))
        proc = subprocess.Popen(
            [sys.executable, "-m", "htmlstream.cli", "proxy", "--upstream", origin.url(""),
             "--listen", "127.0.0.1:0", "--grace", "2", "--handlers", "my_handlers:rewriter"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().decode()
            assert "listening on http://127.0.0.1:" in line, line
            port = int(line.split("127.0.0.1:")[1].split("/")[0])
            body = httpx.get(f"http://127.0.0.1:{port}/cli", timeout=10).content
            assert body == PAGE.replace(b"<p>", b'<p class="x">')
        finally:
            proc.terminate()
            proc.wait(10)


def test_httpx_async_helpers_run_async_handlers() -> None:
    from htmlstream.integrations.httpx import AsyncRewritingTransport, aiter_rewritten
    from http_servers import Origin, Reply

    html = [("Content-Type", "text/html; charset=utf-8")]

    async def fetch(url: str) -> tuple[bytes, bytes]:
        async with httpx.AsyncClient(timeout=10) as client, client.stream("GET", url) as r:
            body = b"".join([out async for out in aiter_rewritten(r, ASYNC_RW)])
        async with httpx.AsyncClient(timeout=10,
                                     transport=AsyncRewritingTransport(ASYNC_RW)) as client:
            via_transport = (await client.get(url)).content
        return body, via_transport

    with Origin() as origin:
        for n, chunks in enumerate(CHUNKINGS[:3]):
            url = origin.serve(f"/h{n}", Reply(chunks, html))
            assert asyncio.run(fetch(url)) == (EXPECTED, EXPECTED), n
        url = origin.serve("/hgz", Reply(GZ_CHUNKINGS[1], [*html, ("Content-Encoding", "gzip")]))
        assert asyncio.run(fetch(url)) == (EXPECTED, EXPECTED)
