"""ASGI middleware: rewrite the HTML responses of any ASGI application, streaming.

::

    from htmlstream.integrations.asgi import HtmlRewriteMiddleware
    app = HtmlRewriteMiddleware(app, rewriter)            # any ASGI app
    app.add_middleware(HtmlRewriteMiddleware, rewriter=rewriter)   # Starlette, FastAPI

Only ``http`` scopes are touched (``websocket`` and ``lifespan`` pass through).  The
application's ``http.response.start`` is held until :class:`htmlstream.http.ResponseRewrite`
has decided (from the headers alone, or from the first 1024 decoded body bytes); then the body
is sent as it is rewritten, one ``http.response.body`` message (``more_body=True``) for every
application message that gave output, awaiting the server's ``send`` each time (its
backpressure).  The whole body is never held.

Client disconnects: ``receive`` is the server's (observed: after ``http.disconnect`` the stream
is dropped and the application's messages go to the server as they are, which discards them);
an exception from the server's ``send`` reaches the application unchanged.  Application
exceptions propagate.  An error of the transform (a handler's exception, a corrupt compressed
body) is raised from ``send`` and again when the application returns, so the server answers 500
before the headers, and aborts the connection after them: a response is never ended cleanly
when its body is incomplete.

No way around the rewrite: the application is called with a scope whose headers are
:func:`htmlstream.http.forwarded_request_headers` (``Range`` and ``If-Range`` only for what
cannot be a page, ``Accept-Encoding`` naming only codings htmlstream decodes), so a
Range-capable application (Starlette's ``StaticFiles``) answers a page whole.  A response that
would be rewritten and cannot be (partial, in a coding not decoded, corrupt before the
decision: :class:`htmlstream.http.ResponseRefused`) is answered 502 by the middleware, logged
on ``htmlstream.asgi``; what the application sends of it is dropped.  An application that
compresses its pages itself (a compression middleware inside this one) is warned about once
per process (:func:`htmlstream.http.warn_app_compresses`): put the compression middleware
outside, around this one.

Responses the middleware does not rewrite, whatever their type: those with trailers
(``trailers: True`` in ``http.response.start``: a trailer may hold a digest of the body).  A
file the server would send itself (``http.response.pathsend``, ``http.response.zerocopysend``:
Starlette's ``FileResponse`` under a server that offers them) is sent as it is when its headers
decided (an image...); a page's is read here, in a thread, and rewritten like body messages.
This module imports nothing outside the standard library and htmlstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    MutableMapping,
)
from typing import Any, Final, TypeAlias

from htmlstream import Rewriter
from htmlstream.errors import HtmlStreamError, check_callable, check_type
from htmlstream.http import (
    HttpOptions,
    MarkdownOptions,
    ResponseRefused,
    ResponseRewrite,
    csp_nonce_hook,
    forwarded_request_headers,
    warn_app_compresses,
)

__all__ = ["ASGIApp", "HeadersHook", "HtmlRewriteMiddleware", "Message", "Receive", "Scope",
           "Send", "logger"]

#: Responses refused (a byte range of a page, a coding that cannot be decoded...): WARNING.
logger: Final = logging.getLogger("htmlstream.asgi")

#: An ASGI connection scope.
Scope: TypeAlias = MutableMapping[str, Any]
#: An ASGI event message.
Message: TypeAlias = MutableMapping[str, Any]
#: The ASGI ``receive`` callable.
Receive: TypeAlias = Callable[[], Awaitable[Message]]
#: The ASGI ``send`` callable.
Send: TypeAlias = Callable[[Message], Awaitable[None]]
#: An ASGI 3 application.
ASGIApp: TypeAlias = Callable[[Scope, Receive, Send], Awaitable[None]]
#: Called with the document's context (None without one) and the headers to send, when a
#: response is rewritten; returns the headers to send (ASGI headers: pairs of ``bytes``).
HeadersHook: TypeAlias = Callable[[Mapping[str, Any] | None, list[tuple[bytes, bytes]]],
                                  list[tuple[bytes, bytes]]]

#: The messages that send a file the server reads itself.
_FILE_MESSAGES = frozenset({"http.response.pathsend", "http.response.zerocopysend"})


class HtmlRewriteMiddleware:
    """Rewrites the HTML responses of an ASGI application with ``rewriter``, streaming.

    Args:
        app: the ASGI application.
        rewriter: the rules (shared by every request: a stream is made per response).
        options: what is rewritten and how (:class:`htmlstream.http.HttpOptions`).
        context: called with the scope for every ``http`` response; its mapping is the
            document's context (``rewriter.stream(context=...)``) and is given to
            ``headers_hook``.  None: no context.
        headers_hook: called with the context and the headers to send when a response is
            rewritten, before they are sent; returns the headers.  The default,
            :func:`htmlstream.http.csp_nonce_hook`, allows the context's ``csp_nonce`` in the
            ``Content-Security-Policy``.  None: the headers are sent as decided.
        markdown: answer requests whose ``Accept`` prefers ``text/markdown`` with the page
            as Markdown (:class:`htmlstream.http.MarkdownOptions`; docs/guide/markdown.md).
            None (the default): no content negotiation.
    """

    def __init__(
        self,
        app: ASGIApp,
        rewriter: Rewriter,
        *,
        options: HttpOptions | None = None,
        context: Callable[[Scope], Mapping[str, Any]] | None = None,
        headers_hook: HeadersHook | None = csp_nonce_hook,
        markdown: MarkdownOptions | None = None,
    ) -> None:
        where = "HtmlRewriteMiddleware()"
        check_callable(app, where, "app", "an ASGI app (a callable)")
        check_type(rewriter, Rewriter, where, "rewriter", "a Rewriter")
        if markdown is not None:
            check_type(markdown, MarkdownOptions, where, "markdown", "a MarkdownOptions or None")
        self.app = app
        self.rewriter = rewriter
        self.options = options
        self.context = context
        self.headers_hook = headers_hook
        self.markdown = markdown

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI application: ``http`` scopes rewritten, others passed through."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # No way around the rewrite: the application sees Range and If-Range only for what
        # cannot be a page, and an Accept-Encoding naming only codings that are decoded.
        scope = {**scope, "headers": forwarded_request_headers(
            scope["method"], scope.get("path", ""), list(scope.get("headers", [])),
            self.options)}
        response = _Response(self, scope, send)

        async def receive_observed() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                await response.disconnected()
            return message

        await self.app(scope, receive_observed, response.send)
        if response.error is not None:
            # The application swallowed the transform's error: the response must not end.
            raise response.error


#: How much of a file is read at once (``http.response.pathsend`` of a page).
_FILE_CHUNK = 64 * 1024


async def _read_file(message: Message) -> AsyncIterator[bytes]:
    """The bytes of the file of a ``pathsend`` (its path) or ``zerocopysend`` (its open file,
    ``offset`` and ``count``) message, read in a thread, a chunk at a time."""
    owned = message["type"] == "http.response.pathsend"
    if owned:
        fd = await asyncio.to_thread(os.open, message["path"], os.O_RDONLY)
        offset, count = 0, None
    else:
        file = message["file"]
        fd = file if isinstance(file, int) else file.fileno()
        offset, count = message.get("offset") or 0, message.get("count")
    try:
        while count is None or count > 0:
            size = _FILE_CHUNK if count is None else min(_FILE_CHUNK, count)
            data = await asyncio.to_thread(os.pread, fd, size, offset)
            if not data:
                return
            offset += len(data)
            if count is not None:
                count -= len(data)
            yield data
    finally:
        if owned:
            os.close(fd)


class _Response:
    """One ``http`` response through the middleware."""

    def __init__(self, middleware: HtmlRewriteMiddleware, scope: Scope, send: Send) -> None:
        self._mw = middleware
        self._scope = scope
        self._server_send = send
        self._rewrite: ResponseRewrite[bytes] | None = None
        self._context: Mapping[str, Any] | None = None
        self._start: Message | None = None      # the application's http.response.start
        self._started = False                   # a start message went to the server
        self._fed = False                       # body bytes went into the transform
        self._forward = False                   # pass every message on as it is
        self._refused = False                   # answered 502: the app's messages dropped
        self.error: BaseException | None = None

    async def disconnected(self) -> None:
        """The client went away: drop the stream; what follows goes to the server as it is."""
        if self._forward:
            return
        self._rewrite = None
        self._forward = True
        if self._start is not None and not self._started:
            await self._send_raw_start()

    async def send(self, message: Message) -> None:
        """The ``send`` the application sees."""
        if self.error is not None:
            raise HtmlStreamError("the response was aborted by an error of its rewrite") \
                from self.error
        if self._refused:
            return              # (what the application sends of a refused response: dropped)
        if self._forward:
            await self._send(message)
            return
        kind = message["type"]
        if kind == "http.response.start":
            try:
                self._on_start(message)
            except ResponseRefused as exc:
                await self._refuse(exc)
                return
            if self._rewrite is None or self._rewrite.decided:
                await self._send_start()
                self._pass_on()
        elif kind == "http.response.body" and self._rewrite is not None:
            try:
                await self._on_body(message, self._rewrite)
            except ResponseRefused as exc:      # (always before any output)
                self.error = None
                await self._refuse(exc)
        elif kind in _FILE_MESSAGES and self._rewrite is not None:
            # A file the server would send itself, of a response that may be a page (or is
            # being rewritten): read here, in a thread, and rewritten like body messages
            # (sent on, the page would reach the client unrewritten).
            async for data in _read_file(message):
                await self.send({"type": "http.response.body", "body": data, "more_body": True})
            if not (kind == "http.response.zerocopysend" and message.get("more_body", False)):
                await self.send({"type": "http.response.body", "body": b"", "more_body": False})
        elif kind in _FILE_MESSAGES and self._start is not None:
            if not self._started:
                await self._send_raw_start()
            self._forward = True
            await self._send(message)
        else:
            # early hints, pushes, trailers; and protocol errors, for the server to report.
            await self._send(message)

    def _on_start(self, message: Message) -> None:
        if self._start is not None:
            raise RuntimeError("http.response.start sent twice")
        self._start = message
        if message.get("trailers", False):
            self._forward = True          # trailers: passed through (see the module's notes)
            return
        factory = self._mw.context
        self._context = None if factory is None else factory(self._scope)
        try:
            self._rewrite = ResponseRewrite(
                self._mw.rewriter, self._scope["method"], int(message["status"]),
                message.get("headers", []), request_headers=self._scope.get("headers", []),
                options=self._mw.options, context=self._context, markdown=self._mw.markdown)
        except ResponseRefused:
            raise
        except BaseException as exc:
            self.error = exc
            raise
        if self._rewrite.coding is not None:
            warn_app_compresses("ASGI middleware", self._rewrite.coding)

    async def _refuse(self, exc: ResponseRefused) -> None:
        """Answer 502 instead of a response that would be rewritten and cannot be; what the
        application sends of it from here on is dropped."""
        logger.warning("%s %s: 502: %s", self._scope.get("method"), self._scope.get("path"),
                       exc.reason)
        self._rewrite = None
        self._refused = True
        self._started = True
        body = b"the response cannot be rewritten\n"
        await self._send({"type": "http.response.start", "status": 502, "headers": [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode())]})
        await self._send({"type": "http.response.body", "body": body, "more_body": False})

    async def _on_body(self, message: Message, rewrite: ResponseRewrite[bytes]) -> None:
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        if self._mw.rewriter.has_async_handlers:
            await self._on_body_async(body, more, rewrite)
            return
        try:
            out = b""
            if body:
                self._fed = True
                out = rewrite.feed(body)
            if not more:
                out += rewrite.close()
        except BaseException as exc:
            self.error = exc
            self._rewrite = None
            raise
        if not self._started and rewrite.decided:
            await self._send_start()
        if not more:
            self._rewrite = None
            self._forward = True      # the response is complete: nothing more to rewrite
        if out or not more:
            await self._send({"type": "http.response.body", "body": out, "more_body": more})
        self._pass_on()

    async def _on_body_async(self, body: bytes, more: bool,
                             rewrite: ResponseRewrite[bytes]) -> None:
        """_on_body for a rewriter with async handlers (issue 30): the output before each
        waiting handler is sent before it waits."""
        send_error: BaseException | None = None

        async def send_all(pieces: AsyncGenerator[bytes, None]) -> None:
            nonlocal send_error
            async with contextlib.aclosing(pieces):
                async for out in pieces:
                    try:
                        if not self._started and rewrite.decided:
                            await self._send_start()
                        await self._send({"type": "http.response.body", "body": out,
                                          "more_body": True})
                    except BaseException as exc:
                        send_error = exc
                        raise

        try:
            if body:
                self._fed = True
                await send_all(rewrite.afeed_iter(body))
            if not more:
                await send_all(rewrite.aclose_iter())
        except BaseException as exc:
            if exc is not send_error:
                self.error = exc
                self._rewrite = None
            raise
        if not self._started and rewrite.decided:
            await self._send_start()
        if not more:
            self._rewrite = None
            self._forward = True      # the response is complete: nothing more to rewrite
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})
        self._pass_on()

    def _pass_on(self) -> None:
        """Once a response is decided to pass through, its messages go on as they are."""
        rewrite = self._rewrite
        if rewrite is not None and rewrite.decided and not rewrite.rewriting:
            self._rewrite = None
            self._forward = True

    async def _send(self, message: Message) -> None:
        try:
            await self._server_send(message)
        except BaseException:
            # The server refused (the client is gone): what follows goes to it as it is.
            self._rewrite = None
            self._forward = True
            raise

    async def _send_start(self) -> None:
        start = self._start
        assert start is not None
        rewrite = self._rewrite
        headers: Iterable[tuple[bytes, bytes]] = start.get("headers", [])
        if rewrite is not None:
            headers = rewrite.headers
            hook = self._mw.headers_hook
            decision = rewrite.decision
            if decision is not None and decision.rewritten_headers and hook is not None:
                headers = hook(self._context, list(headers))
        self._started = True
        await self._send({**start, "headers": list(headers)})

    async def _send_raw_start(self) -> None:
        assert self._start is not None
        self._started = True
        await self._send(self._start)
