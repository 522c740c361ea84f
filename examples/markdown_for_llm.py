"""Markdown for a language model: a page's main content and metadata from a URL, or every HTML
page of a WARC file, as JSON lines ({"url", "title", "byline", "language", "markdown"}).

    python examples/markdown_for_llm.py https://example.org/article | head
    python examples/markdown_for_llm.py crawl.warc.gz > pages.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import htmlstream
from htmlstream.warc import extract_warc


def from_url(url: str, *, timeout: float = 30.0) -> dict[str, Any]:
    """The page's main content as Markdown, converted while the response streams in."""
    request = urllib.request.Request(url, headers={"User-Agent": "htmlstream-example/1.0"})
    with urllib.request.urlopen(request, timeout=timeout) as response:   # (a binary file)
        doc = htmlstream.markdown(response, main_content=True, metadata=True,
                                  base_url=response.geturl())
    return {"url": url, "title": doc.title, "byline": doc.byline, "language": doc.language,
            "markdown": doc.markdown}


def from_warc(path: str) -> Iterator[dict[str, Any]]:
    """Every HTML response record's title and body as Markdown (a ``::markdown`` field; a
    page whose ``<body>`` has no tag of its own gives None: the selector matches tags)."""
    for row in extract_warc(path, {"title": "title", "language": "html::attr(lang)",
                                   "markdown": "body::markdown"}):
        yield {"url": row["url"], "title": row["title"], "byline": None,
               "language": row["language"], "markdown": row["markdown"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="an http(s) URL, or a WARC file (.warc, .warc.gz)")
    args = parser.parse_args(argv)
    records = ([from_url(args.source)] if args.source.startswith(("http://", "https://"))
               else from_warc(args.source))
    for record in records:
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
