"""End to end in a real browser: headless Chromium loads pages through ``htmlstream proxy`` (the
command, as a subprocess) with the edge recipes.

* ``--obfuscate-emails``: the page over the wire holds none of the addresses; after the
  decoder script ran, Chromium's DOM shows them all (non-ASCII ones too).
* ``--https-upgrade``: the proxy itself serves HTTPS (``--tls-cert``), the page's subresources
  (stylesheet, script, images, a ``srcset``, a ``url()`` in ``<style>``) are
  ``http://127.0.0.1:PORT/...`` on an origin that speaks only HTTPS there: with the upgrade
  every one of them loads over HTTPS and the browser reports no mixed content; without it
  (the control) the browser blocks them as mixed content.
* WebSockets: the page's script talks to a WebSocket origin through the proxy (text, binary,
  the subprotocol, a close with its code and reason).

The origins are aiohttp servers on 127.0.0.1 (tests/http_servers.py); the certificate is made
by the test (tests/tls_certs.py). Every wait is bounded.  Skipped where Chromium is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")
httpx = pytest.importorskip("httpx")

from http_servers import Origin, Reply  # noqa: E402
from tls_certs import client_context, self_signed, server_context  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium; `make "
    "test` does it when run as root with apt)")

HTML = [("Content-Type", "text/html; charset=utf-8")]


@contextlib.contextmanager
def cli_proxy(upstream: str, *flags: str) -> Iterator[tuple[str, list[str]]]:
    """``htmlstream proxy --upstream UPSTREAM --listen 127.0.0.1:0 FLAGS...`` as a subprocess:
    yields its base URL and the list its access log (standard error) is collected into."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "htmlstream.cli", "proxy", "--upstream", upstream,
         "--listen", "127.0.0.1:0", "--grace", "2", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    log: list[str] = []
    assert proc.stdout is not None and proc.stderr is not None
    reader = threading.Thread(target=lambda: log.extend(
        line.decode(errors="replace") for line in proc.stderr or ()), daemon=True)
    try:
        line = proc.stdout.readline().decode()
        assert "listening on " in line, (line, proc.stderr.read().decode()[-2000:])
        reader.start()
        yield line.split("listening on ")[1].split(" ")[0].rstrip("/"), log
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            reader.join(5)


def chromium(url: str, profile: Path) -> tuple[str, str]:
    """The DOM of ``url`` after its scripts ran (a virtual-time budget lets the load event and
    its handlers run), and the browser's log (console messages and network errors)."""
    assert CHROMIUM is not None
    res = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
         "--no-first-run", "--ignore-certificate-errors", f"--user-data-dir={profile}",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
         "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout, res.stderr


def trickled(body: bytes, size: int = 300) -> list[bytes]:
    return [body[i:i + size] for i in range(0, len(body), size)]


# --------------------------------------------------------------------------- e-mail addresses

ADDRESSES = ["a@b.co", "josé@exämple.fr", "用户@例子.广告"]
EMAIL_PAGE = (
    "<!DOCTYPE html><html><head><meta charset=utf-8><title>contacts</title></head><body>"
    + "<p>filler paragraph, no address here.</p>" * 60
    + f"<p id=t>Write to {', '.join(ADDRESSES)}.</p>"
    "<p><a id=m href='mailto:josé@exämple.fr'>write</a> <a id=l href=/x>in a@b.co</a></p>"
    + "<p>more filler after the addresses.</p>" * 60
    + "</body></html>").encode()


@pytest.mark.parametrize("coding", ["identity", "gzip"])
def test_obfuscated_emails_decoded_in_chromium(tmp_path: Path, coding: str) -> None:
    body = gzip.compress(EMAIL_PAGE) if coding == "gzip" else EMAIL_PAGE
    headers = [*HTML, ("Content-Encoding", "gzip")] if coding == "gzip" else HTML
    with Origin() as origin, cli_proxy(origin.url(""), "--obfuscate-emails") as (proxy, log):
        origin.serve("/contacts", Reply(trickled(body), headers=headers, delay=0.002))
        origin.serve("/favicon.ico", Reply([b""], status=404))
        # Over the wire (decoded from gzip by httpx): no address, in any form.
        wire = httpx.get(f"{proxy}/contacts", timeout=10).content
        for address in ADDRESSES:
            assert address.encode() not in wire
            assert address.split("@")[0].encode() + b"@" not in wire
        assert len(re.findall(rb'data-cfemail="[0-9a-f]+"', wire)) == 4   # 3 + 1 in the link
        assert b'<a id=m href="/cdn-cgi/l/email-protection#' in wire
        assert not re.search(rb"href=.?mailto:", wire)
        dom, _ = chromium(f"{proxy}/contacts", tmp_path / "profile")
    assert f'<p id="t">Write to {", ".join(ADDRESSES)}.</p>' in dom
    assert '<a id="m" href="mailto:josé@exämple.fr">write</a>' in dom
    assert '<a id="l" href="/x">in a@b.co</a>' in dom
    assert "__cf_email__" not in dom and "data-cfemail" not in dom  # all decoded, script gone
    assert sum('"GET /contacts HTTP/1.1" 200' in line and "rewritten" in line
               for line in log) == 2, log


# --------------------------------------------------------------------------- HTTPS upgrade

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201ffa65c8b"
    "e70000000049454e44ae426082")

REPORT = """
<pre id=out></pre>
<script>
addEventListener('load', () => {
  const $ = (id) => document.getElementById(id);
  $('out').textContent = JSON.stringify({
    resources: performance.getEntriesByType('resource').map((e) => e.name).sort(),
    img: $('i').naturalWidth, srcset: $('j').naturalWidth, script: window.appRan === true,
    stylesheet: getComputedStyle($('s')).color, background: getComputedStyle($('b'))
      .backgroundImage, link: $('l').href, secure: window.isSecureContext});
});
</script>"""


def upgrade_page(sub: str) -> bytes:
    """A page whose subresources are on ``sub`` (``http://127.0.0.1:PORT``)."""
    return (
        "<!DOCTYPE html><html><head><meta charset=utf-8><title>upgrade</title>"
        f"<link rel=stylesheet href='{sub}/style.css'>"
        f"<style>#b{{width:4px;height:4px;background-image:url({sub}/bg.png)}}</style>"
        f"<script src='{sub}/app.js'></script></head><body>"
        + "<p>filler paragraph.</p>" * 80
        + f"<img id=i src='{sub}/img.png'><img id=j srcset='{sub}/img2.png 1x'>"
        f"<p id=s>styled</p><div id=b></div><a id=l href='{sub}/next'>a link</a>"
        + REPORT + "</body></html>").encode()


@contextlib.contextmanager
def https_origin(cert: Path, key: Path) -> Iterator[Origin]:
    """An origin that speaks only HTTPS, serving the page's subresources."""
    with Origin(ssl_context=server_context(cert, key)) as sub:
        for path, kind, data in [
                ("/style.css", "text/css", b"#s { color: rgb(1, 2, 3) }"),
                ("/app.js", "text/javascript", b"window.appRan = true;"),
                ("/img.png", "image/png", PNG_1PX), ("/img2.png", "image/png", PNG_1PX),
                ("/bg.png", "image/png", PNG_1PX)]:
            sub.serve(path, Reply([data], headers=[("Content-Type", kind)]))
        yield sub


def report(dom: str) -> dict[str, object]:
    start = dom.index('<pre id="out">') + len('<pre id="out">')
    text = dom[start:dom.index("</pre>", start)]
    assert text, "the page's load handler did not run"
    value: dict[str, object] = json.loads(text.replace("&amp;", "&").replace("&lt;", "<")
                                          .replace("&gt;", ">"))
    return value


@pytest.mark.parametrize("upgrade", [True, False], ids=["https-upgrade", "control"])
def test_https_upgrade_in_chromium(tmp_path: Path, upgrade: bool) -> None:
    made = self_signed(tmp_path)
    if made is None:
        pytest.skip("neither the openssl command nor the cryptography package is there to "
                    "make a certificate")
    cert, key = made
    flags = (["--https-upgrade", "--https-hosts", "127.0.0.1", "--no-hsts-preload"] if upgrade
             else ["--on", "title", "--set-attr", "data-x=1"])     # a rewrite, no upgrade
    with https_origin(cert, key) as sub, Origin() as origin, \
            cli_proxy(origin.url(""), "--tls-cert", str(cert), "--tls-key", str(key),
                      *flags) as (proxy, log):
        assert proxy.startswith("https://127.0.0.1:")
        plain = f"http://127.0.0.1:{sub.port}"
        origin.serve("/page", Reply(trickled(upgrade_page(plain)), headers=HTML, delay=0.002))
        origin.serve("/favicon.ico", Reply([b""], status=404))
        wire = httpx.get(f"{proxy}/page", timeout=10, verify=client_context(cert)).content
        dom, browser_log = chromium(f"{proxy}/page", tmp_path / "profile")
    seen = report(dom)
    secure = f"https://127.0.0.1:{sub.port}"
    names = ["/app.js", "/bg.png", "/img.png", "/img2.png", "/style.css"]
    assert seen["secure"] is True           # the page itself came over HTTPS, via the proxy
    if upgrade:
        # Over the wire, only the link still says http:// (links are not upgraded by default).
        assert wire.count(plain.encode()) == 1 and f"href='{plain}/next'".encode() in wire
        assert seen["resources"] == [secure + name for name in names]
        assert seen["img"] == 1 and seen["srcset"] == 1 and seen["script"] is True
        assert seen["stylesheet"] == "rgb(1, 2, 3)"
        assert seen["background"] == f'url("{secure}/bg.png")'
        assert seen["link"] == f"{plain}/next"
        assert sorted(sub.requests) == names    # each fetched once, over TLS
        assert "Mixed Content" not in browser_log, browser_log[-3000:]
        assert any("rewritten" in line for line in log), log
    else:
        # The control: the same page unupgraded is mixed content; the browser blocks the
        # script and the stylesheet (and says so), and no http:// request is answered.
        assert wire.count(plain.encode()) == 6
        assert seen["script"] is False and seen["stylesheet"] != "rgb(1, 2, 3)"
        assert "Mixed Content" in browser_log
        assert "/app.js" not in sub.requests and "/style.css" not in sub.requests


# --------------------------------------------------------------------------- WebSockets

WS_PAGE = b"""<!DOCTYPE html><html><head><meta charset=utf-8><title>ws</title></head><body>
<pre id=out></pre>
<img src=/gate alt="">
<script>
const got = [];
const sock = new WebSocket(location.origin.replace(/^http/, 'ws') + '/ws', ['chat.v2']);
sock.binaryType = 'arraybuffer';
sock.onopen = () => { sock.send('h\\u00e9llo'); sock.send(new Uint8Array([1, 2, 3])); };
sock.onmessage = (e) => {
  got.push(typeof e.data === 'string' ? e.data : Array.from(new Uint8Array(e.data)).join());
  if (got.length === 2) sock.close(4000, 'done');
};
sock.onclose = (e) => {
  document.getElementById('out').textContent = JSON.stringify(
    {got, code: e.code, reason: e.reason, protocol: sock.protocol});
  fetch('/after');      // opens the gate: the image, and so the load event, come after this
};
</script></body></html>"""


def test_websocket_through_the_proxy_in_chromium(tmp_path: Path) -> None:
    from aiohttp import WSMsgType, web

    closes: list[tuple[int, str]] = []

    async def ws(request: web.Request) -> web.WebSocketResponse:
        sock = web.WebSocketResponse(protocols=("chat.v2",))
        await sock.prepare(request)
        async for msg in sock:
            if msg.type is WSMsgType.TEXT:
                await sock.send_str("echo " + msg.data)
            elif msg.type is WSMsgType.BINARY:
                await sock.send_bytes(msg.data[::-1])
        closes.append((sock.close_code or 0, ""))
        return sock

    # The page's load event (after which Chromium dumps the DOM) waits for /gate, which the
    # origin answers once the page asked for /after, when its WebSocket closed.
    after = threading.Event()

    async def gate(request: web.Request) -> web.Response:
        await asyncio.to_thread(after.wait, 20)
        return web.Response(body=PNG_1PX, content_type="image/png")

    async def after_(request: web.Request) -> web.Response:
        after.set()
        return web.Response(text="ok")

    with Origin(routes=[("GET", "/ws", ws), ("GET", "/gate", gate),
                        ("GET", "/after", after_)]) as origin, \
            cli_proxy(origin.url(""), "--on", "title", "--set-attr", "data-x=1") as (proxy, log):
        origin.serve("/ws-page", Reply([WS_PAGE], headers=HTML))
        origin.serve("/favicon.ico", Reply([b""], status=404))
        dom, _ = chromium(f"{proxy}/ws-page", tmp_path / "profile")
    seen = report(dom)
    assert seen == {"got": ["echo héllo", "3,2,1"], "code": 4000, "reason": "done",
                    "protocol": "chat.v2"}
    assert closes == [(4000, "")]
    assert any('"GET /ws HTTP/1.1" 101' in line and "closed by the client (4000)" in line
               for line in log), log
