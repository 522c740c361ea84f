"""htmlstream.scrape against a local server: pages per second fetching and extracting at
concurrency 1, 8 and 32, and the bytes a head-only extraction (title, og: meta, canonical) reads
next to the full pages.

    .venv/bin/python benchmarks/bench_scrape.py [--pages N] [--repeat N]

The server (aiohttp on 127.0.0.1, in a thread) serves the corpus pages (``tests/data/corpus``,
or ``$HTMLSTREAM_CORPUS``), each with a generated ``<head>`` of og: meta and a canonical link
in front, in 16 KiB writes; robots.txt is off.  The figures include the loopback HTTP and the
client: they say what a crawl costs on this machine, not the extraction alone.  On loopback the
whole page is in the socket at once, so the head-only extraction still gets one full read
(httpcore reads up to 64 KiB at a time) before it stops; over a real network it reads less.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Self

from aiohttp import web

from htmlstream.scrape import scrape

ROOT = Path(__file__).resolve().parents[1]
FULL = {"title": "title::text", "links": "a::attr(href)*", "text": "p::text*"}
HEAD = {"title": "title::text", "og_title": 'meta[property="og:title"]::attr(content)',
        "og_image": 'meta[property="og:image"]::attr(content)',
        "canonical": 'link[rel="canonical"]::attr(href)'}


def corpus() -> list[bytes]:
    env = os.environ.get("HTMLSTREAM_CORPUS")
    root = Path(env) if env else ROOT / "tests" / "data" / "corpus"
    head = (b'<!DOCTYPE html><html><head><title>T</title>'
            b'<meta property="og:title" content="OG"><meta property="og:image" content="/i.png">'
            b'<link rel="canonical" href="https://example.org/c"></head><body>')
    return [head + p.read_bytes() for p in sorted(root.glob("*.html"))]


class Server:
    def __init__(self, pages: list[bytes]) -> None:
        self.pages = pages
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        data = self.pages[int(request.match_info["n"]) % len(self.pages)]
        response = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
        response.content_length = len(data)
        await response.prepare(request)
        try:
            for i in range(0, len(data), 16384):
                await response.write(data[i:i + 16384])
        except ConnectionResetError:
            pass    # the client stopped reading (the head-only extraction): what it should do
        return response

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/{n}", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def __enter__(self) -> Self:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.start(), self.loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def run(urls: list[str], fields: dict[str, str], concurrency: int) -> tuple[float, int, int]:
    """(seconds, body bytes read, pages)."""
    start = time.perf_counter()
    read = n = 0
    for page in scrape(urls, fields, concurrency=concurrency, per_host=concurrency,
                       robots=False, timeout=30):
        read += page.bytes_read
        n += 1
    return time.perf_counter() - start, read, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=200, help="pages per run (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    args = parser.parse_args()
    pages = corpus()
    total = sum(len(p) for p in pages)
    print(f"{len(pages)} corpus pages, {total / 1e6:.2f} MB; {args.pages} pages per run, "
          f"best of {args.repeat}")
    with Server(pages) as server:
        urls = [f"http://127.0.0.1:{server.port}/{i}" for i in range(args.pages)]
        print(f"{'case':<24}{'pages/s':>10}{'MB/s':>9}{'bytes/page':>12}")
        results: dict[str, tuple[float, int]] = {}
        for name, fields in (("full", FULL), ("head-only", HEAD)):
            for concurrency in (1, 8, 32):
                best = min(run(urls, fields, concurrency) for _ in range(args.repeat))
                seconds, read, n = best
                results[f"{name} c={concurrency}"] = (seconds, read)
                print(f"{name + ' c=' + str(concurrency):<24}{n / seconds:>10.0f}"
                      f"{read / seconds / 1e6:>9.1f}{read / n:>12.0f}")
        full = results["full c=8"][1]
        head = results["head-only c=8"][1]
        print(f"head-only reads {head / full:.1%} of the bytes of the full extraction "
              f"({head:,} of {full:,})")


if __name__ == "__main__":
    main()
