"""httpx: rewrite the HTML of streamed responses (``pip install htmlstream[httpx]``).

Two ways, both built on :class:`htmlstream.http.ResponseRewrite` (which decides whether the body
is rewritten and how; nothing here decides on its own):

* :func:`iter_rewritten` / :func:`aiter_rewritten`: the rewritten body of one streamed
  response, chunk by chunk, as it arrives::

      with client.stream("GET", url) as response:
          for chunk in iter_rewritten(response, rewriter):
              ...

  By default the body is read with ``response.iter_bytes()``, decoded from its content coding by
  httpx (what a scraper wants: HTML out); the headers :attr:`RewrittenBody.headers` describe
  that decoded body (``Content-Encoding`` and ``Content-Length`` dropped).  ``decoded=False``
  reads ``response.iter_raw()`` instead: the body keeps its content coding (gzip, br, zstd are
  decoded, rewritten and re-encoded by ``ResponseRewrite``) and :attr:`RewrittenBody.headers`
  are the headers to send on (what a proxy wants).

* :class:`RewritingTransport` / :class:`AsyncRewritingTransport`: a transport wrapper, so that
  every response of a client comes out rewritten (``httpx.Client(transport=...)``); the
  response's headers are the decided ones and httpx decodes the re-encoded body as usual.

No way around the rewrite: a response that would be rewritten and cannot be (a byte range
of a page, a content coding that is not decoded, a corrupt compressed body before the
decision...) raises :class:`htmlstream.http.ResponseRefused` (from ``iter_rewritten`` and
``aiter_rewritten`` at once, from the transports' ``handle_request``), never gives its bytes as
if rewritten.  The transports send each request as
:func:`htmlstream.http.forwarded_request_headers` says (``Range``/``If-Range`` only for what
cannot be a page, ``Accept-Encoding`` naming only codings htmlstream decodes); ``iter_rewritten``
reads a response already requested: send such requests with those headers yourself.  A ``HEAD``
through a transport answers the headers of the ``GET``.

The connection is always released: at the end of the body, on an error (a read timeout, a
corrupt compressed body, a handler's exception) and on :meth:`RewrittenBody.close`, which
``for`` loops reach through ``with`` (the iterators are context managers) or the response's own
``with client.stream(...)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from types import TracebackType
from typing import Any, Final, Self

import httpx

from htmlstream import Rewriter
from htmlstream.http import Decision, HttpOptions, ResponseRewrite, forwarded_request_headers

__all__ = [
    "AsyncRewritingTransport",
    "AsyncRewrittenBody",
    "RewritingTransport",
    "RewrittenBody",
    "aiter_rewritten",
    "iter_rewritten",
]

def _httpx_decoders() -> frozenset[str]:
    """The codings httpx decodes in ``iter_bytes()``: gzip, deflate, and br/zstd when their
    libraries are installed."""
    try:
        from httpx._decoders import SUPPORTED_DECODERS
    except ImportError:     # (a private name: fall back to the two httpx always decodes)
        return frozenset({"gzip", "deflate"})
    return frozenset(SUPPORTED_DECODERS) - {"identity"}


_DECODED_BY_HTTPX: Final = _httpx_decoders()


def _decoded_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The headers of the body ``iter_bytes()`` gives: the codings httpx decoded removed from
    ``Content-Encoding`` (one it cannot decode stays, and the body passes through), and
    ``Content-Length`` dropped when a coding was removed."""
    codings = [c.strip().lower() for name, value in headers
               if name.lower() == b"content-encoding" for c in value.decode("latin-1").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return headers
    # httpx decodes every coding it knows and skips the others (in any order).
    left = [c for c in codings if c not in _DECODED_BY_HTTPX]
    out = [(k, v) for k, v in headers
           if k.lower() not in (b"content-encoding", b"content-length")]
    if left:
        out.append((b"content-encoding", ", ".join(left).encode("latin-1")))
    return out


def _transform(
    response: httpx.Response,
    rewriter: Rewriter,
    decoded: bool,
    options: HttpOptions | None,
    context: Mapping[str, Any] | None,
) -> ResponseRewrite[bytes]:
    request = response.request
    headers = response.headers.raw
    return ResponseRewrite(
        rewriter,
        request.method,
        response.status_code,
        _decoded_headers(headers) if decoded else headers,
        request_headers=request.headers.raw,
        options=options,
        context=context,
    )


async def _pieces(transform: ResponseRewrite[bytes], is_async: bool,
                  chunk: bytes | None) -> AsyncGenerator[bytes, None]:
    """``transform.feed(chunk)`` (None: ``close()``) in non-empty pieces; with async handlers
    (issue 30) through ``afeed_iter``, the output before each wait first."""
    if not is_async:
        out = transform.close() if chunk is None else transform.feed(chunk)
        if out:
            yield out
        return
    gen = transform.aclose_iter() if chunk is None else transform.afeed_iter(chunk)
    async with contextlib.aclosing(gen):
        async for out in gen:
            yield out


class _BodyBase:
    """What the sync and async bodies share: the transform and its decision."""

    transform: ResponseRewrite[bytes]

    @property
    def decided(self) -> bool:
        """Whether the decision is made (always, once a chunk was returned or the body ended)."""
        return self.transform.decided

    @property
    def decision(self) -> Decision[bytes] | None:
        """The decision (whether rewritten, why not, encoding...), or None while undecided."""
        return self.transform.decision

    @property
    def rewriting(self) -> bool:
        """Whether the body is rewritten (False while undecided)."""
        return self.transform.rewriting

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        """The headers that describe the body returned: with ``decoded=True`` those of the
        decoded body, else the headers to send on (``Content-Length`` dropped, ``ETag``
        weakened... when rewritten).  Available once the first chunk was returned or the body
        ended (RuntimeError before)."""
        return self.transform.headers


class RewrittenBody(_BodyBase, Iterator[bytes]):
    """The rewritten body of a streamed :class:`httpx.Response`, an iterator of non-empty
    ``bytes`` (see :func:`iter_rewritten`).  Closing it (or leaving its ``with`` block, or
    reaching the end, or an error) closes the response."""

    def __init__(
        self,
        response: httpx.Response,
        rewriter: Rewriter,
        *,
        decoded: bool = True,
        chunk_size: int | None = None,
        options: HttpOptions | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> None:
        self.response = response
        try:
            self.transform = _transform(response, rewriter, decoded, options, context)
            self._source: Iterator[bytes] = (response.iter_bytes(chunk_size) if decoded
                                             else response.iter_raw(chunk_size))
        except BaseException:
            response.close()
            raise
        self._done = False

    def __iter__(self) -> RewrittenBody:
        return self

    def __next__(self) -> bytes:
        try:
            while not self._done:
                chunk = next(self._source, None)
                if chunk is None:
                    self._done = True
                    out = self.transform.close()
                    self.close()
                else:
                    out = self.transform.feed(chunk)
                if out:
                    return out
        except BaseException:
            self.close()
            raise
        raise StopIteration

    def close(self) -> None:
        """Stop reading and close the response (its connection is released or closed)."""
        self._done = True
        self.response.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class AsyncRewrittenBody(_BodyBase, AsyncIterator[bytes]):
    """The rewritten body of a streamed :class:`httpx.Response` from an
    :class:`httpx.AsyncClient`, an async iterator of non-empty ``bytes`` (see
    :func:`aiter_rewritten`).  ``aclose()`` (or leaving its ``async with`` block, the end, an
    error) closes the response."""

    def __init__(
        self,
        response: httpx.Response,
        rewriter: Rewriter,
        *,
        decoded: bool = True,
        chunk_size: int | None = None,
        options: HttpOptions | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> None:
        self.response = response
        self.transform = _transform(response, rewriter, decoded, options, context)
        self._source: AsyncIterator[bytes] = (response.aiter_bytes(chunk_size) if decoded
                                              else response.aiter_raw(chunk_size))
        self._done = False
        self._async = rewriter.has_async_handlers
        self._pending: AsyncGenerator[bytes, None] | None = None     # (async handlers)

    def __aiter__(self) -> AsyncRewrittenBody:
        return self

    async def __anext__(self) -> bytes:
        if self._async:
            return await self._anext_async()
        try:
            while not self._done:
                try:
                    chunk: bytes | None = await self._source.__anext__()
                except StopAsyncIteration:
                    chunk = None
                if chunk is None:
                    self._done = True
                    out = self.transform.close()
                    await self.aclose()
                else:
                    out = self.transform.feed(chunk)
                if out:
                    return out
        except BaseException:
            await self.aclose()
            raise
        raise StopAsyncIteration

    async def _anext_async(self) -> bytes:
        """__anext__ with async handlers: the pieces of each chunk's output, as they come."""
        try:
            while True:
                if self._pending is not None:
                    try:
                        return await self._pending.__anext__()
                    except StopAsyncIteration:
                        self._pending = None
                        if self._done:
                            await self.aclose()
                if self._done:
                    break
                try:
                    chunk: bytes | None = await self._source.__anext__()
                except StopAsyncIteration:
                    chunk = None
                    self._done = True
                self._pending = _pieces(self.transform, True, chunk)
        except BaseException:
            await self.aclose()
            raise
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Stop reading and close the response (its connection is released or closed)."""
        self._done = True
        pending, self._pending = getattr(self, "_pending", None), None
        if pending is not None:
            await pending.aclose()
        await self.response.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


def _check_arguments(where: str, response: object, rewriter: object,
                     transport: object = None, transport_type: type | None = None) -> None:
    if response is not None and not isinstance(response, httpx.Response):
        raise TypeError(f"{where}: response must be an httpx.Response (streamed), not "
                        f"{type(response).__name__}")
    if not isinstance(rewriter, Rewriter):
        raise TypeError(f"{where}: rewriter must be a Rewriter, not {type(rewriter).__name__}")
    if transport_type is not None and transport is not None and not isinstance(
            transport, transport_type):
        raise TypeError(f"{where}: transport must be an httpx.{transport_type.__name__} or "
                        f"None, not {type(transport).__name__}")


def iter_rewritten(
    response: httpx.Response,
    rewriter: Rewriter,
    *,
    decoded: bool = True,
    chunk_size: int | None = None,
    options: HttpOptions | None = None,
    context: Mapping[str, Any] | None = None,
) -> RewrittenBody:
    """The rewritten body of a streamed response (``client.stream(...)``), chunk by chunk.

    Each chunk read is fed to :class:`~htmlstream.http.ResponseRewrite` and its output returned
    at once (the first 1024 decoded bytes are held back until the decision; a response that is
    not HTML comes out untouched).  ``decoded=True`` reads ``iter_bytes()`` (the body decoded by
    httpx), ``decoded=False`` ``iter_raw()`` (the body in its content coding, re-encoded after
    rewriting).  ``context`` is passed to ``rewriter.stream(context=...)`` when given.

    Errors (httpx's, :class:`~htmlstream.http.ContentDecodingError`, a handler's) propagate
    after the response is closed; the body returned so far is then incomplete.
    """
    _check_arguments("iter_rewritten()", response, rewriter)
    return RewrittenBody(response, rewriter, decoded=decoded, chunk_size=chunk_size,
                         options=options, context=context)


def aiter_rewritten(
    response: httpx.Response,
    rewriter: Rewriter,
    *,
    decoded: bool = True,
    chunk_size: int | None = None,
    options: HttpOptions | None = None,
    context: Mapping[str, Any] | None = None,
) -> AsyncRewrittenBody:
    """:func:`iter_rewritten` for an :class:`httpx.AsyncClient`'s streamed response: an async
    iterator (``async for``; ``async with`` or ``aclose()`` to stop early)."""
    _check_arguments("aiter_rewritten()", response, rewriter)
    return AsyncRewrittenBody(response, rewriter, decoded=decoded, chunk_size=chunk_size,
                              options=options, context=context)


# ------------------------------------------------------------------------------------------
# Transports
# ------------------------------------------------------------------------------------------


class _RewrittenStream(httpx.SyncByteStream):
    def __init__(self, first: bytes, source: Iterator[bytes], transform: ResponseRewrite[bytes],
                 inner: httpx.SyncByteStream, ended: bool) -> None:
        self._ended = ended     # (the body ended while deciding: the transform is closed)
        self._first = first
        self._source = source
        self._transform = transform
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        try:
            if self._first:
                yield self._first
            for chunk in self._source:
                out = self._transform.feed(chunk)
                if out:
                    yield out
            if not self._ended:
                out = self._transform.close()
                if out:
                    yield out
        finally:
            self._inner.close()

    def close(self) -> None:
        self._inner.close()


class _AsyncRewrittenStream(httpx.AsyncByteStream):
    def __init__(self, first: bytes, source: AsyncIterator[bytes],
                 transform: ResponseRewrite[bytes], inner: httpx.AsyncByteStream,
                 ended: bool, is_async: bool = False) -> None:
        self._ended = ended
        self._async = is_async
        self._first = first
        self._source = source
        self._transform = transform
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            if self._first:
                yield self._first
            async for chunk in self._source:
                async for out in _pieces(self._transform, self._async, chunk):
                    yield out
            if not self._ended:
                async for out in _pieces(self._transform, self._async, None):
                    yield out
        finally:
            await self._inner.aclose()

    async def aclose(self) -> None:
        await self._inner.aclose()


def _request_transform(rewriter: Rewriter, request: httpx.Request, response: httpx.Response,
                       options: HttpOptions | None) -> ResponseRewrite[bytes]:
    return ResponseRewrite(rewriter, request.method, response.status_code, response.headers.raw,
                           request_headers=request.headers.raw, options=options)


def _forwarded(request: httpx.Request, options: HttpOptions | None) -> httpx.Request:
    """The request as sent: ``Range`` and ``If-Range`` only for what cannot be a page, and an
    ``Accept-Encoding`` naming only codings htmlstream decodes (htmlstream.http)."""
    headers = forwarded_request_headers(request.method, request.url.raw_path,
                                        request.headers.raw, options)
    if headers == list(request.headers.raw):
        return request
    return httpx.Request(request.method, request.url, headers=headers, stream=request.stream,
                         extensions=request.extensions)


def _head_response(response: httpx.Response, transform: ResponseRewrite[bytes]
                   ) -> httpx.Response:
    """A ``HEAD``'s response with the headers of the ``GET`` (when it would be rewritten)."""
    decision = transform.decision
    if decision is None or not decision.rewritten_headers:
        return response
    return httpx.Response(response.status_code, headers=transform.headers,
                          stream=response.stream, extensions=response.extensions)


class RewritingTransport(httpx.BaseTransport):
    """A transport that rewrites the HTML responses of the transport it wraps (by default a
    new :class:`httpx.HTTPTransport`)::

        client = httpx.Client(transport=RewritingTransport(rewriter))
        html = client.get(url).text     # rewritten

    The raw body (in its content coding) goes through :class:`~htmlstream.http.ResponseRewrite`
    and the response carries the decided headers, so httpx decodes the re-encoded body as usual
    and a streamed response (``client.stream``) streams.  The first 1024 decoded bytes of an
    undecided response are read before ``handle_request`` returns (within the client's read
    timeout, as for any read).
    """

    def __init__(self, rewriter: Rewriter, transport: httpx.BaseTransport | None = None, *,
                 options: HttpOptions | None = None) -> None:
        _check_arguments("RewritingTransport()", None, rewriter, transport,
                         httpx.BaseTransport)
        self.rewriter = rewriter
        self.transport = transport if transport is not None else httpx.HTTPTransport()
        self.options = options

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request on the wrapped transport; the response, rewritten when HTML.

        Raises:
            htmlstream.http.ResponseRefused: the response would be rewritten and cannot be (a
                byte range of a page, a coding that is not decoded...); it is closed unread.
        """
        request = _forwarded(request, self.options)
        response = self.transport.handle_request(request)
        inner = response.stream
        assert isinstance(inner, httpx.SyncByteStream)
        try:
            transform = _request_transform(self.rewriter, request, response, self.options)
            if transform.decided:       # (the headers decide alone: it passes through)
                return _head_response(response, transform)
            source = iter(inner)
            held: list[bytes] = []
            ended = False
            while not transform.decided:
                chunk = next(source, None)
                ended = chunk is None
                held.append(transform.close() if ended else transform.feed(chunk or b""))
        except BaseException:
            inner.close()
            raise
        return httpx.Response(
            response.status_code, headers=transform.headers,
            stream=_RewrittenStream(b"".join(held), source, transform, inner, ended),
            extensions=response.extensions,
        )

    def close(self) -> None:
        """Close the wrapped transport."""
        self.transport.close()


class AsyncRewritingTransport(httpx.AsyncBaseTransport):
    """:class:`RewritingTransport` for an :class:`httpx.AsyncClient` (wrapping an
    :class:`httpx.AsyncHTTPTransport` by default)."""

    def __init__(self, rewriter: Rewriter, transport: httpx.AsyncBaseTransport | None = None, *,
                 options: HttpOptions | None = None) -> None:
        _check_arguments("AsyncRewritingTransport()", None, rewriter, transport,
                         httpx.AsyncBaseTransport)
        self.rewriter = rewriter
        self.transport = transport if transport is not None else httpx.AsyncHTTPTransport()
        self.options = options

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request on the wrapped transport; the response, rewritten when HTML
        (raises :class:`htmlstream.http.ResponseRefused` as the sync transport does)."""
        request = _forwarded(request, self.options)
        response = await self.transport.handle_async_request(request)
        inner = response.stream
        assert isinstance(inner, httpx.AsyncByteStream)
        try:
            transform = _request_transform(self.rewriter, request, response, self.options)
            if transform.decided:
                return _head_response(response, transform)
            source = aiter(inner)
            held: list[bytes] = []
            ended = False
            is_async = self.rewriter.has_async_handlers
            while not transform.decided:
                try:
                    chunk = await anext(source)
                except StopAsyncIteration:
                    ended = True
                    held += [out async for out in _pieces(transform, is_async, None)]
                else:
                    held += [out async for out in _pieces(transform, is_async, chunk)]
        except BaseException:
            await inner.aclose()
            raise
        return httpx.Response(
            response.status_code, headers=transform.headers,
            stream=_AsyncRewrittenStream(b"".join(held), source, transform, inner,
                                         ended, is_async),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self.transport.aclose()
