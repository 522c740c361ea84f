"""Extract the title, links and language of every HTML page in WARC files into Parquet, one task
per file on a Dask cluster (a local one unless --scheduler names one): htmlstream.dask.
A file that fails is reported; if every file fails alike, the job raises.

    python examples/dask_warc_to_parquet.py out/ crawl/*.warc.gz [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

FIELDS = {"title": "title", "links": "a::attr(href)*", "lang": "html::attr(lang)"}


def run(paths: list[str], output: str, *, workers: int = 2,
        scheduler: str | None = None) -> list[dict[str, Any]]:
    """Write ``output/part.<i>.parquet`` (one per WARC file); the per-file reports."""
    from dask.distributed import Client, LocalCluster

    from htmlstream.dask import extract_warcs

    if scheduler is not None:
        with Client(scheduler):
            return list(extract_warcs(paths, FIELDS).to_parquet(output))
    # threads, no dashboard: nothing listens beyond the scheduler on loopback
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster):
        return list(extract_warcs(paths, FIELDS).to_parquet(output))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="the Parquet folder (created if missing)")
    parser.add_argument("warcs", nargs="+", help="WARC files (.warc or .warc.gz)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scheduler", help="a Dask scheduler's address (default: local)")
    args = parser.parse_args(argv)
    reports = run(args.warcs, args.output, workers=args.workers, scheduler=args.scheduler)
    for report in reports:
        status = report["error"] or f"{report['extracted']} rows"
        print(f"{report['warc_file']}: {status}")
    return 1 if any(report["error"] for report in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
