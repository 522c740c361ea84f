"""``htmlstream proxy`` under attack: the client timeouts and limits
(htmlstream.integrations.proxy_limits) and ``--workers``, with real sockets on 127.0.0.1.

The limits are set to a few seconds.  The proxy runs in a thread of the test process (its
counters and access log can be read) or as the command itself in a subprocess (its
descriptors counted in /proc, its workers killed and stopped).  Every wait is bounded; time
bounds are generous, for a loaded 2-core machine, and the figures measured are printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import logging
import os
import re
import selectors
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import htmlstream

aiohttp = pytest.importorskip("aiohttp")
httpx = pytest.importorskip("httpx")

from aiohttp import web  # noqa: E402

from htmlstream.integrations.proxy import ReverseProxy, ServerLimits  # noqa: E402
from http_servers import Origin, Reply, new_proxy_loop  # noqa: E402
from integration_servers import PAGE, RW  # noqa: E402
from tls_certs import client_context, self_signed, server_context  # noqa: E402

EXPECTED = RW.rewrite(PAGE)
CLI_RW = htmlstream.Rewriter()       # the command's --on "a[href^='http:']" --set-attr x=1
CLI_RW.on("a[href^='http:']", element=lambda el: el.set_attribute("x", "1"))
CLI_EXPECTED = CLI_RW.rewrite(PAGE)
assert CLI_EXPECTED != PAGE
HTML = [("Content-Type", "text/html; charset=utf-8")]
LINUX = sys.platform.startswith("linux")


class ProxyThread:
    """A :class:`ReverseProxy` serving in a thread of its own (its own event loop)."""

    def __init__(self, upstream: str, ssl_context: ssl.SSLContext | None = None,
                 **limits: Any) -> None:
        self._ssl = ssl_context
        self.proxy = ReverseProxy(RW, upstream, read_timeout=30.0, shutdown_grace=2.0,
                                  limits=ServerLimits(**limits))
        self._loop = new_proxy_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def run(self, coro: Any, timeout: float = 15.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def counter(self, name: str) -> int:
        return self.proxy.counters.snapshot()[name]

    def __enter__(self) -> Self:
        self._thread.start()
        self.port = self.run(self.proxy.start("127.0.0.1", 0, ssl_context=self._ssl))[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self.run(self.proxy.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


def until(condition: Any, timeout: float) -> bool:
    """Poll an outside condition (another process's state, a counter) for ``timeout`` s."""
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def read_response(sock: socket.socket) -> bytes:
    """Read until the peer closes (or resets) the connection."""
    data = b""
    while True:
        try:
            got = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not got:
            return data
        data += got


@pytest.fixture
def origin() -> Iterator[Origin]:
    async def upload(request: web.Request) -> web.Response:
        body = await request.read()     # (a cut body raises: the request is not complete)
        uploads.append(len(body))
        return web.Response(text=f"got {len(body)}")

    uploads: list[int] = []
    with Origin(routes=[("POST", "/upload", upload)]) as o:
        o.uploads = uploads     # type: ignore[attr-defined]
        o.serve("/page", Reply([PAGE], headers=HTML))
        yield o


# ------------------------------------------------------------------ header and keep-alive


def test_header_timeout_answers_408_and_closes(origin: Origin,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "htmlstream.proxy")
    with ProxyThread(origin.url(""), header_timeout=1.0, summary_interval=0.5) as proxy:
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as partial:
            partial.sendall(b"GET /page HTTP/1.1\r\nHost: x\r\n")
            silent = [socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
                      for _ in range(5)]
            got = read_response(partial)
            elapsed = time.monotonic() - started
            for sock in silent:
                assert read_response(sock) == b""     # nothing came: closed without a word
                sock.close()
        assert got.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), got
        assert b"Connection: close" in got
        assert 0.9 <= elapsed < 4.0, elapsed
        assert until(lambda: proxy.counter("limits.header_timeout") == 6, 5)
        assert until(lambda: proxy.counter("open") == 0, 5)
        # The first is logged, the others summarised in one line.
        assert until(lambda: "not logged one by one: 5 header timeout" in caplog.text, 5)
    assert caplog.text.count("closed: header timeout") == 1
    assert origin.requests == []


def test_idle_keepalive_closed(origin: Origin) -> None:
    with ProxyThread(origin.url(""), keepalive_timeout=1.5, header_timeout=10.0) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        for _ in range(2):      # kept alive between requests, closed once idle
            sock.sendall(b"GET /page HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while not data.endswith(b"0\r\n\r\n"):
                got = sock.recv(65536)
                assert got, data
                data += got
            assert data.startswith(b"HTTP/1.1 200")
        idle = time.monotonic()
        assert sock.recv(100) == b""
        elapsed = time.monotonic() - idle
        assert 1.4 <= elapsed < 4.5, elapsed
        assert until(lambda: proxy.counter("limits.keepalive_timeout") == 1, 5)
        assert proxy.counter("limits.header_timeout") == 0


def test_slowloris_trickle_does_not_extend_the_header_timeout(origin: Origin) -> None:
    # A byte every 0.2 s: the header timeout counts from the first byte, not the last.
    with ProxyThread(origin.url(""), header_timeout=1.0) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /page HTTP/1.1\r\n")
        closed = threading.Event()
        sock.settimeout(0.2)
        got = b""
        while not closed.is_set() and time.monotonic() - started < 6:
            try:
                sock.sendall(b"X")
                piece = sock.recv(1000)
                got += piece
                if not piece:
                    closed.set()
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed.set()
        assert closed.is_set()
        assert got.startswith(b"HTTP/1.1 408"), got
        assert time.monotonic() - started < 4.0
        assert until(lambda: proxy.counter("limits.header_timeout") == 1, 5)


def test_tls_handshake_and_head_bounded_by_the_header_timeout(
        origin: Origin, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pair = self_signed(tmp_path)
    if pair is None:
        pytest.skip("neither openssl nor cryptography is there to make a certificate")
    cert, key = pair
    caplog.set_level(logging.INFO, "htmlstream.proxy")
    with ProxyThread(origin.url(""), ssl_context=server_context(cert, key),
                     header_timeout=1.0) as proxy:
        r = httpx.get(f"https://127.0.0.1:{proxy.port}/page", verify=client_context(cert),
                      timeout=10)
        assert r.status_code == 200 and r.content == EXPECTED
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as raw:
            assert read_response(raw) == b""      # no handshake: closed
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as plain, \
                client_context(cert).wrap_socket(plain, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET /page HTTP/1.1\r\nHost: x\r\n")
            got = b""
            with contextlib.suppress(ssl.SSLError, OSError):
                while piece := tls.recv(4096):
                    got += piece
            assert got.startswith(b"HTTP/1.1 408"), got
        assert until(lambda: proxy.counter("limits.header_timeout") == 2, 5)
        assert until(lambda: proxy.counter("open") == 0, 5)
    assert "closed: header timeout (the TLS handshake did not complete)" in caplog.text


# ------------------------------------------------------------------ bodies


def test_declared_body_too_large_gets_413_and_never_reaches_upstream(origin: Origin) -> None:
    with ProxyThread(origin.url(""), max_body_size=1000) as proxy:
        r = httpx.post(proxy.url("/upload"), content=b"x" * 5000, timeout=10)
        assert r.status_code == 413
        assert r.headers["connection"] == "close"
        ok = httpx.post(proxy.url("/upload"), content=b"x" * 1000, timeout=10)
        assert ok.status_code == 200 and ok.text == "got 1000"
        assert proxy.counter("limits.max_body_size") == 1
    assert origin.requests == ["/upload"]       # the second one only
    assert origin.uploads == [1000]             # type: ignore[attr-defined]


def test_chunked_body_too_large_is_cut_before_its_end(origin: Origin) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(50):
            yield b"y" * 100
    with ProxyThread(origin.url(""), max_body_size=1000) as proxy:
        r = httpx.post(proxy.url("/upload"), content=chunks(), timeout=10)
        assert r.status_code == 413
        small = httpx.post(proxy.url("/upload"), content=iter([b"z" * 600]), timeout=10)
        assert small.status_code == 200 and small.text == "got 600"
        assert proxy.counter("limits.max_body_size") == 1
    assert origin.uploads == [600]      # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def limited() -> Iterator[tuple[Origin, ProxyThread]]:
    async def upload(request: web.Request) -> web.Response:
        body = await request.read()
        uploads.append(body)
        return web.Response(text=f"got {len(body)}")

    uploads: list[bytes] = []
    with Origin(routes=[("POST", "/upload", upload)]) as o, \
            ProxyThread(o.url(""), max_body_size=1000) as proxy:
        o.uploads = uploads     # type: ignore[attr-defined]
        yield o, proxy


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None,
          max_examples=60)
@given(size=st.integers(0, 2500), pieces=st.integers(1, 7), chunked=st.booleans())
def test_body_limit_property(limited: tuple[Origin, ProxyThread], size: int, pieces: int,
                             chunked: bool) -> None:
    """Whatever its size, framing and pieces: a body over 1000 bytes gets 413 and never
    reaches the upstream; one within it reaches it whole."""
    origin, proxy = limited
    body = bytes(i % 251 for i in range(size))
    cuts = sorted({size * k // pieces for k in range(pieces + 1)})
    parts = [body[a:b] for a, b in itertools.pairwise(cuts)]
    before = list(origin.uploads)       # type: ignore[attr-defined]
    content: Any = iter(parts) if chunked else body
    r = httpx.post(proxy.url("/upload"), content=content, timeout=10)
    after = origin.uploads              # type: ignore[attr-defined]
    if size > 1000:
        assert r.status_code == 413
        assert after == before
    else:
        assert r.status_code == 200 and r.text == f"got {size}"
        assert after == [*before, body]


def test_stalled_upload_closed_after_body_timeout(origin: Origin) -> None:
    with ProxyThread(origin.url(""), body_timeout=1.5) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
                     + b"a" * 100)
        stalled = time.monotonic()
        got = read_response(sock)
        elapsed = time.monotonic() - stalled
        assert got.startswith(b"HTTP/1.1 408"), got
        assert 1.4 <= elapsed < 5.0, elapsed
        assert until(lambda: proxy.counter("limits.body_timeout") == 1, 5)
        assert until(lambda: proxy.counter("open") == 0, 5)
    assert origin.uploads == []     # type: ignore[attr-defined]


def test_upload_paced_below_the_timeout_passes(origin: Origin) -> None:
    # Reads spaced by less than the body timeout: the upload lasts longer than it, and passes.
    def paced() -> Iterator[bytes]:
        for _ in range(4):
            yield b"p" * 10
            time.sleep(0.4)
    with ProxyThread(origin.url(""), body_timeout=1.0) as proxy:
        r = httpx.post(proxy.url("/upload"), content=paced(), timeout=10)
        assert r.status_code == 200 and r.text == "got 40"
        assert proxy.counter("limits.body_timeout") == 0


# ------------------------------------------------------------------ slow reader


def test_slow_reader_closed_after_send_timeout_with_its_upstream(
        origin: Origin, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "htmlstream.proxy")
    piece = PAGE * 8
    origin.serve("/big", Reply([piece] * 400, headers=HTML))      # ~26 MB, rewritten
    with ProxyThread(origin.url(""), send_timeout=2.0) as proxy:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(5)
        stop = threading.Event()
        got = [0]

        def trickle() -> None:          # one byte a second
            while not stop.is_set():
                try:
                    data = sock.recv(1)
                except OSError:
                    return
                if not data:
                    return
                got[0] += 1
                stop.wait(1.0)

        with sock:
            sock.connect(("127.0.0.1", proxy.port))
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            started = time.monotonic()
            reader = threading.Thread(target=trickle)
            reader.start()
            rec = origin.record("/big", timeout=30)     # the upstream connection is closed
            elapsed = time.monotonic() - started
            stop.set()
            reader.join(10)
            assert rec.disconnected and not rec.done
            assert until(lambda: proxy.counter("limits.send_timeout") == 1, 5)
            assert 2.0 <= elapsed < 20.0, elapsed
            sock.settimeout(10)
            rest = read_response(sock)      # what the kernel held, then the end
            assert got[0] + len(rest) < len(piece) * 400 // 4
        print(f"slow reader: upstream closed {elapsed:.2f}s after the request "
              f"(send timeout 2s)")
    assert '"GET /big HTTP/1.1" 200' in caplog.text
    assert "closed: send timeout" in caplog.text


# ------------------------------------------------------------------ connection cap


def test_connection_cap(origin: Origin) -> None:
    gate = threading.Event()
    origin.serve("/hold", Reply([b"<p>first", b"<p>last"], headers=HTML, gate=gate))
    cap, flood = 100, 400
    with ProxyThread(origin.url(""), max_connections=cap) as proxy:
        held = []
        for _ in range(cap):
            sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            sock.sendall(b"GET /hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            held.append(sock)
        try:
            assert until(lambda: len(origin.requests) == cap, 10)
            waiting: list[socket.socket] = []
            refused = 0
            for _ in range(flood):
                sock = socket.socket()
                sock.settimeout(2)
                try:
                    sock.connect(("127.0.0.1", proxy.port))
                    sock.sendall(b"GET /page HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    waiting.append(sock)
                except OSError as exc:      # refused, or timed out while queued
                    assert isinstance(exc, (ConnectionRefusedError, TimeoutError)), exc
                    refused += 1
                    sock.close()
            assert until(lambda: proxy.counter("limits.max_connections") >= 1, 5)
            assert proxy.counter("accepted") == cap     # the flood waits, not accepted
            assert proxy.counter("open") == cap
            # Half the flood gives up; the 100 finish; the rest gets served.
            for sock in waiting[::2]:
                sock.close()
            gate.set()
            for sock in held:
                sock.settimeout(10)
                body = read_response(sock)
                assert body.startswith(b"HTTP/1.1 200") and body.endswith(b"0\r\n\r\n"), body
            served = 0
            for sock in waiting[1::2]:
                sock.settimeout(20)
                body = read_response(sock)
                assert body.startswith(b"HTTP/1.1 200"), body
                served += 1
            r = httpx.get(proxy.url("/page"), timeout=10)
            assert r.status_code == 200 and r.content == EXPECTED
            print(f"connection cap {cap}: {len(waiting)} of {flood} queued ({refused} "
                  f"refused), {served} of them served once the held ones finished")
            assert until(lambda: proxy.counter("open") == 0, 5)
        finally:
            for sock in held + waiting:
                sock.close()


# ------------------------------------------------------------------ the command


class Command:
    """``htmlstream proxy`` in a subprocess; its standard error read by a thread."""

    def __init__(self, upstream: str, *args: str) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "htmlstream.cli", "proxy", "--upstream", upstream,
             "--listen", "127.0.0.1:0", "--on", "a[href^='http:']", "--set-attr", "x=1",
             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        assert "listening on http://127.0.0.1:" in line, line
        self.banner = line
        self.port = int(line.split("127.0.0.1:")[1].split("/")[0])
        self.lines: list[str] = []
        self._new = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._new:
                self.lines.append(raw.decode(errors="replace"))
                self._new.notify_all()

    def wait_line(self, pattern: str, timeout: float = 10.0) -> str:
        """The first line of standard error matching ``pattern`` (waits for it)."""
        with self._new:
            found = self._new.wait_for(
                lambda: next((ln for ln in self.lines if re.search(pattern, ln)), None),
                timeout)
        assert found, f"no line matching {pattern!r} in {''.join(self.lines)}"
        return found

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def workers(self) -> list[int]:
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(pid) for pid in children.read_text().split()] if children.exists() else []

    def descriptors(self) -> int:
        # (Not /dev/null: uvloop opens it once, at a loop's first connection, and keeps it;
        # a worker that had served none at the baseline would count it as a leak.)
        count = 0
        for pid in [self.proc.pid, *self.workers()]:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    count += os.readlink(f"/proc/{pid}/fd/{fd}") != "/dev/null"
        return count

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._reader.join(5)


@pytest.mark.skipif(not LINUX, reason="counts descriptors in /proc")
@pytest.mark.parametrize("workers", [1, 2])
def test_slowloris_1000_connections(origin: Origin, workers: int) -> None:
    """1,000 connections sending a partial request head, then a byte a second: each is
    closed within the header timeout (+1 s), normal requests are served meanwhile, and the
    descriptors come back to their baseline."""
    header_timeout = 2.0
    count = 1000
    with Command(origin.url(""), "--header-timeout", str(header_timeout), "--workers",
                 str(workers), "--max-connections", "4096") as cmd, \
            httpx.Client(timeout=10) as client:
        for _ in range(3):      # warm up: the upstream pool has its connection
            assert client.get(cmd.url("/page")).content == CLI_EXPECTED
        if workers > 1:
            assert until(lambda: len(cmd.workers()) == workers, 10)
        baseline = cmd.descriptors()

        latencies: list[float] = []
        attack_over = threading.Event()

        def normal() -> None:
            while not attack_over.is_set():
                started = time.perf_counter()
                r = client.get(cmd.url("/page"))
                latencies.append(time.perf_counter() - started)
                assert r.status_code == 200 and r.content == CLI_EXPECTED
                attack_over.wait(0.02)

        sel = selectors.DefaultSelector()
        opened: dict[socket.socket, float] = {}
        closed: dict[socket.socket, float] = {}
        answered = 0
        user = threading.Thread(target=normal)
        user.start()
        try:
            for _ in range(count):
                sock = socket.create_connection(("127.0.0.1", cmd.port), timeout=10)
                opened[sock] = time.monotonic()
                sock.sendall(b"GET /page HTTP/1.1\r\nHost: x\r\n")
                sock.setblocking(False)
                sel.register(sock, selectors.EVENT_READ)
            next_tick = time.monotonic() + 1.0
            end = time.monotonic() + header_timeout + 10
            while len(closed) < count and time.monotonic() < end:
                for key, _ in sel.select(max(0.0, next_tick - time.monotonic())):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        data = sock.recv(4096)
                    except (ConnectionResetError, BlockingIOError):
                        data = b""
                    if data.startswith(b"HTTP/1.1 408"):
                        answered += 1
                    if not data or b"request timed out" in data:
                        closed[sock] = time.monotonic()
                        sel.unregister(sock)
                if time.monotonic() >= next_tick:       # a byte a second, each
                    next_tick += 1.0
                    for sock in opened:
                        if sock not in closed:
                            try:
                                sock.send(b"X")
                            except OSError as exc:
                                assert exc.errno in (errno.EPIPE, errno.ECONNRESET)
        finally:
            attack_over.set()
            user.join(20)
            sel.close()
            for sock in opened:
                sock.close()
        assert len(closed) == count, f"{count - len(closed)} still open"
        held = sorted(closed[s] - opened[s] for s in opened)
        latencies.sort()
        p99 = latencies[int(len(latencies) * 0.99) - 1] if latencies else 0.0
        print(f"slowloris, {workers} worker(s): {count} connections held "
              f"{held[0]:.2f}-{held[-1]:.2f}s (header timeout {header_timeout:g}s), "
              f"{answered} answered 408; {len(latencies)} normal requests meanwhile, "
              f"p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, "
              f"p99 {p99 * 1000:.1f} ms")
        assert held[-1] <= header_timeout + 1.0 + 1.0, held[-1]
        assert held[0] >= header_timeout - 0.3
        assert answered == count
        assert latencies and p99 < 1.0
        assert until(lambda: cmd.descriptors() <= baseline, 10), \
            (cmd.descriptors(), baseline)
    # Stopped: the flood is in the log as a few lines and a summary, not 1,000 lines.
    log = "".join(cmd.lines)
    assert log.count("closed: header timeout") <= workers, log
    summaries = re.findall(r"- limits in the last 10s, not logged one by one: (\d+) header "
                           r"timeout", log)
    assert sum(map(int, summaries)) + log.count("closed: header timeout") == count, log


@pytest.mark.skipif(not hasattr(os, "fork") or not LINUX, reason="POSIX, /proc")
def test_workers_replace_a_killed_one_and_drain_on_sigterm(origin: Origin) -> None:
    origin.serve("/slow", Reply([PAGE[:3000], PAGE[3000:]], headers=HTML, delay=1.5))
    with Command(origin.url(""), "--workers", "2", "--grace", "5") as cmd:
        assert until(lambda: len(cmd.workers()) == 2, 10)
        first = cmd.workers()
        for _ in range(10):
            assert httpx.get(cmd.url("/page"), timeout=10).content == CLI_EXPECTED
        # (the log line follows the response: a worker killed at once could lose its last)
        assert until(lambda: "".join(cmd.lines).count('"GET /page HTTP/1.1" 200') == 10, 10)
        os.kill(first[0], signal.SIGKILL)
        cmd.wait_line(rf"worker {first[0]} was killed by SIGKILL")
        cmd.wait_line(r"started in place of the one that died")
        assert until(lambda: len(cmd.workers()) == 2 and first[0] not in cmd.workers(), 10)
        for _ in range(10):
            assert httpx.get(cmd.url("/page"), timeout=10).content == CLI_EXPECTED

        # SIGTERM with requests in flight on both workers: each completes, then all exit.
        results: list[bytes] = []
        started = threading.Barrier(5)

        def fetch() -> None:
            with httpx.Client(timeout=15) as client, client.stream("GET", cmd.url("/slow")) as r:
                body = b""
                for i, piece in enumerate(r.iter_bytes()):
                    if i == 0:
                        started.wait(10)
                    body += piece
                results.append(body)

        clients = [threading.Thread(target=fetch) for _ in range(4)]
        for client in clients:
            client.start()
        started.wait(10)
        workers = cmd.workers()
        cmd.proc.send_signal(signal.SIGTERM)
        for client in clients:
            client.join(15)
        assert results == [CLI_RW.rewrite(PAGE)] * 4
        assert cmd.proc.wait(15) == 0
        assert all(not Path(f"/proc/{pid}").exists() for pid in workers)
        cmd._reader.join(5)
        log = "".join(cmd.lines)
        # one access-log line per request, whichever worker served it
        assert log.count('"GET /page HTTP/1.1" 200') == 20, log
        assert log.count('"GET /slow HTTP/1.1" 200') == 4, log
        assert "stopping: 2 workers get 5s" in log
        with pytest.raises(httpx.ConnectError):
            httpx.get(cmd.url("/page"), timeout=5)


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")      # a zombie has ended


@pytest.mark.skipif(not hasattr(os, "fork") or not LINUX, reason="POSIX, /proc")
def test_workers_stop_when_the_supervisor_is_killed(origin: Origin) -> None:
    with Command(origin.url(""), "--workers", "2", "--grace", "2") as cmd:
        assert until(lambda: len(cmd.workers()) == 2, 10)
        workers = cmd.workers()
        assert httpx.get(cmd.url("/page"), timeout=10).content == CLI_EXPECTED
        cmd.proc.kill()
        cmd.proc.wait(5)
        assert until(lambda: all(_gone(pid) for pid in workers), 15), workers


@pytest.mark.skipif(not hasattr(os, "fork") or not LINUX, reason="POSIX, /proc")
def test_limits_hold_with_two_workers(origin: Origin) -> None:
    """The command with --workers 2: 413 for a large body (the origin never sees it), 408 for
    a stalled one, an idle keep-alive closed; whichever worker a connection lands on."""
    with Command(origin.url(""), "--workers", "2", "--max-body-size", "1k",
                 "--body-timeout", "1.5", "--keepalive-timeout", "1.5") as cmd:
        for _ in range(4):
            r = httpx.post(cmd.url("/upload"), content=b"x" * 2000, timeout=10)
            assert r.status_code == 413
            ok = httpx.post(cmd.url("/upload"), content=b"x" * 1024, timeout=10)
            assert ok.status_code == 200 and ok.text == "got 1024"
        assert origin.uploads == [1024] * 4    # type: ignore[attr-defined]
        socks = [socket.create_connection(("127.0.0.1", cmd.port), timeout=10)
                 for _ in range(4)]
        try:
            for sock in socks:
                sock.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
                             b"a")
            started = time.monotonic()
            for sock in socks:
                assert read_response(sock).startswith(b"HTTP/1.1 408")
            assert 1.4 <= time.monotonic() - started < 6.0
        finally:
            for sock in socks:
                sock.close()
        with socket.create_connection(("127.0.0.1", cmd.port), timeout=10) as sock:
            sock.sendall(b"GET /page HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while not data.endswith(b"0\r\n\r\n"):
                got = sock.recv(65536)
                assert got, data
                data += got
            idle = time.monotonic()
            assert sock.recv(100) == b""
            assert 1.4 <= time.monotonic() - idle < 6.0
    assert origin.uploads == [1024] * 4    # type: ignore[attr-defined]


@pytest.mark.skipif(not hasattr(os, "fork") or not LINUX, reason="POSIX, /proc")
def test_a_second_instance_on_the_port_fails(origin: Origin) -> None:
    # SO_REUSEPORT would let it share the port silently: it must fail as a bind does.
    with Command(origin.url(""), "--workers", "2") as cmd:
        second = subprocess.run(
            [sys.executable, "-m", "htmlstream.cli", "proxy", "--upstream", origin.url(""),
             "--listen", f"127.0.0.1:{cmd.port}", "--workers", "2"],
            capture_output=True, text=True, timeout=30, check=False)
        assert second.returncode == 2, second.stderr
        assert "Address already in use" in second.stderr
        assert httpx.get(cmd.url("/page"), timeout=10).content == CLI_EXPECTED
