"""htmlstream.integrations.aiohttp: the middleware under aiohttp's real runner (127.0.0.1, an
ephemeral port), with whole ``web.Response``s and handlers that stream ``web.StreamResponse``s;
clients: httpx, and a raw socket for HTTP/1.0.

Every HTML body is served cut in several chunkings (tests/chunking.py) and the output compared
with ``rewriter.rewrite(body)``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import time

import aiohttp
import brotli
import httpx
import pytest

import htmlstream
from htmlstream.integrations.aiohttp import rewrite_middleware
from http_servers import Origin, Reply
from test_integrations_httpx import CODINGS, EXPECTED, HEAD, HTML, PAGE, RW, cuts


@pytest.fixture(scope="module")
def server() -> Origin:
    with Origin(middlewares=[rewrite_middleware(RW)]) as o:
        yield o


def _get(url: str, method: str = "GET", **kw: object) -> tuple[httpx.Response, bytes]:
    """The response and its raw body (not decoded)."""
    with httpx.Client(timeout=5) as client, client.stream(method, url, **kw) as r:  # type: ignore[arg-type]
        return r, b"".join(r.iter_raw())


def test_whole_response(server: Origin) -> None:
    url = server.serve("/whole", Reply([PAGE], [*HTML, ("ETag", '"v1"')], whole=True))
    r, body = _get(url)
    assert body == EXPECTED
    assert r.headers["content-length"] == str(len(EXPECTED))
    assert r.headers["etag"] == 'W/"v1"'
    assert r.headers["content-type"] == "text/html; charset=utf-8"


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_whole_response_encoded(server: Origin, coding: str) -> None:
    encode = gzip.compress if coding == "gzip" else brotli.compress
    decode = gzip.decompress if coding == "gzip" else brotli.decompress
    url = server.serve(f"/whole-{coding}",
                       Reply([encode(PAGE)], [*HTML, ("Content-Encoding", coding)], whole=True))
    r, body = _get(url)
    assert r.headers["content-encoding"] == coding
    assert decode(body) == EXPECTED
    assert r.headers["content-length"] == str(len(body))


def test_streaming(server: Origin) -> None:
    for n, chunks in enumerate(cuts(PAGE)):
        url = server.serve(f"/stream-{n}", Reply(chunks, HTML))
        r, body = _get(url)
        assert body == EXPECTED
        assert r.headers["transfer-encoding"] == "chunked"
        assert server.record(f"/stream-{n}").done


def test_streaming_with_content_length(server: Origin) -> None:
    """A handler that sets Content-Length: the rewritten body goes chunked instead."""
    for n, chunks in enumerate(cuts(PAGE)[:4]):
        url = server.serve(f"/stream-cl-{n}",
                           Reply(chunks, [*HTML, ("Content-Length", str(len(PAGE)))]))
        r, body = _get(url)
        assert body == EXPECTED
        assert "content-length" not in r.headers
        assert r.headers["transfer-encoding"] == "chunked"


def test_streaming_short_body_with_content_length(server: Origin) -> None:
    """A body that ends before the decision is rewritten whole: it keeps a Content-Length."""
    page = b"<p><a href='http://a.example/'>a</a></p>"
    for n, chunks in enumerate(cuts(page)[::4]):
        url = server.serve(f"/short-{n}",
                           Reply(chunks, [*HTML, ("Content-Length", str(len(page)))]))
        r, body = _get(url)
        assert body == RW.rewrite(page)
        assert r.headers["content-length"] == str(len(body))


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_streaming_encoded(server: Origin, coding: str) -> None:
    encode, decode = CODINGS[coding]
    for n, chunks in enumerate(cuts(encode(PAGE))):
        url = server.serve(f"/stream-{coding}-{n}",
                           Reply(chunks, [*HTML, ("Content-Encoding", coding)]))
        r, body = _get(url)
        assert r.headers["content-encoding"] == coding
        assert decode(body) == EXPECTED


def test_streaming_enable_compression(server: Origin) -> None:
    """resp.enable_compression(): the body is rewritten, then aiohttp compresses it."""
    for n, chunks in enumerate(cuts(PAGE)[:4]):
        url = server.serve(f"/compress-{n}", Reply(chunks, HTML, compress=True))
        r, body = _get(url, headers={"Accept-Encoding": "gzip"})
        assert r.headers["content-encoding"] == "gzip"
        assert gzip.decompress(body) == EXPECTED


def test_first_chunk_before_last_write(server: Origin) -> None:
    gate = threading.Event()
    url = server.serve("/gate", Reply([PAGE[:-10], PAGE[-10:]], HTML, gate=gate))
    with httpx.Client(timeout=5) as client, client.stream("GET", url) as r:
        parts = []
        for chunk in r.iter_raw():
            parts.append(chunk)
            gate.set()
    assert b"".join(parts) == EXPECTED
    assert not server.record("/gate").gate_timeout


@pytest.mark.parametrize("whole", [False, True])
def test_not_html_passes_through(server: Origin, whole: bool) -> None:
    payload = json.dumps({"a": "<p>x</p>", "n": list(range(400))}).encode()
    for n, chunks in enumerate(cuts(payload)[:4]):
        path = f"/json-{whole}-{n}"
        url = server.serve(path, Reply(chunks, [*HTML, ("Content-Length", str(len(payload))),
                                                ("ETag", '"j"')], whole=whole))
        r, body = _get(url)
        assert body == payload
        assert r.headers["content-length"] == str(len(payload))
        assert r.headers["etag"] == '"j"'


@pytest.mark.parametrize("whole", [False, True])
def test_head_has_the_headers_of_the_get(server: Origin, whole: bool) -> None:
    headers = [*HTML, ("Content-Length", str(len(PAGE))), ("ETag", '"h"')]
    url = server.serve(f"/head-{whole}", Reply([PAGE], headers, whole=whole))
    head, body = _get(url, method="HEAD")
    get, got = _get(url)
    assert body == b"" and got == EXPECTED
    if whole:   # the rewritten body's length
        assert head.headers["content-length"] == str(len(EXPECTED))
    assert head.headers["etag"] == 'W/"h"'
    assert {k: v for k, v in head.headers.items() if k != "date"} == {
        k: v for k, v in get.headers.items() if k != "date"}


def test_http10_client(server: Origin) -> None:
    """HTTP/1.0: a streamed body without a length is rewritten (ended by closing); one with a
    Content-Length is rewritten whole and sent with its new length (issue 35: it passed through
    untouched, a way around the rewrite for any client)."""
    for name, headers, expected in [
        ("/h10-stream", HTML, EXPECTED),
        ("/h10-length", [*HTML, ("Content-Length", str(len(PAGE)))], EXPECTED),
    ]:
        server.serve(name, Reply([PAGE[:700], PAGE[700:]], headers))
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(f"GET {name} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 200")
        assert body == expected
        if name == "/h10-length":
            assert f"Content-Length: {len(EXPECTED)}".encode() in head


def test_client_disconnect(server: Origin) -> None:
    """The client goes mid-stream: the handler's write raises, the handler ends."""
    chunks = [HEAD] + [b"<p>more</p>\n"] * 400
    url = server.serve("/gone", Reply(chunks, HTML, delay=0.01))
    start = time.monotonic()
    with httpx.Client(timeout=5) as client, client.stream("GET", url) as r:
        for _chunk in r.iter_raw():
            break
    rec = server.record("/gone")
    assert rec.disconnected and not rec.done
    assert time.monotonic() - start < 2.0     # long before the 4 s the handler would take


def test_error_after_output_aborts(server: Origin) -> None:
    """A gzip body corrupt after the first output: the response is cut, never ended
    cleanly."""
    body = bytearray(gzip.compress(PAGE * 4, mtime=0))
    body[-40:-8] = b"\xff" * 32
    url = server.serve("/corrupt", Reply([bytes(body[:-100]), bytes(body[-100:])],
                                         [*HTML, ("Content-Encoding", "gzip")]))
    with pytest.raises(httpx.RemoteProtocolError):
        _get(url)
    rec = server.record("/corrupt")
    assert not rec.done


def test_aiohttp_client(server: Origin) -> None:
    """aiohttp's own client, decoding gzip, over several chunkings."""
    encoded = gzip.compress(PAGE)

    async def main() -> None:
        async with aiohttp.ClientSession() as session:
            for n, chunks in enumerate(cuts(encoded)[:4]):
                url = server.serve(f"/aio-{n}",
                                   Reply(chunks, [*HTML, ("Content-Encoding", "gzip")]))
                async with session.get(url) as resp:
                    assert await resp.read() == EXPECTED

    asyncio.run(main())


def test_context_factory() -> None:
    """The context factory is called per request (a Rewriter without stream(context=) refuses
    it: the error is the handler's, a 500 before any output)."""
    seen: list[str] = []

    def ctx(request: aiohttp.web.Request) -> None:
        seen.append(request.path)
        return None

    with Origin(middlewares=[rewrite_middleware(RW, context=ctx)]) as o:
        url = o.serve("/ctx", Reply([PAGE], HTML))
        _, body = _get(url)
    assert body == EXPECTED and seen == ["/ctx"]


def test_handler_error_before_output_is_500() -> None:
    rw = htmlstream.Rewriter()

    @rw.element("p")
    def boom(el: htmlstream.Element) -> None:
        raise ValueError("handler failed")

    with Origin(middlewares=[rewrite_middleware(rw)]) as o:
        url = o.serve("/boom", Reply([PAGE[:50], PAGE[50:]], HTML))
        r, _ = _get(url)
    assert r.status_code == 500


def test_headers_hook() -> None:
    """The hook sees the context and the decided headers of rewritten responses only."""
    calls: list[object] = []

    def hook(context: object, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        calls.append(context)
        return [*headers, ("X-Rewritten", "1")]

    with Origin(middlewares=[rewrite_middleware(RW, headers_hook=hook)]) as o:
        for whole in (False, True):
            r, body = _get(o.serve(f"/hook-{whole}", Reply([HEAD, PAGE[len(HEAD):]], HTML,
                                                           whole=whole)))
            assert body == EXPECTED and r.headers["x-rewritten"] == "1"
            r, body = _get(o.serve(f"/hook-png-{whole}",
                                   Reply([b"\x89PNG"], [("Content-Type", "image/png")],
                                         whole=whole)))
            assert body == b"\x89PNG" and "x-rewritten" not in r.headers
    assert calls == [None, None]


def test_headers_leave_at_the_decision(server: Origin) -> None:
    """The decision is made inside a long tag (no output yet): the headers leave then, before
    the handler's next write."""
    page = b"<a href='http://x.example/" + b"a" * 2000 + b"'>x</a>"
    gate = threading.Event()
    url = server.serve("/long-tag", Reply([page[:1500], page[1500:]], HTML, gate=gate))
    with httpx.Client(timeout=5) as client, client.stream("GET", url) as r:
        gate.set()      # the response (its headers) arrived before the last write
        assert r.status_code == 200
        body = b"".join(r.iter_raw())
    assert not server.record("/long-tag").gate_timeout
    assert body == RW.rewrite(page)


async def _prepared_response(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
    """A web.Response the handler prepares and ends itself (its body goes in write_eof)."""
    response = aiohttp.web.Response(body=PAGE, content_type="text/html")
    await response.prepare(request)
    await response.write_eof()
    return response


async def _websocket(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
    ws = aiohttp.web.WebSocketResponse()
    await ws.prepare(request)
    async for message in ws:
        await ws.send_str("<p>" + message.data)
    return ws


def test_prepared_response_and_websocket() -> None:
    routes = [("GET", "/prepared", _prepared_response), ("GET", "/ws", _websocket)]
    with Origin(middlewares=[rewrite_middleware(RW)], routes=routes) as o:
        r, body = _get(o.url("/prepared"))
        assert body == EXPECTED and r.headers["content-length"] == str(len(EXPECTED))

        async def chat() -> list[str]:
            async with aiohttp.ClientSession() as session, session.ws_connect(
                    o.url("/ws")) as ws:
                got = []
                for text in ("a", "<b>"):
                    await ws.send_str(text)
                    got.append(await ws.receive_str(timeout=5))
                return got

        assert asyncio.run(chat()) == ["<p>a", "<p><b>"]
