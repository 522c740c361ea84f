"""``htmlstream proxy --metrics HOST:PORT``: the Prometheus endpoint, scraped for real over
loopback from the command in a subprocess (1 and 2 workers), its text exposition parsed.

With 2 workers, each request is sent on a new connection (the kernel spreads them over the
workers' sockets) and the figures must be the sums whichever worker answers the scrape; a
worker killed with SIGKILL is replaced, its counters kept (they never go down).
"""

from __future__ import annotations

import math
import os
import re
import signal
import sys
from collections.abc import Iterator

import pytest

pytest.importorskip("aiohttp")
httpx = pytest.importorskip("httpx")

from chunking import chunkings  # noqa: E402
from htmlstream.integrations.proxy_metrics import OUTCOMES, classify  # noqa: E402
from http_servers import Origin, Reply  # noqa: E402
from integration_servers import PAGE  # noqa: E402
from test_proxy_limits import CLI_EXPECTED, HTML, Command, until  # noqa: E402

LINUX = sys.platform.startswith("linux")
CUTS = chunkings(PAGE, random_splits=4, single_bytes=False, split_samples=4)[:8]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The samples of a Prometheus text exposition (format 0.0.4), checked as a scraper
    would: every sample belongs to a family whose TYPE came first, no sample twice, each
    histogram's buckets cumulative and its +Inf bucket equal to its count."""
    assert text.endswith("\n")
    types: dict[str, str] = {}
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram"), line
            assert name not in types, f"TYPE twice: {line}"
            types[name] = kind
            continue
        if line.startswith("#") or not line:
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        name, labels, value = match.groups()
        family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
        assert family in types, f"a sample before its TYPE: {line}"
        if types[family] == "counter":
            assert name.endswith("_total"), line
        pairs = frozenset(_LABEL.findall(labels or ""))
        key = (name, pairs)
        assert key not in samples, f"sample twice: {line}"
        samples[key] = float(value)
        assert not math.isnan(samples[key]) and samples[key] >= 0, line
    for family, kind in types.items():
        if kind != "histogram":
            continue
        buckets = sorted(((float(dict(k[1])["le"]), v) for k, v in samples.items()
                          if k[0] == f"{family}_bucket"))
        assert buckets and buckets[-1][0] == math.inf
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), f"{family}: buckets not cumulative"
        assert counts[-1] == samples[(f"{family}_count", frozenset())]
    return samples


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str,
          **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


@pytest.fixture
def origin() -> Iterator[Origin]:
    with Origin() as o:
        for i, cut in enumerate(CUTS):
            o.serve(f"/page/{i}", Reply(cut, headers=HTML))
        o.serve("/logo.png", Reply([PNG], headers=[("Content-Type", "image/png")]))
        o.serve("/part", Reply([PAGE[:100]], status=206, headers=[
            *HTML, ("Content-Range", f"bytes 0-99/{len(PAGE)}")]))
        yield o


class Metrics:
    def __init__(self, cmd: Command) -> None:
        assert cmd.proc.stdout is not None
        line = cmd.proc.stdout.readline().decode()
        assert "metrics on http://127.0.0.1:" in line, line
        self.url = line.split("metrics on ")[1].strip()

    def scrape(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        r = httpx.get(self.url, timeout=10)
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        return parse_exposition(r.text)


@pytest.mark.skipif(not LINUX, reason="workers share the port with SO_REUSEPORT")
@pytest.mark.parametrize(("workers", "loop"), [(1, "asyncio"), (1, "uvloop"), (2, "asyncio"),
                                               (2, "uvloop")])
def test_metrics_scraped(origin: Origin, workers: int, loop: str) -> None:
    """Every outcome counted once, the bytes both ways, the rewrite-time histogram, the open
    streams back to 0 and the limits' counters, summed over the workers; on either loop."""
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    with Command(origin.url(""), "--workers", str(workers), "--metrics", "127.0.0.1:0",
                 "--max-body-size", "1k", "--loop", loop) as cmd:
        assert cmd.banner.rstrip().endswith(f"({loop})"), cmd.banner
        metrics = Metrics(cmd)
        if workers > 1:
            assert until(lambda: len(cmd.workers()) == workers, 10)
        start = metrics.scrape()
        assert value(start, "htmlstream_proxy_workers") == workers
        assert value(start, "htmlstream_proxy_worker_starts_total") == workers
        for (outcome, reason) in [(o, r) for o, rs in OUTCOMES.items() for r in rs]:
            assert value(start, "htmlstream_proxy_requests_total", outcome=outcome,
                         reason=reason) == 0
        sent = 0
        rounds = 3
        for _ in range(rounds):
            for i in range(len(CUTS)):     # a new connection each: spread over the workers
                r = httpx.get(cmd.url(f"/page/{i}"), headers={"Connection": "close"})
                assert r.status_code == 200 and r.content == CLI_EXPECTED
                sent += len(r.content)
        for _ in range(3):
            r = httpx.get(cmd.url("/logo.png"), headers={"Connection": "close"})
            assert r.content == PNG
            sent += len(r.content)
        assert httpx.get(cmd.url("/part")).status_code == 502
        assert httpx.post(cmd.url("/upload"), content=b"x" * 4096).status_code == 413
        pages = rounds * len(CUTS)

        def settled() -> bool:
            s = metrics.scrape()
            return (value(s, "htmlstream_proxy_open_streams") == 0
                    and value(s, "htmlstream_proxy_requests_total", outcome="refused",
                              reason="max_body_size") == 1)

        assert until(settled, 10)
        for _ in range(4):      # whichever worker answers, the same sums
            s = metrics.scrape()
            assert value(s, "htmlstream_proxy_requests_total", outcome="rewritten",
                         reason="") == pages
            assert value(s, "htmlstream_proxy_requests_total", outcome="passed",
                         reason="not_html") == 3
            assert value(s, "htmlstream_proxy_requests_total", outcome="refused",
                         reason="range") == 1
            assert sum(v for (name, _), v in s.items()
                       if name == "htmlstream_proxy_requests_total") == pages + 5
            assert value(s, "htmlstream_proxy_sent_bytes_total") == sent
            # (the 206 was refused on its headers: none of its body was read)
            assert value(s, "htmlstream_proxy_upstream_bytes_total") == (
                pages * len(PAGE) + 3 * len(PNG))
            assert value(s, "htmlstream_proxy_rewrite_seconds_count") == pages
            assert 0 < value(s, "htmlstream_proxy_rewrite_seconds_sum") < pages * 5.0
            assert value(s, "htmlstream_proxy_connections_accepted_total") >= pages + 5
            assert value(s, "htmlstream_proxy_limit_actions_total",
                         limit="max_body_size") == 1
            assert value(s, "htmlstream_proxy_limit_actions_total",
                         limit="header_timeout") == 0
        if workers > 1:
            # A killed worker is replaced; the sums go on from where they were.
            os.kill(cmd.workers()[0], signal.SIGKILL)
            cmd.wait_line(r"started in place of the one that died")
            assert until(lambda: value(metrics.scrape(),
                                       "htmlstream_proxy_worker_starts_total") == 3, 10)
            r = httpx.get(cmd.url("/page/0"), headers={"Connection": "close"})
            assert r.content == CLI_EXPECTED
            assert until(lambda: value(metrics.scrape(), "htmlstream_proxy_requests_total",
                                       outcome="rewritten", reason="") == pages + 1, 10)
        assert httpx.get(metrics.url.replace("/metrics", "/other")).status_code == 404


def test_classify_bounded() -> None:
    """Every access-log note maps to one of the fixed pairs; the reasons ResponseRewrite
    gives map to their category, not to 'other'."""
    cases = {
        "rewritten": ("rewritten", ""),
        "passed: not HTML: Content-Type image/png": ("passed", "not_html"),
        "passed: 304 Not Modified: no body": ("passed", "no_body"),
        "passed: HEAD request": ("passed", "no_body"),
        "passed: Cache-Control: no-transform": ("passed", "no_transform"),
        "passed: Content-Disposition: attachment (a download)": ("passed", "attachment"),
        "passed: served as text/html but not HTML: a PDF": ("passed", "sniffed_not_html"),
        "passed: no Content-Type (and HttpOptions.sniff_missing is off)":
            ("passed", "no_content_type"),
        "refused": ("refused", "not_forwarded"),
        "refused: 206 Partial Content of a response that would be rewritten (text/html): "
        "a byte range of a page cannot be rewritten": ("refused", "range"),
        "refused: unknown content coding 'xz' of a response": ("refused", "content_coding"),
        "refused: body over max_body_size": ("refused", "max_body_size"),
        "aborted: the client went away": ("aborted", "client_gone"),
        "aborted: upstream read timeout": ("aborted", "upstream_timeout"),
        "aborted: upstream: Response payload is not completed": ("aborted", "upstream_error"),
        "closed: send timeout": ("aborted", "limit"),
        "upstream error: Cannot connect": ("failed", "upstream_unreachable"),
        "upstream timeout before the first byte": ("failed", "upstream_timeout"),
        "rewrite failed: boom": ("failed", "rewrite"),
        "websocket: 3 messages up, 2 down, closed by the client (1000)":
            ("websocket", "relayed"),
        "": ("other", ""),
        "something new": ("other", ""),
    }
    for note, expected in cases.items():
        outcome, reason = classify(note)
        assert (outcome, reason) == expected, note
        assert reason in OUTCOMES[outcome]


def test_loop_choice() -> None:
    """``--loop``: asyncio's own when asked; uvloop when asked or by default where it is
    installed; asked for and missing, an error rather than a quiet fallback."""
    from htmlstream.cli._common import CliError
    from htmlstream.cli.proxy import event_loop

    assert event_loop("asyncio") == ("asyncio", None)
    try:
        import uvloop
    except ImportError:
        assert event_loop(None) == ("asyncio", None)
        with pytest.raises(CliError, match="uvloop is not installed"):
            event_loop("uvloop")
        return
    assert event_loop(None) == ("uvloop", uvloop.new_event_loop)
    assert event_loop("uvloop") == ("uvloop", uvloop.new_event_loop)
