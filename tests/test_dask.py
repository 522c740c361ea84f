"""htmlstream.dask on a distributed.LocalCluster (two workers in-process, bounded, stopped by
the fixture): one task per WARC file, rows and per-file reports, failures counted not raised."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastwarc")
pytest.importorskip("warcio")
pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")

import distributed

from htmlstream import Rewriter
from htmlstream.dask import REPORT_COLUMNS, extract_warcs, rewrite_warcs
from htmlstream.warc import extract_warc, rewrite_warc
from warc_files import make_warc, split_records


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def warcs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("warcs")
    files = [make_warc(root / f"f{i}.warc.gz", pages=1 + i) for i in range(3)]
    files.append(make_warc(root / "plain.warc", gzip=False, pages=1))
    return files


def make_rewriter() -> Rewriter:
    rw = Rewriter()
    rw.on("a[href]", element=lambda el: el.set_attribute("rel", "noopener"))
    return rw


def test_extract_on_a_cluster(client: Any, warcs: list[Path], tmp_path: Path) -> None:
    missing = tmp_path / "missing.warc.gz"
    not_warc = tmp_path / "x.warc"
    not_warc.write_bytes(b"<html>")
    fields = {"title": "title", "links": "a::attr(href)*"}
    job = extract_warcs([*warcs, missing, not_warc], fields)
    rows, reports = job.compute()
    expected = [{"warc_file": str(p), **row} for p in warcs for row in extract_warc(p, fields)]
    assert sorted(rows, key=repr) == sorted(expected, key=repr)
    assert [r["warc_file"] for r in reports] == [str(p) for p in [*warcs, missing, not_warc]]
    assert all(set(r) == set(REPORT_COLUMNS) for r in reports)
    assert [r["extracted"] for r in reports] == [3, 4, 5, 3, 0, 0]
    assert reports[-2]["error"].startswith("FileNotFoundError")
    assert "not a WARC" in reports[-1]["error"]
    frame = job.dataframe().compute()
    assert list(frame.columns) == ["warc_file", "url", "date", "title", "links"]
    assert len(frame) == len(expected)
    pq = pytest.importorskip("pyarrow.parquet")
    job.to_parquet(tmp_path / "rows")
    assert len(list((tmp_path / "rows").glob("*.parquet"))) == 6     # one per file
    table = pq.read_table(tmp_path / "rows")
    assert table.num_rows == len(expected)
    assert sorted(table.to_pylist(), key=repr) == sorted(expected, key=repr)


def test_rewrite_on_a_cluster(client: Any, warcs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    reports = rewrite_warcs([*warcs, tmp_path / "missing.warc"], out, make_rewriter).compute()
    assert [r["rewritten"] for r in reports] == [3, 4, 5, 3, 0]
    assert reports[-1]["error"] is not None and reports[-1]["output"] is None
    for path, report in zip(warcs, reports, strict=False):
        ref = tmp_path / ("ref" + "".join(path.suffixes))
        rewrite_warc(path, ref, make_rewriter())
        assert split_records(Path(report["output"]).read_bytes()) == split_records(
            ref.read_bytes())
