"""The ``htmlstream`` command line.

Subcommands (one ``cmd_*`` function each, registered in :func:`build_parser`):

``htmlstream tokens [INPUT|-] [--encoding ENC] [--chunk-size N] [--no-feedback]
                  [--summary | --list]``
    Tokenize a document as a stream (INPUT defaults to the bundled sample page) and print either a
    summary (token counts, tag names, text bytes by text type, time and throughput) or one line per
    token.

To add a subcommand (``rewrite`` is next): write ``add_<name>_parser(subparsers)`` that sets
``func=cmd_<name>``, write ``cmd_<name>(args) -> int``, and call the former in
:func:`build_parser`. Commands raise :class:`CliError` for user errors; :func:`main` prints them.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import importlib.resources
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import BinaryIO, TextIO

import htmlstream

PROG = "htmlstream"
DEFAULT_CHUNK_SIZE = 65536
SAMPLE_RESOURCE = "data/sample.html"
#: How many characters of text (or raw bytes) a ``--list`` line shows.
LIST_TEXT_WIDTH = 60


class CliError(Exception):
    """A user-facing error: printed as ``htmlstream: error: MESSAGE``; ends with ``status``."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------------------------
# Input helpers shared by the subcommands
# --------------------------------------------------------------------------------------------


def positive_int(value: str) -> int:
    """``argparse`` type: an integer greater than zero."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer: {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0: {value!r}")
    return number


def encoding_name(value: str) -> str:
    """``argparse`` type: a codec name Python knows, returned as given."""
    try:
        codecs.lookup(value)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding: {value!r}") from None
    return value


@contextlib.contextmanager
def open_input(path: str | None) -> Iterator[tuple[str, BinaryIO]]:
    """Open INPUT for binary reading; yields ``(display_name, stream)``.

    ``None`` is the sample page bundled with the package, ``"-"`` is standard input.
    """
    if path is None:
        resource = importlib.resources.files("htmlstream").joinpath(SAMPLE_RESOURCE)
        with resource.open("rb") as stream:
            yield f"<bundled {SAMPLE_RESOURCE}>", stream
    elif path == "-":
        yield "<stdin>", sys.stdin.buffer
    else:
        try:
            stream = open(path, "rb")  # noqa: SIM115 - closed below, errors mapped to CliError
        except OSError as exc:
            raise CliError(f"cannot read {path!r}: {exc.strerror or exc}") from exc
        with stream:
            yield path, stream


def read_chunks(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Yield the stream's bytes in chunks of at most ``chunk_size`` bytes."""
    while chunk := stream.read(chunk_size):
        yield chunk


# --------------------------------------------------------------------------------------------
# tokens
# --------------------------------------------------------------------------------------------


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
        help="document encoding used to decode names, attributes and text (default: utf-8)",
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
    parser.set_defaults(mode="summary", func=cmd_tokens)


class TokenStats:
    """Counters a ``--summary`` keeps while tokens stream past (no token is kept)."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.start_tags: Counter[str] = Counter()
        self.tag_names: set[str] = set()
        self.text_bytes: Counter[str] = Counter()

    def add(self, tokens: list[htmlstream.Token]) -> None:
        """Count a batch of tokens."""
        for token in tokens:
            self.kinds[type(token).__name__] += 1
            if isinstance(token, htmlstream.StartTag):
                self.start_tags[token.name] += 1
                self.tag_names.add(token.name)
            elif isinstance(token, htmlstream.EndTag):
                self.tag_names.add(token.name)
            elif isinstance(token, htmlstream.Text):
                self.text_bytes[_text_type_name(token.text_type)] += len(token.raw)


def cmd_tokens(args: argparse.Namespace) -> int:
    """Run ``htmlstream tokens``."""
    out: TextIO = sys.stdout
    stats = TokenStats()
    sink: Callable[[list[htmlstream.Token]], None]
    sink = stats.add if args.mode == "summary" else lambda tokens: _print_tokens(tokens, out)

    total = 0
    elapsed = 0.0
    with open_input(args.input) as (name, stream):
        tokenizer = htmlstream.Tokenizer(encoding=args.encoding, feedback=args.feedback)
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
    return 0


def _text_type_name(text_type: object) -> str:
    """``TextType.SCRIPT_DATA`` -> ``"SCRIPT_DATA"`` (whatever enum flavour the engine uses)."""
    name = getattr(text_type, "name", None)
    return name if isinstance(name, str) else str(text_type)


def _shorten(text: str, width: int = LIST_TEXT_WIDTH) -> str:
    """The first ``width`` characters of ``text`` as a Python literal, marked when cut."""
    return repr(text[:width]) + ("…" if len(text) > width else "")


def describe_token(token: htmlstream.Token) -> str:
    """A one-line description of a token for ``--list``."""
    if isinstance(token, htmlstream.StartTag):
        attrs = "".join(f" {key}={_shorten(value, 40)}" for key, value in token.attributes.items())
        return f"<{token.name}{attrs}{' /' if token.self_closing else ''}>"
    if isinstance(token, htmlstream.EndTag):
        return f"</{token.name}>"
    if isinstance(token, htmlstream.Text):
        return f"{_text_type_name(token.text_type)} {_shorten(token.text)}"
    if isinstance(token, htmlstream.Comment):
        return _shorten(token.text)
    if isinstance(token, htmlstream.Doctype):
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


def _print_tokens(tokens: list[htmlstream.Token], out: TextIO) -> None:
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


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``htmlstream`` argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Streaming HTML tokenizer and rewriter."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_tokens_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    0 on success, 1 when htmlstream reports an error on the document
    (:class:`htmlstream.HtmlStreamError`), 2 on a usage or input error (bad option, missing file).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed by argparse
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return args.func(args)
    except CliError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.status
    except htmlstream.HtmlStreamError as exc:
        print(f"{PROG}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, and keep Python's own flush at exit
        # from raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
