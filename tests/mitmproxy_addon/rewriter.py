"""The rewriter of the mitmproxy addon's tests, made the same way in the test process (for the
expected output) and in mitmdump (tests/mitmproxy_addon/addon.py): htmlstream only."""

from __future__ import annotations

import htmlstream
from htmlstream import recipes


def make_rewriter() -> htmlstream.Rewriter:
    """Recipes whose output is deterministic: the HTTPS upgrade (links too) and an injection."""
    rewriter = htmlstream.Rewriter()

    @rewriter.element("a[id=boom]")
    def boom(el: htmlstream.Element) -> None:
        raise RuntimeError("a handler fails")

    return rewriter.use(
        recipes.https_upgrade(hosts=["example.com"], links=True, hsts_preload=False),
        recipes.inject(body_end="<!-- via mitmproxy -->"))
