"""htmlstream.integrations.httpx against a real server (aiohttp's, on 127.0.0.1): streamed
responses, content codings, pass-through, early exit, timeouts, sync and async.

Every HTML body is served cut in several chunkings (tests/chunking.py) and the output compared
with ``rewriter.rewrite(body)``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
import threading
import time
import zlib
from collections.abc import Callable

import brotli
import httpx
import pytest

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

import htmlstream
from chunking import chunkings
from htmlstream.integrations.httpx import (
    AsyncRewritingTransport,
    RewritingTransport,
    aiter_rewritten,
    iter_rewritten,
)
from http_servers import Origin, Reply, wait_for

PAGE = ("<!doctype html><html><head><title>links</title></head><body>\n"
        + "".join(f"<p>Item {i}: <a href='http://example.com/{i}'>link {i}</a></p>\n"
                  for i in range(60))
        + "</body></html>\n").encode()
assert len(PAGE) > 2048

HTML = [("Content-Type", "text/html; charset=utf-8")]


def make_rewriter() -> htmlstream.Rewriter:
    rw = htmlstream.Rewriter()

    @rw.element("a[href^='http:']")
    def upgrade(el: htmlstream.Element) -> None:
        href = el.get_attribute("href")
        assert href is not None
        el.set_attribute("href", "https:" + href[5:])

    @rw.element("p")
    def mark(el: htmlstream.Element) -> None:
        el.set_attribute("data-seen", "1")

    return rw


#: The first 1500 bytes or so of PAGE, up to a tag: more than the decision needs.
HEAD = PAGE[:PAGE.index(b"<p>", 1500)]

RW = make_rewriter()
EXPECTED = RW.rewrite(PAGE)
assert EXPECTED != PAGE


def cuts(data: bytes) -> list[list[bytes]]:
    """A few chunkings of a server's writes (each is one request)."""
    out = chunkings(data, single_bytes=False, random_splits=3, split_samples=3)
    out.append([data[i:i + 97] for i in range(0, len(data), 97)])
    return out


def _deflate(data: bytes) -> bytes:
    return zlib.compress(data)


CODINGS: dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]] = {
    "identity": (lambda b: b, lambda b: b),
    "gzip": (gzip.compress, gzip.decompress),
    "deflate": (_deflate, zlib.decompress),
    "br": (brotli.compress, brotli.decompress),
    "zstd": (zstd.compress, zstd.decompress),
}


@pytest.fixture(scope="module")
def origin() -> Origin:
    with Origin() as o:
        yield o


def _headers(coding: str) -> list[tuple[str, str]]:
    return HTML + ([] if coding == "identity" else [("Content-Encoding", coding)])


@pytest.mark.parametrize("coding", list(CODINGS))
def test_sync_decoded_and_raw(origin: Origin, coding: str) -> None:
    encode, decode = CODINGS[coding]
    body = encode(PAGE)
    with httpx.Client(timeout=5) as client:
        for n, chunks in enumerate(cuts(body)):
            url = origin.serve(f"/sync-{coding}-{n}", Reply(chunks, _headers(coding)))
            with client.stream("GET", url) as response:
                rewritten = iter_rewritten(response, RW)
                out = list(rewritten)
                assert all(out)
                assert rewritten.rewriting
                names = {k.lower(): v for k, v in rewritten.headers}
                assert b"content-length" not in names
                if b"content-encoding" in names:
                    # A coding httpx does not decode (zstd without zstandard): the body and
                    # the headers keep it, rewritten all the same.
                    assert names[b"content-encoding"] == coding.encode() == b"zstd"
                    out = [decode(b"".join(out))]
                assert b"".join(out) == EXPECTED
            assert response.is_closed
            with client.stream("GET", url) as response:
                raw = iter_rewritten(response, RW, decoded=False)
                got = b"".join(raw)
                assert decode(got) == EXPECTED
                sent = {k.lower(): v for k, v in raw.headers}
                if coding != "identity":
                    assert sent[b"content-encoding"] == coding.encode()


@pytest.mark.parametrize("coding", list(CODINGS))
def test_async_decoded_and_raw(origin: Origin, coding: str) -> None:
    encode, decode = CODINGS[coding]
    body = encode(PAGE)

    async def main() -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            for n, chunks in enumerate(cuts(body)):
                url = origin.serve(f"/async-{coding}-{n}", Reply(chunks, _headers(coding)))
                async with client.stream("GET", url) as response:
                    rewritten = aiter_rewritten(response, RW)
                    out = [c async for c in rewritten]
                    if any(k.lower() == b"content-encoding" for k, _ in rewritten.headers):
                        out = [decode(b"".join(out))]
                    assert b"".join(out) == EXPECTED
                assert response.is_closed
                async with client.stream("GET", url) as response:
                    got = [c async for c in aiter_rewritten(response, RW, decoded=False)]
                    assert decode(b"".join(got)) == EXPECTED

    asyncio.run(main())


@pytest.mark.parametrize("coding", ["identity", "gzip", "br"])
def test_first_rewritten_chunk_before_last_server_write(origin: Origin, coding: str) -> None:
    """The server holds its last write until the client has its first rewritten chunk."""
    encode, decode = CODINGS[coding]
    body = encode(PAGE)
    for decoded in (True, False):
        gate = threading.Event()
        chunks = [body[:-8], body[-8:]]
        url = origin.serve(f"/first-{coding}-{decoded}", Reply(chunks, _headers(coding),
                                                                 delay=0.01, gate=gate))
        with httpx.Client(timeout=5) as client, client.stream("GET", url) as response:
            parts = []
            for chunk in iter_rewritten(response, RW, decoded=decoded):
                parts.append(chunk)
                gate.set()
        rec = origin.record(f"/first-{coding}-{decoded}")
        assert not rec.gate_timeout and rec.done     # (the gate opened on the first chunk)
        got = b"".join(parts)
        assert (got if decoded else decode(got)) == EXPECTED


def test_first_chunk_async(origin: Origin) -> None:
    gate = threading.Event()
    body = gzip.compress(PAGE)
    url = origin.serve("/first-async", Reply([body[:-8], body[-8:]], _headers("gzip"),
                                             gate=gate))

    async def main() -> bytes:
        async with httpx.AsyncClient(timeout=5) as client, client.stream("GET", url) as r:
            parts = []
            async for chunk in aiter_rewritten(r, RW):
                parts.append(chunk)
                gate.set()
            return b"".join(parts)

    assert asyncio.run(main()) == EXPECTED
    assert not origin.record("/first-async").gate_timeout


@pytest.mark.parametrize("payload", [
    json.dumps({"html": "<p>not a page</p>", "n": list(range(300))}).encode(),
    b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8,
])
def test_not_html_served_as_html_passes_through(origin: Origin, payload: bytes) -> None:
    with httpx.Client(timeout=5) as client:
        for n, chunks in enumerate(cuts(payload)[:4]):
            url = origin.serve(f"/json-{len(payload)}-{n}", Reply(chunks, HTML))
            with client.stream("GET", url) as response:
                body = iter_rewritten(response, RW)
                assert b"".join(body) == payload
                assert not body.rewriting and body.decision is not None
                assert body.decision.reason is not None
                assert "not HTML" in body.decision.reason


def test_head_and_not_modified_pass_through(origin: Origin) -> None:
    url = origin.serve("/head", Reply([PAGE], HTML))
    with httpx.Client(timeout=5) as client, client.stream("HEAD", url) as response:
        body = iter_rewritten(response, RW)
        assert list(body) == []
        assert body.decision is not None and body.decision.reason is not None
        assert body.decision.reason.startswith("HEAD request: no body")
        assert body.decision.rewritten_headers


def test_early_break_closes_the_connection(origin: Origin) -> None:
    """Leaving the loop early closes the response: the server sees the disconnect."""
    chunks = [HEAD] + [b"<p>more</p>\n"] * 400
    url = origin.serve("/break", Reply(chunks, HTML, delay=0.01))
    start = time.monotonic()
    with httpx.Client(timeout=5) as client:
        with client.stream("GET", url) as response, iter_rewritten(response, RW) as body:
            for chunk in body:
                assert chunk
                break
        assert response.is_closed
    rec = origin.record("/break")
    assert rec.disconnected and not rec.done
    assert time.monotonic() - start < 2.0     # long before the 4 s the server would take


def test_early_break_async(origin: Origin) -> None:
    chunks = [HEAD] + [b"<p>more</p>\n"] * 400
    url = origin.serve("/break-async", Reply(chunks, HTML, delay=0.01))

    async def main() -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            async with client.stream("GET", url) as r, aiter_rewritten(r, RW) as body:
                async for _chunk in body:
                    break
            assert r.is_closed

    asyncio.run(main())
    rec = origin.record("/break-async")
    assert rec.disconnected and not rec.done


def test_read_timeout_closes(origin: Origin) -> None:
    """A server that stalls mid-body: httpx's read timeout propagates, the response is
    closed (and the server sees the client go)."""
    # (The stall is ten times the read timeout: the ReadTimeout itself shows that the timeout
    # fired before the stall ended, with no wall-clock assertion a loaded machine could miss.)
    chunks = [PAGE[:1500], PAGE[1500:]]
    url = origin.serve("/stall", Reply(chunks, HTML, stall=3.0))
    with httpx.Client(timeout=httpx.Timeout(5, read=0.3)) as client, client.stream(
            "GET", url) as response:
        body = iter_rewritten(response, RW)
        got: list[bytes] = []
        with pytest.raises(httpx.ReadTimeout):
            for chunk in body:
                got.append(chunk)
        assert response.is_closed
        assert got and EXPECTED.startswith(b"".join(got))
    rec = origin.record("/stall")
    assert rec.disconnected


def test_read_timeout_async(origin: Origin) -> None:
    url = origin.serve("/stall-async", Reply([PAGE[:1500], PAGE[1500:]], HTML, stall=3.0))

    async def main() -> None:
        timeout = httpx.Timeout(5, read=0.3)
        async with httpx.AsyncClient(timeout=timeout) as client, client.stream(
                "GET", url) as response:
            with pytest.raises(httpx.ReadTimeout):
                async for _chunk in aiter_rewritten(response, RW):
                    pass
            assert response.is_closed

    asyncio.run(main())
    assert origin.record("/stall-async").disconnected


def test_corrupt_gzip_after_output_raises(origin: Origin) -> None:
    """A gzip body corrupt after the decision: the raw path raises ContentDecodingError and
    closes the response."""
    body = bytearray(gzip.compress(PAGE, mtime=0))
    body[-30:-8] = b"\xff" * 22
    url = origin.serve("/corrupt", Reply([bytes(body)], _headers("gzip")))
    with httpx.Client(timeout=5) as client, client.stream("GET", url) as response:
        with pytest.raises(htmlstream.http.ContentDecodingError):
            b"".join(iter_rewritten(response, RW, decoded=False))
        assert response.is_closed


@pytest.mark.parametrize("coding", ["identity", "gzip", "br"])
def test_transport(origin: Origin, coding: str) -> None:
    encode, _ = CODINGS[coding]
    body = encode(PAGE)
    transport = RewritingTransport(RW)
    with httpx.Client(transport=transport, timeout=5) as client:
        for n, chunks in enumerate(cuts(body)):
            url = origin.serve(f"/transport-{coding}-{n}", Reply(chunks, _headers(coding)))
            response = client.get(url)
            assert response.content == EXPECTED
            assert "content-length" not in response.headers or int(
                response.headers["content-length"]) != len(body)
        # A streamed response streams: the first chunk before the server's last write.
        gate = threading.Event()
        url = origin.serve(f"/transport-gate-{coding}",
                           Reply([body[:-8], body[-8:]], _headers(coding), gate=gate))
        with client.stream("GET", url) as response:
            parts = []
            for chunk in response.iter_bytes():
                parts.append(chunk)
                gate.set()
        assert b"".join(parts) == EXPECTED
        assert not origin.record(f"/transport-gate-{coding}").gate_timeout
        payload = json.dumps(list(range(500))).encode()
        url = origin.serve(f"/transport-json-{coding}", Reply([payload], HTML))
        assert client.get(url).content == payload
        url = origin.serve(f"/transport-png-{coding}",
                           Reply([b"\x89PNG"], [("Content-Type", "image/png")]))
        assert client.get(url).content == b"\x89PNG"


def test_async_transport(origin: Origin) -> None:
    body = gzip.compress(PAGE)

    async def main() -> None:
        transport = AsyncRewritingTransport(RW)
        async with httpx.AsyncClient(transport=transport, timeout=5) as client:
            for n, chunks in enumerate(cuts(body)):
                url = origin.serve(f"/atransport-{n}", Reply(chunks, _headers("gzip")))
                response = await client.get(url)
                assert response.content == EXPECTED
            url = origin.serve("/atransport-short", Reply([b"<p>hi"], HTML))
            assert (await client.get(url)).content == RW.rewrite(b"<p>hi")

    asyncio.run(main())


def test_transport_read_timeout_while_deciding(origin: Origin) -> None:
    """The transport reads up to the decision before returning the response: a stall there is
    the client's read timeout."""
    url = origin.serve("/transport-stall", Reply([PAGE[:100], PAGE[100:]], HTML, stall=1.0))
    timeout = httpx.Timeout(5, read=0.3)
    with httpx.Client(transport=RewritingTransport(RW), timeout=timeout) as client, \
            pytest.raises(httpx.ReadTimeout):
        client.get(url)
    assert wait_for(lambda: origin.records["/transport-stall"].finished.is_set())
    assert origin.record("/transport-stall").disconnected
