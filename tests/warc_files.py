"""Small WARC files made by the tests (warcio writes them): pages from the corpus and
hand-made records (chunked transfer coding, gzip content coding, non-HTML, HEAD, 304,
revisit), and helpers to split a WARC into its records' bytes."""

from __future__ import annotations

import gzip as gzip_module
import io
import zlib
from pathlib import Path

from datapaths import corpus_dir

PAGES = sorted(corpus_dir().glob("*.html"))
SMALL = b"<!doctype html><title>T\xc3\xa9</title><p><a href=http://x.example/a>A</a>"


def _http(status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + body


def chunked(body: bytes, size: int = 100) -> bytes:
    """``body`` in the chunked transfer coding."""
    parts = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def make_warc(path: Path, *, gzip: bool = True, pages: int = 3) -> Path:
    """A WARC with a warcinfo, request/response pairs for corpus pages, and special records."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as file:
        writer = WARCWriter(file, gzip=gzip)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "tests"}))

        def pair(uri: str, status: str, headers: list[tuple[str, str]], body: bytes,
                 method: str = "GET") -> None:
            response = writer.create_warc_record(
                uri, "response", payload=io.BytesIO(body),
                http_headers=StatusAndHeaders(status, headers, protocol="HTTP/1.1"))
            request = writer.create_warc_record(
                uri, "request",
                payload=io.BytesIO(f"{method} / HTTP/1.1\r\nHost: x\r\n\r\n".encode()),
                warc_headers_dict={
                    "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID")})
            writer.write_record(request)
            writer.write_record(response)

        for i in range(pages):
            body = PAGES[i % len(PAGES)].read_bytes()
            pair(f"http://example.com/{i}", "200 OK",
                 [("Content-Type", "text/html; charset=utf-8"),
                  ("Content-Length", str(len(body)))], body)
        pair("http://example.com/chunked", "200 OK",
             [("Content-Type", "text/html; charset=utf-8"), ("Transfer-Encoding", "chunked")],
             chunked(SMALL * 20))
        pair("http://example.com/gzip", "200 OK",
             [("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip")],
             gzip_module.compress(SMALL * 20, mtime=0))
        pair("http://example.com/img", "200 OK", [("Content-Type", "image/png")],
             b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
        pair("http://example.com/json", "200 OK", [("Content-Type", "text/html")],
             b'{"not": "html"}')
        pair("http://example.com/head", "200 OK",
             [("Content-Type", "text/html"), ("Content-Length", "1234")], b"", method="HEAD")
        pair("http://example.com/304", "304 Not Modified", [("Content-Type", "text/html")], b"")
        revisit = writer.create_revisit_record(
            "http://example.com/0", digest="sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            refers_to_uri="http://example.com/0", refers_to_date="2020-01-01T00:00:00Z",
            http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")],
                                          protocol="HTTP/1.1"))
        writer.write_record(revisit)
        writer.write_record(writer.create_warc_record(
            "metadata:x", "metadata", payload=io.BytesIO(b"key: value\r\n"),
            warc_content_type="application/warc-fields"))
    return path


def split_records(data: bytes) -> list[bytes]:
    """The (uncompressed) bytes of each record of a WARC (gzipped per record, or plain)."""
    if data[:2] == b"\x1f\x8b":
        out = []
        while data:
            obj = zlib.decompressobj(31)
            out.append(obj.decompress(data))
            assert obj.eof
            data = obj.unused_data
        return out
    from fastwarc import ArchiveIterator

    starts = [r.stream_pos for r in ArchiveIterator(io.BytesIO(data), parse_http=False)]
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


def members(data: bytes) -> list[bytes]:
    """The gzip members of a WARC gzipped per record, as they are."""
    out = []
    while data:
        obj = zlib.decompressobj(31)
        obj.decompress(data)
        assert obj.eof
        out.append(data[:len(data) - len(obj.unused_data)])
        data = obj.unused_data
    return out


def record_parts(record: bytes) -> tuple[dict[str, str], bytes, bytes]:
    """(WARC headers, HTTP head, HTTP body) of one record's bytes."""
    head, _, block = record.partition(b"\r\n\r\n")
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.decode().lower()] = value.strip().decode()
    length = int(headers["content-length"])
    block = block[:length]
    http_head, _, body = block.partition(b"\r\n\r\n")
    return headers, http_head, body
