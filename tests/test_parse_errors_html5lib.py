"""The parse errors of the html5lib tokenizer tests: ``Tokenizer(on_error=...)`` against the
``errors`` list of every test of ``html5lib-tests/tokenizer/*.test`` (code, line and column, in
order), one pytest item per test and initial state.

The input is fed as in test_tokenizer_html5lib.py (UTF-8 with ``surrogatepass``, so that lone
surrogates of ``doubleEscaped`` tests become ED A0..BF xx, which the checker reports as
``surrogate-in-input-stream``), bare tokenizer (``feedback=False``).  A test without ``errors``
expects none.  Besides the whole input, each test is fed in many chunkings (fewer for the 4,210
tests of ``namedEntities.test``): the errors must be the same every time.  ``xmlViolation.test``
has no ``errors`` to compare and is left out, as in the token tests.

Every test passes: there is no exception to list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import htmlstream as hs
from chunking import chunkings
from test_tokenizer_html5lib import STATES, html5lib_tokenizer_dir, unescape

Expected = list[tuple[str, int, int]]


@dataclass(frozen=True)
class Case:
    file: str
    description: str
    state: str
    last_start_tag: str | None
    data: bytes
    errors: Expected


def load_cases() -> Iterator[Any]:
    """One ``pytest.param`` per test and initial state."""
    for path in sorted(html5lib_tokenizer_dir().glob("*.test")):
        with path.open(encoding="utf-8") as f:
            doc = json.load(f)
        for index, test in enumerate(doc.get("tests", [])):
            text = test["input"]
            if test.get("doubleEscaped"):
                text = unescape(text)
            data = text.encode("utf-8", "surrogatepass")
            errors = [(e["code"], e["line"], e["col"]) for e in test.get("errors", [])]
            for state_name in test.get("initialStates", ["Data state"]):
                state = STATES[state_name]
                case = Case(path.name, test["description"], state, test.get("lastStartTag"),
                            data, errors)
                ident = f"{path.stem}-{index}-{state.replace(' ', '_')}"
                yield pytest.param(case, id=ident)


CASES = list(load_cases())


def errors_of(case: Case, chunks: list[bytes]) -> Expected:
    """The errors reported while ``chunks`` are fed and the tokenizer closed."""
    got: list[hs.ParseError] = []
    tokenizer = hs.Tokenizer(initial_state=case.state, last_start_tag=case.last_start_tag,
                             feedback=False, on_error=got.append)
    for chunk in chunks:
        tokenizer.feed(chunk)
    tokenizer.close()
    return [(e.code, e.line, e.column) for e in got]


def _chunkings_for(case: Case) -> list[list[bytes]]:
    if case.file == "namedEntities.test":
        return chunkings(case.data, seed=case.description, random_splits=2, two_way=False)
    return chunkings(case.data, seed=case.description, random_splits=4, split_samples=8)


@pytest.mark.parametrize("case", CASES)
def test_html5lib_tokenizer_errors(case: Case) -> None:
    for n, chunks in enumerate(_chunkings_for(case)):
        where = "whole input" if n == 0 else f"chunking {chunks!r}"
        assert errors_of(case, chunks) == case.errors, (
            f"input {case.data!r}, state {case.state!r}, {where}"
        )


def test_case_count() -> None:
    """Guard against silently losing test files: 7,032 cases, 1,799 of them with errors."""
    assert len(CASES) >= 7032
    assert sum(1 for p in CASES if p.values[0].errors) >= 1799
