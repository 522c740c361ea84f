"""Extraction over WARC files: records per second per core with htmlstream.warc, next to the
same job with selectolax and with BeautifulSoup (lxml) on the same reader; the readers alone
(FastWARC and warcio: decompression and record parsing); rewriting; and htmlstream.dask on 1 and
2 worker processes.

    .venv/bin/python benchmarks/bench_warc.py [--records N] [--repeat N] [--no-dask]

The WARC is made from the corpus (``tests/data/corpus/*.html`` or ``$HTMLSTREAM_CORPUS``): N
request/response pairs cycling over its pages, gzipped per record, in a temporary folder.  The
job extracts the title and every ``a[href]`` of each HTML response.  Each figure is the best of
``--repeat`` runs in this process (one core); the Dask figures are one run each, cluster start
excluded.  BeautifulSoup parses only the first 20 records (it is slow on these pages).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIELDS = {"title": "title", "links": "a::attr(href)*"}


def corpus() -> list[bytes]:
    env = os.environ.get("HTMLSTREAM_CORPUS")
    root = Path(env) if env else ROOT / "tests" / "data" / "corpus"
    return [p.read_bytes() for p in sorted(root.glob("*.html"))]


def make_warc(path: Path, pages: list[bytes], records: int) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as file:
        writer = WARCWriter(file, gzip=True)
        for i in range(records):
            body = pages[i % len(pages)]
            uri = f"http://example.com/{i}"
            writer.write_record(writer.create_warc_record(
                uri, "request", payload=io.BytesIO(b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")))
            writer.write_record(writer.create_warc_record(
                uri, "response", payload=io.BytesIO(body), http_headers=StatusAndHeaders(
                    "200 OK", [("Content-Type", "text/html; charset=utf-8"),
                               ("Content-Length", str(len(body)))], protocol="HTTP/1.1")))


def html_payloads(path: Path) -> Any:
    """(url, payload) of each HTML response, read with FastWARC (the reader htmlstream uses)."""
    from fastwarc import ArchiveIterator, WarcRecordType

    with open(path, "rb") as file:
        for record in ArchiveIterator(file, record_types=WarcRecordType.response,
                                      auto_decode="all"):
            if "html" in (record.http_content_type or ""):
                yield record.headers.get("WARC-Target-URI"), record.reader.read()


# --------------------------------------------------------------------------- the jobs


def job_htmlstream(path: Path) -> int:
    from htmlstream.warc import extract_warc

    return sum(1 for _ in extract_warc(path, FIELDS))


def job_selectolax(path: Path) -> int:
    from selectolax.lexbor import LexborHTMLParser

    n = 0
    for _, payload in html_payloads(path):
        tree = LexborHTMLParser(payload)
        title = tree.css_first("title")
        _ = (title.text() if title is not None else None,
             [a.attributes.get("href") for a in tree.css("a[href]")])
        n += 1
    return n


#: BeautifulSoup is slow on these large pages: it parses the first records only.
BS4_RECORDS = 20


def job_bs4(path: Path) -> int:
    from bs4 import BeautifulSoup

    n = 0
    for _, payload in html_payloads(path):
        if n == BS4_RECORDS:
            break
        soup = BeautifulSoup(payload, "lxml")
        _ = (soup.title.get_text() if soup.title else None,
             [a["href"] for a in soup.select("a[href]")])
        n += 1
    return n


def read_fastwarc(path: Path) -> int:
    return sum(1 for _ in html_payloads(path))


def read_warcio(path: Path) -> int:
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    with open(path, "rb") as file:
        for record in ArchiveIterator(file):
            if record.rec_type == "response":
                record.content_stream().read()
                n += 1
    return n


def job_rewrite(path: Path) -> int:
    from htmlstream import Rewriter
    from htmlstream.warc import rewrite_warc

    rw = Rewriter()
    rw.on("a[href]", element=lambda el: el.set_attribute("rel", "noopener"))
    with tempfile.TemporaryDirectory() as tmp:
        return rewrite_warc(path, Path(tmp) / "out.warc.gz", rw).rewritten


def best(fn: Callable[[Path], int], path: Path, repeat: int) -> tuple[int, float]:
    fn(path)    # warm-up (imports, page cache)
    times = []
    n = 0
    for _ in range(repeat):
        start = time.perf_counter()
        n = fn(path)
        times.append(time.perf_counter() - start)
    return n, min(times)


def bench_dask(paths: list[Path], workers: int, out: Path) -> tuple[int, float, float]:
    """Rows, seconds with the rows gathered to the client, seconds with them written to
    Parquet by the workers."""
    from dask.distributed import Client, LocalCluster

    from htmlstream.dask import extract_warcs

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        client.run(lambda: __import__("htmlstream.warc"))        # warm the workers
        from dask.distributed import get_task_stream

        with get_task_stream() as stream:
            start = time.perf_counter()
            rows, reports = extract_warcs(paths, FIELDS).compute()
            gathered = time.perf_counter() - start
        busy = sum(part["stop"] - part["start"] for task in stream.data
                   for part in task["startstops"] if part["action"] == "compute")
        print(f"  ({workers} worker(s): tasks computed for {busy:.2f} s in {gathered:.2f} s of "
              f"wall time: parallelism {busy / gathered:.2f})")
        start = time.perf_counter()
        extract_warcs(paths, FIELDS).to_parquet(out / f"rows{workers}")
        written = time.perf_counter() - start
    assert all(r["error"] is None for r in reports)
    return len(rows), gathered, written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300, help="responses in the WARC")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int, default=4, help="WARC files for the Dask runs")
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--dask-only", action="store_true")
    args = parser.parse_args(argv)
    pages = corpus()
    if not pages:
        print("no corpus", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.warc.gz"
        make_warc(path, pages, args.records)
        size = sum(len(pages[i % len(pages)]) for i in range(args.records))
        print(f"WARC: {args.records} HTML responses (+ as many requests) from {len(pages)} "
              f"corpus pages, {size / 1e6:.1f} MB of HTML, {path.stat().st_size / 1e6:.1f} MB "
              f"gzipped per record; best of {args.repeat}, one core")
        jobs: list[tuple[str, Callable[[Path], int]]] = [
            ("read only: FastWARC", read_fastwarc),
            ("read only: warcio", read_warcio),
            ("extract: htmlstream", job_htmlstream),
            ("extract: selectolax (lexbor)", job_selectolax),
            ("extract: bs4 (lxml)", job_bs4),
            ("rewrite: htmlstream", job_rewrite),
        ]
        print(f"{'job':<30} {'records/s':>10} {'MB/s':>8}")
        for name, fn in [] if args.dask_only else jobs:
            try:
                n, elapsed = best(fn, path, args.repeat)
            except ImportError as exc:
                print(f"{name:<30} {'n/a':>10}  ({exc})")
                continue
            done = sum(len(pages[i % len(pages)]) for i in range(n))
            print(f"{name:<30} {n / elapsed:>10.1f} {done / elapsed / 1e6:>8.1f}")
        if not args.no_dask:
            paths = []
            for i in range(args.files):
                copy = Path(tmp) / f"part{i}.warc.gz"
                copy.write_bytes(path.read_bytes())
                paths.append(copy)
            for workers in (1, 2):
                n, gathered, written = bench_dask(paths, workers, Path(tmp))
                print(f"dask extract, {workers} worker(s): {n / gathered:.0f} records/s with "
                      f"the rows gathered, {n / written:.0f} records/s written to Parquet by "
                      f"the workers ({len(paths)} files, {n} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
