"""Test-session set-up: the hypothesis profiles.

The suite must give the same answer on every run of the same commit, on any machine (issue 38):
``make test`` (and so CI, ``.ci/run``) runs with ``HYPOTHESIS_PROFILE=ci``, whatever the
environment.  Exploring for new bugs is a separate job, ``make fuzz``, outside the landing path.

Profiles (``HYPOTHESIS_PROFILE`` chooses; without it ``ci`` under a ``CI`` variable, else ``dev``):

``ci``
    Derandomized: each property draws the same examples every run (seeded from the test's
    name and hypothesis's version, which ``requirements-dev.txt`` pins for that reason).  No
    example database (nothing a machine remembers changes the draw), no deadline and no
    ``too_slow`` health check (both measure time, which a loaded machine does not keep).  The
    examples hypothesis found and the project keeps are ``@example(...)`` lines next to their
    properties: they run in every profile.
``dev``
    Local runs (``pytest``, ``make test-fast``): new examples every run, no deadline.
``fuzz``
    ``make fuzz`` (fuzz/explore.py): random seeds, every property's ``max_examples`` times
    ``HTMLSTREAM_FUZZ_FACTOR`` (20 by default), an example database under ``build/fuzz`` (a
    failure found once is tried first the next time), and only the hypothesis tests are
    collected.  Failures print their falsifying example and a ``@reproduce_failure`` blob.

Properties set ``max_examples`` (and what they need beyond it) with ``@settings(...)`` and
inherit the rest, derandomization included, from the loaded profile: no test seeds itself.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings
from hypothesis.database import DirectoryBasedExampleDatabase

_TIMING_CHECKS = [HealthCheck.too_slow]

settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          suppress_health_check=_TIMING_CHECKS, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.register_profile(
    "fuzz", derandomize=False, deadline=None, suppress_health_check=_TIMING_CHECKS,
    print_blob=True,
    database=DirectoryBasedExampleDatabase(
        str(Path(__file__).resolve().parent.parent / "build" / "fuzz" / "hypothesis-db")),
)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
if PROFILE == "explore":     # (the former name of ``dev``)
    PROFILE = "dev"
settings.load_profile(PROFILE)

#: ``fuzz``: how many times each property's own ``max_examples``.
FUZZ_FACTOR = int(os.environ.get("HTMLSTREAM_FUZZ_FACTOR", "20"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under the ``fuzz`` profile: keep only the hypothesis tests, each with ``FUZZ_FACTOR``
    times its examples and random draws (a test that asked for ``derandomize=True`` itself
    explores too).  Hypothesis has no global multiplier; the settings a test was given are on
    its function (``_hypothesis_internal_use_settings``, which ``@given`` reads at each call)."""
    if PROFILE != "fuzz":
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        fn = getattr(item, "obj", None)
        if fn is None or not is_hypothesis_test(fn):
            dropped.append(item)
            continue
        target = getattr(fn, "__func__", fn)
        own = getattr(target, "_hypothesis_internal_use_settings", None) or settings.default
        target._hypothesis_internal_use_settings = settings(
            own, max_examples=own.max_examples * FUZZ_FACTOR, derandomize=False,
            database=settings.get_profile("fuzz").database)
        kept.append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept
