"""The transport of :mod:`htmlstream.scrape`: the run's httpx client, and the one way a request
is sent on it (within the page's deadline, httpx's errors turned into
:class:`~htmlstream.scrape.ScrapeError`).  What fetching a page (:mod:`.fetch`) and fetching
robots.txt (:mod:`.robots`) both need lives here, so that neither imports the other: fetch uses
robots, robots uses only the transport."""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from typing import Self

import httpx

from htmlstream.scrape.errors import (
    ConnectionFailed,
    ContentDecodingFailed,
    FetchTimeout,
    InvalidURL,
    ScrapeError,
)
from htmlstream.scrape.options import FetchOptions

__all__ = ["Transport", "deadline_error", "remaining", "wrap_error"]


def wrap_error(exc: Exception, url: str) -> ScrapeError:
    """The ScrapeError for an httpx exception."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return FetchTimeout(f"connect timeout: {detail}", url, phase="connect")
    if isinstance(exc, httpx.TimeoutException):
        return FetchTimeout(f"read timeout: {detail}", url, phase="read")
    if isinstance(exc, httpx.DecodingError):
        return ContentDecodingFailed(detail, url)
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return InvalidURL(detail, url)
    if isinstance(exc, httpx.TransportError):
        return ConnectionFailed(f"{type(exc).__name__}: {detail}", url)
    return ScrapeError(f"{type(exc).__name__}: {detail}", url)


def deadline_error(url: str, options: FetchOptions) -> FetchTimeout:
    """The error of a page whose deadline (``options.timeout``) passed."""
    return FetchTimeout(f"the page's deadline (timeout={options.timeout} s) passed", url,
                        phase="deadline")


def remaining(deadline: float | None) -> float | None:
    """Seconds left before ``deadline`` (a :func:`time.monotonic` time; None: no deadline)."""
    return None if deadline is None else deadline - time.monotonic()


@functools.cache
def _ssl_context(verify: bool) -> ssl.SSLContext:
    """One TLS context per process (loading the CA bundle costs tenths of a second: not once
    per run)."""
    if not verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    import certifi  # httpx's own dependency, its default CA bundle

    return ssl.create_default_context(cafile=certifi.where())


class Transport:
    """The httpx client of one run and its options; requests go through :meth:`send`.

    Use as an async context manager; ``client`` (an ``httpx.AsyncClient`` of the caller's, for
    proxies, auth, cookies...) is left open, the one made otherwise is closed.
    """

    def __init__(self, options: FetchOptions, client: httpx.AsyncClient | None = None) -> None:
        self.options = options
        self._own = client is None
        self.client = client if client is not None else httpx.AsyncClient(
            verify=_ssl_context(options.verify), follow_redirects=False,
            limits=httpx.Limits(keepalive_expiry=5.0))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client, when it is the transport's own."""
        if self._own:
            await self.client.aclose()

    def timeouts(self, deadline: float | None) -> httpx.Timeout:
        """httpx's per-operation timeouts, none longer than what is left of the deadline."""
        o = self.options
        left = remaining(deadline)
        cap = o.read_timeout if left is None else max(0.001, min(o.read_timeout, left))
        connect = o.connect_timeout if left is None else max(0.001, min(o.connect_timeout, left))
        return httpx.Timeout(cap, connect=connect)

    async def send(self, request: httpx.Request, url: str, deadline: float | None,
                   follow_redirects: bool = False) -> httpx.Response:
        """Send ``request`` (streamed) within the deadline; httpx errors as ScrapeErrors."""
        request.extensions["timeout"] = self.timeouts(deadline).as_dict()
        try:
            async with asyncio.timeout(remaining(deadline)):
                return await self.client.send(request, stream=True,
                                              follow_redirects=follow_redirects)
        except TimeoutError:
            raise deadline_error(url, self.options) from None
        except httpx.HTTPError as exc:
            raise wrap_error(exc, url) from None
