"""robots.txt for :mod:`htmlstream.scrape`: fetched once per origin, parsed by protego, cached for
the run; read as RFC 9309 says: a 2xx answer's rules apply, a 4xx answer allows everything, a
5xx answer disallows everything; a failure to connect fails the page (and is retried).

Requests go through the run's :class:`~htmlstream.scrape.transport.Transport`: this module knows
nothing of fetching pages (:mod:`.fetch` uses it, never the other way round)."""

from __future__ import annotations

import asyncio
import time
from typing import Final

import httpx

try:
    from protego import Protego
except ImportError as exc:  # pragma: no cover - the extra is installed in development
    raise ImportError(
        "robots.txt support needs protego: install the extra, pip install 'htmlstream[scrape]' "
        "(or pass robots=False)"
    ) from exc

from htmlstream.scrape.errors import ConnectionFailed, RobotsDisallowed, ScrapeError
from htmlstream.scrape.transport import Transport

__all__ = ["RobotsCache"]

#: The most bytes of a robots.txt read (RFC 9309 asks crawlers to read at least 500 KiB).
MAX_ROBOTS_BYTES: Final = 512 * 1024
#: The most seconds one robots.txt fetch takes (within the page's deadline).
ROBOTS_TIMEOUT: Final = 10.0


class _Rules:
    """One origin's answer: protego's rules, or allow or disallow all."""

    def __init__(self, parser: Protego | None, allow_all: bool, why: str = "") -> None:
        self.parser = parser
        self.allow_all = allow_all
        self.why = why

    def allowed(self, url: str, agent: str) -> bool:
        if self.parser is None:
            return self.allow_all
        return bool(self.parser.can_fetch(url, agent))

    def crawl_delay(self, agent: str) -> float | None:
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(agent)
        return None if delay is None else float(delay)


class RobotsCache:
    """robots.txt answers per origin (``scheme://host:port``) for a run, fetched through its
    transport."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._rules: dict[str, _Rules] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def rules(self, url: httpx.URL, page_url: str, deadline: float | None) -> _Rules:
        """The rules of ``url``'s origin, fetched the first time it is asked for."""
        origin = f"{url.scheme}://{url.netloc.decode('ascii')}"
        rules = self._rules.get(origin)
        if rules is not None:
            return rules
        lock = self._locks.setdefault(origin, asyncio.Lock())
        async with lock:    # one fetch per origin, however many pages wait for it
            rules = self._rules.get(origin)
            if rules is None:
                rules = await self._fetch(origin, page_url, deadline)
                self._rules[origin] = rules
        return rules

    async def check(self, url: httpx.URL, page_url: str, deadline: float | None) -> None:
        """Raise :class:`~htmlstream.scrape.RobotsDisallowed` when ``url`` may not be fetched."""
        rules = await self.rules(url, page_url, deadline)
        if not rules.allowed(str(url), self._transport.options.user_agent):
            agent = self._transport.options.user_agent
            why = rules.why or f"robots.txt disallows {url} for {agent!r}"
            raise RobotsDisallowed(why, page_url)

    async def crawl_delay(self, url: httpx.URL, page_url: str,
                          deadline: float | None) -> float | None:
        """The origin's ``Crawl-delay`` for the user agent (None when none)."""
        rules = await self.rules(url, page_url, deadline)
        return rules.crawl_delay(self._transport.options.user_agent)

    async def _fetch(self, origin: str, page_url: str, deadline: float | None) -> _Rules:
        transport = self._transport
        client = transport.client
        robots_url = f"{origin}/robots.txt"
        loop_deadline = time.monotonic() + ROBOTS_TIMEOUT
        if deadline is not None:
            loop_deadline = min(loop_deadline, deadline)
        request = client.build_request("GET", robots_url,
                                       headers={"User-Agent": transport.options.user_agent})
        try:
            response = await transport.send(request, page_url, loop_deadline, follow_redirects=True)
        except ScrapeError as exc:
            exc.args = (f"robots.txt: {exc.args[0]}",)
            raise
        try:
            status = response.status_code
            if 400 <= status < 500:
                return _Rules(None, allow_all=True)
            if not 200 <= status < 300:
                return _Rules(None, allow_all=False,
                              why=f"robots.txt answered {status}: the site is taken as "
                                  f"disallowed (RFC 9309)")
            body = bytearray()
            try:
                async with asyncio.timeout(loop_deadline - time.monotonic()):
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) >= MAX_ROBOTS_BYTES:
                            break
            except (TimeoutError, httpx.HTTPError) as exc:
                raise ConnectionFailed(f"robots.txt could not be read: {exc!r}", page_url) from None
        finally:
            await response.aclose()
        text = bytes(body[:MAX_ROBOTS_BYTES]).decode("utf-8", "replace")
        return _Rules(Protego.parse(text), allow_all=True)
