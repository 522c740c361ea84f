"""Scraping: fetch pages robustly and extract fields from them while they stream in.

- :func:`fetch` / :func:`afetch`: one page, as a context manager giving a streamed response
  (deadline, retries with backoff, redirects, size and decompression limits, robots.txt; the
  connection closed on every path).
- :func:`scrape` / :func:`ascrape`: many pages, concurrently, each as a :class:`Page` (its
  ``record``: ``url``, ``final_url``, ``status``, ``error``, then the fields) as it completes;
  reading stops as soon as every field is final.

A layer on htmlstream's public API (``htmlstream.extraction``) and httpx, with protego for
robots.txt: the extra ``htmlstream[scrape]``.  docs/guide/scrape.md has the recipe and every
option.
"""

from htmlstream.scrape.errors import (
    BodyTooLarge,
    ConnectionFailed,
    ContentDecodingFailed,
    ExtractionFailed,
    FetchTimeout,
    HTTPStatusError,
    InvalidURL,
    NotHTML,
    RedirectLoop,
    RobotsDisallowed,
    ScrapeError,
    TooManyRedirects,
)
from htmlstream.scrape.fetch import (
    DEFAULT_USER_AGENT,
    RETRY_STATUSES,
    AsyncResponse,
    FetchOptions,
    Response,
    afetch,
    fetch,
)
from htmlstream.scrape.run import OnError, Page, ascrape, scrape

__all__ = [
    "DEFAULT_USER_AGENT",
    "RETRY_STATUSES",
    "AsyncResponse",
    "BodyTooLarge",
    "ConnectionFailed",
    "ContentDecodingFailed",
    "ExtractionFailed",
    "FetchOptions",
    "FetchTimeout",
    "HTTPStatusError",
    "InvalidURL",
    "NotHTML",
    "OnError",
    "Page",
    "RedirectLoop",
    "Response",
    "RobotsDisallowed",
    "ScrapeError",
    "TooManyRedirects",
    "afetch",
    "ascrape",
    "fetch",
    "scrape",
]
