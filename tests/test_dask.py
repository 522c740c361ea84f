"""htmlstream.dask on a distributed.LocalCluster (two workers in-process, bounded, stopped by
the fixture): one task per WARC file, rows and per-file reports, failures counted not raised,
unless every file failed alike (then AllInputsFailed); output folders created."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastwarc")
pytest.importorskip("warcio")
pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")

import distributed

from htmlstream import AllInputsFailed, Rewriter
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


def test_extract_on_a_cluster(client: Any, warcs: list[Path], tmp_path: Path,
                              caplog: pytest.LogCaptureFixture) -> None:
    missing = tmp_path / "missing.warc.gz"
    not_warc = tmp_path / "x.warc"
    not_warc.write_bytes(b"<html>")
    fields = {"title": "title", "links": "a::attr(href)*"}
    job = extract_warcs([*warcs, missing, not_warc], fields)
    with caplog.at_level(logging.WARNING, logger="htmlstream.dask"):
        rows, reports = job.compute()
    # Some files failed: one summary line says so (the reports say which).
    [line] = [r.getMessage() for r in caplog.records if r.name == "htmlstream.dask"]
    assert line.startswith("2 of 6 WARC files failed: 1 FileNotFoundError, 1 ")
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
    written = job.to_parquet(tmp_path / "new" / "rows")     # (missing folders created)
    assert written == reports
    assert len(list((tmp_path / "new" / "rows").glob("*.parquet"))) == 6     # one per file
    table = pq.read_table(tmp_path / "new" / "rows")
    assert table.num_rows == len(expected)
    assert sorted(table.to_pylist(), key=repr) == sorted(expected, key=repr)


def test_rewrite_on_a_cluster(client: Any, warcs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out" / "rewritten"        # missing: created, with its parent
    reports = rewrite_warcs([*warcs, tmp_path / "missing.warc"], out, make_rewriter).compute()
    assert [r["rewritten"] for r in reports] == [3, 4, 5, 3, 0]
    assert reports[-1]["error"] is not None and reports[-1]["output"] is None
    for path, report in zip(warcs, reports, strict=False):
        ref = tmp_path / ("ref" + "".join(path.suffixes))
        rewrite_warc(path, ref, make_rewriter())
        assert split_records(Path(report["output"]).read_bytes()) == split_records(
            ref.read_bytes())


def test_every_file_failing_alike_raises(client: Any, warcs: list[Path], tmp_path: Path) -> None:
    # The first run of a new user, in the issue: nothing done must not look like success.
    missing = [tmp_path / f"missing{i}.warc.gz" for i in range(3)]
    job = rewrite_warcs(missing, tmp_path / "out", make_rewriter)
    with pytest.raises(AllInputsFailed, match=r"all 3 WARC files failed with FileNotFoundError"
                       ) as info:
        job.compute()
    assert info.value.count == 3 and "missing0.warc.gz" in info.value.first
    with pytest.raises(AllInputsFailed, match="all 3 WARC files failed"):
        extract_warcs(missing, {"title": "title"}).compute()
    with pytest.raises(AllInputsFailed, match="all 3 WARC files failed"):
        extract_warcs(missing, {"title": "title"}).to_parquet(tmp_path / "rows")

    def broken_factory() -> Rewriter:
        raise RuntimeError("no rules")

    with pytest.raises(AllInputsFailed, match="with RuntimeError; the first: RuntimeError: no"):
        rewrite_warcs(warcs, tmp_path / "out2", broken_factory).compute()
    assert list((tmp_path / "out2").iterdir()) == []     # (no half-written file left)
    # The bag itself is still there, without the rule, for those who compose it further.
    reports = rewrite_warcs(missing, tmp_path / "out", make_rewriter).reports.compute()
    assert [r["error"].split(":")[0] for r in reports] == ["FileNotFoundError"] * 3
