"""``htmlstream proxy`` (htmlstream.integrations.proxy): a real reverse proxy between real servers
on 127.0.0.1 (ephemeral ports), every wait bounded.

The origin is tests/http_servers.py's aiohttp app (scripted writes), or for the faults aiohttp
cannot produce (a lying ``Content-Length``, a close mid-body) a raw asyncio socket that writes a
scripted reply.  Clients are httpx, aiohttp, http.client and raw sockets.
"""

from __future__ import annotations

import asyncio
import gzip
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import pytest

aiohttp = pytest.importorskip("aiohttp")
httpx = pytest.importorskip("httpx")

from aiohttp import web  # noqa: E402

from htmlstream.http import HttpOptions  # noqa: E402
from htmlstream.integrations.proxy import ReverseProxy  # noqa: E402
from http_servers import Origin, Reply, new_proxy_loop  # noqa: E402
from integration_servers import BOOM_PAGE, JSON_AS_HTML, PAGE, RW, app_chunkings  # noqa: E402

EXPECTED = RW.rewrite(PAGE)
assert EXPECTED != PAGE


class ProxyThread:
    """A :class:`ReverseProxy` serving in a thread of its own (its own event loop)."""

    def __init__(self, upstream: str, **kwargs: Any) -> None:
        self.proxy = ReverseProxy(RW, upstream, **kwargs)
        self._loop = new_proxy_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def run(self, coro: Any, timeout: float = 15.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def __enter__(self) -> Self:
        self._thread.start()
        self.port = self.run(self.proxy.start("127.0.0.1", 0))[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self.run(self.proxy.close())

        async def pending() -> list[str]:
            await asyncio.sleep(0.05)
            return [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task()]

        left = self.run(pending())
        assert not left, left
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


class RawOrigin:
    """A socket server that answers every connection with ``reply`` (bytes, written in the
    given pieces with ``delay`` between them), then closes it."""

    def __init__(self, pieces: list[bytes], delay: float = 0.0) -> None:
        self.pieces = pieces
        self.delay = delay
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        self.sock.settimeout(10)
        try:
            conn, _ = self.sock.accept()    # one connection: a broken one is not retried
            with conn:
                conn.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    got = conn.recv(65536)
                    if not got:
                        break
                    data += got
                for piece in self.pieces:
                    conn.sendall(piece)
                    time.sleep(self.delay)
        except OSError:
            return

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        self._thread.join(12)


@pytest.fixture
def origin() -> Iterator[Origin]:
    async def echo(request: web.Request) -> web.Response:
        body = {"headers": [[k, v] for k, v in request.headers.items()],
                "peer": list(request.transport.get_extra_info("peername"))
                if request.transport else None,
                "path": request.raw_path, "body": (await request.read()).decode()}
        return web.json_response(body, headers={
            "Connection": "keep-alive, X-Secret", "X-Secret": "1", "Keep-Alive": "timeout=5",
            "Proxy-Authenticate": "Basic", "Trailer": "X-T", "X-Kept": "yes"})

    async def slow_headers(request: web.Request) -> web.Response:
        await asyncio.sleep(1.5)     # past the proxy's read timeout (1 s)
        return web.Response(text="late")

    async def range_(request: web.Request) -> web.Response:
        if "Range" in request.headers:
            return web.Response(status=206, body=PAGE[:100], headers={
                "Content-Type": "text/html", "Content-Range": f"bytes 0-99/{len(PAGE)}"})
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        return web.Response(body=PAGE, headers={"Content-Type": "text/html", "ETag": '"v1"'})

    with Origin(routes=[("*", "/echo", echo), ("GET", "/slow-headers", slow_headers),
                        ("*", "/range", range_)]) as o:
        yield o


@pytest.fixture
def proxy(origin: Origin) -> Iterator[ProxyThread]:
    with ProxyThread(origin.url(""), read_timeout=1.0, connect_timeout=2.0) as p:
        yield p


HTML = [("Content-Type", "text/html; charset=utf-8")]


def test_rewrites_whatever_the_chunking(origin: Origin, proxy: ProxyThread) -> None:
    with httpx.Client(timeout=10) as client:
        for i, chunks in enumerate(app_chunkings(PAGE)):
            origin.serve(f"/p{i}", Reply(chunks, headers=HTML, delay=0.001))
            r = client.get(proxy.url(f"/p{i}"))
            assert r.status_code == 200
            assert r.content == EXPECTED, i
            assert "content-length" not in r.headers or int(r.headers["content-length"]) == len(
                EXPECTED)


def test_gzip_rewritten_and_reencoded(origin: Origin, proxy: ProxyThread) -> None:
    body = gzip.compress(PAGE)
    for i, chunks in enumerate(app_chunkings(body)[:4]):
        origin.serve(f"/gz{i}", Reply(chunks, headers=[*HTML, ("Content-Encoding", "gzip")]))
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
            conn.sock = sock
            conn.request("GET", f"/gz{i}", headers={"Accept-Encoding": "gzip"})
            r = conn.getresponse()
            assert r.getheader("Content-Encoding") == "gzip"
            assert zlib.decompress(r.read(), 31) == EXPECTED


def test_json_as_html_passes_byte_identical(origin: Origin, proxy: ProxyThread) -> None:
    origin.serve("/json", Reply([JSON_AS_HTML[:10], JSON_AS_HTML[10:]], headers=[
        ("Content-Type", "text/html"), ("Content-Length", str(len(JSON_AS_HTML)))]))
    r = httpx.get(proxy.url("/json"), timeout=5)
    assert r.content == JSON_AS_HTML
    assert r.headers["content-length"] == str(len(JSON_AS_HTML))


def test_head_304_and_range(origin: Origin, proxy: ProxyThread) -> None:
    with httpx.Client(timeout=5) as client:
        r = client.head(proxy.url("/range"))
        # The headers of the GET: no Content-Length (it is rewritten), a weak ETag.
        assert r.status_code == 200 and r.content == b""
        assert "content-length" not in r.headers and r.headers["etag"] == 'W/"v1"'
        r = client.get(proxy.url("/range"), headers={"If-None-Match": '"v1"'})
        assert r.status_code == 304 and r.content == b""
        # The Range of a page is not forwarded: the whole page, rewritten.
        r = client.get(proxy.url("/range"), headers={"Range": "bytes=0-99"})
        assert r.status_code == 200 and r.content == RW.rewrite(PAGE)
        r = client.get(proxy.url("/range"))
        assert r.content == RW.rewrite(PAGE) and r.headers["etag"] == 'W/"v1"'
        # Forwarded (a request that says it is for a video), the origin's 206 of a page is
        # refused.
        r = client.get(proxy.url("/range"), headers={"Range": "bytes=0-99",
                                                     "Sec-Fetch-Dest": "video"})
        assert r.status_code == 502 and PAGE[:50] not in r.content


def test_keep_alive_both_sides(origin: Origin, proxy: ProxyThread) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
    peers = []
    for _ in range(3):
        conn.request("GET", "/echo")
        r = conn.getresponse()
        peers.append(tuple(json.loads(r.read())["peer"]))
        sock = conn.sock
    conn.request("GET", "/echo")
    conn.getresponse().read()
    assert conn.sock is sock            # the client connection was kept
    assert len(set(peers)) == 1         # so was the upstream one
    conn.close()


def test_headers_hop_by_hop_and_forwarded(origin: Origin, proxy: ProxyThread) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
    conn.request("POST", "/echo?q=1", body=b"hello", headers={
        "Connection": "keep-alive, X-Hop", "X-Hop": "1", "Keep-Alive": "300", "TE": "trailers",
        "Proxy-Authorization": "Basic x", "X-Forwarded-For": "6.6.6.6", "X-End": "kept",
        "X-Forwarded-Proto": "https"})
    r = conn.getresponse()
    seen = json.loads(r.read())
    names = {k.lower(): v for k, v in seen["headers"]}
    assert seen["path"] == "/echo?q=1" and seen["body"] == "hello"
    for hop in ("x-hop", "keep-alive", "te", "proxy-authorization"):
        assert hop not in names
    assert names["x-end"] == "kept"
    assert names["x-forwarded-for"] == "127.0.0.1"      # not trusted: replaced
    assert names["x-forwarded-proto"] == "http"
    assert names["x-forwarded-host"] == f"127.0.0.1:{proxy.port}"
    assert names["host"] == f"127.0.0.1:{origin.port}"
    for hop in ("X-Secret", "Keep-Alive", "Proxy-Authenticate", "Trailer"):
        assert r.getheader(hop) is None
    assert r.getheader("X-Kept") == "yes"
    conn.close()
    with ProxyThread(origin.url(""), trust_forwarded=True, preserve_host=True) as trusting:
        r2 = httpx.get(trusting.url("/echo"), headers={"X-Forwarded-For": "10.0.0.1",
                                                       "Host": "example.org"}, timeout=5)
        names = {k.lower(): v for k, v in r2.json()["headers"]}
        assert names["x-forwarded-for"] == "10.0.0.1, 127.0.0.1"
        assert names["host"] == "example.org"


def test_request_body_streamed(origin: Origin, proxy: ProxyThread) -> None:
    def pieces() -> Iterator[bytes]:
        for i in range(50):
            yield b"piece %d;" % i

    r = httpx.post(proxy.url("/echo"), content=pieces(), timeout=5)     # chunked upstream too
    assert r.json()["body"] == "".join(f"piece {i};" for i in range(50))


def test_expect_100_continue(origin: Origin, proxy: ProxyThread) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                     b"Expect: 100-continue\r\nConnection: close\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b"hello")
        data = b""
        while got := sock.recv(65536):
            data += got
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    seen = json.loads(body)
    assert seen["body"] == "hello"
    assert "expect" not in {k.lower() for k, _ in seen["headers"]}


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            got = sock.recv(65536)
            if not got:
                break
            data += got
        return data


def test_never_an_open_proxy(origin: Origin, proxy: ProxyThread) -> None:
    assert _raw(proxy.port, b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n"
                ).startswith(b"HTTP/1.1 421")
    assert _raw(proxy.port, b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
                ).startswith(b"HTTP/1.1 405")
    ws = (b"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
          b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    # A WebSocket upgrade goes to the upstream too (tests/test_proxy_websocket.py), which here
    # does not upgrade: its status comes back, and no connection to another host is made.
    assert _raw(proxy.port, ws).startswith(b"HTTP/1.1 200")
    # An absolute-form target naming the upstream itself is served.
    own = f"GET http://127.0.0.1:{origin.port}/echo HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    assert _raw(proxy.port, own).startswith(b"HTTP/1.1 200")


def test_upstream_unreachable_and_stalled(origin: Origin, proxy: ProxyThread) -> None:
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with ProxyThread(f"http://127.0.0.1:{port}") as dead:
        assert httpx.get(dead.url("/"), timeout=5).status_code == 502
    started = time.monotonic()
    assert httpx.get(proxy.url("/slow-headers"), timeout=5).status_code == 504
    assert time.monotonic() - started < 2.5
    # Stalls after the first bytes: the client connection is aborted (read_timeout 1 s).
    origin.serve("/stall", Reply([PAGE[:2000], PAGE[2000:]], headers=HTML, stall=1.5))
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(proxy.url("/stall"), timeout=5)


def _head(length: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + length + b"\r\n"


@pytest.mark.parametrize(("pieces", "aborted"), [
    ([_head(b"Content-Length: 100000\r\n"), PAGE], True),       # lies, then closes
    ([_head(b"Transfer-Encoding: chunked\r\n"), b"%x\r\n" % len(PAGE) + PAGE + b"\r\n"], True),
    ([_head(b"Content-Length: 100000\r\n"), PAGE[:500]], False),  # closes before deciding
], ids=["lying-length", "chunked-no-end", "early-close"])
def test_upstream_breaks_off(pieces: list[bytes], aborted: bool,
                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", "htmlstream.proxy")
    with RawOrigin(pieces) as raw, ProxyThread(f"http://127.0.0.1:{raw.port}") as p:
        data = _read_all(p.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    if not aborted:     # nothing was sent yet: an error status
        assert data.startswith(b"HTTP/1.1 502")
        return
    # Output was sent: the body is cut off, never ended cleanly (no last chunk).
    assert data.startswith(b"HTTP/1.1 200")
    assert b"transfer-encoding: chunked" in data.lower()
    assert b"https://example.com/" in data
    assert not data.endswith(b"0\r\n\r\n")
    assert "aborted: upstream" in caplog.text


def _read_all(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while True:
            try:
                got = sock.recv(65536)
            except ConnectionResetError:
                break
            if not got:
                break
            data += got
        return data


def test_handler_error_aborts(origin: Origin, proxy: ProxyThread,
                              caplog: pytest.LogCaptureFixture) -> None:
    # A rewriter handler raises in the second half of the page: after output was sent.
    caplog.set_level("INFO", "htmlstream.proxy")
    origin.serve("/boom", Reply([BOOM_PAGE[:4000], BOOM_PAGE[4000:]], headers=HTML, delay=0.2))
    data = _read_all(proxy.port, b"GET /boom HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200") and not data.endswith(b"0\r\n\r\n")
    assert "aborted: rewrite failed" in caplog.text
    # Before any output: a 502.
    origin.serve("/boom0", Reply([BOOM_PAGE], headers=HTML))
    assert httpx.get(proxy.url("/boom0"), timeout=5).status_code == 502


@pytest.mark.parametrize("split", [0, 200])
def test_gzip_bomb_bounded(origin: Origin, split: int) -> None:
    bomb = gzip.compress(b"<!doctype html><p>" + b"a" * (16 << 20), 9)
    assert len(bomb) < 100_000
    chunks = [bomb[:split], bomb[split:]] if split else [bomb]
    origin.serve("/bomb", Reply(chunks, headers=[*HTML, ("Content-Encoding", "gzip")],
                                delay=0.05))
    options = HttpOptions(max_decoded_size=1 << 20)
    with ProxyThread(origin.url(""), options=options) as p:
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=5)
        conn.request("GET", "/bomb")
        r = conn.getresponse()
        if split:
            # The rewrite was decided and output sent before the limit was hit: aborted.
            with pytest.raises(http.client.IncompleteRead):
                r.read()
        else:
            # The limit was hit before anything was sent: refused, none of its bytes sent.
            assert r.status == 502 and r.read() != bomb
        conn.close()
        assert time.monotonic() - started < 5


def test_client_disconnect_closes_upstream(origin: Origin, proxy: ProxyThread) -> None:
    chunks = [PAGE] * 200
    origin.serve("/long", Reply(chunks, headers=HTML, delay=0.02))
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(b"GET /long HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 200")
    rec = origin.record("/long")
    assert rec.disconnected and not rec.done


def test_slow_client_memory_bounded(origin: Origin, proxy: ProxyThread) -> None:
    piece = PAGE * 8        # 64 KiB-ish, one object: the origin holds no copies
    total = 400             # ~26 MB
    origin.serve("/big", Reply([piece] * total, headers=HTML))
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(5)
    tracemalloc.start()
    try:
        sock.connect(("127.0.0.1", proxy.port))
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        got = 0
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            got += len(sock.recv(4096))
            time.sleep(0.01)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        sock.close()
    assert got < len(piece) * total // 4        # the client took only a part
    print(f"slow client: {got} bytes read, traced peak {peak} bytes")
    assert peak < 12 << 20, f"peak {peak} bytes"  # far less than the page: not buffered
    rec = origin.record("/big")
    assert not rec.done                          # the origin was held back, then cut off


def test_many_concurrent_clients(origin: Origin) -> None:
    origin.serve("/c", Reply([PAGE[:3000], PAGE[3000:]], headers=HTML, delay=0.01))
    # (its own proxy: the fixture's 1 s read timeout can pass on a loaded machine, 300 at once)
    with ProxyThread(origin.url(""), read_timeout=30.0) as proxy:
        _many_concurrent_clients(proxy)


def _many_concurrent_clients(proxy: ProxyThread) -> None:
    async def main() -> list[bytes]:
        conn = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=conn,
                                         timeout=aiohttp.ClientTimeout(total=60)) as s:
            async def one() -> bytes:
                async with s.get(proxy.url("/c")) as r:
                    return bytes(await r.read())
            return await asyncio.gather(*(one() for _ in range(300)))

    started = time.monotonic()
    bodies = asyncio.run(main())
    assert all(b == EXPECTED for b in bodies)
    assert time.monotonic() - started < 60


def test_cli_proxy_subprocess_graceful(origin: Origin) -> None:
    origin.serve("/cli", Reply([PAGE[:3000], PAGE[3000:]], headers=HTML, delay=1.0))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "htmlstream.cli", "proxy", "--upstream", origin.url(""),
         "--listen", "127.0.0.1:0", "--grace", "5", "--on", "p", "--set-attr", "class=x"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert "listening on http://127.0.0.1:" in line, line
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
        result: list[bytes] = []
        started = threading.Event()

        def fetch() -> None:
            with httpx.stream("GET", f"http://127.0.0.1:{port}/cli", timeout=10) as r:
                body = b""
                for piece in r.iter_bytes():
                    body += piece
                    started.set()
                result.append(body)

        client = threading.Thread(target=fetch)
        client.start()
        assert started.wait(5)              # the response is in flight (the origin waits 1 s)
        proc.send_signal(signal.SIGTERM)
        client.join(10)
        assert result and result[0] == PAGE.replace(b"<p>", b'<p class="x">')
        assert proc.wait(10) == 0
        err = proc.stderr.read().decode() if proc.stderr else ""
        assert '"GET /cli HTTP/1.1" 200' in err and "rewritten" in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y "
                    "chromium)")
@pytest.mark.parametrize("coding", ["identity", "gzip"])
def test_chromium_through_the_proxy(origin: Origin, proxy: ProxyThread, tmp_path: Path,
                                    coding: str) -> None:
    # A page streamed in pieces (chunked, spaced in time), its links rewritten by the proxy; a
    # script at its end counts them in the browser's DOM.
    page = PAGE.replace(b"</body>", b"<p id=out></p><script>document.getElementById('out')"
                        b".textContent = document.querySelectorAll('a[href^=\"https:\"]')"
                        b".length + ' https links'</script></body>")
    body = gzip.compress(page) if coding == "gzip" else page
    headers = [*HTML, ("Content-Encoding", "gzip")] if coding == "gzip" else HTML
    origin.serve("/browser", Reply([body[i:i + 1000] for i in range(0, len(body), 1000)],
                                   headers=headers, delay=0.005))
    assert CHROMIUM is not None
    res = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
         proxy.url("/browser")],
        capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert '<p id="out">120 https links</p>' in res.stdout
    assert "http://example.com" not in res.stdout


def test_cli_tls_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from htmlstream.cli import main

    args = ["proxy", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"]
    assert main([*args, "--tls-key", str(tmp_path / "key.pem")]) != 0
    assert "--tls-key needs --tls-cert" in capsys.readouterr().err
    (tmp_path / "cert.pem").write_text("not a certificate")
    assert main([*args, "--tls-cert", str(tmp_path / "cert.pem")]) != 0
    assert "cannot load the TLS certificate" in capsys.readouterr().err
