#!/usr/bin/env python3
"""Throughput of htmlstream and its peers on the benchmark corpus, side by side.

One process, one run: for every ``*.html`` in the corpus (``../shared/corpus`` from the repository
root, or ``$HTMLSTREAM_CORPUS``), every chunk size and every registered engine, the document is fed
as pre-split ``bytes`` chunks and the median throughput (MB/s, 1 MB = 10**6 bytes) over
``--repeat`` samples is reported, after a warm-up run.  Each sample times enough back-to-back runs
to last at least ``--min-time`` seconds, with the garbage collector off (as ``timeit`` does), by
process CPU time (``--clock wall`` for wall-clock time); the engines of one (file, chunk size) row
take their samples in turn, so that changes in machine load touch them all alike.

Engines are entries of :data:`ENGINES`, made with the :func:`engine` decorator: a factory that
imports what it needs (``ImportError`` = the peer is missing; it is skipped with a note) and returns
a runner ``(chunks) -> None`` that processes one whole document.  To add a case (a rewrite, one of
lol-html's benchmark cases), write one more decorated factory.

Run ``python benchmarks/bench.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Runner = Callable[[Sequence[bytes]], None]
"""Processes one whole document given as chunks; its result is thrown away."""

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / "../shared/corpus"
DEFAULT_CHUNK_SIZES = (65536, 1024)


@dataclass(frozen=True)
class Engine:
    """A named benchmark case."""

    name: str
    column: str  # short column header for the table
    factory: Callable[[], Runner]
    whole_document: bool = False  # takes the document as one chunk: chunk size does not apply


ENGINES: dict[str, Engine] = {}


def engine(
    name: str, column: str, *, whole_document: bool = False
) -> Callable[[Callable[[], Runner]], Callable[[], Runner]]:
    """Register ``factory`` as the engine ``name`` (shown as ``column`` in the table)."""

    def register(factory: Callable[[], Runner]) -> Callable[[], Runner]:
        if name in ENGINES:
            raise ValueError(f"engine {name!r} registered twice")
        ENGINES[name] = Engine(name, column, factory, whole_document)
        return factory

    return register


# --------------------------------------------------------------------------------------------
# Engines
# --------------------------------------------------------------------------------------------


@engine("htmlstream passthrough", "hs-pass")
def htmlstream_passthrough() -> Runner:
    """The full lexer state machine over every byte, no token objects (the output is the input)."""
    from htmlstream._engine.lexer import Lexer

    def run(chunks: Sequence[bytes]) -> None:
        lexer = Lexer()
        for chunk in chunks:
            lexer.feed_bytes(chunk)
        lexer.close()

    return run


@engine("htmlstream tokens", "hs-tokens")
def htmlstream_tokens() -> Runner:
    """``Tokenizer(feedback=False)`` making a Python token object per token; nothing reads them."""
    from htmlstream import Tokenizer

    def run(chunks: Sequence[bytes]) -> None:
        tokenizer = Tokenizer(feedback=False)
        for chunk in chunks:
            tokenizer.feed(chunk)
        tokenizer.close()

    return run


@engine("lol-html (python-lolhtml)", "lol-html")
def lolhtml_no_match() -> Runner:
    """Native lol-html rewriter with one element handler whose selector matches nothing."""
    import lolhtml

    class NoOp:
        def element(self, el: Any) -> None:
            pass

    def run(chunks: Sequence[bytes]) -> None:
        output: list[bytes] = []
        rewriter = lolhtml.HTMLRewriter(output.append)
        rewriter.on("nonexistent-tag-xyz", NoOp())
        for chunk in chunks:
            rewriter.write(chunk)
        rewriter.end()

    return run


@engine("html.parser", "html.parser")
def stdlib_html_parser() -> Runner:
    """``html.parser.HTMLParser`` with no-op handlers, fed incrementally decoded ``str`` chunks."""
    from html.parser import HTMLParser

    class NoOpParser(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            pass

        def handle_endtag(self, tag: str) -> None:
            pass

        def handle_data(self, data: str) -> None:
            pass

        def handle_comment(self, data: str) -> None:
            pass

        def handle_decl(self, decl: str) -> None:
            pass

    def run(chunks: Sequence[bytes]) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        parser = NoOpParser()
        for chunk in chunks:
            parser.feed(decoder.decode(chunk))
        parser.feed(decoder.decode(b"", final=True))
        parser.close()

    return run


@engine("lxml HTMLPullParser", "lxml-pull")
def lxml_pull() -> Runner:
    """``lxml.etree.HTMLPullParser`` (libxml2, builds a tree) fed bytes, events read at the end."""
    from lxml import etree

    def run(chunks: Sequence[bytes]) -> None:
        parser = etree.HTMLPullParser()
        for chunk in chunks:
            parser.feed(chunk)
        parser.close()
        for _ in parser.read_events():
            pass

    return run


@engine("selectolax (modest)", "slx-modest", whole_document=True)
def selectolax_modest() -> Runner:
    """``selectolax.parser.HTMLParser`` on the whole document (builds a tree)."""
    from selectolax.parser import HTMLParser

    def run(chunks: Sequence[bytes]) -> None:
        (data,) = chunks
        HTMLParser(data)

    return run


@engine("selectolax (lexbor)", "slx-lexbor", whole_document=True)
def selectolax_lexbor() -> Runner:
    """``selectolax.lexbor.LexborHTMLParser`` on the whole document (builds a tree)."""
    from selectolax.lexbor import LexborHTMLParser

    def run(chunks: Sequence[bytes]) -> None:
        (data,) = chunks
        LexborHTMLParser(data)

    return run


#: Ratio columns: (header, numerator engine, denominator engine).
RATIOS = (
    ("pass/lol", "htmlstream passthrough", "lol-html (python-lolhtml)"),
    ("tok/h.p", "htmlstream tokens", "html.parser"),
)


# --------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------


def split(data: bytes, chunk_size: int) -> list[bytes]:
    """``data`` as chunks of ``chunk_size`` bytes (the last one may be shorter)."""
    return [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)] or [b""]


#: The clocks a sample can be timed with.  "cpu" (process CPU time) does not count the time the
#: process waits for a core, so figures stay comparable on a machine busy with other work.
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


@dataclass
class Case:
    """One engine on one (file, chunk size), with its samples."""

    engine: Engine
    run: Runner
    chunks: Sequence[bytes]
    loops: int = 1
    rates: list[float] = field(default_factory=list)

    def sample(self, size: int, clock: Callable[[], float]) -> float:
        """Time ``loops`` back-to-back runs with the garbage collector off; returns MB/s."""
        gc.collect()
        gc.disable()
        try:
            started = clock()
            for _ in range(self.loops):
                self.run(self.chunks)
            elapsed = clock() - started
        finally:
            gc.enable()
        return size * self.loops / max(elapsed, 1e-9) / 1e6


def measure_row(
    cases: list[Case],
    size: int,
    repeat: int,
    min_time: float,
    clock: Callable[[], float],
    errors: dict[str, str],
) -> list[Case]:
    """Take ``repeat`` samples of every case, round-robin, after a warm-up run of each.

    The warm-up also sizes the samples: enough runs to last ``min_time``.  Interleaving the cases
    exposes them all alike to changes in machine load, which keeps the ratios of a row honest.
    A case that raises is dropped, with the reason recorded in ``errors``.
    """
    ready = []
    for case in cases:
        try:
            started = clock()
            case.run(case.chunks)
            once = clock() - started
        except Exception as exc:
            errors[case.engine.name] = describe_error(exc)
            continue
        case.loops = max(1, math.ceil(min_time / max(once, 1e-6)))
        ready.append(case)
    for _ in range(repeat):
        for case in list(ready):
            try:
                case.rates.append(case.sample(size, clock))
            except Exception as exc:
                errors[case.engine.name] = describe_error(exc)
                ready.remove(case)
    return ready


def select_engines(only: list[str] | None) -> list[Engine]:
    """The registered engines whose name contains one of ``only`` (case-insensitive), or all."""
    if not only:
        return list(ENGINES.values())
    wanted = [word.lower() for word in only]
    return [e for e in ENGINES.values() if any(w in e.name.lower() for w in wanted)]


def describe_error(exc: BaseException) -> str:
    """A one-line reason for a skip: the exception type and its first sentence."""
    message = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {message.split('. ')[0]}"[:160]


def load_runners(engines: list[Engine]) -> tuple[dict[str, Runner], dict[str, str]]:
    """Build each engine's runner; an engine that cannot be set up is skipped with the reason."""
    runners: dict[str, Runner] = {}
    skipped: dict[str, str] = {}
    for eng in engines:
        try:
            runners[eng.name] = eng.factory()
        except Exception as exc:  # ImportError above all: a peer not installed / engine not built
            skipped[eng.name] = describe_error(exc)
    return runners, skipped


def run_benchmarks(
    files: list[Path],
    engines: list[Engine],
    runners: dict[str, Runner],
    chunk_sizes: Sequence[int],
    repeat: int,
    min_time: float,
    clock: Callable[[], float],
    skipped: dict[str, str],
) -> list[dict]:
    """Measure every (file, chunk size, engine); returns one result dict per measurement."""
    results = []
    for path in files:
        data = path.read_bytes()
        for chunk_size in chunk_sizes:
            chunks = split(data, chunk_size)
            cases = [
                Case(eng, runners[eng.name], [data] if eng.whole_document else chunks)
                for eng in engines
                if eng.name in runners
            ]
            print(f"  {path.name}, chunks of {chunk_size} ...", file=sys.stderr)
            errors: dict[str, str] = {}
            for case in measure_row(cases, len(data), repeat, min_time, clock, errors):
                results.append(
                    {
                        "file": path.name,
                        "size": len(data),
                        "chunk_size": None if case.engine.whole_document else chunk_size,
                        "row_chunk_size": chunk_size,
                        "engine": case.engine.name,
                        "mb_s": statistics.median(case.rates),
                        "min_mb_s": min(case.rates),
                        "max_mb_s": max(case.rates),
                        "loops": case.loops,
                    }
                )
            for name, reason in errors.items():
                skipped[f"{name} on {path.name} (chunks of {chunk_size})"] = reason
    return results


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def format_table(results: list[dict], engines: list[Engine]) -> str:
    """One row per (file, chunk size): MB/s per engine, then the ratio columns."""
    shown = [e for e in engines if any(r["engine"] == e.name for r in results)]
    names = {e.name for e in shown}
    ratios = [r for r in RATIOS if r[1] in names and r[2] in names]
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for r in results:
        row = rows.setdefault((r["file"], r["row_chunk_size"]), {"size": r["size"]})
        row[r["engine"]] = r["mb_s"]

    header = ["file", "KB", "chunk"] + [e.column for e in shown] + [r[0] for r in ratios]
    table = [header]
    for (name, chunk_size), row in rows.items():
        cells = [name, f"{row['size'] / 1000:.0f}", str(chunk_size)]
        cells += [f"{row[e.name]:.1f}" if e.name in row else "-" for e in shown]
        for _, num, den in ratios:
            ok = num in row and den in row and row[den] > 0
            cells.append(f"{row[num] / row[den]:.2f}x" if ok else "-")
        table.append(cells)

    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = []
    for n, cells in enumerate(table):
        padded = [
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        lines.append("  ".join(padded))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    legend = [
        f"  {e.column:<12} {e.name}" + (" (whole document)" if e.whole_document else "")
        for e in shown
    ]
    legend += [f"  {h:<12} {num} / {den}" for h, num, den in ratios]
    return "\n".join([*lines, "", "MB/s, median; columns:", *legend])


def environment() -> dict[str, Any]:
    """What the figures were measured on."""
    versions = {}
    for dist in ("htmlstream", "python-lolhtml", "lxml", "selectolax", "Cython"):
        try:
            from importlib.metadata import version

            versions[dist] = version(dist)
        except Exception:
            versions[dist] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "versions": versions,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def positive_int(value: str) -> int:
    """``argparse`` type: an integer greater than zero."""
    number = int(value)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0: {value!r}")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        type=Path,
        default=Path(os.environ.get("HTMLSTREAM_CORPUS", DEFAULT_CORPUS)),
        help="directory of .html files (default: $HTMLSTREAM_CORPUS or ../shared/corpus)",
    )
    parser.add_argument("--files", default="*.html", metavar="GLOB", help="files in the corpus")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only engines whose name contains NAME (case-insensitive; repeatable)",
    )
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        action="append",
        metavar="N",
        help="bytes per chunk (repeatable; default: "
        + " and ".join(map(str, DEFAULT_CHUNK_SIZES))
        + ")",
    )
    parser.add_argument("--repeat", type=positive_int, default=7, help="samples (default: 7)")
    parser.add_argument(
        "--min-time",
        type=float,
        default=0.05,
        metavar="SECONDS",
        help="least duration of one sample; short runs are looped (default: 0.05)",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="time samples by process CPU time (default; robust on a busy machine) or wall clock",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    parser.add_argument("--list-engines", action="store_true", help="list engines and exit")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.list_engines:
        for eng in ENGINES.values():
            print(f"{eng.column:<12} {eng.name}")
        return 0

    engines = select_engines(args.only)
    if not engines:
        print(f"bench: no engine matches {args.only}", file=sys.stderr)
        return 2
    files = sorted(args.corpus.glob(args.files))
    if not files:
        print(f"bench: no file matches {args.files!r} in {args.corpus}", file=sys.stderr)
        return 2
    chunk_sizes = args.chunk_size or list(DEFAULT_CHUNK_SIZES)

    runners, skipped = load_runners(engines)
    for name, reason in skipped.items():
        print(f"note: skipping {name}: {reason}", file=sys.stderr)

    started = time.perf_counter()
    results = run_benchmarks(
        files,
        engines,
        runners,
        chunk_sizes,
        args.repeat,
        args.min_time,
        CLOCKS[args.clock],
        skipped,
    )
    total = time.perf_counter() - started

    print(format_table(results, engines))
    if skipped:
        print("\nskipped:")
        for name, reason in skipped.items():
            print(f"  {name}: {reason}")
    print(
        f"\n{len(results)} measurements in {total:.1f} s; repeat={args.repeat}, "
        f"min sample {args.min_time} s, {args.clock} clock; {platform.python_implementation()} "
        f"{sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )

    if args.json:
        report = {
            "environment": environment(),
            "settings": {
                "corpus": str(args.corpus.resolve()),
                "files": args.files,
                "chunk_sizes": chunk_sizes,
                "repeat": args.repeat,
                "min_time": args.min_time,
                "clock": args.clock,
            },
            "results": [{k: v for k, v in r.items() if k != "row_chunk_size"} for r in results],
            "skipped": skipped,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
