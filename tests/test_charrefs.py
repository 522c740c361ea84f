"""Tests for :mod:`htmlstream.charrefs` (character reference resolution).

Besides hand-picked cases for each rule of the WHATWG character reference states,
the results are compared with html5lib's tokenizer, which serves as the oracle for
both the data state and the (double-quoted) attribute value state.
"""

from __future__ import annotations

from html.entities import html5 as HTML5

import pytest
from html5lib import constants as h5constants
from html5lib._tokenizer import HTMLTokenizer
from hypothesis import given, settings
from hypothesis import strategies as st

from htmlstream.charrefs import decode_charrefs

_TOKEN_NAMES = {value: name for name, value in h5constants.tokenTypes.items()}


def html5lib_text(source: str) -> str:
    """Return the character data html5lib's tokenizer produces for *source*."""
    parts: list[str] = []
    for token in HTMLTokenizer(source):
        kind = _TOKEN_NAMES[token["type"]]
        if kind in ("Characters", "SpaceCharacters"):
            parts.append(token["data"])
        else:
            assert kind == "ParseError", token
    return "".join(parts)


def html5lib_attribute(value: str) -> str:
    """Return the value html5lib's tokenizer gives attribute ``x`` in ``<a x="value">``."""
    assert '"' not in value
    tags = [
        token
        for token in HTMLTokenizer(f'<a x="{value}">')
        if _TOKEN_NAMES[token["type"]] == "StartTag"
    ]
    assert len(tags) == 1
    return tags[0]["data"]["x"]


# --------------------------------------------------------------------------- hand-picked

# (source, result in text, result in an attribute value)
CASES: list[tuple[str, str, str]] = [
    # No references at all / lone ampersands.
    ("", "", ""),
    ("plain text", "plain text", "plain text"),
    ("&", "&", "&"),
    ("a & b && c", "a & b && c", "a & b && c"),
    ("&;", "&;", "&;"),
    ("&=", "&=", "&="),
    ("&&amp;", "&&", "&&"),
    # Terminated named references.
    ("&amp;", "&", "&"),
    ("&lt;&gt;&quot;&apos;", "<>\"'", "<>\"'"),
    ("&AElig;", "Æ", "Æ"),
    ("&CounterClockwiseContourIntegral;", "∳", "∳"),
    ("&NotEqualTilde;", "≂̸", "≂̸"),  # two code points
    ("&amp;lt;", "&lt;", "&lt;"),  # no double decoding
    ("&AMP;", "&", "&"),
    ("&Amp;", "&Amp;", "&Amp;"),  # names are case-sensitive
    # Legacy names without ';' at the end / before non-alphanumerics.
    ("&amp", "&", "&"),
    ("&lt", "<", "<"),
    ("&amp b", "& b", "& b"),
    ("&amp&lt", "&<", "&<"),
    ("&amp-x", "&-x", "&-x"),
    ("&not", "¬", "¬"),
    ("&frac12", "½", "½"),
    ("&amp#", "&#", "&#"),
    ("&ampé", "&é", "&é"),  # non-ASCII letters do not block decoding
    ("&amp٣", "&٣", "&٣"),  # nor do non-ASCII digits
    # Longest match, with and without ';'.
    ("&notin;", "∉", "∉"),
    ("&notit;", "¬it;", "&notit;"),
    ("&noti", "¬i", "&noti"),
    ("&notin", "¬in", "&notin"),
    ("&ampx", "&x", "&ampx"),
    ("&amp1", "&1", "&amp1"),
    ("&amp=", "&=", "&amp="),
    ("&lt=", "<=", "&lt="),
    ("&amp;x", "&x", "&x"),
    ("&amp;=", "&=", "&="),
    ("?a=1&ampb=2", "?a=1&b=2", "?a=1&ampb=2"),
    ("?a=1&copy=2", "?a=1©=2", "?a=1&copy=2"),
    ("&copy;=", "©=", "©="),
    ("&AEligx", "Æx", "&AEligx"),
    ("&aeligx;", "æx;", "&aeligx;"),
    # Unknown names stay as they are.
    ("&bogus;", "&bogus;", "&bogus;"),
    ("&am", "&am", "&am"),
    ("&am;", "&am;", "&am;"),
    ("&xyz", "&xyz", "&xyz"),
    ("&1;", "&1;", "&1;"),
    ("&ä;", "&ä;", "&ä;"),
    # Decimal references.
    ("&#65;", "A", "A"),
    ("&#65", "A", "A"),
    ("&#65x", "Ax", "Ax"),
    ("&#65=", "A=", "A="),
    ("&#0065;", "A", "A"),
    ("&#38;amp;", "&amp;", "&amp;"),
    ("&#", "&#", "&#"),
    ("&#;", "&#;", "&#;"),
    ("&#a", "&#a", "&#a"),
    ("&#-1;", "&#-1;", "&#-1;"),
    ("&#٣;", "&#٣;", "&#٣;"),
    ("&#128512;", "😀", "😀"),
    # Hexadecimal references.
    ("&#x41;", "A", "A"),
    ("&#X41;", "A", "A"),
    ("&#x4a;&#x4A;", "JJ", "JJ"),
    ("&#x41", "A", "A"),
    ("&#x41g", "Ag", "Ag"),
    ("&#x1F600;", "😀", "😀"),
    ("&#x", "&#x", "&#x"),
    ("&#X", "&#X", "&#X"),
    ("&#x;", "&#x;", "&#x;"),
    ("&#xg;", "&#xg;", "&#xg;"),
    ("&#xx41;", "&#xx41;", "&#xx41;"),
    # Zero, out of range and surrogates become U+FFFD.
    ("&#0;", "\ufffd", "\ufffd"),
    ("&#x0;", "\ufffd", "\ufffd"),
    ("&#000;", "\ufffd", "\ufffd"),
    ("&#x10FFFF;", "\U0010ffff", "\U0010ffff"),
    ("&#x110000;", "\ufffd", "\ufffd"),
    ("&#1114111;", "\U0010ffff", "\U0010ffff"),
    ("&#1114112;", "\ufffd", "\ufffd"),
    ("&#9999999;", "\ufffd", "\ufffd"),
    ("&#xD800;", "\ufffd", "\ufffd"),
    ("&#xDBFF;&#xDC00;", "\ufffd\ufffd", "\ufffd\ufffd"),
    ("&#57343;", "\ufffd", "\ufffd"),
    ("&#xD7FF;&#xE000;", "\ud7ff\ue000", "\ud7ff\ue000"),
    # C1 controls: windows-1252 replacements, five of them kept.
    ("&#x80;", "\u20ac", "\u20ac"),
    ("&#128;", "\u20ac", "\u20ac"),
    ("&#x82;", "\u201a", "\u201a"),
    ("&#x9F;", "\u0178", "\u0178"),
    ("&#x81;&#x8D;&#x8F;&#x90;&#x9D;", "\x81\x8d\x8f\x90\x9d", "\x81\x8d\x8f\x90\x9d"),
    # Other controls and noncharacters are kept (parse errors only).
    ("&#1;&#x0B;&#13;&#x1F;&#x7F;", "\x01\x0b\r\x1f\x7f", "\x01\x0b\r\x1f\x7f"),
    ("&#x9;&#xA;&#x20;", "\t\n ", "\t\n "),
    (
        "&#xFDD0;&#xFFFE;&#xFFFF;&#x10FFFE;",
        "\ufdd0\ufffe\uffff\U0010fffe",
        "\ufdd0\ufffe\uffff\U0010fffe",
    ),
]


@pytest.mark.parametrize(("source", "expected"), [(c[0], c[1]) for c in CASES])
def test_text(source: str, expected: str) -> None:
    assert decode_charrefs(source) == expected


@pytest.mark.parametrize(("source", "expected"), [(c[0], c[2]) for c in CASES])
def test_attribute(source: str, expected: str) -> None:
    assert decode_charrefs(source, in_attribute=True) == expected


def test_cases_agree_with_html5lib() -> None:
    """The hand-picked expectations themselves match the oracle."""
    for source, text, attr in CASES:
        assert html5lib_text(source) == text, source
        assert html5lib_attribute(source) == attr, source


@pytest.mark.parametrize("in_attribute", [False, True])
def test_fast_path_returns_same_object(in_attribute: bool) -> None:
    text = "no references here; just # and ; and x41"
    assert decode_charrefs(text, in_attribute=in_attribute) is text


def test_keyword_only() -> None:
    with pytest.raises(TypeError):
        decode_charrefs("&amp", True)  # type: ignore[misc]


def test_c1_table_is_windows_1252() -> None:
    for value in range(0x80, 0xA0):
        try:
            expected = bytes([value]).decode("cp1252")
        except UnicodeDecodeError:
            expected = chr(value)  # 0x81, 0x8D, 0x8F, 0x90, 0x9D
        assert decode_charrefs(f"&#{value};") == expected
        assert decode_charrefs(f"&#x{value:X}") == expected
        assert expected == h5constants.replacementCharacters[value]


def test_huge_numbers_are_clamped_and_fast() -> None:
    nines = "9" * 1_000_000
    assert decode_charrefs(f"&#{nines};x") == "\ufffdx"
    assert decode_charrefs(f"&#x{'f' * 1_000_000}") == "\ufffd"
    assert decode_charrefs(f"&#{'0' * 1_000_000}65;") == "A"
    assert decode_charrefs(f"&#x{'0' * 1_000_000}10FFFF") == "\U0010ffff"
    assert decode_charrefs(f"&#{'0' * 100_000}1114112;") == "\ufffd"


def test_long_text_with_many_references() -> None:
    unit = "a&amp;b&lt;c&#x41;&#66;&notit;&ampx&bogus; "
    expected = "a&b<cAB¬it;&x&bogus; "
    count = 5_000
    assert decode_charrefs(unit * count) == expected * count
    assert decode_charrefs(unit * count, in_attribute=True) == "a&b<cAB&notit;&ampx&bogus; " * count


def test_long_alphanumeric_run() -> None:
    run = "amp" + "x" * 1_000_000
    assert decode_charrefs("&" + run) == "&" + run[3:]
    assert decode_charrefs("&" + run, in_attribute=True) == "&" + run


# --------------------------------------------------------------------- entity table


def test_every_entity_at_end_of_text() -> None:
    for name, value in HTML5.items():
        assert decode_charrefs("&" + name) == value, name
        assert decode_charrefs("&" + name, in_attribute=True) == value, name
        assert decode_charrefs(f"x&{name} ") == f"x{value} ", name


@pytest.mark.parametrize("suffix", ["", "x", "=", ";"])
def test_every_entity_matches_html5lib(suffix: str) -> None:
    """All names of the table, followed by *suffix*, in one html5lib run per mode."""
    source = " ".join(f"&{name}{suffix}" for name in HTML5)
    assert decode_charrefs(source) == html5lib_text(source)
    assert decode_charrefs(source, in_attribute=True) == html5lib_attribute(source)


def test_numeric_values_match_html5lib() -> None:
    values = [
        *range(0x00, 0x200),
        *range(0xD7F0, 0xE010),
        *range(0xFDC0, 0xFE00),
        *range(0xFFF0, 0x10010),
        *(plane * 0x10000 + low for plane in range(1, 17) for low in (0xFFFD, 0xFFFE, 0xFFFF)),
        0x10FFFF,
        0x110000,
        0x7FFFFFFF,
        0xFFFFFFFFFFFF,
    ]
    source = "".join(f"&#{v};&#x{v:x}&#X{v:04X};&#0{v}|" for v in values)
    assert decode_charrefs(source) == html5lib_text(source)
    assert decode_charrefs(source, in_attribute=True) == html5lib_attribute(source)


# ------------------------------------------------------------------ property tests

FRAGMENTS = [
    *("&", "&", "&", "&#", "&#x", "#", "x", "X", ";", ";", "=", " ", "-", "?"),
    *("0", "1", "9", "00", "65", "128", "x41", "x80", "1114112", "55296", "xD800", "x110000"),
    *("a", "b", "e", "f", "F", "i", "n", "t", "z", "Z", "é", "٣"),
    *("amp", "AMP", "am", "not", "noti", "notin", "lt", "gt", "GT", "quot", "nbsp", "ETH"),
    *("AElig", "aelig", "frac12", "frac1", "copy", "Counter", "NotEqualTilde"),
    "CounterClockwiseContourIntegral",
]

# Reference-shaped pieces (opener + body + follower) make the interesting neighbours,
# such as ``&amp=`` or ``&notit;``, likely; free fragments cover everything else.
_OPENERS = ["&", "&", "&", "&#", "&#x", "&#X"]
_BODIES = [
    *("", "amp", "AMP", "am", "not", "noti", "notin", "lt", "GT", "quot", "nbsp", "ETH"),
    *("AElig", "aelig", "frac12", "frac1", "copy", "NotEqualTilde", "Counter", "b"),
    *("0", "65", "0065", "128", "129", "1114112", "55296", "41", "80", "D800", "10FFFF"),
    "CounterClockwiseContourIntegral",
]
_FOLLOWERS = ["", ";", ";", "=", "x", "Z", "1", "é", "٣", " ", "&", "#", "-", "in;", "it;"]
_reference_like = st.tuples(
    st.sampled_from(_OPENERS), st.sampled_from(_BODIES), st.sampled_from(_FOLLOWERS)
).map("".join)
charref_soup = st.lists(st.one_of(_reference_like, st.sampled_from(FRAGMENTS)), max_size=10).map(
    "".join
)


@settings(max_examples=200, deadline=None)
@given(charref_soup)
def test_text_matches_html5lib(source: str) -> None:
    assert decode_charrefs(source) == html5lib_text(source)


@settings(max_examples=200, deadline=None)
@given(charref_soup)
def test_attribute_matches_html5lib(source: str) -> None:
    assert decode_charrefs(source, in_attribute=True) == html5lib_attribute(source)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=0, max_value=0x120000),
    st.booleans(),
    st.integers(min_value=0, max_value=3),
    st.sampled_from(["", ";", "x", " ", "=", "&", "g"]),
)
def test_numeric_matches_html5lib(value: int, hexa: bool, zeros: int, suffix: str) -> None:
    digits = f"x{'0' * zeros}{value:x}" if hexa else f"{'0' * zeros}{value}"
    source = f"&#{digits}{suffix}"
    assert decode_charrefs(source) == html5lib_text(source)
    assert decode_charrefs(source, in_attribute=True) == html5lib_attribute(source)
