"""The Python examples of docs/guide/recipes.md run (each ```python block in a fresh namespace);
on main, tests/test_docs_examples.py runs and type-checks every page's examples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "recipes.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(encoding="utf-8"), re.S | re.M)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_guide_example_runs(code: str) -> None:
    exec(compile(code, str(GUIDE), "exec"), {"__name__": "__example__"})


def test_guide_has_examples() -> None:
    assert len(BLOCKS) >= 5
