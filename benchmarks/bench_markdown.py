"""htmlstream.markdown (issue 36): main-content extraction on the article-extraction benchmark,
and conversion speed next to the Python converters, in one run.

    .venv/bin/python benchmarks/bench_markdown.py DIR [--speed-only | --quality-only]
        [--repeat N] [--limit N] [--only NAME]

``DIR`` is the benchmark's data (the scrapinghub/article-extraction-benchmark pages: 181 pages,
``html/*.html.gz`` and ``ground-truth.json``; ``tests/data/articles`` holds four of them,
beside their ``ground-truth.json``).

Main-content peers, where installed (not development requirements: they pull in much): trafilatura
and resiliparse, whose plain text is scored as it is.

Quality: the benchmark's own metric (its README): text as runs of word characters, each page's
predicted and true article bodies compared as multisets of 4-token shingles (TP, FP, FN), the
three counts normalised per page, precision, recall and F1 from the sums.  The Markdown is
rendered to HTML (markdown-it-py) and its text taken, so that link targets and Markdown syntax
count for nothing.  Rows: ``main_content=True``, the whole page (``main_content=False``), and
the peers that are installed (html-to-markdown, markdownify, html2text: whole-page converters).

Speed: MB/s over the same pages (decompressed, in memory), whole page and main content, and
each installed peer; ratios against htmlstream's whole-page conversion.  Absolute figures are
noisy on a shared machine; the ratios, measured in one process, less so.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import htmlstream

_WORD = re.compile(r"\w+")
_TAG = re.compile(r"<[^>]*>")


def pages(root: Path, limit: int | None) -> list[tuple[str, bytes, str, str]]:
    """(id, html, url, true body) for each page of the benchmark."""
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    out = []
    for key in sorted(truth)[:limit]:
        folder = root / "html" if (root / "html").is_dir() else root
        data = gzip.decompress((folder / f"{key}.html.gz").read_bytes())
        out.append((key, data, truth[key]["url"], truth[key]["articleBody"] or ""))
    return out


def md_text(md: str) -> str:
    """The text of Markdown as it reads (rendered, tags removed)."""
    from markdown_it import MarkdownIt
    rendered = MarkdownIt("commonmark", {"maxNesting": 10000}).enable(
        ["table", "strikethrough"]).render(md)
    return html.unescape(_TAG.sub(" ", rendered))


def shingles(text: str) -> Counter[tuple[str, ...]]:
    tokens = _WORD.findall(text)
    return Counter(tuple(tokens[i:i + 4]) for i in range(max(len(tokens) - 3, 0))) \
        if len(tokens) >= 4 else Counter([tuple(tokens)] if tokens else [])


def score(predicted: list[str], truth: list[str]) -> tuple[float, float, float]:
    """The benchmark's precision, recall and F1."""
    tp = fp = fn = 0.0
    for pred, true in zip(predicted, truth, strict=True):
        p, t = shingles(pred), shingles(true)
        a = sum((p & t).values())
        b = sum((p - t).values())
        c = sum((t - p).values())
        total = a + b + c
        if total:
            tp, fp, fn = tp + a / total, fp + b / total, fn + c / total
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


Converter = Callable[[bytes, str], str]


def converters() -> dict[str, Converter]:
    """htmlstream's cases and the installed peers: html bytes and URL -> Markdown."""
    cases: dict[str, Converter] = {
        "htmlstream main_content": lambda d, u: htmlstream.markdown(
            d, base_url=u, main_content=True),
        "htmlstream whole page": lambda d, u: htmlstream.markdown(d, base_url=u),
    }
    try:
        import html_to_markdown
        h2m_options: Any = None
        if hasattr(html_to_markdown, "ConversionOptions"):
            # (version 3 returns a result with metadata too: Markdown alone, for the speed)
            h2m_options = html_to_markdown.ConversionOptions(extract_metadata=False)

        def h2m(d: bytes, u: str) -> str:
            result = html_to_markdown.convert(d.decode("utf-8", "replace"), h2m_options)
            return result if isinstance(result, str) else str(result.content)
        cases["html-to-markdown"] = h2m
    except ImportError:
        print("(html-to-markdown not installed)", file=sys.stderr)
    try:
        import trafilatura
        cases["trafilatura (main content, text)"] = lambda d, u: trafilatura.extract(
            d, url=u) or ""
    except ImportError:
        print("(trafilatura not installed)", file=sys.stderr)
    try:
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree
        cases["resiliparse (main content, text)"] = lambda d, u: extract_plain_text(
            HTMLTree.parse_from_bytes(d), main_content=True)
    except ImportError:
        print("(resiliparse not installed)", file=sys.stderr)
    try:
        import markdownify
        cases["markdownify"] = lambda d, u: markdownify.markdownify(
            d.decode("utf-8", "replace"))
    except ImportError:
        print("(markdownify not installed)", file=sys.stderr)
    try:
        import html2text
        cases["html2text"] = lambda d, u: html2text.html2text(d.decode("utf-8", "replace"), u)
    except ImportError:
        print("(html2text not installed)", file=sys.stderr)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="the benchmark's data folder")
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--quality-only", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--only", action="append", default=None,
                        help="run only the cases whose name contains this")
    args = parser.parse_args()
    data = pages(args.dir, args.limit)
    cases = converters()
    if args.only:
        cases = {k: v for k, v in cases.items() if any(o in k for o in args.only)}
    total = sum(len(d) for _, d, _, _ in data)
    print(f"{len(data)} pages, {total / 1e6:.1f} MB")
    if not args.speed_only:
        print(f"\n{'quality':34} {'precision':>9} {'recall':>7} {'F1':>6}")
        truth = [t for _, _, _, t in data]
        for name, fn in cases.items():
            text = "text)" in name      # (plain text out: nothing to render)
            predicted = [fn(d, u) if text else md_text(fn(d, u)) for _, d, u, _ in data]
            p, r, f = score(predicted, truth)
            print(f"{name:34} {p:9.3f} {r:7.3f} {f:6.3f}")
    if not args.quality_only:
        print(f"\n{'speed':34} {'MB/s':>7} {'ratio':>7}")
        speeds = {}
        for name, fn in cases.items():
            best = float("inf")
            for _ in range(args.repeat):
                t = time.perf_counter()
                for _, d, u, _ in data:
                    fn(d, u)
                best = min(best, time.perf_counter() - t)
            speeds[name] = total / best / 1e6
        for name, mbs in speeds.items():
            base = speeds.get("htmlstream main_content" if "main content" in name
                              else "htmlstream whole page")
            ratio = f"{mbs / base:7.2f}" if base else ""
            print(f"{name:34} {mbs:7.1f} {ratio}")
        print("(ratio: against htmlstream's whole-page conversion, or for a main-content peer "
              "against htmlstream's main_content, same run; below 1: htmlstream is faster)")


if __name__ == "__main__":
    main()
