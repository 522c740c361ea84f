"""Test-session set-up: the hypothesis profile.

Locally the property tests draw new examples on every run (that is how they keep finding
bugs). Under CI (the ``CI`` environment variable, set by the CI runner) they are derandomized:
the same examples every run, so a submission lands or fails on its own merits, not on the draw.
``HYPOTHESIS_PROFILE=ci`` or ``=explore`` chooses either explicitly.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI")
                                                                else "explore"))
