"""Parse errors reported on request (``on_error``): the API, positions, chunk invariance, and
the rewriter (errors reported while rewriting, output unchanged).

The conformance of codes and positions is test_parse_errors_html5lib.py's (every html5lib
tokenizer test); here: what the callback gets, that nothing is looked for without one, lines
and columns across line ends and multi-byte characters, the same errors under every chunking
(errors found at chunk boundaries and at the end of input included), other encodings, and the
rewriter's streams.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import htmlstream as hs
from chunking import chunkings, feed_bytes
from datapaths import corpus_dir
from html_strategies import chunked, html_documents
from htmlstream._parse_errors import ErrorChecker, _markup

Found = list[tuple[str, int, int, int]]


def tokenizer_errors(
    data: bytes | str, chunks: list[bytes] | None = None, **kwargs: object
) -> Found:
    """The errors ``hs.Tokenizer(on_error=...)`` reports for ``data`` (fed as ``chunks``)."""
    got: list[hs.ParseError] = []
    tokenizer = hs.Tokenizer(on_error=got.append, **kwargs)  # type: ignore[arg-type]
    for chunk in chunks if chunks is not None else [data]:
        tokenizer.feed(chunk)
    tokenizer.close()
    return [(e.code, e.offset, e.line, e.column) for e in got]


def codes(data: bytes | str, **kwargs: object) -> list[str]:
    return [code for code, *_ in tokenizer_errors(data, **kwargs)]


# Inputs with errors of every kind, at the end of input and in every construct.
SAMPLES: list[bytes] = [
    b"<p>a &amp b &notit; &#0; &#x110000; &#xD800; &#xFFFE; &#x80; &#13 &bogus; &#x;</p>",
    b'<a href="x&ampy=1&amp=2" b=c"d c=e\'<=` \x00=1 A=2>t</a b=1/>',
    b"<!DOCTYPE html PUBLIC \"-//W3C\" 'x' junk><!DOCTYPEhtml><!DOCTYPE><!doctype a SYSTEM>",
    b"<!-- a <!-- b --!><!--><!---><!x><?php ?><![CDATA[x]]></>< p></1>",
    b"line1\r\nline2\rline3\n\x01\x7f\xc2\x85 \xef\xb7\x90 \xf0\x9f\xbf\xbe \xed\xa0\x80<",
    b"<svg><![CDATA[a\x00]]></svg><script><!--<script>\x00</script>-->x</script><title>&#0;",
    b"<textarea>&amp\x00</textarea><plaintext>\x00<&#0;",
    b"text &#x1F600 \xf0\x9f\x98\x80&lt <a b='&#0;'",
    b"<a b='1'c=2/d>\n<!--\r\n-x",
    b"<!DOCTYPE html PUBLIC 'a'\"b\" x",
    b"<script><!--",
    b"<svg><![CDATA[abc]",
    b"</",
    b"&#1234567890123456789012345678901234567890;&" + b"a" * 40 + b";&#" + b"9" * 1500,
]


def test_quiet_by_default() -> None:
    """Without a callback nothing is looked for: no checker is attached to the lexer."""
    assert hs.Tokenizer()._lexer.errors is None
    stream = hs.Rewriter().stream()
    stream.feed(b"<p>x")
    assert stream._lexer is not None and stream._lexer.errors is None
    stream = hs.Rewriter().stream(on_error=print)
    stream.feed(b"<p>x")
    assert stream._lexer is not None and stream._lexer.errors is not None


def test_parse_error_object() -> None:
    got: list[hs.ParseError] = []
    tokens = list(hs.tokenize("<p>a &notit; b</p >\n<a x x>", on_error=got.append))
    assert tokens[0].raw == b"<p>"
    assert got == [
        hs.ParseError("missing-semicolon-after-character-reference", 9, 1, 10),
        hs.ParseError("duplicate-attribute", 26, 2, 7),
    ]
    error = got[0]
    assert str(error) == "missing-semicolon-after-character-reference at line 1, column 10 (byte 9)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        error.code = "x"  # type: ignore[misc]
    assert hash(error) == hash(hs.ParseError(*dataclasses.astuple(error)))


def test_codes_of_each_construct() -> None:
    assert codes(b"<") == ["eof-before-tag-name"]
    assert codes(b"<a") == ["eof-in-tag"]
    assert codes(b"<a b='1'c>") == ["missing-whitespace-between-attributes"]
    assert codes(b"<a\tb\nB>") == ["duplicate-attribute"]
    assert codes(b"<a b=1\rc='2' \x0cB=\"3\">") == ["duplicate-attribute"]
    assert codes(b"</a b>") == ["end-tag-with-attributes"]
    assert codes(b"</a/>") == ["end-tag-with-trailing-solidus"]
    assert codes(b"<!-->") == ["abrupt-closing-of-empty-comment"]
    assert codes(b"<!--a") == ["eof-in-comment"]
    assert codes(b"<![CDATA[x]]>") == ["cdata-in-html-content"]
    assert codes(b"<svg><![CDATA[x]]></svg>") == []      # (feedback: allowed in foreign content)
    assert codes(b"<svg><![CDATA[x") == ["eof-in-cdata"]
    assert codes(b"<!DOCTYPE>") == ["missing-doctype-name"]
    assert codes(b"<!DOCTYPE html") == ["eof-in-doctype"]
    assert codes(b"<script><!--<script>") == ["eof-in-script-html-comment-like-text"]
    assert codes(b"<script><!--</script>") == []
    assert codes(b"<title>&#0;\x00</title>") == ["null-character-reference",
                                                "unexpected-null-character"]
    assert codes(b"<style>&#0;\x00</style>") == ["unexpected-null-character"]
    assert codes(b"<p>ok &amp; &#65; &#x41;</p>") == []


def test_lines_and_columns() -> None:
    """Lines end at CR, LF and CRLF; columns count characters (UTF-16 code units, as
    html5lib-tests do), from 1; offsets are bytes."""
    data = "a\r\nb\rc\n\u00e9\u20ac\U0001F600\x00".encode()
    assert tokenizer_errors(data) == [("unexpected-null-character", len(data) - 1, 4, 5)]
    # the CR of a CRLF cut from its LF by a chunk boundary still ends one line
    for chunks in chunkings(data):
        assert tokenizer_errors(data, chunks) == [
            ("unexpected-null-character", len(data) - 1, 4, 5)
        ]


def test_byte_order_mark() -> None:
    """A UTF-8 byte order mark is no character of the document: columns start after it (the
    offsets are bytes, and count it)."""
    data = b"\xef\xbb\xbf<a b b>"
    for chunks in chunkings(data):
        assert tokenizer_errors(data, chunks) == [("duplicate-attribute", 9, 1, 7)]
    got: list[hs.ParseError] = []
    assert hs.Rewriter(on_error=got.append).rewrite(data) == data
    assert got == [hs.ParseError("duplicate-attribute", 9, 1, 7)]


def test_input_stream_errors() -> None:
    data = b"\x01 \x7f \xc2\x80 \xef\xb7\x90 \xef\xbf\xbf \xf4\x8f\xbf\xbe \xed\xa0\x80 \x0c\r\n\t"
    assert [(c, col) for c, _, _, col in tokenizer_errors(data)] == [
        ("control-character-in-input-stream", 1),
        ("control-character-in-input-stream", 3),
        ("control-character-in-input-stream", 5),
        ("noncharacter-in-input-stream", 7),
        ("noncharacter-in-input-stream", 9),
        ("noncharacter-in-input-stream", 11),
        ("surrogate-in-input-stream", 14),
    ]


def test_other_encodings() -> None:
    """In a single-byte encoding a column is a byte; only the ASCII controls are input-stream
    errors (0x80 is the euro sign in windows-1252)."""
    data = b"\xe9\x80\x01<a \x00>"
    assert tokenizer_errors(data, encoding="windows-1252") == [
        ("control-character-in-input-stream", 2, 1, 3),
        ("unexpected-null-character", 6, 1, 7),
    ]


@pytest.mark.parametrize("data", SAMPLES, ids=range(len(SAMPLES)))
@pytest.mark.parametrize("feedback", [True, False])
def test_same_errors_under_every_chunking(data: bytes, feedback: bool) -> None:
    whole = tokenizer_errors(data, feedback=feedback)
    assert whole
    for chunks in chunkings(data, seed=repr(data)):
        assert tokenizer_errors(data, chunks, feedback=feedback) == whole, chunks


STATES = ["data", "rcdata", "rawtext", "script data", "plaintext", "cdata section"]


@settings(max_examples=80, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=html_documents(25), state=st.sampled_from(STATES), feedback=st.booleans(),
       chunks=st.data())
def test_random_documents_any_chunking(data: bytes, state: str, feedback: bool,
                                       chunks: st.DataObject) -> None:
    """Generated documents: the same errors however they are cut, in offset order, each at a
    position inside the input (or at its end)."""
    kwargs = {"initial_state": state, "feedback": feedback, "last_start_tag": "title"}
    whole = tokenizer_errors(data, **kwargs)
    assert tokenizer_errors(data, chunks.draw(chunked(data)), **kwargs) == whole
    offsets = [offset for _, offset, _, _ in whole]
    assert offsets == sorted(offsets)
    assert all(0 <= offset <= len(data) for offset in offsets)


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=html_documents(25), chunks=st.data())
def test_random_documents_rewriter(data: bytes, chunks: st.DataObject) -> None:
    """Generated documents: a rewriter reports what the tokenizer does, output unchanged."""
    cut = chunks.draw(chunked(data))
    for rw in _rewriters():
        out, errors = rewrite_with_errors(rw, cut)
        assert out == rw.rewrite(data)
        assert errors == tokenizer_errors(data)


def test_long_references_across_chunks() -> None:
    """References longer than the lexer holds back at a chunk end are still decided whole."""
    data = b"&#" + b"0" * 3000 + b"65x &" + b"b" * 3000 + b"; <"
    whole = tokenizer_errors(data)
    assert [c for c, *_ in whole] == ["missing-semicolon-after-character-reference",
                                      "unknown-named-character-reference",
                                      "eof-before-tag-name"]
    for size in (1, 7, 1000, 2049):
        chunks = [data[i:i + size] for i in range(0, len(data), size)]
        assert tokenizer_errors(data, chunks) == whole


def test_callback_exception_propagates() -> None:
    def fail(error: hs.ParseError) -> None:
        raise RuntimeError(error.code)

    tokenizer = hs.Tokenizer(on_error=fail)
    with pytest.raises(RuntimeError, match="unexpected-null-character"):
        tokenizer.feed(b"<p>\x00</p>")
    stream = hs.Rewriter(on_error=fail).stream()
    stream.feed(b"<p>")
    with pytest.raises(RuntimeError, match="eof-in-tag"):
        stream.feed(b"<a")
        stream.close()


# ---------------------------------------------------------------------- the rewriter

def _rewriters() -> list[hs.Rewriter]:
    """A rewriter with no rules (the tag scanner), one reading attributes, one reading text."""
    plain = hs.Rewriter()
    links = hs.Rewriter()
    links.on("a[href]", element=lambda el: el.set_attribute("href", "x"))
    text = hs.Rewriter()
    text.on_document(text=lambda chunk: chunk.text)
    return [plain, links, text]


def rewrite_with_errors(rw: hs.Rewriter, chunks: list[bytes]) -> tuple[bytes, Found]:
    got: list[hs.ParseError] = []
    out = feed_bytes(lambda: rw.stream(on_error=got.append), chunks)
    return out, [(e.code, e.offset, e.line, e.column) for e in got]


@pytest.mark.parametrize("data", SAMPLES, ids=range(len(SAMPLES)))
def test_rewriter_reports_the_tokenizers_errors(data: bytes) -> None:
    """A rewriter's stream reports what the tokenizer (with its tree-builder feedback) does,
    under every chunking, and its output is the same as without a callback."""
    expected = tokenizer_errors(data)
    for rw in _rewriters():
        plain = rw.rewrite(data)
        for chunks in chunkings(data, seed=repr(data), random_splits=3, split_samples=6):
            out, errors = rewrite_with_errors(rw, chunks)
            assert out == plain
            assert errors == expected, chunks


def test_errors_before_a_limit() -> None:
    """A stream that passes the rest through at a limit reports the errors found before it,
    and none in what it passes through unread."""
    got: list[hs.ParseError] = []
    rw = hs.Rewriter(on_limit="passthrough", max_buffer_size=64, on_error=got.append)
    data = b"<p>&#0;</p><a title='" + b"x" * 200 + b"'>&#0;</a>"
    stream = rw.stream()
    out = b"".join(stream.feed(data[i:i + 16]) for i in range(0, len(data), 16)) + stream.close()
    assert out == data
    assert stream.passthrough_reason is not None
    assert got == [hs.ParseError("null-character-reference", 7, 1, 8)]


def test_rewriter_setting_and_stream_override() -> None:
    mine: list[hs.ParseError] = []
    theirs: list[hs.ParseError] = []
    rw = hs.Rewriter(on_error=theirs.append)
    assert rw.on_error is not None
    assert rw.rewrite("<p>&#0;</p>") == "<p>&#0;</p>"
    assert [e.code for e in theirs] == ["null-character-reference"]
    stream = rw.stream(on_error=mine.append)
    stream.feed(b"<a b b>")
    stream.close()
    assert [e.code for e in mine] == ["duplicate-attribute"]
    assert len(theirs) == 1
    rw.on_error = None
    rw.rewrite("<a b b>")
    assert len(theirs) == 1


def corpus_files() -> list[object]:
    return sorted(corpus_dir().glob("*.html"))


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_corpus(path: object) -> None:
    """Real pages: the rewriter and the tokenizer report the same errors, whatever the chunk
    size, and the rewritten output is unchanged."""
    data = path.read_bytes()  # type: ignore[attr-defined]
    whole = tokenizer_errors(data)
    for size in (1000, 65536):
        chunks = [data[i:i + size] for i in range(0, len(data), size)]
        assert tokenizer_errors(data, chunks) == whole
    rw = _rewriters()[1]
    out, errors = rewrite_with_errors(rw, [data[i:i + 4096] for i in range(0, len(data), 4096)])
    assert out == rw.rewrite(data)
    assert errors == whole


# ---------------------------------------------------------------------- the checker's reading

class _BoundaryCheck(ErrorChecker):
    """An ErrorChecker that also checks that its reading of each markup token ends where the
    lexer's token ends: at its last byte, or (for the token the input ends inside) at the end
    of the input."""

    def __init__(self) -> None:
        super().__init__(lambda error: None)
        self.unfinished: list[int] = []

    def segment(self, kind: int, raw: bytes, start: int, arg: int) -> None:
        if kind == 1:
            end = _markup(raw, start, [])
            assert end in (len(raw) - 1, len(raw)), (raw, end)
            if end == len(raw):
                self.unfinished.append(start + len(raw))
        super().segment(kind, raw, start, arg)

    def end(self, offset: int, what: int) -> None:
        assert all(at == offset for at in self.unfinished), (self.unfinished, offset)
        super().end(offset, what)


def boundaries_agree(data: bytes, **kwargs: Any) -> None:
    tokenizer = hs.Tokenizer(**kwargs)
    checker = _BoundaryCheck()
    tokenizer._lexer.errors = checker
    tokenizer.feed(data)
    tokenizer.close()


def test_markup_read_as_the_lexer_reads_it() -> None:
    """Every html5lib tokenizer input (in each of its initial states) and the samples: the
    checker's states end each markup token where the lexer does."""
    from test_parse_errors_html5lib import CASES

    for param in CASES:
        case = param.values[0]
        boundaries_agree(case.data, initial_state=case.state, feedback=False,
                         last_start_tag=case.last_start_tag)
    for data in SAMPLES:
        boundaries_agree(data)
        boundaries_agree(data, feedback=False)


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=html_documents(30), state=st.sampled_from(STATES), feedback=st.booleans())
def test_markup_read_as_the_lexer_reads_it_generated(data: bytes, state: str,
                                                     feedback: bool) -> None:
    boundaries_agree(data, initial_state=state, feedback=feedback, last_start_tag="title")


# ---------------------------------------------------------------------- the command line

def test_cli_tokens_errors(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """``htmlstream tokens --errors``: one line per error, INPUT:LINE:COLUMN: CODE; exit
    status 1 when there is any, 0 when there is none."""
    from htmlstream.cli import main

    path = tmp_path / "page.html"
    path.write_bytes(b"<p class=a class=b>x\n<img src=x alt=''/ >&#0;</p><!--")
    assert main(["tokens", str(path), "--errors", "--chunk-size", "3"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path}:1:17: duplicate-attribute",
        f"{path}:2:19: unexpected-solidus-in-tag",
        f"{path}:2:25: null-character-reference",
        f"{path}:2:33: eof-in-comment",
    ]
    path.write_bytes(b"<!DOCTYPE html><p>fine</p>")
    assert main(["tokens", str(path), "--errors"]) == 0
    assert capsys.readouterr().out == ""
