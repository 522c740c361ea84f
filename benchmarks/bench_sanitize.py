"""The sanitizer (htmlstream.recipes.sanitize) on the corpus, next to nh3 (ammonia, native Rust)
and bleach (html5lib, pure Python), all with their default policies, in one run: MB/s and
ratios.  Then, against nh3 alone (CPU time, ratios in one run): the corpus with
``allowed_classes`` and an ``attribute_filter`` (nh3 calls the same Python filter from Rust),
and comment-sized fragments (100 B to 2 KB) with the default policy, with a ``Policy`` built
per call, and through ``htmlstream.compat.nh3`` with keywords given per call.

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
from dataclasses import replace
from pathlib import Path

from htmlstream import Policy, Rewriter, recipes, sanitize
from htmlstream.compat import nh3 as compat_nh3

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
    if base:
        options(texts, args.repeat)
    return 0


def cpu(run: Callable[[], object], repeat: int) -> float:
    """The best CPU time of ``repeat`` runs (seconds)."""
    run()
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def _keep(tag: str, attribute: str, value: str) -> str | None:
    """An attribute filter as people write them: drop tracking attributes, keep the rest."""
    return None if attribute.startswith("data-track") else value


#: Comment-sized fragments (user comments, chat messages, profile fields): 100 B to 2 KB.
COMMENT = ('<p>Thanks for the write-up! I tried <b>exactly</b> this and it <i>works</i>, see '
           '<a href="https://example.com/posts/42?ref=comment&amp;x=1">my notes</a>.</p>')
FRAGMENTS = [
    '<p>Nice post, <b>thanks</b>! <a href="https://example.com/">me</a></p>',
    COMMENT + '<p>One question: does <code>sanitize()</code> keep <em>emphasis</em>?</p>',
    COMMENT * 2 + '<ul><li>first <img src="/i/a.png" alt="a"></li><li>second '
    '<span onclick="x()">point</span></li></ul><script>alert(1)</script>',
    (COMMENT + '<blockquote cite="https://example.org/q">quoted <strong>text</strong>'
     '</blockquote>') * 4,
    (COMMENT + '<p class="note" data-track="1">a <a href="javascript:alert(1)">bad</a> '
     'link &amp; <abbr title="HyperText">HTML</abbr></p>') * 6,
]


def options(texts: list[str], repeat: int) -> None:
    import nh3

    classes = {"p": {"note"}, "span": {"hl"}, "div": {"box"}, "a": {"ext"}}
    keywords = {"allowed_classes": classes, "attribute_filter": _keep,
                "tags": set(nh3.ALLOWED_TAGS) | {"span"}}
    policy = replace(Policy().add(tags={"span"}, allowed_classes=classes),
                     attribute_filter=_keep)
    rows: list[tuple[str, float, float]] = []
    rows.append(("corpus, allowed_classes + attribute_filter",
                 cpu(lambda: [nh3.clean(t, **keywords) for t in texts], repeat),  # type: ignore
                 cpu(lambda: [sanitize(t, policy) for t in texts], repeat)))
    n = 200
    frags = FRAGMENTS
    sizes = ", ".join(str(len(f.encode("utf-8"))) for f in frags)
    rows.append(("fragments, default policy",
                 cpu(lambda: [nh3.clean(f) for _ in range(n) for f in frags], repeat),
                 cpu(lambda: [sanitize(f) for _ in range(n) for f in frags], repeat)))
    rows.append(("fragments, Policy built per call",
                 cpu(lambda: [nh3.clean(f, link_rel=None) for _ in range(n) for f in frags],
                     repeat),
                 cpu(lambda: [sanitize(f, Policy(link_rel=None)) for _ in range(n)
                              for f in frags], repeat)))
    rows.append(("fragments, compat.nh3 keywords per call",
                 cpu(lambda: [nh3.clean(f, tags={"a", "b", "i", "p", "code"},
                                        attributes={"a": {"href"}})
                              for _ in range(n) for f in frags], repeat),
                 cpu(lambda: [compat_nh3.clean(f, tags={"a", "b", "i", "p", "code"},
                                               attributes={"a": {"href"}})
                              for _ in range(n) for f in frags], repeat)))
    print(f"\nagainst nh3, CPU time, best of {repeat} (fragments of {sizes} bytes, x{n}):")
    print(f"{'case':<44} {'nh3 ms':>8} {'ours ms':>8} {'x nh3':>7}")
    for name, theirs, ours in rows:
        print(f"{name:<44} {theirs * 1e3:>8.1f} {ours * 1e3:>8.1f} {theirs / ours:>6.2f}x")


if __name__ == "__main__":
    raise SystemExit(main())
