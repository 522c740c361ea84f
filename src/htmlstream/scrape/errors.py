"""The errors of :mod:`htmlstream.scrape`: one class per way a page can fail, all
:class:`ScrapeError` (an :class:`htmlstream.HtmlStreamError`), each with the URL it concerns and a
short ``kind`` that error records carry."""

from __future__ import annotations

from typing import ClassVar

from htmlstream.errors import HtmlStreamError

__all__ = [
    "BodyTooLarge",
    "ConnectionFailed",
    "ContentDecodingFailed",
    "ExtractionFailed",
    "FetchTimeout",
    "HTTPStatusError",
    "InvalidURL",
    "NotHTML",
    "RedirectLoop",
    "RobotsDisallowed",
    "ScrapeError",
    "TooManyRedirects",
]


class ScrapeError(HtmlStreamError):
    """A page could not be fetched or read.

    Attributes:
        url: the URL asked for (the page's, not a redirect's).
        kind: a short name of the failure (``"timeout"``, ``"connection"``, ``"status"``...),
            the class's, as error records give it.
        attempts: how many times the page was requested (0 when never).
    """

    kind: ClassVar[str] = "error"

    def __init__(self, message: str, url: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.attempts = 0


class InvalidURL(ScrapeError):
    """The URL is not an ``http://`` or ``https://`` URL with a host."""

    kind = "invalid_url"


class FetchTimeout(ScrapeError):
    """Connecting, waiting for the next bytes, or the whole page took too long.

    Attributes:
        phase: ``"connect"``, ``"read"`` (no byte for ``read_timeout`` seconds) or
            ``"deadline"`` (the page's ``timeout`` passed, e.g. a server trickling bytes).
    """

    kind = "timeout"

    def __init__(self, message: str, url: str = "", phase: str = "deadline") -> None:
        super().__init__(message, url)
        self.phase = phase


class ConnectionFailed(ScrapeError):
    """The connection could not be made, or broke (refused, reset, closed early, TLS, DNS)."""

    kind = "connection"


class HTTPStatusError(ScrapeError):
    """The final response's status is not 2xx (after the retries, for a retried status).

    Attributes:
        status: the status code.
        retry_after: the ``Retry-After`` the server asked for, in seconds (None when none).
        final_url: the URL that answered (after redirects).
    """

    kind = "status"

    def __init__(self, message: str, url: str = "", status: int = 0,
                 retry_after: float | None = None, final_url: str | None = None) -> None:
        super().__init__(message, url)
        self.status = status
        self.retry_after = retry_after
        self.final_url = final_url


class TooManyRedirects(ScrapeError):
    """More redirects than ``max_redirects``."""

    kind = "redirects"


class RedirectLoop(TooManyRedirects):
    """A redirect leads back to a URL already visited for this page."""

    kind = "redirect_loop"


class BodyTooLarge(ScrapeError):
    """The body (as received, or once decompressed) is larger than ``max_bytes``: a huge page
    or a decompression bomb.

    Attributes:
        limit: the limit in bytes.
    """

    kind = "too_large"

    def __init__(self, message: str, url: str = "", limit: int = 0) -> None:
        super().__init__(message, url)
        self.limit = limit


class ContentDecodingFailed(ScrapeError):
    """The compressed body is corrupt, truncated, or in a content coding not supported."""

    kind = "decoding"


class NotHTML(ScrapeError):
    """The response is not an HTML page (an image, a PDF, JSON, binary data...), by its
    ``Content-Type`` or, when that is missing or says ``text/html`` wrongly, by sniffing its
    first bytes, as :func:`htmlstream.http.decide` decides what to rewrite.  Not retried; the
    body is not read beyond those first bytes.

    Attributes:
        mime_type: the ``Content-Type`` essence (None when there was none).
        reason: why, as :attr:`htmlstream.http.Decision.reason` gives it (``"not HTML:
            Content-Type image/png"``, ``"served as text/html but not HTML: JSON"``...).
    """

    kind = "not_html"

    def __init__(self, message: str, url: str = "", mime_type: str | None = None,
                 reason: str = "") -> None:
        super().__init__(message, url)
        self.mime_type = mime_type
        self.reason = reason


class RobotsDisallowed(ScrapeError):
    """The site's robots.txt disallows the URL for the user agent (or could not be read: a
    5xx answer means "disallow all" in RFC 9309)."""

    kind = "robots"


class ExtractionFailed(ScrapeError):
    """The extraction raised on the page (an encoding the engine cannot read, a buffer limit):
    that exception is the ``__cause__``."""

    kind = "extraction"
