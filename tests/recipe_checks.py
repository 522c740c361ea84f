"""Shared checks of the recipe tests (tests/test_recipes_*.py): a document through a rewriter in
every chunking (tests/chunking.py), with a fresh context each time; the output and what the
recipes leave in the context must not depend on the chunking."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from chunking import chunkings, feed_bytes
from datapaths import corpus_dir
from htmlstream import Rewriter


def corpus() -> list[Path]:
    """The corpus (``tests/data/corpus/*.html``, or ``$HTMLSTREAM_CORPUS``), as the
    differential tests read it."""
    return sorted(corpus_dir().glob("*.html"))


def comparable(context: dict[str, Any]) -> dict[str, Any]:
    """What a context holds, in a form that compares by value."""
    out: dict[str, Any] = {}
    for key, value in context.items():
        if hasattr(value, "upgraded"):
            out[key] = (dict(value.upgraded), dict(value.left))
        elif isinstance(value, set):
            out[key] = sorted(value)
        else:
            out[key] = value
    return out


def rewrite_all(rewriter: Rewriter, data: bytes | str,
                context: Callable[[], dict[str, Any]] = dict, *,
                single_bytes: bool = True, random_splits: int = 8
                ) -> tuple[bytes, dict[str, Any]]:
    """``data`` through ``rewriter`` whole and in every chunking; asserts that the output and
    the final context are the same each time; returns them."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    ctx = context()
    expected = feed_bytes(lambda: rewriter.stream(context=ctx), [raw])
    expected_ctx = comparable(ctx)
    for chunks in chunkings(raw, single_bytes=single_bytes, random_splits=random_splits):
        ctx2 = context()
        got = feed_bytes(lambda c=ctx2: rewriter.stream(context=c), chunks)  # type: ignore[misc]
        # (a short message: pytest's diff of long outputs takes minutes)
        assert got == expected, f"chunking {[len(c) for c in chunks][:40]} differs"
        assert comparable(ctx2) == expected_ctx, chunks
    return expected, ctx
