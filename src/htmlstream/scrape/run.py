"""Many pages: :func:`scrape` and :func:`ascrape` fetch URLs concurrently (a limit per host, a
delay between a host's requests, robots.txt's ``Crawl-delay``), extract fields from each page while
it streams in, stop reading a page once every field is final, and give a :class:`Page` per URL as
it completes (a response that is not HTML, by its type or its first bytes, fails at once as
:class:`~htmlstream.scrape.NotHTML`); a page that fails is retried when that may help, then
raises, is skipped (given with its error) or goes to a callback, as ``on_error`` says.  A run
that ends with failed pages logs one summary line (``WARNING`` on the ``htmlstream.scrape``
logger: how many of how many failed, by error type, and the first error), by the rule of
:func:`htmlstream.errors.check_failures` (never raising: every failed page was given)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, Final, Literal, TypeAlias

import httpx

from htmlstream.errors import check_failures
from htmlstream.extraction import Extractor, Field
from htmlstream.http import HOLD_BYTES, HttpOptions, ResponseRefused, decide, decide_headers
from htmlstream.scrape.errors import ExtractionFailed, HTTPStatusError, NotHTML, ScrapeError
from htmlstream.scrape.fetch import (
    AsyncResponse,
    FetchOptions,
    LoopThread,
    Session,
    _anext,
    _options,
    with_retries,
)
from htmlstream.scrape.transport import wrap_error

__all__ = ["RECORD_KEYS", "OnError", "Page", "ascrape", "scrape"]

_log = logging.getLogger("htmlstream.scrape")

#: The keys every record starts with (a field may not take these names).
RECORD_KEYS: Final = ("url", "final_url", "status", "error")
#: The longest robots.txt ``Crawl-delay`` honoured (a longer one is taken as this).
MAX_CRAWL_DELAY: Final = 30.0


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    """One URL's outcome.

    Attributes:
        url: the URL as given.
        fields: the extracted fields (``None``, or a list for ``many`` fields; every field
            ``None`` on a page that failed).
        final_url: the URL after redirects (None when no response came).
        status: the final status code (None when no response came).
        error: why the page failed (None when it did not).
        attempts: how many times it was requested.
        bytes_read: body bytes received (compressed as sent), of the last attempt.
        decoded_bytes: body bytes read once decompressed.
        complete: the body was read to its end (False when the extraction stopped early, or
            the page failed).
        elapsed: seconds from its first request to its end (retries and waits included).
        encoding: the ``Content-Type`` charset passed to the extraction (None: the document's
            own, or UTF-8).
    """

    url: str
    fields: dict[str, Any]
    final_url: str | None = None
    status: int | None = None
    error: ScrapeError | None = None
    attempts: int = 0
    bytes_read: int = 0
    decoded_bytes: int = 0
    complete: bool = False
    elapsed: float = 0.0
    encoding: str | None = None

    @property
    def ok(self) -> bool:
        """The page was fetched and its fields extracted."""
        return self.error is None

    @property
    def record(self) -> dict[str, Any]:
        """A flat record: ``url``, ``final_url``, ``status``, ``error`` (None, or
        ``"KIND: message"``), then the fields."""
        error = None if self.error is None else f"{self.error.kind}: {self.error}"
        return {"url": self.url, "final_url": self.final_url, "status": self.status,
                "error": error, **self.fields}


#: ``on_error``: raise the page's error (stopping the run), give the page with its error
#: ("skip"), or call a function with it (then give it, as "skip" does; the function may raise to
#: stop the run).
OnError: TypeAlias = Literal["raise", "skip"] | Callable[[Page], object]


def compile_fields(fields: Mapping[str, str | Field]) -> dict[str, Field]:
    """The fields as :class:`~htmlstream.extraction.Field` objects (specs parsed once, so a bad
    one fails before anything is fetched)."""
    if not isinstance(fields, Mapping):
        raise TypeError(f"fields must be a mapping of names to selector strs or Fields, not "
                        f"{type(fields).__name__}")
    compiled: dict[str, Field] = {}
    for name, spec in fields.items():
        if name in RECORD_KEYS:
            raise ValueError(f"a field may not be named {name!r} (records have that key)")
        compiled[name] = spec if isinstance(spec, Field) else Field.parse(spec)
    Extractor(compiled)  # compiles the selectors: a bad one raises here
    return compiled


def _check_urls(where: str, urls: object) -> None:
    if isinstance(urls, (str, bytes)) or not isinstance(urls, Iterable):
        raise TypeError(f"{where}: urls must be an iterable of URLs (str), not "
                        f"{type(urls).__name__}")


def _check_on_error(on_error: OnError) -> None:
    if on_error not in ("raise", "skip") and not callable(on_error):
        raise ValueError(f"on_error must be 'raise', 'skip' or a callable, not {on_error!r}")


#: The sniffing's reason for a body that starts with text, not markup.
_TEXT_FIRST = "text that does not start with '<'"


async def html_start(response: AsyncResponse, chunks: AsyncIterator[bytes],
                     options: FetchOptions) -> list[bytes]:
    """The first chunks of the decoded body (:data:`~htmlstream.http.HOLD_BYTES` or more, or
    the whole body when shorter), once the response is decided to be HTML as
    :func:`htmlstream.http.decide` decides what to rewrite (the ``Content-Type`` alone, then
    the first bytes sniffed); raises :class:`NotHTML` otherwise, the body read no further."""
    # Only the type is asked about: the body is decoded here, and what matters to a rewrite
    # (a 204, no-transform, an attachment) does not to an extraction.
    headers = [(k, v) for k, v in response.headers.multi_items() if k == "content-type"]
    http_options = HttpOptions(html_types=options.html_types, verify_html=options.verify_html,
                               sniff_types=options.sniff_types)
    held: list[bytes] = []
    try:
        decision = decide_headers("GET", 200, headers, options=http_options)
        if decision is None:
            size = 0
            async for chunk in chunks:
                held.append(chunk)
                size += len(chunk)
                if size >= HOLD_BYTES:
                    break
            # (transcode: the extraction reads UTF-16 too)
            decision = decide("GET", 200, headers, b"".join(held), transcode=True,
                              options=http_options)
    except ResponseRefused as exc:      # (multipart/byteranges)
        raise NotHTML(exc.reason, response.url, None, exc.reason) from exc
    if not decision.rewrite and decision.mime_type in options.html_types and (
            decision.reason or "").endswith(_TEXT_FIRST):
        # Served as HTML, and nothing says it is not (no signature, no JSON, no binary): a
        # browser shows it as a page (a warning printed before <!DOCTYPE html>), so it is one.
        return held
    if not decision.rewrite:
        reason = decision.reason or "not HTML"
        raise NotHTML(reason.removeprefix("not HTML: "), response.url, decision.mime_type,
                      reason)
    return held


class _Host:
    def __init__(self, per_host: int) -> None:
        self.semaphore = asyncio.Semaphore(per_host)
        self.lock = asyncio.Lock()
        self.next_start = 0.0


class _Runner:
    """Scrapes one page at a time for ``ascrape``'s workers."""

    def __init__(self, session: Session, fields: dict[str, Field], per_host: int,
                 host_delay: float) -> None:
        self.session = session
        self.fields = fields
        self.per_host = per_host
        self.host_delay = host_delay
        self.hosts: dict[str, _Host] = {}

    def _failed(self, url: str, error: ScrapeError, start: float, **known: Any) -> Page:
        if isinstance(error, HTTPStatusError):
            known.update(status=error.status, final_url=error.final_url)
        return Page(url, dict.fromkeys(self.fields), error=error,
                    attempts=max(error.attempts, 1), elapsed=time.monotonic() - start, **known)

    async def page(self, url: str) -> Page:
        """Fetch ``url`` and extract the fields; the error is in the page, never raised."""
        start = time.monotonic()
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            return self._failed(url, wrap_error(httpx.InvalidURL(str(exc)), url), start)
        host = self.hosts.setdefault(parsed.netloc.decode("ascii", "replace"),
                                     _Host(self.per_host))
        delay = self.host_delay
        robots = self.session.robots
        if robots is not None:
            # robots.txt first (once per origin): its Crawl-delay spaces the host's requests.
            # Failing to read it is the page's error, met again when the page is fetched.
            with contextlib.suppress(ScrapeError):
                crawl_delay = await robots.crawl_delay(parsed, url, None)
                if crawl_delay:
                    delay = max(delay, min(crawl_delay, MAX_CRAWL_DELAY))
        async with host.semaphore:
            async with host.lock:   # requests to a host start `delay` apart
                wait = host.next_start - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                host.next_start = time.monotonic() + delay
            return await self._page(url, parsed)

    async def _page(self, url: str, parsed: httpx.URL) -> Page:
        session = self.session
        start = time.monotonic()
        timeout = session.options.timeout
        deadline = None if timeout is None else start + timeout
        attempts = 0
        last: dict[str, Any] = {}

        async def attempt() -> Page:
            nonlocal attempts
            attempts += 1
            response = await session.open_once(url, deadline)
            last.update(final_url=response.final_url, status=response.status,
                        encoding=response.encoding)
            try:
                try:
                    async with contextlib.aclosing(response.aiter_bytes()) as chunks:
                        held = await html_start(response, chunks, session.options)
                        extractor = Extractor(self.fields, encoding=response.encoding)
                        for chunk in held:
                            extractor.feed(chunk)
                        if not extractor.done:
                            async for chunk in chunks:
                                extractor.feed(chunk)
                                if extractor.done:
                                    break   # every field is final: stop reading, close
                    record = extractor.close()
                except ScrapeError:
                    raise
                except Exception as exc:    # one page's failure, never the run's
                    raise ExtractionFailed(f"{type(exc).__name__}: {exc}", url) from exc
            finally:
                last.update(bytes_read=response.bytes_read,
                            decoded_bytes=response.decoded_bytes)
                await response.aclose()
            return Page(url, record, response.final_url, response.status, None, attempts,
                        response.bytes_read, response.decoded_bytes, response.complete,
                        time.monotonic() - start, response.encoding)

        try:
            return await with_retries(session.options, url, deadline, attempt)
        except ScrapeError as error:
            error.attempts = attempts
            return self._failed(url, error, start, **last)


async def _run(urls: Iterable[str], fields: Mapping[str, str | Field], opts: FetchOptions,
               concurrency: int, per_host: int, host_delay: float,
               client: httpx.AsyncClient | None) -> AsyncGenerator[Page, None]:
    """Every page, errors included, as it completes."""
    if concurrency < 1 or per_host < 1:
        raise ValueError("concurrency and per_host must be >= 1")
    compiled = compile_fields(fields)
    pending = iter(urls)
    queue: asyncio.Queue[Page | BaseException | None] = asyncio.Queue(maxsize=concurrency)
    async with Session(opts, client) as session:
        runner = _Runner(session, compiled, per_host, host_delay)

        async def worker() -> None:
            for url in pending:     # the workers share one iterator: each URL is taken once
                await queue.put(await runner.page(url))

        async def workers() -> None:
            try:
                await asyncio.gather(*(worker() for _ in range(concurrency)))
            except Exception as exc:   # a bug, or the URL iterable raised: given to the reader
                await queue.put(exc)
            else:
                await queue.put(None)

        task = asyncio.create_task(workers())
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _summary(errors: list[str | None]) -> None:
    """The run's one summary line when pages failed (the failure rule of
    :func:`htmlstream.errors.check_failures`, never raising: each failed page was given)."""
    check_failures("pages", errors, _log, raise_all=False)


def _outcome(page: Page) -> str | None:
    return None if page.error is None else f"{type(page.error).__name__}: {page.error}"


def _handle(page: Page, on_error: OnError) -> None:
    if page.error is not None:
        if on_error == "raise":
            raise page.error
        if callable(on_error):
            on_error(page)


async def ascrape(urls: Iterable[str], fields: Mapping[str, str | Field], *,
                  timeout: float | None = 60.0, retries: int = 3, on_error: OnError = "raise",
                  concurrency: int = 8, per_host: int = 2, host_delay: float = 0.0,
                  client: httpx.AsyncClient | None = None, options: FetchOptions | None = None,
                  **kwargs: Any) -> AsyncIterator[Page]:
    """Fetch ``urls`` and extract ``fields`` from each page: an async iterator of
    :class:`Page` in the order the pages complete.

    Args:
        urls: the pages (any iterable, read lazily).
        fields: names to selector specs (``"title::text"``, ``"a::attr(href)*"``) or
            :class:`~htmlstream.extraction.Field` objects.
        timeout: each page's deadline in seconds (retries and their waits included).
        retries: how many times a failed page is requested again (see :class:`FetchOptions`).
        on_error: ``"raise"``: the first page that fails raises its
            :class:`~htmlstream.scrape.ScrapeError` and the run stops (every connection
            closed); ``"skip"``: the page is given with ``error`` set and its fields None; a
            callable is called with such a page (and may raise to stop the run), then the page
            is given as with ``"skip"``.
        concurrency: how many pages are fetched at once.
        per_host: how many of them at most from one host (``host:port``).
        host_delay: seconds between the starts of two requests to one host (robots.txt's
            ``Crawl-delay``, up to 30 s, when longer).
        client: an ``httpx.AsyncClient`` to use (proxies, auth, cookies); left open.
        options: a :class:`FetchOptions`; ``kwargs`` are further fields of it
            (``max_bytes=``, ``robots=``, ``user_agent=``...).
    """
    _check_urls("ascrape()", urls)
    _check_on_error(on_error)
    opts = _options(options, {"timeout": timeout, "retries": retries, **kwargs}, "ascrape()")
    errors: list[str | None] = []
    async with contextlib.aclosing(_run(urls, fields, opts, concurrency, per_host, host_delay,
                                        client)) as pages:
        async for page in pages:
            _handle(page, on_error)
            errors.append(_outcome(page))
            yield page
    _summary(errors)


def scrape(urls: Iterable[str], fields: Mapping[str, str | Field], *,
           timeout: float | None = 60.0, retries: int = 3, on_error: OnError = "raise",
           concurrency: int = 8, per_host: int = 2, host_delay: float = 0.0,
           options: FetchOptions | None = None, **kwargs: Any) -> Iterator[Page]:
    """:func:`ascrape` for synchronous code: an iterator of :class:`Page` as the pages
    complete (the fetching runs on an event loop in a thread of its own; ``on_error``'s
    callable is called in the caller's thread).  Leaving the loop early (``break``, an
    exception) stops the run and closes every connection."""
    _check_urls("scrape()", urls)
    _check_on_error(on_error)
    opts = _options(options, {"timeout": timeout, "retries": retries, **kwargs}, "scrape()")
    compile_fields(fields)  # a bad spec fails here, in the caller's thread
    errors: list[str | None] = []
    with LoopThread() as runner:
        pages = _run(urls, fields, opts, concurrency, per_host, host_delay, None)
        try:
            while True:
                try:
                    page = runner.run(_anext(pages))
                except StopAsyncIteration:
                    _summary(errors)
                    return
                _handle(page, on_error)
                errors.append(_outcome(page))
                yield page
        finally:
            # (after an interrupted step the generator may still be running: the loop's
            # shutdown closes it then)
            with contextlib.suppress(RuntimeError):
                runner.run(pages.aclose())
