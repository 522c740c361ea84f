"""Prometheus metrics for ``htmlstream proxy --metrics HOST:PORT`` (opt-in; no dependency).

::

    metrics = ProxyMetrics(workers=1)
    proxy = ReverseProxy(rewriter, "http://127.0.0.1:8000", metrics=metrics)
    ...
    await metrics.serve(sock)       # GET /metrics on that listening socket

The text exposition format (version 0.0.4) is written directly: it is a few lines of text,
and a client library would be a dependency for nothing.  What is counted:

* ``htmlstream_proxy_requests_total{outcome, reason}``: every request, once, when its
  access-log line is written.  ``outcome`` is ``rewritten``, ``passed`` (sent as the upstream
  sent it), ``refused`` (the proxy answered an error of its own and sent nothing of the
  upstream's: a page it could not rewrite, a request it does not forward, a body over the
  limit), ``failed`` (the upstream could not be reached, stalled, or the rewrite failed,
  before any byte was sent: 502/504), ``aborted`` (cut short after bytes were sent: the client
  connection is aborted) or ``websocket``.  ``reason`` is a *category* from a fixed set (see
  :data:`OUTCOMES`), never the free text of the access log, so the number of series is bounded.
* ``htmlstream_proxy_upstream_bytes_total`` / ``htmlstream_proxy_sent_bytes_total``: response
  body bytes received from the upstream (as sent: compressed if it was) and sent to clients.
* ``htmlstream_proxy_rewrite_seconds``: a histogram of the time each rewritten response spent
  in the rewrite (decoding, the engine, encoding; not the waits for the upstream or client).
* ``htmlstream_proxy_open_streams``: requests being proxied now (relayed WebSockets too).
* The client limits' counters (:class:`~htmlstream.integrations.proxy_limits.ServerCounters`):
  ``htmlstream_proxy_connections_accepted_total``, ``htmlstream_proxy_connections_open`` and
  ``htmlstream_proxy_limit_actions_total{limit}``.
* ``htmlstream_proxy_workers`` and ``htmlstream_proxy_worker_starts_total`` (a replaced
  worker counts a start).

**Workers.**  The counters live in shared memory: an anonymous ``MAP_SHARED`` mapping of
64-bit integers, made before the workers are forked, one row (slot) per worker.  A worker
writes only its own row (one thread, its event loop: no lock needed; aligned 8-byte stores
are not torn on the platforms Python runs on), and whichever worker answers a scrape sums
every row.  The metrics socket is bound once by the supervisor and inherited by every worker,
so one address gives the whole server's figures, whichever worker the kernel hands the scrape
to, and it keeps answering while a worker is being replaced.  A replacement worker takes over
its predecessor's row: the counters go on from where they were (the sum never goes down, so
Prometheus sees no reset), and it zeroes the row's gauges (the dead worker's connections and
streams are gone).  The supervisor itself serves nothing and has no event loop.
"""

from __future__ import annotations

import mmap
import socket
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Final

from htmlstream.integrations.proxy_limits import LIMIT_REASONS, ServerCounters

if TYPE_CHECKING:
    import asyncio

__all__ = ["BUCKETS", "OUTCOMES", "ProxyMetrics", "classify"]

#: Every (outcome, reason category) counted: the bounded label set of ``requests_total``.
OUTCOMES: Final[dict[str, tuple[str, ...]]] = {
    "rewritten": ("",),
    "passed": ("no_body", "not_html", "sniffed_not_html", "no_content_type", "no_transform",
               "attachment", "charset", "other"),
    "refused": ("range", "content_coding", "encoding", "corrupt_body", "not_forwarded",
                "max_body_size", "bad_upgrade", "stopping", "other"),
    "failed": ("upstream_unreachable", "upstream_timeout", "rewrite", "other"),
    "aborted": ("client_gone", "upstream_timeout", "upstream_error", "rewrite",
                "max_body_size", "limit", "other"),
    "websocket": ("relayed", "refused_by_upstream", "other"),
    "other": ("",),
}

#: The upper bounds (seconds) of the rewrite-time histogram's buckets (+Inf besides).
BUCKETS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                  0.25, 0.5, 1.0, 2.5)

_PAIRS: Final = [(o, r) for o, reasons in OUTCOMES.items() for r in reasons]
_PAIR_INDEX: Final = {pair: i for i, pair in enumerate(_PAIRS)}
# The row of one worker: its fields' offsets.
_REQ: Final = 0
_BUCKET: Final = _REQ + len(_PAIRS)            # len(BUCKETS) + 1 (the +Inf bucket)
_SUM_NS: Final = _BUCKET + len(BUCKETS) + 1
_COUNT: Final = _SUM_NS + 1
_BYTES_IN: Final = _COUNT + 1
_BYTES_OUT: Final = _BYTES_IN + 1
_STREAMS: Final = _BYTES_OUT + 1               # gauge
_ACCEPTED: Final = _STREAMS + 1
_OPEN: Final = _ACCEPTED + 1                   # gauge
_LIMITS: Final = _OPEN + 1
_STARTS: Final = _LIMITS + len(LIMIT_REASONS)
_ROW: Final = _STARTS + 1
_LIMIT_INDEX: Final = {name: _LIMITS + i for i, name in enumerate(LIMIT_REASONS)}


def _passed(reason: str) -> str:
    if reason.startswith("not HTML"):
        return "not_html"
    if "but not HTML" in reason or "the body is not HTML" in reason:
        return "sniffed_not_html"
    if "no body" in reason or reason.startswith("CONNECT") or reason.startswith("HEAD"):
        return "no_body"
    if reason.startswith("no Content-Type"):
        return "no_content_type"
    if "no-transform" in reason:
        return "no_transform"
    if "attachment" in reason:
        return "attachment"
    if reason.startswith("charset"):
        return "charset"
    return "other"


def _refused(reason: str) -> str:
    if "byte range" in reason or "byteranges" in reason:
        return "range"
    if "coding" in reason or "Content-Encoding" in reason:
        return "content_coding"
    if "encoding" in reason or "ASCII" in reason:
        return "encoding"
    if "before the response was decided" in reason or "bytes of" in reason:
        return "corrupt_body"
    if reason == "":
        return "not_forwarded"
    if "max_body_size" in reason:
        return "max_body_size"
    if "WebSocket upgrade" in reason:
        return "bad_upgrade"
    if "stops" in reason:
        return "stopping"
    return "other"


def classify(note: str) -> tuple[str, str]:
    """The (outcome, reason category) of an access-log note (``rewritten``, ``passed: not
    HTML: Content-Type image/png``, ``refused: ...``, ``aborted: ...``...): always a pair of
    :data:`OUTCOMES`."""
    if not isinstance(note, str):
        raise TypeError(f"classify(): note must be a str, not {type(note).__name__}")
    if note == "rewritten":
        return "rewritten", ""
    head, _, rest = note.partition(": ")
    if head == "passed":
        return "passed", _passed(rest)
    if head == "refused" or note == "refused":
        return "refused", _refused(rest)
    if head == "aborted" or head == "closed":
        if head == "closed":
            return "aborted", "limit"
        if "client went away" in rest:
            return "aborted", "client_gone"
        if rest.startswith("upstream read timeout"):
            return "aborted", "upstream_timeout"
        if rest.startswith("upstream"):
            return "aborted", "upstream_error"
        if rest.startswith("rewrite failed"):
            return "aborted", "rewrite"
        if "max_body_size" in rest:
            return "aborted", "max_body_size"
        return "aborted", "other"
    if note.startswith("upstream timeout"):
        return "failed", "upstream_timeout"
    if note.startswith("upstream error"):
        return "failed", "upstream_unreachable"
    if note.startswith("rewrite failed"):
        return "failed", "rewrite"
    if note.startswith("upstream WebSocket handshake"):
        return "failed", "other"
    if note.startswith("upstream refused the WebSocket"):
        return "websocket", "refused_by_upstream"
    if note.startswith("websocket:"):
        return "websocket", "relayed"
    return "other", ""


class _Limits(MutableMapping[str, int]):
    """``ServerCounters.limits`` in this process's row of the shared memory."""

    def __init__(self, metrics: ProxyMetrics) -> None:
        self._metrics = metrics

    def __getitem__(self, name: str) -> int:
        return self._metrics._row_get(_LIMIT_INDEX[name])

    def __setitem__(self, name: str, value: int) -> None:
        self._metrics._row_set(_LIMIT_INDEX[name], value)

    def __delitem__(self, name: str) -> None:
        raise TypeError("the limits' counters cannot be removed")

    def __iter__(self) -> Iterator[str]:
        return iter(LIMIT_REASONS)

    def __len__(self) -> int:
        return len(LIMIT_REASONS)


class _SharedCounters(ServerCounters):
    """:class:`ServerCounters` whose counts are this process's row of the shared memory."""

    def __init__(self, metrics: ProxyMetrics) -> None:
        self._metrics = metrics
        self._limits = _Limits(metrics)

    @property
    def accepted(self) -> int:
        return self._metrics._row_get(_ACCEPTED)

    @accepted.setter
    def accepted(self, value: int) -> None:
        self._metrics._row_set(_ACCEPTED, value)

    @property
    def open(self) -> int:
        return self._metrics._row_get(_OPEN)

    @open.setter
    def open(self, value: int) -> None:
        self._metrics._row_set(_OPEN, value)

    @property
    def limits(self) -> MutableMapping[str, int]:  # type: ignore[override]
        return self._limits


class ProxyMetrics:
    """The proxy's counters, in shared memory with one row per worker, and the Prometheus
    endpoint that sums them.

    Args:
        workers: the number of worker processes (rows); each calls :meth:`attach` with its
            index once forked (one process: ``attach(0)``).  Make it before forking.

    Attributes:
        counters: the client limits' counters of this process's row (a
            :class:`~htmlstream.integrations.proxy_limits.ServerCounters`), for
            ``ReverseProxy(metrics=...)``, which counts into it.
    """

    def __init__(self, workers: int = 1) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool):
            raise TypeError(f"ProxyMetrics(): workers must be an int, not "
                            f"{type(workers).__name__}")
        if workers < 1:
            raise ValueError(f"ProxyMetrics(): workers must be 1 or more, not {workers}")
        self.workers = workers
        # Anonymous and MAP_SHARED (mmap's default): the same pages in every forked worker.
        self._map = mmap.mmap(-1, workers * _ROW * 8)
        self._cells = memoryview(self._map).cast("q")
        self._base = 0
        self.counters: ServerCounters = _SharedCounters(self)
        self._server: asyncio.AbstractServer | None = None

    def attach(self, index: int) -> None:
        """In a worker: count into row ``index`` from now on (its counters go on from its
        predecessor's; its gauges start at 0)."""
        if not 0 <= index < self.workers:
            raise ValueError(f"worker index {index} out of range(0, {self.workers})")
        self._base = index * _ROW
        cells = self._cells
        cells[self._base + _STREAMS] = 0
        cells[self._base + _OPEN] = 0
        cells[self._base + _STARTS] += 1

    def _row_get(self, field: int) -> int:
        return self._cells[self._base + field]

    def _row_set(self, field: int, value: int) -> None:
        self._cells[self._base + field] = value

    # ------------------------------------------------------------------ counting

    def stream_opened(self) -> None:
        """A request is being proxied (``open_streams`` + 1)."""
        self._cells[self._base + _STREAMS] += 1

    def stream_closed(self, note: str, bytes_in: int, bytes_out: int,
                      rewrite_seconds: float | None) -> None:
        """A request ended with the access log's ``note``; ``rewrite_seconds``: the time in
        the rewrite, for a rewritten response (else None)."""
        cells, base = self._cells, self._base
        cells[base + _STREAMS] -= 1
        cells[base + _REQ + _PAIR_INDEX[classify(note)]] += 1
        cells[base + _BYTES_IN] += bytes_in
        cells[base + _BYTES_OUT] += bytes_out
        if rewrite_seconds is not None:
            bucket = len(BUCKETS)
            for i, bound in enumerate(BUCKETS):
                if rewrite_seconds <= bound:
                    bucket = i
                    break
            cells[base + _BUCKET + bucket] += 1
            cells[base + _SUM_NS] += int(rewrite_seconds * 1e9)
            cells[base + _COUNT] += 1

    # ------------------------------------------------------------------ reading

    def totals(self) -> list[int]:
        """Every field summed over the workers' rows."""
        cells = self._cells
        return [sum(cells[w * _ROW + f] for w in range(self.workers)) for f in range(_ROW)]

    def exposition(self) -> str:
        """The Prometheus text exposition (format 0.0.4) of the summed counters."""
        t = self.totals()
        out: list[str] = []

        def family(name: str, kind: str, help_: str) -> None:
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} {kind}")

        family("htmlstream_proxy_requests_total", "counter",
               "Requests answered, by outcome and reason category.")
        for (outcome, reason), i in _PAIR_INDEX.items():
            out.append(f'htmlstream_proxy_requests_total{{outcome="{outcome}",'
                       f'reason="{reason}"}} {t[_REQ + i]}')
        family("htmlstream_proxy_upstream_bytes_total", "counter",
               "Response body bytes received from the upstream, as sent.")
        out.append(f"htmlstream_proxy_upstream_bytes_total {t[_BYTES_IN]}")
        family("htmlstream_proxy_sent_bytes_total", "counter",
               "Response body bytes sent to clients.")
        out.append(f"htmlstream_proxy_sent_bytes_total {t[_BYTES_OUT]}")
        family("htmlstream_proxy_rewrite_seconds", "histogram",
               "Time each rewritten response spent in the rewrite.")
        cumulative = 0
        for i, bound in enumerate((*BUCKETS, None)):
            cumulative += t[_BUCKET + i]
            le = "+Inf" if bound is None else repr(bound)
            out.append(f'htmlstream_proxy_rewrite_seconds_bucket{{le="{le}"}} {cumulative}')
        out.append(f"htmlstream_proxy_rewrite_seconds_sum {t[_SUM_NS] / 1e9!r}")
        out.append(f"htmlstream_proxy_rewrite_seconds_count {t[_COUNT]}")
        family("htmlstream_proxy_open_streams", "gauge",
               "Requests being proxied now (relayed WebSockets included).")
        out.append(f"htmlstream_proxy_open_streams {t[_STREAMS]}")
        family("htmlstream_proxy_connections_accepted_total", "counter",
               "Client connections accepted.")
        out.append(f"htmlstream_proxy_connections_accepted_total {t[_ACCEPTED]}")
        family("htmlstream_proxy_connections_open", "gauge", "Client connections open now.")
        out.append(f"htmlstream_proxy_connections_open {t[_OPEN]}")
        family("htmlstream_proxy_limit_actions_total", "counter",
               "Connections a client limit closed or refused (max_connections and "
               "descriptors: the times accepting paused).")
        for name, field in _LIMIT_INDEX.items():
            out.append(f'htmlstream_proxy_limit_actions_total{{limit="{name}"}} {t[field]}')
        family("htmlstream_proxy_workers", "gauge", "Worker processes configured.")
        out.append(f"htmlstream_proxy_workers {self.workers}")
        family("htmlstream_proxy_worker_starts_total", "counter",
               "Worker processes started (a replaced worker counts one).")
        out.append(f"htmlstream_proxy_worker_starts_total {t[_STARTS]}")
        return "\n".join(out) + "\n"

    # ------------------------------------------------------------------ serving

    async def serve(self, sock: socket.socket) -> None:
        """Answer ``GET /metrics`` (and ``GET /``) on the listening socket ``sock`` with
        :meth:`exposition`, until :meth:`close`; 404 elsewhere, 405 for other methods."""
        import asyncio

        from aiohttp import web

        async def handle(request: web.BaseRequest) -> web.StreamResponse:
            if request.path not in ("/metrics", "/"):
                return web.Response(status=404, text="metrics are at /metrics\n")
            if request.method not in ("GET", "HEAD"):
                return web.Response(status=405, headers={"Allow": "GET, HEAD"})
            return web.Response(body=self.exposition().encode(), headers={
                "Content-Type": "text/plain; version=0.0.4; charset=utf-8",
                "Cache-Control": "no-store"})

        server = web.Server(handle, access_log=None)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(server, sock=sock)

    async def close(self) -> None:
        """Stop serving the endpoint (the socket is closed in this process)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()
