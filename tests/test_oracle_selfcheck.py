"""Fast checks of the html5lib tree-builder-feedback oracle (tests/oracles)."""

from __future__ import annotations

from pathlib import Path

import pytest

from datapaths import conformance_data_dir
from oracles.html5lib_feedback import (
    TreeTest,
    all_tree_construction_tests,
    expected_tokens,
    html5lib_tree_agrees,
    normalise_nul,
    read_tree_construction_tests,
)

_TREE_DIR = conformance_data_dir() / "html5lib-tests" / "tree-construction"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        (
            "<script>a<b</script>",
            [["StartTag", "script", {}], ["Character", "a<b"], ["EndTag", "script"]],
        ),
        (
            "<textarea><p></textarea>",
            [["StartTag", "textarea", {}], ["Character", "<p>"], ["EndTag", "textarea"]],
        ),
        (
            "<svg><![CDATA[x]]></svg>",
            [["StartTag", "svg", {}], ["Character", "x"], ["EndTag", "svg"]],
        ),
        (
            "<div><![CDATA[x]]></div>",
            [["StartTag", "div", {}], ["Comment", "[CDATA[x]]"], ["EndTag", "div"]],
        ),
        (
            "<style>&amp;<b></style>",
            [["StartTag", "style", {}], ["Character", "&amp;<b>"], ["EndTag", "style"]],
        ),
        (
            "<title>&amp;<b></title>",
            [["StartTag", "title", {}], ["Character", "&<b>"], ["EndTag", "title"]],
        ),
        (
            "<plaintext>a</plaintext><b>",
            [["StartTag", "plaintext", {}], ["Character", "a</plaintext><b>"]],
        ),
        (
            "<!DOCTYPE><br/>",
            [["DOCTYPE", None, None, None, False], ["StartTag", "br", {}, True]],
        ),
    ],
)
def test_state_switching(html: str, expected: list[list[object]]) -> None:
    assert expected_tokens(html) == expected


def test_noscript_follows_scripting_flag() -> None:
    html = "<noscript><p>x</noscript>"
    assert expected_tokens(html, scripting=True) == [
        ["StartTag", "noscript", {}],
        ["Character", "<p>x"],
        ["EndTag", "noscript"],
    ]
    assert expected_tokens(html, scripting=False) == [
        ["StartTag", "noscript", {}],
        ["StartTag", "p", {}],
        ["Character", "x"],
        ["EndTag", "noscript"],
    ]


def test_names_are_recorded_as_tokenized() -> None:
    # The tree builder renames these (viewBox, xlink href, foreignObject) in
    # place; the recording must keep the tokenizer's lower-cased names.
    tokens = expected_tokens("<svg viewBox=1 XLINK:HREF=2 a=1 A=2><foreignObject/>")
    assert tokens == [
        ["StartTag", "svg", {"viewbox": "1", "xlink:href": "2", "a": "1"}],
        ["StartTag", "foreignobject", {}, True],
    ]


def test_newlines_and_nul_quirks() -> None:
    assert expected_tokens("a\r\nb\rc") == [["Character", "a\nb\nc"]]
    tokens = expected_tokens("a\x00<svg><![CDATA[b\x00]]></svg>")
    # Data state keeps U+0000; html5lib's CDATA section emits U+FFFD.
    assert tokens[0] == ["Character", "a\x00"]
    assert tokens[2] == ["Character", "b\ufffd"]
    assert normalise_nul(tokens)[0] == ["Character", "a\ufffd"]


def test_reader_handles_both_formats(tmp_path: Path) -> None:
    html5lib_style = tmp_path / "a.dat"
    html5lib_style.write_bytes(
        b'#data\nline1\r\n\nline3\n#errors\n(1,1): x\n#document\n| <html>\n|   "a\n\nb"\n'
        b"\n#data\n<b>\n#errors\n#new-errors\n(1:1) y\n#document-fragment\nsvg path\n"
        b"#script-off\n#document\n| <b>\n"
    )
    lol_style = tmp_path / "b.dat"
    lol_style.write_text("#data\n<svg>\n\n#data\n<p>\n#\n\n#data\n<i>\n#")
    first, second = read_tree_construction_tests(html5lib_style)
    assert first == TreeTest(
        "a.dat", 0, "line1\r\n\nline3", None, None, 1, '| <html>\n|   "a\n\nb"'
    )
    assert (second.data, second.fragment_context, second.scripting, second.line) == (
        "<b>",
        "svg path",
        False,
        13,
    )
    assert [(t.data, t.line, t.document) for t in read_tree_construction_tests(lol_style)] == [
        ("<svg>", 1, None),
        ("<p>", 4, None),
        ("<i>", 8, None),
    ]


def test_repository_test_files_are_read() -> None:
    tests = all_tree_construction_tests(_TREE_DIR)
    files = {t.file for t in tests}
    assert "tests1.dat" in files
    assert "foreign_content.dat" in files  # lol-html regression file
    assert not any(t.file.startswith("scripted") for t in tests)
    first = next(t for t in tests if t.file == "tests1.dat")
    assert first.data == "Test"
    assert html5lib_tree_agrees(first) is True
