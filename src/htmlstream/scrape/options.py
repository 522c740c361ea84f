"""How pages are fetched: :class:`FetchOptions` and its defaults, shared by every module of
:mod:`htmlstream.scrape` (the transport, robots.txt, one page, many pages); it imports none of
them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Final

import htmlstream

__all__ = ["DEFAULT_USER_AGENT", "RETRY_STATUSES", "FetchOptions"]

#: The ``User-Agent`` sent (and the name robots.txt rules are matched against) by default.
DEFAULT_USER_AGENT: Final = f"htmlstream/{htmlstream.__version__}"
#: The statuses retried (with ``Retry-After`` honoured): too many requests, and the gateway
#: answers of a server busy or restarting.
RETRY_STATUSES: Final = frozenset({429, 502, 503, 504})


_NUMBER = "a number of seconds (int or float)"
#: The fields' types, checked when FetchOptions are made (the options are read everywhere).
_FIELD_TYPES: Final = (
    ("timeout", (int, float, type(None)), _NUMBER + " or None"),
    ("connect_timeout", (int, float), _NUMBER), ("read_timeout", (int, float), _NUMBER),
    ("retries", (int,), "an int"), ("backoff", (int, float), _NUMBER),
    ("max_backoff", (int, float), _NUMBER), ("max_retry_after", (int, float), _NUMBER),
    ("retry_statuses", (AbstractSet,), "a set of status codes (a frozenset of int)"),
    ("max_bytes", (int, type(None)), "an int or None"), ("max_redirects", (int,), "an int"),
    ("user_agent", (str,), "a str"), ("robots", (bool,), "a bool"),
    ("headers", (Mapping, type(None)), "a mapping of str to str, or None"),
    ("verify", (bool,), "a bool"),
    ("html_types", (AbstractSet,), "a set of media types (a frozenset of str)"),
    ("verify_html", (bool,), "a bool"),
    ("sniff_types", (AbstractSet,), "a set of media types (a frozenset of str)"),
)


@dataclasses.dataclass(frozen=True, slots=True)
class FetchOptions:
    """How pages are fetched (every field has a default; :func:`fetch`, :func:`scrape
    <htmlstream.scrape.scrape>` and the command line take them as keyword arguments).

    Attributes:
        timeout: the page's deadline in seconds: connecting, redirects, retries and their waits,
            and reading the whole body all fit in it (None: no deadline).
        connect_timeout: the most seconds one connection takes to open.
        read_timeout: the most seconds without a byte from the server.
        retries: how many times a page is requested again after a connection error, a connect
            or read timeout, or a status of ``retry_statuses`` (0: never).
        backoff: the first wait before a retry, in seconds; it doubles on each retry (with
            jitter: a random 50-100 % of it), up to ``max_backoff``.
        max_backoff: the longest wait between two attempts.
        max_retry_after: the longest ``Retry-After`` (seconds or an HTTP date) honoured: a
            server asking for a longer wait fails the page at once (so does one asking for more
            than is left of the deadline).
        retry_statuses: the statuses retried.
        max_bytes: the most body bytes read, as received and once decompressed: a larger page
            (or a decompression bomb) fails with :class:`~htmlstream.scrape.BodyTooLarge`
            (None: no limit).
        max_redirects: the most redirects followed; a redirect back to a URL already visited
            is a :class:`~htmlstream.scrape.RedirectLoop`.
        user_agent: the ``User-Agent`` header, and the name robots.txt rules are matched
            against (its product token, before ``/``).
        robots: honour robots.txt (fetched once per origin and cached for the run).
        headers: further request headers.
        verify: verify TLS certificates (httpx's ``verify``).
        html_types: the ``Content-Type`` essences scraped as HTML (their first bytes sniffed:
            JSON, an image or binary data served as one of them is not a page); any other type
            fails the page with :class:`~htmlstream.scrape.NotHTML` before its body is read
            (:func:`fetch` does not check: it gives any response).
        verify_html: sniff the first bytes of an ``html_types`` response (False: scrape it
            whatever it holds; a page that starts with text before its first tag, as a PHP
            warning printed before ``<!DOCTYPE html>``, is not HTML to the sniffing).
        sniff_types: further types scraped when their first bytes look like HTML (as a missing
            ``Content-Type`` is): e.g. ``{"text/plain"}`` for sites that mislabel pages.
    """

    timeout: float | None = 60.0
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 120.0
    retry_statuses: frozenset[int] = RETRY_STATUSES
    max_bytes: int | None = 32 * 1024 * 1024
    max_redirects: int = 10
    user_agent: str = DEFAULT_USER_AGENT
    robots: bool = True
    headers: Mapping[str, str] | None = None
    verify: bool = True
    html_types: frozenset[str] = frozenset({"text/html", "application/xhtml+xml"})
    verify_html: bool = True
    sniff_types: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for name, types, accepted in _FIELD_TYPES:
            value = getattr(self, name)
            # (a bool is an int to isinstance: not a number of seconds or retries here)
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise TypeError(f"FetchOptions(): {name} must be {accepted}, not "
                                f"{type(value).__name__}")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"timeout must be > 0 or None, not {self.timeout!r}")
        if self.retries < 0 or self.max_redirects < 0:
            raise ValueError("retries and max_redirects must be >= 0")
        if self.max_bytes is not None and self.max_bytes <= 0:
            raise ValueError(f"max_bytes must be > 0 or None, not {self.max_bytes!r}")
