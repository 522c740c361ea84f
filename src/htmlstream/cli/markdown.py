"""``htmlstream markdown [FILE|URL|-]... [-o OUT] [--main-content] [--jsonl] [options]``: pages
as Markdown (:func:`htmlstream.markdown`).

Each source (a file, ``-`` for standard input, an ``http(s)://`` URL, or by default the bundled
sample page) is read in chunks and converted as it streams: without ``--jsonl`` its Markdown is
written as it is known (several sources are separated by a blank line); with ``--jsonl`` each
source gives one JSON line when it ends: ``{"url", "title", "byline", "language",
"description", "markdown"}`` (``url``: the source as given).  A URL is the base of its relative
links unless ``--base-url`` says otherwise; an HTTP charset is the document's encoding unless
``--encoding`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from htmlstream.cli._common import (
    DEFAULT_CHUNK_SIZE,
    encoding_name,
    is_url,
    open_output,
    open_source,
    positive_int,
    read_chunks,
)

if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = ["add_markdown_parser", "cmd_markdown"]


def add_markdown_parser(subparsers: _SubParsers) -> None:
    """Register ``htmlstream markdown``."""
    parser = subparsers.add_parser(
        "markdown",
        help="convert pages to Markdown as they stream",
        description="Convert HTML pages to Markdown (CommonMark, GFM tables and "
        "strikethrough) as they stream; with --main-content, only the page's main content.",
    )
    parser.add_argument("inputs", nargs="*", metavar="FILE|URL",
                        help="files, - for standard input, or http(s):// URLs "
                        "(default: the bundled sample page)")
    parser.add_argument("-o", "--output", metavar="OUT", help="output file (default: stdout)")
    parser.add_argument("--main-content", action="store_true",
                        help="only the page's main content (no navigation, sidebars, footers)")
    parser.add_argument("--jsonl", action="store_true",
                        help="one JSON line per source: url, title, byline, language, "
                        "description, markdown")
    parser.add_argument("--base-url", metavar="URL", default=None,
                        help="resolve relative URLs against this (default: a URL source's own)")
    parser.add_argument("--links", choices=("inline", "reference"), default="inline",
                        help="inline links, or reference links with definitions at the end")
    parser.add_argument("--no-images", action="store_true", help="leave images out")
    parser.add_argument("--heading-style", choices=("atx", "setext"), default="atx")
    parser.add_argument("--encoding", type=encoding_name, default=None,
                        help="the documents' encoding (default: an HTTP charset, a byte order "
                        "mark or <meta charset>, else utf-8)")
    parser.add_argument("--chunk-size", type=positive_int, default=DEFAULT_CHUNK_SIZE,
                        metavar="N", help=f"bytes per read (default: {DEFAULT_CHUNK_SIZE})")
    parser.set_defaults(func=cmd_markdown)


def cmd_markdown(args: argparse.Namespace) -> int:
    """Run ``htmlstream markdown``."""
    from htmlstream.recipes.markdown import MarkdownConverter

    inputs: list[str | None] = list(args.inputs) or [None]
    first_input = inputs[0] if len(inputs) == 1 else None
    with open_output(args.output, first_input) as out:
        for n, path in enumerate(inputs):
            with open_source(path) as (name, source, charset):
                base = args.base_url or (path if is_url(path) else None)
                conv = MarkdownConverter(
                    base_url=base, links=args.links, images=not args.no_images,
                    heading_style=args.heading_style, main_content=args.main_content,
                    encoding=args.encoding or charset)
                if not args.jsonl and n:
                    out.write(b"\n")
                for chunk in read_chunks(source, args.chunk_size):
                    md = conv.feed(chunk)
                    if md and not args.jsonl:
                        out.write(md.encode("utf-8", "surrogatepass"))
                        out.flush()
                md = conv.close()
                if args.jsonl:
                    doc = conv.document
                    record = {"url": path if path is not None else name, "title": doc.title,
                              "byline": doc.byline, "language": doc.language,
                              "description": doc.description, "markdown": doc.markdown}
                    out.write(json.dumps(record, ensure_ascii=False).encode("utf-8",
                                                                           "surrogatepass")
                              + b"\n")
                else:
                    out.write(md.encode("utf-8", "surrogatepass"))
                out.flush()
    return 0
