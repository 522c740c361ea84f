"""WSGI middleware (PEP 3333): rewrite the HTML responses of any WSGI application, streaming.

::

    from htmlstream.integrations.wsgi import HtmlRewriteMiddleware
    application = HtmlRewriteMiddleware(application, rewriter)

The application's ``start_response`` call is recorded and passed to the server only once
:class:`htmlstream.http.ResponseRewrite` has decided (from the headers alone, or from the first
1024 decoded body bytes), with the headers it gives; the body is then handed over as it is
rewritten, one piece per piece of the application's.

PEP 3333 points:

* The application iterable's ``close()`` is always called, once: when the server closes the
  middleware's iterable (after the last piece, on an error, or when the client went away), and
  when a response is passed through, by the server itself (the iterable is returned as it is).
* ``write()`` (the legacy imperative API) is honoured: what is written is rewritten and written
  to the server's ``write()`` at once, in order with the iterable's pieces.
* Iteration is not blocked once the headers are passed on: when a piece of the application
  gives no output yet, an empty bytestring is yielded.  Before that (while the decision is held
  back, at most 1024 decoded bytes), the middleware reads on: the server's ``start_response``
  cannot be called yet, and an empty piece before it is an error for some servers.
* ``start_response(..., exc_info)``: re-raises when body bytes were passed on already; else the
  new status and headers replace the old ones (the body held back so far is dropped).
* ``wsgi.file_wrapper`` responses (an instance of the server's file wrapper class) that are
  not pages are returned as they are, for the server to send (sendfile); an HTML file is
  iterated and rewritten like any body (passed to the server, it would reach the client
  unrewritten).
* No way around the rewrite: the application sees an environ without ``HTTP_RANGE`` and
  ``HTTP_IF_RANGE`` unless :func:`htmlstream.http.forward_range` allows them (what cannot be a
  page), and with an ``HTTP_ACCEPT_ENCODING`` naming only codings htmlstream decodes.  A
  response that would be rewritten and cannot be (:class:`htmlstream.http.ResponseRefused`:
  partial, in a coding not decoded...) is answered ``502 Bad Gateway`` instead, logged on
  ``htmlstream.wsgi``; its body is dropped (and the application's iterable closed).  An
  application that compresses its pages itself is warned about once per process.
* Errors: application exceptions propagate; an error of the transform (a handler's exception,
  a corrupt compressed body) is raised to the server, which answers 500 before the headers and
  aborts the connection after them (an incomplete body is never ended cleanly).

This module imports nothing outside the standard library and htmlstream.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, Final, TypeAlias
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from htmlstream import Rewriter
from htmlstream.http import (
    HttpOptions,
    ResponseRefused,
    ResponseRewrite,
    accept_encoding,
    csp_nonce_hook,
    forward_range,
    warn_app_compresses,
)

__all__ = ["HeadersHook", "HtmlRewriteMiddleware", "logger"]

#: Responses refused (a byte range of a page, a coding that cannot be decoded...): WARNING.
logger: Final = logging.getLogger("htmlstream.wsgi")
_REFUSED_BODY: Final = b"the response cannot be rewritten\n"

#: Called with the document's context (None without one) and the headers to send, when a
#: response is rewritten; returns the headers to send (WSGI headers: pairs of ``str``).
HeadersHook: TypeAlias = Callable[[Mapping[str, Any] | None, list[tuple[str, str]]],
                                  list[tuple[str, str]]]
_ExcInfo: TypeAlias = (tuple[type[BaseException], BaseException, TracebackType]
                       | tuple[None, None, None])
_Write: TypeAlias = Callable[[bytes], object]


class HtmlRewriteMiddleware:
    """Rewrites the HTML responses of a WSGI application with ``rewriter``, streaming.

    Args:
        app: the WSGI application.
        rewriter: the rules (shared by every request: a stream is made per response).
        options: what is rewritten and how (:class:`htmlstream.http.HttpOptions`).
        context: called with the environ for every response; its mapping is the document's
            context (``rewriter.stream(context=...)``) and is given to ``headers_hook``.
        headers_hook: called with the context and the headers to send when a response is
            rewritten; returns the headers.  The default, :func:`htmlstream.http.csp_nonce_hook`,
            allows the context's ``csp_nonce`` in the ``Content-Security-Policy``.
    """

    def __init__(
        self,
        app: WSGIApplication,
        rewriter: Rewriter,
        *,
        options: HttpOptions | None = None,
        context: Callable[[WSGIEnvironment], Mapping[str, Any]] | None = None,
        headers_hook: HeadersHook | None = csp_nonce_hook,
    ) -> None:
        if not callable(app):
            raise TypeError(f"HtmlRewriteMiddleware(): app must be a WSGI app (a callable), not "
                            f"{type(app).__name__}")
        if not isinstance(rewriter, Rewriter):
            raise TypeError(f"HtmlRewriteMiddleware(): rewriter must be a Rewriter, not "
                            f"{type(rewriter).__name__}")
        self.app = app
        if rewriter.has_async_handlers:
            # (WSGI is synchronous: nothing could wait for them)
            raise TypeError(
                "the rewriter has async handlers, which a WSGI application cannot wait for: "
                "use the ASGI middleware (htmlstream.integrations.asgi) or sync handlers")
        self.rewriter = rewriter
        self.options = options
        self.context = context
        self.headers_hook = headers_hook

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse
                 ) -> Iterable[bytes]:
        """The WSGI application."""
        environ = _forwarded_environ(environ, self.options)
        response = _Response(self, environ, start_response)
        result = self.app(environ, response.start_response)
        return response.body(result)


def _forwarded_environ(environ: WSGIEnvironment, options: HttpOptions | None
                       ) -> WSGIEnvironment:
    """The environ the application sees: ``Range`` and ``If-Range`` only for what cannot be a
    page, ``Accept-Encoding`` naming only codings htmlstream decodes (htmlstream.http)."""
    out = dict(environ)
    path = f"{environ.get('SCRIPT_NAME', '')}{environ.get('PATH_INFO', '')}"
    if not forward_range(environ.get("REQUEST_METHOD", "GET"), path,
                         _request_headers(environ), options):
        out.pop("HTTP_RANGE", None)
        out.pop("HTTP_IF_RANGE", None)
    out["HTTP_ACCEPT_ENCODING"] = accept_encoding(environ.get("HTTP_ACCEPT_ENCODING"))
    return out


def _request_headers(environ: WSGIEnvironment) -> list[tuple[str, str]]:
    return [(key[5:].replace("_", "-").lower(), value) for key, value in environ.items()
            if key.startswith("HTTP_") and isinstance(value, str)]


class _Response:
    """One response through the middleware."""

    def __init__(self, middleware: HtmlRewriteMiddleware, environ: WSGIEnvironment,
                 start_response: StartResponse) -> None:
        self._mw = middleware
        self._environ = environ
        self._server_start = start_response
        self._server_write: _Write | None = None
        self._rewrite: ResponseRewrite[str] | None = None
        self._context: Mapping[str, Any] | None = None
        self._status = ""
        self._headers: list[tuple[str, str]] = []
        self._replace: _ExcInfo | None = None       # exc_info for the server's start_response
        self._begun = False          # the server's start_response ran for the current headers
        self._sent = False           # body bytes were passed on: the headers are out
        self._direct = False         # passed through: the server has the application's iterable
        self._refused = False        # answered 502: the application's body is dropped

    # ------------------------------------------------------------------ start_response, write

    def start_response(self, status: str, headers: list[tuple[str, str]],
                       exc_info: _ExcInfo | None = None) -> _Write:
        """The ``start_response`` the application sees."""
        if exc_info is not None:
            try:
                if self._direct:
                    self._server_write = self._server_start(status, headers, exc_info)
                    return self._server_write
                if self._sent:
                    raise exc_info[1].with_traceback(exc_info[2])  # type: ignore[union-attr]
                # Replaced before any body byte went out; the server's start_response, if it
                # ran, must be told so too.
                self._replace = exc_info if self._begun else None
                self._begun = False
            finally:
                exc_info = None     # no reference cycle through the traceback
        elif self._rewrite is not None:
            raise RuntimeError("start_response() called again without exc_info")
        self._status, self._headers = status, headers
        factory = self._mw.context
        self._context = None if factory is None else factory(self._environ)
        try:
            self._rewrite = ResponseRewrite(
                self._mw.rewriter, self._environ.get("REQUEST_METHOD", "GET"), int(status[:3]),
                headers, request_headers=_request_headers(self._environ),
                options=self._mw.options, context=self._context)
        except ResponseRefused as exc:
            self._refuse(exc)
            return self.write
        if self._rewrite.coding is not None:
            warn_app_compresses("WSGI middleware", self._rewrite.coding)
        if self._rewrite.decided:
            self._begin(self._rewrite)
        return self.write

    def _refuse(self, exc: ResponseRefused) -> None:
        """Answer 502 instead of a response that would be rewritten and cannot be (before any
        of it went out); the application's body is dropped."""
        logger.warning("%s %s: 502: %s", self._environ.get("REQUEST_METHOD"),
                       self._environ.get("PATH_INFO"), exc.reason)
        self._refused = True
        replace, self._replace = self._replace, None
        headers = [("Content-Type", "text/plain; charset=utf-8"),
                   ("Content-Length", str(len(_REFUSED_BODY)))]
        if replace is not None:
            self._server_write = self._server_start("502 Bad Gateway", headers, replace)
        else:
            self._server_write = self._server_start("502 Bad Gateway", headers)
        self._begun = True

    def _begin(self, rewrite: ResponseRewrite[str]) -> None:
        """Call the server's ``start_response`` with the headers decided."""
        headers = rewrite.headers
        hook = self._mw.headers_hook
        decision = rewrite.decision
        if decision is not None and decision.rewritten_headers and hook is not None:
            headers = hook(self._context, list(headers))
        replace, self._replace = self._replace, None
        if replace is not None:
            self._server_write = self._server_start(self._status, headers, replace)
        else:
            self._server_write = self._server_start(self._status, headers)
        self._begun = True

    def write(self, data: bytes) -> None:
        """The ``write()`` the application sees: rewritten and written at once."""
        if self._refused:
            return
        out = self._feed(data)
        if out:
            assert self._server_write is not None
            self._sent = True
            self._server_write(out)

    def _feed(self, data: bytes) -> bytes:
        rewrite = self._rewrite
        if rewrite is None:
            raise RuntimeError("the application wrote a body before calling start_response()")
        if self._direct:
            return bytes(data)
        try:
            out = rewrite.feed(data)
        except ResponseRefused as exc:     # (always before any output)
            self._refuse(exc)
            return b""
        if not self._begun and rewrite.decided:
            self._begin(rewrite)
        return out

    def _finish(self) -> bytes:
        rewrite = self._rewrite
        if rewrite is None:
            raise RuntimeError("the application returned without calling start_response()")
        try:
            out = rewrite.close()
        except ResponseRefused as exc:
            self._refuse(exc)
            return b""
        if not self._begun:
            self._begin(rewrite)
        return out

    # ------------------------------------------------------------------ the iterable

    def body(self, result: Iterable[bytes]) -> Iterable[bytes]:
        """What the middleware returns to the server for the application's ``result``."""
        if self._refused:
            return _Body((piece for piece in [_REFUSED_BODY]), result)
        rewrite = self._rewrite
        decision = None if rewrite is None else rewrite.decision
        if decision is not None and decision.rewritten_headers and not decision.rewrite:
            # A HEAD of a page: no body (the server would count the one the application gave
            # for HEAD, the original's length, into a Content-Length the GET does not have).
            nothing: tuple[bytes, ...] = ()
            return _Body((piece for piece in nothing), result)
        if rewrite is not None and rewrite.decided and not rewrite.rewriting and self._begun:
            # Passed through: the server iterates and closes the application's iterable.
            self._direct = True
            return result
        # (A wsgi.file_wrapper that is a page is iterated through the rewrite like any body:
        # passed to the server, its file would reach the client unrewritten.  Anything else
        # was decided by the headers and returned as it is above, sendfile and all.)
        return _Body(self._iterate(result), result)

    def _iterate(self, result: Iterable[bytes]) -> Generator[bytes, None, None]:
        for chunk in result:
            out = self._feed(chunk) if chunk else b""
            if self._refused:
                yield _REFUSED_BODY
                return
            if out:
                self._sent = True
                yield out
            elif self._begun:
                yield b""               # do not block iteration (PEP 3333)
        out = self._finish()
        if self._refused:
            yield _REFUSED_BODY
            return
        if out:
            self._sent = True
            yield out


class _Body:
    """The middleware's iterable: the rewritten pieces, and ``close()`` that always closes the
    application's iterable (once), whether or not iteration started or finished."""

    def __init__(self, pieces: Generator[bytes, None, None], result: Iterable[bytes]) -> None:
        self._pieces = pieces
        self._result = result
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        return self._pieces

    def close(self) -> None:
        """Close the application's iterable (PEP 3333), once."""
        if self._closed:
            return
        self._closed = True
        try:
            self._pieces.close()
        finally:
            close = getattr(self._result, "close", None)
            if close is not None:
                close()
