"""A streaming, rewriting reverse proxy in front of one origin (``pip install htmlstream[proxy]``).

::

    proxy = ReverseProxy(rewriter, "http://127.0.0.1:8000")
    async with proxy:
        host, port = await proxy.start("127.0.0.1", 8080)
        ...                     # serve until told to stop; proxy.close() drains in-flight requests

or from the command line: ``htmlstream proxy --upstream http://127.0.0.1:8000 --listen
127.0.0.1:8080 --on img --set-attr loading=lazy``.

aiohttp is the HTTP library on both sides: its low-level server (``web.Server``) parses the
requests and keeps client connections alive, and a ``ClientSession`` (a pool of keep-alive
connections to the one upstream, ``auto_decompress=False``) sends them on.  Every decision about
a response (rewritten or not, why not, its headers, its content coding) is
:class:`htmlstream.http.ResponseRewrite`'s; this module only moves bytes and gets the framing
right:

* Never an open proxy: every request goes to the configured upstream.  ``CONNECT`` is refused
  (405), and so is an absolute-form request target (``GET http://host/``) naming another
  authority than the upstream's (421 Misdirected Request).
* ``Host`` is set to the upstream's (``preserve_host=True``: the client's is kept).
  ``X-Forwarded-For`` / ``-Proto`` / ``-Host`` are set; with ``trust_forwarded=True`` the
  client's ``X-Forwarded-For`` is appended to and its ``-Proto``/``-Host`` kept (for a proxy
  behind another one you trust), else they are replaced (a client cannot forge them).
* Hop-by-hop headers (``Connection`` and the fields it names, ``Keep-Alive``, ``TE``,
  ``Trailer``, ``Transfer-Encoding``, ``Upgrade``, ``Proxy-*``) are removed both ways; each side
  is framed by aiohttp.  ``Expect: 100-continue`` is answered by the proxy.
* No way around the rewrite (htmlstream.http decides, docs/guide/http.md has the rules):
  ``Range`` and ``If-Range`` go upstream only for what cannot be a page (a single byte range
  of a ``.mp4``, a ``.png``..., or a browser's media request), so the origin answers a page
  whole, rewritten and sent as a 200; ``Accept-Encoding`` upstream names only the codings the
  client accepts that this installation decodes (so the proxy's answer is compressed as the
  client accepts, in the coding the origin chose among those).  A response that would be
  rewritten and cannot be (partial, or in a coding not decoded, or corrupt before the
  decision) is refused: 502, logged ``refused: <why>``, none of its bytes sent.  A ``HEAD``
  answers the headers the ``GET`` would.
* WebSocket upgrades are relayed: the proxy opens the
  WebSocket to the upstream first (the client's subprotocols offered, its end-to-end headers
  forwarded) and accepts the client's only once the upstream accepted, with the subprotocol the
  upstream chose; an upstream refusing the upgrade gives its status to the client.  Then every
  message goes on as it came (text as text, binary as binary, the same payload; pings and
  pongs end to end, never answered by the proxy), and a close from either side is passed to the
  other with its code and reason.  Idle connections (no message either way for
  ``websocket_idle_timeout`` seconds) are closed with 1001.  No compression extension is
  negotiated on either side, so the payloads are never recompressed.  Other upgrades (``h2c``)
  are ignored, as RFC 9110 allows.
* Request bodies stream upstream; response bodies stream back through ``ResponseRewrite``
  chunk by chunk, the headers sent once it decided.  Backpressure: each chunk's output is
  written and drained to the client before the next upstream read, and aiohttp's client stops
  reading the upstream socket while its buffer is full, so a slow client slows the upstream
  instead of filling the proxy's memory.
* Failures: upstream unreachable, 502; a timeout (connect, or no response) before anything was
  sent, 504; anything going wrong after the first byte went to the client (upstream closes
  mid-body or lies in ``Content-Length``, a read timeout, a corrupt or oversized compressed
  body) aborts the client connection: the client (or a cache) sees an incomplete response,
  never a clean end.  A client that goes away closes the upstream connection.
* One access-log line per request on the ``htmlstream.proxy`` logger: client, method, target,
  status, body bytes sent, duration, and ``rewritten`` or why not (or why it was aborted).
* Client connections are bounded (:class:`~htmlstream.integrations.proxy_limits.ServerLimits`,
  nginx's defaults): a request head must arrive within ``header_timeout`` (408), an upload
  may not stall for ``body_timeout`` (408) nor pass ``max_body_size`` (413, before anything
  goes upstream when its length is declared), a client whose response does not drain for
  ``send_timeout`` is aborted with its upstream connection, idle keep-alive connections close
  after ``keepalive_timeout``, and at ``max_connections`` the proxy stops accepting.  The
  server is aiohttp's ``web.Server`` served through
  :mod:`htmlstream.integrations.proxy_limits`' protocol (one timer per connection) and
  accept loop; :attr:`ReverseProxy.counters` counts what the limits did.
* Edge Side Includes (``esi="on"``, ``htmlstream proxy --esi``; docs/guide/esi.md): a 2xx
  HTML response to a ``GET`` carrying ``Surrogate-Control: content="ESI/1.0"`` (with
  ``esi="always"``: every one) is assembled by :func:`htmlstream.recipes.esi` before the
  rewrite, so the rewriter sees the whole page.  Fragments come from the upstream only (a
  relative ``src``, or one on the upstream's own scheme and authority), or from the hosts in
  ``esi_hosts``; any other ``src`` fails without a request (no server-side request forgery).
  A fragment request carries the client's ``Cookie``, ``Authorization`` and
  ``Accept-Language`` (the fragments are the same origin's, personalised as the page is) and
  asks for ``Accept-Encoding: identity``; it fails on a non-2xx status, a redirect included.
  With ESI on, the page is asked for uncompressed too (``Accept-Encoding: identity``), since
  only its plain bytes can be assembled; a compressed answer anyway is passed on unassembled.
  The assembled response loses ``Content-Length``, ``ETag`` and ``Last-Modified`` (they
  described the template, not the page), and ``Surrogate-Control`` is removed from every
  response (this proxy is the surrogate it addresses).
* :meth:`ReverseProxy.close` stops accepting, lets in-flight requests finish for
  ``shutdown_grace`` seconds, then cancels what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Final, Literal, Self

import aiohttp
from aiohttp import WSCloseCode, WSMsgType, web
from multidict import CIMultiDict
from yarl import URL

from htmlstream import Rewriter
from htmlstream.errors import check_type
from htmlstream.http import (
    HttpOptions,
    MarkdownOptions,
    ResponseRefused,
    ResponseRewrite,
    csp_nonce_hook,
    forwarded_request_headers,
)
from htmlstream.integrations.proxy_limits import (
    ServerCounters,
    ServerLimits,
    bind,
    counted_body,
    declared_too_large,
    limit_note,
    limit_status,
    listen,
    make_server,
    too_large_response,
)
from htmlstream.integrations.proxy_metrics import ProxyMetrics
from htmlstream.recipes import esi as esi_recipe

__all__ = ["ContextFactory", "HeadersHook", "MarkdownOptions", "ReverseProxy", "ServerCounters",
           "ServerLimits", "hop_by_hop", "logger"]

#: The access log (one INFO line per request) and errors.
logger: Final = logging.getLogger("htmlstream.proxy")

#: A function of the request giving the per-document context (``Rewriter.stream(context=...)``).
ContextFactory = Callable[[web.BaseRequest], Mapping[str, Any] | None]
#: Called with the context and the headers to send when a response is rewritten.
HeadersHook = Callable[[Mapping[str, Any] | None, list[tuple[str, str]]], list[tuple[str, str]]]

#: Hop-by-hop fields (RFC 9110 7.6.1), besides those ``Connection`` names and ``Proxy-*``.
_HOP_BY_HOP: Final = frozenset({"connection", "keep-alive", "te", "trailer",
                                "transfer-encoding", "upgrade", "proxy-connection"})
#: The most upstream body bytes read (and rewritten, and written) at once: what a response
#: holds in flight, several copies of it at most, besides aiohttp's buffers.
_READ_SIZE: Final = 64 * 1024
#: Request fields the proxy sets itself.
_SET_BY_PROXY: Final = frozenset({"host", "x-forwarded-for", "x-forwarded-proto",
                                  "x-forwarded-host", "expect"})


def hop_by_hop(headers: list[tuple[str, str]]) -> set[str]:
    """The lower-case names of the hop-by-hop fields of ``headers``: the fixed ones, those the
    ``Connection`` fields name, and every ``Proxy-*`` present."""
    if not isinstance(headers, list):
        raise TypeError(f"hop_by_hop(): headers must be a list of (name, value) pairs, not "
                        f"{type(headers).__name__}")
    names = set(_HOP_BY_HOP)
    for name, value in headers:
        lower = name.lower()
        if lower == "connection":
            names.update(item.strip().lower() for item in value.split(",") if item.strip())
        elif lower.startswith("proxy-"):
            names.add(lower)
    return names


def _end_to_end(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    drop = hop_by_hop(headers)
    return [(name, value) for name, value in headers if name.lower() not in drop]


def _str_pairs(raw: tuple[tuple[bytes, bytes], ...]) -> list[tuple[str, str]]:
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in raw]


class _Response(web.StreamResponse):
    """aiohttp's streamed response, minus the ``Content-Type: application/octet-stream`` it
    adds to a response that has none: the proxy passes the upstream's headers on as they are
    (a browser sniffs a response without a type; it downloads an octet-stream)."""

    def __init__(self, *, status: int, reason: str | None, untyped: bool) -> None:
        super().__init__(status=status, reason=reason)
        self._untyped = untyped

    async def _prepare_headers(self) -> None:
        await super()._prepare_headers()
        if self._untyped:
            self.headers.popall("Content-Type", None)


class _Aborted(Exception):
    """The response was cut short after output was sent: the client connection is aborted."""


class ReverseProxy:
    """A rewriting reverse proxy in front of one upstream origin.

    Args:
        rewriter: the rules (shared by every request; each response gets its own stream).
        upstream: the origin's base URL (``http://host:port``, optionally ``https://`` and a
            path prefix); every request goes there.
        options: what :class:`~htmlstream.http.ResponseRewrite` rewrites, and how.
        context: called with each request; its result is the per-document context.
        headers_hook: called with that context and the headers of a rewritten response
            (default :func:`htmlstream.http.csp_nonce_hook`); None: none.
        preserve_host: send the client's ``Host`` upstream instead of the upstream's.
        trust_forwarded: append to the client's ``X-Forwarded-For`` (and keep its
            ``X-Forwarded-Proto``/``-Host``) instead of replacing them.
        connect_timeout: seconds to connect to the upstream (then 504).
        read_timeout: seconds the upstream may stay silent, before its response (504) or
            between two body reads (the client connection is aborted).
        shutdown_grace: seconds :meth:`close` lets in-flight requests finish.
        max_connections: upstream connections at most (requests beyond wait for one); the
            cap on *client* connections is ``limits.max_connections``.
        websocket_idle_timeout: seconds a relayed WebSocket may carry no message either way
            before the proxy closes both sides (code 1001).
        websocket_max_message: the largest WebSocket message relayed, in bytes (a larger one
            closes that side with 1009, and the other with 1011).
        limits: the timeouts and limits of client connections (header, body, send and
            keep-alive timeouts, the largest request body, the connection cap).
        markdown: answer requests whose ``Accept`` prefers ``text/markdown`` with the page
            as Markdown (:class:`~htmlstream.http.MarkdownOptions`; docs/guide/markdown.md).
            None (the default): no content negotiation.
        esi: Edge Side Includes: ``"off"`` (the default), ``"on"`` (responses with
            ``Surrogate-Control: content="ESI/1.0"``) or ``"always"`` (every HTML response).
        esi_hosts: hosts (``host`` or ``host:port``) fragments may come from besides the
            upstream.
        esi_timeout: seconds per fragment fetch, its body included.
        esi_concurrency: fragment fetches at a time per page.
        metrics: count every request, its bytes and rewrite time, and the limits' counters
            into these (:mod:`htmlstream.integrations.proxy_metrics`; Prometheus' format).

    Attributes:
        counters: what the limits closed or refused, and the connections accepted and
            open (:class:`~htmlstream.integrations.proxy_limits.ServerCounters`).
    """

    def __init__(
        self,
        rewriter: Rewriter,
        upstream: str,
        *,
        options: HttpOptions | None = None,
        context: ContextFactory | None = None,
        headers_hook: HeadersHook | None = csp_nonce_hook,
        preserve_host: bool = False,
        trust_forwarded: bool = False,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        shutdown_grace: float = 10.0,
        max_connections: int = 256,
        websocket_idle_timeout: float = 300.0,
        websocket_max_message: int = 4 << 20,
        limits: ServerLimits | None = None,
        markdown: MarkdownOptions | None = None,
        esi: Literal["off", "on", "always"] = "off",
        esi_hosts: Iterable[str] = (),
        esi_timeout: float = 10.0,
        esi_concurrency: int = 16,
        metrics: ProxyMetrics | None = None,
    ) -> None:
        if esi not in ("off", "on", "always"):
            raise ValueError(f"esi must be 'off', 'on' or 'always', not {esi!r}")
        self.esi = esi
        self.esi_hosts = frozenset(h.strip().lower() for h in esi_hosts if h.strip())
        self._esi_timeout = esi_timeout
        self._esi_concurrency = esi_concurrency
        where = "ReverseProxy()"
        check_type(rewriter, Rewriter, where, "rewriter", "a Rewriter")
        if markdown is not None:
            check_type(markdown, MarkdownOptions, where, "markdown", "a MarkdownOptions or None")
        check_type(upstream, str, where, "upstream", "a str (an http:// or https:// URL)")
        if metrics is not None:
            check_type(metrics, ProxyMetrics, where, "metrics", "a ProxyMetrics or None")
        url = URL(upstream)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"the upstream is an http:// or https:// URL, not {upstream!r}")
        self.rewriter = rewriter
        self.upstream = url
        self._prefix = url.raw_path.rstrip("/")
        self._authority = url.raw_authority.lower()
        self._options = options
        self._context = context
        self._headers_hook = headers_hook
        self.markdown = markdown
        self.preserve_host = preserve_host
        self.trust_forwarded = trust_forwarded
        self._timeout = aiohttp.ClientTimeout(total=None, connect=None,
                                              sock_connect=connect_timeout,
                                              sock_read=read_timeout)
        self._shutdown_grace = shutdown_grace
        self._max_connections = max_connections
        self.websocket_idle_timeout = websocket_idle_timeout
        self.websocket_max_message = websocket_max_message
        self.limits = limits if limits is not None else ServerLimits()
        self._metrics = metrics
        self.counters = metrics.counters if metrics is not None else ServerCounters()
        self._session: aiohttp.ClientSession | None = None
        self._server: web.Server | None = None
        self._listener: Any = None
        self._edge: Any = None
        self._relays: set[_WebSocketRelay] = set()
        self._stopping = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self, host: str = "127.0.0.1", port: int = 0, *,
                    ssl_context: ssl.SSLContext | None = None,
                    sock: socket.socket | None = None) -> tuple[str, int]:
        """Listen on ``host:port`` (0: a free port); returns the address listened on.
        ``ssl_context``: serve HTTPS (a server-side context with the certificate loaded).
        ``sock``: a listening socket to accept from instead (``host`` and ``port`` are then
        ignored); the proxy closes it when it stops."""
        if self._server is not None:
            raise RuntimeError("the proxy is started already")
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0),
            timeout=self._timeout,
            auto_decompress=False,      # the body goes on (or to ResponseRewrite) as sent
            cookie_jar=aiohttp.DummyCookieJar(),
            # Only the client's headers: no User-Agent, Accept, Accept-Encoding of aiohttp's.
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
        )
        if sock is None:
            try:
                sock = bind(host, port, self.limits.backlog)
            except BaseException:
                await self._session.close()
                self._session = None
                raise
        server, factory, self._edge = make_server(self.handle, self.limits, self.counters,
                                                  logger)
        self._server = server
        self._listener = await listen(sock, factory, self._edge, ssl_context)
        address = sock.getsockname()
        return str(address[0]), int(address[1])

    async def close(self) -> None:
        """Close open WebSockets (1001), stop accepting, let in-flight requests finish
        (``shutdown_grace`` seconds at most, then they are cancelled), and close the upstream
        connections."""
        server, self._server = self._server, None
        self._stopping = True
        # Open WebSockets last as long as their users want: they are closed at once (1001),
        # the grace is for HTTP requests in flight.
        await asyncio.gather(*(relay.close_both(WSCloseCode.GOING_AWAY, "the proxy stopped",
                                                "the proxy stops")
                               for relay in list(self._relays)))
        if server is not None:
            self._listener.stop()
            # (as aiohttp's runner: requests that came in start, then idle connections
            # close and in-flight requests get the grace)
            await asyncio.sleep(0)
            server.pre_shutdown()
            await server.shutdown(self._shutdown_grace)
            self._edge.stop()
        self._stopping = False
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ one request

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        """Proxy one request (aiohttp's low-level server handler)."""
        started = time.perf_counter()
        state: dict[str, Any] = {"sent": 0, "note": "", "in": 0, "rewrite": 0.0}
        status = 0
        metrics = self._metrics
        if metrics is not None:
            metrics.stream_opened()
        try:
            response: web.StreamResponse
            if declared_too_large(request, self.limits):
                response = too_large_response()
                state["limit"] = "max_body_size"
            else:
                response = await self._proxy(request, state)
                if state.get("limit") and not response.prepared:
                    response = too_large_response()     # (the upstream got no whole body)
            if state.get("limit"):
                state["note"] = "refused: body over max_body_size"
                self._edge.count("max_body_size", None)
            status = response.status
            return response
        except _Aborted as exc:
            status = state.get("status", 0)
            state["note"] = f"aborted: {exc}"
            if state.get("limit"):
                state["note"] = "aborted: body over max_body_size"
                self._edge.count("max_body_size", None)
            if request.transport is not None:
                request.transport.abort()
            # aiohttp's write_eof() on the aborted transport fails quietly: the body is not
            # ended (no last chunk), and the connection is gone.
            aborted: web.StreamResponse = state["response"]
            return aborted
        except (ConnectionError, asyncio.CancelledError):
            status = limit_status(request) or state.get("status", 0)
            state["note"] = limit_note(request) or "aborted: the client went away"
            raise
        finally:
            relay = state.get("websocket")
            if isinstance(relay, _WebSocketRelay) and state.get("status") == 101:
                state["note"] = relay.summary()
            logger.info('%s "%s %s HTTP/%d.%d" %d %d %.3fs %s', request.remote or "-",
                        request.method, request.raw_path, *request.version, status,
                        state["sent"], time.perf_counter() - started, state["note"])
            if metrics is not None:
                metrics.stream_closed(state["note"], state["in"], state["sent"],
                                      state["rewrite"] if state.get("rewriting") else None)

    def _refusal(self, request: web.BaseRequest) -> web.Response | None:
        """The error response for a request this proxy does not forward, or None."""
        if request.method == "CONNECT":
            return web.Response(status=405, text="CONNECT is not allowed: this is a reverse "
                                "proxy for one origin, not a forward proxy\n",
                                headers={"Allow": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"})
        target = request.raw_path
        if not target.startswith("/") and not (target == "*" and request.method == "OPTIONS"):
            try:
                authority = URL(target).raw_authority.lower()
            except ValueError:
                authority = ""
            if authority != self._authority:
                return web.Response(status=421, text="this reverse proxy serves one origin: "
                                    "absolute-form request targets for other hosts are refused\n")
        return None

    def _upstream_headers(self, request: web.BaseRequest) -> list[tuple[str, str]]:
        headers = _end_to_end(_str_pairs(request.raw_headers))
        client = request.remote or ""
        forwarded_for = [value for name, value in headers if name.lower() == "x-forwarded-for"]
        proto = request.headers.get("X-Forwarded-Proto") if self.trust_forwarded else None
        fhost = request.headers.get("X-Forwarded-Host") if self.trust_forwarded else None
        out = [(name, value) for name, value in headers if name.lower() not in _SET_BY_PROXY]
        chain = [*forwarded_for, client] if self.trust_forwarded and forwarded_for else [client]
        out.append(("X-Forwarded-For", ", ".join(chain)))
        out.append(("X-Forwarded-Proto", proto or request.scheme))
        host = request.headers.get("Host")
        if fhost or host:
            out.append(("X-Forwarded-Host", fhost or host or ""))
        if self.preserve_host and host:
            out.append(("Host", host))
        return out

    def _upstream_url(self, request: web.BaseRequest) -> URL:
        target = request.raw_path
        if not target.startswith("/"):
            target = URL(target).raw_path_qs if target != "*" else "*"
        return URL(f"{self.upstream.scheme}://{self.upstream.raw_authority}{self._prefix}"
                   f"{target}", encoded=True)

    async def _proxy(self, request: web.BaseRequest, state: dict[str, Any]
                     ) -> web.StreamResponse:
        refusal = self._refusal(request)
        if refusal is not None:
            state["note"] = "refused"
            return refusal
        session = self._session
        assert session is not None, "the proxy is not started"
        url = self._upstream_url(request)
        if "websocket" in request.headers.get("Upgrade", "").lower():
            return await self._websocket(request, session, url, state)
        if request.headers.get("Expect", "").lower() == "100-continue":
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        data: Any = request.content if request.body_exists else None
        # No way around the rewrite: Range and If-Range only for what cannot be a page,
        # Accept-Encoding naming only codings ResponseRewrite decodes (htmlstream.http).
        headers = forwarded_request_headers(request.method, request.raw_path,
                                            self._upstream_headers(request), self._options)
        if self.esi != "off" and request.method == "GET":
            # (only a page's plain bytes can be assembled)
            headers = [(n, v) for n, v in headers if n.lower() != "accept-encoding"]
            headers.append(("Accept-Encoding", "identity"))
        if data is not None and request.content_length is None and self.limits.max_body_size:
            data = counted_body(request, self.limits.max_body_size, state)
        try:
            upstream = await session.request(
                request.method, url, headers=headers, data=data,
                allow_redirects=False, compress=None, chunked=None,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"))
        except (TimeoutError, aiohttp.ClientError) as exc:
            return _upstream_failure(state, exc)
        try:
            return await self._respond(request, upstream, state)
        finally:
            esi_body = state.get("esi")
            if esi_body is not None:
                await esi_body.aclose()     # (cancels the page's fragment fetches)
            if not upstream.content.is_eof():
                upstream.close()    # cut short: the upstream connection is not reused
            upstream.release()

    async def _respond(self, request: web.BaseRequest, upstream: aiohttp.ClientResponse,
                       state: dict[str, Any]) -> web.StreamResponse:
        headers = _end_to_end(_str_pairs(upstream.raw_headers))
        body: AsyncGenerator[bytes, None] | None = None
        if self.esi != "off":
            if self._esi_applies(request, upstream.status, headers):
                body = state["esi"] = self._esi_body(request, upstream)
                headers = [(n, v) for n, v in headers
                           if n.lower() not in ("content-length", "etag", "last-modified")]
            headers = [(n, v) for n, v in headers if n.lower() != "surrogate-control"]
        ctx = self._context(request) if self._context is not None else None
        try:
            transform: ResponseRewrite[str] = ResponseRewrite(
                self.rewriter, request.method, upstream.status, headers,
                request_headers=request.headers, options=self._options, context=ctx,
                markdown=self.markdown)
        except ResponseRefused as exc:
            return _refused(state, exc)
        state["status"] = upstream.status
        response: web.StreamResponse | None = None

        async def send(out: bytes) -> None:
            nonlocal response
            if response is None:
                response = await self._start_response(request, upstream, transform, ctx)
                state["response"] = response
            if out:
                await response.write(out)   # (drains the client connection when its buffer
                state["sent"] += len(out)   # is full: the upstream waits meanwhile)

        while True:
            try:
                if body is None:
                    chunk = await upstream.content.read(_READ_SIZE)
                else:
                    chunk = await anext(body, b"")
            except TimeoutError as exc:
                if response is None:
                    state["note"] = "upstream timeout before the first byte"
                    return web.Response(status=504, text="the upstream stalled\n")
                raise _Aborted("upstream read timeout") from exc
            except aiohttp.ClientError as exc:
                if response is None:
                    state["note"] = f"upstream error: {exc}"
                    return web.Response(status=502, text="the upstream response broke off\n")
                raise _Aborted(f"upstream: {exc}") from exc
            send_error: BaseException | None = None
            state["in"] += len(chunk)
            rewrite_started = time.perf_counter()
            try:
                if self.rewriter.has_async_handlers:
                    # (issue 30: the output before each waiting handler is sent before it waits)
                    pieces = transform.afeed_iter(chunk) if chunk else transform.aclose_iter()
                    async with contextlib.aclosing(pieces):
                        async for out in pieces:
                            sending = time.perf_counter()
                            try:
                                await send(out)
                            except BaseException as exc:
                                send_error = exc
                                raise
                            rewrite_started += time.perf_counter() - sending    # not the rewrite's
                    out = b""
                else:
                    out = transform.feed(chunk) if chunk else transform.close()
            except ResponseRefused as exc:      # (always before any output)
                return _refused(state, exc)
            except Exception as exc:    # a corrupt or oversized compressed body, a handler's
                if exc is send_error:
                    raise
                if response is None:
                    state["note"] = f"rewrite failed: {exc}"
                    return web.Response(status=502, text="the response could not be rewritten\n")
                raise _Aborted(f"rewrite failed: {exc}") from exc
            finally:
                state["rewrite"] += time.perf_counter() - rewrite_started
                state["rewriting"] = transform.rewriting
            if transform.decided or not chunk:
                await send(out)
            if not chunk:
                break
        assert response is not None
        await response.write_eof()
        state["note"] = "rewritten" if transform.rewriting else f"passed: {transform.reason}"
        if state.get("esi"):
            state["note"] += ", ESI assembled"
        return response

    # ------------------------------------------------------------------ ESI

    def _esi_applies(self, request: web.BaseRequest, status: int,
                     headers: list[tuple[str, str]]) -> bool:
        """Whether this response is assembled: a 2xx answer to a GET, HTML, not compressed,
        and ``Surrogate-Control: content="ESI/1.0"`` unless ``esi="always"``."""
        if request.method != "GET" or not 200 <= status < 300 or status == 204:
            return False
        fields: dict[str, list[str]] = {}
        for name, value in headers:
            fields.setdefault(name.lower(), []).append(value)
        ctype = (fields.get("content-type") or [""])[0].split(";")[0].strip().lower()
        if ctype not in ("text/html", "application/xhtml+xml"):
            return False
        if any(v.strip().lower() not in ("", "identity")
               for v in fields.get("content-encoding", [])):
            return False
        if self.esi == "always":
            return True
        return any(_esi_signalled(v) for v in fields.get("surrogate-control", []))

    def _esi_allowed(self, url: URL) -> bool:
        if url.scheme not in ("http", "https") or not url.host:
            return False
        if url.scheme == self.upstream.scheme and url.raw_authority.lower() == self._authority:
            return True
        return url.raw_authority.lower() in self.esi_hosts or (
            url.explicit_port is None and url.host.lower() in self.esi_hosts)

    def _esi_body(self, request: web.BaseRequest, upstream: aiohttp.ClientResponse
                  ) -> AsyncGenerator[bytes, None]:
        """The page assembled from the upstream's body and its fragments."""
        session = self._session
        assert session is not None
        forwarded = [(name, value) for name, value in _str_pairs(request.raw_headers)
                     if name.lower() in _ESI_FORWARDED]
        forwarded.append(("Accept-Encoding", "identity"))

        async def fetch(url: str) -> AsyncIterator[bytes]:
            target = URL(url)
            if not self._esi_allowed(target):
                raise PermissionError(f"fragments from {target.scheme}://"
                                      f"{target.raw_authority} are not allowed (esi_hosts)")
            resp = await session.get(target, headers=forwarded, allow_redirects=False,
                                     compress=None)
            if not 200 <= resp.status < 300:
                resp.release()
                raise OSError(f"status {resp.status}")
            coding = resp.headers.get("Content-Encoding", "identity").strip().lower()
            if coding not in ("", "identity"):
                resp.close()
                raise OSError(f"a fragment in content coding {coding!r}")

            async def chunks() -> AsyncIterator[bytes]:
                try:
                    async for data in resp.content.iter_any():
                        yield data
                finally:
                    resp.release()
            return chunks()

        async def page() -> AsyncIterator[bytes]:
            while chunk := await upstream.content.read(_READ_SIZE):
                yield chunk

        esi = esi_recipe(fetch, timeout=self._esi_timeout,
                         concurrency=self._esi_concurrency)
        return esi.rewrite_aiter(page(), str(upstream.url))

    async def _start_response(self, request: web.BaseRequest, upstream: aiohttp.ClientResponse,
                              transform: ResponseRewrite[str], ctx: Mapping[str, Any] | None
                              ) -> web.StreamResponse:
        headers = transform.headers
        decision = transform.decision
        if decision is not None and decision.rewritten_headers and self._headers_hook is not None:
            headers = self._headers_hook(ctx, list(headers))
        untyped = not any(name.lower() == "content-type" for name, _ in headers)
        response = _Response(status=upstream.status, reason=upstream.reason, untyped=untyped)
        response.headers.extend(CIMultiDict(headers))
        await response.prepare(request)
        return response

    # ------------------------------------------------------------------ WebSockets

    async def _websocket(self, request: web.BaseRequest, session: aiohttp.ClientSession,
                         url: URL, state: dict[str, Any]) -> web.StreamResponse:
        """Relay a WebSocket: the upstream's handshake first, then the client's, then messages
        both ways until one side closes (or the connection idles), the close passed on."""
        offered = [p.strip() for value in request.headers.getall("Sec-WebSocket-Protocol", ())
                   for p in value.split(",") if p.strip()]
        if self._stopping:
            state["note"] = "refused: the proxy stops"
            return web.Response(status=503, text="the proxy is stopping\n")
        if (request.method != "GET"
                or not web.WebSocketResponse(protocols=offered).can_prepare(request).ok):
            state["note"] = "refused: not a valid WebSocket upgrade"
            return web.Response(status=400, text="invalid WebSocket upgrade request\n")
        headers = [(name, value) for name, value in self._upstream_headers(request)
                   if not name.lower().startswith("sec-websocket-")]
        try:
            upstream = await session.ws_connect(
                url, method="GET", headers=headers, protocols=offered, autoclose=False,
                autoping=False, compress=0, max_msg_size=self.websocket_max_message,
                timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=_WS_CLOSE_TIMEOUT))
        except aiohttp.WSServerHandshakeError as exc:
            if exc.status < 200:    # 101 with a wrong accept key or subprotocol
                state["note"] = f"upstream WebSocket handshake failed: {exc.message}"
                return web.Response(status=502, text="the upstream WebSocket handshake "
                                    "failed\n")
            state["note"] = f"upstream refused the WebSocket: {exc.status}"
            passed = _end_to_end(list(exc.headers.items())) if exc.headers else []
            response = web.Response(status=exc.status, text=f"the upstream refused the "
                                    f"WebSocket upgrade: {exc.status} {exc.message}\n")
            for name, value in passed:
                if name.lower() not in ("content-length", "content-type", "content-encoding"):
                    response.headers.add(name, value)
            return response
        except (TimeoutError, aiohttp.ClientError) as exc:
            return _upstream_failure(state, exc)
        client = web.WebSocketResponse(
            protocols=(upstream.protocol,) if upstream.protocol else (), autoclose=False,
            autoping=False, compress=False, max_msg_size=self.websocket_max_message,
            timeout=_WS_CLOSE_TIMEOUT)
        relay = _WebSocketRelay(client, upstream, self.websocket_idle_timeout)
        state["websocket"] = relay
        self._relays.add(relay)
        try:
            await client.prepare(request)
            state["status"] = 101
            # Shielded: closing the client's connection (the last step of a close handshake)
            # makes aiohttp cancel this handler, which must not cut the relay's close short.
            task = asyncio.ensure_future(relay.run())
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if not relay.closing:       # not the end of a close: going away
                    await relay.close_both(WSCloseCode.GOING_AWAY, "client connection lost")
                await asyncio.wait([task], timeout=2 * _WS_CLOSE_TIMEOUT)
                task.cancel()
                raise
        finally:
            self._relays.discard(relay)
            await asyncio.gather(_close_quietly(upstream, WSCloseCode.GOING_AWAY),
                                 _close_quietly(client, WSCloseCode.GOING_AWAY))
        return client


#: Seconds a WebSocket side gets to answer a close frame.
_WS_CLOSE_TIMEOUT: Final = 5.0

#: Close codes never sent in a close frame (RFC 6455 7.4.1); aiohttp gives 0 for a close
#: frame without a code (1005 in the RFC's terms), which the other side then gets as 1000.
_NOT_SENT_CODES: Final = frozenset({1004, 1005, 1006, 1015})

_Socket = web.WebSocketResponse | aiohttp.ClientWebSocketResponse


async def _close_quietly(ws: _Socket, code: int, message: bytes = b"") -> None:
    """Close ``ws`` (nothing if it is closed already), whatever goes wrong, in bounded time."""
    if ws.closed:
        return
    with contextlib.suppress(TimeoutError, ConnectionError, aiohttp.ClientError, RuntimeError):
        await asyncio.wait_for(asyncio.shield(ws.close(code=code, message=message)),
                               _WS_CLOSE_TIMEOUT)


class _WebSocketRelay:
    """Messages both ways between the client's WebSocket and the upstream's until a side
    closes or nothing moves for ``idle_timeout`` seconds; :meth:`summary` for the access log."""

    def __init__(self, client: web.WebSocketResponse,
                 upstream: aiohttp.ClientWebSocketResponse, idle_timeout: float) -> None:
        self.client = client
        self.upstream = upstream
        self.idle_timeout = idle_timeout
        self.counts = {"up": 0, "down": 0}
        self.outcome = ""
        #: A close was started (by a side, the idle timeout or the shutdown).
        self.closing = False
        self._last = 0.0

    def summary(self) -> str:
        """What happened, for the access log."""
        return (f"websocket: {self.counts['up']} messages up, {self.counts['down']} down, "
                f"{self.outcome or 'ended'}")

    def _ended(self, outcome: str) -> None:
        self.closing = True
        self.outcome = self.outcome or outcome

    async def close_both(self, code: int, why: str, reason: str = "") -> None:
        """Close both sides with ``code`` and ``reason`` (unless a close is under way);
        ``why`` for the access log."""
        if self.closing:
            return
        self._ended(why)
        await asyncio.gather(_close_quietly(self.client, code, reason.encode()),
                             _close_quietly(self.upstream, code, reason.encode()))

    async def run(self) -> None:
        """Relay until the end."""
        loop = asyncio.get_running_loop()
        self._last = loop.time()
        tasks = [asyncio.create_task(self._pump(self.client, self.upstream, "up", "client")),
                 asyncio.create_task(self._pump(self.upstream, self.client, "down", "upstream")),
                 asyncio.create_task(self._watchdog())]
        try:
            await asyncio.wait(tasks[:2], return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        errors = [t.exception() for t in tasks[:2] if not t.cancelled() and t.exception()]
        if errors:
            self._ended(f"error: {errors[0]}")

    async def _pump(self, src: _Socket, dst: _Socket, way: str, side: str) -> None:
        loop = asyncio.get_running_loop()
        while True:
            msg = await src.receive()
            self._last = loop.time()
            kind = msg.type
            if kind is WSMsgType.TEXT:
                await dst.send_str(msg.data)
            elif kind is WSMsgType.BINARY:
                await dst.send_bytes(msg.data)
            elif kind is WSMsgType.PING:
                await dst.ping(msg.data)
            elif kind is WSMsgType.PONG:
                await dst.pong(msg.data)
            elif kind is WSMsgType.CLOSE:
                # Closed by ``src``: the same close to ``dst``; once it answered (or did not
                # in time), src gets the answer, echoing its code (as RFC 6455 5.5.1 has it).
                code, reason = int(msg.data), (msg.extra or "").encode()
                self._ended(f"closed by the {side} ({code or 'no code'})")
                if code < 1000 or code in _NOT_SENT_CODES:     # a close frame without a code
                    code = WSCloseCode.OK
                await _close_quietly(dst, code, reason)
                await _close_quietly(src, code, reason)
                return
            elif kind is WSMsgType.CLOSING:
                return                          # the other pump is closing this side
            else:                               # CLOSED (connection lost) or ERROR
                code = WSCloseCode.GOING_AWAY
                if kind is WSMsgType.ERROR:     # e.g. a message over the limit (1009)
                    code = WSCloseCode.INTERNAL_ERROR
                self._ended(f"{side} connection lost ({msg.data or kind.name.lower()})")
                await _close_quietly(dst, code)
                return
            self.counts[way] += 1

    async def _watchdog(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            idle = loop.time() - self._last
            if idle >= self.idle_timeout:
                idle_for = f"idle for {self.idle_timeout:g} s"
                await self.close_both(WSCloseCode.GOING_AWAY, idle_for, idle_for)
                return
            await asyncio.sleep(self.idle_timeout - idle)


#: The client's request fields a fragment request carries (the ESI guide says why).
_ESI_FORWARDED: Final = frozenset({"cookie", "authorization", "accept-language"})


def _esi_signalled(value: str) -> bool:
    """Whether a ``Surrogate-Control`` value has ``content="ESI/1.0"`` (Edge Architecture
    Specification 1.0: a ``content`` directive listing capabilities, quoted or not)."""
    for directive in value.split(","):
        name, _, arg = directive.strip().partition("=")
        if name.strip().lower() == "content":
            caps = arg.strip().strip('"').split()
            if any(c.strip().upper() == "ESI/1.0" for c in caps):
                return True
    return False


def _refused(state: dict[str, Any], exc: ResponseRefused) -> web.Response:
    """The answer to a response that would be rewritten and cannot be (a byte range of a page,
    a coding that cannot be decoded...): 502, nothing of the upstream's bytes; the access log
    says why."""
    state["status"] = 502
    state["note"] = f"refused: {exc.reason}"
    return web.Response(status=502, text="the upstream response cannot be rewritten\n")


def _upstream_failure(state: dict[str, Any], exc: BaseException) -> web.Response:
    """The answer when the upstream cannot be reached (502) or does not answer in time (504)
    before the first byte; the access log's note says which."""
    if isinstance(exc, TimeoutError):
        state["note"] = f"upstream timeout: {exc or 'no response'}"
        return web.Response(status=504, text="the upstream did not answer in time\n")
    state["note"] = f"upstream error: {exc}"
    return web.Response(status=502, text="the upstream cannot be reached\n")
