"""htmlstream.scrape against a misbehaving local server (tests/scrape_server.py): deadlines,
stalls, resets, 503/429 with Retry-After, redirect loops, a gzip bomb, a wrong charset, a huge
page, robots.txt, responses that are not pages (an image, JSON, a PDF, binary data; by their
type or served wrongly as text/html), a br-encoded page; every connection closed (the server's
count of open connections returns to zero after every test) and no file descriptor leaked.

The extraction goes through the contract of ``htmlstream.extraction`` only (Extractor, Field)."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import itertools
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("httpx")
pytest.importorskip("protego")

from chunking import chunkings
from htmlstream.extraction import extract
from htmlstream.scrape import (
    BodyTooLarge,
    ConnectionFailed,
    ContentDecodingFailed,
    FetchTimeout,
    HTTPStatusError,
    InvalidURL,
    NotHTML,
    Page,
    RedirectLoop,
    RobotsDisallowed,
    ScrapeError,
    TooManyRedirects,
    afetch,
    ascrape,
    fetch,
    scrape,
)
from scrape_server import (
    FaultServer,
    Request,
    gz,
    gzip_bomb,
    page,
    reset,
    send,
    send_chunked,
    until_closed,
)

brotli: Any
try:
    import brotli
except ImportError:  # pragma: no cover - a dev dependency (htmlstream[brotli])
    brotli = None
zstd: Any
try:
    from backports import zstd
except ImportError:  # pragma: no cover - a dev dependency (htmlstream[zstd]; 3.14 has its own)
    zstd = None

FIELDS = {"title": "title::text", "links": "a::attr(href)*"}
#: Short timings: every test runs in well under a second or two.
FAST = {"timeout": 2.0, "backoff": 0.01, "max_backoff": 0.05, "robots": False}

BIG_BODY = b"<p>" + b"x" * 1000 + b"</p>"


def fds() -> dict[str, str]:
    """The open file descriptors and what they are."""
    out = {}
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            out[fd] = os.readlink(f"/proc/self/fd/{fd}")
    return out


def leaked(before: dict[str, str]) -> dict[str, str]:
    """The descriptors open now that were not before."""
    return {fd: what for fd, what in fds().items() if before.get(fd) != what}


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer() as s:
        install_routes(s)
        install_not_html_routes(s)
        yield s


@pytest.fixture(autouse=True)
def all_closed(server: FaultServer) -> Iterator[None]:
    """After every test, every connection the client opened is closed."""
    before = fds()
    yield
    assert server.wait_closed(), f"{server.open} connection(s) left open"
    assert not leaked(before), "a file descriptor leaked"


def install_routes(s: FaultServer) -> None:
    @s.route("/robots.txt")
    async def robots(req: Request, w: object) -> bool:
        return await send(w, 200, b"User-agent: *\nDisallow: /private\n\n"  # type: ignore[arg-type]
                          b"User-agent: nosy\nDisallow: /\n",
                          [("Content-Type", "text/plain")])

    for n in range(4):
        body = page(f"Page {n}", f'<a href="/p{n}/a">a</a><a href="/p{n}/b">b</a>')

        @s.route(f"/p{n}")
        async def plain(req: Request, w: object, body: bytes = body) -> bool:
            return await send(w, 200, body)  # type: ignore[arg-type]

    @s.route("/private")
    async def private(req: Request, w: object) -> bool:
        return await send(w, 200, page("secret"))  # type: ignore[arg-type]

    @s.route("/chunked")
    async def chunked(req: Request, w: object) -> bool:
        # The page in the chunking the query names (index into chunkings()).
        data = page("Chunked", '<a href="/x">x</a>' * 3)
        cuts = chunkings(data, random_splits=3, split_samples=4)
        return await send_chunked(w, cuts[int(req.query) % len(cuts)])  # type: ignore[arg-type]

    @s.route("/slow")
    async def slow(req: Request, w: object) -> bool:
        # A byte every 50 ms: never a read timeout, only the page's deadline ends it.
        data = page("Slow", "x" * 10_000)
        return await send_chunked(w, (data[i:i + 1] for i in range(len(data))),  # type: ignore[arg-type]
                                  delay=0.05)

    @s.route("/stall")
    async def stall(req: Request, w: object) -> bool:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"  # type: ignore[attr-defined]
                b"Content-Length: 1000\r\n\r\n<html><head>")
        return await until_closed(req)

    @s.route("/stall-headers")
    async def stall_headers(req: Request, w: object) -> bool:
        return await until_closed(req)

    @s.route("/reset")
    async def do_reset(req: Request, w: object) -> bool:
        reset(w)  # type: ignore[arg-type]
        return False

    @s.route("/reset-body")
    async def reset_body(req: Request, w: object) -> bool:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"  # type: ignore[attr-defined]
                b"Content-Length: 100000\r\n\r\n<html><body>" + b"x" * 5000)
        await w.drain()  # type: ignore[attr-defined]
        await asyncio.sleep(0.05)
        reset(w)  # type: ignore[arg-type]
        return False

    @s.route("/flaky")
    async def flaky(req: Request, w: object) -> bool:
        # Resets twice per key, then answers.
        if s.count("flaky" + req.query) <= 2:
            reset(w)  # type: ignore[arg-type]
            return False
        return await send(w, 200, page("Flaky"))  # type: ignore[arg-type]

    @s.route("/busy")
    async def busy(req: Request, w: object) -> bool:
        # 503 with the Retry-After the query gives ("0", "1", "date1", "3600"), once per key.
        if s.count("busy" + req.query) <= 1:
            value = req.query
            if value == "date1":
                value = email.utils.formatdate(time.time() + 1.5, usegmt=True)
            return await send(w, 503, b"busy", [("Retry-After", value)])  # type: ignore[arg-type]
        return await send(w, 200, page("Busy"))  # type: ignore[arg-type]

    @s.route("/ratelimit")
    async def ratelimit(req: Request, w: object) -> bool:
        if s.count("ratelimit" + req.query) <= 2:
            return await send(w, 429, b"slow down")  # type: ignore[arg-type]
        return await send(w, 200, page("Limited"))  # type: ignore[arg-type]

    @s.route("/always503")
    async def always503(req: Request, w: object) -> bool:
        return await send(w, 503, b"down")  # type: ignore[arg-type]

    @s.route("/missing")
    async def missing(req: Request, w: object) -> bool:
        return await send(w, 404, b"gone")  # type: ignore[arg-type]

    @s.route("/loop-a")
    async def loop_a(req: Request, w: object) -> bool:
        return await send(w, 302, b"", [("Location", "/loop-b")])  # type: ignore[arg-type]

    @s.route("/loop-b")
    async def loop_b(req: Request, w: object) -> bool:
        return await send(w, 301, b"", [("Location", "/loop-a")])  # type: ignore[arg-type]

    @s.route("/hop")
    async def hop(req: Request, w: object) -> bool:
        n = int(req.query)
        target = f"/hop?{n - 1}" if n > 1 else "/p0"
        return await send(w, 302, b"", [("Location", target)])  # type: ignore[arg-type]

    bomb = gzip_bomb(64 << 20)

    @s.route("/bomb")
    async def do_bomb(req: Request, w: object) -> bool:
        return await send(w, 200, bomb, [("Content-Encoding", "gzip")])  # type: ignore[arg-type]

    gzipped = gz(page("Zipped", '<a href="/z">z</a>'))

    @s.route("/gzip")
    async def do_gzip(req: Request, w: object) -> bool:
        return await send(w, 200, gzipped, [("Content-Encoding", "gzip")])  # type: ignore[arg-type]

    cafe = page("Café", charset="utf-8")

    @s.route("/charset-wrong")
    async def charset_wrong(req: Request, w: object) -> bool:
        # UTF-8 bytes labelled windows-1252 by the server: the transport's label wins (as in
        # browsers), so the title reads as windows-1252.
        return await send(w, 200, cafe,  # type: ignore[arg-type]
                          [("Content-Type", "text/html; charset=windows-1252")])

    @s.route("/charset-bogus")
    async def charset_bogus(req: Request, w: object) -> bool:
        # A label that names no encoding: ignored, the document's <meta charset> decides.
        return await send(w, 200, cafe,  # type: ignore[arg-type]
                          [("Content-Type", "text/html; charset=x-no-such-thing")])

    latin = "<html><head><title>Café</title></head></html>".encode("windows-1252")

    @s.route("/charset-header")
    async def charset_header(req: Request, w: object) -> bool:
        return await send(w, 200, latin,  # type: ignore[arg-type]
                          [("Content-Type", "text/html; charset=iso-8859-1")])

    @s.route("/huge")
    async def huge(req: Request, w: object) -> bool:
        # An endless page (bounded by MAX_WAIT on the server's side).
        def pieces() -> Iterator[bytes]:
            yield b"<html><head><title>Huge</title></head><body>"
            while True:
                yield BIG_BODY * 16
        return await send_chunked(w, pieces())  # type: ignore[arg-type]

    @s.route("/head-only")
    async def head_only(req: Request, w: object) -> bool:
        # A 2 MB page sent in 16 KiB writes: a head-only extraction stops after the first.
        data = page("Head", "<p>" + "y" * 2_000_000 + "</p>",
                    head='<meta property="og:title" content="OG">'
                         '<link rel="canonical" href="https://example.org/c">')
        return await send_chunked(  # type: ignore[arg-type]
            w, (data[i:i + 16384] for i in range(0, len(data), 16384)), delay=0.001)

    @s.route("/slowpage")
    async def slowpage(req: Request, w: object) -> bool:
        await asyncio.sleep(0.2)
        return await send(w, 200, page("Slowpage"))  # type: ignore[arg-type]

    @s.route("/ua")
    async def ua(req: Request, w: object) -> bool:
        return await send(w, 200, page(req.headers.get("user-agent", "")))  # type: ignore[arg-type]


def one(server: FaultServer, path: str, **options: object) -> Page:
    pages = list(scrape([server.url(path)], FIELDS, on_error="skip", **{**FAST, **options}))
    assert len(pages) == 1
    return pages[0]


# ---------------------------------------------------------------------------- basics

def test_scrape_records(server: FaultServer) -> None:
    urls = [server.url(f"/p{n}") for n in range(4)]
    pages = list(scrape(urls, FIELDS, **FAST))
    assert sorted(p.url for p in pages) == sorted(urls)
    for p in pages:
        n = p.url[-1]
        assert p.ok and p.status == 200 and p.final_url == p.url and p.attempts == 1
        assert p.fields == {"title": f"Page {n}", "links": [f"/p{n}/a", f"/p{n}/b"]}
        assert p.record == {"url": p.url, "final_url": p.url, "status": 200, "error": None,
                            **p.fields}
        assert p.complete


def test_chunkings_same_record(server: FaultServer) -> None:
    # The page cut into many HTTP chunks (each chunking of tests/chunking.py): one record.
    urls = [server.url(f"/chunked?{i}") for i in range(12)]
    records = {tuple(sorted((k, str(v)) for k, v in p.fields.items()))
               for p in scrape(urls, FIELDS, **FAST)}
    assert records == {(("links", "['/x', '/x', '/x']"), ("title", "Chunked"))}


def test_fetch_context_manager(server: FaultServer) -> None:
    with fetch(server.url("/gzip"), **FAST) as response:
        assert response.status == 200 and response.encoding == "utf-8"
        body = b"".join(response.iter_bytes())
    assert body == page("Zipped", '<a href="/z">z</a>')
    assert response.bytes_read < len(body) == response.decoded_bytes


def test_fetch_response_reads_like_a_file(server: FaultServer) -> None:
    expected = page("Zipped", '<a href="/z">z</a>')
    with fetch(server.url("/gzip"), **FAST) as response:
        assert response.read(10) == expected[:10]
        assert b"".join(response) == expected[10:]
        assert response.read(10) == b""
    # The extraction reads it as a binary file or an iterable of chunks.
    with fetch(server.url("/p3"), **FAST) as response:
        assert extract(response, FIELDS) == {"title": "Page 3", "links": ["/p3/a", "/p3/b"]}


def test_fetch_closes_on_exception(server: FaultServer) -> None:
    with pytest.raises(KeyError), fetch(server.url("/huge"), **FAST) as response:
        next(iter(response))
        raise KeyError("user code failed")


def test_fetch_raises_status(server: FaultServer) -> None:
    with pytest.raises(HTTPStatusError) as info, fetch(server.url("/missing"), **FAST):
        pass
    assert info.value.status == 404 and info.value.attempts == 1


def test_bad_field_spec_fails_before_fetching(server: FaultServer) -> None:
    n = len(server.requests)
    with pytest.raises(ValueError):
        list(scrape([server.url("/p0")], {"url": "title"}, **FAST))
    assert len(server.requests) == n


def test_invalid_url_is_an_error_record(server: FaultServer) -> None:
    pages = list(scrape(["ftp://example.org/x", "not a url"], FIELDS, on_error="skip", **FAST))
    assert all(isinstance(p.error, InvalidURL) for p in pages)
    assert pages[0].record["error"].startswith("invalid_url: ")


# ---------------------------------------------------------------------------- time

def test_trickle_hits_the_page_deadline(server: FaultServer) -> None:
    # A byte every 50 ms never trips the read timeout; the page's deadline ends it, unretried.
    p = one(server, "/slow", timeout=0.5, read_timeout=5.0, retries=3)
    assert isinstance(p.error, FetchTimeout) and p.error.phase == "deadline"
    assert p.attempts == 1 and 0 < p.bytes_read < 100
    assert 0.45 < p.elapsed < 1.0


def test_stall_after_headers_is_a_read_timeout(server: FaultServer) -> None:
    p = one(server, "/stall", read_timeout=0.2, retries=1)
    assert isinstance(p.error, FetchTimeout) and p.error.phase == "read"
    assert p.attempts == 2 and p.status == 200


def test_stall_before_headers(server: FaultServer) -> None:
    p = one(server, "/stall-headers", read_timeout=0.2, retries=0)
    assert isinstance(p.error, FetchTimeout) and p.error.phase == "read"
    assert p.status is None and p.elapsed < 0.8


def test_deadline_covers_retries(server: FaultServer) -> None:
    # Read timeouts retried until the page's deadline: never longer than the deadline.
    p = one(server, "/stall-headers", timeout=0.6, read_timeout=0.25, retries=10)
    assert isinstance(p.error, FetchTimeout)
    assert 2 <= p.attempts <= 3 and p.elapsed < 0.8


# ---------------------------------------------------------------------------- failures, retries

def test_reset_retried_then_reported(server: FaultServer) -> None:
    p = one(server, "/reset", retries=2)
    assert isinstance(p.error, ConnectionFailed) and p.attempts == 3
    assert p.record["error"].startswith("connection: ")


def test_reset_mid_body(server: FaultServer) -> None:
    p = one(server, "/reset-body", retries=1)
    assert isinstance(p.error, ConnectionFailed) and p.attempts == 2 and p.status == 200


def test_flaky_succeeds_on_third_attempt(server: FaultServer) -> None:
    p = one(server, "/flaky?a", retries=3)
    assert p.ok and p.attempts == 3 and p.fields["title"] == "Flaky"
    p = one(server, "/flaky?b", retries=1)
    assert isinstance(p.error, ConnectionFailed) and p.attempts == 2


def test_503_retry_after_seconds(server: FaultServer) -> None:
    p = one(server, "/busy?0")
    assert p.ok and p.attempts == 2 and p.fields["title"] == "Busy"
    p = one(server, "/busy?1", backoff=0.0)
    assert p.ok and p.attempts == 2
    assert p.elapsed >= 0.95    # the server's 1 s, not the 0 s backoff


def test_503_retry_after_date(server: FaultServer) -> None:
    p = one(server, "/busy?date1", timeout=4.0)
    assert p.ok and p.attempts == 2 and p.elapsed >= 0.3


def test_retry_after_too_long_gives_up_at_once(server: FaultServer) -> None:
    p = one(server, "/busy?3600", max_retry_after=10)
    assert isinstance(p.error, HTTPStatusError) and p.error.status == 503
    assert p.error.retry_after == 3600 and p.attempts == 1 and "max_retry_after" in str(p.error)
    assert p.elapsed < 0.5
    # A wait longer than what is left of the deadline: the same.
    p = one(server, "/busy?5", timeout=1.0)
    assert isinstance(p.error, HTTPStatusError) and "deadline" in str(p.error)


def test_429_backoff(server: FaultServer) -> None:
    p = one(server, "/ratelimit?a", retries=3)
    assert p.ok and p.attempts == 3
    p = one(server, "/ratelimit?b", retries=1)
    assert isinstance(p.error, HTTPStatusError) and p.error.status == 429 and p.attempts == 2


def test_backoff_grows(server: FaultServer) -> None:
    p = one(server, "/always503", retries=3, backoff=0.1, max_backoff=1.0)
    # Waits of 0.1, 0.2, 0.4 s, each 50-100 %: 0.35-0.7 s.
    assert isinstance(p.error, HTTPStatusError) and p.attempts == 4
    assert 0.35 <= p.elapsed < 1.2


def test_404_not_retried(server: FaultServer) -> None:
    p = one(server, "/missing", retries=3)
    assert isinstance(p.error, HTTPStatusError) and p.error.status == 404 and p.attempts == 1
    assert p.record["status"] == 404 and p.record["title"] is None


# ---------------------------------------------------------------------------- redirects

def test_redirects_followed(server: FaultServer) -> None:
    p = one(server, "/hop?3")
    assert p.ok and p.final_url == server.url("/p0") and p.fields["title"] == "Page 0"


def test_too_many_redirects(server: FaultServer) -> None:
    p = one(server, "/hop?3", max_redirects=2)
    assert isinstance(p.error, TooManyRedirects) and not isinstance(p.error, RedirectLoop)


def test_redirect_loop(server: FaultServer) -> None:
    p = one(server, "/loop-a")
    assert isinstance(p.error, RedirectLoop) and "/loop-b" in str(p.error)
    assert p.record["error"].startswith("redirect_loop: ")


# ---------------------------------------------------------------------------- sizes

def test_gzip_bomb_stopped(server: FaultServer) -> None:
    p = one(server, "/bomb", max_bytes=1_000_000)
    assert isinstance(p.error, BodyTooLarge) and "decompressed" in str(p.error)
    assert p.bytes_read < 100_000                       # the bomb is ~64 KB for 64 MB
    assert p.decoded_bytes <= 1_000_000 + 65536         # one decompression step past the limit
    assert p.elapsed < 1.0


def test_gzip_page(server: FaultServer) -> None:
    p = one(server, "/gzip")
    assert p.ok and p.fields == {"title": "Zipped", "links": ["/z"]}


def test_huge_page(server: FaultServer) -> None:
    p = one(server, "/huge", max_bytes=200_000)
    assert isinstance(p.error, BodyTooLarge) and p.attempts == 1
    assert 200_000 < p.bytes_read < 300_000


# ---------------------------------------------------------------------------- charsets

def test_charset_from_header_wins(server: FaultServer) -> None:
    p = one(server, "/charset-wrong")
    assert p.encoding == "windows-1252" and p.fields["title"] == "CafÃ©"
    p = one(server, "/charset-header")
    assert p.encoding == "windows-1252" and p.fields["title"] == "Café"


def test_unknown_charset_label_ignored(server: FaultServer) -> None:
    p = one(server, "/charset-bogus")
    assert p.encoding is None and p.fields["title"] == "Café"


# ---------------------------------------------------------------------------- robots.txt

def test_robots_disallow(server: FaultServer) -> None:
    before = server.paths().count("/robots.txt")
    pages = {p.url: p for p in scrape([server.url("/private"), server.url("/p1"),
                                       server.url("/p2")], FIELDS, on_error="skip",
                                      **{**FAST, "robots": True})}
    assert isinstance(pages[server.url("/private")].error, RobotsDisallowed)
    assert pages[server.url("/p1")].ok and pages[server.url("/p2")].ok
    assert server.paths().count("/robots.txt") == before + 1     # once per origin and run
    # robots=False fetches it anyway; a user agent the file shuts out gets nothing.
    assert one(server, "/private", robots=False).ok
    p = one(server, "/p1", robots=True, user_agent="nosy/1.0")
    assert isinstance(p.error, RobotsDisallowed) and p.record["error"].startswith("robots: ")


def test_user_agent_sent(server: FaultServer) -> None:
    assert one(server, "/ua", user_agent="probe/2.0").fields["title"] == "probe/2.0"
    assert one(server, "/ua").fields["title"].startswith("htmlstream/")


# ---------------------------------------------------------------------------- on_error

MIXED = ["/p0", "/missing", "/reset", "/p1"]


def test_on_error_skip(server: FaultServer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="htmlstream.scrape"):
        pages = list(scrape([server.url(p) for p in MIXED], FIELDS, on_error="skip",
                            **{**FAST, "retries": 0}))
    assert len(pages) == 4
    # The run ends with one summary line (the failure rule), not one per page.
    [line] = [r.getMessage() for r in caplog.records if r.name == "htmlstream.scrape"]
    assert line.startswith("2 of 4 pages failed: ") and "1 HTTPStatusError" in line
    assert "1 ConnectionFailed" in line
    errors = {p.url.rsplit("/", 1)[1]: p.error for p in pages}
    assert errors["p0"] is None and errors["p1"] is None
    assert isinstance(errors["missing"], HTTPStatusError)
    assert isinstance(errors["reset"], ConnectionFailed)


def test_every_page_failing_is_said_not_raised(server: FaultServer,
                                              caplog: pytest.LogCaptureFixture) -> None:
    # Each failed page was given to the caller: all failing alike is said, in one line.
    with caplog.at_level(logging.WARNING, logger="htmlstream.scrape"):
        pages = list(scrape([server.url("/missing")] * 2, FIELDS, on_error="skip",
                            **{**FAST, "retries": 0}))
    assert [p.ok for p in pages] == [False, False]
    assert [r.getMessage() for r in caplog.records if r.name == "htmlstream.scrape"] == [
        f"all 2 pages failed with HTTPStatusError; the first: HTTPStatusError: {pages[0].error}"]


def test_on_error_callable(server: FaultServer) -> None:
    seen: list[Page] = []
    pages = list(scrape([server.url(p) for p in MIXED], FIELDS, on_error=seen.append,
                        **{**FAST, "retries": 0}))
    assert len(pages) == 4 and len(seen) == 2 and all(not p.ok for p in seen)


def test_on_error_raise_stops_the_run(server: FaultServer) -> None:
    with pytest.raises(ScrapeError) as info:
        list(scrape([server.url(p) for p in ["/missing", *[f"/p{n}" for n in range(4)]]],
                    FIELDS, concurrency=1, **{**FAST, "retries": 0}))
    assert isinstance(info.value, HTTPStatusError) and info.value.url.endswith("/missing")


def test_on_error_invalid() -> None:
    with pytest.raises(ValueError):
        list(scrape([], FIELDS, on_error="ignore"))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- early stop

HEAD_FIELDS = {"title": "title::text",
               "og_title": 'meta[property="og:title"]::attr(content)',
               "canonical": 'link[rel="canonical"]::attr(href)'}


def test_early_stop_reads_little(server: FaultServer) -> None:
    pages = list(scrape([server.url("/head-only")], HEAD_FIELDS, **FAST))
    p = pages[0]
    assert p.fields == {"title": "Head", "og_title": "OG", "canonical": "https://example.org/c"}
    assert not p.complete and p.bytes_read < 100_000     # of a 2 MB page


def test_break_closes_everything(server: FaultServer) -> None:
    urls = [server.url("/huge")] * 3 + [server.url("/slowpage")] * 3
    for first in scrape(urls, FIELDS, concurrency=6, per_host=6, on_error="skip",
                        **{**FAST, "max_bytes": 10**9}):
        assert first.fields["title"] == "Slowpage"   # the first to complete; /huge goes on
        break


# ---------------------------------------------------------------------------- concurrency, async

def test_concurrency(server: FaultServer) -> None:
    server.max_in_flight = 0
    pages = list(scrape([server.url("/slowpage")] * 8, FIELDS, concurrency=8, per_host=8,
                        **FAST))
    assert len(pages) == 8 and all(p.ok for p in pages)
    assert server.max_in_flight == 8            # all eight at once


def test_per_host_limit_and_delay(server: FaultServer) -> None:
    server.max_in_flight = 0
    list(scrape([server.url("/slowpage")] * 6, FIELDS, concurrency=6, per_host=2, **FAST))
    assert server.max_in_flight == 2
    n = len(server.requests)
    list(scrape([server.url(f"/p{i}") for i in range(4)], FIELDS, concurrency=4, per_host=4,
                host_delay=0.1, **FAST))
    starts = sorted(r.time for r in server.requests[n:])
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    # 0.1 s apart as the client starts them (the server sees them with connection jitter).
    assert len(gaps) == 3 and min(gaps) > 0.05 and starts[-1] - starts[0] >= 0.28, gaps


def test_ascrape(server: FaultServer) -> None:
    async def main() -> list[Page]:
        return [p async for p in ascrape([server.url(f"/p{n}") for n in range(4)]
                                         + [server.url("/missing")], FIELDS,
                                         on_error="skip", **FAST)]
    pages = asyncio.run(main())
    assert len(pages) == 5 and sum(p.ok for p in pages) == 4


def test_ascrape_break_and_raise(server: FaultServer) -> None:
    async def main() -> None:
        async for _ in ascrape([server.url("/huge")] * 4, FIELDS, on_error="skip",
                               **{**FAST, "max_bytes": 10**9, "timeout": 0.3}):
            break
        with pytest.raises(HTTPStatusError):
            async for _ in ascrape([server.url("/missing"), server.url("/huge")], FIELDS,
                                   concurrency=1, **FAST):
                pass
    asyncio.run(main())


def test_no_fd_leak_over_many_faults(server: FaultServer) -> None:
    paths = ["/p0", "/reset", "/stall", "/missing", "/loop-a", "/bomb", "/huge", "/gzip",
             "/slow", "/head-only"]
    before = fds()
    for _ in range(2):
        pages = list(scrape([server.url(p) for p in paths], FIELDS, on_error="skip",
                            concurrency=4, per_host=4,
                            **{**FAST, "timeout": 0.5, "read_timeout": 0.2, "retries": 1,
                               "max_bytes": 1_000_000}))
        assert len(pages) == len(paths)
    assert server.wait_closed()
    assert not leaked(before)


# ---------------------------------------------------------------------------- robots.txt answers

@pytest.mark.parametrize(("status", "allowed"), [(404, True), (403, True), (500, False),
                                                 (503, False)])
def test_robots_status(status: int, allowed: bool) -> None:
    # RFC 9309: a 4xx robots.txt allows everything, a 5xx one disallows everything.
    with FaultServer() as s:
        @s.route("/robots.txt")
        async def robots(req: Request, w: object) -> bool:
            return await send(w, status, b"User-agent: *\nDisallow: /\n")  # type: ignore[arg-type]

        @s.route("/")
        async def home(req: Request, w: object) -> bool:
            return await send(w, 200, page("Home"))  # type: ignore[arg-type]

        p = one(s, "/", robots=True)
        assert p.ok is allowed
        if not allowed:
            assert isinstance(p.error, RobotsDisallowed) and f"answered {status}" in str(p.error)
        assert s.wait_closed()


# ---------------------------------------------------------------------------- async API

def test_afetch_and_own_client(server: FaultServer) -> None:
    httpx = pytest.importorskip("httpx")

    async def main() -> None:
        async with afetch(server.url("/p1"), **FAST) as response:
            assert response.status == 200
            body = await response.aread()
        assert b"<title>Page 1</title>" in body and response.complete
        # A client of the caller's is used and left open.
        async with httpx.AsyncClient() as client:
            pages = [p async for p in ascrape([server.url("/p2")], FIELDS, client=client,
                                              **FAST)]
            assert pages[0].fields["title"] == "Page 2" and not client.is_closed
    asyncio.run(main())


def test_robots_crawl_delay() -> None:
    with FaultServer() as s:
        @s.route("/robots.txt")
        async def robots(req: Request, w: object) -> bool:
            return await send(w, 200, b"User-agent: *\nCrawl-delay: 0.3\n",  # type: ignore[arg-type]
                              [("Content-Type", "text/plain")])

        @s.route("/")
        async def home(req: Request, w: object) -> bool:
            return await send(w, 200, page("Home"))  # type: ignore[arg-type]

        pages = list(scrape([s.url("/")] * 3, FIELDS, per_host=3, concurrency=3,
                            **{**FAST, "robots": True}))
        assert all(p.ok for p in pages)
        starts = [r.time for r in s.requests if r.path == "/"]
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert len(gaps) == 2 and min(gaps) > 0.2, gaps
        assert s.wait_closed()


# ---------------------------------------------------------------------------- not HTML

#: A PNG image (its signature and IHDR chunk, then 256 KiB of data).
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 1024
JSON = b'{"title": "<title>not a page</title>", "items": [' + b'"x", ' * 200 + b'"y"]}'
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + b"0" * 4096
#: Binary data (NUL bytes) with no signature.
BINARY = bytes(range(256)) * 64
UNTYPED = page("Untyped", '<a href="/u">u</a>' + "<p>text</p>" * 100)
#: What the chunked routes send (each cut in every chunking of tests/chunking.py).
SMALL = {"json-html": (JSON, "text/html"), "png-html": (PNG[:1500], "text/html"),
         "binary-none": (BINARY[:1500], None), "html-none": (UNTYPED, None),
         "html-plain": (UNTYPED, "text/plain")}
N_CUTS = 12


def install_not_html_routes(s: FaultServer) -> None:
    def route(path: str, body: bytes, headers: list[tuple[str, str]]) -> None:
        @s.route(path)
        async def handler(req: Request, w: object) -> bool:
            # (a raw response: send() would add a Content-Type when there is none)
            w.write(b"HTTP/1.1 200 OK\r\n" + b"".join(  # type: ignore[attr-defined]
                f"{k}: {v}\r\n".encode() for k, v in headers)
                + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await w.drain()  # type: ignore[attr-defined]
            return True

    route("/png", PNG, [("Content-Type", "image/png")])
    route("/png-as-html", PNG, [("Content-Type", "text/html; charset=utf-8")])
    route("/json-as-html", JSON, [("Content-Type", "text/html")])
    route("/pdf", PDF, [("Content-Type", "application/pdf")])
    route("/pdf-untyped", PDF, [])
    route("/binary-untyped", BINARY * 16, [])
    route("/html-untyped", UNTYPED, [])
    route("/xhtml", UNTYPED, [("Content-Type", "application/xhtml+xml")])
    route("/empty", b"", [("Content-Type", "text/html")])
    route("/text-first", b"Warning: x in y.php on line 3\n" + UNTYPED,
          [("Content-Type", "text/html")])

    for name, (body, ctype) in SMALL.items():
        cuts = chunkings(body, random_splits=4, split_samples=6)[:N_CUTS]

        @s.route(f"/cut-{name}")
        async def cut(req: Request, w: object, cuts: list[list[bytes]] = cuts,
                      ctype: str | None = ctype) -> bool:
            return await send_chunked(w, cuts[int(req.query) % len(cuts)],  # type: ignore[arg-type]
                                      content_type=ctype)

    if brotli is not None:
        compressed = brotli.compress(page("Brotli", '<a href="/b">b</a>'))
        route("/br", compressed, [("Content-Type", "text/html"), ("Content-Encoding", "br")])
        route("/br-truncated", compressed[:-4],
              [("Content-Type", "text/html"), ("Content-Encoding", "br")])
        route("/br-corrupt", b"\xff" * 64,
              [("Content-Type", "text/html"), ("Content-Encoding", "br")])
    if zstd is not None:
        route("/zstd", zstd.compress(page("Zstd", '<a href="/zs">z</a>')),
              [("Content-Type", "text/html"), ("Content-Encoding", "zstd")])
    route("/compress", b"\x1f\x9d" + b"x" * 64,
          [("Content-Type", "text/html"), ("Content-Encoding", "compress")])


@pytest.mark.parametrize(("path", "mime", "what"), [
    ("/png", "image/png", "Content-Type image/png"),
    ("/pdf", "application/pdf", "Content-Type application/pdf"),
])
def test_not_html_by_type_reads_no_body(server: FaultServer, path: str, mime: str,
                                        what: str) -> None:
    p = one(server, path)
    assert isinstance(p.error, NotHTML) and p.error.mime_type == mime
    assert str(p.error) == what and p.record["error"] == f"not_html: {what}"
    assert p.record["status"] == 200 and p.fields == {"title": None, "links": None}
    assert p.attempts == 1 and p.decoded_bytes == 0 and not p.complete


@pytest.mark.parametrize(("path", "mime", "what"), [
    ("/png-as-html", "text/html", "PNG image"),
    ("/json-as-html", "text/html", "JSON"),
    ("/pdf-untyped", None, "PDF document"),
    ("/binary-untyped", None, "NUL bytes"),
])
def test_not_html_by_sniffing(server: FaultServer, path: str, mime: str | None,
                              what: str) -> None:
    p = one(server, path)
    assert isinstance(p.error, NotHTML) and p.error.mime_type == mime, p.error
    assert what in str(p.error) and p.record["error"].startswith("not_html: ")
    assert p.attempts == 1 and not p.complete
    # Only the sniffing bytes were read (of a 256 KiB image, 16 KiB of binary data...).
    assert p.decoded_bytes < 70_000


def test_not_html_messages(server: FaultServer) -> None:
    p = one(server, "/json-as-html")
    assert str(p.error) == "served as text/html but not HTML: JSON"
    p = one(server, "/binary-untyped")
    assert str(p.error) == "no Content-Type and the body is not HTML: NUL bytes"


def test_not_html_not_retried_and_raises(server: FaultServer) -> None:
    before = len(server.requests)
    with pytest.raises(NotHTML) as info:
        list(scrape([server.url("/png-as-html")], FIELDS, **{**FAST, "retries": 3}))
    assert info.value.kind == "not_html" and info.value.attempts == 1
    assert len(server.requests) == before + 1


def test_html_without_content_type_is_scraped(server: FaultServer) -> None:
    p = one(server, "/html-untyped")
    assert p.ok and p.fields == {"title": "Untyped", "links": ["/u"]} and p.complete


def test_xhtml_is_scraped(server: FaultServer) -> None:
    p = one(server, "/xhtml")
    assert p.ok and p.fields["title"] == "Untyped"
    p = one(server, "/xhtml", html_types=frozenset({"text/html"}))
    assert isinstance(p.error, NotHTML) and str(p.error) == "Content-Type application/xhtml+xml"


def test_text_before_the_first_tag(server: FaultServer) -> None:
    # Served as text/html and starting with text (a warning printed before the page), with no
    # sign of being something else: a browser shows a page, and it is scraped as one.
    p = one(server, "/text-first")
    assert p.ok and p.fields == {"title": "Untyped", "links": ["/u"]}
    p = one(server, "/text-first", verify_html=False)
    assert p.ok and p.fields == {"title": "Untyped", "links": ["/u"]}
    # (what the check spares: the JSON's string read as markup gives a title)
    p = one(server, "/json-as-html", verify_html=False)
    assert p.ok and p.fields == {"title": "not a page", "links": []}


def test_empty_page_is_not_html(server: FaultServer) -> None:
    p = one(server, "/empty")
    assert isinstance(p.error, NotHTML) and "no content" in str(p.error)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_not_html_same_in_every_chunking(server: FaultServer, name: str) -> None:
    # The decision does not depend on how the body is cut into HTTP chunks.
    urls = [server.url(f"/cut-{name}?{i}") for i in range(N_CUTS)]
    pages = list(scrape(urls, FIELDS, on_error="skip", concurrency=4, per_host=4, **FAST))
    outcomes = {p.record["error"] or str(p.fields) for p in pages}
    assert len(pages) == N_CUTS and len(outcomes) == 1, outcomes
    expected = {"json-html": "not_html: served as text/html but not HTML: JSON",
                "png-html": "not_html: served as text/html but not HTML: PNG image",
                "binary-none": "not_html: no Content-Type and the body is not HTML: NUL bytes",
                "html-none": str({"title": "Untyped", "links": ["/u"]}),
                "html-plain": "not_html: Content-Type text/plain"}
    assert outcomes == {expected[name]}


def test_sniff_types_scrape_mislabelled_pages(server: FaultServer) -> None:
    urls = [server.url(f"/cut-html-plain?{i}") for i in range(N_CUTS)]
    pages = list(scrape(urls, FIELDS, sniff_types=frozenset({"text/plain"}), **FAST))
    assert all(p.fields == {"title": "Untyped", "links": ["/u"]} for p in pages)
    p = one(server, "/cut-json-html?0", sniff_types=frozenset({"text/plain"}))
    assert isinstance(p.error, NotHTML)


def test_fetch_gives_any_type(server: FaultServer) -> None:
    # fetch() gives the response whatever it is: the check is scrape()'s.
    with fetch(server.url("/png"), **FAST) as response:
        assert response.content_type == "image/png" and response.read() == PNG


# ---------------------------------------------------------------------------- codings not asked


@pytest.mark.skipif(brotli is None, reason="brotli (htmlstream[brotli]) not installed")
def test_br_page_decoded(server: FaultServer) -> None:
    p = one(server, "/br")
    assert p.ok and p.fields == {"title": "Brotli", "links": ["/b"]}
    assert p.bytes_read < p.decoded_bytes
    with fetch(server.url("/br"), **FAST) as response:
        assert response.read() == page("Brotli", '<a href="/b">b</a>')


@pytest.mark.skipif(brotli is None, reason="brotli (htmlstream[brotli]) not installed")
def test_br_truncated_and_corrupt(server: FaultServer) -> None:
    # Truncated: what was decoded is extracted, as for gzip; corrupt: a clear error.
    p = one(server, "/br-truncated")
    assert p.ok and p.fields["title"] == "Brotli"
    p = one(server, "/br-corrupt")
    assert isinstance(p.error, ContentDecodingFailed) and "corrupt br body" in str(p.error)


@pytest.mark.skipif(zstd is None, reason="backports.zstd (htmlstream[zstd]) not installed")
def test_zstd_page_decoded(server: FaultServer) -> None:
    p = one(server, "/zstd")
    assert p.ok and p.fields == {"title": "Zstd", "links": ["/zs"]}


def test_unknown_coding_fails_clearly(server: FaultServer) -> None:
    p = one(server, "/compress")
    assert isinstance(p.error, ContentDecodingFailed) and "'compress'" in str(p.error)
    assert p.record["error"].startswith("decoding: ") and p.attempts == 1
