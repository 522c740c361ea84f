"""HTTP semantics for rewriting responses, sans-I/O: what every integration (ASGI, WSGI, aiohttp,
httpx, mitmproxy, the proxy) shares.

Given the request method, the response status and headers (and optionally the request headers),
then the first body bytes, :class:`ResponseRewrite` decides whether the response is rewritten,
why not when it is not, which encoding the body is read in, and which headers to send; then it
transforms the body chunk by chunk: content decoding (gzip, deflate, br, zstd) in bounded steps,
the rewriter's stream, and re-encoding with the same content coding::

    t = htmlstream.http.ResponseRewrite(rewriter, "GET", 200, headers, request_headers=req)
    out = t.feed(chunk)          # bytes to send (b"" while the decision is held back)
    if t.decided: t.headers      # the headers to send, once decided
    out = t.close()              # the rest

No way around the rewrite: a response that would be rewritten and cannot be (a byte range of a
page, a content coding that is not decoded, a compressed body corrupt before the decision, a
UTF-16 page without transcoding) raises :class:`ResponseRefused`, always before any output, so
the integration answers an error, never the original bytes.  On the request side,
:func:`forwarded_request_headers` is what the origin (or the application) may see: ``Range``
only for what cannot be a page (:func:`forward_range`), ``Accept-Encoding`` naming only codings
this installation decodes (:func:`accept_encoding`).  Nothing of the request decides whether a
response is rewritten.  A ``HEAD`` gets the headers its ``GET`` would have.

Content negotiation of Markdown (issue 36): ``ResponseRewrite(..., markdown=MarkdownOptions())``
answers a request whose ``Accept`` prefers ``text/markdown`` (:func:`markdown_requested`) with
the rewritten page converted by :class:`htmlstream.recipes.markdown.MarkdownConverter`, under
the same rules (only what would be rewritten; decoded, converted, re-encoded; ranges refused),
with ``Content-Type: text/markdown; charset=utf-8``, ``Vary: Accept`` (on every rewritten
response), the configured ``Content-Signal``, no ``ETag``, and ``x-markdown-tokens`` when the
whole Markdown is held (at most ``MarkdownOptions.hold_chars`` characters: the response is
``decided`` at its end then; a longer one streams without the header).

:func:`content_decoder` gives those bounded decoders alone, to a layer that reads bodies itself
(``htmlstream.scrape``), and :func:`decide` the decision alone, to one that only reads them.
Nothing here does I/O or imports a framework; this module uses only htmlstream's public API, and
the core never imports it.  docs/guide/http.md has the table of decisions.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import logging
import sys
import urllib.parse
import warnings
import zlib
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, AnyStr, Final, Generic, Literal, Protocol, TypeAlias, cast

from htmlstream import Rewriter, RewriterStream, lookup_encoding, sniff_content
from htmlstream.astream import EngineRunner
from htmlstream.encoding import sniff as _sniff_encoding
from htmlstream.errors import BYTES_LIKE, EncodingError, HtmlStreamError, check_type

__all__ = [
    "DEFAULT_MAX_DECODED_SIZE",
    "HOLD_BYTES",
    "ContentDecoder",
    "ContentDecodingError",
    "Decision",
    "DecodedSizeExceeded",
    "EncodingSource",
    "HttpOptions",
    "MarkdownOptions",
    "RequestHeaders",
    "ResponseHeaders",
    "ResponseRefused",
    "ResponseRewrite",
    "accept_encoding",
    "add_csp_nonce",
    "content_decoder",
    "csp_nonce_hook",
    "decide",
    "decide_headers",
    "decodable_codings",
    "forward_range",
    "forwarded_request_headers",
    "markdown_requested",
    "warn_app_compresses",
]

#: How many (decoded) body bytes are held back at most before deciding: what content sniffing
#: and the ``<meta charset>`` prescan read.
HOLD_BYTES: Final = 1024
#: The default limit on the decoded size of a compressed body (``HttpOptions.max_decoded_size``).
DEFAULT_MAX_DECODED_SIZE: Final = 64 * 1024 * 1024
#: Compressed bytes held back at most while the first decoded bytes are awaited (a gzip header
#: may carry a file name or comment of any length): past that, the response passes through.
_MAX_HELD_RAW: Final = 64 * 1024
#: Decompression step: the most decoded bytes produced at once (bounded memory for any ratio).
_STEP: Final = 64 * 1024

#: Where the encoding came from (:attr:`Decision.encoding_source`).
EncodingSource: TypeAlias = Literal["bom", "transport", "meta", "xml", "default"]
#: Response headers: ``(name, value)`` pairs all ``bytes`` or all ``str``, or a mapping whose
#: ``items()`` gives them (a multi-dict gives every field: aiohttp's ``CIMultiDict``).
ResponseHeaders: TypeAlias = Iterable[tuple[AnyStr, AnyStr]] | Mapping[AnyStr, AnyStr]
#: Request headers: pairs of ``str`` or ``bytes`` (mixed is fine: only read), or a mapping.
RequestHeaders: TypeAlias = (Iterable[tuple[str | bytes, str | bytes]]
                             | Mapping[str, str] | Mapping[bytes, bytes])


class ContentDecodingError(HtmlStreamError):
    """A compressed body is corrupt or truncated, after the rewrite was decided and output sent
    (before that, the response passes through untouched instead).  An integration should abort
    the response (close the connection), never end it cleanly: it is incomplete.  (Also what
    :func:`content_decoder` and its decoders raise.)"""


class ResponseRefused(HtmlStreamError):
    """A response that would be rewritten cannot be: sending it would get its original bytes
    past the rewrite (a byte range of a page, a content coding this installation cannot decode,
    a compressed body that is corrupt before anything was decided...).  Nothing of it may be
    sent: the integration answers an error instead (the proxy 502, the middlewares 502 or the
    server's 500), and logs :attr:`reason`.

    Raised by :class:`ResponseRewrite` (its constructor when the headers decide, else ``feed``
    or ``close``, always before any output), :func:`decide_headers` and :func:`decide`.

    Attributes:
        reason: why, for the log.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"refused: {reason}")


class DecodedSizeExceeded(ContentDecodingError):
    """A compressed body decodes to more than ``HttpOptions.max_decoded_size`` bytes (a
    decompression bomb, or a page larger than allowed).

    Attributes:
        limit: the limit in bytes.
    """

    def __init__(self, coding: str, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the {coding}-encoded body decodes to more than max_decoded_size={limit} bytes "
            f"(a decompression bomb, or a larger limit is needed)"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class HttpOptions:
    """What :class:`ResponseRewrite` rewrites, and how (every field has a default).

    Attributes:
        html_types: the MIME types (essences, lower case) rewritten as HTML.  ``text/html`` by
            default; ``application/xhtml+xml`` is left out because browsers parse it with their
            XML parser, whose reading (CDATA sections, ``<br/>`` on any element, well-formedness
            errors fatal) the HTML tokenizer does not follow; add it to rewrite XHTML anyway.
        verify_html: sniff the first bytes of an ``html_types`` response and pass it through
            when they are not HTML (JSON, an image, binary data... served as ``text/html``).
        sniff_missing: sniff a response without a (valid) ``Content-Type`` and rewrite it when
            it looks like HTML (as browsers sniff such responses).
        sniff_types: further MIME types sniffed like a missing one (e.g. ``{"text/plain",
            "application/octet-stream"}`` for origins that mislabel their pages).  Empty by
            default: browsers show ``text/plain`` as text, so rewriting it as HTML changes what
            the user sees.
        rewrite_attachments: rewrite responses with ``Content-Disposition: attachment`` (files
            to download, not pages to render): off by default.
        max_decoded_size: the most bytes a compressed body may decode to (None: no limit).
            Memory is bounded whatever the compression ratio (bodies are decoded in steps of
            64 KiB); this bounds the work.  Exceeding it passes the response through when
            nothing was sent yet, else raises :class:`DecodedSizeExceeded`.
        flush: sync-flush the re-encoding compressor at the end of every ``feed()`` that gave
            it data, so every rewritten byte leaves with the chunk that brought it (latency of
            one chunk; a few bytes and some compression ratio per flush).  False: the compressor
            emits output when its own buffers fill (better ratio, output in bursts of tens of
            KiB, so a slow page is held back).
        drop_etag: drop ``ETag`` instead of weakening it: for rewrites whose output differs from
            one response to the next (a CSP nonce), where even a weak validator would let a
            cache revalidate a stale body.
        default_encoding: the encoding of a document that declares none (no byte order mark,
            no ``charset``, no ``<meta charset>``); None: the rewriter's ``encoding``.
        gzip_level: the zlib compression level for gzip and deflate (0-9).
        brotli_quality: the brotli quality for br (0-11; 11 is far too slow for streaming).
        zstd_level: the zstd compression level.
        range_destinations: the ``Sec-Fetch-Dest`` values of requests whose ``Range`` is
            forwarded (:func:`forward_range`): media a browser plays or shows, never a page.
        range_extensions: the file name extensions (lower case, no dot) of request paths whose
            ``Range`` is forwarded: media, fonts, archives, documents to download.  Any other
            request's ``Range`` and ``If-Range`` are dropped, so the origin sends the whole
            representation; and a partial response that would be rewritten is refused
            (:class:`ResponseRefused`) whatever the request said.
    """

    html_types: frozenset[str] = frozenset({"text/html"})
    verify_html: bool = True
    sniff_missing: bool = True
    sniff_types: frozenset[str] = frozenset()
    rewrite_attachments: bool = False
    max_decoded_size: int | None = DEFAULT_MAX_DECODED_SIZE
    flush: bool = True
    drop_etag: bool = False
    default_encoding: str | None = None
    gzip_level: int = 6
    brotli_quality: int = 5
    zstd_level: int = 3
    range_destinations: frozenset[str] = frozenset({"audio", "video", "image", "font", "track"})
    range_extensions: frozenset[str] = frozenset({
        # video, audio, streaming segments
        "mp4", "m4v", "m4a", "m4s", "mov", "webm", "mkv", "avi", "mpg", "mpeg", "ts", "ogv",
        "mp3", "ogg", "oga", "opus", "flac", "wav", "aac", "weba",
        # images, fonts
        "jpg", "jpeg", "png", "gif", "webp", "avif", "ico", "bmp", "tif", "tiff",
        "woff", "woff2", "ttf", "otf",
        # downloads and documents
        "pdf", "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "tar", "iso", "img", "dmg",
        "exe", "msi", "deb", "rpm", "apk", "whl", "jar", "bin", "wasm", "epub",
    })

    def __post_init__(self) -> None:
        for name in ("html_types", "sniff_types"):
            check_type(getattr(self, name), AbstractSet, "HttpOptions()", name,
                       "a set of media types (a frozenset of str)")


_DEFAULT_OPTIONS: Final = HttpOptions()


#: The default most Markdown characters of a response held back to count its tokens.
DEFAULT_MARKDOWN_HOLD: Final = 1 << 20


@dataclasses.dataclass(frozen=True, slots=True)
class MarkdownOptions:
    """Content negotiation of Markdown (``Accept: text/markdown``), for :class:`ResponseRewrite`
    and the integrations that take ``markdown=`` (docs/guide/markdown.md, "At the edge").

    With it, a request whose ``Accept`` prefers ``text/markdown`` to ``text/html``
    (:func:`markdown_requested`) gets a page's rewritten HTML converted to Markdown
    (:class:`htmlstream.recipes.markdown.MarkdownConverter`): ``Content-Type: text/markdown;
    charset=utf-8``, ``Vary: Accept``, ``x-markdown-tokens`` when the whole Markdown is known
    (see ``hold_chars``), ``Content-Signal`` when configured, and no ``ETag`` (the Markdown has
    no validator of its own: the weakened ``ETag`` of the HTML would let a cache take one for
    the other).  Every other response that is (or, for a ``HEAD``, would be) rewritten gets
    ``Vary: Accept`` too, since it depended on the request's ``Accept``.

    Attributes:
        content_signal: the value of a ``Content-Signal`` header on Markdown responses (e.g.
            ``"ai-train=yes, search=yes, ai-input=yes"``), or None for none.
        main_content: convert only the page's main content (``markdown(main_content=True)``).
        hold_chars: the most Markdown characters held back to count the response's tokens:
            a page whose Markdown is at most this long is sent whole, after its end, with
            ``x-markdown-tokens``; a longer one streams from there on, without the header
            (HTTP trailers are not used: clients ignore them).  0: always stream, never count.
    """

    content_signal: str | None = None
    main_content: bool = False
    hold_chars: int = DEFAULT_MARKDOWN_HOLD

    def __post_init__(self) -> None:
        if self.content_signal is not None:
            check_type(self.content_signal, str, "MarkdownOptions()", "content_signal",
                       "a str (a Content-Signal header value) or None")
            if any(ch in self.content_signal for ch in "\r\n\0"):
                raise ValueError("MarkdownOptions(): content_signal holds a line break or NUL")
        check_type(self.hold_chars, int, "MarkdownOptions()", "hold_chars",
                   "an int (a number of characters)")
        if self.hold_chars < 0:
            raise ValueError("MarkdownOptions(): hold_chars must be >= 0")


@dataclasses.dataclass(frozen=True, slots=True)
class Decision(Generic[AnyStr]):
    """Whether a response is rewritten, and how.

    Attributes:
        rewrite: whether the body is rewritten.
        reason: why not, when it is not (``"HEAD request"``, ``"not HTML: Content-Type
            image/png"``, ``"served as text/html but not HTML: JSON"``...); None when rewriting.
        headers: the response headers to send: untouched (the same pairs, in order) when
            passing through; when rewriting, ``Content-Length``, ``Content-MD5``, ``Digest``,
            ``Content-Digest``, ``Repr-Digest`` and ``Accept-Ranges`` dropped, ``ETag``
            weakened, and (when transcoding UTF-16) the ``Content-Type`` charset set to UTF-8.
        encoding: the encoding the body is read in (its WHATWG name), when rewriting.
        encoding_source: where that encoding came from (a byte order mark, the
            ``Content-Type`` charset, a ``<meta>``, an XML declaration, or the default).
        content_coding: the content coding decoded and re-applied (``"gzip"``, ``"deflate"``,
            ``"br"``, ``"zstd"``), or None for none; set when passing through too.
        mime_type: the ``Content-Type`` essence (``"text/html"``), or None when there is none.
        rewritten_headers: :attr:`headers` are those of a rewritten response: when rewriting,
            and for a ``HEAD`` whose ``GET`` would be rewritten (it has no body, but answers the
            headers the ``GET`` would: no ``Content-Length``, ``ETag`` weakened).  An
            integration calls its headers hook (the CSP nonce) when this is true.
    """

    rewrite: bool
    reason: str | None
    headers: list[tuple[AnyStr, AnyStr]]
    encoding: str | None = None
    encoding_source: EncodingSource | None = None
    content_coding: str | None = None
    mime_type: str | None = None
    rewritten_headers: bool = False


# --------------------------------------------------------------------------------------------
# Header parsing
# --------------------------------------------------------------------------------------------

_TOKEN: Final = frozenset(
    "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_WS: Final = " \t\r\n"


def _pairs(headers: Iterable[tuple[AnyStr, AnyStr]] | Mapping[AnyStr, AnyStr]
           ) -> list[tuple[AnyStr, AnyStr]]:
    """The header pairs, in order (a mapping's ``items()``)."""
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers)


def _str(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


#: The fields the decision reads.
_READ: Final = frozenset({"content-range", "range", "cache-control", "content-type",
                          "content-disposition", "content-encoding", "if-none-match"})


def _fields(headers: Iterable[tuple[str | bytes, str | bytes]]) -> dict[str, list[str]]:
    """The values of the fields the decision reads, by lower-case name, in order (one pass)."""
    fields: dict[str, list[str]] = {}
    for name, value in headers:
        key = (name.decode("latin-1") if isinstance(name, bytes) else name).lower()
        if key in _READ:
            fields.setdefault(key, []).append(_str(value))
    return fields


def _list_items(values: Iterable[str]) -> list[str]:
    """The members of a comma-separated list field (RFC 9110 5.6.1), lower case, outside
    quoted strings; empty members dropped."""
    items: list[str] = []
    for value in values:
        if '"' not in value:
            items.extend(item.strip(_WS).lower() for item in value.split(","))
            continue
        current: list[str] = []
        quoted = escaped = False
        for ch in value:
            if escaped:
                escaped = False
            elif quoted and ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = not quoted
            elif ch == "," and not quoted:
                items.append("".join(current).strip(_WS).lower())
                current = []
                continue
            current.append(ch)
        items.append("".join(current).strip(_WS).lower())
    return [item for item in items if item]


def _is_token(text: str) -> bool:
    return bool(text) and all(ch in _TOKEN for ch in text)


def _parse_mime(value: str) -> tuple[str, str | None] | None:
    """``(essence, charset)`` of one MIME type (MIME Sniffing's "parse a MIME type", the
    ``charset`` parameter only), or None when it is not one."""
    head, _, params = value.strip(_WS).partition(";")
    type_, slash, subtype = head.partition("/")
    subtype = subtype.rstrip(_WS)
    if not slash or not _is_token(type_) or not _is_token(subtype):
        return None
    charset: str | None = None
    rest = params
    while rest:
        name, eq, rest = rest.partition("=")
        name = name.strip(_WS).lower()
        if not eq:
            break
        if rest.startswith('"'):
            out: list[str] = []
            pos = 1
            while pos < len(rest) and rest[pos] != '"':
                if rest[pos] == "\\" and pos + 1 < len(rest):
                    pos += 1
                out.append(rest[pos])
                pos += 1
            param, rest = "".join(out), rest[pos + 1:].partition(";")[2]
        else:
            param, _, rest = rest.partition(";")
            param = param.strip(_WS)
        if name == "charset" and charset is None and param:
            charset = param
    return f"{type_.lower()}/{subtype.lower()}", charset


def _content_type(values: list[str]) -> tuple[str, str | None] | None:
    """Fetch's "extract a MIME type" over every ``Content-Type`` value: the last valid type
    wins, keeping an earlier charset of the same essence; None when there is none."""
    found: tuple[str, str | None] | None = None
    for item in _split_outside_quotes(values):
        parsed = _parse_mime(item)
        if parsed is None or parsed[0] == "*/*":
            continue
        if found is not None and parsed[0] == found[0] and parsed[1] is None:
            parsed = (parsed[0], found[1])
        found = parsed
    return found


def _split_outside_quotes(values: list[str]) -> list[str]:
    items: list[str] = []
    for value in values:
        if '"' not in value:
            items.extend(value.split(","))
            continue
        current: list[str] = []
        quoted = False
        for ch in value:
            if ch == '"':
                quoted = not quoted
            elif ch == "," and not quoted:
                items.append("".join(current))
                current = []
                continue
            current.append(ch)
        items.append("".join(current))
    return items


def _set_charset(value: str, charset: str) -> str:
    """A ``Content-Type`` value with its ``charset`` parameter replaced (or added)."""
    head, *params = value.split(";")
    kept = [p for p in params if p.strip(_WS).partition("=")[0].strip(_WS).lower() != "charset"]
    return ";".join([head.rstrip(_WS), *kept, f" charset={charset}"])


def _like(template: AnyStr, text: str) -> AnyStr:
    """``text`` as the type of ``template`` (bytes in latin-1)."""
    if isinstance(template, bytes):
        return text.encode("latin-1")
    return text


def _request_like(request_headers: RequestHeaders | None) -> str | bytes:
    """A template of the header type, for a response without headers: bytes when the request's
    are (ASGI), else str."""
    if request_headers is not None and not isinstance(request_headers, Mapping):
        for name, _ in request_headers:
            return b"" if isinstance(name, bytes) else ""
    return ""


# --------------------------------------------------------------------------------------------
# Content codings: bounded incremental decoders and streaming encoders
# --------------------------------------------------------------------------------------------


class ContentDecoder(Protocol):
    """A content coding undone incrementally, in bounded steps (from :func:`content_decoder`)."""

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of the next compressed bytes, each of at most 64 KiB (brotli's
        limit is looser: up to about 96 KiB), so memory is bounded whatever the ratio; raises
        :class:`ContentDecodingError` on corrupt data."""
        ...

    def finish(self) -> Iterator[bytes]:
        """What is left at the end of the body; raises :class:`ContentDecodingError` when the
        compressed data is truncated."""
        ...


_Decoder = ContentDecoder


class _Encoder(Protocol):
    def compress(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...
    def finish(self) -> bytes: ...


class _ZlibDecoder:
    """gzip (members concatenated too), zlib-wrapped or raw deflate, in steps of ``_STEP``."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.wbits: int | None = 31 if coding == "gzip" else None   # deflate: from its header
        self._pending = b""
        self._obj: Any = None
        self._done = False
        self._ignored = False   # data after the end was seen (and is ignored from there on)

    def decode(self, data: bytes) -> Iterator[bytes]:
        if self._ignored:
            return
        if self._obj is None:
            data = self._pending + data
            if self.wbits is None:
                if len(data) < 2:
                    self._pending = data
                    return
                cmf, flg = data[0], data[1]
                # A zlib header (RFC 1950) or else raw deflate (RFC 1951), as browsers accept.
                zlib_wrapped = cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf * 256 + flg) % 31 == 0
                self.wbits = 15 if zlib_wrapped else -15
            self._pending = b""
            self._obj = zlib.decompressobj(self.wbits)
        elif self._done and self._pending:
            data, self._pending = self._pending + data, b""
        while data:
            if self._done:
                # Only another gzip member may follow; anything else is ignored, as browsers do.
                if self.coding == "gzip" and data == b"\x1f":
                    self._pending = data    # (the next member's magic, cut in two)
                    return
                if self.coding != "gzip" or not data.startswith(b"\x1f\x8b"):
                    self._ignored = True
                    return
                self._obj = zlib.decompressobj(31)
                self._done = False
            try:
                out = self._obj.decompress(data, _STEP)
                while out:
                    yield out
                    if len(out) < _STEP and not self._obj.unconsumed_tail:
                        break
                    out = self._obj.decompress(self._obj.unconsumed_tail, _STEP)
            except zlib.error as exc:
                raise ContentDecodingError(f"corrupt {self.coding} body: {exc}") from exc
            data = b""
            if self._obj.eof:
                self._done = True
                data = self._obj.unused_data

    def finish(self) -> Iterator[bytes]:
        if not self._done:
            raise ContentDecodingError(
                f"truncated {self.coding} body: it ended before the end of the compressed data")
        return iter(())


class _ZlibEncoder:
    def __init__(self, wbits: int, level: int) -> None:
        self._obj = zlib.compressobj(level, zlib.DEFLATED, wbits)

    def compress(self, data: bytes) -> bytes:
        return self._obj.compress(data)

    def flush(self) -> bytes:
        return self._obj.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        return self._obj.flush(zlib.Z_FINISH)


class _BrotliDecoder:
    def __init__(self, module: Any) -> None:
        self._module = module
        self._obj = module.Decompressor()

    def decode(self, data: bytes) -> Iterator[bytes]:
        if not data:
            return
        if self._obj.is_finished():
            # (as the decoder says when the data after the end comes in the same chunk)
            raise ContentDecodingError("corrupt br body: data after the end of the stream")
        try:
            out = self._obj.process(data, output_buffer_limit=_STEP)
            while out:
                yield out
                out = self._obj.process(b"", output_buffer_limit=_STEP)
        except self._module.error as exc:
            raise ContentDecodingError(f"corrupt br body: {exc}") from exc

    def finish(self) -> Iterator[bytes]:
        if not self._obj.is_finished():
            raise ContentDecodingError(
                "truncated br body: it ended before the end of the compressed data")
        return iter(())


class _BrotliEncoder:
    def __init__(self, module: Any, quality: int) -> None:
        self._obj = module.Compressor(quality=quality)

    def compress(self, data: bytes) -> bytes:
        return self._obj.process(data)  # type: ignore[no-any-return]

    def flush(self) -> bytes:
        return self._obj.flush()  # type: ignore[no-any-return]

    def finish(self) -> bytes:
        return self._obj.finish()  # type: ignore[no-any-return]


class _ZstdDecoder:
    """zstd frames (one after another too), with ``compression.zstd``'s ``max_length``."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self._obj = module.ZstdDecompressor()
        self._started = False

    def decode(self, data: bytes) -> Iterator[bytes]:
        try:
            while data:
                if self._obj.eof:
                    self._obj = self._module.ZstdDecompressor()
                self._started = True
                out = self._obj.decompress(data, _STEP)
                while out:
                    yield out
                    if self._obj.needs_input or self._obj.eof:
                        break
                    out = self._obj.decompress(b"", _STEP)
                data = self._obj.unused_data if self._obj.eof else b""
        except self._module.ZstdError as exc:
            raise ContentDecodingError(f"corrupt zstd body: {exc}") from exc

    def finish(self) -> Iterator[bytes]:
        if not self._started or not self._obj.eof:
            raise ContentDecodingError(
                "truncated zstd body: it ended before the end of the compressed data")
        return iter(())


class _ZstdEncoder:
    def __init__(self, module: Any, level: int) -> None:
        self._cls = module.ZstdCompressor
        self._obj = module.ZstdCompressor(level=level)

    def compress(self, data: bytes) -> bytes:
        return self._obj.compress(data)  # type: ignore[no-any-return]

    def flush(self) -> bytes:
        return self._obj.flush(self._cls.FLUSH_BLOCK)  # type: ignore[no-any-return]

    def finish(self) -> bytes:
        return self._obj.flush(self._cls.FLUSH_FRAME)  # type: ignore[no-any-return]


def _import_brotli() -> Any:
    """The ``brotli`` module if it has the bounded decoder (``output_buffer_limit``, 1.2+)."""
    try:
        module = importlib.import_module("brotli")
    except ImportError:
        return None
    if not hasattr(module.Decompressor(), "can_accept_more_data"):
        return None
    return module


def _import_zstd() -> Any:
    """``compression.zstd`` (Python 3.14+) or its backport ``backports.zstd``: both have the
    bounded ``decompress(data, max_length)``."""
    names = ["compression.zstd"] if sys.version_info >= (3, 14) else []
    for name in [*names, "backports.zstd"]:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


#: Each content coding decoded: its name, and what to install when its library is missing.
_CODINGS: Final[dict[str, str]] = {
    "gzip": "", "x-gzip": "", "deflate": "",
    "br": "pip install htmlstream[brotli] (brotli>=1.2)",
    "zstd": "pip install htmlstream[zstd] (backports.zstd; Python 3.14+ has compression.zstd)",
}
_modules: dict[str, Any] = {}


def _codec_module(coding: str) -> Any:
    """The library for ``coding`` (``"br"`` or ``"zstd"``), imported once, or None."""
    if coding not in _modules:
        _modules[coding] = _import_brotli() if coding == "br" else _import_zstd()
    return _modules[coding]


def _make_decoder(coding: str) -> _Decoder:
    if coding in ("gzip", "deflate"):
        return _ZlibDecoder(coding)
    if coding == "br":
        return _BrotliDecoder(_codec_module("br"))
    return _ZstdDecoder(_codec_module("zstd"))


def content_decoder(coding: str) -> ContentDecoder:
    """A bounded incremental decoder for a content coding: ``gzip`` (``x-gzip``), ``deflate``
    (zlib-wrapped or raw), ``br`` and ``zstd`` (with their optional libraries), the one
    :class:`ResponseRewrite` uses; for a layer that reads bodies itself (``htmlstream.scrape``).

    Raises:
        ContentDecodingError: the coding is not one of these (a list of codings, too), or its
            library is missing (the message says what to install).
    """
    check_type(coding, str, "content_decoder()", "coding", "a str (a content coding)")
    name = coding.strip(_WS).lower()
    name = "gzip" if name == "x-gzip" else name
    if name not in _CODINGS:
        raise ContentDecodingError(f"content coding {coding!r} is not supported "
                                   f"(gzip, deflate, br and zstd are)")
    if _CODINGS[name] and _codec_module(name) is None:
        raise ContentDecodingError(f"content coding {name} needs a library: {_CODINGS[name]}")
    return _make_decoder(name)


def _make_encoder(coding: str, decoder: _Decoder, options: HttpOptions) -> _Encoder:
    if isinstance(decoder, _ZlibDecoder):
        # The same format as received: gzip, zlib-wrapped or raw deflate.
        return _ZlibEncoder(decoder.wbits or 15, options.gzip_level)
    if coding == "br":
        return _BrotliEncoder(_codec_module("br"), options.brotli_quality)
    return _ZstdEncoder(_codec_module("zstd"), options.zstd_level)


# --------------------------------------------------------------------------------------------
# Decisions
# --------------------------------------------------------------------------------------------

#: Headers dropped when the body is rewritten: its length, its digests, and byte ranges of it.
_DROPPED: Final = frozenset({
    "content-length", "content-md5", "digest", "content-digest", "repr-digest", "accept-ranges",
})
_NO_BODY_STATUS: Final = {204: "204 No Content", 205: "205 Reset Content",
                          304: "304 Not Modified"}


@dataclasses.dataclass(slots=True)
class _Pending:
    """A response that the headers do not decide: what the body decides it with."""

    sniff: Literal["verify", "detect", "none"]
    mime_type: str | None
    charset: str | None
    coding: str | None


def _check_headers(
    method: str | bytes,
    status: int,
    headers: list[tuple[AnyStr, AnyStr]],
    request_headers: RequestHeaders | None,
    options: HttpOptions,
    transcode: bool = False,
) -> Decision[AnyStr] | _Pending:
    """The decision the headers alone give (a pass-through), or what the body needs.

    Raises:
        ResponseRefused: the response would be rewritten but cannot be (a byte range of it, a
            content coding that is not decoded).
    """

    def passing(reason: str, mime: str | None = None, coding: str | None = None
                ) -> Decision[AnyStr]:
        return Decision(False, reason, list(headers), content_coding=coding, mime_type=mime)

    verb = _str(method).upper()
    if verb == "CONNECT" and 200 <= status < 300:
        return passing("CONNECT: a tunnel, not a body")
    if status < 200:
        return passing(f"{status} informational response: no body")
    if status == 304 and request_headers is not None:
        weakened = _weakened_304(headers, request_headers)
        if weakened is not None:
            # The client holds a rewritten copy, validated by the weak tag it was sent: the
            # origin's strong one would replace it in the client's cache (RFC 9111 4.3.4).
            return Decision(False, "304 Not Modified: no body (its ETag weakened, as the "
                            "client's rewritten copy has it)", weakened)
    if status in _NO_BODY_STATUS:
        return passing(f"{_NO_BODY_STATUS[status]}: no body")
    fields = _fields(headers)
    # (The request's Range, If-Range and Cache-Control are not read: a response to a Range
    # request that is not partial is the whole representation, rewritten like any; and a
    # client's no-transform would let any client read the original page.)
    if "no-transform" in _list_items(fields.get("cache-control", ())):
        return passing("Cache-Control: no-transform")

    type_values = fields.get("content-type", [])
    parsed = _content_type(type_values) if type_values else None
    mime, charset = parsed if parsed is not None else (None, None)
    # (A 416's Content-Range, "bytes */length", says which ranges exist: its body is an error
    # page, rewritten like any.)
    partial = status == 206 or ("content-range" in fields and status != 416)
    if mime == "multipart/byteranges":
        # Parts of any type, a page's too: never passed (forward_range sends one range only).
        raise ResponseRefused("a multipart/byteranges response (its parts may be a page's)")
    if mime is None:
        if not options.sniff_missing:
            return passing("no Content-Type (and HttpOptions.sniff_missing is off)")
        sniff: Literal["verify", "detect", "none"] = "detect"
    elif mime in options.html_types:
        sniff = "verify" if options.verify_html else "none"
    elif mime in options.sniff_types:
        sniff = "detect"
    else:
        return passing(f"not HTML: Content-Type {mime}", mime)

    disposition = fields.get("content-disposition")
    if (disposition and not options.rewrite_attachments
            and disposition[-1].strip(_WS).lower().startswith("attachment")):
        return passing("Content-Disposition: attachment (a download)", mime)

    # From here on the response would be rewritten (or sniffed to be): its original bytes must
    # not get past the rewrite.
    what = "no Content-Type" if mime is None else mime
    if partial:
        why = f"{status} Partial Content" if status == 206 else "Content-Range"
        raise ResponseRefused(f"{why} of a response that would be rewritten ({what}): a byte "
                              f"range of a page cannot be rewritten")
    codings = [c for c in _list_items(fields.get("content-encoding", ())) if c != "identity"]
    coding: str | None = None
    if len(codings) > 1:
        raise ResponseRefused(f"stacked content codings ({', '.join(codings)}) of a response "
                              f"that would be rewritten ({what}) are not decoded")
    if codings:
        coding = "gzip" if codings[0] == "x-gzip" else codings[0]
        if codings[0] not in _CODINGS:
            raise ResponseRefused(f"unknown content coding {codings[0]!r} of a response that "
                                  f"would be rewritten ({what})")
        if _CODINGS[codings[0]] and _codec_module(coding) is None:
            raise ResponseRefused(f"Content-Encoding {coding} of a response that would be "
                                  f"rewritten ({what}) needs a library: {_CODINGS[coding]}")
    if verb == "HEAD":
        # No body to decide with: the headers the GET would have (rewritten), as far as the
        # headers tell (a UTF-16 charset is transcoded, or refused, as for the GET).
        new_headers = _rewritten_headers(headers, options)
        if charset is not None and _non_ascii_charset(charset):
            if not transcode:
                raise ResponseRefused(_NON_ASCII_REFUSAL.format(
                    encoding=charset.strip(_WS), source="transport"))
            new_headers = [
                (k, _like(v, _set_charset(_str(v), "utf-8")))
                if _str(k).lower() == "content-type" else (k, v)
                for k, v in new_headers
            ]
        return Decision(False, "HEAD request: no body (the headers of the GET, rewritten)",
                        new_headers, content_coding=coding, mime_type=mime,
                        rewritten_headers=True)
    return _Pending(sniff, mime, charset, coding)


def _weakened_304(headers: list[tuple[AnyStr, AnyStr]], request_headers: RequestHeaders
                  ) -> list[tuple[AnyStr, AnyStr]] | None:
    """A 304's headers with its strong ``ETag`` weakened when the request's ``If-None-Match``
    named it weak only (the client's copy is a rewrite of it), or None when nothing changes."""
    request = _fields(request_headers.items() if isinstance(request_headers, Mapping)
                      else request_headers)
    asked = {tag.strip(_WS) for tag in _split_outside_quotes(request.get("if-none-match", []))}
    weak = {tag[2:] for tag in asked if tag.startswith("W/")} - asked
    if not weak:
        return None
    out: list[tuple[AnyStr, AnyStr]] = []
    changed = False
    for name, value in headers:
        if _str(name).lower() == "etag" and _str(value).strip(_WS) in weak:
            value = _like(value, "W/" + _str(value).strip(_WS))
            changed = True
        out.append((name, value))
    return out if changed else None


#: Why a page in UTF-16 is refused by a rewriter that does not transcode.
_NON_ASCII_REFUSAL: Final = (
    "the page's encoding ({encoding}, from the {source}) is not ASCII-compatible and the "
    "rewriter does not transcode (Rewriter(transcode=True) rewrites it as UTF-8): a browser "
    "would render the original bytes")


def _non_ascii_charset(label: str) -> bool:
    try:
        return not lookup_encoding(label.strip(_WS)).ascii_compatible
    except EncodingError:
        return False


def _decide_body(
    pending: _Pending,
    headers: list[tuple[AnyStr, AnyStr]],
    prefix: bytes,
    transcode: bool,
    default_encoding: str,
    options: HttpOptions,
) -> Decision[AnyStr]:
    """The decision, from the first decoded body bytes (``HOLD_BYTES`` of them, or the whole
    body when shorter)."""
    mime, coding = pending.mime_type, pending.coding

    def passing(reason: str) -> Decision[AnyStr]:
        return Decision(False, reason, list(headers), content_coding=coding, mime_type=mime)

    # The encoding: byte order mark, transport charset, prescan, default (HTML Standard).
    transport = None
    transport_label = (pending.charset or "").strip(_WS)
    if transport_label:
        try:
            transport = lookup_encoding(transport_label)
        except EncodingError:
            transport = None    # an unknown label is ignored, as browsers do
    found = _sniff_encoding(prefix[:HOLD_BYTES],
                            None if transport is None else f"text/html; charset={transport_label}",
                            default=default_encoding)
    if found.encoding == "replacement":     # (a name that is not a label)
        return passing(f"charset {pending.charset} is read as the replacement encoding "
                       f"(one U+FFFD): nothing to rewrite")
    encoding = lookup_encoding(found.encoding)

    if pending.sniff != "none":
        sample = prefix[:HOLD_BYTES]
        if not encoding.ascii_compatible and found.source != "bom":
            # UTF-16 by its charset: sniff its characters, not its bytes.
            sample = encoding.decode(sample).encode("utf-8")
        verdict = sniff_content(sample)
        if verdict is not None:
            if pending.sniff == "verify":
                return passing(f"served as {mime} but not HTML: {verdict}")
            what = "no Content-Type" if mime is None else f"Content-Type {mime}"
            return passing(f"{what} and the body is not HTML: {verdict}")

    new_headers = _rewritten_headers(headers, options)
    if not encoding.ascii_compatible:
        if not transcode:
            raise ResponseRefused(_NON_ASCII_REFUSAL.format(encoding=encoding.name,
                                                            source=found.source))
        # Transcoded: the output is UTF-8, and the Content-Type says so.
        new_headers = [
            (k, _like(v, _set_charset(_str(v), "utf-8")))
            if _str(k).lower() == "content-type" else (k, v)
            for k, v in new_headers
        ]
    return Decision(True, None, new_headers, encoding.name, found.source, coding, mime, True)


def _rewritten_headers(headers: list[tuple[AnyStr, AnyStr]], options: HttpOptions
                       ) -> list[tuple[AnyStr, AnyStr]]:
    out: list[tuple[AnyStr, AnyStr]] = []
    for name, value in headers:
        key = (name.decode("latin-1") if isinstance(name, bytes) else name).lower()
        if key in _DROPPED:
            continue
        if key == "etag":
            if options.drop_etag:
                continue
            text = _str(value).strip(_WS)
            if not text.startswith("W/"):
                value = _like(value, "W/" + text)
        out.append((name, value))
    return out


def _check_response(where: str, method: object, status: object, headers: object) -> None:
    """The TypeErrors of the response entry points (once per response)."""
    check_type(method, (str, bytes), where, "method", "a str or bytes (the request method)")
    check_type(status, int, where, "status", "an int (the status code)")
    check_type(headers, (Mapping, Iterable), where, "headers",
               "(name, value) pairs of str or of bytes, or a mapping")


def _check_request(where: str, method: object, path: object, headers: object,
                   options: object) -> None:
    """The TypeErrors of the request entry points (once per request)."""
    check_type(method, (str, bytes), where, "method", "a str or bytes (the request method)")
    check_type(path, (str, bytes), where, "path", "a str or bytes (the request target)")
    check_type(headers, (Mapping, Iterable), where,
               "request_headers" if where.startswith("forward_range") else "headers",
               "(name, value) pairs of str or of bytes, or a mapping")
    if options is not None:
        check_type(options, HttpOptions, where, "options", "an HttpOptions or None")


def decide_headers(
    method: str | bytes,
    status: int,
    headers: ResponseHeaders[AnyStr],
    *,
    request_headers: RequestHeaders | None = None,
    transcode: bool = False,
    options: HttpOptions | None = None,
) -> Decision[AnyStr] | None:
    """The decision the request method, status and headers give alone (a pass-through: 1xx,
    204/205/304, not HTML, an attachment, ``no-transform``; and ``HEAD``, with the headers of
    the ``GET``), or None when the first body bytes are needed (:func:`decide`).

    Raises:
        ResponseRefused: a response that would be rewritten and cannot be: partial (206,
            ``Content-Range``, ``multipart/byteranges``), or in a content coding that is not
            decoded.
    """
    _check_response("decide_headers()", method, status, headers)
    result = _check_headers(method, status, _pairs(headers), request_headers,
                            options or _DEFAULT_OPTIONS, transcode)
    return result if isinstance(result, Decision) else None


def decide(
    method: str | bytes,
    status: int,
    headers: ResponseHeaders[AnyStr],
    prefix: bytes,
    *,
    request_headers: RequestHeaders | None = None,
    transcode: bool = False,
    default_encoding: str = "utf-8",
    options: HttpOptions | None = None,
) -> Decision[AnyStr]:
    """The whole decision, given the first bytes of the body after content decoding:
    ``HOLD_BYTES`` (1024) of them, or the whole body when it is shorter.

    ``transcode`` is the rewriter's setting (UTF-16 bodies are rewritten only with it, and
    refused without it); ``default_encoding`` is used when the document declares none.
    :class:`ResponseRewrite` does this, and the content decoding, for a body fed in chunks.

    Raises:
        ResponseRefused: see :func:`decide_headers`; and a page in UTF-16 without
            ``transcode``.
    """
    _check_response("decide()", method, status, headers)
    check_type(prefix, BYTES_LIKE, "decide()", "prefix", "bytes-like (the first body bytes)")
    opts = options or _DEFAULT_OPTIONS
    header_list = _pairs(headers)
    result = _check_headers(method, status, header_list, request_headers, opts, transcode)
    if isinstance(result, Decision):
        return result
    return _decide_body(result, header_list, bytes(prefix), transcode,
                        opts.default_encoding or default_encoding, opts)


# --------------------------------------------------------------------------------------------
# Requests: what to send upstream (or let the application see)
# --------------------------------------------------------------------------------------------


def decodable_codings() -> frozenset[str]:
    """The content codings this installation decodes (and so rewrites): ``gzip`` and
    ``deflate`` always, ``br`` and ``zstd`` when their libraries import (the ``brotli`` and
    ``zstd`` extras)."""
    return frozenset(name for name in ("gzip", "deflate", "br", "zstd")
                     if not _CODINGS[name] or _codec_module(name) is not None)


def _qvalue(params: list[str]) -> float | None:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip(_WS).lower() == "q":
            try:
                return float(value.strip(_WS))
            except ValueError:
                return None
    return 1.0


def accept_encoding(values: Iterable[str | bytes] | str | bytes | None) -> str:
    """The ``Accept-Encoding`` to send upstream (or to show the application) for the client's
    ``values`` (every field's value; None or empty when it sent none): the codings the client
    accepts that :func:`decodable_codings` has, with their weights, so that any response the
    origin compresses can be decoded and rewritten, and is still in a coding the client
    accepts.  ``*`` stands for the decodable codings it does not name; ``identity`` is kept as
    the client gave it.  ``"identity"`` when nothing is left, or the client sent no field (which
    would let the origin choose any coding, one this installation may not decode)."""
    if values is None:
        values = []
    elif isinstance(values, str | bytes):
        values = [values]
    else:
        check_type(values, Iterable, "accept_encoding()", "values",
                   "a str or bytes, an iterable of them (each field's value), or None")
    # (Cached: a server sees the same few fields again and again; bounded, so varied ones
    # cost no memory.)
    return _accept_encoding(tuple(_str(value) for value in values), decodable_codings())


@functools.lru_cache(maxsize=256)
def _accept_encoding(values: tuple[str, ...], decodable: frozenset[str]) -> str:
    items: list[tuple[str, str, float | None]] = []    # (coding, item as given, weight)
    for value in values:
        for item in _split_outside_quotes([value]):
            name, *params = item.split(";")
            coding = name.strip(_WS).lower()
            if coding:
                items.append((coding, item.strip(_WS), _qvalue(params)))
    named = {"gzip" if coding == "x-gzip" else coding for coding, _, _ in items}
    out: list[str] = []
    for coding, item, weight in items:
        if weight is None:
            continue                # a malformed weight: not accepted
        canonical = "gzip" if coding == "x-gzip" else coding
        if coding == "identity":
            out.append(item)
        elif coding == "*":
            if weight > 0:
                suffix = "" if weight == 1.0 else f";q={weight:g}"
                out.extend(f"{c}{suffix}" for c in sorted(decodable - named))
        elif canonical in decodable and weight > 0:
            out.append(item)
    if not any(_qvalue(i.split(";")[1:]) for i in out):
        return "identity"
    return ", ".join(out)


def _single_range(values: list[str]) -> bool:
    if len(values) != 1:
        return False
    unit, eq, ranges = values[0].partition("=")
    return bool(eq) and unit.strip(_WS).lower() == "bytes" and "," not in ranges


def forward_range(method: str | bytes, path: str | bytes, request_headers: RequestHeaders,
                  options: HttpOptions | None = None) -> bool:
    """Whether a request's ``Range`` and ``If-Range`` are sent on (upstream, or to the
    application): only for a ``GET`` or ``HEAD`` of one byte range whose response is not a
    page, as far as the request tells: a browser's media request (``Sec-Fetch-Dest`` in
    ``HttpOptions.range_destinations``: a video, an image...) or a path ending in one of
    ``HttpOptions.range_extensions`` (``.mp4``, ``.png``, ``.zip``...).  Any other request's
    range is dropped: the origin answers with the whole representation, rewritten and sent as
    a ``200`` (which HTTP allows for any ``Range`` request).

    This is for efficiency only, not what protects: whatever the request said, a partial
    response that would be rewritten is refused (:class:`ResponseRefused`), so a request that
    lies (a page at ``/a.mp4``, a forged ``Sec-Fetch-Dest``) gets an error, never the page's
    bytes."""
    _check_request("forward_range()", method, path, request_headers, options)
    opts = options or _DEFAULT_OPTIONS
    if _str(method).upper() not in ("GET", "HEAD"):
        return False
    pairs = (list(request_headers.items()) if isinstance(request_headers, Mapping)
             else list(request_headers))
    ranges: list[str] = []
    dest: list[str] = []
    for name, value in pairs:
        key = _str(name).lower()
        if key == "range":
            ranges.append(_str(value))
        elif key == "sec-fetch-dest":
            dest.append(_str(value).strip(_WS).lower())
    if not _single_range(ranges):
        return False
    if dest and dest[-1] in opts.range_destinations:
        return True
    target = _str(path).partition("?")[0].partition("#")[0]
    last = urllib.parse.unquote(target.rpartition("/")[2])
    base, dot, extension = last.rpartition(".")
    return bool(dot and base) and extension.lower() in opts.range_extensions


#: Request fields :func:`forwarded_request_headers` drops or replaces.
_RANGE_FIELDS: Final = frozenset({"range", "if-range"})


def forwarded_request_headers(method: str | bytes, path: str | bytes,
                              headers: Iterable[tuple[AnyStr, AnyStr]],
                              options: HttpOptions | None = None
                              ) -> list[tuple[AnyStr, AnyStr]]:
    """The request headers to send upstream (or to let the application see), so that no
    response gets past the rewrite: ``Range`` and ``If-Range`` dropped unless
    :func:`forward_range` says they may go on, and ``Accept-Encoding`` replaced by one field
    naming only codings this installation decodes (:func:`accept_encoding`).  Pairs of the
    same type as given, in order (the new ``Accept-Encoding`` where the first one was, or at
    the end; its name in lower case)."""
    _check_request("forwarded_request_headers()", method, path, headers, options)
    pairs = list(headers)
    keep_range = forward_range(method, path, pairs, options)
    codings = [value for name, value in pairs if _str(name).lower() == "accept-encoding"]
    out: list[tuple[AnyStr, AnyStr]] = []
    placed = False
    for name, value in pairs:
        key = _str(name).lower()
        if key in _RANGE_FIELDS and not keep_range:
            continue
        if key == "accept-encoding":
            if not placed:
                out.append((_like(name, "accept-encoding"),
                            _like(value, accept_encoding(codings))))
                placed = True
            continue
        out.append((name, value))
    if not placed:
        field = accept_encoding(None)
        if not pairs:       # (no pair to take the type from: str)
            return cast(list[tuple[AnyStr, AnyStr]], [("accept-encoding", field)])
        out.append((_like(pairs[0][0], "accept-encoding"), _like(pairs[0][0], field)))
    return out


def markdown_requested(request_headers: RequestHeaders | None) -> bool:
    """Whether a request gets Markdown rather than HTML: its ``Accept`` fields (read as one
    list) prefer ``text/markdown`` to ``text/html``, by
    :func:`htmlstream.recipes.markdown.accepts_markdown` (q-values, the most specific range
    that matches; a browser's ``text/html,...,*/*;q=0.8`` gets HTML).  What
    :class:`ResponseRewrite` asks when given ``markdown=``."""
    if request_headers is None:
        return False
    check_type(request_headers, (Mapping, Iterable), "markdown_requested()", "request_headers",
               "(name, value) pairs of str or of bytes, or a mapping")
    pairs = request_headers.items() if isinstance(request_headers, Mapping) else request_headers
    values = [_str(value).strip(_WS) for name, value in pairs if _str(name).lower() == "accept"]
    accept = ", ".join(value for value in values if value)
    if not accept:
        return False
    from htmlstream.recipes.markdown import accepts_markdown  # (a layer: imported when used)
    return accepts_markdown(accept)


#: The Content-Type of a Markdown response.
_MARKDOWN_TYPE: Final = "text/markdown; charset=utf-8"
#: Response fields a Markdown response drops: what describes the HTML (its type, its
#: validator) and what the conversion sets itself.
_MARKDOWN_DROPPED: Final = frozenset({"content-type", "etag", "content-signal",
                                      "x-markdown-tokens"})


def _negotiated_headers(headers: list[tuple[AnyStr, AnyStr]], markdown: bool,
                        options: MarkdownOptions, like: AnyStr) -> list[tuple[AnyStr, AnyStr]]:
    """A rewritten response's headers under negotiation: ``Vary: Accept`` added (unless a
    ``Vary`` names it or ``*``); for Markdown, its ``Content-Type``, no ``ETag``, and the
    configured ``Content-Signal``."""
    out: list[tuple[AnyStr, AnyStr]] = []
    varies = False
    for name, value in headers:
        key = _str(name).lower()
        if key == "vary" and {"accept", "*"} & set(_list_items([_str(value)])):
            varies = True
        if markdown and key in _MARKDOWN_DROPPED:
            continue
        out.append((name, value))
    if markdown:
        out.append((_like(like, "content-type"), _like(like, _MARKDOWN_TYPE)))
    if not varies:
        out.append((_like(like, "vary"), _like(like, "Accept")))
    if markdown and options.content_signal is not None:
        out.append((_like(like, "content-signal"), _like(like, options.content_signal)))
    return out


_warned: set[str] = set()


def warn_app_compresses(integration: str, coding: str) -> None:
    """Say once per process and integration (a :class:`RuntimeWarning`, and on the
    ``htmlstream.http`` logger) that the application compresses its pages itself, before the
    rewrite: each is decoded and re-encoded (and refused when its coding cannot be decoded).
    The middlewares call this; docs/guide/integrations.md gives the order of middlewares that
    avoids it (compression outside the rewrite)."""
    check_type(integration, str, "warn_app_compresses()", "integration",
               "a str (the integration's name)")
    check_type(coding, str, "warn_app_compresses()", "coding", "a str (the content coding)")
    if integration in _warned:
        return
    _warned.add(integration)
    message = (
        f"htmlstream {integration}: the application compresses its HTML itself "
        f"(Content-Encoding: {coding}), inside the rewriting middleware: every page is decoded "
        f"and re-encoded, and a coding htmlstream cannot decode is refused. Put the "
        f"compression middleware outside (around) the rewriting one, so that it compresses "
        f"the rewritten page.")
    logging.getLogger("htmlstream.http").warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


# --------------------------------------------------------------------------------------------
# The body transform
# --------------------------------------------------------------------------------------------


class ResponseRewrite(Generic[AnyStr]):
    """One response: the decision, then its body rewritten chunk by chunk (sans-I/O).

    ``feed(chunk)`` returns the bytes to send for that chunk; ``close()`` the rest.  Until
    :attr:`decided`, ``feed`` holds the body back (at most :data:`HOLD_BYTES` decoded bytes, what
    content sniffing and the ``<meta charset>`` prescan read) and returns ``b""``; the chunk that
    decides returns everything so far.  Send :attr:`headers` before the first body byte: they are
    available once :attr:`decided`, which is at construction when the headers alone decide.

    A pass-through response's body is returned byte for byte (compressed bodies are never
    re-encoded then).  A rewritten one is decoded from its content coding in bounded steps,
    rewritten, and re-encoded with the same coding.

    Args:
        rewriter: the rules; a stream is made for the document in the encoding decided.
        method: the request method.
        status: the response status code.
        headers: the response headers, ``(name, value)`` pairs all ``bytes`` or all ``str``
            (or a mapping: its ``items()``); names in any case; repeated fields in order.
            :attr:`headers` is a list of pairs of the same type.
        request_headers: the request headers, if known (for ``Range`` and ``no-transform``):
            pairs or a mapping.
        options: what is rewritten and how (:class:`HttpOptions`).
        context: a per-document mapping passed to ``rewriter.stream(context=...)``; only given
            to the stream when not None, and refused (TypeError) by a ``Rewriter.stream`` that
            takes none.

    Raises (from ``feed``/``close``, once output was sent): :class:`ContentDecodingError` (corrupt
    or truncated compressed body), :class:`DecodedSizeExceeded`, and whatever the rewriter
    raises.  The integration should then abort the response, never end it cleanly.
    """

    def __init__(
        self,
        rewriter: Rewriter,
        method: str | bytes,
        status: int,
        headers: ResponseHeaders[AnyStr],
        *,
        request_headers: RequestHeaders | None = None,
        options: HttpOptions | None = None,
        context: Mapping[str, Any] | None = None,
        markdown: MarkdownOptions | None = None,
    ) -> None:
        if not callable(getattr(rewriter, "stream", None)):
            raise TypeError(f"ResponseRewrite(): rewriter must be a Rewriter, not "
                            f"{type(rewriter).__name__}")
        _check_response("ResponseRewrite()", method, status, headers)
        self._rewriter = rewriter
        self._options = opts = options or _DEFAULT_OPTIONS
        self._headers: list[tuple[AnyStr, AnyStr]] = _pairs(headers)
        self._context = context
        if markdown is not None:
            check_type(markdown, MarkdownOptions, "ResponseRewrite()", "markdown",
                       "a MarkdownOptions or None")
        # Content negotiation (issue 36): whether this request gets Markdown, the converter
        # of the stream's output, the Markdown characters written, and the output held back
        # until the end (to count its tokens) while it is not longer than hold_chars.
        if request_headers is not None and not isinstance(request_headers, Mapping):
            request_headers = list(request_headers)     # (read more than once)
        self._md_options = markdown
        self._markdown = markdown is not None and markdown_requested(request_headers)
        self._conv: Any = None
        self._md_chars = 0
        self._md_hold: list[bytes] | None = None
        self._like: Any = (self._headers[0][0] if self._headers
                           else _request_like(request_headers))
        if context is not None and "context" not in inspect.signature(rewriter.stream).parameters:
            raise TypeError("this htmlstream's Rewriter.stream() takes no context")
        self._decision: Decision[AnyStr] | None = None
        self._pending: _Pending | None = None
        #: The rewriter's stream, once rewriting (its ``passthrough_reason`` etc.).
        self.stream: RewriterStream | None = None
        self._decoder: _Decoder | None = None
        self._encoder: _Encoder | None = None
        self._raw: list[bytes] = []         # the body as received, while undecided
        self._raw_size = 0
        self._prefix = bytearray()          # the decoded body, while undecided
        self._decoded = 0
        self._coding = ""                   # the content coding decoded ("" for none)
        self._finished = False              # the decoder's finish() was called
        self._unflushed = False
        self._closed = False
        self._early = False                 # early_headers() was called
        self._refused: ResponseRefused | None = None
        # A rewriter with async handlers (issue 30): its stream is an async one, fed by this
        # object's sync code run where the engine can pause (afeed_iter, aclose_iter).
        self._runner: EngineRunner | None = None
        # (with a runner: output computed and not returned yet, which output taken before a
        # handler waits must follow: _encode_early drains it first)
        self._held: list[bytes] = []
        if getattr(rewriter, "has_async_handlers", False):
            self._runner = EngineRunner(early=self._encode_early)
        result = _check_headers(method, status, self._headers, request_headers, opts,
                                rewriter.transcode)
        if isinstance(result, Decision):
            self._decision = self._negotiate(result)
        else:
            self._pending = result
            if result.coding is not None:
                self._coding = result.coding
                self._decoder = _make_decoder(result.coding)

    # ------------------------------------------------------------------ the decision

    @property
    def decided(self) -> bool:
        """Whether the decision is made (and :attr:`headers` available).  A Markdown response
        (``markdown=``) is decided at its end, or once its Markdown outgrows
        ``MarkdownOptions.hold_chars``: its output is held until then."""
        return self._decision is not None and self._md_hold is None

    @property
    def markdown(self) -> bool:
        """Whether the body is (or, for a ``HEAD``, would be) converted to Markdown: the
        request asked for it (``markdown=`` given) and the response is rewritten."""
        decision = self._decision
        return self._markdown and decision is not None and decision.rewritten_headers

    @property
    def markdown_tokens(self) -> int | None:
        """The ``x-markdown-tokens`` value sent (the Markdown's characters divided by four,
        rounded up: :func:`htmlstream.recipes.markdown.estimate_tokens`), or None when it was
        not (not Markdown, or streamed past ``hold_chars``)."""
        for name, value in self._decision.headers if self._decision is not None else ():
            if _str(name).lower() == "x-markdown-tokens":
                return int(_str(value))
        return None

    def _negotiate(self, decision: Decision[AnyStr]) -> Decision[AnyStr]:
        """The decision with the headers of content negotiation; for a Markdown response
        rewritten, the converter (and the output held back to count its tokens)."""
        md = self._md_options
        if md is None or not decision.rewritten_headers:
            return decision
        markdown = self._markdown
        decision = dataclasses.replace(decision, headers=_negotiated_headers(
            decision.headers, markdown, md, self._like))
        if markdown and decision.rewrite:
            from htmlstream.recipes.markdown import MarkdownConverter
            encoding = decision.encoding or "utf-8"
            if not lookup_encoding(encoding).ascii_compatible:
                encoding = "utf-8"  # (transcoded by the rewriter: see _decide_body)
            self._conv = MarkdownConverter(encoding=encoding, main_content=md.main_content)
            if md.hold_chars:
                self._md_hold = []
        return decision

    def _md(self, data: bytes) -> bytes:
        """The stream's output, as Markdown when converting."""
        conv = self._conv
        if conv is None:
            return data
        text: str = conv.feed(data) if data else ""
        self._md_chars += len(text)
        return text.encode("utf-8", "surrogatepass")

    def _md_end(self) -> bytes:
        conv = self._conv
        if conv is None:
            return b""
        text: str = conv.close()
        self._md_chars += len(text)
        return text.encode("utf-8", "surrogatepass")

    def _holding(self, out: bytes, final: bool) -> bytes:
        """``out`` to send, or b"" while a Markdown response is held back to count its tokens
        (the whole, with ``x-markdown-tokens``, at its end; all so far, without the header,
        once it outgrows ``hold_chars``)."""
        hold = self._md_hold
        if hold is None:
            return out
        if out:
            hold.append(out)
        md = self._md_options
        assert md is not None
        if final:
            done = self._decision
            if done is not None:
                # (estimate_tokens of the whole Markdown: its characters / 4, rounded up)
                tokens = (self._md_chars + 3) // 4
                headers = list(done.headers)
                headers.append((_like(self._like, "x-markdown-tokens"),
                                _like(self._like, str(tokens))))
                self._decision = dataclasses.replace(done, headers=headers)
        elif self._md_chars <= md.hold_chars:
            return b""
        self._md_hold = None
        return b"".join(hold)

    @property
    def decision(self) -> Decision[AnyStr] | None:
        """The decision, or None while the body is held back."""
        return self._decision

    @property
    def headers(self) -> list[tuple[AnyStr, AnyStr]]:
        """The response headers to send.

        Raises:
            RuntimeError: not decided yet (feed more of the body, or close it).
        """
        if self._decision is None or self._md_hold is not None:
            raise RuntimeError(
                f"the response is not decided yet: feed its body (at most {HOLD_BYTES} decoded "
                f"bytes are held back) or close() it")
        return self._decision.headers

    def early_headers(self) -> list[tuple[AnyStr, AnyStr]]:
        """The headers to send before the decision, for an integration that must send them
        before the first body byte (mitmproxy's streamed responses): once decided,
        :attr:`headers`; before, those of a rewrite (``Content-Length`` and digests dropped,
        ``ETag`` weakened), which are right for a body passed through untouched too.
        Not with ``markdown=`` (ValueError): whether the body is Markdown is
        not known before the decision.

        After this call a body that would need transcoding (UTF-16 with
        ``Rewriter(transcode=True)``: its ``Content-Type`` charset would change) passes through
        untouched instead, since the ``Content-Type`` is on its way."""
        if self._md_options is not None:
            raise ValueError("early_headers() cannot be used with ResponseRewrite(markdown=...)")
        if self._decision is not None:
            return self._decision.headers
        self._early = True
        return _rewritten_headers(self._headers, self._options)

    @property
    def coding(self) -> str | None:
        """The content coding (``"gzip"``...) of a body that may be rewritten, or that is (or,
        for a ``HEAD``, would be): decoded and re-encoded.  A middleware in front of an
        application that compresses its pages itself warns about it
        (:func:`warn_app_compresses`)."""
        if self._pending is not None:
            return self._pending.coding
        decision = self._decision
        if decision is not None and decision.rewritten_headers:
            return decision.content_coding
        return None

    @property
    def rewriting(self) -> bool:
        """Whether the body is rewritten (False while undecided)."""
        return self._decision is not None and self._decision.rewrite

    @property
    def reason(self) -> str | None:
        """Why the body passes through untouched, or None."""
        return None if self._decision is None else self._decision.reason

    @property
    def decoded_size(self) -> int:
        """How many bytes the body decoded to so far (its size, when not compressed)."""
        return self._decoded

    # ------------------------------------------------------------------ the body

    def afeed_iter(self, chunk: bytes | bytearray | memoryview) -> AsyncGenerator[bytes, None]:
        """:meth:`feed` for any rewriter, async handlers included: yields the bytes to send,
        in pieces (before each wait for a handler, the output decided before its unit,
        content-encoded and flushed), no empty piece.  Close it if not run to its end."""
        if self._runner is None:
            return _one(self.feed, chunk)
        return self._runner.run(self._feed, chunk)

    def aclose_iter(self) -> AsyncGenerator[bytes, None]:
        """:meth:`close` for any rewriter, yielding the rest in pieces as :meth:`afeed_iter`."""
        if self._runner is None:
            return _one(self.close)
        return self._runner.run(self._close)

    def feed(self, chunk: bytes | bytearray | memoryview) -> bytes:
        """The bytes to send for the next body chunk (``b""`` while held back).  A rewriter
        with async handlers is fed with :meth:`afeed_iter` (TypeError here)."""
        if self._runner is not None:
            raise TypeError("the rewriter has async handlers: use afeed_iter()/aclose_iter()")
        return self._feed(chunk)

    def _feed(self, chunk: bytes | bytearray | memoryview) -> bytes:
        return self._holding(self._feed_body(chunk), final=False)

    def _feed_body(self, chunk: bytes | bytearray | memoryview) -> bytes:
        if self._refused is not None:
            raise self._refused
        if self._closed:
            raise HtmlStreamError("the response body is closed")
        data = bytes(chunk)
        decision = self._decision
        if decision is None:
            return self._feed_undecided(data, final=False)
        if not decision.rewrite:
            self._decoded += len(data) if self._decoder is None else 0
            return data
        return self._rewrite(self._pieces(data), flush=self._options.flush)

    def close(self) -> bytes:
        """The rest of the body, at its end (deciding first, if not decided yet)."""
        if self._runner is not None:
            raise TypeError("the rewriter has async handlers: use afeed_iter()/aclose_iter()")
        return self._close()

    def _close(self) -> bytes:
        out = self._close_body()
        return self._holding(out, final=self._md_hold is not None)

    def _close_body(self) -> bytes:
        if self._refused is not None:
            raise self._refused
        if self._closed:
            raise HtmlStreamError("the response body is closed")
        out = b""
        if self._decision is None:
            out = self._feed_undecided(b"", final=True)
        self._closed = True
        decision = self._decision
        assert decision is not None
        if not decision.rewrite:
            return out
        assert self.stream is not None
        rest = b""
        if self._decoder is not None and not self._finished:
            self._finished = True
            self._held.append(out)
            out = b""
            rest = self._rewrite(self._decoder.finish(), flush=False)
        self._held.append(out + rest)
        tail = self._encode(self._md(self.stream.close()) + self._md_end(), final=True)
        return self._drain() + tail

    def _pieces(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``data`` (bounded in size), counted against the limit."""
        if self._decoder is None:
            self._decoded += len(data)
            yield data
            return
        limit = self._options.max_decoded_size
        for piece in self._decoder.decode(data):
            self._decoded += len(piece)
            if limit is not None and self._decoded > limit:
                raise DecodedSizeExceeded(self._coding, limit)
            yield piece

    def _feed_undecided(self, data: bytes, final: bool) -> bytes:
        try:
            return self._feed_undecided_checked(data, final)
        except ResponseRefused as exc:
            self._refused = exc
            self._release_raw()
            raise

    def _feed_undecided_checked(self, data: bytes, final: bool) -> bytes:
        if data:
            self._raw.append(data)
            self._raw_size += len(data)
        pieces = self._pieces(data)
        try:
            out: bytes | None = None
            for piece in pieces:
                need = HOLD_BYTES - len(self._prefix)
                self._prefix += piece[:need]
                if len(piece) >= need:
                    # (the rest of a large piece goes on, not into the prefix)
                    out = self._decide(_chain(piece[need:], pieces))
                    break
            if out is None and final:
                if self._decoder is not None:
                    self._finished = True
                    for piece in self._decoder.finish():
                        self._prefix += piece
                out = self._decide(iter(()))
        except ContentDecodingError as exc:
            # Nothing was sent yet; but the compressed bytes as they came would show a browser
            # (which decodes what it can of a corrupt or truncated body) the original page.
            raise ResponseRefused(f"{exc}, before the response was decided") from exc
        if out is not None:
            self._raw = []
            return out
        if self._raw_size > _MAX_HELD_RAW:
            raise ResponseRefused(f"{self._raw_size} bytes of {self._coding} body gave only "
                                  f"{len(self._prefix)} bytes of content")
        return b""

    def _release_raw(self) -> bytes:
        raw = b"".join(self._raw)
        self._raw = []
        self._prefix = bytearray()
        self.stream = self._encoder = None
        return raw

    def _decide(self, rest: Iterator[bytes]) -> bytes:
        pending = self._pending
        assert pending is not None
        prefix = bytes(self._prefix)
        self._prefix = bytearray()
        opts = self._options
        decision = self._negotiate(_decide_body(
            pending, self._headers, prefix, self._rewriter.transcode and not self._early,
            opts.default_encoding or self._rewriter.encoding, opts))
        self._decision = decision
        if not decision.rewrite:
            return self._release_raw()
        factory: Callable[..., Any] = (self._rewriter.stream if self._runner is None
                                       else self._rewriter.astream)
        if self._context is not None:
            self.stream = factory(encoding=decision.encoding, context=self._context)
        else:
            self.stream = factory(encoding=decision.encoding)
        if self._runner is not None:
            self.stream = self._runner.adopt(self.stream)
        if self._decoder is not None:
            self._encoder = _make_encoder(self._coding, self._decoder, opts)
        return self._rewrite(_chain(prefix, rest), flush=opts.flush)

    def _rewrite(self, pieces: Iterable[bytes], flush: bool) -> bytes:
        """Rewrite decoded pieces and encode the output, one bounded piece at a time."""
        stream = self.stream
        assert stream is not None
        held = self._held       # (each part as soon as it is known: see _encode_early)
        # (the loop's piece is dropped at once: a large one is not kept alive while the
        # output is joined)
        if self._encoder is None:
            for piece in pieces:
                held.append(self._md(stream.feed(piece)))
                piece = b""
            return self._drain()
        for piece in pieces:
            held.append(self._encode(self._md(stream.feed(piece)), final=False))
            piece = b""
        if flush and self._unflushed:
            held.append(self._encoder.flush())
            self._unflushed = False
        return self._drain()

    def _drain(self) -> bytes:
        out = b"".join(self._held)
        self._held.clear()
        return out

    def _encode_early(self, data: bytes) -> bytes:
        """Output taken before a handler waits (an async stream): encoded and flushed, so
        that the client can read it while the handler waits."""
        data = self._md(data)
        held = self._drain()
        if self._encoder is None:
            return self._holding(held + data, final=False)
        out = self._encode(data, final=False)
        self._unflushed = False
        return self._holding(held + out + self._encoder.flush(), final=False)

    def _encode(self, data: bytes, final: bool) -> bytes:
        encoder = self._encoder
        if encoder is None:
            return data
        out = encoder.compress(data) if data else b""
        if data:
            self._unflushed = True
        if final:
            return out + encoder.finish()
        return out


async def _one(call: Callable[..., bytes], *args: Any) -> AsyncGenerator[bytes, None]:
    out = call(*args)
    if out:
        yield out


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest



# --------------------------------------------------------------------------------------------
# Headers hooks: the Content-Security-Policy nonce
# --------------------------------------------------------------------------------------------

#: Characters of a nonce source (CSP ``base64-value``, and base64url's ``-`` and ``_``).
_NONCE: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=")
_CSP_FIELDS: Final = frozenset({"content-security-policy",
                                "content-security-policy-report-only"})


def _csp_with_nonce(value: str, source: str) -> str:
    """One ``Content-Security-Policy`` field value (policies separated by commas, directives by
    semicolons) with ``source`` allowed for scripts in every policy that restricts them."""

    def allowing(name: str, sources: list[str]) -> str:
        # 'none' is only meaningful alone: with a nonce it would be ignored, with a warning.
        kept = [s for s in sources if s.lower() != "'none'"]
        return " ".join([name, *kept, *([] if source in kept else [source])])

    policies = []
    for policy in value.split(","):
        directives = [d.strip(_WS) for d in policy.split(";")]
        directives = [d for d in directives if d]
        parts = [d.split() for d in directives]
        names = [p[0].lower() for p in parts]
        script = [i for i, name in enumerate(names) if name in ("script-src", "script-src-elem")]
        for i in script:
            directives[i] = allowing(parts[i][0], parts[i][1:])
        if not script and "default-src" in names:
            # script-src replaces default-src for scripts: it inherits its sources.
            directives.append(allowing("script-src", parts[names.index("default-src")][1:]))
        # else: scripts are not restricted by this policy; nothing to allow.
        policies.append("; ".join(directives))
    return ", ".join(policies)


def add_csp_nonce(headers: Iterable[tuple[AnyStr, AnyStr]], nonce: str
                  ) -> list[tuple[AnyStr, AnyStr]]:
    """The headers with ``'nonce-<nonce>'`` allowed for scripts by every policy of every
    ``Content-Security-Policy`` (and ``-Report-Only``) field: added to ``script-src`` (and
    ``script-src-elem``), or, in a policy that has only ``default-src``, as a ``script-src``
    with the ``default-src`` sources and the nonce.  A policy that does not restrict scripts is
    left alone, and so is a response without the field (it allows every script).

    Raises:
        ValueError: ``nonce`` is not a base64 (or base64url) value.
    """
    check_type(headers, Iterable, "add_csp_nonce()", "headers", "(name, value) pairs")
    check_type(nonce, str, "add_csp_nonce()", "nonce", "a str")
    if not nonce or not all(ch in _NONCE for ch in nonce):
        raise ValueError(f"a CSP nonce is a base64 value, not {nonce!r}")
    source = f"'nonce-{nonce}'"
    out: list[tuple[AnyStr, AnyStr]] = []
    for name, value in headers:
        if _str(name).lower() in _CSP_FIELDS:
            value = _like(value, _csp_with_nonce(_str(value), source))
        out.append((name, value))
    return out


def csp_nonce_hook(context: Mapping[str, Any] | None, headers: list[tuple[AnyStr, AnyStr]]
                   ) -> list[tuple[AnyStr, AnyStr]]:
    """The integrations' default ``headers_hook``: called with the document's context and the
    headers to send when a response is rewritten, it allows the context's ``csp_nonce`` (what a
    rewrite that adds nonces to scripts sets) in the ``Content-Security-Policy``
    (:func:`add_csp_nonce`); without a context or a ``csp_nonce`` the headers are unchanged."""
    check_type(context, (Mapping, type(None)), "csp_nonce_hook()", "context", "a mapping or None")
    check_type(headers, list, "csp_nonce_hook()", "headers", "a list of (name, value) pairs")
    nonce = None if context is None else context.get("csp_nonce")
    if not nonce:
        return headers
    return add_csp_nonce(headers, str(nonce))
