"""WebSockets through ``htmlstream proxy``: round-trip latency and throughput, next to the same
traffic direct and through nginx (Debian's, when installed) as the classic WebSocket proxy.

Three processes on 127.0.0.1: an aiohttp WebSocket echo origin (started by this script), the
proxy (the ``htmlstream proxy`` command) or nginx, and the client (this script, aiohttp).
Ratios in one run; the machine's load shows in the absolute figures.

* Round trips: ``--echoes`` 100-byte text messages, one at a time: p50 and p99, messages/s.
* Throughput: ``--blobs`` binary messages of 256 KiB, one at a time: MB/s (each way).
* Many sockets: ``--sockets`` WebSockets at once, 20 echoes each: messages/s.

::

    .venv/bin/python benchmarks/bench_proxy_websocket.py [--echoes 2000] [--markdown]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_proxy import free_port, nginx_server, print_table, process

ORIGIN = textwrap.dedent("""
    import sys
    from aiohttp import web, WSMsgType

    async def echo(request):
        ws = web.WebSocketResponse(max_msg_size=1 << 24)
        await ws.prepare(request)
        async for msg in ws:
            if msg.type is WSMsgType.TEXT:
                await ws.send_str(msg.data)
            elif msg.type is WSMsgType.BINARY:
                await ws.send_bytes(msg.data)
        return ws

    app = web.Application()
    app.router.add_get("/ws", echo)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
""")


@contextmanager
def nginx_ws(upstream: int, port: int) -> Iterator[bool]:
    """nginx relaying WebSockets to ``upstream``."""
    with nginx_server(port, f"""
        server {{
            listen 127.0.0.1:{port};
            location / {{
                proxy_pass http://127.0.0.1:{upstream};
                proxy_http_version 1.1;
                proxy_set_header Upgrade $http_upgrade;
                proxy_set_header Connection "upgrade";
            }}
        }}
    """) as started:
        yield started


async def round_trips(url: str, n: int) -> tuple[list[float], float]:
    async with aiohttp.ClientSession() as s, s.ws_connect(url) as ws:
        lat = []
        started = time.perf_counter()
        for i in range(n):
            t = time.perf_counter()
            await ws.send_str(f"{i:0100d}")
            await ws.receive()
            lat.append(time.perf_counter() - t)
        return lat, time.perf_counter() - started


async def blobs(url: str, n: int) -> float:
    blob = bytes(range(256)) * 1024
    async with aiohttp.ClientSession() as s, s.ws_connect(url, max_msg_size=1 << 24) as ws:
        started = time.perf_counter()
        for _ in range(n):
            await ws.send_bytes(blob)
            msg = await ws.receive()
            assert len(msg.data) == len(blob)
        return n * len(blob) / (time.perf_counter() - started) / 1e6


async def many(url: str, sockets: int, echoes: int) -> float:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        async def one() -> None:
            async with s.ws_connect(url) as ws:
                for i in range(echoes):
                    await ws.send_str(str(i))
                    await ws.receive()

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(sockets)))
        return sockets * echoes / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--echoes", type=int, default=2000)
    parser.add_argument("--blobs", type=int, default=200)
    parser.add_argument("--sockets", type=int, default=100)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    o_port, p_port, n_port = free_port(), free_port(), free_port()
    origin = [sys.executable, "-c", ORIGIN, str(o_port)]
    proxy = [sys.executable, "-m", "htmlstream.cli", "proxy", "--upstream",
             f"http://127.0.0.1:{o_port}", "--listen", f"127.0.0.1:{p_port}", "--on", "title",
             "--set-attr", "data-x=1", "--workers", "1"]
    rows: list[tuple[str, ...]] = []
    with process(origin, o_port), process(proxy, p_port), nginx_ws(o_port, n_port) as has_nginx:
        targets = [("direct", o_port), ("htmlstream proxy", p_port)]
        if has_nginx:
            targets.append(("nginx", n_port))
        for name, port in targets:
            url = f"http://127.0.0.1:{port}/ws"
            asyncio.run(round_trips(url, 100))      # warm up
            lat, elapsed = asyncio.run(round_trips(url, args.echoes))
            lat.sort()
            mbs = asyncio.run(blobs(url, args.blobs))
            rate = asyncio.run(many(url, args.sockets, 20))
            rows.append((name, f"{statistics.median(lat) * 1e6:.0f}",
                         f"{lat[int(len(lat) * 0.99) - 1] * 1e6:.0f}",
                         f"{args.echoes / elapsed:.0f}", f"{mbs:.0f}", f"{rate:.0f}"))
    head = ("path", "RTT p50 µs", "RTT p99 µs", "echoes/s", "256 KiB MB/s",
            f"{args.sockets} sockets msg/s")
    print_table(head, rows, args.markdown)


if __name__ == "__main__":
    main()
