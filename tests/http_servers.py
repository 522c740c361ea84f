"""Real HTTP servers for the integration tests: aiohttp's web server on 127.0.0.1, an ephemeral
port, in a thread of its own (its own event loop), started and stopped by the tests.

:class:`Origin` serves scripted responses: for a path, the status, the headers and the body as
a list of writes (each ``resp.write``), with a delay between them, optionally a gate (a
``threading.Event`` the test sets) before the last write, or a stall.  It records what happened
to each request (``done``, ``disconnected``, ``gate_timeout``) for the tests to assert on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Self

from aiohttp import web
from aiohttp.typedefs import Middleware

#: How long a server-side wait (a gate, a stall) lasts at most.
WAIT = 5.0


#: The event loop the proxies under test run on (tests/test_proxy_uvloop.py sets uvloop's).
PROXY_LOOP: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "factory": asyncio.new_event_loop}


def new_proxy_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for a proxy under test (asyncio's, or uvloop's where a test says)."""
    return PROXY_LOOP["factory"]()


@dataclasses.dataclass
class Reply:
    """A scripted response."""

    chunks: list[bytes]
    headers: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    status: int = 200
    delay: float = 0.0
    gate: threading.Event | None = None     # waited for before the last write
    stall: float = 0.0                      # a sleep after the first write
    whole: bool = False                     # a web.Response instead of a StreamResponse
    compress: bool = False                  # resp.enable_compression() (streaming)


@dataclasses.dataclass
class Record:
    """What happened to one request."""

    done: bool = False
    disconnected: bool = False
    gate_timeout: bool = False
    finished: threading.Event = dataclasses.field(default_factory=threading.Event)


class Origin:
    """An aiohttp app in a thread; ``with Origin(...) as o: o.url(path)``."""

    def __init__(self, middlewares: Iterable[Middleware] = (),
                 routes: Iterable[tuple[str, str, Any]] = (),
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl = ssl_context         # HTTPS when given
        self.requests: list[str] = []   # every request's path, in order
        self.replies: dict[str, Reply] = {}
        self._routes = list(routes)     # (method, path, handler), before the scripted ones
        self.records: dict[str, Record] = {}
        self._middlewares = list(middlewares)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    def url(self, path: str) -> str:
        scheme = "https" if self._ssl is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def serve(self, path: str, reply: Reply) -> str:
        """Script ``path``; returns its URL."""
        self.replies[path] = reply
        self.records[path] = Record()
        return self.url(path)

    def record(self, path: str, timeout: float = WAIT) -> Record:
        """The record of ``path``, once its handler finished (bounded wait)."""
        rec = self.records[path]
        assert rec.finished.wait(timeout), f"the handler of {path} did not finish"
        return rec

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        reply = self.replies[request.path]
        rec = self.records[request.path]
        try:
            if reply.whole:
                rec.done = True
                return web.Response(status=reply.status, body=b"".join(reply.chunks),
                                    headers=reply.headers)
            resp = web.StreamResponse(status=reply.status, headers=reply.headers)
            if reply.compress:
                resp.enable_compression()
            await resp.prepare(request)
            if request.method == "HEAD":
                # No body (RFC 9110, 9.3.2): aiohttp writes what a stream response is given
                # even then, and a client that reuses the connection would read those bytes
                # as the next response (a proxy's 502: "Bad HTTP response line").
                await resp.write_eof()
                rec.done = True
                return resp
            for i, chunk in enumerate(reply.chunks):
                if i == len(reply.chunks) - 1 and reply.gate is not None:
                    opened = await asyncio.to_thread(reply.gate.wait, WAIT)
                    rec.gate_timeout = not opened
                await resp.write(chunk)
                if i == 0 and reply.stall:
                    await asyncio.sleep(reply.stall)
                if reply.delay:
                    await asyncio.sleep(reply.delay)
            await resp.write_eof()
            rec.done = True
            return resp
        except (ConnectionError, asyncio.CancelledError):
            rec.disconnected = True
            raise
        finally:
            rec.finished.set()

    async def _start(self) -> None:
        @web.middleware
        async def record(request: web.Request, handler: Any) -> web.StreamResponse:
            self.requests.append(request.path_qs)
            return await handler(request)   # type: ignore[no-any-return]

        app = web.Application(middlewares=[record, *self._middlewares])
        for method, path, handler in self._routes:
            app.router.add_route(method, path, handler)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._ssl)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.base_events.Server)
        self.port = server.sockets[0].getsockname()[1]

    def run(self, coro: Any, timeout: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def __enter__(self) -> Self:
        self._thread.start()
        self.run(self._start())
        return self

    def __exit__(self, *exc: object) -> None:
        for reply in self.replies.values():
            if reply.gate is not None:
                reply.gate.set()
        if self._runner is not None:
            self.run(self._runner.cleanup())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(WAIT)
        self._loop.close()


def wait_for(predicate: Callable[[], bool], timeout: float = WAIT) -> bool:
    """Poll ``predicate`` until true or ``timeout`` (seconds)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
