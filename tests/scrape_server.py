"""A misbehaving HTTP/1.1 server for the scraping tests: plain asyncio on 127.0.0.1 (an ephemeral
port), in a thread of its own, speaking just enough HTTP (keep-alive, Content-Length and chunked
bodies) to be slow, stall, reset, answer 503/429 with ``Retry-After``, redirect in circles, send a
gzip bomb, a wrong charset, an endless page, or what is not a page (an image, JSON, a PDF...).

It counts its open connections (``open``; a test waits for zero: the client closed everything)
and the requests in flight at once (``max_in_flight``), and logs every request (``requests``).
Every wait is bounded (``MAX_WAIT``), and ``stop()`` closes whatever is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gzip
import socket
import struct
import threading
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import Any, Self

#: The longest a handler waits or trickles, in seconds.
MAX_WAIT = 5.0

Handler = Callable[["Request", asyncio.StreamWriter], Awaitable[bool]]


@dataclasses.dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    time: float
    reader: asyncio.StreamReader | None = None


async def until_closed(request: Request) -> bool:
    """Wait (at most MAX_WAIT) for the client to close the connection: a stall that still sees
    the client go away."""
    assert request.reader is not None
    with contextlib.suppress(TimeoutError, ConnectionError):
        await asyncio.wait_for(request.reader.read(), MAX_WAIT)
    return False


def page(title: str, body: str = "", head: str = "", charset: str | None = None) -> bytes:
    meta = f'<meta charset="{charset}">' if charset else ""
    return (f"<!DOCTYPE html><html><head>{meta}<title>{title}</title>{head}</head>"
            f"<body>{body}</body></html>").encode()


class FaultServer:
    """``with FaultServer() as s: s.url("/path")``; routes: :meth:`route`."""

    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.requests: list[Request] = []
        self.open = 0
        self.total_connections = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.counters: dict[str, int] = {}
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    # -- life cycle
    def __enter__(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            for w in list(self._writers):
                w.close()
            await asyncio.sleep(0)
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self.routes[path] = handler
            return handler
        return register

    def count(self, key: str) -> int:
        """Increment and return a per-key counter (for "fail N times, then answer")."""
        self.counters[key] = self.counters.get(key, 0) + 1
        return self.counters[key]

    def wait_closed(self, timeout: float = 3.0) -> bool:
        """Wait until no connection is open; False if some still is after ``timeout``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.open == 0:
                return True
            time.sleep(0.01)
        return self.open == 0

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    # -- HTTP
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        self.total_connections += 1
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), MAX_WAIT)
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                        ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                path, _, query = target.partition("?")
                request = Request(method, path, query, headers, time.monotonic(), reader)
                self.requests.append(request)
                handler = self.routes.get(path)
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    if handler is None:
                        keep = await send(writer, 404, b"not found")
                    else:
                        keep = await handler(request, writer)
                except (ConnectionError, OSError):
                    return
                finally:
                    self.in_flight -= 1
                if not keep:
                    return
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()
            self.open -= 1


async def send(writer: asyncio.StreamWriter, status: int, body: bytes = b"",
               headers: list[tuple[str, str]] | None = None, reason: str = "X") -> bool:
    """A whole response with Content-Length; keeps the connection."""
    hdrs = list(headers or [])
    names = {n.lower() for n, _ in hdrs}
    if "content-type" not in names:
        hdrs.insert(0, ("Content-Type", "text/html; charset=utf-8"))
    if "content-length" not in names:
        hdrs.append(("Content-Length", str(len(body))))
    writer.write(head(status, hdrs, reason) + body)
    await writer.drain()
    return True


def head(status: int, headers: list[tuple[str, str]], reason: str = "X") -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{n}: {v}" for n, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def send_chunked(writer: asyncio.StreamWriter, pieces: Any, delay: float = 0.0,
                       headers: list[tuple[str, str]] | None = None,
                       content_type: str | None = "text/html; charset=utf-8") -> bool:
    """A chunked response, one HTTP chunk per piece (an iterable of bytes), ``delay`` apart;
    stops after MAX_WAIT seconds without ending the response (then closes).  ``content_type``
    None sends no Content-Type."""
    hdrs = [*([("Content-Type", content_type)] if content_type else []),
            ("Transfer-Encoding", "chunked"), *(headers or [])]
    writer.write(head(200, hdrs))
    await writer.drain()
    end = time.monotonic() + MAX_WAIT
    for piece in pieces:
        if time.monotonic() > end:
            return False
        if piece:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        # (a yield per piece even without a delay: an endless page must not starve the loop's
        # other connections)
        await asyncio.sleep(delay)
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    return True


def reset(writer: asyncio.StreamWriter) -> None:
    """Abort the connection with a TCP RST."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def gzip_bomb(size: int) -> bytes:
    """``size`` zero bytes (after a little HTML), gzip-compressed (about 1000:1)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [c.compress(b"<html><head><title>bomb</title></head><body>")]
    block = b"\0" * (1 << 20)
    for _ in range(size >> 20):
        out.append(c.compress(block))
    out.append(c.flush())
    return b"".join(out)


def gz(data: bytes) -> bytes:
    return gzip.compress(data)
