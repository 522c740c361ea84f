"""RCDATA, RAWTEXT and script data full of '<' (issue 21): the lexer crosses every '<' that
starts nothing sixteen bytes at a time (``hs_find_text_markup``: '</' and the first letter of
the appropriate end tag, '<!' in script data).  The tokens must be html5lib's, and the rewriter's
output and its text handlers' text the same, in every chunking."""

from __future__ import annotations

from typing import Any

import pytest

import htmlstream as hs
from chunking import chunkings, feed_all, feed_bytes, normalize_tokens
from oracles.html5lib_feedback import expected_tokens, normalise_nul

SCRIPTS = [
    'if (a < b && c </d) { s = "</div><span>" + "</" + "script>"; } // </p> <s </sc',
    "x = '</SCRIPT'; y = </scriptx>; z = </s>; w = </ script>; v = <\\/script>",
    "a<b<c</</</s</sc</scr</scri</scrip</script",
    "<!-- <script> </script> --> after",          # double-escaped: that </script> is text
    "<!-- a <!- b </script",
    "1 <!-- 2 --> 3 </scrIpt",
    "<" * 40 + "</" * 40 + "<!" * 20,
    "tail <",
    "tail </",
    "tail </s",
]


def documents() -> list[str]:
    docs = []
    for body in SCRIPTS:
        docs.append(f"<p>x<script>{body}</script>y</p>")
        docs.append(f"<p><script>{body}</SCRIPT >z")
    for tag in ("title", "textarea", "style", "xmp", "noembed", "iframe"):
        docs.append(f"<{tag}>a < b </{tag[0]} </{tag[:-1]} </{tag}x <!-- </{tag.upper()}>end")
    docs.append("<svg><script>a < b </s</script><p>c</p>")
    docs.append("<script>" + "if (i < n) { s += '</li>'; } " * 30 + "</script><a href=x>l</a>")
    return docs


DOCS = documents()


@pytest.mark.parametrize("doc", DOCS)
def test_tokens_are_html5libs(doc: str) -> None:
    data = doc.encode()
    expected = normalise_nul(expected_tokens(doc))
    for chunks in chunkings(data, random_splits=4, single_bytes=len(data) < 200):
        tokens = feed_all(lambda: hs.Tokenizer(feedback=True), chunks)
        assert b"".join(t.raw for t in tokens) == data
        assert normalise_nul(normalize_tokens(tokens)) == expected, chunks


@pytest.mark.parametrize("doc", DOCS)
def test_rewriter_text_and_output(doc: str) -> None:
    data = doc.encode()
    seen: list[Any] = []
    rw = hs.Rewriter()
    rw.on_document(text=lambda chunk: seen.append((chunk.text_type, chunk.text)))
    rw.on("a", element=lambda el: el.set_attribute("href", "y"))
    results = []
    for chunks in chunkings(data, random_splits=4, single_bytes=len(data) < 200):
        seen.clear()
        out = feed_bytes(rw.stream, chunks)
        merged: list[list[Any]] = []
        for text_type, text in seen:
            if merged and merged[-1][0] == text_type:
                merged[-1][1] += text
            elif text:
                merged.append([text_type, text])
        results.append((out, merged))
    assert all(r == results[0] for r in results)
    assert results[0][0] == data.replace(b"href=x", b'href="y"')
