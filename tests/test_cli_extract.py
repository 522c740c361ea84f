"""``htmlstream extract``: files, standard input, a local server's URLs, JSON lines and CSV, errors,
the summary, and the progress bar (on a terminal only)."""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from htmlstream.cli import main

pytest.importorskip("httpx")
pytest.importorskip("protego")

from scrape_server import FaultServer, Request, page, send

FIELDS = ["-f", "title=title::text", "-f", "links=a::attr(href)*"]


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer() as s:
        @s.route("/robots.txt")
        async def robots(req: Request, w: object) -> bool:
            return await send(w, 200, b"User-agent: *\nDisallow: /private\n",  # type: ignore[arg-type]
                              [("Content-Type", "text/plain")])

        @s.route("/a")
        async def a(req: Request, w: object) -> bool:
            return await send(w, 200, page("A", '<a href="/1">1</a><a href="/2">2</a>'))  # type: ignore[arg-type]

        @s.route("/private")
        async def private(req: Request, w: object) -> bool:
            return await send(w, 200, page("P"))  # type: ignore[arg-type]

        @s.route("/down")
        async def down(req: Request, w: object) -> bool:
            return await send(w, 503, b"down")  # type: ignore[arg-type]

        @s.route("/image")
        async def image(req: Request, w: object) -> bool:
            png = b"\x89PNG\r\n\x1a\n" + bytes(64 * 1024)
            return await send(w, 200, png, [("Content-Type", "text/html")])  # type: ignore[arg-type]

        yield s
    assert s.open == 0


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    one = tmp_path / "one.html"
    one.write_bytes(page("One", '<a href="x">x</a>'))
    two = tmp_path / "two.html"
    two.write_bytes("<title>Deux é</title>".encode("windows-1252"))
    return [str(one), str(two)]


def lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def test_files_jsonl(files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", *files, *FIELDS, "--encoding", "windows-1252"]) == 0
    captured = capsys.readouterr()
    records = lines(captured.out)
    assert records[0] == {"url": files[0], "final_url": None, "status": None, "error": None,
                          "title": "One", "links": ["x"]}
    assert records[1]["title"] == "Deux é" and records[1]["links"] == []
    # No terminal: no bar, only the summary.
    assert captured.err.startswith("2 ok, 0 skipped, 0 failed in ")


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(page("In"))))
    assert main(["extract", "-", "-f", "t=title"]) == 0
    assert lines(capsys.readouterr().out) == [
        {"url": "-", "final_url": None, "status": None, "error": None, "t": "In"}]


def test_csv_to_file(files: list[str], tmp_path: Path,
                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "new" / "out.csv"     # its missing folder is created
    assert main(["extract", files[0], *FIELDS, "--csv", "-o", str(out)]) == 0
    rows = list(csv.reader(out.open(encoding="utf-8")))
    assert rows == [["url", "final_url", "status", "error", "title", "links"],
                    [files[0], "", "", "", "One", '["x"]']]
    assert capsys.readouterr().out == ""


def test_urls(server: FaultServer, files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", server.url("/a"), server.url("/private"), files[0], *FIELDS,
                 "--timeout", "2"]) == 0
    captured = capsys.readouterr()
    records = lines(captured.out)
    assert [r["url"] for r in records] == [files[0], server.url("/a"), server.url("/private")] \
        or [r["url"] for r in records] == [files[0], server.url("/private"), server.url("/a")]
    by_url = {r["url"]: r for r in records}
    assert by_url[server.url("/a")] == {"url": server.url("/a"), "final_url": server.url("/a"),
                                        "status": 200, "error": None, "title": "A",
                                        "links": ["/1", "/2"]}
    assert str(by_url[server.url("/private")]["error"]).startswith("robots: ")
    assert captured.err.startswith("2 ok, 1 skipped, 0 failed")
    # --no-robots fetches it.
    assert main(["extract", server.url("/private"), *FIELDS, "--no-robots"]) == 0
    assert lines(capsys.readouterr().out)[0]["title"] == "P"


def test_errors_skip(server: FaultServer, files: list[str], tmp_path: Path,
                     capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "missing.html")
    status = main(["extract", missing, files[0], server.url("/down"), *FIELDS,
                   "--on-error", "skip", "--retries", "1", "--timeout", "2"])
    assert status == 1
    captured = capsys.readouterr()
    records = {r["url"]: r for r in lines(captured.out)}
    assert str(records[missing]["error"]).startswith("file: ")
    assert str(records[server.url("/down")]["error"]).startswith("status: HTTP 503")
    assert records[server.url("/down")]["status"] == 503
    assert captured.err.startswith("1 ok, 0 skipped, 2 failed")


def test_errors_raise_stops(server: FaultServer, files: list[str], tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "missing.html")
    assert main(["extract", missing, files[0], *FIELDS]) == 1
    captured = capsys.readouterr()
    assert len(lines(captured.out)) == 1        # the failure's record, then the stop
    assert "0 ok, 0 skipped, 1 failed" in captured.err
    assert "stopped at the first failure" in captured.err


@pytest.mark.parametrize("spec", ["title", "=title", "url=title", "t=p[", "t=a::attr("])
def test_bad_field(spec: str, files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", files[0], "-f", spec]) == 2
    assert "error" in capsys.readouterr().err


def _run_in_pty(args: list[str], timeout: float = 20.0) -> tuple[int, str, str]:
    """Run the command line with stderr on a pseudo-terminal: (status, stdout, stderr)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = {**os.environ, "COLUMNS": "100"}
    proc = subprocess.Popen([sys.executable, "-m", "htmlstream.cli", *args],
                            stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    err = b""
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                err += data
            elif proc.poll() is not None:
                break
        out, _ = proc.communicate(timeout=max(0.1, end - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, out.decode(), err.decode(errors="replace")


def test_progress_bar_on_a_terminal(server: FaultServer, tmp_path: Path) -> None:
    pytest.importorskip("tqdm")
    big = tmp_path / "big.html"
    with big.open("wb") as f:
        f.write(b"<html><body>")
        for _ in range(9):
            f.write(b"<p>" + b"z" * 1_000_000 + b"</p>")
        f.write(b"<title>Big</title>")
    status, out, err = _run_in_pty(["extract", str(big), server.url("/a"), *FIELDS,
                                    "--timeout", "5"])
    assert status == 0
    assert [r["title"] for r in lines(out)] == ["Big", "A"]
    assert "page" in err and "B/s" in err        # the bar by pages, and the big file's by bytes
    assert "2 ok, 0 skipped, 0 failed" in err


def test_url_failure_stops_the_run(server: FaultServer,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    urls = [server.url("/down")] + [server.url("/a")] * 4
    assert main(["extract", *urls, *FIELDS, "--retries", "0", "--concurrency", "1"]) == 1
    captured = capsys.readouterr()
    assert [r["url"] for r in lines(captured.out)] == [server.url("/down")]
    assert "stopped at the first failure" in captured.err and "status: HTTP 503" in captured.err
    assert server.wait_closed()


def test_not_html_url(server: FaultServer, capsys: pytest.CaptureFixture[str]) -> None:
    # An image served as text/html: its record says so, and it counts as skipped (not a page
    # to extract, not a failure: it neither stops the run nor sets the exit status).
    status = main(["extract", server.url("/image"), server.url("/a"), *FIELDS,
                   "--no-robots", "--timeout", "2"])
    assert status == 0
    captured = capsys.readouterr()
    records = {r["url"]: r for r in lines(captured.out)}
    assert records[server.url("/image")]["error"] == \
        "not_html: served as text/html but not HTML: PNG image"
    assert records[server.url("/image")]["title"] is None
    assert records[server.url("/a")]["title"] == "A"
    assert captured.err.startswith("1 ok, 1 skipped, 0 failed")
