"""htmlstream.integrations.django: with Django's test clients (the sync and the async middleware
chains) and under real servers (uvicorn on Django's ASGI handler, waitress on its WSGI handler),
with settings configured here."""

from __future__ import annotations

import asyncio
import gzip
import inspect
import io
import logging
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import django
import httpx
import pytest
from django.conf import settings

from htmlstream.http import HttpOptions
from integration_servers import (
    BOOM_PAGE,
    PAGE,
    RW,
    app_chunkings,
    make_rewriter,
    uvicorn_server,
    wait_for,
    waitress_server,
)

if not settings.configured:
    settings.configure(
        DEBUG=False, ALLOWED_HOSTS=["*"], ROOT_URLCONF=__name__, SECRET_KEY="not secret",
        INSTALLED_APPS=[], USE_TZ=True,
        MIDDLEWARE=["htmlstream.integrations.django.HtmlRewriteMiddleware"],
        HTMLSTREAM_REWRITER="integration_servers.RW",
    )
    django.setup()

from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler
from django.http import (
    FileResponse,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
    StreamingHttpResponse,
)
from django.test import AsyncClient, Client, override_settings
from django.urls import path
from django.views.static import serve

from htmlstream.integrations.django import HtmlRewriteMiddleware
from test_no_way_around import (
    CODINGS_ASKED,
    PAGE_REQUESTS,
    PNG,
    RECIPES,
    Got,
    check_page,
    chosen_coding,
    cuts,
    encode,
)
from test_no_way_around import PAGE as BYPASS_PAGE

CHUNKINGS = app_chunkings(PAGE)
GZ = gzip.compress(PAGE)
GZ_CHUNKINGS = app_chunkings(GZ)
EXPECTED = RW.rewrite(PAGE)
HTML = "text/html; charset=utf-8"
CLOSED: list[str] = []
CLIENT_GOT_REWRITTEN = threading.Event()
WAITED: list[bool] = []


class Chunks:
    """A sync iterable with ``close()`` (Django calls it when the response is closed)."""

    def __init__(self, chunks: list[bytes], name: str) -> None:
        self.it = iter(chunks)
        self.name = name

    def __iter__(self) -> Iterator[bytes]:
        return self.it

    def close(self) -> None:
        CLOSED.append(self.name)


def chunking(request: HttpRequest) -> int:
    return int(request.GET.get("c", "0"))


def page(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(PAGE, content_type=HTML)
    response["Content-Length"] = str(len(PAGE))
    response["ETag"] = '"v1"'
    return response


def stream(request: HttpRequest) -> StreamingHttpResponse:
    gz = "gz" in request.GET
    chunks = (GZ_CHUNKINGS if gz else CHUNKINGS)[chunking(request)]
    response = StreamingHttpResponse(Chunks(chunks, request.GET.get("name", "-")),
                                     content_type=HTML)
    if gz:
        response["Content-Encoding"] = "gzip"
    return response


def astream(request: HttpRequest) -> StreamingHttpResponse:
    chunks = CHUNKINGS[chunking(request)]

    async def gen() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return StreamingHttpResponse(gen(), content_type=HTML)


def spaced(request: HttpRequest) -> StreamingHttpResponse:
    """Chunks spaced in time; the last waits for the client to have rewritten bytes; with
    ``forever``, chunks until the client goes away (10 s at most).  Async with ``async``."""
    forever = "forever" in request.GET
    pieces = [PAGE[i:i + 700] for i in range(0, len(PAGE), 700)]
    name = request.GET.get("name", "-")

    async def agen() -> AsyncIterator[bytes]:
        try:
            for piece in pieces[:-1]:
                yield piece
                await asyncio.sleep(0.01)
            for _ in range(1000 if forever else 0):
                yield b"<p>more</p>"
                await asyncio.sleep(0.01)
            for _ in range(500):
                if CLIENT_GOT_REWRITTEN.is_set():
                    break
                await asyncio.sleep(0.01)
            WAITED.append(CLIENT_GOT_REWRITTEN.is_set())
            yield pieces[-1]
        finally:
            CLOSED.append(name)

    def gen() -> Iterator[bytes]:
        for piece in pieces[:-1]:
            yield piece
            time.sleep(0.01)
        WAITED.append(CLIENT_GOT_REWRITTEN.wait(5))
        yield pieces[-1]

    return StreamingHttpResponse(agen() if "async" in request.GET else gen(), content_type=HTML)


def boom(request: HttpRequest) -> StreamingHttpResponse:
    pieces = [BOOM_PAGE[i:i + 1000] for i in range(0, len(BOOM_PAGE), 1000)]

    async def agen() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    return StreamingHttpResponse(agen() if "async" in request.GET else iter(pieces),
                                 content_type=HTML)


def file(request: HttpRequest) -> FileResponse:
    return FileResponse(io.BytesIO(PAGE), content_type=HTML)


def data(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"link": "<a href='http://example.com/'>x</a>"})


def csp(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(PAGE, content_type=HTML)
    response["Content-Security-Policy"] = "script-src 'self'"
    return response


# Issue 35: Django's static serving, a view that honours Range, one that honours any coding.
STATIC_ROOT = Path(tempfile.mkdtemp(prefix="htmlstream-django-static-"))
(STATIC_ROOT / "page.html").write_bytes(BYPASS_PAGE)
(STATIC_ROOT / "img.png").write_bytes(PNG)


def static(request: HttpRequest, name: str) -> HttpResponseBase:
    return serve(request, name, document_root=str(STATIC_ROOT))


def ranged(request: HttpRequest, name: str) -> HttpResponseBase:
    """A file view that honours Range (one range: a 206) and If-Range (as matching)."""
    data = (STATIC_ROOT / name).read_bytes()
    kind = "text/html; charset=utf-8" if name.endswith(".html") else "image/png"
    spec = request.META.get("HTTP_RANGE", "")
    n = chunking(request)
    if spec.startswith("bytes=") and "," not in spec:
        first, _, last = spec[6:].partition("-")
        start = int(first) if first else len(data) - int(last)
        end = int(last) if first and last else len(data) - 1
        response = StreamingHttpResponse(cuts(data[start:end + 1], n), status=206,
                                         content_type=kind)
        response["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return response
    return StreamingHttpResponse(cuts(data, n), content_type=kind)


def coded(request: HttpRequest, how: str) -> HttpResponse:
    coding = chosen_coding(request.META.get("HTTP_ACCEPT_ENCODING"))
    if how == "always-made-up":
        coding = "made-up"
    response = HttpResponse(encode(coding, BYPASS_PAGE), content_type=HTML)
    if coding != "identity":
        response["Content-Encoding"] = coding
    return response


urlpatterns = [path("page", page), path("stream", stream), path("astream", astream),
               path("spaced", spaced), path("boom", boom), path("file", file),
               path("data", data), path("csp", csp), path("static/<str:name>", static),
               path("ranged/<str:name>", ranged), path("coded/<str:how>", coded)]


def content(response: Any) -> bytes:
    if not getattr(response, "streaming", False):
        return bytes(response.content)
    assert not response.is_async
    return b"".join(response.streaming_content)


# ------------------------------------------------------------------------------ test clients


def test_http_response_rewritten_whole() -> None:
    r = Client().get("/page")
    assert r.content == EXPECTED
    assert r["Content-Length"] == str(len(EXPECTED)) and r["ETag"] == 'W/"v1"'
    assert Client().head("/page").content == b""


def test_streaming_sync_iterators() -> None:
    client = Client()
    for n in range(len(CHUNKINGS)):
        r = client.get(f"/stream?c={n}&name=s{n}")
        assert r.streaming and "Content-Length" not in r
        assert content(r) == EXPECTED, n
        r.close()
        assert CLOSED.count(f"s{n}") == 1
    for n in range(len(GZ_CHUNKINGS)):
        r = client.get(f"/stream?c={n}&gz=1")
        assert r["Content-Encoding"] == "gzip"
        assert gzip.decompress(content(r)) == EXPECTED, n


def test_streaming_async_iterators_async_client() -> None:
    async def main() -> None:
        client = AsyncClient()
        for n in range(len(CHUNKINGS)):
            r = await client.get(f"/astream?c={n}")
            assert r.is_async
            assert b"".join([c async for c in r.streaming_content]) == EXPECTED, n
        # a sync iterator under the async chain (Django buffers it: so does the middleware)
        r = await client.get("/stream?c=1")
        got = [c async for c in r.streaming_content] if r.is_async else list(
            r.streaming_content)
        assert b"".join(got) == EXPECTED

    asyncio.run(main())


def test_async_iterator_under_the_sync_chain() -> None:
    for n in (0, len(CHUNKINGS) - 1):
        assert content(Client().get(f"/astream?c={n}")) == EXPECTED


def test_pass_through_and_files() -> None:
    client = Client()
    # An HTML file: rewritten as it streams (a FileResponse passed on would not be).
    r = client.get("/file")
    assert isinstance(r, FileResponse) and r.file_to_stream is None
    assert b"".join(r.streaming_content) == EXPECTED
    r = client.get("/data")
    assert r.json() == {"link": "<a href='http://example.com/'>x</a>"}
    # A Range the view ignores: the page, rewritten.
    r = client.get("/page", HTTP_RANGE="bytes=0-10")
    assert r.content == EXPECTED and r["ETag"] == 'W/"v1"'


FAILING = make_rewriter()


@FAILING.element("title")
def fail(el: Any) -> None:
    raise ValueError("a handler failed in the first bytes")


class Failing(HtmlRewriteMiddleware):
    """A rewriter whose handler fails before the decision is made."""

    rewriter = FAILING


@override_settings(MIDDLEWARE=[f"{__name__}.Failing"])
def test_transform_error_before_the_headers() -> None:
    client = Client(raise_request_exception=False)
    assert client.get("/stream").status_code == 500
    assert client.get("/page").status_code == 500


class Configured(HtmlRewriteMiddleware):
    """Configured by its class attributes, not by settings."""

    rewriter = make_rewriter()
    options = HttpOptions(drop_etag=True)

    @staticmethod
    def headers_hook(context: Any, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [*headers, ("X-Rewritten", "1")]


@override_settings(MIDDLEWARE=[f"{__name__}.Configured"])
def test_subclass_configuration() -> None:
    r = Client().get("/page")
    assert r.content == EXPECTED and "ETag" not in r and r["X-Rewritten"] == "1"
    assert "X-Rewritten" not in Client().get("/data")


@override_settings(HTMLSTREAM_REWRITER=None)
def test_not_configured() -> None:
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="HTMLSTREAM_REWRITER"):
        Client().get("/page")


@pytest.mark.skipif("context" not in inspect.signature(RW.stream).parameters,
                    reason="this htmlstream's Rewriter.stream() takes no context yet")
@override_settings(HTMLSTREAM_CONTEXT=f"{__name__}.nonce_context")
def test_context_and_csp_nonce() -> None:
    r = Client().get("/csp")
    assert r["Content-Security-Policy"] == "script-src 'self' 'nonce-r4nd0m'"


def nonce_context(request: HttpRequest) -> dict[str, Any]:
    return {"csp_nonce": "r4nd0m"}


# ------------------------------------------------------------------------------ real servers


@pytest.fixture(scope="module")
def asgi_server() -> Iterator[str]:
    with uvicorn_server(ASGIHandler()) as url:
        yield url


@pytest.fixture(scope="module")
def wsgi_server() -> Iterator[str]:
    with waitress_server(WSGIHandler()) as url:
        yield url


@pytest.mark.parametrize("kind", ["asgi", "wsgi"])
def test_real_server_streams(kind: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(f"{kind}_server")
    with httpx.Client(timeout=10) as client:
        for n in range(len(CHUNKINGS)):
            r = client.get(f"{url}/{'astream' if kind == 'asgi' else 'stream'}?c={n}")
            assert r.content == EXPECTED, n
        r = client.get(f"{url}/page")
        assert r.content == EXPECTED and r.headers["content-length"] == str(len(EXPECTED))
        CLIENT_GOT_REWRITTEN.clear()
        WAITED.clear()
        got = b""
        query = "async=1" if kind == "asgi" else ""
        with client.stream("GET", f"{url}/spaced?{query}") as r:
            for chunk in r.iter_raw():
                got += chunk
                if b"https://example.com/0" in got:
                    CLIENT_GOT_REWRITTEN.set()
        assert WAITED == [True] and got == EXPECTED


def test_real_server_disconnect_and_errors(asgi_server: str, wsgi_server: str,
                                           caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), httpx.Client(timeout=10) as client:
        with client.stream("GET", f"{asgi_server}/spaced?async=1&forever=1&name=f") as r:
            for chunk in r.iter_raw():
                if b"https://" in chunk:
                    break
        assert wait_for(lambda: "f" in CLOSED, 5), "the generator was not closed"
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
    # a handler error after the headers: the connection is aborted, never a clean end
    with httpx.Client(timeout=10) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            client.get(f"{asgi_server}/boom?async=1")
        with pytest.raises(httpx.RemoteProtocolError):
            client.get(f"{wsgi_server}/boom")


def test_django_asgi_behind_the_asgi_middleware() -> None:
    """Django's ASGI handler wrapped by the ASGI middleware (no Django middleware)."""
    from htmlstream.integrations.asgi import HtmlRewriteMiddleware as AsgiMiddleware

    with override_settings(MIDDLEWARE=[]):
        handler = ASGIHandler()
    with uvicorn_server(AsgiMiddleware(handler, RW)) as url, httpx.Client(timeout=10) as client:
        for n in range(len(CHUNKINGS)):
            r = client.get(f"{url}/astream?c={n}")
            assert r.content == EXPECTED, n
        r = client.get(f"{url}/page")
        assert r.content == EXPECTED and r.headers["etag"] == 'W/"v1"'
        assert "content-length" not in r.headers


# ------------------------------------------------------------------------------ issue 35


def _recipe_middleware(recipe: str) -> type[HtmlRewriteMiddleware]:
    return type(f"Recipe_{recipe}", (HtmlRewriteMiddleware,), {"rewriter": RECIPES[recipe][0]()})


for _recipe in RECIPES:
    globals()[f"Recipe_{_recipe}"] = _recipe_middleware(_recipe)


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_no_way_around_the_rewrite(recipe: str, caplog: pytest.LogCaptureFixture) -> None:
    """Django's static serving and a view that honours Range, under waitress: no request gets
    the page unrewritten; an image's range still gets its 206."""
    with override_settings(MIDDLEWARE=[f"{__name__}.Recipe_{recipe}"]):
        handler = WSGIHandler()
    with waitress_server(handler) as url, httpx.Client(timeout=10) as client:
        for n in range(4):
            for view in ("static", "ranged"):
                for headers in PAGE_REQUESTS:
                    r = client.get(f"{url}/{view}/page.html?c={n}", headers=headers)
                    check_page(recipe, r)
                    if "Sec-Fetch-Dest" not in headers or view == "static":
                        assert r.status_code == 200, (view, headers)
                    else:   # the range went on, the view answered a 206 of the page
                        assert r.status_code == 502
            r = client.get(f"{url}/ranged/img.png?c={n}", headers={"Range": "bytes=10-99"})
            assert r.status_code == 206 and r.content == PNG[10:100]
        for asked in CODINGS_ASKED:
            got = Got(client, "GET", f"{url}/coded/honours", {"Accept-Encoding": asked})
            check_page(recipe, got)
            assert got.status_code == 200
        got = Got(client, "GET", f"{url}/coded/always-made-up", {"Accept-Encoding": "br"})
        assert got.status_code == 502
    assert "Partial Content of a response that would be rewritten" in caplog.text


def test_head_is_decided_as_the_get() -> None:
    client = Client()
    for url in ("/page", "/static/page.html", "/static/img.png", "/stream"):
        get, head = client.get(url), client.head(url)
        assert get.status_code == head.status_code == 200
        assert dict(get.headers) == dict(head.headers), url
