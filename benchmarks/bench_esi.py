"""Issue 31: Edge Side Includes, concurrent against sequential fetches (``recipes.esi``).

    .venv/bin/python benchmarks/bench_esi.py [--includes N] [--delay MS] [--repeat N]

A loopback aiohttp origin delays each fragment by ``--delay`` ms; a page has ``--includes``
includes.  For each run: time to first byte (the bytes before the first include) and to last
byte, with ``concurrency=16`` (the default), with ``concurrency=N`` (every include at once), and
with ``concurrency=1``: one fetch after another, as Fastly and Varnish Cache fetch them (the
sequential reference; Varnish itself is not run here).  The best of ``--repeat`` runs, in one
process; wall-clock times on loopback (a loaded machine adds to them, the ratios hold better).
Issue targets: time to last byte <= 2 x one delay (with every include fetched at once), time to
first byte independent of the fragments.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator

import aiohttp
import aiohttp.web

from htmlstream import recipes


async def main(includes: int, delay: float, repeat: int) -> None:
    async def fragment(request: aiohttp.web.Request) -> aiohttp.web.Response:
        await asyncio.sleep(delay)
        return aiohttp.web.Response(text=f"<p>fragment {request.match_info['n']}</p>",
                                    content_type="text/html")

    app = aiohttp.web.Application()
    app.router.add_get("/f/{n}", fragment)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}/"
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def fetch(url: str) -> AsyncIterator[bytes]:
        resp = await session.get(url)
        resp.raise_for_status()

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in resp.content.iter_any():
                    yield chunk
            finally:
                resp.release()
        return body()

    page = "<h1>head</h1>" + "".join(f"<esi:include src=/f/{i}>" for i in range(includes))
    print(f"{includes} includes, each delayed {delay * 1000:.0f} ms; best of {repeat}")
    print(f"{'concurrency':>12} {'TTFB ms':>9} {'TTLB ms':>9} {'TTLB / delay':>13}")
    try:
        for concurrency in (16, includes, 1):
            esi = recipes.esi(fetch, concurrency=concurrency)
            firsts, lasts = [], []
            for _ in range(repeat):
                start = time.perf_counter()
                out = esi.rewrite_aiter(page, base)
                await anext(out)
                firsts.append(time.perf_counter() - start)
                async for _data in out:
                    pass
                lasts.append(time.perf_counter() - start)
            print(f"{concurrency:>12} {min(firsts) * 1000:>9.1f} {min(lasts) * 1000:>9.1f} "
                  f"{min(lasts) / delay:>13.2f}")
    finally:
        await session.close()
        await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--includes", type=int, default=20)
    parser.add_argument("--delay", type=float, default=50.0, help="ms per fragment")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.includes, args.delay / 1000, args.repeat))
