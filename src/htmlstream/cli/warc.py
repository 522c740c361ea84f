"""``htmlstream warc``: web archives (:mod:`htmlstream.warc`, ``pip install 'htmlstream[warc]'``).

``htmlstream warc rewrite IN -o OUT [--on SELECTOR ACTION...] [recipe options]``
    Rewrite every HTML ``response`` record of a WARC file (digests and lengths recomputed),
    copying every other record byte for byte; a summary goes to standard error.

``htmlstream warc extract IN -f NAME=SPEC... [--jsonl | --parquet OUT]``
    One row per HTML ``response`` record: its ``url`` (WARC-Target-URI), ``date`` (WARC-Date)
    and the fields (``title``, ``a::attr(href)*``...), as JSON lines or a Parquet file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from htmlstream.cli._common import DEFAULT_CHUNK_SIZE, PROG, CliError, positive_int
from htmlstream.cli.recipe_options import (
    add_email_options,
    add_recipe_arguments,
    email_recipes,
    recipes_from_args,
)
from htmlstream.cli.rewrite import RewriteGroup, add_group_arguments, build_rewriter, check_groups

_EPILOG = """\
examples:
  htmlstream warc rewrite crawl.warc.gz -o out.warc.gz --https-upgrade --https-hosts '*'
  htmlstream warc rewrite crawl.warc.gz -o out.warc.gz --on script --remove
  htmlstream warc extract crawl.warc.gz -f title=title -f links='a::attr(href)*' --jsonl
  htmlstream warc extract crawl.warc.gz -f title=title --parquet titles.parquet
"""


def add_warc_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``htmlstream warc`` and its subcommands."""
    parser = subparsers.add_parser(
        "warc", help="web archives: rewrite or extract from the HTML responses of a WARC file",
        description="Web archives (WARC files, plain or gzipped record by record).",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="warc_command", metavar="SUBCOMMAND", required=True)

    rewrite = commands.add_parser(
        "rewrite", help="rewrite every HTML response record; copy the others byte for byte",
        description="Rewrite every HTML response record of IN (its HTTP headers, Content-Length "
        "and digests recomputed); every other record is copied byte for byte.")
    rewrite.add_argument("input", metavar="IN", help="the WARC file ('-' for standard input)")
    rewrite.add_argument("-o", "--output", metavar="OUT", required=True,
                         help="the WARC file to write (gzipped per record when it ends in .gz)")
    rewrite.add_argument("--chunk-size", type=positive_int, default=DEFAULT_CHUNK_SIZE,
                         metavar="N", help="payload bytes fed at a time")
    rewrite.add_argument("--gzip-level", type=int, choices=range(0, 10), default=6,
                         metavar="0-9", help="zlib level of the output's gzip members "
                         "(default: 6; 1 is about three times faster)")
    add_group_arguments(rewrite)
    add_email_options(rewrite)
    add_recipe_arguments(rewrite)
    rewrite.set_defaults(func=cmd_warc_rewrite, groups=None)

    extract = commands.add_parser(
        "extract", help="one row of fields per HTML response record (JSON lines or Parquet)",
        description="Extract fields from every HTML response record of IN: one row each, "
        "with the record's url (WARC-Target-URI) and date (WARC-Date).")
    extract.add_argument("input", metavar="IN", help="the WARC file ('-' for standard input)")
    extract.add_argument("-f", "--field", action="append", required=True, metavar="NAME=SPEC",
                         help="a field: NAME=SELECTOR[::text|::html|::attr(NAME)][*] "
                         "(* for every match); repeatable")
    extract.add_argument("--encoding", metavar="ENC",
                         help="the documents' encoding (default: what each one declares)")
    out = extract.add_mutually_exclusive_group()
    out.add_argument("--jsonl", action="store_true",
                     help="JSON lines on standard output (the default)")
    out.add_argument("--parquet", metavar="OUT",
                     help="write a Parquet file (pip install 'htmlstream[parquet]': pyarrow)")
    extract.add_argument("--chunk-size", type=positive_int, default=DEFAULT_CHUNK_SIZE,
                         metavar="N", help="payload bytes fed at a time")
    extract.set_defaults(func=cmd_warc_extract)


def _warc_module() -> Any:
    try:
        from htmlstream import warc
    except ImportError as exc:  # pragma: no cover - the module itself imports nothing extra
        raise CliError(str(exc)) from exc
    return warc


def _source(path: str) -> Any:
    return sys.stdin.buffer if path == "-" else path


def _summary(name: str, report: Any) -> None:
    done = (f"{report.rewritten:,} rewritten, {report.copied:,} copied" if name == "rewrite"
            else f"{report.extracted:,} rows")
    print(f"{PROG}: warc {name}: {report.records:,} records, {done}, {report.failed:,} failed, "
          f"{len(report.bad_records):,} bad records skipped", file=sys.stderr)
    for bad in report.bad_records[:10]:
        print(f"{PROG}: warc: bad record at offset {bad.offset}: {bad.error}", file=sys.stderr)


def cmd_warc_rewrite(args: argparse.Namespace) -> int:
    """Run ``htmlstream warc rewrite``."""
    warc = _warc_module()
    groups: list[RewriteGroup] = args.groups or []
    check_groups(groups)
    recipes = recipes_from_args(args) + email_recipes(args)
    if not groups and not recipes:
        raise CliError("nothing to do: give --on SELECTOR ACTION... or a recipe option")
    rewriter = build_rewriter(groups, None, "utf-8", False, recipes)
    try:
        report = warc.rewrite_warc(_source(args.input), args.output, rewriter,
                                   chunk_size=args.chunk_size, gzip_level=args.gzip_level)
    except (OSError, warc.WarcError) as exc:
        # Nothing half-written is left behind.
        with contextlib.suppress(OSError):
            os.unlink(args.output)
        if isinstance(exc, OSError):
            raise CliError(f"{exc.filename or args.input}: {exc.strerror or exc}") from exc
        raise CliError(str(exc)) from exc
    _summary("rewrite", report)
    return 0


def _fields(specs: list[str]) -> dict[str, Any]:
    from htmlstream.extraction import Field

    fields: dict[str, Any] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name.strip():
            raise CliError(f"-f expects NAME=SPEC, not {spec!r}")
        try:
            fields[name.strip()] = Field.parse(value)
        except ValueError as exc:
            raise CliError(f"-f {spec!r}: {exc}") from exc
    return fields


def cmd_warc_extract(args: argparse.Namespace) -> int:
    """Run ``htmlstream warc extract``."""
    warc = _warc_module()
    fields = _fields(args.field)
    report = warc.WarcReport()
    try:
        rows = warc.extract_warc(_source(args.input), fields, encoding=args.encoding,
                                 chunk_size=args.chunk_size, report=report)
        if args.parquet:
            _write_parquet(rows, fields, args.parquet)
        else:
            out = sys.stdout
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise CliError(f"{exc.filename or args.input}: {exc.strerror or exc}") from exc
    except (warc.WarcError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    _summary("extract", report)
    return 0


def _write_parquet(rows: Iterator[dict[str, Any]], fields: dict[str, Any], path: str) -> None:
    """Rows to a Parquet file (strings; lists of strings for ``*`` fields), in row groups of
    10,000 rows (bounded memory)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise CliError("--parquet needs pyarrow: pip install 'htmlstream[parquet]'") from exc
    schema = pa.schema([("url", pa.string()), ("date", pa.string())] + [
        (name, pa.list_(pa.string()) if field.many else pa.string())
        for name, field in fields.items()])
    batch: list[dict[str, Any]] = []
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)     # (missing folders made)
    with pq.ParquetWriter(path, schema) as writer:
        for row in rows:
            batch.append(row)
            if len(batch) >= 10_000:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch.clear()
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
