"""Fetching one page robustly: :func:`fetch` / :func:`afetch`.

Everything runs on httpx's asynchronous client: the page's deadline (``timeout``, which httpx
does not have: its timeouts bound each network operation, so a server trickling one byte a second
never trips them) is an :func:`asyncio.timeout` around every step, connecting, each redirect and
each body read.  The synchronous :func:`fetch` drives the same code on an event loop in a thread
of its own.  Bodies are read raw and decompressed here in bounded steps (gzip and deflate, as
asked for; br and zstd sent unasked by htmlstream.http's decoders, when their libraries are
installed), so a decompression bomb is stopped at ``max_bytes`` having produced at most 64 KiB
more.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import email.utils
import random
import threading
import time
import zlib
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Iterator,
)
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Self, TypeVar, cast

try:
    import httpx
except ImportError as exc:  # pragma: no cover - the extra is installed in development
    raise ImportError(
        "htmlstream.scrape needs httpx: install the extra, pip install 'htmlstream[scrape]'"
    ) from exc

from htmlstream import lookup_encoding
from htmlstream.errors import EncodingError
from htmlstream.http import ContentDecoder, ContentDecodingError, content_decoder
from htmlstream.scrape.errors import (
    BodyTooLarge,
    ConnectionFailed,
    ContentDecodingFailed,
    FetchTimeout,
    HTTPStatusError,
    InvalidURL,
    RedirectLoop,
    ScrapeError,
    TooManyRedirects,
)
from htmlstream.scrape.options import DEFAULT_USER_AGENT, RETRY_STATUSES, FetchOptions
from htmlstream.scrape.transport import Transport, deadline_error, remaining, wrap_error

if TYPE_CHECKING:
    from htmlstream.scrape.robots import RobotsCache

__all__ = [
    "DEFAULT_USER_AGENT",
    "RETRY_STATUSES",
    "AsyncResponse",
    "FetchOptions",
    "Response",
    "afetch",
    "fetch",
]

#: Decompression step: the most decoded bytes produced at once.
_STEP: Final = 64 * 1024

T = TypeVar("T")


# ---------------------------------------------------------------------------- retries

def retryable(error: ScrapeError, options: FetchOptions) -> bool:
    """Whether another attempt may succeed where this one failed."""
    if isinstance(error, FetchTimeout):
        return error.phase != "deadline"
    if isinstance(error, HTTPStatusError):
        return error.status in options.retry_statuses
    return isinstance(error, ConnectionFailed)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """The seconds a ``Retry-After`` value asks to wait (delta-seconds or an HTTP date; None
    when absent or unreadable; a date in the past is 0)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


def retry_wait(error: ScrapeError, retry: int, options: FetchOptions) -> float | None:
    """How long to wait before retry number ``retry`` (0-based) after ``error``; None when
    the server asked for a wait longer than ``max_retry_after``."""
    if isinstance(error, HTTPStatusError) and error.retry_after is not None:
        if error.retry_after > options.max_retry_after:
            return None
        return error.retry_after
    base = min(options.max_backoff, options.backoff * 2.0 ** retry)
    return base * random.uniform(0.5, 1.0)


async def with_retries(options: FetchOptions, url: str, deadline: float | None,
                       attempt: Callable[[], Awaitable[T]]) -> T:
    """Run ``attempt`` until it succeeds, retrying what :func:`retryable` allows, with
    backoff, within the deadline; the last error (with ``attempts`` set) when it gives up."""
    retry = 0
    while True:
        try:
            return await attempt()
        except ScrapeError as error:
            error.attempts = retry + 1
            if retry >= options.retries or not retryable(error, options):
                raise
            wait = retry_wait(error, retry, options)
            if wait is None:
                error.args = (f"{error.args[0]} (Retry-After longer than max_retry_after="
                              f"{options.max_retry_after} s)",)
                raise
            left = remaining(deadline)
            if left is not None and wait >= left:
                error.args = (f"{error.args[0]} (no time left for retry {retry + 1} before "
                              f"the deadline)",)
                raise
            await asyncio.sleep(wait)
            retry += 1


# ---------------------------------------------------------------------------- decoding

class _Decoder:
    """A body's content coding undone in bounded steps: identity, gzip and deflate here (a
    truncated stream gives what it has); br and zstd, which are not asked for but some servers
    send anyway, by :func:`htmlstream.http.content_decoder` when their libraries are installed."""

    def __init__(self, header: str | None, url: str) -> None:
        codings = [c.strip().lower() for c in (header or "").split(",")]
        codings = [c for c in codings if c and c != "identity"]
        self.coding = codings[0] if codings else None
        self.url = url
        self._zlib: Any = None
        self._other: ContentDecoder | None = None
        if len(codings) == 1 and codings[0] in ("br", "zstd"):
            try:
                self._other = content_decoder(codings[0])
            except ContentDecodingError as exc:
                raise ContentDecodingFailed(f"{exc} (gzip and deflate are asked for)",
                                            url) from None
        elif len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise ContentDecodingFailed(
                f"content coding {header!r} not supported (gzip and deflate are asked for)", url)
        if self.coding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(31)

    def decode(self, data: bytes) -> Iterator[bytes]:
        if self.coding is None:
            if data:
                yield data
            return
        if self._other is not None:
            try:
                yield from self._other.decode(data)
            except ContentDecodingError as exc:
                raise ContentDecodingFailed(str(exc), self.url) from None
            return
        if self._zlib is None:  # deflate: zlib-wrapped as specified, or raw as some servers send
            wrapped = len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._zlib = zlib.decompressobj(15 if wrapped else -15)
        try:
            while data:
                out = self._zlib.decompress(data, _STEP)
                data = self._zlib.unconsumed_tail
                if out:
                    yield out
                if self._zlib.eof:
                    data = self._zlib.unused_data
                    if not data or self.coding == "deflate":
                        return
                    self._zlib = zlib.decompressobj(31)   # a further gzip member
        except zlib.error as exc:
            raise ContentDecodingFailed(f"corrupt {self.coding} body: {exc}", self.url) from None

    def finish(self) -> Iterator[bytes]:
        if self._other is not None:
            # A truncated stream gives what it has (already given), as with gzip.
            with contextlib.suppress(ContentDecodingError):
                yield from self._other.finish()
        if self._zlib is not None:
            # A truncated stream gives what it has, as browsers show it.
            with contextlib.suppress(zlib.error):
                out = self._zlib.flush()
                if out:
                    yield out



def _charset(response: httpx.Response) -> str | None:
    """The WHATWG name of the Content-Type charset, when it names an encoding (else None)."""
    label = response.charset_encoding
    if not label:
        return None
    try:
        return lookup_encoding(label).name
    except EncodingError:
        return None


# ---------------------------------------------------------------------------- responses

class AsyncResponse:
    """A fetched page, its body still to read (from :func:`afetch`).

    Attributes:
        url: the URL asked for.
        final_url: the URL of the response, after redirects.
        status: its status code.
        headers: its headers (``httpx.Headers``).
        encoding: the WHATWG name of its ``Content-Type`` charset, when it names one (None: the
            document's own ``<meta charset>`` or BOM decides).
        redirects: the URLs redirected from, in order.
        attempts: how many requests it took (1 unless retried).
        bytes_read: body bytes received so far (compressed as sent).
        decoded_bytes: body bytes given out so far (decompressed).
    """

    def __init__(self, url: str, response: httpx.Response, redirects: list[str],
                 options: FetchOptions, deadline: float | None) -> None:
        self.url = url
        self.final_url = str(response.url)
        self.status = response.status_code
        self.headers = response.headers
        self.encoding = _charset(response)
        self.redirects = redirects
        self.attempts = 1
        self.bytes_read = 0
        self.decoded_bytes = 0
        self.complete = False
        self._response = response
        self._options = options
        self._deadline = deadline
        self._decoder = _Decoder(response.headers.get("content-encoding"), url)

    @property
    def content_type(self) -> str | None:
        """The ``Content-Type`` header (None when absent)."""
        value: str | None = self.headers.get("content-type")
        return value

    def _count(self, piece: bytes) -> bytes:
        self.decoded_bytes += len(piece)
        limit = self._options.max_bytes
        if limit is not None and self.decoded_bytes > limit:
            what = "decompressed body" if self._decoder.coding else "body"
            raise BodyTooLarge(f"the {what} is larger than max_bytes={limit}", self.url, limit)
        return piece

    async def aiter_bytes(self) -> AsyncGenerator[bytes, None]:
        """The body, decompressed, chunk by chunk as it arrives; raises a
        :class:`~htmlstream.scrape.ScrapeError` on a timeout, a broken connection, a body over
        ``max_bytes`` or a corrupt compressed body."""
        # (an async generator: closed below, whatever happens)
        raw = cast(AsyncGenerator[bytes, None], self._response.aiter_raw())
        try:
            while True:
                try:
                    async with asyncio.timeout(remaining(self._deadline)):
                        chunk = await anext(raw)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise deadline_error(self.url, self._options) from None
                except httpx.HTTPError as exc:
                    raise wrap_error(exc, self.url) from None
                self.bytes_read += len(chunk)
                limit = self._options.max_bytes
                if limit is not None and self.bytes_read > limit:
                    raise BodyTooLarge(f"the body is larger than max_bytes={limit}", self.url,
                                       limit)
                for piece in self._decoder.decode(chunk):
                    yield self._count(piece)
            for piece in self._decoder.finish():
                yield self._count(piece)
            self.complete = True
        finally:
            await raw.aclose()

    async def aread(self) -> bytes:
        """The whole body (bounded by ``max_bytes``)."""
        return b"".join([piece async for piece in self.aiter_bytes()])

    async def aclose(self) -> None:
        """Close the response (and its connection when the body was not read to the end)."""
        await self._response.aclose()


class Session(Transport):
    """What the fetches of one run share: the transport (httpx client and options), the request
    headers, and robots.txt answers.

    Use as an async context manager; ``client`` (an ``httpx.AsyncClient`` of the caller's, for
    proxies, auth, cookies...) is left open, the one made otherwise is closed.
    """

    def __init__(self, options: FetchOptions, client: httpx.AsyncClient | None = None) -> None:
        super().__init__(options, client)
        headers = {"User-Agent": options.user_agent,
                   # Only the codings decoded here in bounded steps.
                   "Accept-Encoding": "gzip, deflate",
                   "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"}
        headers.update(options.headers or {})
        self._headers = headers
        self.robots: RobotsCache | None = None
        if options.robots:
            # (imported when asked for: protego is needed only then)
            from htmlstream.scrape.robots import RobotsCache
            self.robots = RobotsCache(self)

    async def open_once(self, url: str, deadline: float | None) -> AsyncResponse:
        """One request for ``url``, redirects followed (robots.txt asked at each hop); raises
        for a non-2xx final status."""
        options = self.options
        try:
            request = self.client.build_request("GET", url, headers=self._headers)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise wrap_error(exc, url) from None
        if request.url.scheme not in ("http", "https") or not request.url.host:
            raise InvalidURL(f"not an http(s) URL: {url!r}", url)
        visited = [str(request.url)]
        while True:
            if self.robots is not None:
                await self.robots.check(request.url, url, deadline)
            response = await self.send(request, url, deadline)
            next_request = response.next_request
            if next_request is None:
                break
            await response.aclose()
            target = str(next_request.url)
            if target in visited:
                raise RedirectLoop(f"redirect loop: {' -> '.join([*visited, target])}", url)
            if len(visited) > options.max_redirects:
                raise TooManyRedirects(f"more than max_redirects={options.max_redirects} "
                                       f"redirects", url)
            visited.append(target)
            request = next_request
        page = AsyncResponse(url, response, visited[:-1], options, deadline)
        if not 200 <= response.status_code < 300:
            await response.aclose()
            retry_after = (parse_retry_after(response.headers.get("retry-after"))
                           if response.status_code in options.retry_statuses else None)
            raise HTTPStatusError(
                f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
                + (f" (Retry-After {retry_after:g} s)" if retry_after is not None else ""),
                url, response.status_code, retry_after, str(response.url))
        return page

    async def open(self, url: str, deadline: float | None) -> AsyncResponse:
        """:meth:`open_once` with the retries."""
        attempts = 0

        async def attempt() -> AsyncResponse:
            nonlocal attempts
            attempts += 1
            return await self.open_once(url, deadline)

        page = await with_retries(self.options, url, deadline, attempt)
        page.attempts = attempts
        return page


def _options(options: FetchOptions | None, kwargs: dict[str, Any],
             where: str = "fetch()") -> FetchOptions:
    if options is not None and not isinstance(options, FetchOptions):
        raise TypeError(f"{where}: options must be FetchOptions or None, not "
                        f"{type(options).__name__}")
    base = options or FetchOptions()
    return dataclasses.replace(base, **kwargs) if kwargs else base


def _check_url(where: str, url: object) -> None:
    if not isinstance(url, str):
        raise TypeError(f"{where}: url must be a str (an http or https URL), not "
                        f"{type(url).__name__}")


def _deadline(options: FetchOptions) -> float | None:
    return None if options.timeout is None else time.monotonic() + options.timeout


@contextlib.asynccontextmanager
async def afetch(url: str, *, options: FetchOptions | None = None,
                 client: httpx.AsyncClient | None = None,
                 **kwargs: Any) -> AsyncIterator[AsyncResponse]:
    """Fetch ``url``: an async context manager giving the response once its headers are in
    (after redirects and retries), its body to read with ``aiter_bytes()``; the connection is
    closed when the block ends, however it ends.

    ``kwargs`` are :class:`FetchOptions` fields (``timeout=``, ``retries=``, ``max_bytes=``...);
    the deadline runs from the call to the end of the block.  Raises a
    :class:`~htmlstream.scrape.ScrapeError` (a non-2xx final status is
    :class:`~htmlstream.scrape.HTTPStatusError`)."""
    _check_url("afetch()", url)
    opts = _options(options, kwargs, "afetch()")
    deadline = _deadline(opts)
    async with Session(opts, client) as session:
        response = await session.open(url, deadline)
        try:
            yield response
        finally:
            await response.aclose()


# ---------------------------------------------------------------------------- synchronous

class LoopThread:
    """An event loop in a daemon thread of its own, for the synchronous API."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                        name="htmlstream-scrape")
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (cancelled if the wait is
        interrupted, e.g. by Ctrl-C)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def close(self) -> None:
        """Cancel what is left, stop the loop and its thread, close the loop."""
        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_asyncgens()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _anext(iterator: AsyncIterator[T]) -> T:
    return await anext(iterator)


class Response:
    """A fetched page, its body still to read (from :func:`fetch`): the attributes of
    :class:`AsyncResponse`, and the body with ``iter_bytes()`` (or by iterating the response,
    so ``htmlstream.extract(response, fields)`` reads it)."""

    def __init__(self, response: AsyncResponse, runner: LoopThread) -> None:
        self._response = response
        self._runner = runner
        self.url = response.url
        self.final_url = response.final_url
        self.status = response.status
        self.headers = response.headers
        self.encoding = response.encoding
        self.redirects = response.redirects
        self.attempts = response.attempts
        self._buffer = bytearray()
        self._stream = self._generate()

    @property
    def content_type(self) -> str | None:
        """The ``Content-Type`` header (None when absent)."""
        return self._response.content_type

    @property
    def bytes_read(self) -> int:
        """Body bytes received so far (compressed as sent)."""
        return self._response.bytes_read

    @property
    def decoded_bytes(self) -> int:
        """Body bytes given out so far (decompressed)."""
        return self._response.decoded_bytes

    def _generate(self) -> Generator[bytes, None, None]:
        chunks = self._response.aiter_bytes()
        try:
            while True:
                try:
                    yield self._runner.run(_anext(chunks))
                except StopAsyncIteration:
                    return
        finally:
            self._runner.run(chunks.aclose())

    def iter_bytes(self) -> Iterator[bytes]:
        """The body, decompressed, chunk by chunk as it arrives (see
        :meth:`AsyncResponse.aiter_bytes`); what :meth:`read` took is not given again."""
        if self._buffer:
            data = bytes(self._buffer)
            self._buffer.clear()
            yield data
        yield from self._stream

    __iter__ = iter_bytes

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes of the body (all of the rest when ``size`` is negative), as a
        binary file reads: ``b""`` at the end."""
        if size < 0:
            return b"".join(self.iter_bytes())
        while len(self._buffer) < size:
            chunk = next(self._stream, None)
            if chunk is None:
                break
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def close(self) -> None:
        """Stop reading the body (the connection is closed when :func:`fetch`'s block ends)."""
        self._stream.close()


@contextlib.contextmanager
def fetch(url: str, *, options: FetchOptions | None = None, **kwargs: Any) -> Iterator[Response]:
    """Fetch ``url``: a context manager giving the response once its headers are in (after
    redirects and retries), its body to read with ``iter_bytes()``; the connection is closed
    when the block ends, however it ends::

        with htmlstream.scrape.fetch("https://example.org/", timeout=30) as response:
            for chunk in response.iter_bytes():
                ...

    ``kwargs`` are :class:`FetchOptions` fields; the deadline (``timeout``) runs from the call
    to the end of the block.  Raises a :class:`~htmlstream.scrape.ScrapeError` (a non-2xx
    final status is :class:`~htmlstream.scrape.HTTPStatusError`).  The work is done by
    :func:`afetch` on an event loop in a thread of its own.
    """
    _check_url("fetch()", url)
    opts = _options(options, kwargs, "fetch()")
    deadline = _deadline(opts)
    with LoopThread() as runner:
        session = Session(opts)
        try:
            response = runner.run(session.open(url, deadline))
            sync_response = Response(response, runner)
            try:
                yield sync_response
            finally:
                sync_response.close()
                runner.run(response.aclose())
        finally:
            runner.run(session.aclose())
