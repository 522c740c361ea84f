#!/usr/bin/env python3
"""What reading (and writing) a unit costs a handler: extra CPU time per call, in µs, over a no-op
handler on the same elements, for htmlstream and python-lolhtml side by side (issue 21).

    .venv/bin/python benchmarks/bench_accessors.py [--file NAME] [--repeat N] [--json OUT]

Each row is one handler: ``a[href]`` with a handler that makes one call (``el.tag_name``,
``el.get_attribute("href")`` ...) against the same rule with a handler that does nothing, on a
corpus file (default ``html-parsing-spec.html``: 3,990 links) fed in 64 KiB chunks; the
difference of the two CPU times divided by the number of calls is the call's cost (handler
call, dispatch and output included in neither).  ``attributes`` is measured twice: on the
corpus links (one or two attributes each) and on a generated page of links with five attributes
each; ``TextChunk.text`` with a document text handler (per text chunk).  The two runs of a row
take their samples in turn and the best sample of each is kept, which shields the difference from
the machine's load; the figures still move by a few hundredths of a µs from run to run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NEW_HREF = "https://example.com/"
FIVE_ATTRIBUTES = "five-attributes.html"  # the generated page's name in the table


def corpus_dir() -> Path:
    env = os.environ.get("HTMLSTREAM_CORPUS")
    return Path(env) if env else ROOT / "tests" / "data" / "corpus"


def five_attribute_page(links: int = 4000) -> bytes:
    """A deterministic page of ``links`` links with five attributes each, in paragraphs."""
    parts = ["<!DOCTYPE html><html><head><title>links</title></head><body>\n"]
    for i in range(links):
        parts.append(
            f'<p>Item {i}: <a href="/docs/page-{i}.html#s{i % 7}" class="ref link-{i % 5}" '
            f'id="l{i}" title="Page {i} and more" rel="noopener">page {i}</a></p>\n'
        )
    parts.append("</body></html>\n")
    return "".join(parts).encode()


# --------------------------------------------------------------------------- the handlers


def noop(unit: Any) -> None:
    pass


def tag_name(el: Any) -> None:
    el.tag_name  # noqa: B018


def get_attribute(el: Any) -> None:
    el.get_attribute("href")


def has_attribute(el: Any) -> None:
    el.has_attribute("href")


def attributes(el: Any) -> None:
    el.attributes  # noqa: B018


def set_attribute(el: Any) -> None:
    el.set_attribute("href", NEW_HREF)


def read_then_write(el: Any) -> None:
    if el.get_attribute("href") is not None:
        el.set_attribute("href", NEW_HREF)


def text(chunk: Any) -> None:
    chunk.text  # noqa: B018


@dataclass(frozen=True)
class Row:
    """One accessor: the call, its handler, what it is registered on, its target (µs)."""

    call: str
    handler: Callable[[Any], None]
    kind: str = "element"  # "element": on a[href]; "text": document text handler
    document: str = ""  # "" = the corpus file; FIVE_ATTRIBUTES = the generated page
    target: float | None = None


ROWS = (
    Row("el.tag_name", tag_name, target=0.04),
    Row('el.get_attribute("href")', get_attribute, target=0.10),
    Row('el.has_attribute("href")', has_attribute, target=0.10),
    Row("el.attributes", attributes),
    Row("el.attributes (5 attributes)", attributes, document=FIVE_ATTRIBUTES, target=0.30),
    Row('el.set_attribute("href", ...)', set_attribute),
    Row("get_attribute, then set_attribute", read_then_write),
    Row("TextChunk.text", text, kind="text"),
)


# --------------------------------------------------------------------------- the engines

Runner = Callable[[Sequence[bytes]], Any]


def htmlstream_runner(kind: str, handler: Callable[[Any], None]) -> Runner:
    from htmlstream import Rewriter

    rewriter = Rewriter()
    if kind == "text":
        rewriter.on_document(text=handler)
    else:
        rewriter.on("a[href]", element=handler)

    def run(chunks: Sequence[bytes]) -> Any:
        stream = rewriter.stream()
        feed = stream.feed
        output = [feed(chunk) for chunk in chunks]
        output.append(stream.close())
        return output

    return run


def lolhtml_runner(kind: str, handler: Callable[[Any], None]) -> Runner:
    import lolhtml

    if kind == "text":
        document = SimpleNamespace(text=handler)
    else:
        element = SimpleNamespace(element=handler)

    def run(chunks: Sequence[bytes]) -> Any:
        output: list[bytes] = []
        rewriter = lolhtml.HTMLRewriter(output.append)
        if kind == "text":
            rewriter.on_document(document)
        else:
            rewriter.on("a[href]", element)
        for chunk in chunks:
            rewriter.write(chunk)
        rewriter.end()
        return output

    return run


ENGINES: dict[str, Callable[[str, Callable[[Any], None]], Runner]] = {
    "htmlstream": htmlstream_runner,
    "lol-html": lolhtml_runner,
}


def count_calls(make: Callable[[str, Callable[[Any], None]], Runner], kind: str,
                chunks: Sequence[bytes]) -> int:
    calls = 0

    def counter(unit: Any) -> None:
        nonlocal calls
        calls += 1

    make(kind, counter)(chunks)
    return calls


def best_time(run: Runner, chunks: Sequence[bytes], loops: int) -> float:
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        for _ in range(loops):
            run(chunks)
        return (time.process_time() - started) / loops
    finally:
        gc.enable()


def cost(make: Callable[[str, Callable[[Any], None]], Runner], row: Row,
         chunks: Sequence[bytes], calls: int, repeat: int, min_time: float) -> float:
    """Extra µs per call of ``row``'s handler over a no-op handler (best samples)."""
    base, measured = make(row.kind, noop), make(row.kind, row.handler)
    started = time.process_time()
    base(chunks)
    measured(chunks)
    loops = max(1, round(min_time / max((time.process_time() - started) / 2, 1e-6)))
    base_times, times = [], []
    for _ in range(repeat):
        base_times.append(best_time(base, chunks, loops))
        times.append(best_time(measured, chunks, loops))
    return (min(times) - min(base_times)) / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", default="html-parsing-spec.html", help="corpus file")
    parser.add_argument("--chunk-size", type=int, default=65536)
    parser.add_argument("--repeat", type=int, default=9, help="samples of each run (default 9)")
    parser.add_argument("--min-time", type=float, default=0.1, help="least seconds per sample")
    parser.add_argument("--only", action="append", help="engine (htmlstream, lol-html)")
    parser.add_argument("--row", action="append", help="rows whose call contains this text")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)

    documents = {"": (corpus_dir() / args.file).read_bytes(),
                 FIVE_ATTRIBUTES: five_attribute_page()}
    size = args.chunk_size
    chunked = {k: [d[i:i + size] for i in range(0, len(d), size)] for k, d in documents.items()}
    engines = {k: v for k, v in ENGINES.items() if not args.only or k in args.only}
    rows = [r for r in ROWS if not args.row or any(w in r.call for w in args.row)]
    results: list[dict[str, Any]] = []
    for row in rows:
        chunks = chunked[row.document]
        figures: dict[str, float | None] = {}
        calls: dict[str, int] = {}  # (text chunks: each engine cuts text its own way)
        for name, make in engines.items():
            try:
                calls[name] = count_calls(make, row.kind, chunks)
                figures[name] = cost(make, row, chunks, calls[name], args.repeat, args.min_time)
            except ImportError:
                figures[name] = None
        results.append({"call": row.call, "document": row.document or args.file,
                        "calls": calls, "target": row.target, **figures})
        print(f"  {row.call}: " + ", ".join(
            f"{k} {v:.3f}" for k, v in figures.items() if v is not None), file=sys.stderr)

    header = ["call", "on", "calls", *engines, "target"]
    table = [header]
    for r in results:
        table.append([r["call"], r["document"], "/".join(map(str, r["calls"].values())),
                      *("-" if r[k] is None else f"{r[k]:.3f}" for k in engines),
                      "" if r["target"] is None else f"<= {r['target']:.2f}"])
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    print("extra CPU µs per call over a no-op handler (best of "
          f"{args.repeat} samples; chunks of {size} bytes)")
    for n, line in enumerate(table):
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(line, widths, strict=True))))
        if n == 0:
            print("  ".join("-" * w for w in widths))
    if args.json:
        args.json.write_text(json.dumps({"file": args.file, "chunk_size": size,
                                         "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
