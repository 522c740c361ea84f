"""``htmlstream extract``: extract fields from local files and web pages into JSON lines or CSV.

Files (and ``-``, standard input) are read in chunks and extracted locally; URLs are fetched by
:func:`htmlstream.scrape.scrape` (deadline, retries, robots.txt, concurrency).  Records go to
standard output (or ``-o``) as each source completes: the files first, in order, then the URLs
as they complete.  On standard error: a progress bar (with rate and ETA, and by bytes for a big
file) when it is a terminal and tqdm is installed (the extra ``htmlstream[progress]``), and a
final summary: how many sources gave a record (ok), were skipped (robots.txt disallows them, or
they are not HTML pages) or failed.  The exit status is 1 when one failed (with ``--on-error
skip`` once every source is done; by default at the first), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import os
import sys
import time
from collections.abc import Generator
from typing import IO, Any, TextIO

from htmlstream.cli._common import (
    DEFAULT_CHUNK_SIZE,
    CliError,
    encoding_name,
    is_url,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from htmlstream.errors import HtmlStreamError

__all__ = ["add_extract_parser", "cmd_extract"]

#: Files larger than this show a progress bar of their own, by bytes.
BIG_FILE = 8 * 1024 * 1024
#: The keys every record starts with, before the fields.
RECORD_KEYS = ("url", "final_url", "status", "error")


def field_spec(value: str) -> tuple[str, str]:
    """``argparse`` type: ``NAME=SPEC`` (the name before the first ``=``)."""
    name, sep, spec = value.partition("=")
    name = name.strip()
    if not sep or not name or not spec.strip() or not name.replace("_", "a").replace(
            "-", "a").replace(".", "a").isalnum():
        raise argparse.ArgumentTypeError(
            f"expected NAME=SELECTOR[::text|::html|::attr(NAME)][*], not {value!r}")
    if name in RECORD_KEYS:
        raise argparse.ArgumentTypeError(f"a field may not be named {name!r}")
    return name, spec.strip()


def add_extract_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``htmlstream extract``."""
    parser = subparsers.add_parser(
        "extract",
        help="extract fields from files and web pages into JSON lines or CSV",
        description=(
            "Extract fields from each SOURCE (an http(s):// URL, a file, or '-' for standard "
            "input) while it streams in, and write one record per source: url, final_url, "
            "status, error, then the fields."
        ),
    )
    parser.add_argument("sources", nargs="+", metavar="URL|FILE",
                        help="the pages: http:// or https:// URLs, files, '-' for stdin")
    parser.add_argument("-f", "--field", dest="fields", action="append", type=field_spec,
                        required=True, metavar="NAME=SPEC",
                        help="a field: NAME=SELECTOR with ::text (the default), ::html or "
                        "::attr(NAME), and * for every match ('links=a::attr(href)*')")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--jsonl", dest="format", action="store_const", const="jsonl",
                     help="one JSON object per line (the default)")
    fmt.add_argument("--csv", dest="format", action="store_const", const="csv",
                     help="CSV with a header row (lists as JSON arrays)")
    parser.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default: stdout)")
    parser.add_argument("--concurrency", type=positive_int, default=8, metavar="N",
                        help="pages fetched at once (default: 8)")
    parser.add_argument("--per-host", type=positive_int, default=2, metavar="N",
                        help="pages fetched at once from one host (default: 2)")
    parser.add_argument("--host-delay", type=non_negative_float, default=0.0, metavar="S",
                        help="seconds between two requests to one host (default: 0)")
    parser.add_argument("--retries", type=non_negative_int, default=3, metavar="N",
                        help="retries of a page after a connection error, a timeout or a "
                        "429/502/503/504 (default: 3)")
    parser.add_argument("--timeout", type=positive_float, default=60.0, metavar="S",
                        help="each page's deadline in seconds, retries included (default: 60)")
    parser.add_argument("--max-bytes", type=positive_int, default=32 * 1024 * 1024,
                        metavar="N", help="the most bytes of a page, once decompressed "
                        "(default: 32 MiB)")
    parser.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                        help="'raise' (the default): stop at the first source that fails; "
                        "'skip': write its record with the error and go on")
    parser.add_argument("--no-robots", dest="robots", action="store_false",
                        help="fetch pages robots.txt disallows")
    parser.add_argument("--user-agent", metavar="UA",
                        help="the User-Agent sent, and matched in robots.txt")
    parser.add_argument("--encoding", type=encoding_name, metavar="ENC",
                        help="the files' encoding (default: their BOM or <meta charset>, "
                        "else UTF-8)")
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress bar, even on a terminal")
    parser.set_defaults(func=cmd_extract, format="jsonl")


class _Writer:
    """Records to JSON lines or CSV, flushed one by one."""

    def __init__(self, out: TextIO, fmt: str, names: list[str]) -> None:
        self.out = out
        self.csv: Any = None
        if fmt == "csv":
            self.csv = csv.writer(out)
            self.csv.writerow([*RECORD_KEYS, *names])

    def write(self, record: dict[str, Any]) -> None:
        if self.csv is not None:
            self.csv.writerow(["" if v is None else json.dumps(v, ensure_ascii=False)
                               if isinstance(v, list) else v for v in record.values()])
        else:
            self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.out.flush()


class _Progress:
    """A tqdm bar on standard error when it is a terminal and tqdm is there; else nothing."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.tqdm: Any = None
        if enabled and sys.stderr.isatty():
            try:
                self.tqdm = importlib.import_module("tqdm").tqdm
            except ImportError:
                self.tqdm = None
        self.bar = None if self.tqdm is None else self.tqdm(
            total=total, unit="page", file=sys.stderr, dynamic_ncols=True)

    def bytes_bar(self, name: str, size: int) -> Any:
        if self.tqdm is None or size < BIG_FILE:
            return None
        return self.tqdm(total=size, unit="B", unit_scale=True, unit_divisor=1024,
                         desc=os.path.basename(name), file=sys.stderr, leave=False,
                         position=1, dynamic_ncols=True)

    def step(self, counts: dict[str, int]) -> None:
        if self.bar is not None:
            self.bar.set_postfix(counts, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _file_record(name: str, stream: IO[bytes], fields: dict[str, str], encoding: str | None,
                 progress: _Progress, size: int) -> dict[str, Any]:
    from htmlstream.extraction import Extractor

    extractor = Extractor(fields, encoding=encoding)
    bar = progress.bytes_bar(name, size)
    try:
        while chunk := stream.read(DEFAULT_CHUNK_SIZE):
            extractor.feed(chunk)
            if bar is not None:
                bar.update(len(chunk))
            if extractor.done:
                break
    finally:
        if bar is not None:
            bar.close()
    return {"url": name, "final_url": None, "status": None, "error": None,
            **extractor.close()}


def _files(paths: list[str], fields: dict[str, str], encoding: str | None,
           progress: _Progress) -> Generator[tuple[dict[str, Any], str], None, None]:
    """(record, outcome) per file: outcome ``"ok"`` or ``"failed"``."""
    for path in paths:
        try:
            if path == "-":
                record = _file_record("-", sys.stdin.buffer, fields, encoding, progress, 0)
            else:
                with open(path, "rb") as stream:
                    size = os.fstat(stream.fileno()).st_size
                    record = _file_record(path, stream, fields, encoding, progress, size)
        except OSError as exc:
            error = f"file: {exc.strerror or exc}"
            yield ({"url": path, "final_url": None, "status": None, "error": error,
                    **dict.fromkeys(fields)}, "failed")
        except HtmlStreamError as exc:
            error = f"extraction: {type(exc).__name__}: {exc}"
            yield ({"url": path, "final_url": None, "status": None, "error": error,
                    **dict.fromkeys(fields)}, "failed")
        else:
            yield record, "ok"


def _urls(urls: list[str], fields: dict[str, str],
          args: argparse.Namespace) -> Generator[tuple[dict[str, Any], str], None, None]:
    try:
        from htmlstream import scrape as scraping
    except ImportError as exc:
        raise CliError(f"fetching URLs needs the extra htmlstream[scrape]: {exc}") from exc
    options: dict[str, Any] = {"max_bytes": args.max_bytes, "robots": args.robots}
    if args.user_agent:
        options["user_agent"] = args.user_agent
    for page in scraping.scrape(urls, fields, timeout=args.timeout, retries=args.retries,
                                on_error="skip", concurrency=args.concurrency,
                                per_host=args.per_host, host_delay=args.host_delay, **options):
        if page.ok:
            outcome = "ok"
        elif isinstance(page.error, (scraping.RobotsDisallowed, scraping.NotHTML)):
            outcome = "skipped"     # (not a page to extract, nor a failure to fetch one)
        else:
            outcome = "failed"
        yield page.record, outcome


def cmd_extract(args: argparse.Namespace) -> int:
    """Run ``htmlstream extract``."""
    fields = dict(args.fields)
    from htmlstream.extraction import Extractor

    try:
        Extractor(fields)   # parses the specs and compiles the selectors
    except ValueError as exc:   # a SelectorError is a ValueError too
        raise CliError(f"invalid field: {exc}") from exc
    urls = [s for s in args.sources if is_url(s)]
    files = [s for s in args.sources if not is_url(s)]
    counts = {"ok": 0, "skipped": 0, "failed": 0}
    start = time.monotonic()
    out: TextIO
    if args.output:
        try:
            os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
            out = open(args.output, "w", encoding="utf-8", newline="")  # noqa: SIM115
        except OSError as exc:
            raise CliError(f"cannot write {args.output!r}: {exc.strerror or exc}") from exc
    else:
        out = sys.stdout
    progress = _Progress(len(args.sources), args.progress)
    writer = _Writer(out, args.format, list(fields))
    first_error: str | None = None
    sources = [_files(files, fields, args.encoding, progress)]
    if urls:
        sources.append(_urls(urls, fields, args))
    try:
        for results in sources:
            for record, outcome in results:
                counts[outcome] += 1
                writer.write(record)
                progress.step(counts)
                if outcome == "failed" and args.on_error == "raise":
                    first_error = f"{record['url']}: {record['error']}"
                    break
            if first_error:
                break
    finally:
        for results in sources:     # stops a run left early: its connections are closed
            results.close()
        progress.close()
        if out is not sys.stdout:
            out.close()
        elapsed = time.monotonic() - start
        done = sum(counts.values())
        print(f"{counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed "
              f"in {elapsed:.2f} s ({done / elapsed if elapsed > 0 else 0:.1f} sources/s)",
              file=sys.stderr)
    if first_error:
        raise CliError(f"stopped at the first failure (--on-error skip goes on): "
                       f"{first_error}", status=1)
    return 1 if counts["failed"] else 0
