#!/usr/bin/env python3
"""Small documents (issue 34): what a call costs on documents of 100 B, 1 KB and 10 KB, where
the fixed costs of getting going weigh as much as the engine, next to the native peers, in one
run.

    .venv/bin/python benchmarks/bench_small.py [--rounds N] [--min-time S] [--sizes 100,1000]

The documents are slices of the corpus pages (``tests/data/corpus/*.html`` or
``$HTMLSTREAM_CORPUS``): for each size, slices of about that many bytes starting at a tag, at
evenly spaced places of every page (head and body), ending with the tag that reaches the size.
Each row times every document of its size, per call, in CPU time, with the garbage collector on
(at these sizes what a call leaves to the allocator and the collector is part of its cost, and
with it off one engine's garbage slowed the other's samples); htmlstream and its peer take
their samples in turn, ``--rounds`` times, and the row reports the median of each; ``ratio`` is
the peer's time over htmlstream's (above 1: htmlstream is faster).

Rows:

* ``rewrite, new rewriter``: ``Rewriter()``, three ``.on()`` rules (``a[href]`` reading the
  href, ``img[src]``, ``p``) and a stream of the document, against python-lolhtml's
  ``HTMLRewriter`` with the same three selectors and handlers, written and ended (its API has
  no reusable rules: a rewriter per document is how it is used);
* ``rewrite, reused rewriter``: the same rules compiled once, a stream per document; the peer
  as above;
* ``sanitize, default policy``: ``htmlstream.sanitize(text)`` against ``nh3.clean(text)``;
* ``sanitize, policy per call``: ``htmlstream.sanitize(text, Policy(link_rel=None))`` with the
  policy made in the call, against ``nh3.clean(text, link_rel=None)``;
* ``extract, 3 fields``: ``htmlstream.extract`` of the first link's href, the first ``h2``'s
  text and every image's ``src``, against selectolax (lexbor) parsing the document and running
  the three queries (the records are checked equal first);
* ``minify``: ``htmlstream.minify(text)`` against ``minify_html.minify(text)``.

glibc's heap thresholds are set first (``steady_malloc``): with its defaults, lexbor's
per-parse allocations paid page faults in some heap states.  A peer that is not installed is
skipped with a note.  The machine's load moves absolute times;
the ratios, taken in one process with the samples interleaved, move much less.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

import htmlstream as hs  # noqa: E402

SIZES = (100, 1000, 10000)
SLICES_PER_PAGE = 8
Call = Callable[[int], Any]


def corpus() -> list[bytes]:
    env = os.environ.get("HTMLSTREAM_CORPUS")
    root = Path(env) if env else ROOT / "tests" / "data" / "corpus"
    return [p.read_bytes() for p in sorted(root.glob("*.html"))]


def slices(pages: Sequence[bytes], size: int) -> list[bytes]:
    """Documents of about ``size`` bytes: slices of every page that start at a tag, evenly
    spaced, ending at the end of the first tag that reaches ``size`` bytes (valid UTF-8
    throughout)."""
    out = []
    for page in pages:
        for k in range(SLICES_PER_PAGE):
            start = page.find(b"<", len(page) * k // SLICES_PER_PAGE)
            if start < 0:
                continue
            end = page.find(b">", start + size - 1)
            piece = page[start:start + size] if end < 0 else page[start:end + 1]
            out.append(piece.decode("utf-8", "ignore").encode("utf-8"))
    return out


def per_call(fn: Call, n: int, min_time: float) -> float:
    """CPU µs per call of ``fn(i)`` over documents 0..n-1, repeated to last ``min_time``."""
    reps = 0
    start = time.process_time()
    elapsed = 0.0
    while elapsed < min_time or reps == 0:
        for i in range(n):
            fn(i)
        reps += 1
        elapsed = time.process_time() - start
    return elapsed / (reps * n) * 1e6


def compare(ours: Call, peer: Call, n: int, rounds: int, min_time: float) -> tuple[float,
                                                                                   float]:
    """The medians of ``rounds`` interleaved samples of each."""
    ours(0), peer(0)        # (warm-up: first-use costs are not per-call costs)
    a: list[float] = []
    b: list[float] = []
    gc.collect()
    for r in range(rounds):
        if r % 2:
            b.append(per_call(peer, n, min_time))
            a.append(per_call(ours, n, min_time))
        else:
            a.append(per_call(ours, n, min_time))
            b.append(per_call(peer, n, min_time))
    return statistics.median(a), statistics.median(b)


# --------------------------------------------------------------------------- the cases

def noop(unit: Any) -> None:
    pass


def read_href(el: Any) -> None:
    el.get_attribute("href")


RULES = (("a[href]", read_href), ("img[src]", noop), ("p", noop))
FIELDS = {"link": "a::attr(href)", "heading": "h2::text", "images": "img::attr(src)*"}


def cases(docs: list[bytes]) -> dict[str, tuple[Call, Call | None, str]]:
    """name -> (htmlstream's call, the peer's call or None, the peer's name)."""
    texts = [d.decode("utf-8") for d in docs]
    out: dict[str, tuple[Call, Call | None, str]] = {}

    def new_rewriter(i: int) -> bytes:
        rw = hs.Rewriter()
        for sel, fn in RULES:
            rw.on(sel, element=fn)
        s = rw.stream()
        return s.feed(docs[i]) + s.close()

    reused = hs.Rewriter()
    for sel, fn in RULES:
        reused.on(sel, element=fn)

    def reused_rewriter(i: int) -> bytes:
        s = reused.stream()
        return s.feed(docs[i]) + s.close()

    lol: Call | None = None
    try:
        import lolhtml
    except ImportError:
        print("python-lolhtml is not installed: its rows have no peer", file=sys.stderr)
    else:
        handlers = [(sel, SimpleNamespace(element=fn)) for sel, fn in RULES]

        def lol_rewrite(i: int) -> list[bytes]:
            out: list[bytes] = []
            rw = lolhtml.HTMLRewriter(out.append)
            for sel, handler in handlers:
                rw.on(sel, handler)
            rw.write(docs[i])
            rw.end()
            return out

        lol = lol_rewrite
    out["rewrite, new rewriter"] = (new_rewriter, lol, "python-lolhtml")
    out["rewrite, reused rewriter"] = (reused_rewriter, lol, "python-lolhtml")

    nh3_default: Call | None = None
    nh3_per_call: Call | None = None
    try:
        import nh3
    except ImportError:
        print("nh3 is not installed: the sanitize rows have no peer", file=sys.stderr)
    else:
        def nh3_default(i: int) -> str:
            return nh3.clean(texts[i])

        def nh3_per_call(i: int) -> str:
            return nh3.clean(texts[i], link_rel=None)
    out["sanitize, default policy"] = (lambda i: hs.sanitize(texts[i]), nh3_default, "nh3")
    out["sanitize, policy per call"] = (
        lambda i: hs.sanitize(texts[i], hs.Policy(link_rel=None)), nh3_per_call, "nh3")

    sx: Call | None = None
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError:
        print("selectolax is not installed: the extract row has no peer", file=sys.stderr)
    else:
        def sx(i: int) -> dict[str, Any]:
            tree = LexborHTMLParser(docs[i])
            link = tree.css_first("a[href]")
            heading = tree.css_first("h2")
            return {"link": None if link is None else link.attributes["href"],
                    "heading": None if heading is None else heading.text(deep=True),
                    "images": [img.attributes["src"] or "" for img in tree.css("img[src]")]}

        for i, doc in enumerate(docs):     # (the same records, or the row means nothing)
            ours = hs.extract(doc, FIELDS, scripting=False)
            if ours != sx(i):
                print(f"note: extract and selectolax differ on a document: {ours} / {sx(i)}",
                      file=sys.stderr)
    out["extract, 3 fields"] = (lambda i: hs.extract(docs[i], FIELDS, scripting=False), sx,
                                "selectolax")

    mh: Call | None = None
    try:
        import minify_html
    except ImportError:
        print("minify-html is not installed: the minify row has no peer", file=sys.stderr)
    else:
        def mh(i: int) -> str:
            return str(minify_html.minify(texts[i]))
    out["minify"] = (lambda i: hs.minify(texts[i]), mh, "minify-html")
    return out


def steady_malloc() -> None:
    """Keep glibc's heap from shrinking and growing back at every call: with its defaults, in
    some heap states (a large object alive above the freed blocks) every parse of
    selectolax's lexbor paid page faults for memory trimmed at the previous one's end, 3-8x
    its time at these sizes.  Set the thresholds (as MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_ and
    MALLOC_MMAP_THRESHOLD_ would) so that no engine pays for the allocator's state."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return      # (not glibc)
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    libc.mallopt(m_trim_threshold, 64 << 20)
    libc.mallopt(m_top_pad, 16 << 20)
    libc.mallopt(m_mmap_threshold, 32 << 20)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="samples per engine (median)")
    parser.add_argument("--min-time", type=float, default=0.05,
                        help="seconds each sample lasts at least")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="document sizes in bytes, comma-separated")
    parser.add_argument("--case", action="append", help="only these rows (repeatable)")
    args = parser.parse_args(argv)
    steady_malloc()
    pages = corpus()
    if not pages:
        print("no corpus pages found", file=sys.stderr)
        return 1
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| case | size | htmlstream µs | peer | peer µs | ratio |")
    print("| ---- | ---: | ------------: | ---- | ------: | ----: |")
    rows: list[tuple[str, int, float, float | None, str]] = []
    for size in sizes:
        docs = slices(pages, size)
        mean = sum(map(len, docs)) / len(docs)
        for name, (ours, peer, peer_name) in cases(docs).items():
            if args.case and name not in args.case:
                continue
            if peer is None:
                ours(0)
                a = statistics.median(per_call(ours, len(docs), args.min_time)
                                      for _ in range(args.rounds))
                b = None
            else:
                a, b = compare(ours, peer, len(docs), args.rounds, args.min_time)
            rows.append((name, size, a, b, peer_name))
            ratio = "" if b is None else f"{b / a:.2f}x"
            print(f"| {name} | {mean:,.0f} B | {a:.1f} | {peer_name} | "
                  f"{'' if b is None else f'{b:.1f}'} | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
