"""The programs of examples/ run, as a user would run them, on loopback and without network, in
bounded time (issue 37): each app served by a real server (uvicorn, waitress, Django's WSGI
handler under waitress in a process of its own), the proxy example as a process stopped by
SIGTERM, the scraper against a server of the test's own, the Dask job on a local cluster in a
process of its own.  Every example starts with a docstring of five lines or fewer that says what
it shows and how to run it.  (The Spark example has its own test, tests/test_spark_example.py.)
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import selectors
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from chunking import chunkings, feed_bytes
from integration_servers import uvicorn_server, waitress_server

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: The longest any example's process may run here.
PROCESS_TIMEOUT = 120.0


def load(relative: str) -> ModuleType:
    """Import an example from its file (examples/ is no package)."""
    path = EXAMPLES / relative
    name = "example_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def env() -> dict[str, str]:
    """The environment of an example's process: this checkout's tests/ importable."""
    paths = [str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


# ---------------------------------------------------------------------------- every example

PROGRAMS = sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*.py"))


@pytest.mark.parametrize("relative", PROGRAMS)
def test_starts_with_a_short_docstring_saying_how_to_run_it(relative: str) -> None:
    source = (EXAMPLES / relative).read_text(encoding="utf-8")
    match = re.match(r'"""(.*?)"""', source, re.S)
    assert match is not None, f"{relative} has no module docstring"
    lines = match.group(1).strip("\n").splitlines()
    assert 1 <= len(lines) <= 5, f"{relative}: a docstring of {len(lines)} lines"
    assert re.search(rf"(python|spark-submit) .*examples/{re.escape(relative)}",
                     match.group(1)), f"{relative}: the docstring does not say how to run it"


def test_every_example_is_tested_and_linked() -> None:
    readme = ROOT.joinpath("README.md").read_text(encoding="utf-8")
    index = EXAMPLES.joinpath("README.md").read_text(encoding="utf-8")
    assert set(PROGRAMS) == set(TESTS), "an example without its test (TESTS, at the end)"
    for relative in PROGRAMS:
        assert f"]({relative})" in index, f"examples/README.md does not link {relative}"
    assert "examples/README.md" in readme


# ---------------------------------------------------------------------------- Starlette

def test_starlette_app() -> None:
    import httpx

    example = load("starlette_app.py")
    with uvicorn_server(example.app) as base, httpx.Client(base_url=base, timeout=10) as client:
        for path in ("/", "/stream"):
            response = client.get(path)
            assert response.status_code == 200
            body = response.text
            nonce = re.search(r'<script nonce="([^"]+)"', body)
            assert nonce is not None, body
            if path == "/":     # the app's own policy, with the response's nonce added
                assert response.headers["content-security-policy"] == (
                    f"script-src 'self' 'nonce-{nonce.group(1)}'")
            assert 'src="https://cdn.example.com/logo.png"' in body
            assert 'href="https://docs.example.com/start"' in body
            assert 'href="http://elsewhere.example.org/"' in body     # not a known host
        second = client.get("/").text
        assert re.search(r'nonce="([^"]+)"', second).group(1) != nonce.group(1)  # type: ignore[union-attr]
        api = client.get("/api")
        assert api.json()["html"].startswith("<a href='http://docs")     # JSON: untouched
    # The page rewritten in any chunking gives the same output (the nonce fixed).
    page = example.PAGE.encode()
    outputs = {feed_bytes(lambda: example.REWRITER.stream(context={"csp_nonce": "abc"}), chunks)
               for chunks in chunkings(page)}
    assert len(outputs) == 1 and b'<script nonce="abc">' in outputs.pop()


# ---------------------------------------------------------------------------- Flask

def test_flask_comment_box() -> None:
    pytest.importorskip("flask")
    import httpx

    example = load("flask_comments.py")
    evil = ('<p onclick="steal()">Nice <b>post</b> <a href="javascript:alert(1)">x</a> '
            '<a href="https://example.org/" target=_blank>link</a></p><script>alert(1)</script>'
            '<img src=x onerror=alert(1)><style>body{display:none}</style>')
    with waitress_server(example.app) as base, httpx.Client(base_url=base, timeout=10) as client:
        posted = client.post("/comments", data={"name": "<i>Mallory</i>", "body": evil})
        assert posted.status_code == 303
        page = client.get("/").text
    [comment] = re.findall(r"<li>(.*?)</li>", page, re.S)
    assert comment == ("<b>&lt;i&gt;Mallory&lt;/i&gt;</b>: <p>Nice <b>post</b> "
                       '<a rel="noopener noreferrer">x</a> <a href="https://example.org/" '
                       'rel="noopener noreferrer">link</a></p>')
    # (what is stored does not depend on how the body arrived)
    from htmlstream import Rewriter, recipes

    sanitizer = Rewriter().use(recipes.sanitize(example.POLICY))
    outputs = {feed_bytes(sanitizer.stream, chunks) for chunks in chunkings(evil.encode())}
    assert len(outputs) == 1


# ---------------------------------------------------------------------------- Django

DJANGO_CLIENT = """
import json, os, sys, threading, urllib.request
sys.path.insert(0, sys.argv[1])
os.environ["DJANGO_SETTINGS_MODULE"] = "django_site"
from django.core.wsgi import get_wsgi_application
from integration_servers import waitress_server
with waitress_server(get_wsgi_application()) as base:
    with urllib.request.urlopen(base + "/", timeout=10) as response:
        print(json.dumps({"status": response.status,
                          "csp": response.headers["Content-Security-Policy"],
                          "body": response.read().decode()}))
"""


def test_django_site() -> None:
    pytest.importorskip("django")
    pytest.importorskip("waitress")
    # Django's settings are process-wide: the project runs in a process of its own.
    done = subprocess.run([sys.executable, "-c", DJANGO_CLIENT, str(EXAMPLES)], env=env(),
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    body = result["body"]
    nonce = re.search(r'<script nonce="([^"]+)">', body).group(1)  # type: ignore[union-attr]
    assert result["csp"] == f"default-src 'self'; script-src 'self' 'nonce-{nonce}'"
    assert '<img src=/photo.jpg alt=photo loading="lazy">' in body
    assert '<a href=https://www.djangoproject.com/ rel="noopener noreferrer">' in body
    assert "<a href=/about>About</a>" in body


# ---------------------------------------------------------------------------- the proxy

@pytest.fixture
def proxy_process() -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "proxy" / "run.py"), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=PROCESS_TIMEOUT / 4)
        line = process.stdout.readline() if ready else ""
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line)
        assert match is not None, (line, process.poll())
        yield process, match.group(1)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()


def test_proxy_in_front_of_a_static_site(
        proxy_process: tuple[subprocess.Popen[str], str]) -> None:
    import httpx

    process, base = proxy_process
    page = httpx.get(base + "/", timeout=10).text
    nonce = re.search(r'<script nonce="([^"]+)">', page).group(1)  # type: ignore[union-attr]
    assert f"content=\"script-src 'self' 'nonce-{nonce}'\"" in page
    assert '<img src="https://static.example.com/photo.jpg" alt="a photo" loading="lazy">' in page
    assert '<a href="https://www.example.com/about">' in page
    assert '<a href="http://other.example.org/">' in page
    assert page.index('<aside id="banner">') > page.index("Elsewhere</a>")
    assert httpx.get(base + "/missing.html", timeout=10).status_code == 404
    process.send_signal(signal.SIGTERM)       # stops by itself: in-flight requests finish
    assert process.wait(timeout=30) == 0


def test_proxy_unit_file_has_the_example_flags() -> None:
    from htmlstream.cli import build_parser

    example = load("proxy/run.py")
    unit = (EXAMPLES / "proxy" / "htmlstream-proxy.service").read_text(encoding="utf-8")
    [exec_start] = re.findall(r"^ExecStart=(.*)$", unit, re.M)
    command = shlex.split(exec_start)
    assert command[:2] == ["/opt/htmlstream/bin/htmlstream", "proxy"]
    assert command[2:4] == ["--upstream", "http://127.0.0.1:8081"]
    assert command[4] == "--listen"
    flags = [str(example.HERE / "banner.html") if f == "/etc/htmlstream/banner.html" else f
             for f in command[6:]]
    assert flags == example.FLAGS
    args = build_parser().parse_args(command[1:])     # every flag is one the proxy takes
    assert args.upstream == "http://127.0.0.1:8081" and args.listen == ("0.0.0.0", 8080)


# ---------------------------------------------------------------------------- the scraper

def test_scraper(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("httpx")
    pytest.importorskip("protego")
    from scrape_server import FaultServer, page, send

    example = load("scraper.py")
    with FaultServer() as server:
        @server.route("/robots.txt")
        async def robots(request: Any, writer: asyncio.StreamWriter) -> bool:
            return await send(writer, 200, b"User-agent: *\nDisallow: /private\n",
                              [("Content-Type", "text/plain")])

        @server.route("/a")
        async def a(request: Any, writer: asyncio.StreamWriter) -> bool:
            return await send(writer, 200, page("A", '<a href="/b">B</a><a href="/c">C</a>'))

        @server.route("/b")
        async def b(request: Any, writer: asyncio.StreamWriter) -> bool:
            return await send(writer, 200, page("B", "<h1>Bee</h1><p>" + "x" * 100_000))

        @server.route("/flaky")     # busy once: retried after its Retry-After
        async def flaky(request: Any, writer: asyncio.StreamWriter) -> bool:
            if server.count("flaky") == 1:
                return await send(writer, 503, b"busy", [("Retry-After", "0")])
            return await send(writer, 200, page("Flaky", '<a href="/private/x">P</a>'))

        @server.route("/private/x")
        async def private(request: Any, writer: asyncio.StreamWriter) -> bool:
            return await send(writer, 200, page("Private"))

        urls = tmp_path / "urls.txt"
        urls.write_text("# pages\n" + "\n".join(
            server.url(p) for p in ("/a", "/flaky", "/private/x")) + "\n", encoding="utf-8")
        status = example.main([str(urls), "--retries", "2", "--timeout", "10"])
        paths = server.paths()
    records = {r["url"].rsplit(":", 1)[1].split("/", 1)[1]: r
               for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert status == 1       # one page failed (robots.txt)
    assert records["a"]["title"] == "A" and records["a"]["links"] == ["/b", "/c"]
    assert records["a"]["first_link"] == {"url": server.url("/b"), "h1": "Bee"}
    assert records["flaky"]["title"] == "Flaky" and records["flaky"]["error"] is None
    assert records["flaky"]["first_link"]["error"].startswith("robots: ")
    assert records["private/x"]["error"].startswith("robots")
    assert paths.count("/robots.txt") >= 1 and "/private/x" not in paths
    assert paths.count("/flaky") == 2


# ---------------------------------------------------------------------------- Dask

def test_dask_warc_to_parquet(tmp_path: Path) -> None:
    pytest.importorskip("fastwarc")
    pytest.importorskip("warcio")
    pytest.importorskip("distributed")
    pq = pytest.importorskip("pyarrow.parquet")
    from warc_files import make_warc

    warcs = [make_warc(tmp_path / "a.warc.gz", pages=2), make_warc(tmp_path / "b.warc",
                                                                   gzip=False, pages=1)]
    out = tmp_path / "new" / "rows"
    done = subprocess.run([sys.executable, str(EXAMPLES / "dask_warc_to_parquet.py"), str(out),
                           *map(str, warcs)], env=env(), capture_output=True, text=True,
                          timeout=PROCESS_TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{warcs[0]}: 4 rows", f"{warcs[1]}: 3 rows"]
    table = pq.read_table(out)
    assert table.num_rows == 7
    assert set(table.column_names) == {"warc_file", "url", "date", "title", "links", "lang"}
    # Every file missing: the job raises (nothing done is no success).
    failed = subprocess.run([sys.executable, str(EXAMPLES / "dask_warc_to_parquet.py"),
                             str(tmp_path / "out2"), str(tmp_path / "missing.warc.gz")],
                            env=env(), capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    assert failed.returncode == 1
    assert "AllInputsFailed: 1 of 1 WARC files failed with FileNotFoundError" in failed.stderr


# ---------------------------------------------------------------------------- async handlers

def test_async_lookup(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    example = load("async_lookup.py")
    expected = example.PAGE.replace(
        b'href="/u/ada">ada</a>', b'href="/u/ada" title="Ada Lovelace">Ada Lovelace</a>'
    ).replace(b'href="/u/alan">alan</a>',
              b'href="/u/alan" title="Alan Turing">Alan Turing</a>')
    for chunks in chunkings(example.PAGE, single_bytes=False, random_splits=4):
        assert asyncio.run(example.rewrite(chunks)) == expected
    page = tmp_path / "team.html"
    page.write_bytes(example.PAGE)
    assert example.main([str(page)]) == 0
    assert capsysbinary.readouterr().out == expected
    with pytest.raises(TypeError, match="async"):    # (the sync entry points refuse it)
        example.make_rewriter().rewrite(example.PAGE)


# ---------------------------------------------------------------------------- ESI

def test_esi_page() -> None:
    pytest.importorskip("aiohttp")
    example = load("esi_page.py")
    page, _seconds = asyncio.run(example.assemble())
    text = page.decode("utf-8")
    parts = ["<header>Welcome back</header>", "<main><article>Today's story</article></main>",
             "<footer>(c) the newsroom</footer>"]
    assert [text.index(p) for p in parts] == sorted(text.index(p) for p in parts)
    assert "esi:" not in text and "Shown only where" not in text


# ---------------------------------------------------------------------------- Markdown

def test_markdown_for_llm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from warc_files import make_warc

    example = load("markdown_for_llm.py")
    article = (b"<!DOCTYPE html><html lang=en><title>T</title><meta name=author content=Ada>"
               b"<nav><a href=/>Home</a></nav><article><h1>Title</h1><p>First *point*, "
               b"with a <a href=/more>link</a>.</p><ul><li>one<li>two</ul></article>")

    def app(environ: dict[str, Any], start: Any) -> list[bytes]:
        start("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [article]

    with waitress_server(app) as url:
        record = example.from_url(url + "/story")
    assert record["title"] == "T" and record["byline"] == "Ada" and record["language"] == "en"
    assert "Title" in record["markdown"] and "Home" not in record["markdown"]
    assert "First \\*point\\*" in record["markdown"]
    assert f"[link]({url}/more)" in record["markdown"] and "- one" in record["markdown"]
    warc = make_warc(tmp_path / "crawl.warc.gz")
    assert example.main([str(warc)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(r["url"] for r in rows)
    converted = [r for r in rows if r["markdown"]]
    assert converted and all(isinstance(r["markdown"], str) for r in converted)


#: Each example and the test that runs it.
TESTS = {
    "starlette_app.py": test_starlette_app,
    "flask_comments.py": test_flask_comment_box,
    "django_site.py": test_django_site,
    "proxy/run.py": test_proxy_in_front_of_a_static_site,
    "scraper.py": test_scraper,
    "dask_warc_to_parquet.py": test_dask_warc_to_parquet,
    "async_lookup.py": test_async_lookup,
    "esi_page.py": test_esi_page,
    "markdown_for_llm.py": test_markdown_for_llm,
    "spark_extract.py": "tests/test_spark_example.py",
}
