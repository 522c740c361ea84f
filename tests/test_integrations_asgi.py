"""htmlstream.integrations.asgi under real servers (uvicorn, hypercorn) on 127.0.0.1, with a raw
ASGI application and a Starlette one, and the ASGI protocol's corners driven directly."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from htmlstream.http import HttpOptions
from htmlstream.integrations.asgi import HtmlRewriteMiddleware, Message, Receive, Scope, Send
from integration_servers import (
    BOOM_PAGE,
    JSON_AS_HTML,
    PAGE,
    RW,
    app_chunkings,
    hypercorn_server,
    make_rewriter,
    uvicorn_server,
    wait_for,
)

CHUNKINGS = app_chunkings(PAGE)
GZ = gzip.compress(PAGE)
GZ_CHUNKINGS = app_chunkings(GZ)
EXPECTED = RW.rewrite(PAGE)
assert EXPECTED != PAGE and EXPECTED.count(b"https://") == 120


class State:
    """What the applications saw, for the tests to assert (shared with the server thread)."""

    def __init__(self) -> None:
        self.client_got_rewritten = threading.Event()
        self.waited_for_client: bool | None = None
        self.closed = threading.Event()
        self.lifespan = False


STATE = State()


async def _wait(event: threading.Event, timeout: float = 5.0) -> bool:
    for _ in range(int(timeout / 0.01)):
        if event.is_set():
            return True
        await asyncio.sleep(0.01)
    return event.is_set()


async def raw_app(scope: Scope, receive: Receive, send: Send) -> None:
    """A small ASGI application: the cases by path, the chunking by ``?c=``."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                STATE.lifespan = True
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    assert scope["type"] == "http"
    path = scope["path"]
    query = parse_qs(scope["query_string"].decode())
    n = int(query.get("c", ["0"])[0])
    html = [(b"content-type", b"text/html; charset=utf-8"), (b"etag", b'"v1"')]

    async def body(chunks: list[bytes]) -> None:
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    if path == "/page":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*html, (b"content-length", b"%d" % len(PAGE))]})
        await body(CHUNKINGS[n])
    elif path == "/gzip":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*html, (b"content-encoding", b"gzip")]})
        await body(GZ_CHUNKINGS[n])
    elif path == "/json":
        await send({"type": "http.response.start", "status": 200, "headers": html})
        await body([JSON_AS_HTML[:100], JSON_AS_HTML[100:]])
    elif path == "/304":
        await send({"type": "http.response.start", "status": 304, "headers": html})
        await send({"type": "http.response.body", "body": b""})
    elif path == "/error-before":
        raise RuntimeError("the application failed before its headers")
    elif path == "/error-after":
        await send({"type": "http.response.start", "status": 200, "headers": html})
        await send({"type": "http.response.body", "body": PAGE[:3000], "more_body": True})
        raise RuntimeError("the application failed after its headers")
    elif path == "/boom":
        await send({"type": "http.response.start", "status": 200, "headers": html})
        await body([BOOM_PAGE[i:i + 1000] for i in range(0, len(BOOM_PAGE), 1000)])
    elif path in ("/stream", "/forever"):
        await streaming(send, receive, forever=path == "/forever")
    else:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def streaming(send: Send, receive: Receive, forever: bool) -> None:
    """Chunks spaced in time; the last one waits for the client to have rewritten bytes
    (``/stream``), or chunks until the client goes away (``/forever``, bounded)."""
    disconnected = asyncio.Event()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        disconnected.set()

    watcher = asyncio.ensure_future(watch())
    try:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/html")]})
        pieces = [PAGE[i:i + 700] for i in range(0, len(PAGE), 700)]
        for piece in pieces[:-1]:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            await asyncio.sleep(0.01)
        if forever:
            for _ in range(1000):               # 10 s at most
                if disconnected.is_set():
                    return
                await send({"type": "http.response.body", "body": b"<p>more</p>",
                            "more_body": True})
                await asyncio.sleep(0.01)
            return
        STATE.waited_for_client = await _wait(STATE.client_got_rewritten)
        await send({"type": "http.response.body", "body": pieces[-1], "more_body": False})
    finally:
        watcher.cancel()
        STATE.closed.set()


APP = HtmlRewriteMiddleware(raw_app, RW)

SERVERS: dict[str, Callable[[Any], Any]] = {"uvicorn": uvicorn_server,
                                             "hypercorn": hypercorn_server}


@pytest.fixture(scope="module", params=sorted(SERVERS))
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    with SERVERS[request.param](APP) as url:
        yield url


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as c:
        yield c


def test_page_rewritten_in_every_chunking(server: str, client: httpx.Client) -> None:
    for n in range(len(CHUNKINGS)):
        r = client.get(f"{server}/page?c={n}")
        assert r.status_code == 200
        assert r.content == EXPECTED, n
        assert "content-length" not in r.headers or int(r.headers["content-length"]) == len(
            EXPECTED)
        assert r.headers["etag"] == 'W/"v1"'
        assert r.headers.get("transfer-encoding") == "chunked"


def test_gzip_rewritten_and_reencoded(server: str, client: httpx.Client) -> None:
    for n in range(len(GZ_CHUNKINGS)):
        with client.stream("GET", f"{server}/gzip?c={n}") as r:
            raw = b"".join(r.iter_raw())
        assert r.headers["content-encoding"] == "gzip"
        assert gzip.decompress(raw) == EXPECTED, n


def test_pass_through(server: str, client: httpx.Client) -> None:
    r = client.get(f"{server}/json")
    assert r.content == JSON_AS_HTML and r.headers["etag"] == '"v1"'
    r = client.get(f"{server}/304")
    assert r.status_code == 304 and r.headers["etag"] == '"v1"'


def test_head_and_range(server: str, client: httpx.Client) -> None:
    # HEAD: the headers of the GET (no Content-Length: rewritten; a weak ETag).
    r = client.head(f"{server}/page")
    get = client.get(f"{server}/page")
    assert r.content == b"" and "content-length" not in r.headers
    assert r.headers["etag"] == get.headers["etag"] == 'W/"v1"'
    assert {k: v for k, v in r.headers.items() if k != "date"} == {
        k: v for k, v in get.headers.items() if k != "date"}
    r = client.get(f"{server}/page", headers={"range": "bytes=0-10"})
    assert r.content == EXPECTED      # (the app ignores Range): the page, rewritten


def test_first_bytes_before_the_last_chunk(server: str, client: httpx.Client) -> None:
    STATE.client_got_rewritten.clear()
    STATE.waited_for_client = None
    got = b""
    with client.stream("GET", f"{server}/stream") as r:
        for chunk in r.iter_raw():
            got += chunk
            if b"https://example.com/0" in got:
                STATE.client_got_rewritten.set()
    assert STATE.waited_for_client is True     # the app was still holding its last chunk
    assert got == EXPECTED


def test_client_disconnect_mid_stream(server: str, caplog: pytest.LogCaptureFixture) -> None:
    STATE.closed.clear()
    with caplog.at_level(logging.WARNING), httpx.Client(timeout=10) as c:
        with c.stream("GET", f"{server}/forever") as r:
            for chunk in r.iter_raw():
                if b"https://" in chunk:
                    break
        # leaving the block closes the connection mid-body
        assert wait_for(STATE.closed.is_set, 5), "the application did not stop"
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]


def test_application_errors(server: str, client: httpx.Client) -> None:
    assert client.get(f"{server}/error-before").status_code == 500
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(f"{server}/error-after")


def test_transform_error_after_the_headers_aborts(server: str, client: httpx.Client) -> None:
    got = b""
    with pytest.raises(httpx.RemoteProtocolError), client.stream("GET", f"{server}/boom") as r:
        assert r.status_code == 200
        for chunk in r.iter_raw():
            got += chunk
    assert got.startswith(RW.rewrite(BOOM_PAGE[:2000])[:1500])


def test_lifespan_passes_through() -> None:
    STATE.lifespan = False
    with uvicorn_server(APP, lifespan="on"):
        assert STATE.lifespan


# ------------------------------------------------------------------------------ Starlette

def starlette_app() -> Any:
    """A Starlette application, served plain and behind Starlette's GZipMiddleware (``gz=1``)."""
    from starlette.applications import Starlette
    from starlette.middleware.gzip import GZipMiddleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, StreamingResponse
    from starlette.routing import Route

    async def stream(request: Request) -> StreamingResponse:
        n = int(request.query_params.get("c", "0"))

        async def gen() -> Any:
            for chunk in CHUNKINGS[n]:
                yield chunk

        return StreamingResponse(gen(), media_type="text/html")

    async def spaced(request: Request) -> StreamingResponse:
        forever = "forever" in request.query_params

        async def gen() -> Any:
            try:
                pieces = [PAGE[i:i + 700] for i in range(0, len(PAGE), 700)]
                for piece in pieces[:-1]:
                    yield piece
                    await asyncio.sleep(0.01)
                for _ in range(1000 if forever else 0):     # 10 s at most
                    yield b"<p>more</p>"
                    await asyncio.sleep(0.01)
                STATE.waited_for_client = await _wait(STATE.client_got_rewritten)
                yield pieces[-1]
            finally:
                STATE.closed.set()

        return StreamingResponse(gen(), media_type="text/html")

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE)

    async def data(request: Request) -> JSONResponse:
        return JSONResponse({"link": "<a href='http://example.com/'>x</a>"})

    inner = Starlette(routes=[Route("/stream", stream), Route("/spaced", spaced),
                              Route("/page", page), Route("/data", data)])
    plain = HtmlRewriteMiddleware(inner, RW)
    gzipped = HtmlRewriteMiddleware(GZipMiddleware(inner, minimum_size=100), RW)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and b"gz=1" in scope["query_string"]:
            await gzipped(scope, receive, send)
        else:
            await plain(scope, receive, send)

    return app


@pytest.fixture(scope="module", params=sorted(SERVERS))
def starlette_server(request: pytest.FixtureRequest) -> Iterator[str]:
    with SERVERS[request.param](starlette_app()) as url:
        yield url


def test_starlette_streaming_and_gzip(starlette_server: str, client: httpx.Client) -> None:
    for n in range(len(CHUNKINGS)):
        r = client.get(f"{starlette_server}/stream?c={n}")
        assert r.content == EXPECTED, n
        with client.stream("GET", f"{starlette_server}/stream?c={n}&gz=1") as r:
            raw = b"".join(r.iter_raw())
        assert r.headers["content-encoding"] == "gzip"
        assert gzip.decompress(raw) == EXPECTED, n
    r = client.get(f"{starlette_server}/page?gz=1")
    assert r.headers["content-encoding"] == "gzip" and r.content == EXPECTED
    assert "content-length" not in r.headers
    r = client.get(f"{starlette_server}/data")
    assert r.json() == {"link": "<a href='http://example.com/'>x</a>"}
    assert r.headers["content-length"] == str(len(r.content))


def test_starlette_first_bytes_before_the_last_chunk(starlette_server: str,
                                                     client: httpx.Client) -> None:
    STATE.client_got_rewritten.clear()
    STATE.waited_for_client = None
    got = b""
    with client.stream("GET", f"{starlette_server}/spaced") as r:
        for chunk in r.iter_raw():
            got += chunk
            if b"https://example.com/0" in got:
                STATE.client_got_rewritten.set()
    assert STATE.waited_for_client is True
    assert got == EXPECTED


def test_starlette_client_disconnect(starlette_server: str,
                                     caplog: pytest.LogCaptureFixture) -> None:
    STATE.closed.clear()
    with caplog.at_level(logging.WARNING), httpx.Client(timeout=10) as c:
        with c.stream("GET", f"{starlette_server}/spaced?forever=1") as r:
            for chunk in r.iter_raw():
                if b"https://" in chunk:
                    break
        assert wait_for(STATE.closed.is_set, 5), "the generator was not closed"
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]


# ------------------------------------------------------------------------------ the protocol


def run(app: Any, messages: list[Message], *, method: str = "GET",
        request: list[Message] | None = None, fail_after: int | None = None,
        ) -> tuple[list[Message], BaseException | None]:
    """Run ``app`` behind the middleware as a server would, with the application sending
    ``messages``: what the server received, and what the application's call raised."""
    sent: list[Message] = []
    incoming = list(request or [{"type": "http.request", "body": b"", "more_body": False}])

    async def receive() -> Message:
        if incoming:
            return incoming.pop(0)
        await asyncio.sleep(3600)
        raise AssertionError

    async def send(message: Message) -> None:
        if fail_after is not None and len(sent) >= fail_after:
            raise OSError("the client went away")
        sent.append(message)

    scope = {"type": "http", "method": method, "path": "/", "headers": [],
             "query_string": b""}
    try:
        asyncio.run(app(scope, receive, send))
    except BaseException as exc:
        return sent, exc
    return sent, None


def sender(messages: list[Message], seen: list[BaseException] | None = None) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        for message in messages:
            try:
                await send(message)
            except OSError as exc:
                if seen is None:
                    raise
                seen.append(exc)
    return app


START = {"type": "http.response.start", "status": 200,
         "headers": [(b"content-type", b"text/html")]}


def body_of(sent: list[Message]) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def test_start_held_until_decided_and_no_empty_messages() -> None:
    for chunks in CHUNKINGS:
        messages = [START] + [{"type": "http.response.body", "body": c, "more_body": True}
                              for c in chunks] + [{"type": "http.response.body"}]
        sent, exc = run(HtmlRewriteMiddleware(sender(messages), RW), messages)
        assert exc is None
        assert sent[0]["type"] == "http.response.start"
        bodies = sent[1:]
        assert all(m["type"] == "http.response.body" for m in bodies)
        assert all(m["body"] for m in bodies[:-1]) and bodies[-1]["more_body"] is False
        assert all(m["more_body"] for m in bodies[:-1])
        assert body_of(sent) == EXPECTED


def test_trailers_and_file_sending_pass_through() -> None:
    trailers = [{**START, "trailers": True},
                {"type": "http.response.body", "body": PAGE, "more_body": False},
                {"type": "http.response.trailers", "headers": [(b"x-digest", b"1")],
                 "more_trailers": False}]
    sent, exc = run(HtmlRewriteMiddleware(sender(trailers), RW), trailers)
    assert exc is None and sent == trailers
    # A file the server would send itself: an image's goes as it is.
    png_start = {**START, "headers": [(b"content-type", b"image/png")]}
    for kind, extra in [("http.response.pathsend", {"path": "/tmp/img.png"}),
                        ("http.response.zerocopysend", {"file": 3})]:
        messages = [png_start, {"type": kind, **extra}]
        sent, exc = run(HtmlRewriteMiddleware(sender(messages), RW), messages)
        assert exc is None and sent == messages


def test_a_page_the_server_would_send_itself_is_rewritten(tmp_path: Path) -> None:
    """``http.response.pathsend`` / ``zerocopysend`` of a page (Starlette's FileResponse under
    a server that offers them): read and rewritten, never sent as it is."""
    page = tmp_path / "page.html"
    page.write_bytes(b"junk" + PAGE)
    with page.open("rb") as file:
        for kind, extra in [("http.response.pathsend", {"path": str(tmp_path / "p.html")}),
                            ("http.response.zerocopysend",
                             {"file": file, "offset": 4, "count": len(PAGE)}),
                            ("http.response.zerocopysend",
                             {"file": file.fileno(), "offset": 4})]:
            (tmp_path / "p.html").write_bytes(PAGE)
            messages = [START, {"type": kind, **extra}]
            sent, exc = run(HtmlRewriteMiddleware(sender(messages), RW), messages)
            assert exc is None and sent[0]["type"] == "http.response.start"
            assert all(m["type"] == "http.response.body" for m in sent[1:])
            assert body_of(sent) == EXPECTED and sent[-1]["more_body"] is False


def test_send_raising_reaches_the_application() -> None:
    messages = [START] + [{"type": "http.response.body", "body": PAGE[i:i + 500],
                           "more_body": True} for i in range(0, len(PAGE), 500)]
    seen: list[BaseException] = []
    sent, exc = run(HtmlRewriteMiddleware(sender(messages, seen), RW), messages, fail_after=2)
    assert exc is None and len(sent) == 2
    assert seen and all(isinstance(e, OSError) for e in seen)


def test_disconnect_on_receive_drops_the_stream() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send(START)
        await send({"type": "http.response.body", "body": PAGE[:300], "more_body": True})
        assert (await receive())["type"] == "http.disconnect"
        await send({"type": "http.response.body", "body": PAGE[300:600], "more_body": True})

    sent, exc = run(HtmlRewriteMiddleware(app, RW), [],
                    request=[{"type": "http.disconnect"}])
    assert exc is None
    # Nothing was decided: the server is given what the application sent, as it sent it.
    assert sent == [START, {"type": "http.response.body", "body": PAGE[300:600],
                            "more_body": True}]


def test_transform_error_is_raised_even_when_swallowed() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send(START)
        with contextlib.suppress(ValueError):
            await send({"type": "http.response.body", "body": BOOM_PAGE, "more_body": False})

    sent, exc = run(HtmlRewriteMiddleware(app, RW), [])
    assert isinstance(exc, ValueError) and sent == []    # before the headers: a 500


def test_headers_hook_and_csp_nonce() -> None:
    csp = (b"content-security-policy", b"default-src 'self'; img-src *")
    messages = [{**START, "headers": [*START["headers"], csp]},
                {"type": "http.response.body", "body": PAGE, "more_body": False}]

    def hook(context: Any, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        return [*headers, (b"x-rewritten", b"1")]

    sent, _ = run(HtmlRewriteMiddleware(sender(messages), RW, headers_hook=hook), messages)
    assert (b"x-rewritten", b"1") in sent[0]["headers"]
    json_messages = [{**messages[0], "headers": [(b"content-type", b"application/json")]},
                     messages[1]]
    sent, _ = run(HtmlRewriteMiddleware(sender(json_messages), RW, headers_hook=hook),
                  json_messages)
    assert sent[0]["headers"] == [(b"content-type", b"application/json")]   # not rewritten


@pytest.mark.skipif("context" not in __import__("inspect").signature(RW.stream).parameters,
                    reason="this htmlstream's Rewriter.stream() takes no context yet")
def test_context_factory_and_csp_nonce_in_the_header() -> None:
    csp = (b"content-security-policy", b"default-src 'self'; img-src *")
    messages = [{**START, "headers": [*START["headers"], csp]},
                {"type": "http.response.body", "body": PAGE, "more_body": False}]
    scopes: list[Scope] = []

    def context(scope: Scope) -> dict[str, Any]:
        scopes.append(scope)
        return {"csp_nonce": "abc123"}

    sent, exc = run(HtmlRewriteMiddleware(sender(messages), RW, context=context), messages)
    assert exc is None and len(scopes) == 1
    assert dict(sent[0]["headers"])[b"content-security-policy"] == (
        b"default-src 'self'; img-src *; script-src 'self' 'nonce-abc123'")
    assert body_of(sent) == EXPECTED
    # the handlers see the response's context
    rw = make_rewriter()

    @rw.element("script")
    def nonce(el: Any) -> None:
        el.set_attribute("nonce", el.context["csp_nonce"])

    page = PAGE.replace(b"</body>", b"<script>go()</script></body>")
    messages[1] = {"type": "http.response.body", "body": page, "more_body": False}
    sent, exc = run(HtmlRewriteMiddleware(sender(messages), rw, context=context), messages)
    assert exc is None
    assert b'<script nonce="abc123">go()</script>' in body_of(sent)


def test_options_are_used() -> None:
    messages = [{**START, "headers": [(b"content-type", b"text/plain")]},
                {"type": "http.response.body", "body": PAGE, "more_body": False}]
    sent, _ = run(HtmlRewriteMiddleware(sender(messages), RW), messages)
    assert body_of(sent) == PAGE
    options = HttpOptions(sniff_types=frozenset({"text/plain"}))
    sent, _ = run(HtmlRewriteMiddleware(sender(messages), RW, options=options), messages)
    assert body_of(sent) == EXPECTED
