"""Scrape a list of URLs politely: robots.txt obeyed, failed pages retried with backoff, titles
and links extracted while each page streams in (htmlstream.scrape.scrape); then each page's
first link followed and read only up to its <h1> (htmlstream.scrape.fetch + htmlstream.extract).

    python examples/scraper.py urls.txt [--retries 3] [--timeout 30]   # JSON lines out
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import htmlstream
from htmlstream.scrape import ScrapeError, fetch, scrape

FIELDS = {"title": "title", "links": "a::attr(href)*", "description":
          "meta[name=description]::attr(content)"}


def crawl(urls: list[str], *, retries: int = 3, timeout: float = 30.0,
          user_agent: str = "htmlstream-example/1.0") -> Iterator[dict[str, Any]]:
    """One record per URL, in the order pages complete (failed pages too, with their error)."""
    options = {"retries": retries, "timeout": timeout, "user_agent": user_agent,
               "robots": True, "backoff": 0.2}
    for page in scrape(urls, FIELDS, on_error="skip", concurrency=4, per_host=2, **options):
        record = page.record        # url, final_url, status, error, then the fields
        links = page.fields["links"] or []
        if page.ok and links:
            first = urljoin(page.final_url or page.url, links[0])
            try:
                with fetch(first, **options) as response:
                    # Reading stops at the first <h1>: the rest of the page is never downloaded.
                    record["first_link"] = {"url": first, **htmlstream.extract(
                        response, {"h1": "h1"}, encoding=response.encoding)}
            except ScrapeError as exc:
                record["first_link"] = {"url": first, "error": f"{exc.kind}: {exc}"}
        yield record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("urls", help="a file with one URL per line ('-': standard input)")
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    source = sys.stdin if args.urls == "-" else open(args.urls, encoding="utf-8")  # noqa: SIM115
    with source:
        urls = [line.strip() for line in source if line.strip() and not line.startswith("#")]
    failed = 0
    for record in crawl(urls, retries=args.retries, timeout=args.timeout):
        failed += record["error"] is not None
        print(json.dumps(record, default=str), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
