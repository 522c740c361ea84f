"""An async handler that looks something up per element, as Workers handlers do: each
<a data-user> gets its user's display name from an async store while the page streams (the
output before a pending lookup leaves at once; the parser waits for the lookup).

    python examples/async_lookup.py [page.html]   # the rewritten page on standard output
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import htmlstream

#: The store: in real use a key-value store or an HTTP API, awaited per element.
USERS = {"ada": "Ada Lovelace", "alan": "Alan Turing", "grace": "Grace Hopper"}

PAGE = b"""<!DOCTYPE html><title>Team</title>
<ul>
  <li><a data-user="ada" href="/u/ada">ada</a>
  <li><a data-user="alan" href="/u/alan">alan</a>
  <li><a data-user="nobody" href="/u/nobody">nobody</a>
</ul>
"""


async def display_name(user: str) -> str | None:
    """The user's display name, after a round trip to the store."""
    await asyncio.sleep(0.005)
    return USERS.get(user)


async def name_user(el: htmlstream.Element) -> None:
    """<a data-user=ID>: its text becomes the user's name (and its title too)."""
    user = el.get_attribute("data-user")
    name = await display_name(user) if user else None
    if name is not None:
        el.set_inner_content(name)
        el.set_attribute("title", name)


def make_rewriter() -> htmlstream.Rewriter:
    """The rewriter: one async element handler (so it runs on the async entry points)."""
    return htmlstream.Rewriter().on("a[data-user]", element=name_user)


async def rewrite(chunks: Iterable[bytes]) -> bytes:
    """The page, given in chunks as it would arrive, rewritten while it streams."""
    async def arriving() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return b"".join([out async for out in make_rewriter().rewrite_aiter(arriving())])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", nargs="?", type=Path, help="an HTML file (default: a sample)")
    args = parser.parse_args(argv)
    data = args.page.read_bytes() if args.page else PAGE
    sys.stdout.buffer.write(asyncio.run(rewrite([data[i:i + 4096]
                                                 for i in range(0, len(data), 4096)])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
