"""Timeouts and limits on the reverse proxy's client connections: what an edge server needs
against slowloris, slow readers, stalled or oversized uploads and connection floods.

:class:`ServerLimits` holds them (nginx's defaults where nginx has one); :class:`ServerCounters`
counts what each one closed or refused, for the access log and for metrics.

What aiohttp offers and what it lacks.  aiohttp's low-level server (``web.Server`` and its
``RequestHandler`` protocol) parses requests, limits the size of a request head (8190 bytes a
line, 128 fields) and has one timer: ``keepalive_timeout``, which closes a connection still
waiting for a *complete* request that long after its last response (or its accept).  A
client trickling a request head a byte at a time is never closed sooner; nothing bounds an
upload's pauses, its size, or a client that stops reading its response; and
``loop.create_server`` accepts every connection the kernel queues until descriptors run out.

So the proxy serves through :class:`_Connection`, aiohttp's protocol with one timer of its own
per connection, and accepts through :class:`_Listener`:

* **One timer, lazy deadlines.**  Each connection has at most one ``loop.call_at`` handle.
  Events only move deadlines (a float assignment per ``data_received``, no rescheduling);
  when the timer fires it compares the deadlines with the clock, acts on the one that passed
  or sleeps until the next.  Nothing polls.
* **Phases.**  A connection is waiting for a request head (from its accept, or from the first
  byte after an idle keep-alive: ``header_timeout``, a *total* deadline as nginx's
  ``client_header_timeout``, so trickling does not extend it), handling a request (head
  complete: aiohttp's request factory marks it), or idle between requests
  (``keepalive_timeout``).  aiohttp's own keep-alive timer is kept as a backstop, set later
  than every deadline here.
* **Body.**  While a request body is incomplete and the transport is reading (not paused by
  backpressure: then the proxy, not the client, is the slow one), ``body_timeout`` seconds
  without a byte close the connection: a 408 when nothing of the response was sent yet,
  else an abort.  ``max_body_size``: a declared ``Content-Length`` over it gets 413 before
  anything goes upstream; a chunked body is counted as it streams and cut where it passes
  the limit (the upstream connection is closed before the body's end, so the upstream never
  gets a complete oversized request; the client gets 413 if its response had not started).
* **Send.**  When the transport's write buffer stops draining (``pause_writing``, or a
  response finished with bytes still buffered), ``send_timeout`` seconds in which the buffer
  does not shrink at all abort the connection (nginx's ``send_timeout``: no progress between
  two writes).  The handler's pending write fails, so the upstream connection it held is
  closed too.  This also bounds a ``close()`` waiting forever to flush to a client that does
  not read, which asyncio alone never gives up on.
* **Connection cap.**  :class:`_Listener` accepts from the listening socket itself
  (``loop.add_reader`` and ``loop.connect_accepted_socket``), and stops watching it while
  ``max_connections`` connections are open: new clients wait in the kernel's backlog (or
  are refused by the kernel once that is full) while established ones keep being served,
  and accepting resumes as connections close.  Where the loop has no ``add_reader``
  (Windows' proactor loop), asyncio accepts and a connection over the cap is closed at once.
  Running out of descriptors anyway (``EMFILE``) pauses accepting until a connection
  closes, or 1 s.

Logging: a limit closing a connection during a request shows in that request's access-log
line (``closed: send timeout``); one closing a connection without a request (a header
timeout, the cap reached) is logged on its first occurrence and then summarised, one line per
``summary_interval`` with the counts, so a flood does not become a flood of log lines.
Idle keep-alive closes are only counted (they are the normal end of a connection).
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
import math
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any, Final, cast

from aiohttp import web
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader

__all__ = ["LIMIT_REASONS", "ServerCounters", "ServerLimits"]

#: The limits that close or refuse connections, as counted in :attr:`ServerCounters.limits`.
LIMIT_REASONS: Final = ("header_timeout", "body_timeout", "max_body_size", "send_timeout",
                        "keepalive_timeout", "max_connections", "descriptors")

_HEAD, _REQUEST, _IDLE, _DRAIN = range(4)

_BODY_408: Final = b"request timed out\r\n"
#: Written by the protocol itself: no response of aiohttp's is under way then.
_RESPONSE_408: Final = (b"HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; "
                        b"charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                        % len(_BODY_408)) + _BODY_408

#: Connections accepted at most per readiness event of the listening socket.
_ACCEPT_BATCH: Final = 64
#: Seconds accepting pauses after the process ran out of descriptors (unless one closes).
_ACCEPT_RETRY: Final = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class ServerLimits:
    """The timeouts and limits of the proxy's client connections (0 or ``math.inf``: none).

    Attributes:
        header_timeout: seconds a request head may take to arrive in full, from the accept
            or from its first byte after an idle keep-alive (nginx ``client_header_timeout``,
            60 s); then 408 (if part of a head came) and the connection is closed.
        body_timeout: seconds a request body may go without a byte while the proxy reads it
            (nginx ``client_body_timeout``, 60 s); then 408 (or an abort if the response
            started) and the connection is closed.
        max_body_size: the largest request body, in bytes (nginx ``client_max_body_size``
            is 1 MiB; here 10 MiB); a larger one gets 413 and never reaches the upstream
            whole.
        send_timeout: seconds the response may make no progress to a client that does not
            read (nginx ``send_timeout``, 60 s); then the connection is aborted, with the
            upstream connection serving it.
        keepalive_timeout: seconds an idle keep-alive connection is kept (nginx
            ``keepalive_timeout``, 75 s).
        max_connections: client connections open at most (per process; nginx's
            ``worker_connections``, 512 by default, also counts upstream ones); at the cap
            the proxy stops accepting until one closes.
        backlog: the listening socket's backlog (nginx: 511), where connections wait while
            the proxy is at the cap.
        summary_interval: seconds between two summary lines of connection-level limits.
    """

    header_timeout: float = 60.0
    body_timeout: float = 60.0
    max_body_size: int = 10 << 20
    send_timeout: float = 60.0
    keepalive_timeout: float = 75.0
    max_connections: int = 1024
    backlog: int = 511
    summary_interval: float = 10.0

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"ServerLimits(): {field.name} must be a number (int or float), "
                                f"not {type(value).__name__}")
            if not value >= 0:      # (NaN fails too)
                raise ValueError(f"{field.name} must be 0 or more, not {value!r}")

    def timeout(self, name: str) -> float:
        """The timeout ``name`` in seconds, ``math.inf`` when it is off (0)."""
        value = float(getattr(self, name))
        return value if value > 0 else math.inf


class ServerCounters:
    """What the proxy's connection limits did, since it started (one process: with workers,
    each has its own).  Read by the access log's summaries and by metrics.

    Attributes:
        accepted: connections accepted.
        open: connections open now (a TLS one counts from its accept).
        limits: for each of :data:`LIMIT_REASONS`, the connections it closed or refused;
            ``max_connections`` counts the times accepting paused at the cap, and
            ``descriptors`` the times it paused because the process had no descriptor left.
    """

    __slots__ = ("accepted", "limits", "open")

    def __init__(self) -> None:
        self.accepted = 0
        self.open = 0
        self.limits: dict[str, int] = dict.fromkeys(LIMIT_REASONS, 0)

    def snapshot(self) -> dict[str, int]:
        """Every counter, flat (``limits.header_timeout``...), for metrics and tests."""
        return {"accepted": self.accepted, "open": self.open,
                **{f"limits.{name}": count for name, count in self.limits.items()}}


class _Edge:
    """What the connections of one server share: the limits, the counters, the log summary
    and the listener to tell when a connection closes."""

    def __init__(self, limits: ServerLimits, counters: ServerCounters,
                 logger: logging.Logger) -> None:
        self.limits = limits
        self.counters = counters
        self.logger = logger
        self.header_timeout = limits.timeout("header_timeout")
        self.body_timeout = limits.timeout("body_timeout")
        self.send_timeout = limits.timeout("send_timeout")
        self.keepalive_timeout = limits.timeout("keepalive_timeout")
        self.listener: _Listener | None = None
        #: Where there is no add_reader: connections beyond this many are closed at once.
        self.refuse_over = math.inf
        self._pending: dict[str, int] = {}
        self._logged: set[str] = set()
        self._flush: asyncio.TimerHandle | None = None

    def count(self, reason: str, line: str | None) -> None:
        """Count a limit's action; log ``line`` (if any) unless this reason was logged in
        the current interval already, in which case it goes into the next summary."""
        self.counters.limits[reason] += 1
        if line is None:
            return
        if reason not in self._logged:
            self._logged.add(reason)
            self.logger.info("%s", line)
        else:
            self._pending[reason] = self._pending.get(reason, 0) + 1
        if self._flush is None:
            loop = asyncio.get_running_loop()
            self._flush = loop.call_later(self.limits.summary_interval or 10.0,
                                          self._summarise)

    def _summarise(self) -> None:
        self._flush = None
        pending, self._pending = self._pending, {}
        if not pending:         # a quiet interval: the next one is logged again
            self._logged.clear()
        else:
            counts = ", ".join(f"{count} {reason.replace('_', ' ')}"
                               for reason, count in sorted(pending.items()))
            self.logger.info("- limits in the last %gs, not logged one by one: %s "
                             "(open connections: %d)", self.limits.summary_interval or 10.0,
                             counts, self.counters.open)
            loop = asyncio.get_running_loop()   # a quiet interval next ends the summaries
            self._flush = loop.call_later(self.limits.summary_interval or 10.0,
                                          self._summarise)

    def stop(self) -> None:
        """Log what is pending, stop the summary timer."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
            if self._pending:
                self._summarise()
                if self._flush is not None:
                    self._flush.cancel()
                    self._flush = None

    def opened(self) -> bool:
        """Count a connection made; False if it is one too many (it is then closed)."""
        self.counters.open += 1
        if self.refuse_over == math.inf:
            return True
        self.counters.accepted += 1     # (asyncio accepted it: the listener did not count it)
        if self.counters.open > self.refuse_over:
            self.count("max_connections", f"- refused a connection: {self.counters.open - 1} "
                       f"open, the cap (max_connections) is {self.limits.max_connections}")
            return False
        return True

    def closed(self) -> None:
        self.counters.open -= 1
        if self.listener is not None:
            self.listener.room()


def _peer(transport: asyncio.BaseTransport | None) -> str:
    peer = transport.get_extra_info("peername") if transport is not None else None
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return "-"


class _Connection(web.RequestHandler):
    """aiohttp's request handler protocol with the timers of :class:`ServerLimits` (see
    the module docstring)."""

    __slots__ = (
        "_body",
        "_edge",
        "_last_read",
        "_phase",
        "_phase_deadline",
        "_phase_since",
        "_received",
        "_request",
        "_stuck_since",
        "_stuck_size",
        "_timer",
        "_timer_at",
        "_tr",
        "limit",
    )

    def __init__(self, manager: web.Server, *, edge: _Edge, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._edge = edge
        self._tr: asyncio.Transport | None = None
        self._phase = _HEAD
        self._phase_deadline = math.inf
        self._phase_since = 0.0
        self._received = 0              # bytes of the request head being waited for
        self._request: web.BaseRequest | None = None
        self._body: StreamReader | None = None      # the body being read, while incomplete
        self._last_read = 0.0
        self._stuck_since = 0.0         # 0: the write buffer is not stuck
        self._stuck_size = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        #: The limit that closed this connection ("" while none did).
        self.limit = ""

    # ---------------------------------------------------------------- asyncio's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports have asyncio.Transport's methods without deriving from it)
        self._tr = cast(asyncio.Transport, transport)
        if not self._edge.opened():
            self._tr.abort()   # (connection_lost follows, and counts it closed)
        super().connection_made(transport)
        self._wait_head(self._loop.time())

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._tr is not None:
            self._tr = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._request = self._body = None
            self._edge.closed()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        phase = self._phase
        if phase == _IDLE and data:
            self._wait_head(self._loop.time())
            phase = _HEAD
        if phase == _HEAD:
            self._received += len(data)
        elif self._body is not None:
            self._last_read = self._loop.time()
        super().data_received(data)
        body = self._body
        if body is not None and body.is_eof():
            self._body = None
            if self._phase == _DRAIN:
                self._wait_idle(self._loop.time())

    def pause_writing(self) -> None:
        super().pause_writing()
        if not self._stuck_since and self._tr is not None:
            now = self._loop.time()
            self._stuck_since = now
            self._stuck_size = self._tr.get_write_buffer_size()
            self._schedule(now + self._edge.send_timeout)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._phase == _REQUEST or self._tr is None:
            self._stuck_since = 0.0     # the handler writes again: watched at the next pause
        else:
            self._watch_buffer(self._loop.time())

    # ---------------------------------------------------------------- aiohttp's steps

    def begin_request(self, request: web.BaseRequest, payload: StreamReader) -> None:
        """A request head arrived in full: its handler starts (aiohttp's request factory)."""
        now = self._loop.time()
        self._phase = _REQUEST
        self._phase_deadline = math.inf
        self._request = request
        if not payload.is_eof():
            self._body = payload
            self._last_read = now
            self._schedule(now + self._edge.body_timeout)
        else:
            self._body = None

    async def finish_response(self, request: web.BaseRequest, resp: web.StreamResponse,
                              start_time: float | None) -> tuple[web.StreamResponse, bool]:
        """aiohttp's last step of a request (the response written); then the connection
        idles, or drains the rest of an unread body first."""
        try:
            return await super().finish_response(request, resp, start_time)
        finally:
            self._request = None
            if self._tr is not None:
                now = self._loop.time()
                self._watch_buffer(now)
                if self._body is not None:
                    self._phase = _DRAIN
                    self._last_read = now
                    self._schedule(now + self._edge.body_timeout)
                else:
                    self._wait_idle(now)

    # ---------------------------------------------------------------- the timer

    def _wait_head(self, now: float) -> None:
        self._phase = _HEAD
        self._phase_since = now
        self._received = 0
        self._phase_deadline = now + self._edge.header_timeout
        self._schedule(self._phase_deadline)

    def _wait_idle(self, now: float) -> None:
        self._phase = _IDLE
        self._phase_since = now
        self._phase_deadline = now + self._edge.keepalive_timeout
        self._schedule(self._phase_deadline)

    def _watch_buffer(self, now: float) -> None:
        """Watch the write buffer for progress, if it holds anything."""
        tr = self._tr
        if tr is not None and tr.get_write_buffer_size():
            self._stuck_since = now
            self._stuck_size = tr.get_write_buffer_size()
            self._schedule(now + self._edge.send_timeout)
        else:
            self._stuck_since = 0.0

    def _schedule(self, when: float) -> None:
        if when < self._timer_at and when != math.inf and self._tr is not None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_at(when, self._on_timer)
            self._timer_at = when

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = math.inf
        tr = self._tr
        if tr is None:
            return
        now = self._loop.time()
        edge = self._edge
        next_at = math.inf
        if self._stuck_since:
            size = tr.get_write_buffer_size()
            if size == 0 and not self.writing_paused:
                self._stuck_since = 0.0
            elif size < self._stuck_size:       # progress: a new window
                self._stuck_since, self._stuck_size = now, size
            elif now >= self._stuck_since + edge.send_timeout:
                self._expire("send_timeout", tr, now)
                return
            if self._stuck_since:
                next_at = self._stuck_since + edge.send_timeout
        if self._tr is None or tr.is_closing():
            if next_at != math.inf:
                self._schedule(next_at)
            return
        phase = self._phase
        if phase in (_HEAD, _IDLE):
            if now >= self._phase_deadline:
                self._expire("header_timeout" if phase == _HEAD else "keepalive_timeout",
                             tr, now)
                return
            next_at = min(next_at, self._phase_deadline)
        body = self._body
        if body is not None:
            if body.is_eof():
                self._body = None
                if phase == _DRAIN:
                    self._wait_idle(now)
                    next_at = min(next_at, self._phase_deadline)
            elif not tr.is_reading():
                self._last_read = now   # paused by backpressure: not the client's doing
                next_at = min(next_at, now + edge.body_timeout)
            elif now >= self._last_read + edge.body_timeout:
                self._expire("body_timeout", tr, now)
                return
            else:
                next_at = min(next_at, self._last_read + edge.body_timeout)
        if next_at != math.inf:
            self._schedule(next_at)

    def _expire(self, reason: str, tr: asyncio.Transport, now: float) -> None:
        """Close the connection for ``reason``; count and log it."""
        self.limit = reason
        request = self._request
        sent = request is not None and request.writer.output_size > 0
        answer = (reason == "header_timeout" and self._received > 0) or (
            reason == "body_timeout" and not sent)
        line: str | None = None
        if reason == "header_timeout":
            line = (f'{_peer(tr)} "-" {408 if answer else 0} 0 '
                    f"{now - self._phase_since:.3f}s closed: header timeout "
                    f"({self._received} bytes of a request head)")
        self._edge.count(reason, line)  # (first: the client may see the close at once)
        if reason == "send_timeout":
            tr.abort()                  # the buffer cannot be delivered: drop it
            return
        if answer and not tr.is_closing():
            tr.write(_RESPONSE_408)
        if sent:
            tr.abort()
        else:
            self.force_close()          # (flushes the 408 first)
            self._watch_buffer(now)     # a client that does not read it is aborted later


def limit_note(request: web.BaseRequest) -> str:
    """The access log's note for a request whose connection a limit closed ("" if none)."""
    protocol = request.protocol
    reason = protocol.limit if isinstance(protocol, _Connection) else ""
    return f"closed: {reason.replace('_', ' ')}" if reason else ""


def limit_status(request: web.BaseRequest) -> int:
    """The status a limit answered for ``request`` (408 for a body timeout answered), or 0."""
    protocol = request.protocol
    if (isinstance(protocol, _Connection) and protocol.limit == "body_timeout"
            and request.writer.output_size == 0):
        return 408
    return 0


class BodyTooLarge(Exception):
    """A request body passed ``max_body_size`` while it streamed."""


def declared_too_large(request: web.BaseRequest, limits: ServerLimits) -> bool:
    """Whether ``request`` declares a ``Content-Length`` over ``max_body_size``."""
    length = request.content_length
    return bool(limits.max_body_size) and length is not None and length > limits.max_body_size


async def counted_body(request: web.BaseRequest, limit: int,
                       state: dict[str, Any]) -> AsyncIterator[bytes]:
    """``request``'s body as it arrives, cut with :class:`BodyTooLarge` (and
    ``state["limit"]`` set) once it passes ``limit`` bytes: the upstream connection it is
    sent on is then closed before the body's end."""
    seen = 0
    content = request.content
    while True:
        chunk = await content.readany()
        if not chunk:
            return
        seen += len(chunk)
        if seen > limit:
            state["limit"] = "max_body_size"
            raise BodyTooLarge(f"the request body passed {limit} bytes")
        yield chunk


def too_large_response() -> web.Response:
    """The 413 answer (the connection is closed after it)."""
    response = web.Response(status=413, text="the request body is too large\n")
    response.force_close()
    return response


class _Listener:
    """Accepts connections from a listening socket while fewer than the cap are open."""

    def __init__(self, sock: socket.socket, factory: Callable[[], asyncio.Protocol],
                 edge: _Edge, ssl_context: ssl.SSLContext | None) -> None:
        self.sock = sock
        self._factory = factory
        self._edge = edge
        self._ssl = ssl_context
        self._cap = edge.limits.max_connections or math.inf
        self._loop = asyncio.get_running_loop()
        self._watching = False
        self._stopped = False
        # Accepted connections whose protocol is not connected yet (a TLS handshake, or the
        # step before connection_made): counted against the cap with the open ones.
        self._pending: set[asyncio.Task[Any]] = set()
        self._retry: asyncio.TimerHandle | None = None
        self._fallback: asyncio.Server | None = None

    async def start(self) -> None:
        self.sock.setblocking(False)
        try:
            self._watch(True)
        except NotImplementedError:
            # No add_reader (Windows' proactor loop): asyncio accepts, and a connection
            # over the cap is closed at once instead of waiting in the backlog.
            self._fallback = await self._loop.create_server(
                self._factory, sock=self.sock, ssl=self._ssl,
                ssl_handshake_timeout=min(self._edge.header_timeout, 3600.0)
                if self._ssl is not None else None)
            self._edge.refuse_over = self._cap

    def stop(self) -> None:
        """Stop accepting and close the listening socket."""
        self._stopped = True
        if self._fallback is not None:
            self._fallback.close()
        self._watch(False)
        for task in self._pending:
            task.cancel()
        if self._retry is not None:
            self._retry.cancel()
        self.sock.close()

    def _watch(self, on: bool) -> None:
        if on and not self._watching and not self._stopped:
            self._loop.add_reader(self.sock.fileno(), self._accept)
            self._watching = True
        elif not on and self._watching:
            self._loop.remove_reader(self.sock.fileno())
            self._watching = False

    def _full(self) -> bool:
        return self._edge.counters.open + len(self._pending) >= self._cap

    def room(self) -> None:
        """A connection closed: accept again if accepting was paused."""
        if (self._fallback is None and not self._watching and not self._stopped
                and self._retry is None and not self._full()):
            self._watch(True)

    def _accept(self) -> None:
        counters = self._edge.counters
        for _ in range(_ACCEPT_BATCH):
            if self._full():
                self._watch(False)
                self._edge.count("max_connections", (
                    f"- accepting paused: {counters.open} connections open, the cap "
                    f"(max_connections) is {self._edge.limits.max_connections}"))
                return
            try:
                conn, addr = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._watch(False)
                    self._edge.count("descriptors", (
                        f"- accepting paused: {exc.strerror} ({counters.open} connections "
                        f"open; raise the descriptor limit or lower max_connections)"))
                    self._retry = self._loop.call_later(_ACCEPT_RETRY, self._retried)
                    return
                continue                # ECONNABORTED and the like: that client is gone
            conn.setblocking(False)
            counters.accepted += 1
            task = self._loop.create_task(self._connect(conn, addr))
            self._pending.add(task)
            task.add_done_callback(self._connected)

    def _retried(self) -> None:
        self._retry = None
        self.room()

    async def _connect(self, conn: socket.socket, addr: Any) -> None:
        if self._ssl is None:
            try:
                await self._loop.connect_accepted_socket(self._factory, conn)
            except OSError:
                conn.close()
            return
        started = self._loop.time()
        timeout = min(self._edge.header_timeout, 3600.0)
        try:
            await self._loop.connect_accepted_socket(
                self._factory, conn, ssl=self._ssl, ssl_handshake_timeout=timeout)
        except (OSError, ssl.SSLError):
            # (asyncio says a handshake timed out with a ConnectionAbortedError)
            if self._loop.time() - started >= timeout * 0.99:
                peer = f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) else "-"
                self._edge.count("header_timeout", f'{peer} "-" 0 0 {timeout:.3f}s closed: '
                                 "header timeout (the TLS handshake did not complete)")
            conn.close()

    def _connected(self, task: asyncio.Task[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled():
            task.exception()    # (retrieved: a failed accept is not an error to report)
        self.room()


def make_server(handler: Callable[[web.BaseRequest], Any], limits: ServerLimits,
                counters: ServerCounters, logger: logging.Logger
                ) -> tuple[web.Server, Callable[[], _Connection], _Edge]:
    """aiohttp's low-level server for ``handler`` with ``limits``: the server, the protocol
    factory to serve connections with, and what they share."""
    edge = _Edge(limits, counters, logger)
    loop = asyncio.get_running_loop()
    # aiohttp's keep-alive timer, a backstop: later than every deadline of ours.
    finite = [t for t in (edge.header_timeout, edge.keepalive_timeout) if t != math.inf]
    backstop = max(finite, default=3600.0) + 60.0

    def request_factory(message: RawRequestMessage, payload: StreamReader,
                        protocol: web.RequestHandler, writer: Any,
                        task: asyncio.Task[None]) -> web.BaseRequest:
        request = web.BaseRequest(message, payload, protocol, writer, task, loop)
        if isinstance(protocol, _Connection):
            protocol.begin_request(request, payload)
        return request

    server = web.Server(handler, request_factory=request_factory, access_log=None,
                        handler_cancellation=True, keepalive_timeout=backstop)

    def factory() -> _Connection:
        return _Connection(server, edge=edge, loop=loop, access_log=None,
                           keepalive_timeout=backstop)

    return server, factory, edge


async def listen(sock: socket.socket, factory: Callable[[], _Connection], edge: _Edge,
                 ssl_context: ssl.SSLContext | None) -> _Listener:
    """Start accepting on ``sock`` (listening already) with ``factory``'s protocols."""
    listener = _Listener(sock, factory, edge, ssl_context)
    edge.listener = listener
    await listener.start()
    return listener


def bind(host: str, port: int, backlog: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when ``host`` is)."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock
