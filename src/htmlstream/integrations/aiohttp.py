"""aiohttp server: a middleware that rewrites HTML responses (``pip install htmlstream[aiohttp]``).

::

    app = web.Application(middlewares=[rewrite_middleware(rewriter)])

Every decision is :class:`htmlstream.http.ResponseRewrite`'s (what is HTML, the encoding, the
headers, content codings); this module only connects it to aiohttp's two kinds of response:

* a :class:`aiohttp.web.Response` returned by the handler (the whole body in memory, not yet
  sent): its body and headers are rewritten before aiohttp prepares it, through aiohttp's public
  API; its ``Content-Length`` is the rewritten body's.
* a :class:`aiohttp.web.StreamResponse` that the handler prepares and writes itself (``await
  resp.prepare(request)``, ``await resp.write(chunk)``): aiohttp sends such a response from the
  handler, before any middleware sees it, through the request's payload writer.  The middleware
  gives the handler's request a writer of its own (an :class:`aiohttp.abc.AbstractStreamWriter`
  wrapping aiohttp's, for the time of the handler call): it holds the headers until the decision
  (at most 1024 decoded body bytes), then sends the decided headers and each chunk's rewritten
  bytes as it is written, awaiting aiohttp's writer (so its backpressure reaches the handler).
  A rewritten body with a ``Content-Length`` is sent chunked instead (HTTP/1.1; to an HTTP/1.0
  client it is sent whole at its end, with its new length: passed through untouched, any
  client could read the page unrewritten by asking in HTTP/1.0).
  ``resp.enable_compression()`` keeps working: the body is rewritten before aiohttp compresses
  it.

A ``web.FileResponse`` (which aiohttp would send with ``sendfile``, past any writer) is
prepared by the middleware, through its writer: a page is read in chunks and rewritten, any
other file is sent with ``sendfile`` as aiohttp does.  Not rewritten: a ``web.Response`` whose
body is a payload object (a file, a stream) rather than bytes, error responses raised as
``web.HTTPException``, and WebSocket responses.

No way around the rewrite: the handler gets a clone of the request whose headers are
:func:`htmlstream.http.forwarded_request_headers` (``Range`` and ``If-Range`` only for what
cannot be a page, ``Accept-Encoding`` naming only codings htmlstream decodes: the codings
``FileResponse`` picks a precompressed ``.br``/``.gz`` sibling by, too).  A response that would
be rewritten and cannot be (:class:`htmlstream.http.ResponseRefused`: partial, in a coding not
decoded...; for a ``web.Response``, a truncated compressed body too) is answered 502 instead,
logged on ``htmlstream.aiohttp``.  A handler that compresses its pages itself (rather than
``resp.enable_compression()``, which compresses after the rewrite) is warned about once per
process.  A ``HEAD`` answers the headers of the ``GET`` (a
``web.Response`` is decided as a ``GET``: its ``Content-Length`` is the rewritten body's).

Client disconnect: aiohttp's writer raises ``ConnectionResetError`` (or aiohttp cancels the
handler); it reaches the handler's ``await resp.write(...)`` unchanged.  An error after output
was sent (a corrupt compressed body, a handler's exception) propagates from ``write``; aiohttp
then closes the connection without ending the body (the client sees it incomplete).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, Final

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.typedefs import Handler, Middleware
from multidict import CIMultiDict

from htmlstream import Rewriter
from htmlstream.http import (
    ContentDecodingError,
    HttpOptions,
    MarkdownOptions,
    ResponseRefused,
    ResponseRewrite,
    csp_nonce_hook,
    forwarded_request_headers,
    warn_app_compresses,
)

__all__ = ["ContextFactory", "HeadersHook", "logger", "rewrite_middleware"]

#: Responses refused (a byte range of a page, a coding that cannot be decoded...): WARNING.
logger: Final = logging.getLogger("htmlstream.aiohttp")

#: A function of the request giving the per-document context (``Rewriter.stream(context=...)``).
ContextFactory = Callable[[web.Request], Mapping[str, Any] | None]
#: Called with the context and the headers to send when a response is rewritten; returns the
#: headers to send (e.g. a ``Content-Security-Policy`` allowing the document's nonce).
HeadersHook = Callable[[Mapping[str, Any] | None, list[tuple[str, str]]], list[tuple[str, str]]]


def rewrite_middleware(
    rewriter: Rewriter,
    *,
    options: HttpOptions | None = None,
    context: ContextFactory | None = None,
    headers_hook: HeadersHook | None = csp_nonce_hook,
    markdown: MarkdownOptions | None = None,
) -> Middleware:
    """An aiohttp middleware rewriting the HTML responses of the handlers it wraps.

    Args:
        rewriter: the rules (shared by every request; each response gets its own stream).
        options: what :class:`~htmlstream.http.ResponseRewrite` rewrites, and how.
        context: called with each request; its result (when not None) is the per-document
            context given to ``rewriter.stream(context=...)``.
        headers_hook: called with that context and the headers to send when a response is
            rewritten (not when it passes through); returns the headers to send instead.  By
            default :func:`htmlstream.http.csp_nonce_hook`, as for the other middlewares (the
            context's ``csp_nonce`` allowed in the ``Content-Security-Policy``); None: none.
        markdown: answer requests whose ``Accept`` prefers ``text/markdown`` with the page
            as Markdown (:class:`htmlstream.http.MarkdownOptions`; docs/guide/markdown.md).
            None (the default): no content negotiation.
    """
    if not isinstance(rewriter, Rewriter):
        raise TypeError(f"rewrite_middleware(): rewriter must be a Rewriter, not "
                        f"{type(rewriter).__name__}")
    if markdown is not None and not isinstance(markdown, MarkdownOptions):
        raise TypeError(f"rewrite_middleware(): markdown must be a "
                        f"MarkdownOptions or None, not {type(markdown).__name__}")

    @web.middleware
    async def htmlstream_rewrite(request: web.Request, handler: Handler) -> web.StreamResponse:
        ctx = context(request) if context is not None else None
        original = request._payload_writer
        # Responses the handler prepares itself write through this writer.
        writer = _RewritingWriter(original, request, rewriter, options, ctx, headers_hook,
                                  markdown)
        request._payload_writer = writer
        try:
            # The handler's request: Range and If-Range only for what cannot be a page,
            # Accept-Encoding naming only codings that are decoded (htmlstream.http).
            forwarded = request.clone(headers=CIMultiDict(forwarded_request_headers(
                request.method, request.raw_path, list(request.headers.items()), options)))
            response = await handler(forwarded)
            if isinstance(response, web.FileResponse) and not response.prepared:
                await _prepare_file(response, forwarded, writer)
        except ResponseRefused as exc:
            if writer.headers_sent:
                raise
            return _refused(request, exc)
        finally:
            request._payload_writer = original
        if isinstance(response, web.Response) and not response.prepared:
            try:
                await _rewrite_whole(response, request, rewriter, options, ctx, headers_hook,
                                     markdown)
            except (ResponseRefused, ContentDecodingError) as exc:
                return _refused(request, exc)
        return response

    return htmlstream_rewrite


def _refused(request: web.Request, exc: ResponseRefused | ContentDecodingError) -> web.Response:
    """A 502 instead of a response that would be rewritten and cannot be."""
    logger.warning("%s %s: 502: %s", request.method, request.path,
                   exc.reason if isinstance(exc, ResponseRefused) else exc)
    return web.Response(status=502, text="the response cannot be rewritten\n")


async def _prepare_file(response: web.FileResponse, request: web.Request,
                        writer: _RewritingWriter) -> None:
    """Prepare a ``FileResponse`` through the rewriting writer (while the middleware runs): its
    headers decide; a page is read in chunks through the writer (and rewritten), anything else
    is sent as aiohttp sends files (``sendfile``)."""
    sendfile = response._sendfile

    async def through_writer(req: web.BaseRequest, fobj: Any, offset: int, count: int
                             ) -> AbstractStreamWriter:
        out = await web.StreamResponse.prepare(response, req)
        assert out is not None
        if writer.passing:
            return await sendfile(req, fobj, offset, count)
        return await response._sendfile_fallback(out, fobj, offset, count)

    response._sendfile = through_writer     # type: ignore[method-assign,assignment]
    writer_out = await response.prepare(request)

    async def prepared(request: web.BaseRequest) -> AbstractStreamWriter | None:
        return writer_out

    # aiohttp prepares the response it gets again (FileResponse.prepare does not check that it
    # was): it was, here, while the rewriting writer was the request's.
    response.prepare = prepared     # type: ignore[method-assign]


async def _feed(transform: ResponseRewrite[str], rewriter: Rewriter,
                chunk: bytes | bytearray | memoryview,
                close: bool) -> AsyncGenerator[bytes, None]:
    """``transform.feed(chunk)`` (and ``close()``), in pieces: with async handlers (issue 30)
    the output before each wait comes first; else one piece."""
    if not rewriter.has_async_handlers:
        yield (transform.feed(chunk) if chunk else b"") + (transform.close() if close else b"")
        return
    if chunk:
        async with contextlib.aclosing(transform.afeed_iter(chunk)) as pieces:
            async for piece in pieces:
                yield piece
    if close:
        async with contextlib.aclosing(transform.aclose_iter()) as pieces:
            async for piece in pieces:
                yield piece


async def _rewrite_whole(response: web.Response, request: web.Request, rewriter: Rewriter,
                         options: HttpOptions | None, context: Mapping[str, Any] | None,
                         headers_hook: HeadersHook | None,
                         markdown: MarkdownOptions | None = None) -> None:
    """Rewrite an unprepared ``web.Response`` in place (body and headers)."""
    body = response.body
    if not isinstance(body, bytes | bytearray):
        return      # None, or a payload object: sent as it is
    headers = list(response.headers.items())
    if body and "Content-Type" not in response.headers:
        headers.append(("Content-Type", "application/octet-stream"))    # (what aiohttp sends)
    # A HEAD is decided (and its body rewritten) as the GET: aiohttp sends its Content-Length
    # (of the body it then drops), which must be the GET's.
    method = "GET" if request.method == "HEAD" else request.method
    transform = ResponseRewrite(rewriter, method, response.status, headers,
                                request_headers=request.headers, options=options,
                                context=context, markdown=markdown)
    if transform.coding is not None:
        warn_app_compresses("aiohttp middleware", transform.coding)
    # (A ContentDecodingError after the decision, a truncated body, is raised too: the body as
    # it came would show a browser what it decodes of it.)
    out = b"".join([piece async for piece in _feed(transform, rewriter, body, True)])
    if not transform.rewriting:
        return
    headers = transform.headers
    if headers_hook is not None:
        headers = headers_hook(context, list(headers))
    response.headers.clear()
    response.headers.extend(headers)
    response.body = out     # (aiohttp sets Content-Length from it)


class _RewritingWriter(AbstractStreamWriter):
    """aiohttp's payload writer for one request, with the body rewritten on the way: headers
    held until decided, framing (length or chunked) set for the rewritten body."""

    def __init__(self, inner: AbstractStreamWriter, request: web.Request, rewriter: Rewriter,
                 options: HttpOptions | None, context: Mapping[str, Any] | None,
                 headers_hook: HeadersHook | None,
                 markdown: MarkdownOptions | None = None) -> None:
        self._inner = inner
        self._markdown = markdown
        self._headers_hook = headers_hook
        self._request = request
        self._rewriter = rewriter
        self._options = options
        self._context = context
        self.length: int | None = None
        self._chunking = False
        self._compression: str | None = None
        self._transform: ResponseRewrite[str] | None = None
        self._status_line = ""
        self._headers: CIMultiDict[str] = CIMultiDict()
        self._sent = False          # the headers went to the inner writer
        self._hold: list[bytes] | None = None    # the whole output, for an HTTP/1.0 client

    @property
    def headers_sent(self) -> bool:
        """Whether the headers went to aiohttp's writer (an error can no longer be answered)."""
        return self._sent

    @property
    def passing(self) -> bool:
        """Whether the body goes on as it is (decided by the headers, or not rewritten)."""
        return self._transform is None

    # What aiohttp reads of its writer.
    @property
    def buffer_size(self) -> int:
        return self._inner.buffer_size

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        self._inner.buffer_size = value

    @property
    def output_size(self) -> int:
        return self._inner.output_size

    @output_size.setter
    def output_size(self, value: int) -> None:
        self._inner.output_size = value

    @property
    def transport(self) -> Any:
        return self._inner.transport

    def enable_chunking(self) -> None:
        self._chunking = True   # (forwarded with the headers: rewriting may need it too)

    def enable_compression(self, encoding: str = "deflate", strategy: int | None = None) -> None:
        # aiohttp compresses what we write: the body we see is not encoded.
        self._compression = encoding
        self._inner.enable_compression(encoding, strategy)

    async def write_headers(self, status_line: str, headers: CIMultiDict[str]) -> None:
        self._status_line = status_line
        self._headers = headers
        version = status_line.partition(" ")[0]
        status = int(status_line.split(" ", 2)[1])
        seen: list[tuple[str, str]] = [
            (k, v) for k, v in headers.items()
            if not (self._compression is not None and k.lower() == "content-encoding")]
        transform = ResponseRewrite(self._rewriter, self._request.method, status, seen,
                                    request_headers=self._request.headers,
                                    options=self._options, context=self._context,
                                    markdown=self._markdown)
        if transform.coding is not None:
            # (a body the handler compressed itself; resp.enable_compression() is not that)
            warn_app_compresses("aiohttp middleware", transform.coding)
        if not transform.decided:
            self._transform = transform
            if version == "HTTP/1.0" and self.length is not None:
                # An HTTP/1.0 client cannot be sent a body of unknown length but by closing the
                # connection, which aiohttp decided against already: the body is held whole
                # (its length is the handler's Content-Length) and sent with its new length.
                # (Passed through, any client could read the page unrewritten by asking in
                # HTTP/1.0.)
                self._hold = []
            return      # held until the body decides
        decision = transform.decision
        if decision is not None and decision.rewritten_headers:
            # A HEAD whose GET is rewritten: the GET's headers (and framing), no body.
            self._transform = None
            await self._send_headers(transform.headers, None, head=True)
            return
        self._transform = None
        await self._send_headers(None, None)

    def send_headers(self) -> None:
        if self._sent:
            self._inner.send_headers()

    async def _send_headers(self, rewritten: list[tuple[str, str]] | None,
                            whole_length: int | None, head: bool = False) -> None:
        self._sent = True
        inner = self._inner
        if rewritten is None:       # passing through: as aiohttp framed it
            inner.length = self.length
            if self._chunking:
                inner.enable_chunking()
            await inner.write_headers(self._status_line, self._headers)
            return
        if self._headers_hook is not None:
            rewritten = self._headers_hook(self._context, list(rewritten))
        headers: CIMultiDict[str] = CIMultiDict(rewritten)
        if self._compression is not None:
            headers["Content-Encoding"] = self._compression
        inner.length = None
        if head:
            # (The framing the GET would have, without a body: aiohttp writes none for HEAD.)
            if self._chunking or self.length is not None:
                headers["Transfer-Encoding"] = "chunked"
            inner.length = 0
        elif self._chunking:
            inner.enable_chunking()
        elif self.length is not None:
            if whole_length is not None:    # the whole body is known: its length
                inner.length = whole_length
                headers["Content-Length"] = str(whole_length)
            else:                           # (HTTP/1.1 here)
                inner.enable_chunking()
                headers["Transfer-Encoding"] = "chunked"
        await inner.write_headers(self._status_line, headers)

    async def _decided(self, transform: ResponseRewrite[str], whole: int | None) -> None:
        await self._send_headers(transform.headers if transform.rewriting else None,
                                 whole if transform.rewriting else None)

    async def write(self, chunk: bytes | bytearray | memoryview) -> None:
        transform = self._transform
        if transform is None:
            await self._inner.write(chunk)
            return
        async with contextlib.aclosing(_feed(transform, self._rewriter, chunk, False)) as outs:
            async for out in outs:
                await self._write_out(transform, out)
        if not self._sent and transform.decided:
            await self._write_out(transform, b"")

    async def _write_out(self, transform: ResponseRewrite[str], out: bytes) -> None:
        if self._hold is not None:
            self._hold.append(out)
            return
        if not self._sent and transform.decided:
            await self._decided(transform, None)
            if not transform.rewriting:
                self._transform = None
            if not out:
                self._inner.send_headers()  # (else they leave with the first bytes)
        if out:
            await self._inner.write(out)

    async def write_eof(self, chunk: bytes = b"") -> None:
        transform = self._transform
        if transform is None:
            await self._inner.write_eof(chunk)
            return
        self._transform = None
        if self._sent and self._rewriter.has_async_handlers:
            # (the output before each waiting handler leaves before it waits)
            async with contextlib.aclosing(_feed(transform, self._rewriter, chunk, True)) as outs:
                async for out in outs:
                    await self._inner.write(out)
            await self._inner.write_eof(b"")
            return
        out = b"".join([piece async for piece in _feed(transform, self._rewriter, chunk, True)])
        if self._hold is not None:
            out = b"".join([*self._hold, out])
            self._hold = None
        if not self._sent:
            await self._decided(transform, len(out))
        await self._inner.write_eof(out)

    async def drain(self) -> None:
        await self._inner.drain()
