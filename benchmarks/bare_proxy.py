"""The floor for ``htmlstream proxy``: a bare pass-through reverse proxy on the same HTTP
library (aiohttp's low-level server and a keep-alive ``ClientSession``), no rewriting, no
header policy, no limits, no log: what any aiohttp proxy costs per request.

::

    .venv/bin/python benchmarks/bare_proxy.py UPSTREAM_PORT LISTEN_PORT [asyncio|uvloop]

(benchmarks/bench_proxy.py starts it.)  It streams as the real proxy does (64 KiB reads, each
written before the next read), drops the hop-by-hop fields both ways and lets aiohttp frame
each side.
"""

from __future__ import annotations

import asyncio
import signal
import sys

import aiohttp
from aiohttp import web

HOP = frozenset({"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade",
                 "proxy-connection", "host", "content-length"})


async def main(upstream: int, port: int) -> None:
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=256), auto_decompress=False,
        skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"))
    base = f"http://127.0.0.1:{upstream}"

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP]
        async with session.request(request.method, base + request.raw_path, headers=headers,
                                   data=request.content if request.body_exists else None,
                                   allow_redirects=False) as up:
            response = web.StreamResponse(status=up.status, reason=up.reason)
            for k, v in up.headers.items():
                if k.lower() not in HOP:
                    response.headers.add(k, v)
            await response.prepare(request)
            while chunk := await up.content.read(65536):
                await response.write(chunk)
            await response.write_eof()
            return response

    server = web.Server(handle, access_log=None)
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(server, "127.0.0.1", port, backlog=511)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    listener.close()
    await server.shutdown(1.0)
    await session.close()


if __name__ == "__main__":
    factory = None
    if sys.argv[3:] == ["uvloop"]:
        import uvloop
        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main(int(sys.argv[1]), int(sys.argv[2])))
