"""Where the tests, oracles, benchmarks and fuzz scripts find their data: ``tests/data``.

``tests/data/README.md`` names the sources and their licences.  ``HTMLSTREAM_TESTDATA`` (a
folder holding ``html5lib-tests/`` and ``lol-html/``) and ``HTMLSTREAM_CORPUS`` (a folder of
``*.html``) point elsewhere, e.g. at newer upstream copies.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The repository's test data folder.
DATA = Path(__file__).resolve().parent / "data"


def conformance_data_dir() -> Path:
    """The folder holding ``html5lib-tests/`` and ``lol-html/``."""
    env = os.environ.get("HTMLSTREAM_TESTDATA")
    return Path(env) if env else DATA


def corpus_dir() -> Path:
    """The folder of real pages (``*.html``) for corpus tests and benchmarks."""
    env = os.environ.get("HTMLSTREAM_CORPUS")
    return Path(env) if env else DATA / "corpus"
