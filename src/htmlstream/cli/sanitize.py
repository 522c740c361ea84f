"""``htmlstream sanitize``: keep what a sanitizer policy allows, streaming.

``htmlstream sanitize [INPUT|-] [-o OUT] [--preset NAME] [--allow-comments] [--encoding ENC]
[--chunk-size N]`` reads INPUT (a file, or standard input: ``-`` or nothing) in chunks and writes
each output chunk as soon as it is decided (:mod:`htmlstream.recipes.sanitize`).
"""

from __future__ import annotations

import argparse
import dataclasses

from htmlstream.cli._common import (
    DEFAULT_CHUNK_SIZE,
    open_input,
    open_output,
    positive_int,
    pump,
    read_chunks_eagerly,
    rewriter_encoding,
)
from htmlstream.recipes.sanitize import Policy, Sanitize
from htmlstream.rewriter import Rewriter

__all__ = ["PRESETS", "add_sanitize_parser", "cmd_sanitize"]

#: The policies ``--preset`` names.
PRESETS = {
    "default": Policy,
    "comment": Policy.comment,
    "rich-text": Policy.rich_text,
    "text": Policy.text_only,
}


def add_sanitize_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``htmlstream sanitize``."""
    parser = subparsers.add_parser(
        "sanitize",
        help="keep what a sanitizer policy allows (ammonia's default, or a preset), streaming",
        description=(
            "Sanitize untrusted HTML as a stream: keep the elements, attributes and URL "
            "schemes\nthe policy allows, drop scripts and the rest, escape text, close every "
            "element."
        ),
    )
    parser.add_argument("input", nargs="?", default="-", metavar="INPUT",
                        help="HTML file to read, '-' for standard input (the default)")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="file to write (default: standard output)")
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default="default",
        help="the policy: 'default' (ammonia's), 'comment' (a comment box), 'rich-text' (an "
        "editor), 'text' (text only) (default: default)")
    parser.add_argument("--allow-comments", action="store_true",
                        help="keep comments (made safe)")
    parser.add_argument("--encoding", type=rewriter_encoding, default="utf-8", metavar="ENC",
                        help="document encoding, a label of the WHATWG Encoding Standard "
                        "(default: utf-8)")
    parser.add_argument("--chunk-size", type=positive_int, default=DEFAULT_CHUNK_SIZE,
                        metavar="N",
                        help=f"read and feed at most N bytes at a time "
                        f"(default: {DEFAULT_CHUNK_SIZE})")
    parser.set_defaults(func=cmd_sanitize)


def cmd_sanitize(args: argparse.Namespace) -> int:
    """Run ``htmlstream sanitize``."""
    policy = PRESETS[args.preset]()
    if args.allow_comments:
        policy = dataclasses.replace(policy, allow_comments=True)
    rewriter = Rewriter(encoding=args.encoding).use(Sanitize(policy))
    with open_input(args.input) as (name, source):
        chunks = read_chunks_eagerly(source, args.chunk_size, name)
        with open_output(args.output, args.input) as out:
            pump(rewriter.stream(), chunks, out)
    return 0
