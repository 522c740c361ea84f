"""``htmlstream proxy`` measured: streaming, throughput and latency, memory per open stream.

Three processes on 127.0.0.1: an origin (an aiohttp app, started by this script), the proxy
(the ``htmlstream proxy`` command itself, with ``--demo``: http:// links upgraded, images
lazy-loaded), and the client (this script, aiohttp).  Optionally nginx with ``sub_filter``
(``http://`` -> ``https://``, Debian's nginx) as the classic way to rewrite HTML at a proxy,
when an ``nginx`` binary is found.  Ratios in one run; the machine's load shows in the absolute
figures.

* Streaming: the origin trickles an 8 MB page (64 KiB writes, ``--trickle`` seconds in all);
  time to first body byte and to the last one, direct and through the proxy.
* Throughput and latency: ``--requests`` GETs of each corpus page at ``--concurrency``, direct,
  through the proxy, through nginx: requests/s, MB/s, p50 and p99 latency.
* Memory per open stream: RSS growth of the proxy while ``--streams`` clients hold a trickled
  page open, reading nothing.

::

    .venv/bin/python benchmarks/bench_proxy.py [--requests 300] [--concurrency 8] [--markdown]

``--compare`` (what ``make bench-proxy`` runs, after installing Debian's ``nginx-light`` and
``wrk``) is issue 29's comparison instead, in one run, with ``wrk`` as the load: nginx serving
two real-looking pages (about 50 KB: the start of a company's home page, and about 250 KB: the
start of a specification, cut at a tag, from tests/data/corpus) as the origin, and in front of
it, one process each: ``htmlstream proxy --workers 1 --on 'a[href^="http:"]' --set-attr x=1``
(on uvloop, and on asyncio's loop), the bare aiohttp pass-through proxy of
benchmarks/bare_proxy.py (the floor: the same HTTP library, no rewriting), and nginx with
``sub_filter`` (one worker).  For each page: requests/s and p50/p99 latency at
``--connections`` (50) connections, and the p50 at one connection minus the origin's own
(the latency added).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("HTMLSTREAM_CORPUS", ROOT / "tests" / "data" / "corpus"))

ORIGIN = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from aiohttp import web
    corpus = Path(sys.argv[1])
    trickle = float(sys.argv[2])
    pages = {p.name: p.read_bytes() for p in corpus.glob("*.html")}
    piece = (b"<p>text <a href='http://example.com/x'>link</a> <img src='http://e.org/i.png'>"
             * 1000)[:65536]
    n = (8 << 20) // len(piece)

    async def page(request):
        return web.Response(body=pages[request.match_info["name"]],
                            content_type="text/html", charset="utf-8")

    async def trickled(request):
        resp = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
        await resp.prepare(request)
        await resp.write(b"<!doctype html><title>big</title>")
        for _ in range(n):
            await resp.write(piece)
            await asyncio.sleep(trickle / n)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_get("/corpus/{name}", page)
    app.router.add_get("/trickle", trickled)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[3]), access_log=None,
                print=lambda *a: print("ready", flush=True))
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


@contextmanager
def process(args: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def print_table(head: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool) -> None:
    """The rows under ``head``, as Markdown or as aligned columns."""
    if markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        print("  ".join(f"{h:>18}" for h in head))
        for row in rows:
            print("  ".join(f"{c:>18}" for c in row))


@contextmanager
def nginx_server(port: int, http: str) -> Iterator[bool]:
    """Debian's nginx on 127.0.0.1:``port`` with ``http`` as the body of its ``http`` block (a
    throwaway prefix: temp paths, pid and log in it); yields False when nginx is missing."""
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                       else None)
    if binary is None:
        yield False
        return
    with tempfile.TemporaryDirectory() as prefix:
        conf = Path(prefix, "nginx.conf")
        conf.write_text(textwrap.dedent(f"""
            worker_processes 1;
            daemon off;
            pid {prefix}/nginx.pid;
            error_log {prefix}/error.log;
            events {{ worker_connections 1024; }}
            http {{
                access_log off;
                client_body_temp_path {prefix}; proxy_temp_path {prefix};
                fastcgi_temp_path {prefix}; uwsgi_temp_path {prefix}; scgi_temp_path {prefix};
        """) + textwrap.indent(textwrap.dedent(http), "    ") + "}\n")
        with process([binary, "-p", prefix, "-c", str(conf)], port):
            yield True


@contextmanager
def nginx(upstream: int, port: int) -> Iterator[bool]:
    """nginx in front of ``upstream`` rewriting http:// to https:// with ``sub_filter``."""
    with nginx_server(port, f"""
        upstream origin {{ server 127.0.0.1:{upstream}; keepalive 32; }}
        server {{
            listen 127.0.0.1:{port};
            location / {{
                proxy_pass http://origin;
                proxy_http_version 1.1;
                proxy_set_header Connection "";
                proxy_set_header Accept-Encoding "";
                sub_filter 'http://' 'https://';
                sub_filter_once off;
            }}
        }}
    """) as started:
        yield started


async def ttfb(url: str) -> tuple[float, float, int]:
    async with aiohttp.ClientSession() as s:
        started = time.perf_counter()
        first = 0.0
        size = 0
        async with s.get(url) as r:
            async for piece in r.content.iter_any():
                if not size:
                    first = time.perf_counter() - started
                size += len(piece)
        return first, time.perf_counter() - started, size


async def load(url: str, requests: int, concurrency: int) -> tuple[float, list[float], int]:
    latencies: list[float] = []
    size = 0
    queue = list(range(requests))
    conn = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=conn) as s:
        async def worker() -> None:
            nonlocal size
            while queue:
                queue.pop()
                t = time.perf_counter()
                async with s.get(url) as r:
                    body = await r.read()
                size += len(body)
                latencies.append(time.perf_counter() - t)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - started, latencies, size


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def open_streams(url: str, n: int, hold: float) -> None:
    readers = []
    for _ in range(n):
        r, w = await asyncio.open_connection("127.0.0.1", int(url.rsplit(":", 1)[1].split("/")[0]))
        w.write(b"GET /trickle HTTP/1.1\r\nHost: x\r\n\r\n")
        await w.drain()
        await r.read(1)             # the response started; then nothing is read
        readers.append(w)
    await asyncio.sleep(hold)
    for w in readers:
        w.close()


def cut_page(source: Path, size: int) -> bytes:
    """The first ``size`` bytes of ``source``, cut after a tag's ``>``, the document closed."""
    data = source.read_bytes()
    end = data.index(b">", size) + 1
    return data[:end] + b"\n</body></html>\n"


def wrk(url: str, connections: int, seconds: float) -> tuple[float, float, float, int]:
    """``wrk -t1`` against ``url``: requests/s, p50 and p99 latency (ms), errors."""
    duration = f"-d{max(1, round(seconds))}s"       # (wrk takes whole seconds)
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", duration, "--latency", url],
                         capture_output=True, text=True, timeout=seconds + 30).stdout
    def ms(label: str) -> float:
        for line in out.splitlines():
            parts = line.split()
            if parts[:1] == [label]:
                value = parts[1]
                for unit, scale in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
                    if value.endswith(unit):
                        return float(value[:-len(unit)]) * scale
        raise RuntimeError(f"no {label} in wrk's output:\n{out}")
    rps = next(float(line.split()[1]) for line in out.splitlines()
               if line.startswith("Requests/sec:"))
    errors = 0
    for line in out.splitlines():
        if "Socket errors" in line or "Non-2xx" in line:
            errors += sum(int(n) for n in line.replace(",", " ").split() if n.isdigit())
    return rps, ms("50%"), ms("99%"), errors


def compare(args: argparse.Namespace) -> None:
    """Issue 29's comparison: htmlstream proxy, the bare proxy and nginx sub_filter."""
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: make bench-proxy installs it (Debian's wrk)")
    with tempfile.TemporaryDirectory() as root:
        os.chmod(root, 0o755)       # (nginx's workers run as nobody when it runs as root)
        pages = {"50 KB": cut_page(CORPUS / "cloudflare.com.html", 50_000),
                 "250 KB": cut_page(CORPUS / "html-parsing-spec.html", 250_000)}
        names = {}
        for label, body in pages.items():
            name = f"page-{label.split()[0]}k.html"
            Path(root, name).write_bytes(body)
            names[label] = name
        o_port, b_port, h_port, a_port, n_port = (free_port() for _ in range(5))
        with nginx_server(o_port, f"""
                server {{
                    listen 127.0.0.1:{o_port};
                    root {root};
                    default_type text/html;
                    charset utf-8;
                    keepalive_requests 1000000;
                }}
            """) as has_origin:
            if not has_origin:
                raise SystemExit("nginx is not installed: make bench-proxy installs it "
                                 "(Debian's nginx-light)")
            upstream = f"http://127.0.0.1:{o_port}"
            rewrite = ["--on", 'a[href^="http:"]', "--set-attr", "x=1", "--workers", "1"]
            cli = [sys.executable, "-m", "htmlstream.cli", "proxy", "--upstream", upstream]
            bare = [sys.executable, str(Path(__file__).with_name("bare_proxy.py")),
                    str(o_port)]
            targets = [("direct (nginx origin)", None, o_port),
                       ("bare aiohttp proxy", [*bare, str(b_port), "uvloop"], b_port),
                       ("htmlstream proxy", [*cli, "--listen", f"127.0.0.1:{h_port}",
                                             *rewrite, "--loop", "uvloop"], h_port),
                       ("htmlstream (asyncio)", [*cli, "--listen", f"127.0.0.1:{a_port}",
                                                 *rewrite, "--loop", "asyncio"], a_port),
                       ("nginx sub_filter", "nginx", n_port)]
            results: dict[tuple[str, str], tuple[float, float, float, int, float]] = {}
            for name, command, port in targets:
                with contextlib.ExitStack() as stack:
                    if command == "nginx":
                        stack.enter_context(nginx(o_port, port))
                    elif command is not None:
                        stack.enter_context(process(command, port))
                    for label, page in names.items():
                        url = f"http://127.0.0.1:{port}/{page}"
                        wrk(url, 4, 1)          # warm up (the pools' connections)
                        rps, p50, p99, errors = wrk(url, args.connections, args.seconds)
                        one = wrk(url, 1, max(1, round(args.seconds / 2)))[1]
                        results[name, label] = (rps, p50, p99, errors, one)
                        print(f"  {name:24} {label:>7}: {rps:9,.0f} req/s  p50 {p50:6.2f} ms  "
                              f"p99 {p99:6.2f} ms  errors {errors}  one connection p50 "
                              f"{one:.3f} ms", flush=True)
    head = ("page", "path", "req/s", "p50 ms", "p99 ms", "added p50 ms (1 conn)",
            "htmlstream ÷ this")
    rows = []
    for label in names:
        mine = results["htmlstream proxy", label][0]
        direct_one = results["direct (nginx origin)", label][4]
        for name, _, _ in targets:
            rps, p50, p99, errors, one = results[name, label]
            rows.append((label, name, f"{rps:,.0f}" + (f" ({errors} errors)" if errors else ""),
                         f"{p50:.2f}", f"{p99:.2f}",
                         "-" if name.startswith("direct") else f"{one - direct_one:.3f}",
                         f"{mine / rps:.2f}x"))
    print(f"\nwrk -t1 -c{args.connections} -d{args.seconds:g}s, one process each, loopback; "
          f"indicative only on a shared machine")
    print_table(head, rows, args.markdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--trickle", type=float, default=4.0)
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--compare", action="store_true",
                        help="issue 29's comparison with wrk (htmlstream, bare, nginx)")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    if args.compare:
        compare(args)
        return

    o_port, p_port, n_port = free_port(), free_port(), free_port()
    origin = [sys.executable, "-c", ORIGIN, str(CORPUS), str(args.trickle), str(o_port)]
    proxy = [sys.executable, "-m", "htmlstream.cli", "proxy", "--upstream",
             f"http://127.0.0.1:{o_port}", "--listen", f"127.0.0.1:{p_port}", "--demo",
             "--workers", "1"]      # one process, as nginx has one worker here
    direct, proxied = f"http://127.0.0.1:{o_port}", f"http://127.0.0.1:{p_port}"
    rows: list[tuple[str, ...]] = []
    with process(origin, o_port), process(proxy, p_port) as proxy_proc, \
            nginx(o_port, n_port) as has_nginx:
        print("streaming an 8 MB page trickled over "
              f"{args.trickle:g} s: time to first byte / to last byte")
        for name, base in (("direct", direct), ("htmlstream proxy", proxied)):
            first, last, size = asyncio.run(ttfb(base + "/trickle"))
            print(f"  {name:18} {first * 1000:8.1f} ms {last:8.2f} s  ({size:,} bytes)")
        if has_nginx:
            first, last, size = asyncio.run(ttfb(f"http://127.0.0.1:{n_port}/trickle"))
            print(f"  {'nginx sub_filter':18} {first * 1000:8.1f} ms {last:8.2f} s  "
                  f"({size:,} bytes)")
        targets = [("direct", direct), ("htmlstream proxy", proxied)]
        if has_nginx:
            targets.append(("nginx sub_filter", f"http://127.0.0.1:{n_port}"))
        for page in sorted(CORPUS.glob("*.html")):
            for name, base in targets:
                url = f"{base}/corpus/{page.name}"
                asyncio.run(load(url, 10, 2))       # warm up
                elapsed, lat, size = asyncio.run(load(url, args.requests, args.concurrency))
                lat.sort()
                rows.append((page.name, name, f"{args.requests / elapsed:.0f}",
                             f"{size / elapsed / 1e6:.1f}",
                             f"{statistics.median(lat) * 1000:.1f}",
                             f"{lat[int(len(lat) * 0.99) - 1] * 1000:.1f}"))
        idle = rss(proxy_proc.pid)
        peak = idle

        async def streams() -> None:
            nonlocal peak
            task = asyncio.create_task(open_streams(proxied, args.streams, 1.5))
            while not task.done():
                peak = max(peak, rss(proxy_proc.pid))
                await asyncio.sleep(0.05)
            await task

        asyncio.run(streams())
    head = ("page", "path", "req/s", "MB/s", "p50 ms", "p99 ms")
    print(f"\n{args.requests} GETs per page, {args.concurrency} at a time")
    print_table(head, rows, args.markdown)
    print(f"\nproxy RSS: {idle / 1e6:.1f} MB idle, {peak / 1e6:.1f} MB with {args.streams} open "
          f"streams: {(peak - idle) / args.streams / 1e3:.0f} kB per stream")


if __name__ == "__main__":
    main()
