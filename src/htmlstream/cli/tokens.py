"""``htmlstream tokens``: tokenize a document as a stream and print a summary, one line per
token, or one line per parse error."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

import htmlstream
from htmlstream.cli._common import (
    DEFAULT_CHUNK_SIZE,
    encoding_name,
    open_input,
    positive_int,
    read_chunks,
)

if TYPE_CHECKING:
    pass


#: How many characters of text (or raw bytes) a ``--list`` line shows.
LIST_TEXT_WIDTH = 60


def add_tokens_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``htmlstream tokens``."""
    parser = subparsers.add_parser(
        "tokens",
        help="tokenize a document and print a summary or the token list",
        description=(
            "Tokenize INPUT as a stream (fed in chunks) and print a summary of the tokens "
            "(the default) or one line per token."
        ),
    )
    parser.add_argument(
        "input",
        nargs="?",
        metavar="INPUT",
        help="HTML file to read, '-' for standard input (default: the bundled sample page)",
    )
    parser.add_argument(
        "--encoding",
        type=encoding_name,
        default="utf-8",
        metavar="ENC",
        help="document encoding used to decode names, attributes and text: a label of the "
        "WHATWG Encoding Standard (default: utf-8)",
    )
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        default=DEFAULT_CHUNK_SIZE,
        metavar="N",
        help=f"bytes per feed() call (default: {DEFAULT_CHUNK_SIZE})",
    )
    parser.add_argument(
        "--no-feedback",
        dest="feedback",
        action="store_false",
        help="bare WHATWG tokenizer: no tree-builder feedback (<script>, <textarea>, <svg>... "
        "do not switch the tokenizer state)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--summary",
        dest="mode",
        action="store_const",
        const="summary",
        help="print counts, tag names, text bytes and throughput (the default)",
    )
    mode.add_argument(
        "--list",
        dest="mode",
        action="store_const",
        const="list",
        help="print one line per token: kind, offset, short description",
    )
    mode.add_argument(
        "--errors",
        dest="mode",
        action="store_const",
        const="errors",
        help="print one line per parse error of the tokenizer, INPUT:LINE:COLUMN: CODE (exit "
        "status 1 if there is any)",
    )
    parser.set_defaults(mode="summary", func=cmd_tokens)


class TokenStats:
    """Counters a ``--summary`` keeps while tokens stream past (no token is kept)."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.start_tags: Counter[str] = Counter()
        self.tag_names: set[str] = set()
        self.text_bytes: Counter[str] = Counter()

    def add(self, tokens: list[htmlstream.tokens.Token]) -> None:
        """Count a batch of tokens."""
        for token in tokens:
            self.kinds[type(token).__name__] += 1
            if isinstance(token, htmlstream.tokens.StartTag):
                self.start_tags[token.name] += 1
                self.tag_names.add(token.name)
            elif isinstance(token, htmlstream.tokens.EndTag):
                self.tag_names.add(token.name)
            elif isinstance(token, htmlstream.tokens.Text):
                self.text_bytes[_text_type_name(token.text_type)] += len(token.raw)


def cmd_tokens(args: argparse.Namespace) -> int:
    """Run ``htmlstream tokens``."""
    out: TextIO = sys.stdout
    stats = TokenStats()
    sink: Callable[[list[htmlstream.tokens.Token]], None]
    errors = 0

    def print_list(tokens: list[htmlstream.tokens.Token]) -> None:
        _print_tokens(tokens, out)

    def ignore(tokens: list[htmlstream.tokens.Token]) -> None:
        pass

    sink = {"summary": stats.add, "list": print_list}.get(args.mode, ignore)

    total = 0
    elapsed = 0.0
    with open_input(args.input) as (name, stream):

        def report(error: htmlstream.ParseError) -> None:
            nonlocal errors
            errors += 1
            out.write(f"{name}:{error.line}:{error.column}: {error.code}\n")

        tokenizer = htmlstream.Tokenizer(
            encoding=args.encoding, feedback=args.feedback,
            on_error=report if args.mode == "errors" else None,
        )
        for chunk in read_chunks(stream, args.chunk_size):
            total += len(chunk)
            started = time.perf_counter()
            tokens = tokenizer.feed(chunk)
            elapsed += time.perf_counter() - started
            sink(tokens)
        started = time.perf_counter()
        tokens = tokenizer.close()
        elapsed += time.perf_counter() - started
        sink(tokens)

    if args.mode == "summary":
        _print_summary(out, name, total, args.chunk_size, elapsed, stats)
    return 1 if errors else 0


def _text_type_name(text_type: object) -> str:
    """``TextType.SCRIPT_DATA`` -> ``"SCRIPT_DATA"`` (whatever enum flavour the engine uses)."""
    name = getattr(text_type, "name", None)
    return name if isinstance(name, str) else str(text_type)


def _shorten(text: str, width: int = LIST_TEXT_WIDTH) -> str:
    """The first ``width`` characters of ``text`` as a Python literal, marked when cut."""
    return repr(text[:width]) + ("…" if len(text) > width else "")


def describe_token(token: htmlstream.tokens.Token) -> str:
    """A one-line description of a token for ``--list``."""
    if isinstance(token, htmlstream.tokens.StartTag):
        attrs = "".join(f" {key}={_shorten(value, 40)}" for key, value in token.attributes.items())
        return f"<{token.name}{attrs}{' /' if token.self_closing else ''}>"
    if isinstance(token, htmlstream.tokens.EndTag):
        return f"</{token.name}>"
    if isinstance(token, htmlstream.tokens.Text):
        return f"{_text_type_name(token.text_type)} {_shorten(token.text)}"
    if isinstance(token, htmlstream.tokens.Comment):
        return _shorten(token.text)
    if isinstance(token, htmlstream.tokens.Doctype):
        parts = [f"name={token.name!r}"]
        if token.public_id is not None:
            parts.append(f"public={token.public_id!r}")
        if token.system_id is not None:
            parts.append(f"system={token.system_id!r}")
        if token.force_quirks:
            parts.append("force_quirks")
        return " ".join(parts)
    raw = token.raw
    return repr(raw[:LIST_TEXT_WIDTH]) + ("…" if len(raw) > LIST_TEXT_WIDTH else "")


def _print_tokens(tokens: list[htmlstream.tokens.Token], out: TextIO) -> None:
    """Print one ``--list`` line per token."""
    for token in tokens:
        out.write(f"{type(token).__name__:<9} {token.offset:>9}  {describe_token(token)}\n")


def _print_summary(
    out: TextIO, name: str, total: int, chunk_size: int, elapsed: float, stats: TokenStats
) -> None:
    """Print the ``--summary`` report."""
    write = out.write
    write(f"input:        {name}\n")
    write(f"bytes:        {total:,}\n")
    write(f"chunk size:   {chunk_size:,}\n")
    write(f"tokens:       {sum(stats.kinds.values()):,}\n")
    for kind, count in sorted(stats.kinds.items(), key=lambda item: (-item[1], item[0])):
        write(f"  {kind:<12}{count:>10,}\n")
    write(f"tag names:    {len(stats.tag_names)} distinct\n")
    if stats.start_tags:
        write("top start tags:\n")
        for tag, count in stats.start_tags.most_common(10):
            write(f"  {tag:<12}{count:>10,}\n")
    if stats.text_bytes:
        write("text bytes by text type:\n")
        for text_type, count in stats.text_bytes.most_common():
            write(f"  {text_type:<14}{count:>8,}\n")
    rate = f"{total / elapsed / 1e6:.1f} MB/s" if elapsed > 0 else "n/a"
    write(f"time:         {elapsed * 1e3:.2f} ms ({rate}, tokenizer calls only)\n")
