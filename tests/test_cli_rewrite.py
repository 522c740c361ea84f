"""Tests of ``htmlstream rewrite`` (``htmlstream.cli.main``).

No test uses the network: URL input is tested against an ``http.server`` on 127.0.0.1.
"""

from __future__ import annotations

import importlib.resources
import io
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from htmlstream.cli import main

DOC = b'<div id=d><p class="a" title=t>one <b>two</b></p><img src=i.png></div>'
SAMPLE = importlib.resources.files("htmlstream").joinpath("data/sample.html").read_bytes()

#: Every attribute of the sample that ``--demo`` looks at, with its value.
URL_ATTRIBUTE = re.compile(
    rb"<(a|img|script|link|form)\b[^>]*?\s(href|src|action)=(\"[^\"]*\"|'[^']*'|[^\s>]+)"
)


def rewrite(
    argv: list[str], tmp_path: Path, document: bytes = DOC, name: str = "in.html"
) -> tuple[int, bytes]:
    """Run ``htmlstream rewrite IN -o OUT ARGV``; return the exit status and OUT's bytes."""
    source = tmp_path / name
    source.write_bytes(document)
    output = tmp_path / f"{name}.out"
    status = main(["rewrite", str(source), "-o", str(output), *argv])
    return status, output.read_bytes() if output.exists() else b""


# --------------------------------------------------------------------------------------------
# Actions
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(
            ["--on", "p", "--set-attr", 'title=a&"b'],
            b'<div id=d><p class="a" title="a&amp;&quot;b">one <b>two</b></p><img src=i.png></div>',
            id="set-attr-replaces",
        ),
        pytest.param(
            ["--on", "p", "--set-attr", "x=1=2", "--set-attr", "y="],
            b'<div id=d><p class="a" title=t x="1=2" y="">one <b>two</b></p><img src=i.png></div>',
            id="set-attr-repeated",
        ),
        pytest.param(
            ["--on", "p", "--remove-attr", "class", "--remove-attr", "TITLE"],
            b"<div id=d><p>one <b>two</b></p><img src=i.png></div>",
            id="remove-attr-repeated",
        ),
        pytest.param(["--on", "p", "--remove-attr", "nope"], DOC, id="remove-attr-absent"),
        pytest.param(
            ["--on", "p", "--remove"],
            b"<div id=d><img src=i.png></div>",
            id="remove",
        ),
        pytest.param(
            ["--on", "p", "--unwrap"],
            b"<div id=d>one <b>two</b><img src=i.png></div>",
            id="unwrap",
        ),
        pytest.param(
            ["--on", "p", "--before", "<x>&"],
            b'<div id=d>&lt;x&gt;&amp;<p class="a" title=t>one <b>two</b></p><img src=i.png></div>',
            id="before",
        ),
        pytest.param(
            ["--on", "p", "--after", "[after]"],
            b'<div id=d><p class="a" title=t>one <b>two</b></p>[after]<img src=i.png></div>',
            id="after",
        ),
        pytest.param(
            ["--on", "p", "--prepend", "[pre]"],
            b'<div id=d><p class="a" title=t>[pre]one <b>two</b></p><img src=i.png></div>',
            id="prepend",
        ),
        pytest.param(
            ["--on", "p", "--append", "[app]"],
            b'<div id=d><p class="a" title=t>one <b>two</b>[app]</p><img src=i.png></div>',
            id="append",
        ),
        pytest.param(
            ["--on", "p", "--replace", "[rep]"],
            b"<div id=d>[rep]<img src=i.png></div>",
            id="replace",
        ),
        pytest.param(
            ["--on", "p", "--inner", "[in]"],
            b'<div id=d><p class="a" title=t>[in]</p><img src=i.png></div>',
            id="inner",
        ),
        pytest.param(
            ["--on", "p", "--rename", "section"],
            b'<div id=d><section class="a" title=t>one <b>two</b></section><img src=i.png></div>',
            id="rename",
        ),
        pytest.param(
            ["--on", "img", "--append", "x", "--prepend", "y", "--inner", "z"],
            DOC,
            id="content-of-void-element-is-a-no-op",
        ),
        pytest.param(
            ["--on", "img", "--after", "=", "--before", "-"],
            b'<div id=d><p class="a" title=t>one <b>two</b></p>-<img src=i.png>=</div>',
            id="around-void-element",
        ),
        pytest.param(
            ["--on", "p", "--append=-x"],
            b'<div id=d><p class="a" title=t>one <b>two</b>-x</p><img src=i.png></div>',
            id="content-starting-with-dash",
        ),
        pytest.param(["--on", "table", "--remove"], DOC, id="no-match"),
    ],
)
def test_each_action(
    argv: list[str], expected: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = rewrite(argv, tmp_path)
    assert capsys.readouterr().err == ""
    assert status == 0
    assert out == expected


def test_actions_apply_in_command_line_order(tmp_path: Path) -> None:
    status, out = rewrite(["--on", "p", "--set-attr", "x=1", "--remove-attr", "x"], tmp_path)
    assert status == 0
    assert b'<p class="a" title=t>' in out
    status, out = rewrite(["--on", "p", "--remove-attr", "x", "--set-attr", "x=1"], tmp_path)
    assert status == 0
    assert b'<p class="a" title=t x="1">' in out
    # lol-html's insertion order: successive before/append keep it, after/prepend reverse it.
    argv = [
        "--on",
        "b",
        "--before",
        "1",
        "--before",
        "2",
        "--after",
        "3",
        "--after",
        "4",
        "--prepend",
        "5",
        "--prepend",
        "6",
        "--append",
        "7",
        "--append",
        "8",
    ]
    status, out = rewrite(argv, tmp_path)
    assert status == 0
    assert b"one 12<b>65two78</b>43</p>" in out


def test_several_groups_apply_in_order(tmp_path: Path) -> None:
    argv = [
        "--on",
        "p",
        "--append",
        "1",
        "--set-attr",
        "g=1",
        "--on",
        "b",
        "--rename",
        "strong",
        "--on",
        "p",
        "--append",
        "2",
        "--set-attr",
        "g=2",
        "--on",
        "div > img",
        "--set-attr",
        "alt=",
        "--on",
        "#d",
        "--set-attr",
        "class=outer",
    ]
    status, out = rewrite(argv, tmp_path)
    assert status == 0
    assert out == (
        b'<div id=d class="outer"><p class="a" title=t g="2">one <strong>two</strong>12</p>'
        b'<img src=i.png alt=""></div>'
    )


def test_groups_see_the_original_document(tmp_path: Path) -> None:
    # Selectors match what the input says, not what an earlier group changed.
    argv = [
        "--on",
        "p",
        "--rename",
        "section",
        "--on",
        "section",
        "--remove",
        "--on",
        "p.a",
        "--set-attr",
        "class=b",
        "--on",
        "p.b",
        "--remove",
    ]
    status, out = rewrite(argv, tmp_path)
    assert status == 0
    assert out == (
        b'<div id=d><section class="b" title=t>one <b>two</b></section><img src=i.png></div>'
    )


def test_html_versus_text(tmp_path: Path) -> None:
    content = "<em>a &amp; b</em>"
    status, out = rewrite(["--on", "b", "--inner", content], tmp_path)
    assert status == 0
    assert b"<b>&lt;em&gt;a &amp;amp; b&lt;/em&gt;</b>" in out
    status, out = rewrite(["--on", "b", "--inner", content, "--html"], tmp_path)
    assert status == 0
    assert b"<b><em>a &amp; b</em></b>" in out
    # --html belongs to its group, wherever it stands in it, and to no other group.
    argv = ["--on", "b", "--html", "--before", "<i>", "--on", "b", "--after", "<u>"]
    status, out = rewrite(argv, tmp_path)
    assert status == 0
    assert b"one <i><b>two</b>&lt;u&gt;</p>" in out
    argv = ["--on", "p", "--replace", "<hr>", "--html"]
    status, out = rewrite(argv, tmp_path)
    assert status == 0
    assert out == b"<div id=d><hr><img src=i.png></div>"


def test_text_in_script_is_not_entity_escaped(tmp_path: Path) -> None:
    document = b"<script>var a = 1;</script><style>p {}</style>"
    argv = [
        "--on",
        "script",
        "--append",
        " if (a < 2 && a > 0) {}",
        "--on",
        "style",
        "--prepend",
        "b > i {} ",
    ]
    status, out = rewrite(argv, tmp_path, document)
    assert status == 0
    assert out == b"<script>var a = 1; if (a < 2 && a > 0) {}</script><style>b > i {} p {}</style>"


def test_attribute_values_are_decoded_by_selectors(tmp_path: Path) -> None:
    document = b'<p title="caf&eacute;">x</p><p title="cafe">y</p>'
    status, out = rewrite(["--on", 'p[title="café"]', "--remove"], tmp_path, document)
    assert status == 0
    assert out == b'<p title="cafe">y</p>'
    # The same with a legacy encoding: names, values and content go through --encoding.
    document = b'<p title="caf\xe9">x</p><p>y</p>'
    argv = ["--encoding", "iso-8859-2", "--on", 'p[title="café"]', "--append", "é€"]
    status, out = rewrite(argv, tmp_path, document)
    assert status == 0
    assert out == b'<p title="caf\xe9">x\xe9&#8364;</p><p>y</p>'


# --------------------------------------------------------------------------------------------
# Input and output
# --------------------------------------------------------------------------------------------


class _Stdin:
    """A stand-in for ``sys.stdin``: only ``.buffer`` is used."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def test_stdin_to_stdout(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.setattr("sys.stdin", _Stdin(DOC))
    assert main(["rewrite", "-", "--on", "b", "--unwrap", "--chunk-size", "3"]) == 0
    captured = capsysbinary.readouterr()
    assert captured.out == b'<div id=d><p class="a" title=t>one two</p><img src=i.png></div>'
    assert captured.err == b""


def test_options_may_come_before_input(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.setattr("sys.stdin", _Stdin(b"<p>x</p>"))
    assert main(["rewrite", "--on", "p", "--remove", "-"]) == 0
    assert capsysbinary.readouterr().out == b""


def test_output_file(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    source = tmp_path / "in.html"
    source.write_bytes(DOC)
    output = tmp_path / "out.html"
    output.write_bytes(b"old content, longer than the new one " * 10)
    assert main(["rewrite", str(source), "--output", str(output), "--on", "img", "--remove"]) == 0
    assert output.read_bytes() == b'<div id=d><p class="a" title=t>one <b>two</b></p></div>'
    assert capsysbinary.readouterr() == (b"", b"")


def test_output_dash_is_stdout(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    source = tmp_path / "in.html"
    source.write_bytes(b"<p>x</p>")
    assert main(["rewrite", str(source), "-o", "-", "--on", "p", "--inner", "y"]) == 0
    assert capsysbinary.readouterr().out == b"<p>y</p>"


ARGV_MANY_GROUPS = [
    "--on",
    "a[href]",
    "--set-attr",
    "rel=noopener",
    "--append",
    "↗",
    "--on",
    "script",
    "--remove",
    "--on",
    "style",
    "--inner",
    "body{}",
    "--on",
    "td:first-child",
    "--rename",
    "th",
    "--prepend",
    "<b>",
    "--html",
    "--on",
    "ul ul",
    "--unwrap",
    "--on",
    "h3",
    "--before",
    "<hr>",
    "--html",
    "--after",
    "§",
    "--on",
    "textarea",
    "--inner",
    "</textarea> & text",
    "--on",
    "svg rect",
    "--set-attr",
    "fill=red",
    "--on",
    "option[selected]",
    "--remove-attr",
    "selected",
]


@pytest.mark.parametrize("chunk_size", [1, 7])
def test_chunk_size_does_not_change_the_output(
    chunk_size: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole_status, whole = rewrite(ARGV_MANY_GROUPS, tmp_path, SAMPLE, "whole.html")
    argv = ["--chunk-size", str(chunk_size), *ARGV_MANY_GROUPS]
    status, chunked = rewrite(argv, tmp_path, SAMPLE, "chunked.html")
    assert (whole_status, status) == (0, 0)
    assert chunked == whole
    assert whole != SAMPLE
    assert whole.count(b'rel="noopener"') == SAMPLE.count(b"<a href")
    assert b"<script" not in whole
    assert b"&lt;/textarea&gt; &amp; text</textarea>" in whole
    assert capsys.readouterr().err == ""


def test_demo_chunk_sizes_give_the_same_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = set()
    for chunk_size in ("1", "7", "65536"):
        status, out = rewrite(["--demo", "--chunk-size", chunk_size], tmp_path, SAMPLE)
        assert status == 0
        outputs.add(out)
    assert len(outputs) == 1
    assert capsys.readouterr().err.count("11 elements changed") == 3


class _RecordingStdout:
    """A stand-in for ``sys.stdout`` whose ``.buffer`` records writes and flushes."""

    def __init__(self) -> None:
        self.buffer = self
        self.events: list[bytes | None] = []

    def write(self, data: bytes) -> int:
        self.events.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        self.events.append(None)

    @property
    def written(self) -> bytes:
        return b"".join(event for event in self.events if event)


def test_output_streams_as_input_arrives(monkeypatch: pytest.MonkeyPatch) -> None:
    stdout = _RecordingStdout()
    pieces = [b"<p>one</p>", b"<p>two</p>", b"<p>three</p>"]
    seen_before_read: list[bytes] = []

    class SlowStdin:
        """Gives one piece per read, and notes what had been written by then."""

        def __init__(self) -> None:
            self.buffer = self

        def read1(self, size: int) -> bytes:
            seen_before_read.append(stdout.written)
            return pieces.pop(0) if pieces else b""

    monkeypatch.setattr("sys.stdin", SlowStdin())
    monkeypatch.setattr("sys.stdout", stdout)
    assert main(["rewrite", "-", "--on", "p", "--set-attr", "n=1"]) == 0
    assert seen_before_read == [
        b"",
        b'<p n="1">one</p>',
        b'<p n="1">one</p><p n="1">two</p>',
        b'<p n="1">one</p><p n="1">two</p><p n="1">three</p>',
    ]
    # Every write is followed by a flush.
    for i, event in enumerate(stdout.events):
        if event is not None:
            assert stdout.events[i + 1] is None


# --------------------------------------------------------------------------------------------
# URL input, from a local server
# --------------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/page.html":
            body = b'<p title="caf\xe9">hello</p><a href="http://x.example/">x</a>'
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=ISO-8859-1")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/sample.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for start in range(0, len(SAMPLE), 1000):
                piece = SAMPLE[start : start + 1000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/cut.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "1000")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"<p>only part of it")
            self.close_connection = True
        else:
            self.send_error(404, "Not Found")


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests go straight to 127.0.0.1 whatever proxy the environment names."""
    for name in (
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")


@pytest.fixture
def server(no_proxy: None) -> Iterator[str]:
    """The base URL of an HTTP server on 127.0.0.1 (an ephemeral port), shut down after."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def test_url_input(server: str, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    # The server's charset (ISO-8859-1) decodes the attribute value the selector compares.
    url = f"{server}/page.html"
    assert main(["rewrite", url, "--on", 'p[title="café"]', "--append", "!"]) == 0
    assert capsysbinary.readouterr().out == (
        b'<p title="caf\xe9">hello!</p><a href="http://x.example/">x</a>'
    )
    # --encoding wins over the server's charset.
    assert (
        main(["rewrite", url, "--encoding", "utf-8", "--on", 'p[title="café"]', "--append", "!"])
        == 0
    )
    assert b"hello!" not in capsysbinary.readouterr().out


def test_url_input_chunked_with_demo(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = tmp_path / "new" / "local.html"      # its missing folder is created
    assert main(["rewrite", "--demo", "-o", str(local)]) == 0
    remote = tmp_path / "remote.html"
    url = f"{server}/sample.html".replace("http://", "HTTP://")
    assert main(["rewrite", url, "--chunk-size", "7", "-o", str(remote)]) == 0
    assert remote.read_bytes() == local.read_bytes()
    err = capsys.readouterr().err.splitlines()
    assert err[1].startswith(f"htmlstream: demo on {url}: {len(SAMPLE):,} bytes in")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/missing.html", "HTTP 404 Not Found"),
        ("/cut.html", "IncompleteRead"),
    ],
)
def test_url_errors(
    path: str, message: str, server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out.html"
    url = server + path
    assert main(["rewrite", url, "-o", str(output), "--on", "p", "--remove"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("htmlstream: error: ")
    assert url in err and message in err
    assert not output.exists()


def test_url_connection_refused(no_proxy: None, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    assert main(["rewrite", url, "--on", "p", "--remove"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"htmlstream: error: cannot fetch {url}: ")
    assert "refused" in err.lower()


# --------------------------------------------------------------------------------------------
# The demo (the default without --on)
# --------------------------------------------------------------------------------------------


def test_demo_on_the_bundled_sample(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["rewrite"]) == 0
    default = capsysbinary.readouterr()
    assert main(["rewrite", "--demo"]) == 0
    explicit = capsysbinary.readouterr()
    assert default.out == explicit.out
    out = default.out

    before = URL_ATTRIBUTE.findall(SAMPLE)
    after = URL_ATTRIBUTE.findall(out)
    assert len(before) == len(after) == 15
    upgraded = 0
    for (tag, attr, old), (new_tag, new_attr, new) in zip(before, after, strict=True):
        assert (tag, attr) == (new_tag, new_attr)
        old_url, new_url = old.strip(b"\"'"), new.strip(b"\"'")
        if old_url.startswith(b"http://"):
            assert new_url == b"https://" + old_url[len(b"http://") :]
            upgraded += 1
        else:
            assert new == old
    assert upgraded == 11
    assert not re.search(rb"(href|src|action)=\"?http://", out)
    assert b'xmlns="http://www.w3.org/2000/svg"' in out  # not a link
    imgs = re.findall(rb"<img\b[^>]*>", out)
    assert imgs and all(b'loading="lazy"' in img for img in imgs)
    # Nothing else changed.
    restored = re.sub(rb' loading="lazy"', b"", out).replace(b"https://", b"http://")
    assert restored.replace(
        b'href="http://harbourside-allotments.example/contact"',
        b"href=http://harbourside-allotments.example/contact",
    ) == (SAMPLE.replace(b"https://", b"http://"))

    summary = default.err.decode()
    assert summary.count("\n") == 1
    assert summary.startswith("htmlstream: demo on <bundled data/sample.html>: ")
    assert f"{len(SAMPLE):,} bytes in, {len(out):,} bytes out" in summary
    assert "11 elements changed (11 http:// URLs upgraded to https://, 1 <img>" in summary
    assert re.search(r"[\d.]+ MB/s$", summary.strip())


def test_demo_edge_cases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = (
        b'<a href=" HTTP://a.example/">a</a><a>no href</a><a href="https://b/">b</a>'
        b'<img src="http://c/" loading="eager"><img><img src=/d.png>'
        b'<iframe src="http://e/"></iframe><link rel=x href=http://f/>'
        b'<form action="http://g/?a=1&amp;b=2"></form><script src="http://h/"></script>'
    )
    status, out = rewrite([], tmp_path, document)
    assert status == 0
    assert out == (
        b'<a href="https://a.example/">a</a><a>no href</a><a href="https://b/">b</a>'
        b'<img src="https://c/" loading="eager"><img loading="lazy">'
        b'<img src=/d.png loading="lazy">'
        b'<iframe src="http://e/"></iframe><link rel=x href="https://f/">'
        b'<form action="https://g/?a=1&amp;b=2"></form><script src="https://h/"></script>'
    )
    err = capsys.readouterr().err
    assert "7 elements changed (5 http:// URLs upgraded to https://, 2 <img> given" in err


def test_demo_and_on_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rewrite", "--demo", "--on", "p", "--remove"]) == 2
    assert capsys.readouterr().err == "htmlstream: error: --demo cannot be combined with --on\n"


def test_help_documents_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rewrite", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--demo" in out and "Cloudflare" in out
    for option in (
        "--on SELECTOR",
        "--set-attr NAME=VALUE",
        "--remove-attr NAME",
        "--remove",
        "--unwrap",
        "--before CONTENT",
        "--after CONTENT",
        "--prepend CONTENT",
        "--append CONTENT",
        "--replace CONTENT",
        "--inner CONTENT",
        "--html",
        "--rename TAG",
        "-o OUT",
        "--chunk-size N",
        "--encoding ENC",
    ):
        assert option in out
    assert main(["--help"]) == 0
    assert "rewrite" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def test_bad_selector(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rewrite", "--on", "p", "--remove", "--on", "x[", "--remove"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("htmlstream: error: invalid selector 'x[': ")
    assert "attribute name" in captured.err
    assert captured.err.count("\n") == 1


def test_bad_selector_does_not_fetch_or_write(no_proxy: None, tmp_path: Path) -> None:
    output = tmp_path / "out.html"
    # The URL is never fetched (nothing listens there): the selector is checked first.
    argv = ["rewrite", "http://127.0.0.1:9/", "-o", str(output), "--on", "a:hover", "--remove"]
    assert main(argv) == 2
    assert not output.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--remove"], "--remove must come after --on SELECTOR"),
        (["--set-attr", "a=b", "--on", "p"], "--set-attr must come after --on SELECTOR"),
        (["--html", "--on", "p", "--append", "x"], "--html must come after --on SELECTOR"),
        (["--on", "p", "--set-attr", "novalue"], "expected NAME=VALUE, got 'novalue'"),
        (["--on", "p", "--set-attr", "=v"], "an attribute name must be a non-empty str"),
        (["--on", "p", "--set-attr", "a b=v"], "an attribute name must not contain ' '"),
        (["--on", "p", "--remove-attr", "a>"], "an attribute name must not contain '>'"),
        (["--on", "p", "--rename", "1p"], "a tag name must start with an ASCII letter"),
        (["--on", "p", "--rename", "a/b"], "a tag name must not contain '/'"),
        (["--on", "p", "--rename", ""], "a tag name must be a non-empty str"),
        (["--on", "p", "--append"], "expected one argument"),
        (["--on"], "expected one argument"),
        (["--on", "p", "--remove", "--chunk-size", "0"], "must be greater than 0"),
        (["--encoding", "utf-16", "--on", "p", "--remove"], "is not ASCII-compatible"),
        (["--encoding", "nope", "--on", "p", "--remove"], "unknown encoding"),
        (["--on", "p"], "--on 'p' has no action"),
        (["--on", "p", "--remove", "--on", "b", "--html"], "--on 'b' has no action"),
    ],
)
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rewrite", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err
    assert "error: " in captured.err


def test_missing_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "out.html"
    missing = tmp_path / "nope.html"
    assert main(["rewrite", str(missing), "-o", str(output), "--on", "p", "--remove"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"htmlstream: error: cannot read {str(missing)!r}: ")
    assert not output.exists()


def test_unwritable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # (a missing folder is created: one that cannot be, under a file, is an error)
    (tmp_path / "a-file").write_text("x")
    output = tmp_path / "a-file" / "out.html"
    assert main(["rewrite", "-o", str(output)]) == 2
    assert capsys.readouterr().err.startswith(f"htmlstream: error: cannot write {str(output)!r}")


def test_output_must_not_be_the_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "page.html"
    source.write_bytes(DOC)
    argv = [
        "rewrite",
        str(source),
        "-o",
        str(tmp_path / "." / "page.html"),
        "--on",
        "p",
        "--remove",
    ]
    assert main(argv) == 2
    assert "is the input file" in capsys.readouterr().err
    assert source.read_bytes() == DOC


@pytest.mark.parametrize(
    ("argv", "document", "message"),
    [
        pytest.param(
            ["--on", "script", "--append", "</script><p>"],
            b"<p>a</p><script>x()</script>",
            "htmlstream: error: --on 'script': --append failed on <script> at byte offset 8: "
            "text inserted into SCRIPT_DATA content must not contain '</script>'",
            id="content-would-end-the-script",
        ),
        pytest.param(
            ["--encoding", "iso-8859-2", "--on", "style", "--inner", "p::before{content:'€'}"],
            b"<p>a</p><style></style>",
            "htmlstream: error: --on 'style': --inner failed on <style> at byte offset 8: ",
            id="content-cannot-be-encoded",
        ),
        pytest.param(
            ["--on", "p", "--append", "x", "--chunk-size", "1048576"],
            b"<p>a</p><a " + b"x" * (5 * 1024 * 1024),
            "htmlstream: error: BufferLimitExceeded: max_buffer_size=",
            id="engine-limit",
        ),
    ],
)
def test_errors_while_rewriting(
    argv: list[str],
    document: bytes,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = tmp_path / "in.html"
    source.write_bytes(document)
    output = tmp_path / "out.html"
    assert main(["rewrite", str(source), "-o", str(output), *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith(message)
    assert err.count("\n") == 1
    assert not output.exists()  # no truncated document is left behind


def test_errors_while_rewriting_to_stdout_keep_what_was_written(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    source = tmp_path / "in.html"
    source.write_bytes(b"<p>a</p><script>x()</script>")
    argv = ["rewrite", str(source), "--chunk-size", "1", "--on", "script", "--prepend", "<!--"]
    assert main(argv) == 1
    captured = capsysbinary.readouterr()
    assert captured.out == b"<p>a</p>"
    assert b"must not contain '<!--'" in captured.err
