#!/usr/bin/env python3
"""Time and memory grow linearly: 1, 10 and 100 MB documents streamed through a Rewriter.

Each case generates its document chunk by chunk (never held whole) and streams it in 64 KiB
chunks through a Rewriter with two element handlers (``a[href]`` rewrites the link, ``img`` gets
``loading="lazy"``).  The cases:

* ``realistic`` — generated pages: head, styles, scripts, navigation, articles with links,
  images, entities and UTF-8 text, tables, comments;
* ``text`` — one huge text node (``<p>`` + the whole size of text, with entities);
* ``comment`` — one huge comment, with ``max_buffer_size`` raised above its size (a comment is a
  token: it is carried over whole until its end);
* ``nesting`` — ``<div>`` nested as deep as the size allows, then closed.

For each case and size the best time of a few runs (process CPU time by default: robust on a
busy machine; generating the document is not counted) and the throughput are printed; linear
time means the same MB/s at every size, i.e. a ``x/1MB`` ratio of 10 and 100 (x the time of
1 MB); the time of each tenth of the largest document shows the same from inside one stream
(nothing gets slower as the stream goes on).  Then a fresh subprocess streams an 8 MB realistic
document and reports its peak RSS next to the baseline after ``import htmlstream`` and building
the rewriter.

Usage::

    .venv/bin/python benchmarks/bench_linear.py                  # all cases, 1/10/100 MB
    .venv/bin/python benchmarks/bench_linear.py --sizes 1,10 --case text --clock wall
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

MB = 1_000_000
CHUNK = 65536

# --------------------------------------------------------------------------- documents

WORDS = ("stream", "rewriter", "bytes", "arrive", "handlers", "selectors", "memory", "bounded",
         "page", "edge", "cache", "worker", "latency", "throughput", "naïve", "café", "Größe",
         "日本語", "emoji 🎉")
ENTITIES = ("&amp;", "&lt;", "&gt;", "&quot;", "&copy;", "&#169;", "&#x2014;", "&nbsp;")


def _sentence(rng: random.Random, n: int = 12) -> str:
    parts = []
    for _ in range(n):
        parts.append(rng.choice(WORDS))
        if rng.random() < 0.08:
            parts.append(rng.choice(ENTITIES))
    return " ".join(parts)


def _page(rng: random.Random, k: int) -> bytes:
    """One generated page of about 60 KB."""
    out = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<title>Page {k} &amp; more</title>"
        "<style>body{margin:0;font:16px/1.5 sans-serif}.post>h2 a{color:#036}</style>"
        "<script>function track(a, b) { if (a < b && b > 0) { return '</p>'; } }</script>"
        "</head><body><nav><ul>",
    ]
    out += [f"<li><a href=\"/section/{i}\">{rng.choice(WORDS)}</a></li>" for i in range(12)]
    out.append("</ul></nav><main>")
    for j in range(40):
        out.append(f"<article class=\"post\" id=p{k}-{j}><h2><a href=\"/post/{k}/{j}\">"
                   f"{_sentence(rng, 5)}</a></h2><!-- post {j} -->")
        for _ in range(3):
            out.append(f"<p>{_sentence(rng)} <a href='https://example.com/{rng.random():.6f}'>"
                       f"{rng.choice(WORDS)}</a> {_sentence(rng)}</p>")
        out.append(f"<img src=\"/img/{k}/{j}.png\" alt=\"{rng.choice(WORDS)}\" width=640>")
        if j % 8 == 0:
            out.append("<table><tr><th>a</th><th>b</th></tr>" + "".join(
                f"<tr><td>{i}</td><td>{rng.randint(0, 999)}</td></tr>" for i in range(8))
                + "</table>")
        out.append("</article>")
    out.append("</main><footer><p>&copy; htmlstream</p></footer></body></html>\n")
    return "".join(out).encode("utf-8")


def rechunk(pieces: Iterator[bytes], total: int, chunk: int = CHUNK) -> Iterator[bytes]:
    """The first ``total`` bytes of ``pieces``, cut into chunks of ``chunk`` bytes."""
    buf = bytearray()
    sent = 0
    for piece in pieces:
        buf += piece
        while len(buf) >= chunk and sent < total:
            n = min(chunk, total - sent)
            yield bytes(buf[:n])
            del buf[:n]
            sent += n
        if sent >= total:
            return
    if buf and sent < total:
        yield bytes(buf[:total - sent])


def realistic(size: int) -> Iterator[bytes]:
    rng = random.Random(8)
    pages = [_page(rng, k) for k in range(16)]

    def forever() -> Iterator[bytes]:
        k = 0
        while True:
            yield pages[k % len(pages)]
            k += 1

    return rechunk(forever(), size)


def _filler(size: int, unit: bytes) -> Iterator[bytes]:
    block = unit * (CHUNK // len(unit) + 1)
    sent = 0
    while sent < size:
        n = min(len(block), size - sent)
        yield block[:n]
        sent += n


def huge_text(size: int) -> Iterator[bytes]:
    unit = "the text node goes on &amp; on, café — ".encode()
    return rechunk(chain([b"<html><body><p>"], _filler(size, unit), [b"</p></body></html>"]),
                   size)


def huge_comment(size: int) -> Iterator[bytes]:
    body = max(0, size - 7)
    return rechunk(chain([b"<!--"], _filler(body, b"a comment - that -- never <ends> "),
                         [b"-->"]), size)


def deep_nesting(size: int) -> Iterator[bytes]:
    n = size // 11           # "<div>" + "</div>" per level

    def parts() -> Iterator[bytes]:
        per = 4096
        for i in range(0, n, per):
            yield b"<div>" * min(per, n - i)
        yield b"x"
        for i in range(0, n, per):
            yield b"</div>" * min(per, n - i)

    return rechunk(parts(), size)


CASES: dict[str, Callable[[int], Iterator[bytes]]] = {
    "realistic": realistic,
    "text": huge_text,
    "comment": huge_comment,
    "nesting": deep_nesting,
}

# --------------------------------------------------------------------------- measuring


def make_rewriter(max_buffer_size: int | None = None) -> Any:
    from htmlstream import Rewriter

    kwargs = {} if max_buffer_size is None else {"max_buffer_size": max_buffer_size}
    rw = Rewriter(**kwargs)
    rw.on("a[href]", element=lambda el: el.set_attribute(
        "href", "https://cdn.example" + (el.get_attribute("href") or "")))
    rw.on("img", element=lambda el: el.set_attribute("loading", "lazy"))
    return rw


def measure(case: str, size: int, clock: Callable[[], float]) -> dict[str, float]:
    rw = make_rewriter(size + 4 * MB if case == "comment" else None)
    stream = rw.stream()
    fed = out = 0
    elapsed = 0.0
    tenths: list[float] = []            # time spent on each tenth of the document
    mark = 0.0
    for chunk in CASES[case](size):      # generating is not timed
        start = clock()
        result = stream.feed(chunk)
        elapsed += clock() - start
        fed += len(chunk)
        out += len(result)
        if fed * 10 >= size * (len(tenths) + 1):
            tenths.append(elapsed - mark)
            mark = elapsed
    start = clock()
    out += len(stream.close())
    elapsed += clock() - start
    return {"bytes": fed, "out": out, "seconds": elapsed, "mb_per_s": fed / MB / elapsed,
            "tenths": tenths}


RSS_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import bench_linear as b

def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1

import htmlstream
rw = b.make_rewriter()
rw.rewrite(b"<a href=x><img src=y></a>")    # warm up
docs = list(b.realistic(200_000))           # generator warm-up too
del docs
base = status("VmRSS")
try:
    with open("/proc/self/clear_refs", "w") as f:   # reset VmHWM to the current RSS
        f.write("5")
except OSError:
    pass
stream = rw.stream()
n = 0
for chunk in b.realistic(int(sys.argv[2])):
    n += len(stream.feed(chunk))
n += len(stream.close())
print(base, status("VmHWM"), n)
"""


def peak_rss(size: int) -> tuple[int, int]:
    """(baseline RSS, peak RSS) in KiB of a subprocess streaming ``size`` bytes."""
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(Path(__file__).parent),
                           str(size)], capture_output=True, text=True, check=True, env=env)
    base, peak, _ = map(int, done.stdout.split())
    return base, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,100", help="sizes in MB (default 1,10,100)")
    parser.add_argument("--case", action="append", choices=sorted(CASES),
                        help="cases to run (repeatable; default all)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (the best counts)")
    parser.add_argument("--min-time", type=float, default=0.5,
                        help="run small sizes again until they have taken this long in all")
    parser.add_argument("--rss-size", type=int, default=8, help="MB streamed for the RSS check")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    sizes = [int(float(s) * MB) for s in args.sizes.split(",")]
    results: dict[str, object] = {"clock": args.clock, "chunk": CHUNK, "cases": {}}
    print(f"chunks of {CHUNK} bytes, {args.clock} time; handlers: a[href] and img rewritten")
    print(f"{'case':<10} {'size':>8} {'seconds':>9} {'MB/s':>8} {'x/1MB':>7}")
    for case in args.case or list(CASES):
        rows = []
        first = None
        for size in sizes:
            # best of --repeat runs; small sizes run until they have taken --min-time in all
            runs = [measure(case, size, clock)]
            while len(runs) < args.repeat or sum(r["seconds"] for r in runs) < args.min_time:
                runs.append(measure(case, size, clock))
            r = min(runs, key=lambda r: r["seconds"])
            if first is None:
                first = r["seconds"]
            ratio = r["seconds"] / first if first else float("nan")
            rows.append(dict(r, size=size, ratio=ratio))
            print(f"{case:<10} {size / MB:>6g}MB {r['seconds']:>9.3f} {r['mb_per_s']:>8.1f} "
                  f"{ratio:>7.1f}", flush=True)
        tenths = " ".join(f"{t * 1000:.0f}" for t in rows[-1]["tenths"])
        print(f"{'':<10} each tenth of the {sizes[-1] / MB:g} MB stream (ms): {tenths}")
        results["cases"][case] = rows  # type: ignore[index]
    base, peak = peak_rss(args.rss_size * MB)
    print(f"peak RSS streaming {args.rss_size} MB (realistic, 64 KiB chunks): baseline "
          f"{base / 1024:.1f} MiB after import, peak {peak / 1024:.1f} MiB, growth "
          f"{(peak - base) / 1024:.2f} MiB")
    results["rss_kib"] = {"baseline": base, "peak": peak, "size": args.rss_size * MB}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
