"""htmlstream.http: the decision (what is rewritten, the encoding, the headers to send) and the
body transform (content decoding, rewriting, re-encoding), with real compressors, in every
chunking of the body as it arrives."""

from __future__ import annotations

import ast
import gzip
import inspect
import json
import pathlib
import random
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import brotli
import pytest

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

import htmlstream
from chunking import chunkings
from htmlstream import Rewriter, RewriterStream
from htmlstream.http import (
    HOLD_BYTES,
    ContentDecodingError,
    DecodedSizeExceeded,
    HttpOptions,
    ResponseRefused,
    ResponseRewrite,
    content_decoder,
    decide,
    decide_headers,
)

Headers = list[tuple[bytes, bytes]]


def make_rewriter(**kwargs: Any) -> Rewriter:
    rw = Rewriter(**kwargs)

    @rw.element("a[href]")
    def upgrade(el: htmlstream.Element) -> None:
        href = el.get_attribute("href") or ""
        el.set_attribute("href", href.replace("http://", "https://"))

    return rw


RW = make_rewriter()
PAGE = (b"<!doctype html><html><head><meta charset=utf-8><title>t</title></head><body>\n"
        + b"".join(b"<p>line %d <a href='http://example.com/%d'>link</a></p>\n" % (i, i)
                   for i in range(120))
        + b"</body></html>\n")
SMALL = b"<!doctype html><p><a href='http://a/'>x</a>"
EXPECTED = RW.rewrite(PAGE)
HTML: Headers = [(b"content-type", b"text/html; charset=utf-8")]


def run(t: ResponseRewrite[Any], chunks: Iterable[bytes]) -> bytes:
    return b"".join([t.feed(c) for c in chunks]) + t.close()


def rewrite(headers: Any, body_chunks: Iterable[bytes], *, method: str = "GET",
            status: int = 200, rewriter: Rewriter = RW, **kwargs: Any
            ) -> tuple[ResponseRewrite[Any], bytes]:
    t: ResponseRewrite[Any] = ResponseRewrite(rewriter, method, status, headers, **kwargs)
    return t, run(t, body_chunks)


def some_chunkings(data: bytes) -> list[list[bytes]]:
    """Every 2-way split of short inputs, a sample of longer ones, single bytes up to 4 KiB."""
    return chunkings(data, single_bytes=len(data) <= 4096)


# --------------------------------------------------------------------------------------------
# Pass-through decided by the headers
# --------------------------------------------------------------------------------------------

HEADER_PASSTHROUGH = [
    ("CONNECT", 200, HTML, None, "CONNECT: a tunnel"),
    ("GET", 100, HTML, None, "100 informational"),
    ("GET", 101, HTML, None, "101 informational"),
    ("GET", 103, HTML, None, "103 informational"),
    ("GET", 204, HTML, None, "204 No Content"),
    ("GET", 205, HTML, None, "205 Reset Content"),
    ("GET", 304, HTML, None, "304 Not Modified"),
    ("GET", 206, [(b"content-type", b"image/png"), (b"content-range", b"bytes 0-9/100")], None,
     "image/png"),
    ("GET", 206, [*HTML, (b"content-range", b"bytes 0-9/100"),
                  (b"content-disposition", b"attachment")], None, "attachment"),
    ("GET", 200, [*HTML, (b"cache-control", b"public, No-Transform")], None, "no-transform"),
    ("GET", 200, [*HTML, (b"Cache-Control", b"max-age=60"), (b"cache-control", b"no-transform")],
     None, "no-transform"),
    ("GET", 200, [(b"content-type", b"image/png")], None, "not HTML: Content-Type image/png"),
    ("GET", 200, [(b"content-type", b"application/json")], None, "application/json"),
    ("GET", 200, [(b"content-type", b"application/xhtml+xml")], None, "application/xhtml+xml"),
    ("GET", 200, [(b"content-type", b"text/plain")], None, "text/plain"),
    ("GET", 200, [*HTML, (b"content-disposition", b'attachment; filename="a.html"')], None,
     "attachment"),
    ("GET", 200, [(b"content-type", b"image/png"), (b"content-encoding", b"made-up")], None,
     "image/png"),
]


@pytest.mark.parametrize(("method", "status", "headers", "request_headers", "reason"),
                         HEADER_PASSTHROUGH)
def test_passthrough_by_headers(method: str, status: int, headers: Headers,
                                request_headers: Any, reason: str) -> None:
    headers = [*headers, (b"Content-Length", b"%d" % len(PAGE)), (b"ETag", b'"v1"')]
    for chunks in [*some_chunkings(SMALL), [PAGE]]:
        t: ResponseRewrite[bytes] = ResponseRewrite(RW, method, status, headers,
                                                    request_headers=request_headers)
        assert t.decided and not t.rewriting
        assert t.reason is not None and reason in t.reason
        assert t.headers == headers     # untouched: the same pairs, in order
        assert run(t, chunks) == b"".join(chunks)
    decision = decide_headers(method, status, headers, request_headers=request_headers)
    assert decision is not None and not decision.rewrite and decision.headers == headers


#: Responses that would be rewritten and cannot be: never passed, whatever the request.
HEADER_REFUSED = [
    ("GET", 206, [*HTML, (b"content-range", b"bytes 0-9/100")], "206 Partial Content"),
    ("GET", 206, [(b"content-range", b"bytes 0-9/100")], "no Content-Type"),
    ("GET", 200, [*HTML, (b"Content-Range", b"bytes 0-9/100")], "Content-Range"),
    ("GET", 206, [(b"content-type", b"multipart/byteranges; boundary=x")], "multipart"),
    ("HEAD", 206, [*HTML, (b"content-range", b"bytes 0-9/100")], "206 Partial Content"),
    ("GET", 200, [*HTML, (b"content-encoding", b"compress")], "unknown content coding"),
    ("GET", 200, [(b"content-encoding", b"made-up")], "unknown content coding 'made-up'"),
    ("GET", 200, [*HTML, (b"content-encoding", b"gzip, br")], "stacked content codings"),
    ("GET", 200, [*HTML, (b"content-encoding", b"gzip"), (b"content-encoding", b"gzip")],
     "stacked"),
    ("HEAD", 200, [*HTML, (b"content-encoding", b"made-up")], "unknown content coding"),
]


@pytest.mark.parametrize(("method", "status", "headers", "reason"), HEADER_REFUSED)
def test_refused_by_headers(method: str, status: int, headers: Headers, reason: str) -> None:
    for request in (None, [(b"range", b"bytes=0-")], [(b"sec-fetch-dest", b"video")]):
        with pytest.raises(ResponseRefused, match=reason) as info:
            ResponseRewrite(RW, method, status, headers, request_headers=request)
        assert reason in info.value.reason
        with pytest.raises(ResponseRefused, match=reason):
            decide_headers(method, status, headers, request_headers=request)
        with pytest.raises(ResponseRefused, match=reason):
            decide(method, status, headers, PAGE[:HOLD_BYTES], request_headers=request)


def test_requests_headers_decide_nothing() -> None:
    """A client cannot keep its response from being rewritten: a ``Range`` answered with the
    whole representation (200) and a request's ``no-transform`` are rewritten as any."""
    for request in ([(b"range", b"bytes=0-9")], [("Range", "bytes=0-")],
                    [("If-Range", '"v1"'), ("Range", "bytes=0-10")],
                    [(b"cache-control", b"no-transform")], {"Range": "bytes=1-"}):
        for chunks in some_chunkings(SMALL)[:30]:
            t, out = rewrite(HTML, chunks, request_headers=request)
            assert t.rewriting and out == RW.rewrite(SMALL)


def test_head_has_the_headers_of_the_get() -> None:
    headers = [*HTML, (b"Content-Length", b"%d" % len(PAGE)), (b"ETag", b'"v1"'),
               (b"Accept-Ranges", b"bytes"), (b"X-Kept", b"1")]
    get, _ = rewrite(headers, [PAGE])
    for method in ("HEAD", "head"):
        head: ResponseRewrite[bytes] = ResponseRewrite(RW, method, 200, headers)
        assert head.decided and not head.rewriting and "HEAD request" in (head.reason or "")
        assert head.headers == get.headers
        assert head.decision is not None and head.decision.rewritten_headers
        assert run(head, []) == b""
    options = HttpOptions(drop_etag=True)
    get, _ = rewrite(headers, [PAGE], options=options)
    head = ResponseRewrite(RW, "HEAD", 200, headers, options=options)
    assert head.headers == get.headers
    # Not a page: untouched, as the GET's.
    png = [(b"content-type", b"image/png"), (b"Content-Length", b"9"), (b"ETag", b'"p"')]
    head = ResponseRewrite(RW, "HEAD", 200, png)
    assert head.headers == png and not head.decision.rewritten_headers  # type: ignore[union-attr]
    # A UTF-16 page: transcoded (its charset) or refused, as the GET.
    utf16 = [(b"content-type", b"text/html; charset=utf-16le"), (b"Content-Length", b"9")]
    get, _ = rewrite(utf16, [UTF16], rewriter=make_rewriter(transcode=True))
    head = ResponseRewrite(make_rewriter(transcode=True), "HEAD", 200, utf16)
    assert head.headers == get.headers == [(b"content-type", b"text/html; charset=utf-8")]
    with pytest.raises(ResponseRefused, match="not ASCII-compatible"):
        ResponseRewrite(RW, "HEAD", 200, utf16)


def test_options_open_what_headers_close() -> None:
    xhtml = [(b"content-type", b"application/xhtml+xml")]
    options = HttpOptions(html_types=frozenset({"text/html", "application/xhtml+xml"}))
    t, out = rewrite(xhtml, [SMALL], options=options)
    assert t.rewriting and out == RW.rewrite(SMALL)
    attachment = [*HTML, (b"content-disposition", b"attachment")]
    t, out = rewrite(attachment, [SMALL], options=HttpOptions(rewrite_attachments=True))
    assert t.rewriting and out == RW.rewrite(SMALL)
    t, out = rewrite([(b"content-disposition", b"inline"), *HTML], [SMALL])
    assert t.rewriting


def test_list_fields_are_parsed_outside_quotes() -> None:
    quoted = [*HTML, (b"cache-control", b'private="set-cookie, no-transform", max-age=0')]
    t, out = rewrite(quoted, [PAGE])
    assert t.rewriting and out == EXPECTED
    t, out = rewrite([*HTML, (b"cache-control", b'private="a,b" , NO-TRANSFORM')], [PAGE])
    assert out == PAGE and t.reason == "Cache-Control: no-transform"
    t, out = rewrite([*HTML, (b"content-encoding", b"identity")], [PAGE])
    assert t.rewriting and out == EXPECTED


def test_the_decision_waits_for_the_body() -> None:
    assert decide_headers("GET", 200, HTML) is None
    t: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 200, HTML)
    assert not t.decided and t.decision is None and t.reason is None and not t.rewriting
    with pytest.raises(RuntimeError, match="not decided yet"):
        _ = t.headers
    # Held back until HOLD_BYTES bytes (what sniffing and the prescan read), then decided.
    out = [t.feed(PAGE[i:i + 1]) for i in range(HOLD_BYTES - 1)]
    assert not any(out) and not t.decided
    out.append(t.feed(PAGE[HOLD_BYTES - 1:HOLD_BYTES]))
    assert t.decided and t.rewriting and out[-1]
    assert b"".join(out) + t.feed(PAGE[HOLD_BYTES:]) + t.close() == EXPECTED
    with pytest.raises(htmlstream.HtmlStreamError, match="closed"):
        t.feed(b"x")
    with pytest.raises(htmlstream.HtmlStreamError, match="closed"):
        t.close()


def test_a_short_body_is_decided_at_close() -> None:
    t: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 200, HTML)
    assert t.feed(SMALL) == b"" and not t.decided
    assert t.close() == RW.rewrite(SMALL)
    assert t.decided and t.rewriting and t.decoded_size == len(SMALL)


# --------------------------------------------------------------------------------------------
# Pass-through decided by the body: content sniffing
# --------------------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
JSON_BODY = json.dumps({"html": "<a href='http://x/'>", "items": list(range(400))}).encode()


@pytest.mark.parametrize(("body", "what"), [
    (JSON_BODY, "JSON"),
    (PNG, "PNG image"),
    (b"", "no content"),
    (b"   \n", "no content"),
    (b'<?xml version="1.0"?><rss version="2.0"><channel><link>http://a/</link>', "RSS feed"),
    (gzip.compress(PAGE), "gzip data"),
])
def test_not_html_served_as_html_passes_through(body: bytes, what: str) -> None:
    headers = [*HTML, (b"content-length", b"%d" % len(body))]
    for chunks in some_chunkings(body):
        t, out = rewrite(headers, chunks)
        assert out == body
        assert not t.rewriting and t.headers == headers
        assert t.reason == f"served as text/html but not HTML: {what}"


def test_compressed_json_served_as_html_passes_through_compressed() -> None:
    for coding, compressed in [(b"gzip", gzip.compress(JSON_BODY)),
                               (b"br", brotli.compress(JSON_BODY)),
                               (b"zstd", zstd.compress(JSON_BODY))]:
        headers = [*HTML, (b"content-encoding", coding)]
        for chunks in some_chunkings(compressed):
            t, out = rewrite(headers, chunks)
            assert out == compressed and t.headers == headers
            assert t.reason == "served as text/html but not HTML: JSON"
            assert t.decision is not None and t.decision.content_coding == coding.decode()


def test_verify_html_off_rewrites_what_is_labelled_html() -> None:
    t, out = rewrite(HTML, [SMALL], options=HttpOptions(verify_html=False))
    assert t.rewriting and out == RW.rewrite(SMALL)
    # Decided by the headers: nothing is held back (the stream reads the BOM itself).
    t2: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 200, HTML,
                                                 options=HttpOptions(verify_html=False))
    assert not t2.decided   # (the <meta> prescan still needs the body)


def test_missing_content_type_is_sniffed() -> None:
    for chunks in some_chunkings(SMALL):
        t, out = rewrite([(b"x-other", b"1")], chunks)
        assert t.rewriting and out == RW.rewrite(SMALL)
        assert t.decision is not None and t.decision.mime_type is None
    t, out = rewrite([], [JSON_BODY])
    assert out == JSON_BODY and t.reason == "no Content-Type and the body is not HTML: JSON"
    # An invalid Content-Type counts as missing (Fetch's "extract a MIME type" fails).
    t, out = rewrite([(b"content-type", b"html")], [SMALL])
    assert t.rewriting
    t, out = rewrite([], [SMALL], options=HttpOptions(sniff_missing=False))
    assert out == SMALL and t.reason is not None and "sniff_missing" in t.reason


def test_sniff_types_option_for_mislabelled_pages() -> None:
    plain = [(b"content-type", b"text/plain; charset=utf-8")]
    options = HttpOptions(sniff_types=frozenset({"text/plain"}))
    for chunks in some_chunkings(SMALL):
        t, out = rewrite(plain, chunks, options=options)
        assert t.rewriting and out == RW.rewrite(SMALL)
    text = b"just some text, http://example.com/ <a href='http://x/'>"
    t, out = rewrite(plain, [text], options=options)
    assert out == text
    assert t.reason == ("Content-Type text/plain and the body is not HTML: "
                        "text that does not start with '<'")


# --------------------------------------------------------------------------------------------
# The encoding: Content-Type charset, byte order mark, <meta>, default
# --------------------------------------------------------------------------------------------


def href_reader() -> tuple[Rewriter, list[str]]:
    seen: list[str] = []
    rw = Rewriter()

    @rw.element("a[href]")
    def read(el: htmlstream.Element) -> None:
        seen.append(el.get_attribute("href") or "")
        el.set_attribute("title", "café")

    return rw, seen


LATIN = "<!doctype html><meta charset=utf-8><a href='/caf\u00e9'>x</a>".encode("windows-1252")


@pytest.mark.parametrize(("headers", "body", "encoding", "source", "href"), [
    # The header's charset wins over the document's <meta>.
    ([(b"content-type", b"text/html; charset=ISO-8859-1")], LATIN, "windows-1252", "transport",
     "/café"),
    ([(b"content-type", b'text/html;charset="latin1"')], LATIN, "windows-1252", "transport",
     "/café"),
    # No charset in the header: the <meta>.
    ([(b"content-type", b"text/html")], "<meta charset=shift_jis><a href='/日本'>x</a>".encode(
        "shift_jis"), "shift_jis", "meta", "/日本"),
    # An unknown label is ignored, as browsers do.
    ([(b"content-type", b"text/html; charset=no-such-thing")],
     "<meta charset=koi8-r><a href='/д'>x</a>".encode("koi8-r"), "koi8-r", "meta", "/д"),
    # A byte order mark wins over the header.
    ([(b"content-type", b"text/html; charset=windows-1252")],
     "\ufeff<a href='/é'>x</a>".encode(), "utf-8", "bom", "/é"),
    # Nothing declared: the rewriter's encoding (utf-8 here).
    ([(b"content-type", b"text/html")], "<a href='/é'>x</a>".encode(), "utf-8", "default", "/é"),
])
def test_encoding(headers: Headers, body: bytes, encoding: str, source: str, href: str) -> None:
    for chunks in some_chunkings(body):
        rw, seen = href_reader()
        t, out = rewrite(headers, chunks, rewriter=rw)
        assert t.decision is not None and t.rewriting
        assert (t.decision.encoding, t.decision.encoding_source) == (encoding, source)
        assert seen == [href]
        stream = rw.stream(encoding=encoding)
        assert out == stream.feed(body) + stream.close()


def test_default_encoding_option() -> None:
    rw, seen = href_reader()
    body = "<a href='/é'>x</a>".encode("windows-1252")
    t, _ = rewrite([(b"content-type", b"text/html")], [body], rewriter=rw,
                   options=HttpOptions(default_encoding="windows-1252"))
    assert t.decision is not None and t.decision.encoding == "windows-1252"
    assert seen == ["/é"]


UTF16 = "<!doctype html><p><a href='http://a/é'>x</a>".encode("utf-16le")


def test_utf16_is_refused_unless_transcoding() -> None:
    # A browser renders it: passing it through would show the page unrewritten.
    headers = [(b"content-type", b"text/html; charset=utf-16le"), (b"content-length", b"9")]
    for chunks in some_chunkings(UTF16):
        t: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 200, headers)
        with pytest.raises(ResponseRefused, match=r"not ASCII-compatible.*transcode=True"):
            run(t, chunks)
        with pytest.raises(ResponseRefused):    # (and again: nothing of it is ever given)
            t.close()
    bom = b"\xff\xfe" + UTF16
    with pytest.raises(ResponseRefused, match="utf-16le, from the bom"):
        rewrite([(b"content-type", b"text/html")], [bom])


def test_utf16_transcoded() -> None:
    rw = make_rewriter(transcode=True)
    headers = [(b"Content-Type", b"text/html; charset=UTF-16LE"), (b"content-length", b"9")]
    for chunks in some_chunkings(UTF16):
        t, out = rewrite(headers, chunks, rewriter=rw)
        assert t.rewriting and t.decision is not None
        assert t.decision.encoding == "utf-16le"
        assert t.headers == [(b"Content-Type", b"text/html; charset=utf-8")]
        assert out.decode("utf-8-sig") == '<!doctype html><p><a href="https://a/é">x</a>'


def test_early_headers_fit_either_outcome() -> None:
    # What an integration that must send the headers before the body (mitmproxy) sends: a
    # rewrite's headers, given before the decision; the body then decides as usual.
    headers = [*HTML, (b"Content-Length", b"99"), (b"ETag", b'"v1"'), (b"X-Kept", b"1")]
    early = [(b"content-type", b"text/html; charset=utf-8"), (b"ETag", b'W/"v1"'),
             (b"X-Kept", b"1")]
    json_body = b'{"html": "<p>not a page</p>"}' * 50
    for body, rewritten in ((PAGE, True), (json_body, False)):
        for chunks in some_chunkings(body)[:40]:
            t: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 200, headers)
            assert not t.decided and t.early_headers() == early
            out = run(t, chunks)
            assert t.rewriting is rewritten
            assert out == (EXPECTED if rewritten else body)
            assert t.early_headers() == t.headers     # once decided: the decision's
    # Decided by the headers alone: their decision.
    png = [(b"content-type", b"image/png"), (b"Content-Length", b"9")]
    t = ResponseRewrite(RW, "GET", 200, png)
    assert t.decided and t.early_headers() == png


def test_early_headers_and_transcoding() -> None:
    # The Content-Type is sent already: a UTF-16 body cannot be transcoded (its charset would
    # change), so it is refused; without early_headers() it is transcoded.
    rw = make_rewriter(transcode=True)
    headers = [(b"Content-Type", b"text/html; charset=UTF-16LE")]
    for chunks in some_chunkings(UTF16)[:40]:
        t: ResponseRewrite[bytes] = ResponseRewrite(rw, "GET", 200, headers)
        assert t.early_headers() == headers
        with pytest.raises(ResponseRefused, match="not ASCII-compatible"):
            run(t, chunks)
        t = ResponseRewrite(rw, "GET", 200, headers)
        assert run(t, chunks) != UTF16 and t.rewriting


def test_replacement_charset_passes_through() -> None:
    body = b"<p>\x1b$)C<a href='http://a/'>"
    headers = [(b"content-type", b"text/html; charset=iso-2022-kr")]
    t, out = rewrite(headers, [body], rewriter=make_rewriter(transcode=True))
    assert out == body and t.reason is not None and "replacement" in t.reason


# --------------------------------------------------------------------------------------------
# The headers to send when rewriting
# --------------------------------------------------------------------------------------------


def test_rewritten_headers() -> None:
    headers = [
        (b"Content-Type", b"text/html; charset=utf-8"),
        (b"CONTENT-LENGTH", b"%d" % len(PAGE)),
        (b"ETag", b'"abc"'),
        (b"Set-Cookie", b"a=1"),
        (b"Content-MD5", b"Q2hlY2sgSW50ZWdyaXR5IQ=="),
        (b"Digest", b"sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE="),
        (b"Content-Digest", b"sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"),
        (b"Repr-Digest", b"sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"),
        (b"Accept-Ranges", b"bytes"),
        (b"Vary", b"Accept-Encoding"),
        (b"Set-Cookie", b"b=2"),
        (b"Last-Modified", b"Tue, 01 Dec 2026 10:00:00 GMT"),
        (b"Transfer-Encoding", b"chunked"),
    ]
    t, out = rewrite(headers, [PAGE])
    assert out == EXPECTED
    assert t.headers == [
        (b"Content-Type", b"text/html; charset=utf-8"),
        (b"ETag", b'W/"abc"'),
        (b"Set-Cookie", b"a=1"),
        (b"Vary", b"Accept-Encoding"),
        (b"Set-Cookie", b"b=2"),
        (b"Last-Modified", b"Tue, 01 Dec 2026 10:00:00 GMT"),
        (b"Transfer-Encoding", b"chunked"),
    ]


def test_rewritten_headers_str_and_etags() -> None:
    headers = [("content-type", "text/html"), ("etag", 'W/"weak"'), ("content-length", "3")]
    t, _ = rewrite(headers, [PAGE])
    assert t.headers == [("content-type", "text/html"), ("etag", 'W/"weak"')]
    t, _ = rewrite([("Content-Type", "text/html"), ("ETag", '"x"')], [PAGE])
    assert t.headers == [("Content-Type", "text/html"), ("ETag", 'W/"x"')]
    t, _ = rewrite([("Content-Type", "text/html"), ("ETag", '"x"')], [PAGE],
                   options=HttpOptions(drop_etag=True))
    assert t.headers == [("Content-Type", "text/html")]
    # No Vary is added.
    assert not any(k.lower() == "vary" for k, _ in t.headers)


def test_mappings_of_headers() -> None:
    t, out = rewrite({"Content-Type": "text/html", "Content-Length": "3"}, [PAGE])
    assert out == EXPECTED and t.headers == [("Content-Type", "text/html")]
    t, out = rewrite({"Content-Type": "text/html"}, [PAGE], request_headers={"Range": "bytes=1-"})
    assert out == EXPECTED and t.rewriting
    decision = decide_headers("GET", 200, {b"content-type": b"image/gif"})
    assert decision is not None and decision.headers == [(b"content-type", b"image/gif")]


def test_one_large_chunk() -> None:
    """A chunk much larger than what is held back: only 1024 bytes go to the decision."""
    big = LARGE * 8
    t: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 200, HTML)
    tracemalloc.start()
    try:
        out = t.feed(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert t.rewriting and out + t.close() == RW.rewrite(big)
    assert peak < 2.5 * len(big), peak


def test_decide_function() -> None:
    decision = decide("GET", 200, [*HTML, (b"content-length", b"1")], PAGE[:HOLD_BYTES])
    assert decision.rewrite and decision.reason is None
    assert decision.headers == HTML and decision.encoding == "utf-8"
    decision = decide("GET", 200, HTML, JSON_BODY[:HOLD_BYTES])
    assert not decision.rewrite and decision.reason == "served as text/html but not HTML: JSON"
    decision = decide("HEAD", 200, HTML, b"")
    assert decision.reason is not None and decision.reason.startswith("HEAD request: no body")
    assert not decision.rewrite and decision.rewritten_headers
    decision = decide("GET", 200, [(b"content-type", b"text/html; charset=utf-16")],
                      "<p>".encode("utf-16le"), transcode=True)
    assert decision.rewrite and decision.encoding == "utf-16le"


# --------------------------------------------------------------------------------------------
# Content codings: decoded, rewritten, re-encoded with the same coding
# --------------------------------------------------------------------------------------------


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def raw_inflate(data: bytes) -> bytes:
    d = zlib.decompressobj(-15)
    out = d.decompress(data)
    assert d.eof
    return out


def brotli_compress(data: bytes) -> bytes:
    return brotli.compress(data, quality=5)


def strict_gunzip(data: bytes) -> bytes:
    d = zlib.decompressobj(31)
    out = d.decompress(data)
    assert d.eof and not d.unused_data
    return out


CODINGS: list[tuple[str, Callable[[bytes], bytes], Callable[[bytes], bytes]]] = [
    ("gzip", gzip.compress, strict_gunzip),
    ("GZip", gzip.compress, strict_gunzip),
    ("x-gzip", gzip.compress, strict_gunzip),
    ("deflate", zlib.compress, zlib.decompress),          # zlib-wrapped (RFC 9110)
    ("deflate", raw_deflate, raw_inflate),                # raw, as browsers accept too
    ("br", brotli_compress, brotli.decompress),
    ("zstd", zstd.compress, zstd.decompress),
]
LARGE = PAGE[:-15] + b"".join(
    b"<p>%s <a href='http://example.com/%d'>%d</a></p>\n" % (random.Random(i).randbytes(24).hex()
                                                           .encode(), i, i)
    for i in range(5000)) + PAGE[-15:]
assert len(LARGE) > 400_000
CODING_IDS = ["gzip", "GZip", "x-gzip", "deflate-zlib", "deflate-raw", "br", "zstd"]


@pytest.mark.parametrize(("coding", "compress", "decompress"), CODINGS, ids=CODING_IDS)
def test_content_coding_round_trip(coding: str, compress: Callable[[bytes], bytes],
                                   decompress: Callable[[bytes], bytes]) -> None:
    body = compress(PAGE)
    headers = [*HTML, (b"Content-Encoding", coding.encode()),
               (b"content-length", b"%d" % len(body))]
    for chunks in chunkings(body):
        t, out = rewrite(headers, chunks)
        assert t.rewriting and t.decision is not None
        assert t.decision.content_coding == ("gzip" if "gzip" in coding.lower() else coding)
        assert t.headers == [*HTML, (b"Content-Encoding", coding.encode())]
        assert decompress(out) == EXPECTED
        assert t.decoded_size == len(PAGE)
    # Without flushing after every chunk: the same content.
    for chunks in chunkings(body, single_bytes=False, random_splits=2):
        t, out = rewrite(headers, chunks, options=HttpOptions(flush=False))
        assert decompress(out) == EXPECTED


@pytest.mark.parametrize(("coding", "compress", "decompress"), CODINGS, ids=CODING_IDS)
def test_content_coding_large_body(coding: str, compress: Callable[[bytes], bytes],
                                   decompress: Callable[[bytes], bytes]) -> None:
    """A body that decodes in several steps (more than 64 KiB per chunk)."""
    page = LARGE
    body = compress(page)
    headers = [*HTML, (b"content-encoding", coding.encode())]
    for chunks in chunkings(body, single_bytes=False, split_samples=4, random_splits=3):
        _, out = rewrite(headers, chunks)
        assert decompress(out) == RW.rewrite(page)


def test_content_coding_small_body_decided_at_close() -> None:
    for coding, compress, decompress in CODINGS:
        body = compress(SMALL)
        for chunks in chunkings(body):
            t, out = rewrite([*HTML, (b"content-encoding", coding.encode())], chunks)
            assert t.rewriting and decompress(out) == RW.rewrite(SMALL), coding


def test_gzip_members_concatenated() -> None:
    first = gzip.compress(PAGE[:2000])
    body = first + gzip.compress(PAGE[2000:])
    cuts = [[body[:i], body[i:]] for i in range(len(first) - 3, len(first) + 4)]
    for chunks in chunkings(body, single_bytes=False) + cuts:
        _, out = rewrite([*HTML, (b"content-encoding", b"gzip")], chunks)
        assert strict_gunzip(out) == EXPECTED


def test_data_after_the_end_is_ignored() -> None:
    for coding, compress, decompress in CODINGS:
        if coding in ("br", "zstd"):
            continue    # (their decoders call anything after the end corrupt)
        body = compress(PAGE) + b"\x00\x00trailing garbage"
        for chunks in chunkings(body, single_bytes=False, random_splits=2):
            _, out = rewrite([*HTML, (b"content-encoding", coding.encode())], chunks)
            assert decompress(out) == EXPECTED, coding
    # br and zstd: corrupt (before the decision: refused; after: an error).
    for coding, compressed in [("br", brotli.compress(PAGE)), ("zstd", zstd.compress(PAGE))]:
        headers = [*HTML, (b"content-encoding", coding.encode())]
        with pytest.raises(ResponseRefused, match="corrupt"):
            rewrite(headers, [compressed + b"garbage"])
        t = ResponseRewrite(RW, "GET", 200, headers)
        t.feed(compressed)
        assert t.rewriting
        with pytest.raises(ContentDecodingError, match=f"corrupt {coding} body"):
            t.feed(b"garbage")


@pytest.mark.parametrize(("coding", "compress", "decompress"), CODINGS, ids=CODING_IDS)
def test_rewritten_bytes_leave_with_their_chunk(coding: str, compress: Callable[[bytes], bytes],
                                                decompress: Callable[[bytes], bytes]) -> None:
    """With flush (the default), the output of each feed() decodes on its own to everything
    rewritten so far: nothing waits in the compressor."""
    body = compress(PAGE)
    t: ResponseRewrite[bytes] = ResponseRewrite(
        RW, "GET", 200, [*HTML, (b"content-encoding", coding.encode())])
    sent = b""
    for i in range(0, len(body), 256):
        sent += t.feed(body[i:i + 256])
    so_far = stream_decode(coding, sent)
    assert len(so_far) > len(EXPECTED) // 2 and EXPECTED.startswith(so_far)
    assert decompress(sent + t.close()) == EXPECTED


def stream_decode(coding: str, data: bytes) -> bytes:
    """What a browser has decoded from the bytes received so far."""
    if coding.lower() in ("gzip", "x-gzip"):
        return zlib.decompressobj(31).decompress(data)
    if coding == "deflate":
        wbits = 15 if data[0] & 0x0F == 8 and (data[0] * 256 + data[1]) % 31 == 0 else -15
        return zlib.decompressobj(wbits).decompress(data)
    if coding == "br":
        return brotli.Decompressor().process(data)  # type: ignore[no-any-return]
    return zstd.ZstdDecompressor().decompress(data)


# --------------------------------------------------------------------------------------------
# Limits, corrupt and truncated input
# --------------------------------------------------------------------------------------------

BOMB_TEXT = b"<!doctype html><p>" + b"a" * (10 * 1024 * 1024)


@pytest.mark.parametrize(("coding", "compress"), [
    ("gzip", gzip.compress),
    ("br", lambda data: brotli.compress(data, quality=1)),
    ("zstd", zstd.compress),
])
def test_decompression_bomb_hits_the_limit_with_bounded_memory(
        coding: str, compress: Callable[[bytes], bytes]) -> None:
    zeros = b"<!doctype html><p>" + bytes(10 * 1024 * 1024)
    for text, options in [(BOMB_TEXT, {}), (zeros, {"verify_html": False})]:
        check_bomb(compress(text), coding, HttpOptions(max_decoded_size=1024 * 1024, **options))


def check_bomb(bomb: bytes, coding: str, options: HttpOptions) -> None:
    assert len(bomb) < 100_000
    limit = 1024 * 1024
    t: ResponseRewrite[bytes] = ResponseRewrite(
        RW, "GET", 200, [*HTML, (b"content-encoding", coding.encode())], options=options)
    tracemalloc.start()
    try:
        with pytest.raises(DecodedSizeExceeded, match="max_decoded_size=1048576") as info:
            # (Small chunks: the limit is hit after the decision, when output was sent.)
            for i in range(0, len(bomb), 64):
                t.feed(bomb[i:i + 64])
            t.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(info.value, ContentDecodingError) and info.value.limit == limit
    assert t.rewriting and limit < t.decoded_size <= limit + 128 * 1024
    assert peak < 4 * 1024 * 1024, peak


def test_bomb_of_zeros_served_as_html_passes_through_after_sniffing() -> None:
    bomb = gzip.compress(bytes(10 * 1024 * 1024))
    t: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 200,
                                                [*HTML, (b"content-encoding", b"gzip")])
    tracemalloc.start()
    try:
        out = t.feed(bomb)
        out += t.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == bomb and t.reason == "served as text/html but not HTML: NUL bytes"
    assert peak < 2 * len(bomb) + 512 * 1024


def test_limit_before_the_decision_is_refused() -> None:
    body = gzip.compress(PAGE)
    with pytest.raises(ResponseRefused, match="max_decoded_size=500"):
        rewrite([*HTML, (b"content-encoding", b"gzip")], [body],
                options=HttpOptions(max_decoded_size=500))


def test_default_limit() -> None:
    assert HttpOptions().max_decoded_size == 64 * 1024 * 1024


@pytest.mark.parametrize(("coding", "compress", "decompress"), CODINGS, ids=CODING_IDS)
def test_truncated_body(coding: str, compress: Callable[[bytes], bytes],
                        decompress: Callable[[bytes], bytes]) -> None:
    headers = [*HTML, (b"content-encoding", coding.encode())]
    body = compress(LARGE)     # (zstd decodes a block of up to 128 KiB at a time)
    cut = body[:len(body) * 3 // 4]
    # After the decision (output sent): a clear error at close().
    for chunks in chunkings(cut, single_bytes=False, split_samples=4, random_splits=2):
        t: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 200, headers)
        for chunk in chunks:
            t.feed(chunk)
        assert t.rewriting
        with pytest.raises(ContentDecodingError, match=f"truncated {t.decision.content_coding}"):
            t.close()
    # Before it (a short body): refused, saying why (a browser would show what it decodes).
    short = compress(SMALL)[:-3]
    for chunks in some_chunkings(short)[:40]:
        with pytest.raises(ResponseRefused, match=r"truncated|corrupt"):
            rewrite(headers, chunks)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_corrupt_body(coding: str) -> None:
    headers = [*HTML, (b"content-encoding", coding.encode())]
    garbage = b"this is not compressed at all, <p>hello</p>" * 3
    for chunks in some_chunkings(garbage)[:40]:
        with pytest.raises(ResponseRefused, match=r"corrupt|truncated") as info:
            rewrite(headers, chunks)
        assert "before the response was decided" in info.value.reason


def test_corrupt_gzip_after_the_decision() -> None:
    body = bytearray(gzip.compress(PAGE, mtime=0))
    body[len(body) // 2: len(body) // 2 + 40] = b"\xff" * 40
    t: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 200,
                                                [*HTML, (b"content-encoding", b"gzip")])
    with pytest.raises(ContentDecodingError, match=r"corrupt gzip body|truncated gzip"):
        for i in range(0, len(body), 64):
            t.feed(bytes(body[i:i + 64]))
        t.close()
    assert t.rewriting


def test_gzip_header_too_long_before_any_content() -> None:
    name = b"n" * (100 * 1024)
    member = gzip.compress(PAGE)
    # FLG.FNAME with a 100 KiB file name before the compressed data.
    body = member[:3] + b"\x08" + member[4:10] + name + b"\x00" + member[10:]
    assert gzip.decompress(body) == PAGE
    with pytest.raises(ResponseRefused, match="gave only 0 bytes"):
        rewrite([*HTML, (b"content-encoding", b"gzip")],
                [body[i:i + 4096] for i in range(0, len(body), 4096)])


# --------------------------------------------------------------------------------------------
# Integration plumbing: context, imports
# --------------------------------------------------------------------------------------------


class ContextRewriter(Rewriter):
    """A rewriter whose streams take a per-document context (as another branch adds)."""

    contexts: list[Mapping[str, Any]]

    def stream(self, *, encoding: str | None = None,
               context: Mapping[str, Any] | None = None) -> RewriterStream:
        self.contexts.append(context or {})
        return super().stream(encoding=encoding)


def test_context_is_passed_to_streams_that_take_one() -> None:
    rw = ContextRewriter()
    rw.contexts = []
    _, out = rewrite(HTML, [SMALL], rewriter=rw, context={"nonce": "abc"})
    assert out == SMALL and rw.contexts == [{"nonce": "abc"}]
    rewrite(HTML, [SMALL], rewriter=rw)
    assert rw.contexts == [{"nonce": "abc"}, {}]
    if "context" not in inspect.signature(Rewriter.stream).parameters:
        with pytest.raises(TypeError, match="takes no context"):
            ResponseRewrite(RW, "GET", 200, HTML, context={"nonce": "abc"})


def run_python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          text=True).stdout


def test_imports_are_lazy() -> None:
    out = run_python(
        "import sys, htmlstream\n"
        "print('htmlstream.http' in sys.modules)\n"
        "import htmlstream.http\n"
        "print('brotli' in sys.modules, 'backports.zstd' in sys.modules)\n")
    assert out.split() == ["False", "False", "False"]


def test_missing_library_is_refused_saying_what_to_install() -> None:
    code = (
        "import sys, gzip\n"
        "sys.modules['brotli'] = None; sys.modules['backports.zstd'] = None\n"
        "sys.modules['compression.zstd'] = None\n"
        "import htmlstream\n"
        "from htmlstream.http import ResponseRefused, ResponseRewrite\n"
        "from htmlstream.http import accept_encoding, decodable_codings\n"
        "for coding in ('br', 'zstd', 'gzip'):\n"
        "    try:\n"
        "        t = ResponseRewrite(htmlstream.Rewriter(), 'GET', 200,\n"
        "            [('content-type', 'text/html'), ('content-encoding', coding)])\n"
        "        print(t.decided, t.reason)\n"
        "    except ResponseRefused as exc:\n"
        "        print('refused', exc.reason)\n"
        "print(sorted(decodable_codings()))\n"
        "print(accept_encoding('br, zstd;q=0.9, gzip;q=0.5'))\n"
        "print(accept_encoding('br, zstd'))\n")
    lines = run_python(code).splitlines()
    assert lines[0] == ("refused Content-Encoding br of a response that would be rewritten "
                        "(text/html) needs a library: pip install htmlstream[brotli] "
                        "(brotli>=1.2)")
    assert lines[1].startswith("refused Content-Encoding zstd of a response that would be "
                               "rewritten (text/html) needs a library: "
                               "pip install htmlstream[zstd]")
    assert lines[2] == "False None"
    assert lines[3:] == ["['deflate', 'gzip']", "gzip;q=0.5", "identity"]


def test_http_uses_only_public_names() -> None:
    """htmlstream.http is a layer on the public API, and the core never imports it (only the
    integrations do)."""
    src = pathlib.Path(htmlstream.__file__).parent
    # (the integrations and the web-archive layers are layers on htmlstream.http, on the public
    # API too)
    layers = [src / "http.py", *sorted((src / "integrations").glob("*.py")), src / "warc.py",
              src / "dask.py"]
    for layer in layers:
        tree = ast.parse(layer.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("htmlstream"):
                if (layer.stem.startswith("proxy")
                        and (node.module or "").startswith("htmlstream.integrations.proxy")):
                    continue    # (the proxy's own modules share private names among themselves)
                module = __import__(node.module or "", fromlist=["__all__"])
                for alias in node.names:
                    assert alias.name in module.__all__, (layer, node.module, alias.name)
    # The scraping layer decides what is a page, and decodes br/zstd, with htmlstream.http's
    # public names (its own modules share private ones among themselves).
    scrape = sorted((src / "scrape").glob("*.py"))
    for layer in scrape:
        for node in ast.walk(ast.parse(layer.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "htmlstream.http":
                for alias in node.names:
                    assert alias.name in htmlstream.http.__all__, (layer, alias.name)
    for path in src.rglob("*.py"):
        if path not in layers and path not in scrape:
            assert "htmlstream.http" not in path.read_text(), path


@pytest.mark.parametrize(("coding", "compress"), [
    ("gzip", gzip.compress), ("x-gzip", gzip.compress), ("deflate", zlib.compress),
    ("br", brotli.compress), ("zstd", zstd.compress),
])
def test_content_decoder(coding: str, compress: Any) -> None:
    # The public decoder: bounded pieces, the same body in every chunking.
    body = b"<p>" + b"a" * 300_000 + b"</p>"
    data = compress(body)
    for cut in chunkings(data, random_splits=4, split_samples=4, single_bytes=False):
        decoder = content_decoder(coding.upper())
        pieces = [p for chunk in cut for p in decoder.decode(chunk)] + list(decoder.finish())
        # (brotli's output_buffer_limit is loose: its pieces reach 96 KiB, whatever the ratio)
        bound = 128 * 1024 if coding == "br" else 64 * 1024
        assert b"".join(pieces) == body and max(map(len, pieces)) <= bound
    with pytest.raises(ContentDecodingError, match="truncated"):
        decoder = content_decoder(coding)
        list(decoder.decode(data[:-8]))
        list(decoder.finish())


@pytest.mark.parametrize("coding", ["compress", "gzip, br", ""])
def test_content_decoder_unknown(coding: str) -> None:
    with pytest.raises(ContentDecodingError, match="not supported"):
        content_decoder(coding)


# --------------------------------------------------------------------------------------------
# Requests: Range and Accept-Encoding as sent upstream
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("given", "sent"), [
    (None, "identity"),
    ("", "identity"),
    ("gzip, deflate, br, zstd", "gzip, deflate, br, zstd"),
    ("br;q=1.0, zstd, made-up", "br;q=1.0, zstd"),
    ("made-up, compress", "identity"),
    ("gzip;q=0, br", "br"),
    ("*", "br, deflate, gzip, zstd"),
    ("x-gzip;q=0.5, *;q=0.1", "x-gzip;q=0.5, br;q=0.1, deflate;q=0.1, zstd;q=0.1"),
    ("gzip;q=bad, deflate", "deflate"),
    ("identity;q=0, made-up", "identity"),
    ("gzip, identity;q=0", "gzip, identity;q=0"),
    (["gzip", "br"], "gzip, br"),
    (b"GZIP", "GZIP"),
])
def test_accept_encoding_names_only_decodable_codings(given: Any, sent: str) -> None:
    assert htmlstream.http.accept_encoding(given) == sent


@pytest.mark.parametrize(("method", "path", "request_headers", "forwarded"), [
    ("GET", "/page.html", [("Range", "bytes=0-")], False),
    ("GET", "/", [("Range", "bytes=0-10")], False),
    ("GET", "/video.mp4", [("Range", "bytes=0-")], True),
    ("HEAD", "/video.MP4?t=1#x", [("Range", "bytes=0-")], True),
    ("GET", "/a%2Epng", [("Range", "bytes=0-")], True),
    ("GET", "/.png", [("Range", "bytes=0-")], False),
    ("GET", "/stream/9", [("Range", "bytes=0-"), ("Sec-Fetch-Dest", "video")], True),
    ("GET", "/stream/9", [("Range", "bytes=0-"), ("Sec-Fetch-Dest", "document")], False),
    ("GET", "/video.mp4", [("Range", "bytes=0-1, 5-6")], False),     # multipart answer
    ("GET", "/video.mp4", [("Range", "bytes=0-1"), ("Range", "bytes=5-6")], False),
    ("GET", "/video.mp4", [("Range", "items=0-1")], False),
    ("POST", "/video.mp4", [("Range", "bytes=0-")], False),
    ("GET", "/video.mp4", [], False),
])
def test_forward_range(method: str, path: str, request_headers: list[tuple[str, str]],
                       forwarded: bool) -> None:
    assert htmlstream.http.forward_range(method, path, request_headers) is forwarded
    headers = [*request_headers, ("If-Range", '"v1"'), ("Accept-Encoding", "br, made-up")]
    sent = htmlstream.http.forwarded_request_headers(method, path, headers)
    names = [name.lower() for name, _ in sent]
    assert ("range" in names) is (forwarded and bool(request_headers))
    assert ("if-range" in names) is forwarded
    assert ("accept-encoding", "br") in sent
    as_bytes = [(k.encode(), v.encode()) for k, v in headers]
    sent_bytes = htmlstream.http.forwarded_request_headers(method, path.encode(), as_bytes)
    assert sent_bytes == [(k.encode(), v.encode()) for k, v in sent]


def test_forwarded_request_headers_adds_accept_encoding() -> None:
    sent = htmlstream.http.forwarded_request_headers("GET", "/", [("Host", "a"),
                                                                  ("Range", "bytes=0-")])
    assert sent == [("Host", "a"), ("accept-encoding", "identity")]
    assert htmlstream.http.forwarded_request_headers("GET", "/", []) == [
        ("accept-encoding", "identity")]
    options = HttpOptions(range_extensions=frozenset({"html"}))
    assert htmlstream.http.forward_range("GET", "/a.html", [("Range", "bytes=0-")], options)


def test_304_etag_weakened_as_the_client_holds_it() -> None:
    """A client revalidating the rewritten copy (``If-None-Match: W/"v1"``) gets the weak tag
    back, not the origin's strong one (which would replace it in its cache)."""
    headers = [(b"ETag", b'"v1"'), (b"Cache-Control", b"max-age=60")]
    for request in ([(b"if-none-match", b'W/"v1"')], {"If-None-Match": 'W/"v0", W/"v1"'}):
        t: ResponseRewrite[bytes] = ResponseRewrite(RW, "GET", 304, headers,
                                                    request_headers=request)
        assert t.decided and not t.rewriting
        assert t.headers == [(b"ETag", b'W/"v1"'), (b"Cache-Control", b"max-age=60")]
    for request in (None, [(b"if-none-match", b'"v1"')], [(b"if-none-match", b'"v1", W/"v1"')],
                    [(b"if-none-match", b'W/"v2"')], [(b"if-none-match", b"*")]):
        t = ResponseRewrite(RW, "GET", 304, headers, request_headers=request)
        assert t.headers == headers


def test_416_is_an_error_page_not_a_range() -> None:
    headers = [*HTML, (b"Content-Range", b"bytes */9000")]
    for chunks in some_chunkings(SMALL)[:20]:
        t, out = rewrite(headers, chunks, status=416,
                         request_headers=[(b"range", b"bytes=99999-")])
        assert t.rewriting and out == RW.rewrite(SMALL)
