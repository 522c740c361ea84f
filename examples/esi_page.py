"""A page assembled from Edge Side Includes: an origin on loopback serves a page with three
<esi:include> tags whose fragments each take 0.2 s; recipes.esi fetches them side by side and
writes them in document order (about 0.4 s in all, the alt after its failed src; 0.8 s one by one).

    python examples/esi_page.py   # the assembled page, then the time it took, on standard output
"""

from __future__ import annotations

import asyncio
import sys
import time

from aiohttp import ClientSession, web

from htmlstream import recipes

PAGE = """<!DOCTYPE html><title>Front page</title>
<esi:include src="/fragments/header"/>
<main><esi:include src="/fragments/article" onerror="continue"/></main>
<esi:remove><p>Shown only where no ESI processor runs.</p></esi:remove>
<esi:include src="/fragments/missing" alt="/fragments/footer"/>
"""
FRAGMENTS = {"header": "<header>Welcome back</header>",
             "article": "<article>Today's story</article>",
             "footer": "<footer>(c) the newsroom</footer>"}
DELAY = 0.2


async def origin() -> web.AppRunner:
    """The origin: the page, and each fragment after DELAY seconds (404 for unknown ones)."""
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def fragment(request: web.Request) -> web.Response:
        await asyncio.sleep(DELAY)
        body = FRAGMENTS.get(request.match_info["name"])
        if body is None:
            raise web.HTTPNotFound()
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/fragments/{name}", fragment)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


async def assemble() -> tuple[bytes, float]:
    """The assembled page and the seconds it took."""
    runner = await origin()
    try:
        port = runner.addresses[0][1]
        base = f"http://127.0.0.1:{port}/"
        async with ClientSession() as session:
            async def fetch(url: str) -> bytes:      # a non-2xx status fails the fragment
                async with session.get(url) as response:
                    response.raise_for_status()
                    return await response.read()

            start = time.monotonic()
            async with session.get(base) as response:
                page = await response.read()
            out = await recipes.esi(fetch).rewrite(page, base)
            return out, time.monotonic() - start
    finally:
        await runner.cleanup()


def main() -> int:
    page, seconds = asyncio.run(assemble())
    sys.stdout.write(page.decode("utf-8") + f"\n<!-- assembled in {seconds:.2f} s -->\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
