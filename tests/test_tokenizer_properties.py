"""Property tests of the tokenizer over random HTML-ish byte strings and random chunkings.

(a) the ``.raw`` bytes of the tokens reproduce the input exactly;
(b) the token stream (text pieces merged per text type, every other token with its raw bytes
    and offset) is the same for every chunking, in every initial state;
(c) offsets are contiguous: ``tok.offset + len(tok.raw) == next.offset``, from 0 to the end,
    and ``last_in_text_node`` marks exactly the last piece of every text node.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import htmlstream as hs
from chunking import feed_all, normalize_tokens
from html_strategies import chunked, html_documents

STATES = ["data", "rcdata", "rawtext", "script data", "plaintext", "cdata section"]
LAST_START_TAGS = [None, "script", "title", "textarea", "style", "xmp", "plaintext"]
# (initial state, feedback) combinations under test
MODES = [(state, False) for state in STATES] + [("data", True)]

COMMON = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def structure(tokens: list[Any]) -> list[tuple[Any, ...]]:
    """A chunking-independent view of a token stream: the pieces of each text node (up to the
    one with ``last_in_text_node``) merged, with their text types, raw bytes and offset; every
    other token with its fields, raw bytes and offset; adjacent Unparsed tokens merged."""
    out: list[tuple[Any, ...]] = []
    for tok in tokens:
        if isinstance(tok, hs.tokens.Text):
            if out and out[-1][0] == "Text" and not out[-1][5]:
                _, types, text, raw, offset, _ = out[-1]
                if tok.text_type not in types:
                    types = (*types, tok.text_type)
                out[-1] = (
                    "Text", types, text + tok.text, raw + tok.raw, offset, tok.last_in_text_node
                )
            else:
                out.append(
                    ("Text", (tok.text_type,), tok.text, tok.raw, tok.offset, tok.last_in_text_node)
                )
        elif isinstance(tok, hs.tokens.Unparsed):
            if out and out[-1][0] == "Unparsed":
                out[-1] = ("Unparsed", out[-1][1] + tok.raw, out[-1][2])
            else:
                out.append(("Unparsed", tok.raw, tok.offset))
        else:
            (fields,) = normalize_tokens([tok])
            if isinstance(tok, hs.tokens.EndTag):
                fields.append(tok.self_closing)
            elif isinstance(tok, hs.tokens.StartTag):
                fields.append(list(tok.attributes))  # document order of attribute names
            out.append((*map(repr, fields), tok.raw, tok.offset))
    return out


def check_text_nodes(tokens: list[Any]) -> None:
    """The last piece of every text node, and only it, has ``last_in_text_node``.

    A text node ends at any other token, at a change of text type and at the end of the input;
    two text nodes of the same type can only touch in CDATA (``<![CDATA[a]]><![CDATA[b]]>``).
    """
    for i, tok in enumerate(tokens):
        if not isinstance(tok, hs.tokens.Text):
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        same = isinstance(nxt, hs.tokens.Text) and nxt.text_type == tok.text_type
        if not same:
            assert tok.last_in_text_node, f"{tok!r} ends a text node, followed by {nxt!r}"
        elif tok.last_in_text_node:
            assert tok.text_type == hs.TextType.CDATA_SECTION, f"text node split at {nxt!r}"
        if not tok.raw:
            assert tok.last_in_text_node, f"empty piece not last in its text node: {tok!r}"


def factory(state: str, feedback: bool, last_start_tag: str | None) -> Any:
    return lambda: hs.Tokenizer(
        initial_state=state, feedback=feedback, last_start_tag=last_start_tag
    )


def check_offsets(tokens: list[Any], data: bytes) -> None:
    pos = 0
    for tok in tokens:
        # only the (empty) last piece of a text node may have no bytes
        assert tok.raw or isinstance(tok, hs.tokens.Text), f"token with empty raw bytes: {tok!r}"
        assert tok.offset == pos, f"{tok!r} at {tok.offset}, expected {pos}"
        assert tok.end == tok.offset + len(tok.raw)
        pos = tok.end
    assert pos == len(data)


@pytest.mark.parametrize(("state", "feedback"), MODES)
@COMMON
@given(data=html_documents(25), last_start_tag=st.sampled_from(LAST_START_TAGS), chunks=st.data())
def test_raw_roundtrip(
    state: str, feedback: bool, data: bytes, last_start_tag: str | None, chunks: st.DataObject
) -> None:
    make = factory(state, feedback, last_start_tag)
    for cut in [[data], *(chunks.draw(chunked(data)) for _ in range(3))]:
        tokens = feed_all(make, cut)
        assert b"".join(t.raw for t in tokens) == data, cut


@pytest.mark.parametrize(("state", "feedback"), MODES)
@settings(COMMON, max_examples=100)
@given(data=html_documents(25), last_start_tag=st.sampled_from(LAST_START_TAGS), chunks=st.data())
def test_same_tokens_for_every_chunking(
    state: str, feedback: bool, data: bytes, last_start_tag: str | None, chunks: st.DataObject
) -> None:
    make = factory(state, feedback, last_start_tag)
    expected = structure(feed_all(make, [data]))
    single = [data[i : i + 1] for i in range(len(data))]
    assert structure(feed_all(make, single)) == expected, "single bytes"
    for _ in range(3):
        cut = chunks.draw(chunked(data))
        assert structure(feed_all(make, cut)) == expected, cut


@pytest.mark.parametrize(("state", "feedback"), MODES)
@COMMON
@given(data=html_documents(25), last_start_tag=st.sampled_from(LAST_START_TAGS), chunks=st.data())
def test_offsets_are_contiguous(
    state: str, feedback: bool, data: bytes, last_start_tag: str | None, chunks: st.DataObject
) -> None:
    make = factory(state, feedback, last_start_tag)
    for cut in [[data], [data[i : i + 1] for i in range(len(data))], chunks.draw(chunked(data))]:
        tokens = feed_all(make, cut)
        check_offsets(tokens, data)
        check_text_nodes(tokens)


@COMMON
@given(data=html_documents(25), chunks=st.data())
def test_tokenize_matches_tokenizer(data: bytes, chunks: st.DataObject) -> None:
    cut = chunks.draw(chunked(data))
    assert structure(list(hs.tokenize(cut))) == structure(feed_all(hs.Tokenizer, [data]))
