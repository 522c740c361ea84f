"""Django middleware: rewrite HTML responses, streaming ones as they stream (needs Django:
``pip install htmlstream[django]``).

Configure it with a subclass or with settings::

    # settings.py
    MIDDLEWARE = [
        ...,
        "htmlstream.integrations.django.HtmlRewriteMiddleware",
    ]
    HTMLSTREAM_REWRITER = "myproject.rewriting.rewriter"    # a Rewriter, or its dotted path
    HTMLSTREAM_OPTIONS = None                               # an HttpOptions (optional)
    HTMLSTREAM_CONTEXT = None               # a callable(request) -> mapping, or its dotted path

The middleware is sync and async capable (Django runs it in the mode of the handler, WSGI or
ASGI, with no thread switch).  :class:`htmlstream.http.ResponseRewrite` decides; then:

* ``HttpResponse``: the content is rewritten whole (it is in memory already), and its
  ``Content-Length``, when it had one, set to the new length.
* ``StreamingHttpResponse``: the headers are final when the middleware returns, so it reads the
  first chunks of the iterator until the decision is made (at most 1024 decoded bytes), and
  gives the response a new iterator that yields them rewritten and then rewrites the rest as it
  streams.  Sync iterators under WSGI and async iterators under ASGI stream; in the other two
  cases Django itself buffers the whole body (with a warning), and so does the middleware, in
  the iterator's own mode, before deciding.
* ``FileResponse`` (what ``django.views.static.serve`` gives): a page is rewritten as it
  streams, like any ``StreamingHttpResponse``; any other file keeps its ``file_to_stream``,
  which the server may send itself.
* No way around the rewrite: before the views run, ``Range`` and ``If-Range`` are removed from
  ``request.META`` unless :func:`htmlstream.http.forward_range` allows them (what cannot be a
  page), and ``HTTP_ACCEPT_ENCODING`` names only codings htmlstream decodes.  A response that
  would be rewritten and cannot be (:class:`htmlstream.http.ResponseRefused`: partial, in a
  coding not decoded...) is replaced by a 502, logged on ``htmlstream.django``.  A ``HEAD`` is
  decided (and its body rewritten) as the ``GET``, so its headers are the ``GET``'s.  A
  compression middleware (``GZipMiddleware``) belongs above this one in ``MIDDLEWARE`` (it
  then compresses the rewritten page); below, it is warned about once per process.

Errors from the application propagate; an error of the transform is raised (a 500 before the
headers; from the streaming iterator after them, which the server turns into an aborted
connection, never a clean end).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Final, TypeAlias

from asgiref.sync import async_to_sync, iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.utils.module_loading import import_string

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
logger: Final = logging.getLogger("htmlstream.django")

#: Called with the document's context (None without one) and the headers to send, when a
#: response is rewritten; returns the headers to send (pairs of ``str``).
HeadersHook: TypeAlias = Callable[[Mapping[str, Any] | None, list[tuple[str, str]]],
                                  list[tuple[str, str]]]
_GetResponse: TypeAlias = Callable[[HttpRequest], Any]


def _setting(name: str) -> Any:
    value = getattr(settings, name, None)
    return import_string(value) if isinstance(value, str) else value


class HtmlRewriteMiddleware:
    """Rewrites the HTML responses of a Django project.

    The rewriter, options, context and headers hook are the class attributes below when a
    subclass sets them, else the settings ``HTMLSTREAM_REWRITER``, ``HTMLSTREAM_OPTIONS``,
    ``HTMLSTREAM_CONTEXT`` (objects or dotted paths).

    Attributes:
        rewriter: the rules.
        options: what is rewritten and how (:class:`htmlstream.http.HttpOptions`).
        context: called with the request for every response rewritten or not; its mapping is
            the document's context (``rewriter.stream(context=...)``) and is given to
            ``headers_hook``.
        headers_hook: called with the context and the headers to send when a response is
            rewritten; returns the headers (default: :func:`htmlstream.http.csp_nonce_hook`).
    """

    sync_capable = True
    async_capable = True
    rewriter: Rewriter | None = None
    options: HttpOptions | None = None
    context: Callable[[HttpRequest], Mapping[str, Any]] | None = None
    headers_hook: HeadersHook | None = staticmethod(csp_nonce_hook)

    def __init__(self, get_response: _GetResponse) -> None:
        if not callable(get_response):
            raise TypeError(f"HtmlRewriteMiddleware(): get_response must be a callable (the "
                            f"next middleware or view, as Django gives it), not "
                            f"{type(get_response).__name__}")
        self.get_response = get_response
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)
        cls = type(self)
        rewriter = cls.rewriter if cls.rewriter is not None else _setting("HTMLSTREAM_REWRITER")
        if not isinstance(rewriter, Rewriter):
            raise ImproperlyConfigured(
                "HtmlRewriteMiddleware needs a Rewriter: set HTMLSTREAM_REWRITER (a Rewriter or "
                f"its dotted path) or the rewriter class attribute, not {rewriter!r}")
        if rewriter.has_async_handlers:
            raise ImproperlyConfigured(
                "the HTMLSTREAM_REWRITER rewriter has async handlers, which this middleware "
                "(synchronous: WSGI and ASGI alike) cannot wait for: use sync handlers, or "
                "htmlstream.integrations.asgi around the ASGI application")
        self._rewriter = rewriter
        self._options: HttpOptions | None = (
            cls.options if cls.options is not None else _setting("HTMLSTREAM_OPTIONS"))
        self._context: Callable[[HttpRequest], Mapping[str, Any]] | None = (
            cls.context if cls.context is not None else _setting("HTMLSTREAM_CONTEXT"))

    def __call__(self, request: HttpRequest) -> Any:
        """The middleware, in the handler's mode (a coroutine under ASGI)."""
        _forward_request(request, self._options)
        if self._async:
            return self._acall(request)
        return self._process(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        response = await self.get_response(request)
        try:
            plan = self._plan(request, response)
            if plan is None:
                return response
            rewrite, context = plan
            if not isinstance(response, StreamingHttpResponse):
                return self._whole(response, rewrite, context)
            if response.is_async:
                held, done, rest = await _pull_async(rewrite, response.streaming_content)
                self._set_headers(response, rewrite, context)
                response.streaming_content = _stream_async(rewrite, held, done, rest)
            else:
                # Django would buffer a sync iterator under ASGI; do so in its thread, then
                # decide.
                chunks = await sync_to_async(_list)(response.streaming_content)
                held, done, it = _pull(rewrite, iter(chunks))
                self._set_headers(response, rewrite, context)
                response.streaming_content = _stream_async(rewrite, held, done, _aiter(it))
        except ResponseRefused as exc:
            return _refused(request, response, exc)
        return response

    def _process(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        try:
            plan = self._plan(request, response)
            if plan is None:
                return response
            rewrite, context = plan
            if not isinstance(response, StreamingHttpResponse):
                return self._whole(response, rewrite, context)
            if response.is_async:
                # Django would buffer an async iterator under WSGI; do so in one event loop.
                chunks = async_to_sync(_alist)(response.streaming_content)
                it: Iterator[bytes] = iter(chunks)
            else:
                it = iter(response.streaming_content)
            held, done, rest = _pull(rewrite, it)
            self._set_headers(response, rewrite, context)
            # (A FileResponse's file goes through the rewrite too: the assignment drops its
            # file_to_stream, which the WSGI handler would otherwise send as it is.)
            response.streaming_content = _stream(rewrite, held, done, rest)
        except ResponseRefused as exc:
            return _refused(request, response, exc)
        return response

    # ------------------------------------------------------------------ the decision

    def _plan(self, request: HttpRequest, response: HttpResponseBase
              ) -> tuple[ResponseRewrite[str], Mapping[str, Any] | None] | None:
        """The transform for a response that may be rewritten, or None to pass it through."""
        context = None if self._context is None else self._context(request)
        # A HEAD is decided as the GET (Django's views give it the GET's body; the server
        # drops it), so that it answers exactly the GET's headers, Content-Length included.
        method = request.method or "GET"
        rewrite = ResponseRewrite(
            self._rewriter, "GET" if method.upper() == "HEAD" else method,
            response.status_code, list(response.headers.items()),
            request_headers=list(request.headers.items()), options=self._options,
            context=context)
        if rewrite.coding is not None:
            warn_app_compresses("Django middleware", rewrite.coding)
        if rewrite.decided:       # by the headers alone: passed through
            return None
        return rewrite, context

    def _whole(self, response: HttpResponseBase, rewrite: ResponseRewrite[str],
               context: Mapping[str, Any] | None) -> HttpResponseBase:
        body = rewrite.feed(response.content)
        body += rewrite.close()
        if rewrite.rewriting:
            had_length = response.has_header("Content-Length")
            self._set_headers(response, rewrite, context)
            response.content = body
            if had_length:
                response.headers["Content-Length"] = str(len(body))
        return response

    def _set_headers(self, response: HttpResponseBase, rewrite: ResponseRewrite[str],
                     context: Mapping[str, Any] | None) -> None:
        decision = rewrite.decision
        if decision is None or not decision.rewritten_headers:
            return
        headers = rewrite.headers
        hook = type(self).headers_hook
        if hook is not None:
            headers = hook(context, list(headers))
        for name in list(response.headers):
            del response.headers[name]
        for name, value in headers:
            response.headers[name] = value


def _forward_request(request: HttpRequest, options: HttpOptions | None) -> None:
    """What the views see of the request: ``Range`` and ``If-Range`` only for what cannot be a
    page, ``Accept-Encoding`` naming only codings htmlstream decodes (htmlstream.http)."""
    meta = request.META
    if not forward_range(request.method or "GET", request.path,
                         list(request.headers.items()), options):
        meta.pop("HTTP_RANGE", None)
        meta.pop("HTTP_IF_RANGE", None)
    meta["HTTP_ACCEPT_ENCODING"] = accept_encoding(meta.get("HTTP_ACCEPT_ENCODING"))
    request.__dict__.pop("headers", None)   # (a cached view of META: made again from it)


def _refused(request: HttpRequest, response: HttpResponseBase, exc: ResponseRefused
             ) -> HttpResponseBase:
    """A 502 instead of a response that would be rewritten and cannot be."""
    logger.warning("%s %s: 502: %s", request.method, request.path, exc.reason)
    response.close()
    return HttpResponse("the response cannot be rewritten\n", status=502,
                        content_type="text/plain; charset=utf-8")


# ---------------------------------------------------------------------- the streaming bodies


def _pull(rewrite: ResponseRewrite[str], it: Iterator[bytes]
          ) -> tuple[list[bytes], bool, Iterator[bytes]]:
    """Feed chunks until the decision: (the output so far, whether the body ended, the rest)."""
    held: list[bytes] = []
    while not rewrite.decided:
        chunk = next(it, None)
        if chunk is None:
            held.append(rewrite.close())
            return held, True, it
        held.append(rewrite.feed(chunk))
    return held, False, it


async def _pull_async(rewrite: ResponseRewrite[str], it: AsyncIterator[bytes]
                      ) -> tuple[list[bytes], bool, AsyncIterator[bytes]]:
    held: list[bytes] = []
    while not rewrite.decided:
        try:
            chunk = await anext(it)
        except StopAsyncIteration:
            held.append(rewrite.close())
            return held, True, it
        held.append(rewrite.feed(chunk))
    return held, False, it


def _stream(rewrite: ResponseRewrite[str], held: list[bytes], done: bool,
            rest: Iterator[bytes]) -> Iterator[bytes]:
    out = b"".join(held)
    if out:
        yield out
    if done:
        return
    for chunk in rest:
        out = rewrite.feed(chunk)
        if out:
            yield out
    out = rewrite.close()
    if out:
        yield out


async def _stream_async(rewrite: ResponseRewrite[str], held: list[bytes], done: bool,
                        rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    out = b"".join(held)
    if out:
        yield out
    if done:
        return
    async for chunk in rest:
        out = rewrite.feed(chunk)
        if out:
            yield out
    out = rewrite.close()
    if out:
        yield out


def _list(it: Iterator[bytes]) -> list[bytes]:
    return list(it)


async def _aiter(it: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in it:
        yield chunk


async def _alist(it: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in it]
