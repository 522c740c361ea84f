"""``recipes.esi`` (issue 31) against a real origin: an aiohttp server on 127.0.0.1 serving
the fragments (delays, failures, stalls, a connection closed mid-body, an include loop), fetched
with an aiohttp client; every page in many chunkings, the fragments sent in several."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import aiohttp.web
import pytest

from chunking import chunkings
from htmlstream import recipes
from htmlstream.recipes.esi import EsiError

FRAGMENTS = {
    "a": "<b>A<esi:include src=c></b>",     # (relative to /f/a: /f/c)
    "c": "C&amp;",
    "nested": "<i>N<!--esi <esi:include src=/f/c> --></i>",
    "self": "S<esi:include src=/f/self>",
    "big": "<p>big</p>" * 2000,
    "x": "x",
}


class Origin:
    """The origin: /f/NAME gives FRAGMENTS[NAME] in pieces of ``?cut=`` bytes after ``?delay=``
    ms; /status/N answers N; /stall never answers; /cut closes the connection mid-body;
    /gate/NAME waits for ``gate``."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests = 0
        self.gate = asyncio.Event()
        self.url = ""
        self.runner: aiohttp.web.AppRunner | None = None
        self.session: aiohttp.ClientSession | None = None

    async def fragment(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            name = request.match_info["name"]
            if request.path.startswith("/gate/"):
                await self.gate.wait()
            delay = float(request.query.get("delay", "0")) / 1000
            if delay:
                await asyncio.sleep(delay)
            if name not in FRAGMENTS:
                return aiohttp.web.Response(status=404, text="no such fragment")
            body = FRAGMENTS[name].encode()
            cut = int(request.query.get("cut", "0")) or len(body)
            resp = aiohttp.web.StreamResponse()
            resp.content_type = "text/html"
            await resp.prepare(request)
            for i in range(0, len(body), cut):
                await resp.write(body[i:i + cut])
            await resp.write_eof()
            return resp
        finally:
            self.in_flight -= 1

    async def status(self, request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(status=int(request.match_info["code"]), text="error page")

    async def stall(self, request: aiohttp.web.Request) -> aiohttp.web.Response:
        await asyncio.Event().wait()        # (cancelled when the client goes or at cleanup)
        raise AssertionError("unreachable")

    async def cut_body(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        resp = aiohttp.web.StreamResponse()
        resp.content_length = 1000
        await resp.prepare(request)
        await resp.write(b"partial ")
        assert request.transport is not None
        request.transport.close()
        return resp

    async def fetch(self, url: str) -> AsyncIterator[bytes]:
        """The fetch under test: a non-2xx status is an error; the body streams."""
        assert self.session is not None
        resp = await self.session.get(url)
        if not 200 <= resp.status < 300:
            resp.release()
            raise OSError(f"status {resp.status}")

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in resp.content.iter_any():
                    yield chunk
            finally:
                resp.release()
        return body()


async def with_origin(test: Callable[[Origin], Awaitable[Any]]) -> Any:
    origin = Origin()
    app = aiohttp.web.Application()
    app.router.add_get("/f/{name}", origin.fragment)
    app.router.add_get("/gate/{name}", origin.fragment)
    app.router.add_get("/status/{code}", origin.status)
    app.router.add_get("/stall", origin.stall)
    app.router.add_get("/cut", origin.cut_body)
    runner = aiohttp.web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    origin.url = f"http://127.0.0.1:{port}"
    origin.session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=30))
    try:
        return await asyncio.wait_for(test(origin), 60)
    finally:
        await origin.session.close()
        await runner.cleanup()


def run(test: Callable[[Origin], Awaitable[Any]]) -> Any:
    return asyncio.run(with_origin(test))


def own_tasks() -> int:
    """Tasks other than the origin's connection handlers (kept-alive connections)."""
    return sum(1 for t in asyncio.all_tasks()
               if not getattr(t.get_coro(), "__qualname__", "").startswith("RequestHandler"))


async def pieces(cut: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in cut:
        yield chunk


PAGE = ('<html><body><p>1<esi:include src="/f/a?cut={k}">2<esi:remove>R<esi:include src=/f/zz>'
        '</esi:remove><esi:comment text="c"/>3<!--esi <u><esi:include src=f/c?cut={k}></u>-->'
        '4<esi:include src=/status/500 alt="/f/x?cut={k}">5<esi:include src=/status/404 '
        'onerror="continue">6<esi:include src=/f/nested>7<!-- kept -->'
        '<!--esiX not esi--></body></html>')
ASSEMBLED = ('<html><body><p>1<b>AC&amp;</b>23 <u>C&amp;</u>4x56<i>N C&amp; </i>7<!-- kept -->'
             '<!--esiX not esi--></body></html>')


def test_assembles_in_every_chunking() -> None:
    async def test(origin: Origin) -> None:
        tasks_before = own_tasks()
        esi = recipes.esi(origin.fetch)
        for n, k in enumerate((1, 3, 0)):
            page = PAGE.replace("{k}", str(k)).encode()
            cuts = chunkings(page, seed=n, split_samples=6, random_splits=6,
                             single_bytes=k == 1)
            for cut in cuts:
                out = await esi.rewrite(pieces(cut), origin.url + "/page")
                assert out.decode() == ASSEMBLED, [len(c) for c in cut]
        assert own_tasks() == tasks_before
    run(test)


def test_sources_and_url_resolution() -> None:
    async def test(origin: Origin) -> None:
        esi = recipes.esi(origin.fetch)
        base = origin.url + "/f/page"
        assert await esi.rewrite("[<esi:include src=x>]", base) == b"[x]"
        assert await esi.rewrite(b"[<esi:include src=../f/x>]", base) == b"[x]"
        assert await esi.rewrite([b"[<esi:inc", b"lude src=x>]"], base) == b"[x]"
        assert await esi.rewrite(f"[<esi:include src={origin.url}/f/x>]", "http://h/") \
            == b"[x]"
    run(test)


def test_first_bytes_leave_before_a_pending_include() -> None:
    async def test(origin: Origin) -> None:
        esi = recipes.esi(origin.fetch)
        page = "<p>before</p><esi:include src=/gate/x><p>after</p>"
        for cut in chunkings(page.encode(), single_bytes=False, random_splits=3):
            origin.gate.clear()
            out = esi.rewrite_aiter(pieces(cut), origin.url + "/")
            got = b""
            while got != b"<p>before</p>":
                got += await anext(out)
                assert b"<p>before</p>".startswith(got)
            origin.gate.set()
            rest = b"".join([d async for d in out])
            assert got + rest == b"<p>before</p>x<p>after</p>"
    run(test)


def test_includes_are_fetched_concurrently() -> None:
    async def test(origin: Origin) -> None:
        esi = recipes.esi(origin.fetch, concurrency=16)
        page = "".join(f"<li><esi:include src=/f/x?delay=200&n={i}>" for i in range(20))
        start = time.monotonic()
        out = await esi.rewrite(page, origin.url + "/")
        elapsed = time.monotonic() - start
        assert out == b"<li>x" * 20
        # sequential fetches take 20 x 0.2 s = 4 s; concurrent ones about 2 x 0.2 s
        assert elapsed < 2.0, elapsed
        assert 2 <= origin.max_in_flight <= 16
    run(test)


def test_concurrency_bound() -> None:
    async def test(origin: Origin) -> None:
        esi = recipes.esi(origin.fetch, concurrency=3)
        page = "".join(f"<esi:include src=/f/x?delay=20&n={i}>" for i in range(12))
        assert await esi.rewrite(page, origin.url + "/") == b"x" * 12
        assert origin.max_in_flight <= 3
    run(test)


def test_stalled_fragment_times_out() -> None:
    async def test(origin: Origin) -> None:
        tasks_before = own_tasks()
        errors: list[EsiError] = []

        def on_error(err: EsiError) -> str:
            errors.append(err)
            return "[failed]"

        esi = recipes.esi(origin.fetch, timeout=0.3, on_error=on_error)
        out = await esi.rewrite("a<esi:include src=/stall>b<esi:include src=/stall alt=/f/x>c",
                                origin.url + "/")
        assert out == b"a[failed]bxc"
        assert [e.reason for e in errors] == ["timed out"]
        assert errors[0].url == origin.url + "/stall"
        await asyncio.sleep(0)
        assert own_tasks() == tasks_before
    run(test)


def test_fragment_closed_mid_body() -> None:
    async def test(origin: Origin) -> None:
        esi = recipes.esi(origin.fetch)
        assert await esi.rewrite("a<esi:include src=/cut>b", origin.url + "/") == b"ab"
        esi = recipes.esi(origin.fetch, on_error="fail")
        with pytest.raises(EsiError, match="/cut"):
            await esi.rewrite("a<esi:include src=/cut>b", origin.url + "/")
    run(test)


def test_fail_policy_stops_the_stream_after_what_came_before() -> None:
    async def test(origin: Origin) -> None:
        esi = recipes.esi(origin.fetch, on_error="fail")
        out = esi.rewrite_aiter("<p>a</p><esi:include src=/status/503><p>b</p>",
                                origin.url + "/")
        assert await anext(out) == b"<p>a</p>"
        with pytest.raises(EsiError, match="status 503"):
            await anext(out)
        # onerror="continue" on the tag wins over the policy
        assert await esi.rewrite("a<esi:include src=/status/503 onerror=continue>b",
                                 origin.url + "/") == b"ab"
    run(test)


def test_include_loop_stops_at_max_depth() -> None:
    async def test(origin: Origin) -> None:
        for depth in (0, 1, 5):
            esi = recipes.esi(origin.fetch, max_depth=depth)
            out = await esi.rewrite("<esi:include src=/f/self>", origin.url + "/")
            assert out == b"S" * depth
        esi = recipes.esi(origin.fetch, on_error=lambda e: f"[{e.reason}]")
        out = await esi.rewrite("<esi:include src=/f/self>", origin.url + "/")
        assert out == b"S" * 5 + b"[deeper than max_depth=5]"
    run(test)


def test_ten_thousand_includes() -> None:
    async def test(origin: Origin) -> None:
        tasks_before = own_tasks()
        esi = recipes.esi(origin.fetch)
        page = "<p>" + "<esi:include src=/f/x>" * 10_000 + "</p>"
        out = await esi.rewrite(page, origin.url + "/")
        assert out == b"<p>" + b"x" * 256 + b"</p>"
        assert origin.requests == 256
        failed: list[str] = []

        def on_error(err: EsiError) -> str:
            failed.append(err.reason)
            return ""

        esi = recipes.esi(origin.fetch, on_error=on_error)
        await esi.rewrite(page, origin.url + "/")
        assert len(failed) == 10_000 - 256
        assert set(failed) == {"more than max_includes=256 in the page"}
        assert own_tasks() == tasks_before
    run(test)


def test_large_fragment_with_small_buffers() -> None:
    """A fragment larger than the buffer goes through with backpressure; one larger than
    max_fragment_size fails."""
    async def test(origin: Origin) -> None:
        esi = recipes.esi(origin.fetch, buffer_size=64)
        out = await esi.rewrite("<esi:include src=/f/x?delay=50>|<esi:include src=/f/big>",
                                origin.url + "/")
        assert out == b"x|" + FRAGMENTS["big"].encode()
        esi = recipes.esi(origin.fetch, max_fragment_size=1000)
        assert await esi.rewrite("<esi:include src=/f/big>", origin.url + "/") == b""
    run(test)


def test_closing_early_cancels_the_fetches() -> None:
    async def test(origin: Origin) -> None:
        tasks_before = own_tasks()
        esi = recipes.esi(origin.fetch)
        out = esi.rewrite_aiter("a<esi:include src=/stall><esi:include src=/stall>",
                                origin.url + "/")
        assert await anext(out) == b"a"
        await out.aclose()
        assert own_tasks() == tasks_before
    run(test)


def test_arguments_checked() -> None:
    async def fetch(url: str) -> bytes:
        return b""
    with pytest.raises(ValueError):
        recipes.esi(fetch, on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        recipes.esi(fetch, concurrency=0)


def test_remove_ends_where_the_parser_ends_it() -> None:
    async def fetch(url: str) -> str:
        return "[F]"

    async def test() -> None:
        esi = recipes.esi(fetch)
        cases = {
            "<p><esi:remove>x</p><esi:include src=/a>": b"<p></p>[F]",
            "<div><esi:remove>x<esi:include src=/a></div>|<esi:include src=/a>": b"<div></div>|[F]",
            "<esi:remove>x<esi:include src=/a>": b"",
        }
        for page, expected in cases.items():
            for cut in chunkings(page.encode(), random_splits=3):
                assert await esi.rewrite(pieces(cut), "http://o/") == expected
    asyncio.run(test())
