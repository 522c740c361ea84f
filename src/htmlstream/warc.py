"""Web archives: rewrite the HTML responses of a WARC file, or extract fields from them, as a
stream, record by record (``pip install 'htmlstream[warc]'``).

Reading is FastWARC's (Rust; about 2.5x warcio on gzipped WARCs here, see docs/guide/warc.md);
rewritten records are written by warcio's ``WARCWriter`` (gzip per record), which takes a
streamed block with a known length; every other record is copied byte for byte from the input
(its gzip member as it is, when input and output are both gzipped per record)::

    from htmlstream import Rewriter
    from htmlstream.warc import rewrite_warc, extract_warc

    report = rewrite_warc("in.warc.gz", "out.warc.gz", rewriter)
    for row in extract_warc("in.warc.gz", {"title": "title"}):
        print(row["url"], row["date"], row["title"])

A rewritten ``response`` record keeps its WARC headers (its ``WARC-Record-ID`` too, so that
``WARC-Concurrent-To`` links hold) except ``Content-Length``, ``WARC-Block-Digest`` and
``WARC-Payload-Digest``, which are recomputed; its HTTP headers are those
:class:`htmlstream.http.ResponseRewrite` sends (the body's ``Content-Length`` set to the new
length, a chunked ``Transfer-Encoding`` decoded).  Which responses are rewritten is
:mod:`htmlstream.http`'s decision (HTML by ``Content-Type`` and sniffing, not HEAD, not 304...).

A record that cannot be read (a corrupt gzip member, a truncated record, a broken header) is
reported in :attr:`WarcReport.bad_records` and skipped: reading resumes at the next record.  A
record whose rewrite or extraction raises is counted in :attr:`WarcReport.failed` (and copied
untouched, or gives no row), with the rule of :func:`htmlstream.errors.check_failures`: when
*every* HTML record failed with the same type of error (a handler that always raises), the
function raises :class:`~htmlstream.errors.AllInputsFailed` at the end; when some failed, one
summary line is logged (``WARNING`` on the ``htmlstream.warc`` logger).  An output path's
missing folders are created; the output is removed when the function raises.

This layer uses only htmlstream's public API; the core never imports it.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import io
import logging
import mmap
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Final, cast

from htmlstream import HtmlStreamError, Rewriter
from htmlstream.errors import check_failures, check_type
from htmlstream.http import HttpOptions, ResponseRefused, ResponseRewrite, decide

if TYPE_CHECKING:
    from htmlstream.extraction import Field

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "BadRecord",
    "WarcError",
    "WarcReport",
    "extract_warc",
    "rewrite_warc",
]

_log = logging.getLogger("htmlstream.warc")

#: Payload bytes read (and fed) at a time.
DEFAULT_CHUNK_SIZE: Final = 64 * 1024
#: A rewritten payload larger than this is spooled to a temporary file (the WARC header, which
#: comes first, needs its length and digests).
_SPOOL_MAX: Final = 8 * 1024 * 1024
_GZIP_MAGIC: Final = b"\x1f\x8b\x08"
_WARC_MAGIC: Final = b"WARC/"
_PLAIN_START: Final = re.compile(rb"WARC/1\.[01]\r\n")
#: How many request methods are remembered to find a response's (HEAD responses have no body).
_METHODS_KEPT: Final = 256

WarcSource = str | os.PathLike[str] | BinaryIO


def _check_path_or_file(where: str, param: str, value: object, method: str) -> None:
    if not isinstance(value, (str, os.PathLike)) and not callable(getattr(value, method, None)):
        raise TypeError(f"{where}: {param} must be a path (str, os.PathLike) or a binary file, "
                        f"not {type(value).__name__}")


class WarcError(HtmlStreamError):
    """The input is not a WARC file htmlstream can read (not gzipped per record, not a WARC),
    or a library is missing."""


@dataclasses.dataclass(frozen=True, slots=True)
class BadRecord:
    """A record that could not be read, and was skipped.

    Attributes:
        offset: where it starts in the input file (compressed offset for gzip).
        error: what went wrong.
    """

    offset: int
    error: str


@dataclasses.dataclass(slots=True)
class WarcReport:
    """What a pass over a WARC file did (counts of records).

    Attributes:
        records: records read (bad ones not counted).
        html: ``response`` records decided to be HTML (rewritten, or extracted from).
        rewritten: records rewritten (:func:`rewrite_warc`).
        copied: records copied byte for byte (:func:`rewrite_warc`).
        extracted: rows extracted (:func:`extract_warc`).
        failed: records whose rewrite or extraction failed (copied untouched, or no row),
            with the reasons in ``failures``.
        bad_records: records that could not be read, skipped.
        failures: ``(offset, reason)`` of each failed record.
    """

    records: int = 0
    html: int = 0
    rewritten: int = 0
    copied: int = 0
    extracted: int = 0
    failed: int = 0
    bad_records: list[BadRecord] = dataclasses.field(default_factory=list)
    failures: list[tuple[int, str]] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The counts (``bad_records`` as a count), e.g. for a row of a per-file summary."""
        return {"records": self.records, "html": self.html, "rewritten": self.rewritten,
                "copied": self.copied, "extracted": self.extracted, "failed": self.failed,
                "bad_records": len(self.bad_records)}


def _fastwarc() -> Any:
    try:
        import fastwarc
    except ImportError as exc:
        raise WarcError("htmlstream.warc needs FastWARC and warcio: "
                        "pip install 'htmlstream[warc]'") from exc
    return fastwarc


# --------------------------------------------------------------------------------------------
# Reading: FastWARC's iterator over a memory-mapped file, resumed after bad records
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class _Entry:
    record: Any      # fastwarc.WarcRecord
    start: int


class _Source:
    """A WARC file: its records (FastWARC), their raw bytes (by offset), and resynchronisation
    after a bad record (the next gzip member, or the next ``WARC/`` line, that parses)."""

    def __init__(self, source: WarcSource, auto_decode: str) -> None:
        self._fastwarc = _fastwarc()
        self._auto_decode = auto_decode
        self._own: IO[bytes] | None = None
        if isinstance(source, (str, os.PathLike)):
            self._file: IO[bytes] = open(source, "rb")  # noqa: SIM115 - closed by close()
            self._own = self._file
        else:
            try:
                source.fileno()
                source.seek(0, io.SEEK_END)
                self._file = source
            except (OSError, AttributeError, io.UnsupportedOperation):
                # A pipe: spooled to a temporary file (records are copied by offset).
                spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
                while block := source.read(1 << 20):
                    spool.write(block)
                self._file = self._own = spool
        self._file.seek(0, io.SEEK_END)
        self.size = self._file.tell()
        self._map: mmap.mmap | bytes = (
            mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b"")
        self.gzip = self._map[:3] == _GZIP_MAGIC
        if self.size and not self.gzip and self._map[:5] != _WARC_MAGIC:
            self.close()
            raise WarcError("not a WARC file (neither gzip nor 'WARC/' at the start)")

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        if self._own is not None:
            self._own.close()

    def raw(self, start: int, end: int) -> bytes:
        return bytes(self._map[start:end])

    def _iterator(self, pos: int) -> Iterator[Any]:
        self._file.seek(pos)
        return iter(self._fastwarc.ArchiveIterator(
            self._file, parse_http=True, auto_decode=self._auto_decode,
            stream_detect=self.gzip))

    def _candidate(self, pos: int) -> int:
        """The first offset at or after ``pos`` where a record seems to start (size if none)."""
        data = self._map
        while pos < self.size:
            if self.gzip:
                hit = data.find(_GZIP_MAGIC, pos)
                if hit < 0:
                    return self.size
                try:
                    head = zlib.decompressobj(31).decompress(data[hit:hit + 4096], 16)
                except zlib.error:
                    head = b""
            else:
                # (anywhere: a record cut short ends mid-line, and the next one follows)
                found = _PLAIN_START.search(data, pos)
                if found is None:
                    return self.size
                hit = found.start()
                head = _WARC_MAGIC
            if head.startswith(_WARC_MAGIC):
                return hit
            pos = hit + 1
        return self.size

    def _end(self, start: int, limit: int) -> int | None:
        """Where the record at ``start`` ends if it is complete and ends before ``limit`` (after
        an error, to tell whether that record or what follows it is bad), else None."""
        data = self.raw(start, limit)
        try:
            if self.gzip:
                obj = zlib.decompressobj(31)
                record = obj.decompress(data)
                if not obj.eof:
                    return None
                end = limit - len(obj.unused_data)
            else:
                record = data
                end = -1
            head, sep, _ = record.partition(b"\r\n\r\n")
            match = re.search(rb"(?im)^content-length:[ \t]*(\d+)", head)
            if not sep or match is None:
                return None
            size = len(head) + 4 + int(match.group(1))
            if len(record) < size:
                return None
            if not self.gzip:
                tail = record[size:size + 4]
                end = start + size + len(tail) - len(tail.lstrip(b"\r\n"))
            return end
        except zlib.error:
            return None

    def entries(self) -> Iterator[_Entry | BadRecord]:
        """The records in order, and a :class:`BadRecord` for each stretch that cannot be read.

        A :class:`BadRecord` whose offset is that of the last entry yielded retracts it (its
        end turned out to be broken)."""
        pos = 0
        while pos < self.size:
            last: int | None = None
            try:
                for record in self._iterator(pos):
                    start = record.stream_pos
                    if start == last or (self.gzip and last is not None and start < last):
                        raise WarcError(
                            "this gzip WARC is not compressed record by record (several records "
                            "in one gzip member): decompress it first (gunzip)")
                    last = start
                    yield _Entry(record, start)
            except WarcError:
                raise
            except Exception as exc:  # any reader error: a bad record
                error = f"{type(exc).__name__}: {exc}"
            else:
                # The iterator ends quietly at a record cut short by the end of the file.
                if last is not None and self._end(last, self.size) is None:
                    yield BadRecord(last, "truncated: the file ends inside this record")
                return
            if last is None:
                # The record at ``pos`` itself is unreadable.
                yield BadRecord(pos, error)
                pos = self._candidate(pos + 1)
                continue
            following = self._candidate(last + 1)
            end = self._end(last, following)
            if end is None:
                yield BadRecord(last, error)        # the last record read is broken
                pos = following
            elif end < following:
                yield BadRecord(end, error)         # junk between two records
                pos = following
            elif following < self.size:
                yield BadRecord(following, error)   # the next record is broken
                pos = self._candidate(following + 1)
            else:
                return


# --------------------------------------------------------------------------------------------
# Records: HTTP parts, digests, the method of the request
# --------------------------------------------------------------------------------------------


def _http_pairs(record: Any) -> list[tuple[bytes, bytes]]:
    return [(bytes(k), bytes(v)) for k, v in record.http_headers.items_bytes()]


def _header(record: Any, name: str) -> str | None:
    value = record.headers.get(name)
    return None if value is None else str(value)


class _Methods:
    """The request method of recent ``request`` records, by the response they belong to."""

    def __init__(self) -> None:
        self._by_key: dict[str, str] = {}

    def remember(self, record: Any) -> None:
        line = record.http_headers.status_line if record.is_http else None
        if not line:
            return
        method = str(line).split(" ", 1)[0]
        for key in (_header(record, "WARC-Concurrent-To"), _header(record, "WARC-Target-URI")):
            if key:
                self._by_key[key] = method
        while len(self._by_key) > _METHODS_KEPT:
            del self._by_key[next(iter(self._by_key))]

    def method(self, record: Any) -> str:
        for key in (_header(record, "WARC-Record-ID"), _header(record, "WARC-Concurrent-To"),
                    _header(record, "WARC-Target-URI")):
            if key and key in self._by_key:
                return self._by_key[key]
        return "GET"


def _digest(algorithm: str) -> Any:
    return hashlib.new(algorithm)


def _label(algorithm: str, digest: Any) -> bytes:
    return f"{algorithm}:{base64.b32encode(digest.digest()).decode()}".encode()


def _algorithm(record: Any) -> str:
    """The digest algorithm of the record's own digests (``sha1`` when it has none)."""
    for name in ("WARC-Block-Digest", "WARC-Payload-Digest"):
        value = _header(record, name)
        if value and ":" in value:
            algo = value.split(":", 1)[0].strip().lower().replace("-", "")
            if algo in hashlib.algorithms_available:
                return algo
    return "sha1"


def _is_response(record: Any, fastwarc: Any) -> bool:
    return bool(record.record_type == fastwarc.WarcRecordType.response and record.is_http
                and record.http_headers.status_code is not None)


# --------------------------------------------------------------------------------------------
# Rewriting
# --------------------------------------------------------------------------------------------


class _Output:
    """The output file: raw copies, and rewritten records through warcio's writer, each record
    its own gzip member (level 6: warcio's own gzip wrapper uses 9, several times slower for a
    few per cent)."""

    def __init__(self, file: BinaryIO, gzip: bool, level: int = 6) -> None:
        try:
            from warcio.warcwriter import WARCWriter
        except ImportError as exc:
            raise WarcError("htmlstream.warc needs FastWARC and warcio: "
                            "pip install 'htmlstream[warc]'") from exc
        self._writer_class = WARCWriter
        self.file = file
        self.gzip = gzip
        self.level = level

    def copy(self, source: _Source, start: int, end: int) -> None:
        data = source.raw(start, end)
        if source.gzip and not self.gzip:
            data = zlib.decompress(data, 31)
        elif self.gzip and not source.gzip:
            obj = zlib.compressobj(self.level, zlib.DEFLATED, 31)
            data = obj.compress(data) + obj.flush()
        self.file.write(data)

    def write(self, protocol: str, headers: list[tuple[str, str]], block: IO[bytes],
              length: int) -> None:
        from warcio.recordloader import ArcWarcRecord
        from warcio.statusandheaders import StatusAndHeaders

        rec_headers = StatusAndHeaders(protocol, headers, protocol="")
        record = ArcWarcRecord("warc", "response", rec_headers, block, None, None, length)
        target: Any = _Member(self.file, self.level) if self.gzip else self.file
        self._writer_class(target, gzip=False).write_record(record)
        if self.gzip:
            target.finish()


class _Member:
    """A gzip member around what is written (one record)."""

    def __init__(self, file: BinaryIO, level: int) -> None:
        self._file = file
        self._obj = zlib.compressobj(level, zlib.DEFLATED, 31)

    def write(self, data: bytes) -> int:
        self._file.write(self._obj.compress(data))
        return len(data)

    def flush(self) -> None:
        pass

    def finish(self) -> None:
        self._file.write(self._obj.flush())


def _rewrite_record(record: Any, rewriter: Rewriter, method: str, options: HttpOptions | None,
                    chunk_size: int, context: Mapping[str, Any] | None
                    ) -> tuple[list[tuple[str, str]], IO[bytes], int] | str:
    """The rewritten record (WARC headers, block, block length), or why it is not rewritten."""
    status = int(record.http_headers.status_code)
    pairs = _http_pairs(record)
    # (FastWARC decodes a chunked transfer coding: the record gets a Content-Length instead.)
    headers = [(k, v) for k, v in pairs if k.lower() != b"transfer-encoding"]
    try:
        transform: ResponseRewrite[bytes] = ResponseRewrite(
            rewriter, method, status, headers, options=options,
            context=None if context is None else dict(context))
    except ResponseRefused as exc:
        # (A partial record of a page, a coding not decoded: kept as the archive has it, the
        # reason saying why; an archive is not a client that could ask for another answer.)
        return f"refused: {exc.reason}"
    if transform.decided and not transform.rewriting:
        return transform.reason or "not rewritten"
    algorithm = _algorithm(record)
    payload_digest = _digest(algorithm)
    spool = tempfile.SpooledTemporaryFile(_SPOOL_MAX)  # noqa: SIM115 - returned
    size = 0
    reader = record.reader
    try:
        while True:
            chunk = reader.read(chunk_size)
            try:
                out = transform.feed(chunk) if chunk else transform.close()
            except ResponseRefused as exc:     # (before any output)
                spool.close()
                return f"refused: {exc.reason}"
            if out:
                if transform.decided and not transform.rewriting:
                    spool.close()
                    return transform.reason or "not rewritten"
                spool.write(out)
                payload_digest.update(out)
                size += len(out)
            if not chunk:
                break
    except BaseException:
        spool.close()
        raise
    if not transform.rewriting:
        spool.close()
        return transform.reason or "not rewritten"
    status_line = bytes(record.http_headers.status_line_bytes or b"")
    lines = [status_line]
    lines += [k + b": " + v for k, v in transform.headers]
    lines.append(b"Content-Length: " + str(size).encode())
    http_block = b"\r\n".join(lines) + b"\r\n\r\n"
    block_digest = _digest(algorithm)
    block_digest.update(http_block)
    spool.seek(0)
    while piece := spool.read(1 << 20):
        block_digest.update(piece)
    spool.seek(0)
    block = cast(IO[bytes], _Prefixed(http_block, spool))
    length = len(http_block) + size
    replaced = {
        "content-length": str(length),
        "warc-block-digest": _label(algorithm, block_digest).decode(),
        "warc-payload-digest": _label(algorithm, payload_digest).decode(),
    }
    warc_headers: list[tuple[str, str]] = []
    for key, value in record.headers.items_bytes():
        name = bytes(key).decode("utf-8", "replace")
        low = name.lower()
        if low in replaced:
            if replaced[low]:
                warc_headers.append((name, replaced[low]))
                replaced[low] = ""
            continue
        warc_headers.append((name, bytes(value).decode("utf-8", "replace")))
    canonical = {"content-length": "Content-Length", "warc-block-digest": "WARC-Block-Digest",
                 "warc-payload-digest": "WARC-Payload-Digest"}
    warc_headers += [(canonical[k], v) for k, v in replaced.items() if v]
    return warc_headers, block, length


class _Prefixed(io.RawIOBase):
    """``prefix`` then the rest of ``body``, read as one stream (what warcio reads)."""

    def __init__(self, prefix: bytes, body: IO[bytes]) -> None:
        self._prefix = prefix
        self._body = body

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._prefix:
            if size < 0 or size >= len(self._prefix):
                out, self._prefix = self._prefix, b""
                rest = self._body.read(-1 if size < 0 else size - len(out))
                return out + rest
            out, self._prefix = self._prefix[:size], self._prefix[size:]
            return out
        return self._body.read(size)

    def close(self) -> None:
        self._body.close()
        super().close()


def rewrite_warc(
    source: WarcSource,
    output: str | os.PathLike[str] | BinaryIO,
    rewriter: Rewriter,
    *,
    gzip: bool | None = None,
    gzip_level: int = 6,
    options: HttpOptions | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    context: Mapping[str, Any] | None = None,
    on_bad_record: Callable[[BadRecord], None] | None = None,
) -> WarcReport:
    """Rewrite every HTML ``response`` record of a WARC file with ``rewriter``; copy every other
    record byte for byte.

    Args:
        source: the WARC file (a path, or a binary file; a pipe is spooled to a temporary
            file), plain or gzipped record by record.
        output: where to write the new WARC (a path or a binary file).
        rewriter: the rules.
        gzip: compress each output record as its own gzip member (the default when ``output``
            is a path ending in ``.gz``, or a file and the input is gzipped).
        gzip_level: the zlib level of the output's gzip members (what rewriting spends most
            of its time on: 1 is about three times faster than 6, for larger files).
        options: what :mod:`htmlstream.http` rewrites (HTML types, sniffing...).
        chunk_size: payload bytes read and fed to the rewriter at a time.
        context: a copy of it is each document's context (``rewriter.stream(context=...)``).
        on_bad_record: called with each unreadable record (skipped).

    Returns:
        the counts; bad records in :attr:`WarcReport.bad_records`.
    """
    _check_path_or_file("rewrite_warc()", "source", source, "read")
    _check_path_or_file("rewrite_warc()", "output", output, "write")
    if not callable(getattr(rewriter, "stream", None)):
        raise TypeError(f"rewrite_warc(): rewriter must be a Rewriter, not "
                        f"{type(rewriter).__name__}")
    fastwarc = _fastwarc()
    report = WarcReport()
    src = _Source(source, auto_decode="transfer")
    if gzip is None:
        gzip = (str(output).endswith(".gz") if isinstance(output, (str, os.PathLike))
                else src.gzip)
    own = isinstance(output, (str, os.PathLike))
    if own:
        os.makedirs(os.path.dirname(os.fspath(output)) or ".", exist_ok=True)  # type: ignore[arg-type]
    out_file: BinaryIO = open(output, "wb") if own else output  # type: ignore[arg-type,assignment]  # noqa: SIM115
    methods = _Methods()
    try:
        out = _Output(out_file, gzip, gzip_level)
        # The last record, held until the next one starts (its end is known to be sound then):
        # its start, and the rewritten record to write (None: copy it).
        held: tuple[int, tuple[str, list[tuple[str, str]], IO[bytes], int] | None] | None = None

        def release(end: int) -> None:
            assert held is not None
            start, rewritten = held
            if rewritten is None:
                out.copy(src, start, end)
                report.copied += 1
                return
            version, headers, block, length = rewritten
            try:
                out.write(version, headers, block, length)
            finally:
                block.close()
            report.rewritten += 1
            report.html += 1

        for entry in src.entries():
            if isinstance(entry, BadRecord):
                if held is not None:
                    if entry.offset == held[0]:
                        # Its end is broken: it is dropped (and was counted as read).
                        report.records -= 1
                        if held[1] is not None:
                            held[1][2].close()
                        if report.failures and report.failures[-1][0] == entry.offset:
                            report.failures.pop()
                            report.failed -= 1
                    else:
                        release(entry.offset)
                    held = None
                report.bad_records.append(entry)
                if on_bad_record is not None:
                    on_bad_record(entry)
                continue
            if held is not None:
                release(entry.start)
                held = None
            record = entry.record
            report.records += 1
            if record.record_type == fastwarc.WarcRecordType.request:
                methods.remember(record)
            result: tuple[list[tuple[str, str]], IO[bytes], int] | str = "not a response"
            if _is_response(record, fastwarc):
                try:
                    result = _rewrite_record(record, rewriter, methods.method(record), options,
                                             chunk_size, context)
                except Exception as exc:
                    result = f"{type(exc).__name__}: {exc}"
                    report.failed += 1
                    report.failures.append((entry.start, result))
            if isinstance(result, str):
                held = (entry.start, None)
            else:
                version = "WARC/1.1" if record.headers.status_line == "WARC/1.1" else "WARC/1.0"
                held = (entry.start, (version, *result))
        if held is not None:
            release(src.size)
    finally:
        src.close()
        if own:
            out_file.close()
    try:
        _check(report)
    except HtmlStreamError:
        if own:     # (as the command line and the Dask job do: a failed run leaves no output)
            with contextlib.suppress(OSError):
                os.unlink(output)  # type: ignore[arg-type]
        raise
    return report


def _check(report: WarcReport) -> None:
    """The failure rule over the HTML records of one pass (those done, those failed)."""
    if report.failed:
        check_failures("HTML records", [None] * report.html + [r for _, r in report.failures],
                       _log)


# --------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------

_DROP_DECODED: Final = frozenset({b"content-encoding", b"transfer-encoding", b"content-length"})


def extract_warc(
    source: WarcSource,
    fields: Mapping[str, str | Field],
    *,
    encoding: str | None = None,
    options: HttpOptions | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    report: WarcReport | None = None,
    on_bad_record: Callable[[BadRecord], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """The fields of every HTML ``response`` record, one row each: ``{"url": WARC-Target-URI,
    "date": WARC-Date, **fields}``.

    Args:
        source: the WARC file (see :func:`rewrite_warc`).
        fields: name to :class:`htmlstream.extraction.Field` (or its spec string).
        encoding: the documents' encoding, overriding what each declares.
        options: which responses are HTML (:class:`htmlstream.http.HttpOptions`).
        chunk_size: payload bytes read and fed at a time.
        report: filled with the counts as rows are produced.
        on_bad_record: called with each unreadable record (skipped).

    Raises:
        ValueError: a field is named ``url`` or ``date``.
    """
    _check_path_or_file("extract_warc()", "source", source, "read")
    check_type(fields, Mapping, "extract_warc()", "fields",
               "a mapping of names to selector strs or Fields")
    from htmlstream.extraction import Extractor

    clash = {"url", "date"} & set(fields)
    if clash:
        raise ValueError(f"field names {sorted(clash)} are taken by the record's URL and date")
    fastwarc = _fastwarc()
    report = report if report is not None else WarcReport()
    src = _Source(source, auto_decode="all")
    methods = _Methods()
    opts = options or HttpOptions()
    held: tuple[int, dict[str, Any] | None] | None = None     # (as in rewrite_warc)
    try:
        for entry in src.entries():
            if isinstance(entry, BadRecord):
                if held is not None and entry.offset == held[0]:
                    report.records -= 1
                    if held[1] is not None:
                        report.html -= 1
                        report.extracted -= 1
                    if report.failures and report.failures[-1][0] == entry.offset:
                        report.failures.pop()
                        report.failed -= 1
                elif held is not None and held[1] is not None:
                    yield held[1]
                held = None
                report.bad_records.append(entry)
                if on_bad_record is not None:
                    on_bad_record(entry)
                continue
            if held is not None and held[1] is not None:
                yield held[1]
            held = None
            record = entry.record
            report.records += 1
            if record.record_type == fastwarc.WarcRecordType.request:
                methods.remember(record)
            row: dict[str, Any] | None = None
            if _is_response(record, fastwarc):
                try:
                    row = _extract_record(record, fields, encoding, methods.method(record), opts,
                                          chunk_size, Extractor)
                except Exception as exc:
                    report.failed += 1
                    report.failures.append((entry.start, f"{type(exc).__name__}: {exc}"))
            if row is not None:
                report.html += 1
                report.extracted += 1
            held = (entry.start, row)
        if held is not None and held[1] is not None:
            yield held[1]
    finally:
        src.close()
    _check(report)


def _extract_record(record: Any, fields: Mapping[str, str | Field], encoding: str | None,
                    method: str, options: HttpOptions, chunk_size: int, extractor: Any
                    ) -> dict[str, Any] | None:
    # The body is already decoded (content and transfer codings): decide on it as it is.
    headers = [(k, v) for k, v in _http_pairs(record) if k.lower() not in _DROP_DECODED]
    reader = record.reader
    prefix = reader.read(1024)
    try:
        decision = decide(method, int(record.http_headers.status_code), headers, prefix,
                          options=options)
    except ResponseRefused:
        return None         # (a partial record of a page, a coding not decoded...)
    if not decision.rewrite:
        return None
    ex = extractor(fields, encoding=encoding or decision.encoding)
    chunk = prefix
    while chunk:
        ex.feed(chunk)
        if ex.done:
            break
        chunk = reader.read(chunk_size)
    values: dict[str, Any] = ex.close()
    return {"url": _header(record, "WARC-Target-URI"), "date": _header(record, "WARC-Date"),
            **values}
