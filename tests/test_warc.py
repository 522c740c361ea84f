"""htmlstream.warc and ``htmlstream warc``: HTML responses rewritten (payload equal to the
standalone rewrite, at every chunk size), every other record byte for byte, digests verified by
warcio and FastWARC, bad records skipped, extraction rows."""

from __future__ import annotations

import gzip as gzip_module
import io
import json
import logging
from pathlib import Path

import pytest

pytest.importorskip("fastwarc")
pytest.importorskip("warcio")

from htmlstream import AllInputsFailed, Rewriter
from htmlstream.cli import main
from htmlstream.warc import BadRecord, WarcError, WarcReport, extract_warc, rewrite_warc
from warc_files import (
    PAGES,
    SMALL,
    make_warc,
    members,
    record_parts,
    split_records,
)

CHUNK_SIZES = [1, 7, 100, 1024, 4096, 65536]
HTML_URIS = {"http://example.com/0", "http://example.com/1", "http://example.com/2",
             "http://example.com/chunked", "http://example.com/gzip"}


def rewriter() -> Rewriter:
    rw = Rewriter()
    rw.on("a[href]", element=lambda el: el.set_attribute("rel", "noopener"))
    rw.on("title", text=lambda t: t.replace(t.text.upper()))
    return rw


def verify_digests(path: Path) -> int:
    """Read every record with warcio (digests checked, raising) and FastWARC (verified)."""
    from fastwarc import ArchiveIterator
    from warcio.archiveiterator import ArchiveIterator as WarcioIterator

    count = 0
    with open(path, "rb") as file:
        for record in WarcioIterator(file, check_digests="raise"):
            record.content_stream().read()
            count += 1
    with open(path, "rb") as file:
        for rec in ArchiveIterator(file, parse_http=False):
            if rec.headers.get("WARC-Block-Digest"):
                assert rec.verify_block_digest(), rec.headers.get("WARC-Target-URI")
    with open(path, "rb") as file:
        for rec in ArchiveIterator(file, parse_http=True):
            if rec.headers.get("WARC-Type") == "response" and rec.headers.get(
                    "WARC-Payload-Digest"):
                assert rec.verify_payload_digest(), rec.headers.get("WARC-Target-URI")
    return count


@pytest.fixture(scope="module", params=[True, False], ids=["gzip", "plain"])
def warc_in(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    gz = request.param
    return make_warc(tmp_path_factory.mktemp("warc") / ("in.warc.gz" if gz else "in.warc"),
                     gzip=gz)


def by_uri(records: list[bytes]) -> dict[tuple[str, str], bytes]:
    out = {}
    for rec in records:
        headers, _, _ = record_parts(rec)
        out[(headers["warc-type"], headers.get("warc-target-uri", ""))] = rec
    return out


def expected_body(uri: str, rw: Rewriter) -> bytes:
    if uri == "http://example.com/chunked":
        return rw.rewrite(SMALL * 20)
    if uri == "http://example.com/gzip":
        return rw.rewrite(SMALL * 20)
    return rw.rewrite(PAGES[int(uri.rsplit("/", 1)[1]) % len(PAGES)].read_bytes())


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_rewrite_every_chunk_size(warc_in: Path, tmp_path: Path, chunk_size: int) -> None:
    out = tmp_path / ("out.warc.gz" if warc_in.suffix == ".gz" else "out.warc")
    rw = rewriter()
    report = rewrite_warc(warc_in, out, rw, chunk_size=chunk_size)
    assert report.rewritten == 5 and report.bad_records == [] and report.failed == 0
    assert report.records == report.rewritten + report.copied
    assert verify_digests(out) == report.records
    before = by_uri(split_records(warc_in.read_bytes()))
    after = by_uri(split_records(out.read_bytes()))
    assert list(before) == list(after)                 # same records, same order
    for key, rec in after.items():
        kind, uri = key
        if kind == "response" and uri in HTML_URIS:
            headers, http_head, body = record_parts(rec)
            old_headers, _, _ = record_parts(before[key])
            lines = http_head.split(b"\r\n")
            names = [line.split(b":")[0].lower() for line in lines[1:]]
            assert b"transfer-encoding" not in names
            if uri.endswith("gzip"):
                assert b"content-encoding" in names
                body = gzip_module.decompress(body)
            assert body == expected_body(uri, rw)
            length = [line for line in lines if line.lower().startswith(b"content-length:")]
            assert len(length) == 1 and int(length[0].split(b":")[1]) == len(record_parts(
                rec)[2])
            # The WARC headers kept, the record id too; length and digests recomputed.
            assert headers["warc-record-id"] == old_headers["warc-record-id"]
            assert headers["warc-payload-digest"] != old_headers["warc-payload-digest"]
        else:
            assert rec == before[key], key              # byte for byte
    if warc_in.suffix == ".gz":
        # Copied records keep their gzip member as it was.
        assert len(set(members(warc_in.read_bytes())) & set(members(out.read_bytes()))) \
            == report.copied


def test_gzip_level(warc_in: Path, tmp_path: Path) -> None:
    fast, small = tmp_path / "fast.warc.gz", tmp_path / "small.warc.gz"
    rewrite_warc(warc_in, fast, rewriter(), gzip_level=1)
    rewrite_warc(warc_in, small, rewriter(), gzip_level=9)
    assert split_records(fast.read_bytes()) == split_records(small.read_bytes())
    assert verify_digests(fast) == verify_digests(small)
    assert main(["warc", "rewrite", str(warc_in), "-o", str(tmp_path / "cli.warc.gz"),
                 "--gzip-level", "1", "--on", "a[href]", "--set-attr", "rel=noopener"]) == 0
    assert verify_digests(tmp_path / "cli.warc.gz") == verify_digests(fast)


def test_rewrite_plain_to_gzip_and_back(warc_in: Path, tmp_path: Path) -> None:
    other = tmp_path / ("x.warc" if warc_in.suffix == ".gz" else "x.warc.gz")
    report = rewrite_warc(warc_in, other, rewriter())
    assert (other.read_bytes()[:2] == b"\x1f\x8b") == (other.suffix == ".gz")
    assert verify_digests(other) == report.records
    same = tmp_path / ("same" + "".join(warc_in.suffixes))
    rewrite_warc(warc_in, same, rewriter())
    assert split_records(other.read_bytes()) == split_records(same.read_bytes())


def test_rewrite_from_a_pipe_and_to_a_file_object(warc_in: Path, tmp_path: Path) -> None:
    out = io.BytesIO()
    with open(warc_in, "rb") as file:
        data = file.read()
    report = rewrite_warc(io.BufferedReader(io.BytesIO(data)), out, rewriter(),  # type: ignore[arg-type]
                          gzip=warc_in.suffix == ".gz")
    ref = tmp_path / ("ref" + "".join(warc_in.suffixes))
    rewrite_warc(warc_in, ref, rewriter())
    assert split_records(out.getvalue()) == split_records(ref.read_bytes())
    assert report.rewritten == 5


def test_nothing_changed_keeps_the_payload(warc_in: Path, tmp_path: Path) -> None:
    out = tmp_path / ("out" + "".join(warc_in.suffixes))
    report = rewrite_warc(warc_in, out, Rewriter())
    assert verify_digests(out) == report.records
    before = by_uri(split_records(warc_in.read_bytes()))
    for key, rec in by_uri(split_records(out.read_bytes())).items():
        if key[0] == "response" and key[1].endswith(("/0", "/1", "/2")):
            assert record_parts(rec)[2] == record_parts(before[key])[2]


def _corrupt(data: bytes, kind: str, gz: bool) -> tuple[bytes, int]:
    """The WARC with one record damaged, and that record's index (among the records)."""
    parts = members(data) if gz else split_records(data)
    index = 4          # the response of page 1
    if kind == "bytes":
        bad = parts[index]
        middle = len(bad) // 2
        parts[index] = bad[:middle] + bytes(40) + bad[middle + 40:]
    elif kind == "truncated":
        parts[index] = parts[index][: len(parts[index]) // 2]
    elif kind == "junk":
        parts.insert(index, b"junk between records\r\n")
        index = -1
    elif kind == "end":
        parts[-1] = parts[-1][:-30]
        index = len(parts) - 1
    return b"".join(parts), index


@pytest.mark.parametrize(("kind", "gz"), [
    ("bytes", True), ("truncated", True), ("junk", True), ("end", True),
    # (corrupt bytes inside a plain record cannot be seen: no checksum is verified)
    ("truncated", False), ("junk", False), ("end", False)])
def test_bad_records_are_reported_and_skipped(tmp_path: Path, kind: str, gz: bool) -> None:
    suffix = ".warc.gz" if gz else ".warc"
    good = make_warc(tmp_path / ("in" + suffix), gzip=gz)
    data, index = _corrupt(good.read_bytes(), kind, gz)
    bad = tmp_path / ("bad" + suffix)
    bad.write_bytes(data)
    seen: list[BadRecord] = []
    out = tmp_path / ("out" + suffix)
    report = rewrite_warc(bad, out, rewriter(), on_bad_record=seen.append)
    assert len(report.bad_records) == 1 and seen == report.bad_records
    total = len(split_records(good.read_bytes()))
    assert report.records == (total if index == -1 else total - 1)
    assert verify_digests(out) == report.records
    ref = tmp_path / ("ref" + suffix)
    rewrite_warc(good, ref, rewriter())
    expected = split_records(ref.read_bytes())
    if index >= 0:
        del expected[index]
    assert split_records(out.read_bytes()) == expected
    extract_report = WarcReport()
    rows = list(extract_warc(bad, {"title": "title"}, report=extract_report))
    assert len(extract_report.bad_records) == 1
    assert len(rows) == (5 if index == -1 or kind == "end" else 4)


def test_plain_warc_junk_between_records(tmp_path: Path) -> None:
    good = make_warc(tmp_path / "in.warc", gzip=False)
    records = split_records(good.read_bytes())
    bad = tmp_path / "bad.warc"
    bad.write_bytes(b"".join(records[:3]) + b"junk junk\r\n\r\n" + b"".join(records[3:]))
    report = rewrite_warc(bad, tmp_path / "out.warc", rewriter())
    assert len(report.bad_records) == 1 and report.records == len(records)


def test_whole_file_gzip_is_refused(tmp_path: Path) -> None:
    plain = make_warc(tmp_path / "in.warc", gzip=False)
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip_module.compress(plain.read_bytes()))
    with pytest.raises(WarcError, match="record by record"):
        rewrite_warc(whole, tmp_path / "out.warc.gz", rewriter())
    out = tmp_path / "cli.warc.gz"
    assert main(["warc", "rewrite", str(whole), "-o", str(out), "--on", "a",
                 "--remove"]) == 2
    assert not out.exists()


def test_not_a_warc(tmp_path: Path) -> None:
    path = tmp_path / "x.warc"
    path.write_bytes(b"<html>not a warc")
    with pytest.raises(WarcError, match="not a WARC"):
        list(extract_warc(path, {"t": "title"}))


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_extract_rows(warc_in: Path, chunk_size: int) -> None:
    from htmlstream.extraction import extract

    report = WarcReport()
    fields = {"title": "title", "links": "a::attr(href)*", "body": "body::markdown"}
    rows = list(extract_warc(warc_in, fields, chunk_size=chunk_size, report=report))
    assert [r["url"] for r in rows] == sorted(HTML_URIS, key=lambda u: (
        not u[-1].isdigit(), u.endswith("gzip"), u))
    assert all(r["date"] and r["date"].endswith("Z") for r in rows)
    for row in rows:
        assert {k: row[k] for k in fields} == extract(expected_body_source(row["url"]), fields)
    assert report.extracted == len(rows) == 5 and report.failed == 0


def expected_body_source(uri: str) -> bytes:
    if uri.endswith(("chunked", "gzip")):
        return SMALL * 20
    return PAGES[int(uri.rsplit("/", 1)[1]) % len(PAGES)].read_bytes()


def test_extract_refuses_taken_names(warc_in: Path) -> None:
    with pytest.raises(ValueError, match="url"):
        list(extract_warc(warc_in, {"url": "a::attr(href)"}))


def test_cli_rewrite_and_extract(warc_in: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.warc.gz"
    assert main(["warc", "rewrite", str(warc_in), "-o", str(out), "--on", "a[href]",
                 "--set-attr", "rel=noopener", "--https-hosts", "*", "--https-links",
                 "--no-hsts-preload"]) == 0
    err = capsys.readouterr().err
    assert "5 rewritten" in err and "0 bad records" in err
    assert verify_digests(out) > 0
    assert main(["warc", "extract", str(out), "-f", "title=title",
                 "-f", "links=a::attr(href)*", "--jsonl"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert len(rows) == 5 and "5 rows" in captured.err
    links = [link for row in rows for link in row["links"]]
    assert "https://x.example/a" in links and not any(x.startswith("http:") for x in links)


def test_cli_parquet(warc_in: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "new" / "rows.parquet"      # (its missing folder is created)
    assert main(["warc", "extract", str(warc_in), "-f", "title=title",
                 "-f", "links=a::attr(href)*", "--parquet", str(out)]) == 0
    table = pq.read_table(out)
    assert table.column_names == ["url", "date", "title", "links"]
    assert table.num_rows == 5


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["warc", "rewrite", str(tmp_path / "missing.warc"), "-o",
                 str(tmp_path / "o.warc")]) == 2
    assert "nothing to do" in capsys.readouterr().err
    assert main(["warc", "extract", str(tmp_path / "missing.warc"), "-f", "t=title"]) == 2
    assert "missing.warc" in capsys.readouterr().err
    assert main(["warc", "extract", str(tmp_path / "missing.warc"), "-f", "title"]) == 2


def test_a_failing_rewrite_copies_the_record(warc_in: Path, tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    calls: list[object] = []

    def boom(el: object) -> None:          # fails on the first record's title only
        calls.append(el)
        if len(calls) == 1:
            raise ValueError("handler failed")

    rw = Rewriter()
    rw.on("title", element=boom)
    out = tmp_path / "deep" / "er" / ("out" + "".join(warc_in.suffixes))
    with caplog.at_level(logging.WARNING, logger="htmlstream.warc"):
        report = rewrite_warc(warc_in, out, rw)      # (its missing folders are created)
    assert report.failed == 1 and report.rewritten == 4
    assert [reason for _, reason in report.failures] == ["ValueError: handler failed"]
    assert len(split_records(out.read_bytes())) == len(split_records(warc_in.read_bytes()))
    assert report.copied == report.records - 4     # the failed one among them
    # One summary line, not one per record.
    assert [r.getMessage() for r in caplog.records] == [
        "1 of 5 HTML records failed: 1 ValueError; the first: ValueError: handler failed"]


def test_every_record_failing_alike_raises(warc_in: Path, tmp_path: Path) -> None:
    def boom(_: object) -> None:
        raise ValueError("handler failed")

    rw = Rewriter()
    rw.on("title", element=boom)
    out = tmp_path / ("out" + "".join(warc_in.suffixes))
    with pytest.raises(AllInputsFailed, match="all 5 HTML records failed with ValueError") as info:
        rewrite_warc(warc_in, out, rw)
    assert info.value.count == 5 and info.value.reason == "ValueError"
    assert not out.exists()        # a run that raises leaves no output
    with pytest.raises(AllInputsFailed, match="HTML records failed with EncodingError"):
        list(extract_warc(warc_in, {"t": "title"}, encoding="no-such-encoding"))


def test_cli_reads_standard_input(warc_in: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    class Stdin:
        buffer = io.BytesIO(warc_in.read_bytes())

    monkeypatch.setattr("sys.stdin", Stdin())
    assert main(["warc", "extract", "-", "-f", "title=title"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["title"] for row in rows] == [
        row["title"] for row in extract_warc(warc_in, {"title": "title"})]
