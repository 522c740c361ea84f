"""``htmlstream rewrite`` with the recipe options (--https-upgrade, --inject-*, --csp-nonce)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from htmlstream.cli import main

DOC = (b'<!doctype html><title>t</title><img src="http://example.com/a.png">'
       b'<img src="http://other.test/b.png"><script>x()</script><p>text')


def run(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
        ) -> tuple[int, bytes, str]:
    source = tmp_path / "in.html"
    source.write_bytes(DOC)
    output = tmp_path / "out.html"
    status = main(["rewrite", str(source), "-o", str(output), *argv])
    return status, output.read_bytes() if output.exists() else b"", capsys.readouterr().err


def test_https_upgrade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(["--https-hosts", "example.com, *.cdn.test", "--no-hsts-preload"],
                           tmp_path, capsys)
    assert status == 0
    assert out == DOC.replace(b"http://example.com", b"https://example.com")
    assert "1 URLs upgraded (example.com 1), 1 http:// URLs left" in err


def test_upgrade_insecure_requests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(["--upgrade-insecure-requests", "--https-hosts", "none.test"],
                         tmp_path, capsys)
    assert status == 0
    assert out.startswith(b'<!doctype html><meta http-equiv="Content-Security-Policy" '
                          b'content="upgrade-insecure-requests"><title>')


def test_inject_and_nonce_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snippet = tmp_path / "head.html"
    snippet.write_text("<script>analytics()</script>", encoding="utf-8")
    end = tmp_path / "end.html"
    end.write_text("<!--end-->", encoding="utf-8")
    status, out, err = run(["--inject-head-end", str(snippet), "--inject-body-end", str(end),
                            "--csp-nonce", "--https-upgrade", "--https-hosts", "*",
                            "--no-hsts-preload"], tmp_path, capsys)
    assert status == 0
    nonce = re.search(r"csp-nonce on .*: (\S+)", err).group(1)  # type: ignore[union-attr]
    assert out == (
        f'<!doctype html><title>t</title><script nonce="{nonce}">analytics()</script>'
        f'<img src="https://example.com/a.png"><img src="https://other.test/b.png">'
        f'<script nonce="{nonce}">x()</script><p>text<!--end-->').encode()


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--inject-head-end", str(tmp_path / "missing.html")], tmp_path, capsys)[0] == 2
    assert run(["--csp-select", "p["], tmp_path, capsys)[0] == 2
    assert run(["--https-hosts", "a*b"], tmp_path, capsys)[0] == 2
    assert run(["--demo", "--csp-nonce"], tmp_path, capsys)[0] == 2
