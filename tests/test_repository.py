"""Repository hygiene the packaging relies on (docs/packaging.md).

* The tests, benchmarks and fuzz scripts read their data from ``tests/data`` (a clone alone must
  pass ``make test``): none of them names the ``shared`` folder next to the repository.
* Generated C is never tracked: the sdist and the wheels are built from the ``.pyx`` sources.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ".." + "/shared"           # (spelt in two parts so that this file passes its own test)
QUOTED = '"sha' + 'red"'


def test_nothing_reads_the_shared_folder() -> None:
    offenders = []
    for folder in ("tests", "benchmarks", "fuzz"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if SHARED in text or QUOTED in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_no_generated_c_is_tracked() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "*.c", "*.so", "*.pyd"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    assert tracked == ["tests/c/test_portable.c"]
