"""``ReverseProxy(esi=...)`` / ``htmlstream proxy --esi`` (issue 31): an aiohttp origin and the
proxy on 127.0.0.1 in one event loop, an aiohttp client; the page sent in several chunkings."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import aiohttp.web
import pytest

from chunking import chunkings
from htmlstream import Rewriter
from htmlstream.integrations.proxy import ReverseProxy

PAGE = (b'<html><body><p>page</p><esi:include src="/frag/who"/><esi:remove>no ESI</esi:remove>'
        b"<esi:include src=/frag/missing onerror=continue>"
        b"<esi:include src=http://elsewhere.invalid/x alt=/frag/plain>"
        b"<!--esi <esi:include src=frag/plain> --></body></html>")


class Origin:
    def __init__(self) -> None:
        self.cut: list[bytes] = [PAGE]
        self.page_headers: dict[str, str] = {}
        self.seen: list[dict[str, str]] = []
        self.url = ""

    async def page(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        self.seen.append(dict(request.headers))
        resp = aiohttp.web.StreamResponse(headers={
            "Content-Type": "text/html; charset=utf-8", "ETag": '"t1"',
            "Last-Modified": "Wed, 02 Dec 2026 10:00:00 GMT", **self.page_headers})
        resp.content_length = len(PAGE)
        await resp.prepare(request)
        for chunk in self.cut:
            await resp.write(chunk)
            await asyncio.sleep(0)
        return resp

    async def frag(self, request: aiohttp.web.Request) -> aiohttp.web.Response:
        self.seen.append(dict(request.headers))
        name = request.match_info["name"]
        if name == "who":
            h = request.headers
            text = (f"<p>cookie={h.get('Cookie')} auth={h.get('Authorization')} "
                    f"lang={h.get('Accept-Language')} xff={h.get('X-Forwarded-For')}</p>")
            return aiohttp.web.Response(text=text, content_type="text/html")
        if name == "plain":
            return aiohttp.web.Response(text="[plain]", content_type="text/html")
        return aiohttp.web.Response(status=404, text="no")


async def with_proxy(test: Callable[[Origin, str], Awaitable[Any]], **kwargs: Any) -> Any:
    origin = Origin()
    app = aiohttp.web.Application()
    app.router.add_get("/page", origin.page)
    app.router.add_get("/frag/{name}", origin.frag)
    runner = aiohttp.web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    origin.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    rw = Rewriter()
    rw.on("p", element=lambda el: el.set_attribute("seen", ""))
    if "esi_hosts" in kwargs:       # ({port}: the origin's)
        kwargs["esi_hosts"] = [h.replace("{port}", origin.url.rsplit(":", 1)[1])
                               for h in kwargs["esi_hosts"]]
    proxy = ReverseProxy(rw, origin.url, **kwargs)
    try:
        async with proxy:
            host, port = await proxy.start("127.0.0.1", 0)
            return await asyncio.wait_for(test(origin, f"http://{host}:{port}"), 30)
    finally:
        await runner.cleanup()


async def get(url: str, **headers: str) -> tuple[int, Any, bytes]:
    async with aiohttp.ClientSession(auto_decompress=False) as session, \
            session.get(url, headers=headers) as resp:
        return resp.status, resp.headers, await resp.read()


ASSEMBLED = (b'<html><body><p seen="">page</p><p seen="">cookie=c=1 auth=Bearer t lang=fr '
             b"xff=None</p>[plain] [plain] </body></html>")


def test_assembled_when_signalled_in_every_chunking() -> None:
    async def test(origin: Origin, proxy: str) -> None:
        origin.page_headers = {"Surrogate-Control": 'max-age=60, content="ESI/1.0"'}
        for cut in chunkings(PAGE, single_bytes=False, split_samples=8, random_splits=4):
            origin.cut = cut
            origin.seen.clear()
            status, headers, body = await get(
                proxy + "/page", Cookie="c=1", Authorization="Bearer t",
                **{"Accept-Language": "fr", "Accept-Encoding": "gzip"})
            assert status == 200
            assert body == ASSEMBLED
            for name in ("Surrogate-Control", "ETag", "Last-Modified", "Content-Length",
                         "Content-Encoding"):
                assert name not in headers, name
            # the page and each fragment asked uncompressed; the other host never asked
            assert all(seen.get("Accept-Encoding") == "identity" for seen in origin.seen)
            assert len(origin.seen) == 5
    asyncio.run(with_proxy(test, esi="on"))


def test_not_signalled_passes_unassembled() -> None:
    async def test(origin: Origin, proxy: str) -> None:
        _, headers, body = await get(proxy + "/page")
        assert b"<esi:include" in body and b"<esi:remove>" in body
        assert headers["ETag"].endswith('"t1"')     # (made weak by the rewrite)
        origin.page_headers = {"Surrogate-Control": 'content="ESI/1.0"'}
        _, headers, body = await get(proxy + "/page")
        assert b"<esi:" not in body
        assert "Surrogate-Control" not in headers
    asyncio.run(with_proxy(test, esi="on"))


def test_always_and_off() -> None:
    async def always(origin: Origin, proxy: str) -> None:
        _, _, body = await get(proxy + "/page")
        assert b"<esi:" not in body and b"[plain]" in body
    asyncio.run(with_proxy(always, esi="always"))

    async def off(origin: Origin, proxy: str) -> None:
        origin.page_headers = {"Surrogate-Control": 'content="ESI/1.0"'}
        _, headers, body = await get(proxy + "/page")
        assert b"<esi:include" in body
        assert headers["Surrogate-Control"] == 'content="ESI/1.0"'
    asyncio.run(with_proxy(off))


def test_other_hosts_refused_unless_listed() -> None:
    page = (b"<esi:include src=http://localhost:{port}/frag/plain>|<esi:include src=/frag/plain>"
            b"<esi:include src=http://127.0.0.1:{port}@localhost:{port}/frag/plain>"
            b"<esi:include src=//localhost:{port}/frag/plain>"
            b"<esi:include src=https://127.0.0.1:{port}/frag/plain>")

    async def test(origin: Origin, proxy: str, listed: bool) -> None:
        port = origin.url.rsplit(":", 1)[1]
        global PAGE
        saved = PAGE
        try:
            PAGE = page.replace(b"{port}", port.encode())
            origin.cut = [PAGE]
            origin.page_headers = {"Surrogate-Control": 'content="ESI/1.0"'}
            _, _, body = await get(proxy + "/page")
        finally:
            PAGE = saved
        # (localhost names the same server, but not the upstream's authority: refused)
        # (listed: localhost by its host, and by the scheme-relative src; never with a
        # userinfo, nor the upstream's authority on another scheme)
        assert body == (b"[plain]|[plain][plain]" if listed else b"|[plain]")
        assert len(origin.seen) == (4 if listed else 2)

    asyncio.run(with_proxy(lambda o, p: test(o, p, False), esi="on"))
    asyncio.run(with_proxy(lambda o, p: test(o, p, True), esi="on",
                           esi_hosts=["localhost:{port}"]))
    # (a host without a port stands for its scheme's default port only)
    asyncio.run(with_proxy(lambda o, p: test(o, p, False), esi="on",
                           esi_hosts=["localhost"]))


def test_cli_options() -> None:
    from htmlstream.cli import build_parser

    parser = build_parser()
    base = ["proxy", "--upstream", "http://127.0.0.1:9"]
    assert parser.parse_args(base).esi == "off"
    assert parser.parse_args([*base, "--esi"]).esi == "on"
    args = parser.parse_args([*base, "--esi=always", "--esi-hosts", "a.example,b.example:8080"])
    assert (args.esi, args.esi_hosts) == ("always", "a.example,b.example:8080")


def test_esi_setting_checked() -> None:
    with pytest.raises(ValueError, match="esi must be"):
        ReverseProxy(Rewriter(), "http://127.0.0.1:9", esi="yes")  # type: ignore[arg-type]
