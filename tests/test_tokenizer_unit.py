"""Unit tests of ``hs.Tokenizer`` / ``hs.tokenize`` for what the html5lib tests do not cover:
``Unparsed`` tokens, CDATA text pieces, buffer limits, the input forms ``tokenize`` accepts,
offsets, duplicate attributes, NUL bytes, and decoding across chunk boundaries.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import htmlstream as hs
from chunking import chunkings, feed_all, normalize_tokens


def tokenizer(**kwargs: Any) -> Any:
    """A factory for ``feed_all``."""
    return lambda: hs.Tokenizer(**kwargs)


def all_chunkings(data: bytes, **kwargs: Any) -> list[list[Any]]:
    """Tokenize ``data`` in every chunking; check the raw bytes and that every chunking gives
    the same normalized tokens; return the tokens of the whole input."""
    results = []
    for chunks in chunkings(data):
        tokens = feed_all(tokenizer(**kwargs), chunks)
        assert b"".join(t.raw for t in tokens) == data, chunks
        results.append((chunks, tokens))
    first = normalize_tokens(results[0][1], text_types=True)
    for chunks, tokens in results[1:]:
        assert normalize_tokens(tokens, text_types=True) == first, chunks
    return results[0][1]


def texts_by_type(tokens: list[Any]) -> list[tuple[Any, str, bytes]]:
    """Adjacent Text pieces merged by text type: ``(text_type, text, raw)``."""
    out: list[tuple[Any, str, bytes]] = []
    for tok in tokens:
        if isinstance(tok, hs.tokens.Text):
            if out and out[-1][0] == tok.text_type:
                out[-1] = (tok.text_type, out[-1][1] + tok.text, out[-1][2] + tok.raw)
            else:
                out.append((tok.text_type, tok.text, tok.raw))
    return out


# --- Unparsed --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b'<div class="a', ""),
        (b"<div class='a", ""),
        (b"<div class=a", ""),
        (b"<div class", ""),
        (b"<div ", ""),
        (b"<div", ""),
        (b"<div/", ""),
        (b"</div", ""),
        (b"</div foo", ""),
        (b'hello <a href="x', "hello "),
    ],
)
def test_unfinished_tag_at_eof_is_unparsed(data: bytes, text: str) -> None:
    tokens = all_chunkings(data)
    assert not any(isinstance(t, (hs.tokens.StartTag, hs.tokens.EndTag)) for t in tokens)
    assert normalize_tokens(tokens) == ([["Character", text]] if text else [])
    assert isinstance(tokens[-1], hs.tokens.Unparsed)
    tail = data[len(text.encode()) :]
    unparsed = b"".join(t.raw for t in tokens if isinstance(t, hs.tokens.Unparsed))
    assert unparsed == tail
    assert tokens[-1].offset + len(tokens[-1].raw) == len(data)


def test_unparsed_only_at_close() -> None:
    tk = hs.Tokenizer()
    got = tk.feed(b'x<div class="a')
    assert not any(isinstance(t, hs.tokens.Unparsed) for t in got)
    got += tk.close()
    assert isinstance(got[-1], hs.tokens.Unparsed)
    assert b"".join(t.raw for t in got) == b'x<div class="a'


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"<", [["Character", "<"]]),
        (b"a</", [["Character", "a</"]]),
        (b"<!--x", [["Comment", "x"]]),
        (b"<!DOCTYPE html", [["DOCTYPE", "html", None, None, False]]),
    ],
)
def test_other_constructs_at_eof_still_produce_tokens(data: bytes, expected: list[Any]) -> None:
    tokens = all_chunkings(data, feedback=False)
    assert normalize_tokens(tokens) == expected


# --- CDATA -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"<![CDATA[foo]]>bar", [["Comment", "[CDATA[foo]]"], ["Character", "bar"]]),
        # a bogus comment ends at the first ">"
        (b"<![CDATA[x<b>]]>", [["Comment", "[CDATA[x<b"], ["Character", "]]>"]]),
        (b"<![CDATA[x", [["Comment", "[CDATA[x"]]),
    ],
)
def test_cdata_is_a_bogus_comment_in_html_content(data: bytes, expected: list[Any]) -> None:
    tokens = all_chunkings(data, initial_state="data", feedback=False)
    assert normalize_tokens(tokens) == expected


@pytest.mark.parametrize(
    ("data", "cdata", "after"),
    [
        (b"foo]]>bar", "foo", "bar"),
        (b"]]>", "", ""),
        (b"a]b]]c]]]>d", "a]b]]c]", "d"),
        (b"<b>&amp;\r\n\x00]]><i>", "<b>&amp;\n\x00", ""),
        (b"caf\xc3\xa9]]>\xc3\xa9", "café", "é"),
        (b"no end ]]", "no end ]]", ""),
    ],
)
def test_cdata_section_text_pieces(data: bytes, cdata: str, after: str) -> None:
    tokens = all_chunkings(data, initial_state="cdata section", feedback=False)
    runs = texts_by_type(tokens)
    cdata_text = "".join(t for tt, t, _ in runs if tt == hs.TextType.CDATA_SECTION)
    data_text = "".join(t for tt, t, _ in runs if tt == hs.TextType.DATA)
    assert cdata_text == cdata
    assert data_text == after
    assert {tt for tt, _, _ in runs} <= {hs.TextType.CDATA_SECTION, hs.TextType.DATA}
    if data.endswith(b"<i>"):
        assert normalize_tokens(tokens)[-1] == ["StartTag", "i", {}]


def test_cdata_section_end_marker_may_be_an_empty_piece() -> None:
    tokens = feed_all(
        tokenizer(initial_state="cdata section", feedback=False), [b"foo", b"]]", b">", b"bar"]
    )
    assert b"".join(t.raw for t in tokens) == b"foo]]>bar"
    assert all(isinstance(t, hs.tokens.Text) for t in tokens)
    assert "".join(t.text for t in tokens) == "foobar"


# --- buffer limits ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "opener", "construct"),
    [
        (b"hello ", b"<!--", "comment"),
        (b"", b"<!--", "comment"),
        (b"<p>text</p>", b"<!-- a comment that never ends ", "comment"),
    ],
)
def test_buffer_limit_exceeded(prefix: bytes, opener: bytes, construct: str) -> None:
    tk = hs.Tokenizer(max_buffer_size=64)
    tk.feed(prefix)
    with pytest.raises(hs.BufferLimitExceeded) as info:
        tk.feed(opener)
        for _ in range(100):
            tk.feed(b"abcdefg")
    err = info.value
    assert isinstance(err, hs.HtmlStreamError)
    message = str(err)
    assert "max_buffer_size" in message
    assert re.search(r"\b64\b", message)
    assert construct in message
    assert re.search(rf"\b{len(prefix)}\b", message), "the offset where the construct began"
    assert err.limit == 64
    assert err.offset == len(prefix)


def test_buffer_limit_exceeded_by_unterminated_start_tag() -> None:
    tk = hs.Tokenizer(max_buffer_size=64)
    tk.feed(b"0123456789<div")
    with pytest.raises(hs.BufferLimitExceeded) as info:
        for i in range(100):
            tk.feed(b' a%d="xyz"' % i)
    message = str(info.value)
    assert info.value.offset == 10
    assert re.search(r"\b10\b", message)
    assert re.search(r"\b64\b", message)
    assert "tag" in message


def test_buffer_limit_not_hit_by_long_text_in_small_chunks() -> None:
    data = b"abc def " * 1000
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    tokens = feed_all(tokenizer(max_buffer_size=64), chunks)
    assert b"".join(t.raw for t in tokens) == data
    assert normalize_tokens(tokens) == [["Character", data.decode()]]


def test_buffer_limit_not_hit_by_long_comment_in_one_chunk() -> None:
    data = b"<!--" + b"x" * 1000 + b"-->"
    tokens = feed_all(tokenizer(max_buffer_size=64), [data])
    assert normalize_tokens(tokens) == [["Comment", "x" * 1000]]


# --- tokenize() ------------------------------------------------------------------------------

DOC = '<!DOCTYPE html><p class="a" id=b>café &amp; <!-- c --></p>'


@pytest.mark.parametrize(
    "source",
    [
        DOC.encode(),
        DOC,
        [DOC.encode()[:5], DOC.encode()[5:20], DOC.encode()[20:]],
        [DOC[:5], DOC[5:20].encode(), DOC[20:]],
        iter([DOC[:3], DOC[3:]]),
        (c.encode() for c in DOC),
    ],
    ids=["bytes", "str", "bytes-chunks", "mixed-chunks", "iterator", "generator"],
)
def test_tokenize_accepts_bytes_str_and_iterables(source: Any) -> None:
    tokens = list(hs.tokenize(source))
    assert b"".join(t.raw for t in tokens) == DOC.encode()
    assert normalize_tokens(tokens) == [
        ["DOCTYPE", "html", None, None, True],
        ["StartTag", "p", {"class": "a", "id": "b"}],
        ["Character", "café & "],
        ["Comment", " c "],
        ["EndTag", "p"],
    ]


def test_tokenize_passes_options() -> None:
    tokens = list(hs.tokenize(b"<b>&amp;</x></b>", initial_state="rcdata", last_start_tag="b"))
    assert normalize_tokens(tokens) == [["Character", "<b>&</x>"], ["EndTag", "b"]]


def test_feed_accepts_str() -> None:
    tk = hs.Tokenizer()
    tokens = tk.feed("<p>é") + tk.close()
    assert b"".join(t.raw for t in tokens) == "<p>é".encode()
    assert normalize_tokens(tokens) == [["StartTag", "p", {}], ["Character", "é"]]


# --- offsets ---------------------------------------------------------------------------------


def test_offsets() -> None:
    data = b'<p class="a">x&amp;y</p><!--c--><br/>'
    for chunks in chunkings(data):
        tokens = feed_all(tokenizer(), chunks)
        pos = 0
        for tok in tokens:
            assert tok.offset == pos, chunks
            assert tok.end == tok.offset + len(tok.raw)
            assert data[tok.offset : tok.end] == tok.raw
            pos = tok.end
        assert pos == len(data)
        marks = [(type(t).__name__, t.offset) for t in tokens if not isinstance(t, hs.tokens.Text)]
        assert marks == [("StartTag", 0), ("EndTag", 20), ("Comment", 24), ("StartTag", 32)]


# --- tags and attributes ---------------------------------------------------------------------


def test_duplicate_attributes_first_wins_in_document_order() -> None:
    data = b"<a href=1 HREF='2' x=\"3\" href=4 y z=>"
    tokens = all_chunkings(data)
    (tag,) = tokens
    assert isinstance(tag, hs.tokens.StartTag)
    assert tag.attributes == {"href": "1", "x": "3", "y": "", "z": ""}
    assert list(tag.attributes) == ["href", "x", "y", "z"]
    assert tag.raw == data


def test_tag_fields() -> None:
    tokens = list(hs.tokenize(b'<DiV Title="&quot;A&amp;B&quot;"/></DIV x="1"/>'))
    start, end = tokens
    assert isinstance(start, hs.tokens.StartTag)
    assert start.name == "div"
    assert start.attributes == {"title": '"A&B"'}
    assert start.self_closing is True
    assert isinstance(end, hs.tokens.EndTag)
    assert end.name == "div"
    assert end.self_closing is True


def test_doctype_fields() -> None:
    (tok,) = hs.tokenize(b'<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01//EN" \'x.dtd\'>')
    assert isinstance(tok, hs.tokens.Doctype)
    assert tok.name == "html"
    assert tok.public_id == "-//W3C//DTD HTML 4.01//EN"
    assert tok.system_id == "x.dtd"
    assert tok.force_quirks is False
    (tok,) = hs.tokenize(b"<!DOCTYPE>")
    assert tok.name is None
    assert tok.public_id is None
    assert tok.system_id is None
    assert tok.force_quirks is True


# --- NUL, newlines, decoding -----------------------------------------------------------------


def test_nul_kept_in_raw() -> None:
    data = b"a\x00b<p\x00 a\x00=\x00>c\x00<!--\x00-->"
    tokens = all_chunkings(data, feedback=False)
    assert normalize_tokens(tokens) == [
        ["Character", "a\x00b"],
        ["StartTag", "p\ufffd", {"a\ufffd": "\ufffd"}],
        ["Character", "c\x00"],
        ["Comment", "\ufffd"],
    ]
    assert b"\x00" in tokens[0].raw


@pytest.mark.parametrize("state", ["rcdata", "rawtext", "script data", "plaintext"])
def test_nul_replaced_in_text_but_kept_in_raw(state: str) -> None:
    data = b"x\x00y"
    tokens = all_chunkings(data, initial_state=state, feedback=False)
    assert normalize_tokens(tokens) == [["Character", "x\ufffdy"]]


def test_newlines_normalized_in_text_not_in_raw() -> None:
    data = b"a\r\nb\rc\n\r<p title='1\r\n2'><!--\r-->"
    tokens = all_chunkings(data)
    assert normalize_tokens(tokens) == [
        ["Character", "a\nb\nc\n\n"],
        ["StartTag", "p", {"title": "1\n2"}],
        ["Comment", "\n"],
    ]


def test_utf8_split_across_chunks() -> None:
    data = "é€😀<p title='ü'>".encode()
    tokens = all_chunkings(data)
    assert normalize_tokens(tokens) == [["Character", "é€😀"], ["StartTag", "p", {"title": "ü"}]]


def test_invalid_utf8_decodes_to_replacement_characters() -> None:
    data = b"a\xffb\xc3(<p x='\xed\xa0\x80'>\xe2\x82"
    tokens = all_chunkings(data)
    assert normalize_tokens(tokens) == [
        ["Character", "a\ufffdb\ufffd("],
        ["StartTag", "p", {"x": "\ufffd\ufffd\ufffd"}],
        ["Character", "\ufffd"],
    ]


def test_text_types() -> None:
    for state, text_type in [
        ("data", hs.TextType.DATA),
        ("rcdata", hs.TextType.RCDATA),
        ("rawtext", hs.TextType.RAWTEXT),
        ("script data", hs.TextType.SCRIPT_DATA),
        ("plaintext", hs.TextType.PLAINTEXT),
        ("cdata section", hs.TextType.CDATA_SECTION),
    ]:
        tokens = list(hs.tokenize(b"abc", initial_state=state, feedback=False))
        assert tokens
        assert all(isinstance(t, hs.tokens.Text) and t.text_type == text_type for t in tokens)


# --- White space between attributes -----------------------------------------------------------


@pytest.mark.parametrize("run", [1, 7, 8, 9, 15, 16, 17, 24])
def test_indented_attributes(run: int) -> None:
    # (the lexer skips spaces eight at a time: runs around that length, mixed with other white
    # space, in every chunking)
    gap = b" " * run
    data = (b"<a" + gap + b'href="x"\n' + gap + b"b=1" + gap + b"\t" + gap + b"c" + gap + b">t"
            + b"</a" + gap + b">")
    tokens = all_chunkings(data)
    start = tokens[0]
    assert isinstance(start, hs.tokens.StartTag)
    assert start.attributes == {"href": "x", "b": "1", "c": ""}
    assert [type(t).__name__ for t in tokens] == ["StartTag", "Text", "EndTag"]
