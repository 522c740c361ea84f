"""``htmlstream minify [INPUT|-] [-o OUT] [options]``: minify a document as a stream.

INPUT (a file, ``-`` for standard input, an ``http(s)://`` URL, or by default the bundled
sample page) is read in chunks and each minified chunk is written as soon as the rewriter
returns it (:func:`htmlstream.recipes.minify`).  ``--stats`` prints the sizes and the speed to
standard error.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import htmlstream
from htmlstream.cli._common import (
    DEFAULT_CHUNK_SIZE,
    PROG,
    document_encoding,
    encoding_name,
    open_output,
    open_source,
    positive_int,
    pump,
    read_chunks_eagerly,
)

if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = ["add_minify_parser", "cmd_minify"]


def add_minify_parser(subparsers: _SubParsers) -> None:
    """Register ``htmlstream minify``."""
    parser = subparsers.add_parser(
        "minify",
        help="minify a document as a stream, keeping its tree",
        description="Minify HTML as a stream: whitespace no browser shows, comments, and "
        "longer-than-needed start tags go; the tree html5lib builds stays the same. "
        "Output is written as it is known.",
    )
    parser.add_argument("input", nargs="?", metavar="INPUT",
                        help="file, - for standard input, or an http(s):// URL "
                        "(default: the bundled sample page)")
    parser.add_argument("-o", "--output", metavar="OUT", help="output file (default: stdout)")
    parser.add_argument("--encoding", type=encoding_name, default=None,
                        help="the document's encoding (default: sniffed as a browser does; "
                        "utf-8 for standard input)")
    parser.add_argument("--chunk-size", type=positive_int, default=DEFAULT_CHUNK_SIZE,
                        metavar="N", help=f"bytes per read (default: {DEFAULT_CHUNK_SIZE})")
    parser.add_argument("--keep-comments", action="store_true", help="keep every comment")
    parser.add_argument("--whitespace", choices=("collapse", "remove", "keep"),
                        default="collapse",
                        help="collapse (the default): each run of white space to one space, "
                        "which renders the same whatever the page's CSS does; remove: also "
                        "next to block-level elements (assumes the page's CSS keeps them "
                        "blocks: a <div> made inline loses a space the reader saw); keep: "
                        "leave it")
    parser.add_argument("--keep-whitespace", action="store_const", const="keep",
                        dest="whitespace", help="leave whitespace as it is (--whitespace keep)")
    parser.add_argument("--keep-attributes", action="store_true",
                        help="leave start tags as they are")
    parser.add_argument("--optional-tags", action="store_true",
                        help="also leave out the end tags the HTML standard makes optional")
    parser.add_argument("--css", action="store_const", const=True, default=None,
                        help="minify <style> text, and fail without htmlstream[minify] "
                        "(default: minified where that extra is installed)")
    parser.add_argument("--keep-css", action="store_const", const=False, dest="css",
                        help="leave <style> text as it is")
    parser.add_argument("--js", action="store_const", const=True, default=None,
                        help="minify JavaScript <script> text, and fail without "
                        "htmlstream[minify] (default: minified where that extra is installed)")
    parser.add_argument("--keep-js", action="store_const", const=False, dest="js",
                        help="leave <script> text as it is")
    parser.add_argument("--stats", action="store_true",
                        help="print bytes in and out and MB/s to standard error")
    parser.set_defaults(func=cmd_minify)


def cmd_minify(args: argparse.Namespace) -> int:
    """Run ``htmlstream minify``."""
    from htmlstream.recipes.minify import Whitespace, minify

    modes: dict[str, Whitespace] = {"collapse": "collapse", "remove": "remove", "keep": False}
    whitespace = modes[args.whitespace]
    recipe = minify(comments=not args.keep_comments, whitespace=whitespace,
                    attributes=not args.keep_attributes, optional_tags=args.optional_tags,
                    css=args.css, js=args.js)
    with open_source(args.input) as (name, source, charset):
        chunks = read_chunks_eagerly(source, args.chunk_size, name)
        encoding, adjust, chunks = document_encoding(args.encoding, args.input, chunks, charset)
        rewriter = htmlstream.Rewriter(encoding=encoding, adjust_charset_on_meta_tag=adjust)
        rewriter.use(recipe)
        with open_output(args.output, args.input) as out:
            moved = pump(rewriter.stream(), chunks, out)
    if args.stats:
        rate = (f"{moved.bytes_in / moved.seconds / 1e6:.1f} MB/s" if moved.seconds > 0
                else "n/a MB/s")
        ratio = f"{moved.bytes_out / moved.bytes_in:.3f}" if moved.bytes_in else "n/a"
        print(f"{PROG}: minify {name}: {moved.bytes_in:,} bytes in, {moved.bytes_out:,} bytes out "
              f"({ratio}), {rate}", file=sys.stderr)
    return 0
