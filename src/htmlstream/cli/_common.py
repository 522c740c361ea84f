"""What the subcommands share: the error type, argument types, and opening inputs (files,
standard input, the bundled sample page, ``http(s)://`` URLs) and outputs."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.resources
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, cast

import htmlstream
from htmlstream.encoding import PRESCAN_BYTES, _resolve_encoding, sniff

PROG = "htmlstream"


PROG = "htmlstream"
DEFAULT_CHUNK_SIZE = 65536


DEFAULT_CHUNK_SIZE = 65536
SAMPLE_RESOURCE = "data/sample.html"


class CliError(Exception):
    """A user-facing error: printed as ``htmlstream: error: MESSAGE``; ends with ``status``."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _number(value: str, convert: Callable[[str], Any], kind: str, zero_ok: bool) -> Any:
    try:
        number = convert(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid {kind}: {value!r}") from None
    if not (number >= 0 if zero_ok else number > 0):     # (NaN fails both)
        raise argparse.ArgumentTypeError(
            f"must be {'0 or more' if zero_ok else 'greater than 0'}: {value!r}")
    return number


def positive_int(value: str) -> int:
    """``argparse`` type: an integer greater than zero."""
    return int(_number(value, int, "integer", False))


def non_negative_int(value: str) -> int:
    """``argparse`` type: an integer, 0 or more."""
    return int(_number(value, int, "integer", True))


def positive_float(value: str) -> float:
    """``argparse`` type: a number (of seconds) greater than zero."""
    return float(_number(value, float, "number", False))


def non_negative_float(value: str) -> float:
    """``argparse`` type: a number (of seconds), 0 or more."""
    return float(_number(value, float, "number", True))


def encoding_name(value: str) -> str:
    """``argparse`` type: a label of the WHATWG Encoding Standard naming an ASCII-compatible
    encoding, returned as given."""
    try:
        _resolve_encoding(value)
    except htmlstream.EncodingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


@contextlib.contextmanager
def open_input(path: str | None) -> Iterator[tuple[str, BinaryIO]]:
    """Open INPUT for binary reading; yields ``(display_name, stream)``.

    ``None`` is the sample page bundled with the package, ``"-"`` is standard input.
    """
    if path is None:
        resource = importlib.resources.files("htmlstream").joinpath(SAMPLE_RESOURCE)
        with resource.open("rb") as stream:
            yield f"<bundled {SAMPLE_RESOURCE}>", cast(BinaryIO, stream)
    elif path == "-":
        yield "<stdin>", sys.stdin.buffer
    else:
        try:
            stream = open(path, "rb")  # noqa: SIM115 - closed below, errors mapped to CliError
        except OSError as exc:
            raise CliError(f"cannot read {path!r}: {exc.strerror or exc}") from exc
        with stream:
            yield path, stream


def read_chunks(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Yield the stream's bytes in chunks of at most ``chunk_size`` bytes."""
    while chunk := stream.read(chunk_size):
        yield chunk


#: Seconds ``rewrite`` waits for a URL to connect or to send more bytes.
URL_TIMEOUT = 30


URL_TIMEOUT = 30
_URL_PREFIXES = ("http://", "https://")


def is_url(value: str | None) -> bool:
    """Whether INPUT names an ``http://`` or ``https://`` URL rather than a file."""
    return value is not None and value[:8].lower().startswith(_URL_PREFIXES)


class _UrlStream:
    """An HTTP response read ``read1``-style; read errors become :class:`CliError`."""

    def __init__(self, url: str, response: Any, errors: tuple[type[BaseException], ...]) -> None:
        self.url = url
        self.response = response
        self.errors = errors

    def read1(self, size: int) -> bytes:
        """Up to ``size`` bytes, as soon as some are there; ``b""`` at the end."""
        try:
            data: bytes = self.response.read1(size)
        except TimeoutError as exc:
            raise CliError(f"reading {self.url}: no data for {URL_TIMEOUT} s (timed out)") from exc
        except self.errors as exc:
            raise CliError(f"reading {self.url}: {type(exc).__name__}: {exc}") from exc
        # ``read1`` (unlike ``read``) ends quietly when the server closes the connection early.
        missing = self.response.length
        if not data and size and missing:
            raise CliError(
                f"reading {self.url}: the connection was closed with {missing:,} bytes of the "
                f"declared Content-Length still to come (IncompleteRead)"
            )
        return data

    read = read1


@contextlib.contextmanager
def open_source(path: str | None) -> Iterator[tuple[str, BinaryIO, str | None]]:
    """Like :func:`open_input`, and URLs too; yields ``(display_name, stream, charset)``.

    ``charset`` is the one an HTTP response declares in its ``Content-Type``, else ``None``.
    A URL is fetched with a timeout of :data:`URL_TIMEOUT` seconds (to connect, and for each
    read) and its connection is closed when the block ends, however it ends.
    """
    if not is_url(path):
        with open_input(path) as (name, stream):
            yield name, stream, None
        return
    assert path is not None
    # Imported here: they cost more start-up time than the rest of the command line.
    import http.client
    import urllib.error
    import urllib.request

    agent = f"{PROG}/{htmlstream.__version__}"
    request = urllib.request.Request(path, headers={"User-Agent": agent})
    try:
        response = urllib.request.urlopen(request, timeout=URL_TIMEOUT)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise CliError(f"cannot fetch {path}: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            reason = f"timed out after {URL_TIMEOUT} s"
        raise CliError(f"cannot fetch {path}: {reason}") from exc
    except TimeoutError as exc:
        raise CliError(f"cannot fetch {path}: timed out after {URL_TIMEOUT} s") from exc
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise CliError(f"cannot fetch {path}: {type(exc).__name__}: {exc}") from exc
    with response:
        url_stream = _UrlStream(path, response, (OSError, http.client.HTTPException))
        yield path, cast(BinaryIO, url_stream), response.headers.get_content_charset()


def read_chunks_eagerly(stream: BinaryIO, chunk_size: int, name: str) -> Iterator[bytes]:
    """Yield the stream's bytes in chunks of at most ``chunk_size`` bytes, each as soon as it
    is there (``read1``: a pipe or a slow server is not waited on to fill a whole chunk).

    A read error is a :class:`CliError`.
    """
    read = getattr(stream, "read1", None) or stream.read
    while True:
        try:
            chunk = read(chunk_size)
        except OSError as exc:
            raise CliError(f"reading {name}: {exc.strerror or exc}") from exc
        if not chunk:
            return
        yield chunk


def rewriter_encoding(value: str) -> str:
    """``argparse`` type: an encoding the rewriter can read (a label of the WHATWG Encoding
    Standard naming an ASCII-compatible encoding), returned as given."""
    try:
        _resolve_encoding(value)
    except htmlstream.EncodingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def peek_chunks(chunks: Iterator[bytes], size: int) -> tuple[bytes, Iterator[bytes]]:
    """Read chunks until ``size`` bytes (or the end); return them and an iterator over every
    chunk, those included."""
    head: list[bytes] = []
    total = 0
    for chunk in chunks:
        head.append(chunk)
        total += len(chunk)
        if total >= size:
            break
    def replay() -> Iterator[bytes]:
        yield from head
        yield from chunks

    return b"".join(head), replay()


def content_type(charset: str | None) -> str | None:
    """A ``Content-Type`` value carrying a server's ``charset`` (for :func:`sniff`)."""
    if charset is None:
        return None
    escaped = charset.replace("\\", "\\\\").replace('"', '\\"')
    return f'text/html; charset="{escaped}"'


@contextlib.contextmanager
def open_output(path: str | None, input_path: str | None) -> Iterator[BinaryIO]:
    """Open OUT (``None``: standard output) for binary writing.

    A regular file is removed again if the block fails, so that a failed rewrite leaves no
    truncated document behind.
    """
    if path is None or path == "-":
        sys.stdout.flush()
        yield sys.stdout.buffer
        return
    if input_path is not None and input_path != "-" and not is_url(input_path):
        with contextlib.suppress(OSError):
            if os.path.samefile(path, input_path):
                raise CliError(f"-o {path!r} is the input file: it would be overwritten")
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)   # (missing folders made)
        stream = open(path, "wb")  # noqa: SIM115 - closed below, errors mapped to CliError
    except OSError as exc:
        raise CliError(f"cannot write {path!r}: {exc.strerror or exc}") from exc
    try:
        with stream:
            yield stream
    except BaseException:
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.stat(path).st_mode):
                os.unlink(path)
        raise


def document_encoding(chosen: str | None, input_path: str | None, chunks: Iterator[bytes],
                      charset: str | None) -> tuple[str, bool, Iterator[bytes]]:
    """The encoding to read INPUT with, whether a ``<meta charset>`` may still change it, and the
    chunks (those read to decide included).  ``chosen`` (``--encoding``) wins; standard input is
    UTF-8; otherwise what a browser would decode the document with, where a guess (no byte
    order mark, no server ``charset``) gives way to the first ``<meta charset>``."""
    if chosen is not None:
        return chosen, False, chunks
    if input_path == "-":
        return "utf-8", False, chunks
    prefix, chunks = peek_chunks(chunks, PRESCAN_BYTES)
    found = sniff(prefix, content_type(charset))
    return found.encoding, not found.certain, chunks


@dataclasses.dataclass
class Pumped:
    """What :func:`pump` moved: bytes in and out, and the seconds spent in the stream's calls."""

    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0


def pump(stream: htmlstream.RewriterStream, chunks: Iterator[bytes], out: BinaryIO) -> Pumped:
    """Feed every chunk to ``stream`` and close it, writing (and flushing) each piece of output
    as soon as the stream returns it."""
    moved = Pumped()
    for chunk in chunks:
        moved.bytes_in += len(chunk)
        started = time.perf_counter()
        data = stream.feed(chunk)
        moved.seconds += time.perf_counter() - started
        if data:
            out.write(data)
            out.flush()
            moved.bytes_out += len(data)
    started = time.perf_counter()
    data = stream.close()
    moved.seconds += time.perf_counter() - started
    out.write(data)
    out.flush()
    moved.bytes_out += len(data)
    return moved
