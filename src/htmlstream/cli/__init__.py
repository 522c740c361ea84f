"""The ``htmlstream`` command line.

Subcommands (one ``cmd_*`` function each, registered in :func:`build_parser`):

``htmlstream tokens [INPUT|-] [--encoding ENC] [--chunk-size N] [--no-feedback]
                  [--summary | --list]``
    Tokenize a document as a stream (INPUT defaults to the bundled sample page) and print either a
    summary (token counts, tag names, text bytes by text type, time and throughput) or one line per
    token.

``htmlstream rewrite [INPUT|-] [-o OUT] [--encoding ENC] [--chunk-size N]
                   (--on SELECTOR ACTION... [--on SELECTOR ACTION...] | --demo)``
    Rewrite a document as a stream: INPUT (a file, ``-`` for standard input, an ``http://`` or
    ``https://`` URL, or by default the bundled sample page) is read in chunks, and each output
    chunk goes to standard output (or ``-o OUT``) as soon as the rewriter returns it.  Each
    ``--on SELECTOR`` starts a group of actions applied, in the order given, to the elements the
    selector matches: ``--set-attr NAME=VALUE``, ``--remove-attr NAME``, ``--remove``,
    ``--unwrap``, ``--before/--after/--prepend/--append/--replace/--inner CONTENT`` (text,
    escaped; ``--html`` in the group inserts it as markup) and ``--rename TAG``.  Groups run in
    order.  ``--demo`` (the default when no ``--on`` is given, and what ``make run`` runs) is the
    Cloudflare showcase: ``http://`` URLs in ``a[href]``, ``img[src]``, ``script[src]``,
    ``link[href]`` and ``form[action]`` become ``https://``, ``<img>`` without a ``loading``
    attribute gets ``loading="lazy"``, and a one-line summary (bytes in and out, elements
    changed, MB/s) goes to standard error.

``htmlstream proxy --upstream URL [--listen HOST:PORT] [--preserve-host] [--trust-forwarded]
                 [--markdown [--content-signal V]] [--connect-timeout S] [--read-timeout S]
                 [--grace S] [--esi[=always]] [--esi-hosts HOST,...] [rewrite options]``
    A rewriting reverse proxy in front of one origin (:mod:`htmlstream.integrations.proxy`):
    the rewrite options are ``htmlstream rewrite``'s; it prints where it listens, logs one line
    per request to standard error, and stops gracefully on SIGINT/SIGTERM.  ``--markdown``:
    requests whose ``Accept`` prefers ``text/markdown`` get the page as Markdown.  ``--esi``
    assembles Edge Side Includes pages (docs/guide/esi.md).

``htmlstream extract URL|FILE... -f NAME=SPEC... [--jsonl | --csv] [-o OUT] [--concurrency N]
                   [--per-host N] [--retries N] [--timeout S] [--on-error raise|skip]
                   [--no-robots] [--user-agent UA]``
    Extract fields from files and web pages (:mod:`htmlstream.scrape`), one record per source
    (:mod:`htmlstream.cli.extract`), a progress bar on a terminal, and a summary on stderr.
``htmlstream warc rewrite IN -o OUT [rewrite options]``,
``htmlstream warc extract IN -f NAME=SPEC... [--jsonl | --parquet OUT]``
    Web archives (:mod:`htmlstream.cli.warc`, :mod:`htmlstream.warc`).
``htmlstream sanitize [INPUT|-] [-o OUT] [--preset NAME] [--allow-comments] [--encoding ENC]
                    [--chunk-size N]``
    Sanitize untrusted HTML as a stream (:mod:`htmlstream.recipes.sanitize`): keep what the
    policy (ammonia's default, or the preset ``comment``, ``rich-text`` or ``text``) allows.
``htmlstream minify [INPUT|-] [-o OUT] [--keep-comments]
                  [--whitespace collapse|remove|keep | --keep-whitespace] [--keep-attributes]
                  [--optional-tags] [--css|--keep-css] [--js|--keep-js] [--stats]``
    Minify a document as a stream (:mod:`htmlstream.cli.minify`, the ``minify`` recipe).
``htmlstream markdown [FILE|URL|-]... [-o OUT] [--main-content] [--jsonl] [--base-url URL]
                    [--links inline|reference] [--no-images] [--heading-style atx|setext]``
    Pages as Markdown as they stream (:mod:`htmlstream.cli.markdown`,
    :func:`htmlstream.markdown`); ``--jsonl``: one record per page with its metadata.

One module per command (``htmlstream.cli.<command>``); :mod:`htmlstream.cli._common` holds what
they share.  To add a subcommand: write a module with ``add_<name>_parser(subparsers)`` that sets
``func=cmd_<name>`` and ``cmd_<name>(args) -> int``, and add the former to :data:`COMMANDS`.
Commands raise :class:`CliError` for user errors; :func:`main` prints them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

import htmlstream
from htmlstream.cli._common import PROG, CliError
from htmlstream.cli.extract import add_extract_parser
from htmlstream.cli.markdown import add_markdown_parser
from htmlstream.cli.minify import add_minify_parser
from htmlstream.cli.proxy import add_proxy_parser
from htmlstream.cli.rewrite import add_rewrite_parser
from htmlstream.cli.sanitize import add_sanitize_parser
from htmlstream.cli.tokens import add_tokens_parser
from htmlstream.cli.warc import add_warc_parser

__all__ = ["COMMANDS", "build_parser", "main"]

#: The subcommands, in the order ``--help`` lists them: each registers its parser.
COMMANDS: tuple[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None], ...] = (
    add_tokens_parser,
    add_rewrite_parser,
    add_proxy_parser,
    add_extract_parser,
    add_warc_parser,
    add_sanitize_parser,
    add_minify_parser,
    add_markdown_parser,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``htmlstream`` argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Streaming HTML tokenizer and rewriter."
    )
    parser.add_argument("--version", action="version",
                        version=f"{PROG} {htmlstream.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_parser in COMMANDS:
        add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    0 on success, 1 when htmlstream reports an error on the document
    (:class:`htmlstream.HtmlStreamError`), 2 on a usage or input error (bad option, missing file).
    """
    if argv is not None and (isinstance(argv, str) or not isinstance(argv, list | tuple)):
        raise TypeError(f"main(): argv must be a list of str (the arguments) or None, not "
                        f"{type(argv).__name__}")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed by argparse
        return exc.code if isinstance(exc.code, int) else 2
    try:
        status: int = args.func(args)
        return status
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
