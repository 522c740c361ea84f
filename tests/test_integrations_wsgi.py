"""htmlstream.integrations.wsgi under a real WSGI server (waitress) on 127.0.0.1, checked by
wsgiref.validate on both sides of the middleware: iterables closed, write(), generators,
wsgi.file_wrapper, exc_info, errors."""

from __future__ import annotations

import gzip
import inspect
import itertools
import logging
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import parse_qs
from wsgiref.types import StartResponse, WSGIEnvironment
from wsgiref.validate import validator

import httpx
import pytest

from htmlstream.integrations.wsgi import HtmlRewriteMiddleware
from integration_servers import (
    BOOM_PAGE,
    JSON_AS_HTML,
    PAGE,
    RW,
    app_chunkings,
    make_rewriter,
    wait_for,
    waitress_server,
)

CHUNKINGS = app_chunkings(PAGE)
GZ = gzip.compress(PAGE)
GZ_CHUNKINGS = app_chunkings(GZ)
EXPECTED = RW.rewrite(PAGE)
ERROR_PAGE = b"<!doctype html><h1>Error</h1><p><a href='http://example.com/help'>help</a></p>"

#: The names of the application iterables closed, in order.
CLOSED: list[str] = []
CLIENT_GOT_REWRITTEN = threading.Event()
WAITED: list[bool] = []
_names = itertools.count()


class Body:
    """An application iterable with ``close()`` (counted)."""

    def __init__(self, chunks: Iterable[bytes], name: str) -> None:
        self.chunks = chunks
        self.name = name

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.chunks)

    def close(self) -> None:
        CLOSED.append(self.name)


def raw_app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    """A WSGI application: the cases by path, the chunking by ``?c=``, the name of the
    iterable (for the close count) by ``?name=``."""
    path = environ["PATH_INFO"]
    query = parse_qs(environ.get("QUERY_STRING", ""))
    n = int(query.get("c", ["0"])[0])
    name = query.get("name", ["-"])[0]
    html = [("Content-Type", "text/html; charset=utf-8"), ("ETag", '"v1"')]
    if path == "/page":
        start_response("200 OK", [*html, ("Content-Length", str(len(PAGE)))])
        # (waitress sends what it is given for HEAD: frameworks send no body)
        return Body([] if environ["REQUEST_METHOD"] == "HEAD" else CHUNKINGS[n], name)
    if path == "/gen":
        def gen() -> Iterator[bytes]:
            try:
                start_response("200 OK", html)
                yield from CHUNKINGS[n]
            finally:
                CLOSED.append(name)
        return gen()
    if path == "/write":
        write = start_response("200 OK", html)
        chunks = CHUNKINGS[n]
        for chunk in chunks[:len(chunks) // 2]:
            write(chunk)
        return Body(chunks[len(chunks) // 2:], name)
    if path == "/write-only":
        write = start_response("200 OK", html)
        for chunk in CHUNKINGS[n]:
            write(chunk)
        return Body([], name)
    if path == "/gzip":
        start_response("200 OK", [*html, ("Content-Encoding", "gzip")])
        return Body(GZ_CHUNKINGS[n], name)
    if path == "/json":
        start_response("200 OK", html)
        return Body([JSON_AS_HTML], name)
    if path == "/304":
        start_response("304 Not Modified", [("ETag", '"v1"')])
        return Body([], name)
    if path == "/error-before":
        raise RuntimeError("the application failed before its headers")
    if path in ("/error-after", "/boom", "/exc-info", "/exc-info-late"):
        def failing() -> Iterator[bytes]:
            try:
                start_response("200 OK", html)
                page = BOOM_PAGE if path == "/boom" else PAGE
                if path != "/exc-info":
                    yield page[:3000]
                if path == "/boom":
                    yield page[3000:]
                    return
                try:
                    raise RuntimeError("the application failed")
                except RuntimeError:
                    if path == "/error-after":
                        raise
                    start_response("500 Internal Server Error",
                                   [("Content-Type", "text/html")], sys.exc_info())
                    yield ERROR_PAGE
            finally:
                CLOSED.append(name)
        return failing()
    if path in ("/stream", "/forever"):
        def spaced() -> Iterator[bytes]:
            try:
                start_response("200 OK", [("Content-Type", "text/html")])
                pieces = [PAGE[i:i + 700] for i in range(0, len(PAGE), 700)]
                for piece in pieces[:-1]:
                    yield piece
                    time.sleep(0.01)
                for _ in range(1000 if path == "/forever" else 0):    # 10 s at most
                    yield b"<p>more</p>"
                    time.sleep(0.01)
                WAITED.append(CLIENT_GOT_REWRITTEN.wait(5))
                yield pieces[-1]
            finally:
                CLOSED.append(name)
        return spaced()
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"not found"]


def file_app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    """An HTML file sent with the server's ``wsgi.file_wrapper``."""
    import io
    start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(PAGE)))])
    return environ["wsgi.file_wrapper"](io.BytesIO(PAGE), 1024)  # type: ignore[no-any-return]


CHECKED = validator(HtmlRewriteMiddleware(validator(raw_app), RW))
FILES = HtmlRewriteMiddleware(file_app, RW)


def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    if environ["PATH_INFO"] == "/file":
        return FILES(environ, start_response)
    return CHECKED(environ, start_response)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with waitress_server(app) as url:
        yield url


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as c:
        yield c


def get(client: httpx.Client, url: str, **kwargs: Any) -> tuple[httpx.Response, str]:
    """GET with a fresh iterable name; the response and the name (to count its close)."""
    name = f"n{next(_names)}"
    sep = "&" if "?" in url else "?"
    return client.get(f"{url}{sep}name={name}", **kwargs), name


def closed_once(name: str) -> bool:
    return wait_for(lambda: CLOSED.count(name) == 1, 5) and CLOSED.count(name) == 1


@pytest.mark.parametrize("path", ["/page", "/gen", "/write", "/write-only"])
def test_rewritten_in_every_chunking(server: str, client: httpx.Client, path: str) -> None:
    for n in range(len(CHUNKINGS)):
        r, name = get(client, f"{server}{path}?c={n}")
        assert r.status_code == 200
        assert r.content == EXPECTED, (path, n)
        assert "content-length" not in r.headers and r.headers["etag"] == 'W/"v1"'
        assert closed_once(name)


def test_gzip(server: str, client: httpx.Client) -> None:
    for n in range(len(GZ_CHUNKINGS)):
        name = f"n{next(_names)}"
        with client.stream("GET", f"{server}/gzip?c={n}&name={name}") as r:
            raw = b"".join(r.iter_raw())
        assert r.headers["content-encoding"] == "gzip"
        assert gzip.decompress(raw) == EXPECTED, n
        assert closed_once(name)


def test_pass_through(server: str, client: httpx.Client) -> None:
    r, name = get(client, f"{server}/json")
    assert r.content == JSON_AS_HTML and r.headers["etag"] == '"v1"' and closed_once(name)
    r, name = get(client, f"{server}/304")
    assert r.status_code == 304 and r.headers["etag"] == '"v1"' and closed_once(name)
    name = f"n{next(_names)}"
    # HEAD: the headers of the GET (rewritten: no Content-Length).
    r = client.head(f"{server}/page?name={name}")
    assert "content-length" not in r.headers and closed_once(name)
    # An HTML file in the server's file wrapper: rewritten like any page.
    r = client.get(f"{server}/file")
    assert r.content == EXPECTED and "content-length" not in r.headers


def test_first_bytes_before_the_last_chunk(server: str, client: httpx.Client) -> None:
    CLIENT_GOT_REWRITTEN.clear()
    WAITED.clear()
    got = b""
    with client.stream("GET", f"{server}/stream") as r:
        for chunk in r.iter_raw():
            got += chunk
            if b"https://example.com/0" in got:
                CLIENT_GOT_REWRITTEN.set()
    assert WAITED == [True]
    assert got == EXPECTED


def test_client_disconnect_closes_the_iterable(server: str,
                                               caplog: pytest.LogCaptureFixture) -> None:
    name = f"n{next(_names)}"
    with caplog.at_level(logging.WARNING), httpx.Client(timeout=10) as c:
        with c.stream("GET", f"{server}/forever?name={name}") as r:
            for chunk in r.iter_raw():
                if b"https://" in chunk:
                    break
        assert closed_once(name)
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]


def test_errors(server: str, client: httpx.Client) -> None:
    r, _ = get(client, f"{server}/error-before")
    assert r.status_code == 500
    for path in ("/error-after", "/boom", "/exc-info-late"):
        name = f"n{next(_names)}"
        with pytest.raises(httpx.RemoteProtocolError):
            client.get(f"{server}{path}?name={name}")
        assert closed_once(name), path
    # start_response(exc_info) before any body byte: the new response replaces the old.
    r, name = get(client, f"{server}/exc-info")
    assert r.status_code == 500 and r.content == RW.rewrite(ERROR_PAGE)
    assert closed_once(name)


# ------------------------------------------------------------------------------ in process


def call(app: Any, environ: dict[str, Any] | None = None
         ) -> tuple[str, list[tuple[str, str]], bytes]:
    """Call a WSGI application as a server would: status, headers, body."""
    started: list[tuple[str, list[tuple[str, str]]]] = []
    body: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None
                       ) -> Any:
        started.append((status, headers))
        return body.append

    env = {"REQUEST_METHOD": "GET", "PATH_INFO": "/", **(environ or {})}
    result = app(env, start_response)
    try:
        for piece in result:
            if piece:
                assert started
            body.append(piece)
    finally:
        getattr(result, "close", lambda: None)()
    return started[-1][0], started[-1][1], b"".join(body)


def csp_app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/html"),
                              ("Content-Security-Policy", "script-src 'self'")])
    return [PAGE.replace(b"</body>", b"<script>go()</script></body>")]


def test_headers_hook() -> None:
    def hook(context: Any, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [*headers, ("X-Rewritten", "1")]

    status, headers, body = call(HtmlRewriteMiddleware(csp_app, RW, headers_hook=hook))
    assert status == "200 OK"
    assert ("X-Rewritten", "1") in headers and b"https://" in body
    _status, headers, body = call(HtmlRewriteMiddleware(raw_app, RW, headers_hook=hook),
                                 {"PATH_INFO": "/json"})
    assert ("X-Rewritten", "1") not in headers and body == JSON_AS_HTML


@pytest.mark.skipif("context" not in inspect.signature(RW.stream).parameters,
                    reason="this htmlstream's Rewriter.stream() takes no context yet")
def test_context_and_csp_nonce() -> None:
    rw = make_rewriter()

    @rw.element("script")
    def nonce(el: Any) -> None:
        el.set_attribute("nonce", el.context["csp_nonce"])

    def context(environ: WSGIEnvironment) -> dict[str, Any]:
        return {"csp_nonce": environ["PATH_INFO"].strip("/")}

    _status, headers, body = call(HtmlRewriteMiddleware(csp_app, rw, context=context),
                                 {"PATH_INFO": "/n0nce"})
    assert dict(headers)["Content-Security-Policy"] == "script-src 'self' 'nonce-n0nce'"
    assert b'<script nonce="n0nce">go()</script>' in body
