"""The mitmproxy addon (htmlstream.integrations.mitmproxy) in a real mitmdump, a subprocess of
mitmproxy's own venv (``make mitmproxy-venv``: mitmproxy 11.0.2 cannot share the development
venv, see the Makefile), in reverse-proxy and in regular-proxy mode on 127.0.0.1, in front of an
aiohttp origin (tests/http_servers.py), with httpx as the client.  Every wait is bounded.

The rewriter is tests/mitmproxy_addon/rewriter.py's (recipes: the HTTPS upgrade and an
injection), made the same way here for the expected output.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("aiohttp")

from http_servers import Origin, Reply  # noqa: E402
from integration_servers import BOOM_PAGE, JSON_AS_HTML, PAGE, app_chunkings  # noqa: E402
from mitmproxy_addon.rewriter import make_rewriter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("HTMLSTREAM_MITMPROXY_VENV", ROOT / ".venv-mitmproxy"))
MITMDUMP = VENV / "bin" / "mitmdump"
ADDON = Path(__file__).resolve().parent / "mitmproxy_addon" / "addon.py"

pytestmark = pytest.mark.skipif(
    not (VENV / ".installed").exists() or not MITMDUMP.exists(),
    reason=f"no mitmproxy venv at {VENV} (`make mitmproxy-venv` makes it: mitmproxy 11.0.2 "
    "from the package index, which was not reachable or failed; see .venv-mitmproxy/pip.log)")

RW = make_rewriter()
EXPECTED = RW.rewrite(PAGE)
assert b'href="https://example.com/1"' in EXPECTED and b"<!-- via mitmproxy -->" in EXPECTED
HTML = [("Content-Type", "text/html; charset=utf-8")]


@contextlib.contextmanager
def mitmdump(*mode: str) -> Iterator[tuple[int, list[str]]]:
    """mitmdump with the addon on 127.0.0.1 (a port of its choosing, read from its log):
    yields the port and its output lines (collected by a thread)."""
    proc = subprocess.Popen(
        [str(MITMDUMP), "-s", str(ADDON), "--listen-host", "127.0.0.1", "-p", "0",
         "--set", "termlog_verbosity=info", "--set", "flow_detail=1", *mode],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=ROOT)
    assert proc.stdout is not None
    lines: list[str] = []
    port: list[int] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            found = re.search(r"listening at (?:http://)?(?:\*|127\.0\.0\.1|\[::\]):(\d+)", line)
            if found and not port:
                port.append(int(found.group(1)))
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(60) and port, "".join(lines)[-3000:]
        yield port[0], lines
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        reader.join(5)


@pytest.fixture(scope="module")
def origin() -> Iterator[Origin]:
    with Origin() as o:
        yield o


@pytest.fixture(scope="module")
def reverse(origin: Origin) -> Iterator[tuple[str, list[str]]]:
    with mitmdump("--mode", f"reverse:{origin.url('')}") as (port, lines):
        yield f"http://127.0.0.1:{port}", lines


def test_rewrites_whatever_the_chunking(origin: Origin, reverse: tuple[str, list[str]]) -> None:
    base, _ = reverse
    with httpx.Client(timeout=10) as client:
        for i, chunks in enumerate(app_chunkings(PAGE)):
            origin.serve(f"/p{i}", Reply(chunks, headers=[
                *HTML, ("Content-Length", str(len(PAGE))), ("ETag", '"v1"')], delay=0.001))
            r = client.get(f"{base}/p{i}")
            assert r.status_code == 200 and r.content == EXPECTED, i
            assert "content-length" not in r.headers
            assert r.headers["transfer-encoding"] == "chunked"
            assert r.headers["etag"] == 'W/"v1"'


def test_gzip_decoded_rewritten_reencoded(origin: Origin, reverse: tuple[str, list[str]]
                                          ) -> None:
    base, _ = reverse
    body = gzip.compress(PAGE)
    for i, chunks in enumerate(app_chunkings(body)[:5]):
        origin.serve(f"/gz{i}", Reply(chunks, headers=[*HTML, ("Content-Encoding", "gzip")]))
        with httpx.stream("GET", f"{base}/gz{i}", timeout=10) as r:
            raw = b"".join(r.iter_raw())
            assert r.headers["content-encoding"] == "gzip"
        assert gzip.decompress(raw) == EXPECTED


def test_passed_through(origin: Origin, reverse: tuple[str, list[str]]) -> None:
    base, _ = reverse
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    origin.serve("/img", Reply([png], headers=[("Content-Type", "image/png"),
                                               ("Content-Length", str(len(png)))]))
    origin.serve("/json", Reply([JSON_AS_HTML[:10], JSON_AS_HTML[10:]], headers=HTML))
    origin.serve("/page", Reply([PAGE], headers=HTML))
    with httpx.Client(timeout=10) as client:
        r = client.get(f"{base}/img")           # decided by its headers: left alone
        assert r.content == png and r.headers["content-length"] == str(len(png))
        r = client.get(f"{base}/json")          # sniffed: byte-identical
        assert r.content == JSON_AS_HTML
        r = client.head(f"{base}/page")
        assert r.status_code == 200 and r.content == b""
        r = client.get(f"{base}/page", headers={"Range": "bytes=0-9"})
        assert r.content == EXPECTED            # (the origin ignores Range): rewritten


def test_streams_before_the_origin_ends(origin: Origin, reverse: tuple[str, list[str]]) -> None:
    base, _ = reverse
    gate = threading.Event()
    origin.serve("/gated", Reply([PAGE[:4000], PAGE[4000:]], headers=HTML, gate=gate))
    with httpx.stream("GET", f"{base}/gated", timeout=10) as r:
        pieces = r.iter_bytes()
        first = next(pieces)                    # arrives while the origin holds its last chunk
        assert not gate.is_set() and EXPECTED.startswith(first) and first
        gate.set()
        assert first + b"".join(pieces) == EXPECTED
    assert not origin.record("/gated").gate_timeout


def test_errors_after_the_headers_do_not_end_cleanly(
        origin: Origin, reverse: tuple[str, list[str]]) -> None:
    base, lines = reverse
    origin.serve("/boom", Reply([BOOM_PAGE[:4000], BOOM_PAGE[4000:]], headers=HTML, delay=0.1))
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(f"{base}/boom", timeout=10)
    good = gzip.compress(PAGE)
    half = len(good) // 2           # decodes to more than the 1024 bytes of the decision
    corrupt = good[:half] + bytes(b ^ 0x55 for b in good[half:])
    origin.serve("/corrupt", Reply([corrupt[:half], corrupt[half:]], headers=[
        *HTML, ("Content-Encoding", "gzip")], delay=0.1))
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(f"{base}/corrupt", timeout=10)
    assert any("rewrite failed, connection killed" in line for line in lines), lines[-20:]


def test_regular_proxy_mode(origin: Origin) -> None:
    origin.serve("/regular", Reply(app_chunkings(PAGE)[1], headers=HTML))
    with mitmdump("--mode", "regular") as (port, _), \
            httpx.Client(proxy=f"http://127.0.0.1:{port}", timeout=10) as client:
        r = client.get(origin.url("/regular"))
        assert r.status_code == 200 and r.content == EXPECTED


def test_no_way_around_the_rewrite(origin: Origin, reverse: tuple[str, list[str]]) -> None:
    """Issue 35: Range, If-Range and Accept-Encoding never get the page past the rewrite."""
    import brotli

    base, _ = reverse
    gz = gzip.compress(PAGE)
    # The page (a Range asked for it is not sent on: the whole page), and an origin that
    # answers a 206 of a page whatever it was asked.
    origin.serve("/ranged", Reply([PAGE], headers=HTML))
    origin.serve("/partial", Reply([PAGE[:100]], status=206, headers=[
        *HTML, ("Content-Range", f"bytes 0-99/{len(PAGE)}")]))
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    origin.serve("/img.png", Reply([png[10:100]], status=206, headers=[
        ("Content-Type", "image/png"), ("Content-Range", f"bytes 10-99/{len(png)}")]))
    origin.serve("/made-up", Reply([PAGE], headers=[*HTML, ("Content-Encoding", "made-up")]))
    origin.serve("/br", Reply([brotli.compress(PAGE)], headers=[*HTML,
                                                                 ("Content-Encoding", "br")]))
    origin.serve("/gz", Reply([gz[:500], gz[500:]], headers=[*HTML,
                                                              ("Content-Encoding", "gzip")]))
    with httpx.Client(timeout=10) as client:
        for headers in ({"Range": "bytes=0-"}, {"Range": "bytes=0-10"},
                        {"Range": "bytes=0-10", "If-Range": '"x"'}):
            r = client.get(f"{base}/ranged", headers=headers)
            assert r.status_code == 200 and r.content == EXPECTED
        # A 206 of a page (whatever was asked): refused.
        r = client.get(f"{base}/partial", headers={"Range": "bytes=0-99"})
        assert r.status_code == 502 and PAGE[:100] not in r.content
        # An image's range: its 206.
        r = client.get(f"{base}/img.png", headers={"Range": "bytes=10-99"})
        assert r.status_code == 206 and r.content == png[10:100]
        # Codings: made-up refused; br refused (mitmproxy 11 pins a brotli without the bounded
        # decoder), gzip rewritten.
        for path in ("/made-up", "/br"):
            r = client.get(f"{base}{path}", headers={"Accept-Encoding": "br, made-up"})
            assert r.status_code == 502 and b"example.com/1'" not in r.content, path
        with client.stream("GET", f"{base}/gz", headers={"Accept-Encoding": "gzip"}) as r:
            assert gzip.decompress(b"".join(r.iter_raw())) == EXPECTED
        # HEAD: the headers of the GET.
        head = client.head(f"{base}/ranged")
        get = client.get(f"{base}/ranged")
        assert "content-length" not in head.headers and "content-length" not in get.headers
