"""The sanitizer (htmlstream.recipes.sanitize) on the corpus, next to nh3 (ammonia, native Rust)
and bleach (html5lib, pure Python), all with their default policies, in one run: MB/s and
ratios.

    .venv/bin/python benchmarks/bench_sanitize.py [--repeat N] [--chunk-size BYTES]

The corpus is ``tests/data/corpus/*.html`` (or ``$HTMLSTREAM_CORPUS``).  htmlstream streams the
bytes in chunks of 64 KiB (``stream``) or takes each document whole (``whole``); nh3 and bleach
take ``str`` (the decoding is done beforehand and not timed, in their favour).  Each figure is
the best of N runs over all the files (bleach: one run, it is slow).  MB/s counts input bytes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from htmlstream import Rewriter, recipes

ROOT = Path(__file__).resolve().parents[1]


def corpus() -> list[bytes]:
    env = os.environ.get("HTMLSTREAM_CORPUS")
    root = Path(env) if env else ROOT / "tests" / "data" / "corpus"
    return [p.read_bytes() for p in sorted(root.glob("*.html"))]


def measure(run: Callable[[int], object], n: int, total: int, repeat: int) -> float:
    """MB/s: the best of ``repeat`` runs over the ``n`` documents."""
    for i in range(n):
        run(i)       # warm-up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for i in range(n):
            run(i)
        best = min(best, time.perf_counter() - start)
    return total / best / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--chunk-size", type=int, default=65536)
    args = parser.parse_args(argv)
    docs = corpus()
    if not docs:
        print("no corpus", file=sys.stderr)
        return 1
    texts = [d.decode("utf-8", "replace") for d in docs]
    chunked = [[d[i:i + args.chunk_size] for i in range(0, len(d), args.chunk_size)]
               for d in docs]
    total = sum(map(len, docs))
    rw = Rewriter().use(recipes.sanitize())

    def stream(i: int) -> int:
        s = rw.stream()
        return sum(len(s.feed(c)) for c in chunked[i]) + len(s.close())

    rates: dict[str, float] = {
        "htmlstream (stream)": measure(stream, len(docs), total, args.repeat),
        "htmlstream (whole)": measure(lambda i: rw.rewrite(docs[i]), len(docs), total,
                                      args.repeat),
    }
    sizes = {"htmlstream": sum(len(rw.rewrite(d)) for d in docs)}
    try:
        import nh3
    except ImportError:
        print("nh3 is not installed: pip install nh3", file=sys.stderr)
    else:
        rates["nh3"] = measure(lambda i: nh3.clean(texts[i]), len(docs), total, args.repeat)
        sizes["nh3"] = sum(len(nh3.clean(t).encode("utf-8")) for t in texts)
    try:
        import bleach
    except ImportError:
        print("bleach is not installed: pip install bleach", file=sys.stderr)
    else:
        rates["bleach"] = measure(lambda i: bleach.clean(texts[i], strip=True), len(docs),
                                  total, 1)
        sizes["bleach"] = sum(len(bleach.clean(t, strip=True).encode("utf-8")) for t in texts)
    print(f"corpus: {len(docs)} files, {total / 1e6:.2f} MB; stream: chunks of "
          f"{args.chunk_size} bytes; best of {args.repeat}")
    base = rates.get("nh3")
    print(f"{'sanitizer':<22} {'MB/s':>8} {'x nh3':>8}")
    for name, rate in rates.items():
        ratio = f"{rate / base:.2f}x" if base else "n/a"
        print(f"{name:<22} {rate:>8.1f} {ratio:>8}")
    print("output bytes: " + ", ".join(f"{k} {v:,}" for k, v in sizes.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
