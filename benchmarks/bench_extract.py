#!/usr/bin/env python3
"""Extraction: htmlstream.extract next to selectolax, lxml and BeautifulSoup (lxml and html.parser
builders), in one run.

    .venv/bin/python benchmarks/bench_extract.py [--repeat N] [--size BYTES] [--skip-memory]

Three measurements:

1. **Throughput** (MB/s, 10^6 bytes of input per second; best of N runs over all the corpus
   files, ``tests/data/corpus/*.html`` or ``$HTMLSTREAM_CORPUS``) of one extraction, the same
   record from every engine (checked): the title's text, every link's ``href`` and text, the
   ``h2`` headings' text and the ``og:`` metadata.  htmlstream streams the document in 64 KiB
   chunks; the others parse it whole into a tree, then select.
2. **Peak memory** on a generated 8 MB page (benchmarks/bench_memory.py's generator), each engine
   in a fresh subprocess: the growth of the kernel's RSS high-water mark over the baseline (C
   allocations included: lexbor, libxml2) and ``tracemalloc``'s peak (Python allocations only).
   htmlstream reads the page chunk by chunk as it is generated; the others need it whole (its
   bytes are made before the baseline is taken, so they are not counted for anyone).
3. **Early stop**: the bytes a head-only extraction (title, canonical link, ``og:`` metadata)
   reads before it is done, per corpus file, and its MB/s counted on the whole file's size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import htmlstream as hs  # noqa: E402
from bench_memory import Document, reset_peak, status_kb  # noqa: E402

FIELDS = {
    "title": "title::text",
    "hrefs": "a::attr(href)*",
    "link_texts": "a::text*",
    "h2": "h2::text*",
    "og": 'meta[property^="og:"]::attr(content)*',
}
HEAD_ONLY = {
    "title": "title::text",
    "canonical": "head link[rel=canonical]::attr(href)",
    "og": 'head meta[property^="og:"]::attr(content)*',
}
Record = dict[str, Any]


def corpus() -> list[tuple[str, bytes]]:
    env = os.environ.get("HTMLSTREAM_CORPUS")
    root = Path(env) if env else ROOT / "tests" / "data" / "corpus"
    return [(p.name, p.read_bytes()) for p in sorted(root.glob("*.html"))]


# --------------------------------------------------------------------------- the engines


def run_htmlstream(data: bytes) -> Record:
    return hs.extract(data, FIELDS, scripting=False)


def run_selectolax(data: bytes) -> Record:
    from selectolax.lexbor import LexborHTMLParser
    tree = LexborHTMLParser(data)
    title = tree.css_first("title")
    links = tree.css("a")
    return {
        "title": None if title is None else title.text(deep=True),
        "hrefs": [a.attributes["href"] or "" for a in links if "href" in a.attributes],
        "link_texts": [a.text(deep=True) for a in links],
        "h2": [h.text(deep=True) for h in tree.css("h2")],
        "og": [m.attributes.get("content") for m in tree.css('meta[property^="og:"]')
               if m.attributes.get("content") is not None],
    }


def run_lxml(data: bytes) -> Record:
    import lxml.html
    root = lxml.html.document_fromstring(data)
    titles = root.xpath("//title")
    links = root.xpath("//a")
    return {
        "title": titles[0].text_content() if titles else None,
        "hrefs": [a.get("href") for a in links if a.get("href") is not None],
        "link_texts": [a.text_content() for a in links],
        "h2": [h.text_content() for h in root.xpath("//h2")],
        "og": [m.get("content") for m in root.xpath('//meta[starts-with(@property, "og:")]')
               if m.get("content") is not None],
    }


def _soup(builder: str) -> Callable[[bytes], Record]:
    def run(data: bytes) -> Record:
        from bs4 import BeautifulSoup
        soup = BeautifulSoup(data, builder, multi_valued_attributes=None)
        title = soup.select_one("title")
        links = soup.select("a")
        return {
            "title": None if title is None else title.get_text(),
            "hrefs": [a["href"] for a in links if a.get("href") is not None],
            "link_texts": [a.get_text() for a in links],
            "h2": [h.get_text() for h in soup.select("h2")],
            "og": [m["content"] for m in soup.select('meta[property^="og:"]')
                   if m.get("content") is not None],
        }
    return run


ENGINES: dict[str, Callable[[bytes], Record]] = {
    "htmlstream": run_htmlstream,
    "selectolax": run_selectolax,
    "lxml": run_lxml,
    "bs4 (lxml)": _soup("lxml"),
    "bs4 (html.parser)": _soup("html.parser"),
}


def agreement(name: str, rec: Record, reference: Record) -> str:
    """How a peer's record compares with htmlstream's (the same, or which fields differ)."""
    diff = [k for k in reference if rec.get(k) != reference[k]]
    return "same record" if not diff else "differs: " + ", ".join(diff)


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times)


def throughput(docs: Sequence[tuple[str, bytes]], repeat: int) -> None:
    total = sum(len(d) for _, d in docs)
    print(f"Throughput: {len(docs)} corpus files, {total / 1e6:.2f} MB, best of {repeat}")
    print("| engine | MB/s | x htmlstream | record vs htmlstream |")
    print("| --- | ---: | ---: | --- |")
    reference = {name: run_htmlstream(d) for name, d in docs}
    base = 0.0
    for engine, fn in ENGINES.items():
        seconds = best(lambda fn=fn: [fn(d) for _, d in docs], repeat)
        mbs = total / seconds / 1e6
        base = base or mbs
        notes = sorted({agreement(engine, fn(d), reference[name]) for name, d in docs})
        print(f"| {engine} | {mbs:.1f} | {mbs / base:.2f} | {'; '.join(notes)} |")
    print()


def early_stop(docs: Sequence[tuple[str, bytes]], repeat: int) -> None:
    print("Early stop: head-only extraction (title, head link[rel=canonical], head og: metas)")
    print("| file | size | bytes read | share | MB/s (on the whole size) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, data in docs:
        def run(data: bytes = data) -> int:
            ex = hs.Extractor(HEAD_ONLY)
            for i in range(0, len(data), 16384):
                ex.feed(data[i:i + 16384])
                if ex.done:
                    break
            ex.close()
            return ex.bytes_read
        read = run()
        seconds = best(run, repeat)
        print(f"| {name} | {len(data)} | {read} | {read / len(data):.1%} | "
              f"{len(data) / seconds / 1e6:.1f} |")
    print("(read in 16 KiB chunks: the figure is rounded up to a chunk)")
    print()


# --------------------------------------------------------------------------- memory


def memory_child(engine: str, size: int) -> dict[str, Any]:
    """In a fresh process: the engine's peak memory on a generated page of ``size`` bytes."""
    doc = Document(size)
    data = None
    if engine != "htmlstream":
        data = b"".join(chunk for chunk, _, _ in doc.chunks(65536))
    ENGINES[engine](b"<title>warm up</title><a href=x>y</a>")
    baseline = status_kb("VmRSS")
    can_reset = reset_peak()
    tracemalloc.start()
    if engine == "htmlstream":
        ex = hs.Extractor(FIELDS, scripting=False)
        n = 0
        for chunk, _, _ in doc.chunks(65536):
            ex.feed(chunk)
            n += len(chunk)
        rec = ex.close()
    else:
        assert data is not None
        n = len(data)
        rec = ENGINES[engine](data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"engine": engine, "bytes": n, "links": len(rec["hrefs"]),
            "rss_growth_kb": status_kb("VmHWM") - baseline if can_reset else None,
            "tracemalloc_peak_kb": peak // 1024}


def memory(size: int) -> None:
    print(f"Peak memory on a generated {size / 1e6:.0f} MB page (fresh process per engine)")
    print("| engine | RSS high-water growth | tracemalloc peak | links found |")
    print("| --- | ---: | ---: | ---: |")
    for engine in ENGINES:
        out = subprocess.run([sys.executable, __file__, "--memory-child", engine,
                              "--size", str(size)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rss = "n/a" if r["rss_growth_kb"] is None else f"{r['rss_growth_kb'] / 1024:.1f} MB"
        print(f"| {engine} | {rss} | {r['tracemalloc_peak_kb'] / 1024:.1f} MB | {r['links']} |")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size", type=int, default=8_000_000, help="memory: the page size")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child, args.size)))
        return 0
    docs = corpus()
    print(f"htmlstream {hs.__version__}, Python {sys.version.split()[0]}\n")
    throughput(docs, args.repeat)
    early_stop(docs, args.repeat)
    if not args.skip_memory:
        memory(args.size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
