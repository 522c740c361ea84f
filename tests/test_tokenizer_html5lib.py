"""The html5lib tokenizer conformance tests, run against ``hs.Tokenizer(feedback=False)``.

Every test of ``html5lib-tests/tokenizer/*.test`` is one pytest item per initial state.  The
data is read from ``tests/data`` (see its README.md), or from the directory named by
the environment variable ``HTMLSTREAM_TESTDATA`` (the directory that holds ``html5lib-tests``).

How the tests are run:

* The input string is encoded to UTF-8 (``surrogatepass``, so that lone surrogates become the
  invalid byte sequences ED A0..BF xx) and fed as bytes.  Our tokenizer decodes such bytes to
  U+FFFD, one per maximal invalid subpart, as the WHATWG UTF-8 decoder does; so every expected
  string is put through the same encode/decode round trip before comparing.  For a test with
  lone surrogates the expected ``"\\uD800"`` therefore becomes ``"\\uFFFD\\uFFFD\\uFFFD"``.
* ``doubleEscaped`` tests have ``\\uXXXX`` unescaped in input and output (surrogate pairs are
  combined, lone surrogates kept).
* Our tokens are converted to the html5lib format (see ``chunking.normalize_tokens``): adjacent
  Text pieces are merged, ``Unparsed`` tokens produce nothing.
* Parse errors (the ``errors`` lists) are NOT checked: the tokenizer does not report them.
* Besides the whole input, each test is fed in many chunkings (``chunking.chunkings``; fewer for
  the 4,210 tests of ``namedEntities.test``) and must give the same tokens every time, and the
  ``.raw`` bytes of the tokens must concatenate to the input exactly.
* ``xmlViolation.test`` expects the "coercing an HTML DOM into an infoset" tweaks, which are
  not the tokenizer's business: those tests are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import htmlstream as hs
from chunking import chunkings, feed_all, normalize_tokens
from datapaths import conformance_data_dir

STATES = {
    "Data state": "data",
    "PLAINTEXT state": "plaintext",
    "RCDATA state": "rcdata",
    "RAWTEXT state": "rawtext",
    "Script data state": "script data",
    "CDATA section state": "cdata section",
}


def html5lib_tokenizer_dir() -> Path:
    """The html5lib tokenizer test directory."""
    root = conformance_data_dir()
    return root / "html5lib-tests" / "tokenizer"


_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")


def unescape(s: str) -> str:
    """Undo the extra ``\\uXXXX`` escaping of ``doubleEscaped`` tests (pairs combined)."""
    s = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), s)
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def as_decoded(s: str) -> str:
    """What a string looks like after a trip through UTF-8 bytes and the WHATWG decoder:
    lone surrogates become U+FFFD (three each); everything else is unchanged."""
    return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _map_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    if isinstance(value, dict):
        return {fn(k): _map_strings(v, fn) for k, v in value.items()}
    return value


def merge_characters(tokens: list[list[Any]]) -> list[list[Any]]:
    """Coalesce adjacent Character tokens (the test files mostly do it already)."""
    out: list[list[Any]] = []
    for tok in tokens:
        if tok[0] == "Character" and out and out[-1][0] == "Character":
            out[-1] = ["Character", out[-1][1] + tok[1]]
        else:
            out.append(list(tok))
    return out


def _has_surrogate(s: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


@dataclass(frozen=True)
class Case:
    file: str
    index: int
    description: str
    state: str
    last_start_tag: str | None
    data: bytes
    expected: list[list[Any]]
    lone_surrogates: bool


def _short(description: str, limit: int = 40) -> str:
    s = re.sub(r"\s+", " ", description.encode("ascii", "backslashreplace").decode()).strip()
    return s if len(s) <= limit else s[: limit - 1] + "~"


def load_cases() -> Iterator[Any]:
    """One ``pytest.param`` per test and initial state."""
    directory = html5lib_tokenizer_dir()
    for path in sorted(directory.glob("*.test")):
        with path.open(encoding="utf-8") as f:
            doc = json.load(f)
        violation = "xmlViolationTests" in doc
        tests = doc.get("tests") or doc.get("xmlViolationTests") or []
        for index, test in enumerate(tests):
            text = test["input"]
            output = test["output"]
            if test.get("doubleEscaped"):
                text = unescape(text)
                output = _map_strings(output, unescape)
            lone = _has_surrogate(text)
            expected = merge_characters(_map_strings(output, as_decoded))
            data = text.encode("utf-8", "surrogatepass")
            for state_name in test.get("initialStates", ["Data state"]):
                state = STATES[state_name]
                case = Case(
                    path.name, index, test["description"], state, test.get("lastStartTag"), data,
                    expected, lone,
                )
                marks = []
                if violation:
                    marks.append(pytest.mark.skip(
                        reason="xmlViolation.test expects infoset coercion, not tokenizer output"
                    ))
                short = _short(test["description"])
                ident = f"{path.stem}-{index}-{state.replace(' ', '_')}-{short}"
                yield pytest.param(case, id=ident, marks=marks)


CASES = list(load_cases())


def _chunkings_for(case: Case) -> list[list[bytes]]:
    if case.file == "namedEntities.test":
        # 4,210 tests: whole input, single bytes and two random chunkings are enough.
        return chunkings(case.data, seed=case.description, random_splits=2, two_way=False)
    return chunkings(case.data, seed=case.description)


@pytest.mark.parametrize("case", CASES)
def test_html5lib_tokenizer(case: Case) -> None:
    def factory() -> hs.Tokenizer:
        return hs.Tokenizer(
            initial_state=case.state, last_start_tag=case.last_start_tag, feedback=False
        )

    for n, chunks in enumerate(_chunkings_for(case)):
        tokens = feed_all(factory, chunks)
        where = "whole input" if n == 0 else f"chunking {chunks!r}"
        raw = b"".join(t.raw for t in tokens)
        assert raw == case.data, f"raw bytes differ ({where}): {tokens!r}"
        got = normalize_tokens(tokens)
        if n == 0:
            assert got == case.expected, f"input {case.data!r}, state {case.state!r}"
        else:
            assert got == case.expected, f"input {case.data!r}, state {case.state!r}, {where}"


def test_case_count() -> None:
    """Guard against silently losing test files: the suite has about 7,000 cases."""
    assert len(CASES) > 6500
