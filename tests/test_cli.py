"""Tests of the ``htmlstream`` command line (``htmlstream.cli.main``)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import htmlstream
from htmlstream.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"htmlstream {htmlstream.__version__}\n"


def test_tokens_summary_on_bundled_sample(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokens"]) == 0
    out = capsys.readouterr().out
    assert "<bundled data/sample.html>" in out
    size = int(out.split("bytes:", 1)[1].split()[0].replace(",", ""))
    assert 6_000 <= size <= 10_000
    for kind in ("StartTag", "EndTag", "Text", "Comment", "Doctype"):
        assert kind in out
    top = out.split("top start tags:", 1)[1].split("text bytes", 1)[0]
    assert " a " in top and " td " in top
    for text_type in ("DATA", "RAWTEXT", "SCRIPT_DATA", "RCDATA", "CDATA_SECTION"):
        assert text_type in out
    assert "MB/s" in out


def test_tokens_summary_without_feedback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokens", "--no-feedback"]) == 0
    out = capsys.readouterr().out
    assert "<bundled data/sample.html>" in out
    # The bare tokenizer never leaves the data state: <script>, <style>, <svg> change nothing.
    text_types = out.split("text bytes by text type:", 1)[1].split("time:", 1)[0].split()
    assert text_types[0] == "DATA" and len(text_types) == 2


@pytest.mark.parametrize("options", [[], ["--no-feedback"]])
def test_summary_is_the_default_and_independent_of_chunking(
    options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tokens", "--summary", "--chunk-size", "7", *options]) == 0
    small = capsys.readouterr().out
    assert main(["tokens", *options]) == 0
    default = capsys.readouterr().out

    def stable(text: str) -> str:
        # Text may arrive in more pieces with smaller chunks: compare everything but the counts
        # of tokens and the timing.
        keep = text.split("tag names:", 1)[1].split("time:", 1)[0]
        return keep

    assert stable(small) == stable(default)


def test_tokens_list_on_small_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "small.html"
    path.write_bytes(b'<!DOCTYPE html><p class="x" id=y>Fish &amp; chips<!-- c --></p><br/>')
    assert main(["tokens", str(path), "--list", "--no-feedback"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # Text may come in several pieces: keep the first line of each run of Text lines.
    lines = [
        line
        for i, line in enumerate(lines)
        if not (line.startswith("Text ") and lines[i - 1].startswith("Text "))
    ]
    kinds = [line.split()[0] for line in lines]
    offsets = [int(line.split()[1]) for line in lines]
    assert kinds == ["Doctype", "StartTag", "Text", "Comment", "EndTag", "StartTag"]
    assert offsets == [0, 15, 33, 49, 59, 63]
    assert "name='html'" in lines[0]
    assert "<p class='x' id='y'>" in lines[1]
    assert "DATA 'Fish" in lines[2]
    assert "' c '" in lines[3]
    assert "</p>" in lines[4]
    assert "<br />" in lines[5]


def test_tokens_list_cuts_long_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "long.html"
    path.write_bytes(b"<p>" + b"x" * 500)
    assert main(["tokens", str(path), "--list", "--no-feedback"]) == 0
    out = capsys.readouterr().out
    assert "'" + "x" * 60 + "'…" in out
    assert "x" * 61 not in out


def test_tokens_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"<b>bold</b>")))
    assert main(["tokens", "-", "--list", "--chunk-size", "2", "--no-feedback"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["StartTag", "0", "<b>"]
    assert "</b>" in out


def test_missing_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.html"
    assert main(["tokens", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("htmlstream: error: ")
    assert "nope.html" in captured.err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["tokens", "--chunk-size", "0"],
        ["tokens", "--encoding", "no-such-codec"],
        ["tokens", "--list", "--summary"],
    ],
)
def test_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err
