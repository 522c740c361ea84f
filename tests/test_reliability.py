"""Reliability: hostile inputs, limits, faults and threads (issue 8; docs/design/reliability.md).

* Limits: a 100 MB attribute value (BufferLimitExceeded naming the construct and its offset; in
  passthrough mode the output is the rewritten prefix plus the raw rest, nothing lost), tags,
  comments, doctypes and scripts never closed, 10^6 nested elements (bounded memory, linear
  time), 10^5 attributes on one tag, deeply nested ``:not()`` selectors.
* Faults: a handler that raises, a handler that feeds its own stream, units used after their
  handler returned, ``close()`` twice, ``feed()`` after ``close()``.
* Threads: one Rewriter shared by 8 threads, each with its own stream.
* Regression tests for what fuzzing found (``fuzz/htmlmodel.py`` KNOWN_BUGS): engine bugs are
  strict xfails with a minimal reproducer, so they turn into failures once fixed (then drop the
  marker and the entry in KNOWN_BUGS).

Every test that feeds a document of normal size runs it under many chunkings; the huge ones are
generated chunk by chunk (never held whole) and fed in several chunk sizes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import html5lib
import pytest

import htmlstream as hs
from chunking import chunkings, feed_all, normalize_tokens
from htmlstream import (
    BufferLimitExceeded,
    HtmlStreamError,
    ParsingAmbiguityError,
    Rewriter,
    SelectorError,
    Tokenizer,
    UnitExpired,
)
from htmlstream.tokens import StartTag, TextType

MiB = 1 << 20


# --------------------------------------------------------------------------- helpers


def run(rw: Rewriter, chunks: list[bytes]) -> bytes:
    """Feed one chunking to a new stream; every returned piece is final."""
    stream = rw.stream()
    parts = [stream.feed(c) for c in chunks]
    parts.append(stream.close())
    return b"".join(parts)


def cuts(data: bytes) -> list[list[bytes]]:
    return chunkings(data, random_splits=6, split_samples=12)


def structure(data: bytes, **options: Any) -> list[list[Any]]:
    return normalize_tokens(hs.tokenize(data, **options))


def set_x(el: hs.Element) -> None:
    el.set_attribute("x", "1")


class Hasher:
    """Running digest and length of a byte stream that is too big to keep."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.n = 0

    def add(self, data: bytes) -> None:
        self.h.update(data)
        self.n += len(data)

    def result(self) -> tuple[str, int]:
        return self.h.hexdigest(), self.n


def huge_attribute(total: int, chunk: int, prefix: bytes = b"<p>pre</p><div title=\"",
                   suffix: bytes = b"\">after</div>") -> Iterator[bytes]:
    """A document with an attribute value of ``total`` bytes, in chunks of ``chunk`` bytes."""
    yield prefix
    sent = 0
    block = b"a" * chunk
    while sent < total:
        n = min(chunk, total - sent)
        yield block[:n]
        sent += n
    yield suffix


def stream_through(stream: Any, chunks: Iterator[bytes], out: Hasher | list[bytes],
                   fed: Hasher | None = None, *, watch: Callable[[], None] | None = None) -> None:
    for c in chunks:
        if fed is not None:
            fed.add(c)
        piece = stream.feed(c)
        if isinstance(out, list):
            out.append(piece)
        else:
            out.add(piece)
        if watch is not None:
            watch()


def buffered(stream: Any) -> int:
    lexer = stream._lexer
    return 0 if lexer is None else lexer.buffered


# =========================================================================== limits

# --------------------------------------------------------------------------- 100 MB attribute

HUGE = 100 * MiB
PREFIX = b"<p>pre</p><div title=\""


@pytest.mark.parametrize("chunk", [65536, 4096, 1_000_003])
def test_huge_attribute_value_raises_naming_construct_and_offset(chunk: int) -> None:
    limit = MiB
    rw = Rewriter(max_buffer_size=limit).on("p", element=set_x)
    stream = rw.stream()
    out: list[bytes] = []
    fed = Hasher()

    def watch() -> None:    # what is held between chunks stays under the limit
        assert buffered(stream) <= limit

    with pytest.raises(BufferLimitExceeded) as info:
        stream_through(stream, huge_attribute(HUGE, chunk), out, fed, watch=watch)
    err = info.value
    assert err.limit_name == "max_buffer_size"
    assert err.limit == limit
    assert err.construct == "an unterminated start tag"
    assert err.offset == len(b"<p>pre</p>")
    assert "max_buffer_size" in str(err) and "offset 10" in str(err)
    # it stopped soon after the limit, not at the end of the 100 MB
    assert fed.n <= limit + 2 * chunk + len(PREFIX)
    # what was returned before the error is the rewritten prefix, and stays valid
    assert b"".join(out) == b'<p x="1">pre</p>'
    with pytest.raises(HtmlStreamError, match="failed earlier"):
        stream.feed(b"x")
    with pytest.raises(HtmlStreamError, match="failed earlier"):
        stream.close()


@pytest.mark.parametrize("chunk", [65536, 1_000_003])
def test_huge_attribute_value_passthrough_loses_nothing(chunk: int) -> None:
    rw = Rewriter(max_buffer_size=MiB, on_limit="passthrough").on("p", element=set_x)
    rw.on("div", element=set_x)
    stream = rw.stream()
    out = Hasher()
    expected = Hasher()
    expected.add(b'<p x="1">pre</p>')       # rewritten prefix ...
    first = True
    for c in huge_attribute(HUGE, chunk):
        # ... then every input byte from the unfinished <div ...> on, unchanged
        expected.add(c[len(b"<p>pre</p>"):] if first else c)
        first = False
        out.add(stream.feed(c))
    out.add(stream.close())
    assert out.result() == expected.result()
    reason = stream.passthrough_reason
    assert reason is not None
    assert "max_buffer_size" in reason and "unterminated start tag" in reason
    assert "offset 10" in reason
    with pytest.raises(HtmlStreamError, match="closed"):
        stream.feed(b"x")


def test_tokenizer_huge_attribute_value_raises() -> None:
    tk = Tokenizer(max_buffer_size=MiB)
    tokens: list[Any] = []
    with pytest.raises(BufferLimitExceeded) as info:
        for c in huge_attribute(HUGE, 65536):
            tokens.extend(tk.feed(c))
    assert info.value.construct == "an unterminated start tag"
    assert info.value.offset == 10
    assert normalize_tokens(tokens) == [["StartTag", "p", {}], ["Character", "pre"],
                                        ["EndTag", "p"]]


def _find_split(out: bytes, full: bytes, data: bytes) -> int | None:
    """k such that ``out`` is a prefix of the full rewrite followed by ``data[k:]``."""
    for k in range(len(data) + 1):
        rest = data[k:]
        if out.endswith(rest) and full.startswith(out[:len(out) - len(rest)]):
            return k
    return None


def test_passthrough_output_is_rewritten_prefix_plus_raw_rest_for_every_chunking() -> None:
    data = (b"<p>a</p><div title=\"" + b"v" * 200 + b"\">b<p>c</p></div>"
            b"<!-- " + b"c" * 100 + b" --><p>d</p>")
    full = Rewriter().on("p", element=set_x).on("div", element=set_x).rewrite(data)
    rw = Rewriter(max_buffer_size=16, on_limit="passthrough")
    rw.on("p", element=set_x).on("div", element=set_x)
    hits = 0
    for cut in cuts(data):
        stream = rw.stream()
        out = b"".join([stream.feed(c) for c in cut] + [stream.close()])
        if stream.passthrough_reason is None:
            assert out == full, cut
            continue
        hits += 1
        k = _find_split(out, full, data)
        assert k is not None, (cut, out)
        # the raw rest starts no later than the construct that was too big
        assert k <= data.index(b"<div") or k <= data.index(b"<!--"), (cut, out, k)
    assert hits > 0


# --------------------------------------------------------------------------- never closed

NEVER_CLOSED = [
    b"<!-- a comment never closed <p>",
    b"<!-- a comment --",
    b"<p title='a tag never closed",
    b"<a href=x",
    b"<!DOCTYPE html PUBLIC \"-//W3C//DTD",
    b"<script>if (a < b) { document.write('<p>') ",
    b"<script><!--<script>",
    b"<style>p { color: red",
    b"<textarea>text <b>",
    b"<title>t",
    b"<svg><![CDATA[ <b> ",
    b"<plaintext><b>",
    b"<", b"</", b"</p", b"<!", b"<!-", b"<?pi", b"&amp", b"&#x4", b"x\r", b"caf\xc3",
]


@pytest.mark.parametrize("construct", NEVER_CLOSED)
def test_never_closed_construct_passes_through_at_eof(construct: bytes) -> None:
    data = b"<p>before</p>" + construct
    reader = Rewriter().on("*", element=lambda el: el.attributes, text=lambda t: t.text)
    reader.on_document(comments=lambda c: c.text, doctype=lambda d: d.name)
    changer = Rewriter().on("p", element=set_x)
    for cut in cuts(data):
        assert run(reader, cut) == data, cut
        assert run(changer, cut) == b'<p x="1">before</p>' + construct, cut
        tokens = feed_all(Tokenizer, cut)
        assert b"".join(t.raw for t in tokens) == data


@pytest.mark.parametrize(("opening", "construct"), [
    (b"<!--", "an unterminated comment"),
    (b"<div title=\"", "an unterminated start tag"),
    (b"<!DOCTYPE html PUBLIC \"", "an unterminated DOCTYPE"),
])
def test_never_closed_construct_beyond_the_default_limit(opening: bytes, construct: str) -> None:
    size = 5 * MiB          # over DEFAULT_MAX_BUFFER_SIZE (4 MiB)
    assert size > hs.DEFAULT_MAX_BUFFER_SIZE

    def chunks() -> Iterator[bytes]:
        return huge_attribute(size, 65536, prefix=b"<p>before</p>" + opening, suffix=b"")

    stream = Rewriter().on("p", element=set_x).stream()
    with pytest.raises(BufferLimitExceeded) as info:
        stream_through(stream, chunks(), [])
    assert info.value.construct == construct
    assert info.value.offset == len(b"<p>before</p>")

    stream = Rewriter(on_limit="passthrough").on("p", element=set_x).stream()
    out, src = Hasher(), Hasher()
    stream_through(stream, chunks(), out, src)
    out.add(stream.close())
    expected = Hasher()
    expected.add(b'<p x="1">before</p>')
    for i, c in enumerate(chunks()):
        expected.add(c[len(b"<p>before</p>"):] if i == 0 else c)
    assert out.result() == expected.result()


def test_never_closed_script_of_20_mb_streams_without_limit() -> None:
    """Text is never held back: an unclosed script (or text node) of any size just streams."""
    unit = b"if (a < b && c > d) { x = '<!-- <p> -->'; } // </scrip\n"
    stream = Rewriter().on("script", element=set_x).stream()
    out, src = Hasher(), Hasher()

    def chunks() -> Iterator[bytes]:
        yield b"<script>"
        block = unit * (65536 // len(unit))
        for _ in range(20 * MiB // len(block)):
            yield block

    most = 0

    def watch() -> None:
        nonlocal most
        most = max(most, buffered(stream))

    stream_through(stream, chunks(), out, src, watch=watch)
    out.add(stream.close())
    expected = Hasher()
    for i, c in enumerate(chunks()):
        expected.add(b'<script x="1">' if i == 0 else c)
    assert out.result() == expected.result()
    assert most < 64


# --------------------------------------------------------------------------- deep nesting


def nested(n: int, open_tag: bytes = b"<div>", close_tag: bytes = b"</div>",
           per_chunk: int = 1000) -> Iterator[bytes]:
    block = open_tag * per_chunk
    for _ in range(n // per_chunk):
        yield block
    yield b"<p>deep</p>"
    block = close_tag * per_chunk
    for _ in range(n // per_chunk):
        yield block


def _stream_nested(n: int) -> tuple[float, int]:
    matched = [0]

    def count(el: hs.Element) -> None:
        matched[0] += 1

    rw = Rewriter().on("div > div", element=count).on("p", element=set_x)
    stream = rw.stream()
    out = Hasher()
    most = 0

    def watch() -> None:
        nonlocal most
        most = max(most, buffered(stream))

    start = time.process_time()       # CPU time: other load on the machine does not count
    stream_through(stream, nested(n), out, watch=watch)
    out.add(stream.close())
    elapsed = time.process_time() - start
    expected = Hasher()
    for c in nested(n):
        expected.add(c.replace(b"<p>", b'<p x="1">'))
    assert out.result() == expected.result()
    assert most < 16        # nothing but an unfinished tag is ever held
    return elapsed, matched[0]


@pytest.mark.slow
def test_million_nested_elements_stream_in_linear_time() -> None:
    t5, matched5 = _stream_nested(10**5)
    t6, matched6 = _stream_nested(10**6)
    assert matched5 == 10**5 - 1 and matched6 == 10**6 - 1
    # linear: 10x the input takes about 10x the time (quadratic would be 100x)
    assert t6 < 30 * t5 + 1.0, (t5, t6)


@pytest.mark.slow
def test_deep_nesting_memory_is_bounded() -> None:
    """In a fresh process: peak RSS grows by less than 32 MB while streaming 10^6 nested
    <div>, 10^5 nested formatting elements with distinct attributes, and 10^5 nested tables."""
    script = textwrap.dedent("""
        import resource
        import htmlstream as hs

        def rss():
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

        rw = hs.Rewriter()
        rw.on("div > div", element=lambda el: None)
        rw.on("b[class]", element=lambda el: el.set_attribute("x", "1"))
        rw.on_document(text=lambda t: None)
        rw.rewrite(b"<div><b class=1>warm up</b></div>")
        base = rss()
        cases = [
            (10**6, lambda i: b"<div>", b"</div>"),
            (10**5, lambda i: b"<b class=%d>t" % i, b"</b>"),
            (10**5, lambda i: b"<table><tr><td>", b"</td></tr></table>"),
        ]
        for n, opening, closing in cases:
            s = rw.stream()
            for i in range(0, n, 1000):
                s.feed(b"".join(opening(j) for j in range(i, i + 1000)))
            s.feed(b"text")
            for i in range(0, n, 1000):
                s.feed(closing * 1000)
            s.close()
        print(rss() - base)
    """)
    env = dict(os.environ)
    src = str(Path(hs.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300, check=True)
    growth = int(done.stdout.split()[-1])
    if "libasan" not in env.get("LD_PRELOAD", ""):     # ASan keeps freed memory in quarantine
        assert growth < 32 * MiB, growth


def test_deep_nesting_in_strict_mode_is_an_ambiguity_not_a_crash() -> None:
    data = b"<div>" * 1100 + b"<p>x"
    rw = Rewriter(strict=True)
    for cut in chunkings(data, random_splits=4, split_samples=8):
        with pytest.raises(ParsingAmbiguityError) as info:
            run(rw, cut)
        # the 1023rd <div> (html and body are the first two of the 1024 recorded elements)
        assert info.value.offset == 1022 * 5
        assert "max_depth" in str(info.value)


def test_tokenizer_state_is_right_after_deep_nesting() -> None:
    depth = 1500
    data = (b"<div>" * depth + b"</div>" * depth + b"<script><b></script>"
            + b"<svg>" + b"<g>" * depth + b"<title><i></title><![CDATA[<u>]]>" + b"</g>" * depth
            + b"</svg><title><s></title>")
    want = None
    for cut in chunkings(data, random_splits=3, split_samples=6, single_bytes=False):
        tokens = normalize_tokens(feed_all(Tokenizer, cut), text_types=True)
        tail = [t for t in tokens if t[0] != "EndTag" and t[1:2] not in (["div"], ["g"])]
        assert tail == [
            ["StartTag", "script", {}], ["Character", "<b>", TextType.SCRIPT_DATA],
            ["StartTag", "svg", {}],
            ["StartTag", "title", {}], ["StartTag", "i", {}],      # SVG title: markup
            ["Character", "<u>", TextType.CDATA_SECTION],
            ["StartTag", "title", {}], ["Character", "<s>", TextType.RCDATA],
        ]
        want = want or tokens
        assert tokens == want


# --------------------------------------------------------------------------- attributes

N_ATTRS = 10**5
MANY_ATTRS = b"<p>x</p><p " + b" ".join(b"a%d=%d" % (i, i) for i in range(N_ATTRS)) + b">y</p>"


def big_cuts(data: bytes) -> list[list[bytes]]:
    sizes = [len(data), 65536, 4093]
    return [[data[i:i + n] for i in range(0, len(data), n)] for n in sizes]


def test_hundred_thousand_attributes_hit_the_default_limit() -> None:
    assert hs.DEFAULT_MAX_ATTRIBUTES == 4096
    for cut in big_cuts(MANY_ATTRS):
        with pytest.raises(BufferLimitExceeded) as info:
            run(Rewriter().on("p", element=set_x), cut)
        err = info.value
        assert (err.limit_name, err.limit) == ("max_attributes", 4096)
        assert err.construct == "a tag with too many attributes"
        assert err.offset == len(b"<p>x</p>")
        with pytest.raises(BufferLimitExceeded):
            feed_all(Tokenizer, cut)


def test_hundred_thousand_attributes_passthrough() -> None:
    rw = Rewriter(on_limit="passthrough").on("p", element=set_x)
    for cut in big_cuts(MANY_ATTRS):
        stream = rw.stream()
        out = b"".join([stream.feed(c) for c in cut] + [stream.close()])
        assert out == b'<p x="1">x</p>' + MANY_ATTRS[len(b"<p>x</p>"):]
        assert "max_attributes" in (stream.passthrough_reason or "")


def test_hundred_thousand_attributes_with_a_raised_limit() -> None:
    def edit(el: hs.Element) -> None:
        if el.has_attribute("a5"):
            assert el.get_attribute("a99999") == "99999"
            el.set_attribute("z", "new")
            el.remove_attribute("a5")

    rw = Rewriter(max_attributes=N_ATTRS + 1).on("p", element=edit)
    start = time.perf_counter()
    outs = {run(rw, cut) for cut in big_cuts(MANY_ATTRS)}
    assert time.perf_counter() - start < 20
    assert len(outs) == 1
    (out,) = outs
    (tag,) = [t for t in hs.tokenize(out, max_attributes=N_ATTRS + 1)
              if isinstance(t, StartTag) and len(t.attribute_list) > 1]
    attrs = tag.attributes
    assert len(attrs) == N_ATTRS and attrs["z"] == "new" and "a5" not in attrs
    assert attrs["a4"] == "4" and attrs["a6"] == "6"


def test_hundred_thousand_duplicate_attributes() -> None:
    data = b"<p " + b" ".join(b"a=%d" % i for i in range(N_ATTRS)) + b">y</p>"
    seen = []

    def edit(el: hs.Element) -> None:
        seen.append(el.get_attribute("a"))
        el.set_attribute("a", "one")

    rw = Rewriter(max_attributes=N_ATTRS).on("p", element=edit)
    outs = {run(rw, cut) for cut in big_cuts(data)}
    assert len(outs) == 1
    tag = next(iter(hs.tokenize(outs.pop(), max_attributes=N_ATTRS)))
    assert isinstance(tag, StartTag) and tag.attributes == {"a": "one"}   # the first one wins
    assert seen == ["0"] * 3


# --------------------------------------------------------------------------- selectors


@pytest.mark.parametrize(("pseudo", "depth"), [
    *((p, d) for p in (":not(", ":is(", ":where(", ":nth-child(2n of ") for d in (33, 100)),
    (":not(", 10_000), (":not(", 50_000),
])
def test_deeply_nested_selectors_are_refused(pseudo: str, depth: int) -> None:
    selector = pseudo * depth + "p" + ")" * depth
    start = time.perf_counter()
    with pytest.raises(SelectorError) as info:
        Rewriter().on(selector, element=set_x)
    assert time.perf_counter() - start < 10
    assert isinstance(info.value, ValueError)
    assert "nested too deeply" in str(info.value)
    assert 0 < info.value.position < len(selector)


def test_unclosed_nested_selector_is_refused() -> None:
    with pytest.raises(SelectorError):
        hs.parse_selector(":not(" * 100_000)
    with pytest.raises(SelectorError):
        hs.parse_selector("(" * 100_000)


@pytest.mark.parametrize(("depth", "matches"), [(32, "p"), (31, "i")])
def test_selector_nesting_up_to_32_levels_works(depth: int, matches: str) -> None:
    selector = ":not(" * depth + "p" + ")" * depth
    data = b"<p>a</p><i>b</i>"
    names: list[str] = []
    rw = Rewriter().on(selector, element=lambda el: names.append(el.tag_name))
    for cut in cuts(data):
        names.clear()
        assert run(rw, cut) == data
        assert matches in names and ({"p", "i"} - {matches}).isdisjoint(names)


# =========================================================================== faults


class Boom(Exception):
    pass


class Stop(BaseException):
    pass


FAULT_DOC = (b"<!DOCTYPE html><html><head><title>t</title></head><body>"
             b"<p>one</p><!--c--><div>two<b>three</b></div></body></html>")


def _fault_rewriter(where: str, exc: BaseException) -> Rewriter:
    def boom(*args: Any) -> None:
        raise exc

    rw = Rewriter().on("p", element=set_x)
    if where == "element":
        rw.on("b", element=boom)
    elif where == "end_tag":
        rw.on("div", element=lambda el: el.on_end_tag(boom))
    elif where == "text":
        rw.on("b", text=boom)
    elif where == "comments":
        rw.on_document(comments=boom)
    elif where == "doctype":
        rw.on_document(doctype=boom)
    elif where == "end":
        rw.on_document(end=boom)
    return rw


@pytest.mark.parametrize("where", ["element", "end_tag", "text", "comments", "doctype", "end"])
@pytest.mark.parametrize("kind", [Boom, Stop])
def test_handler_exception_propagates_unchanged_and_fails_the_stream(
        where: str, kind: type[BaseException]) -> None:
    full = Rewriter().on("p", element=set_x).rewrite(FAULT_DOC)
    for cut in cuts(FAULT_DOC):
        exc = kind("handler failed")
        stream = _fault_rewriter(where, exc).stream()
        out: list[bytes] = []
        with pytest.raises(kind) as info:
            for c in cut:
                out.append(stream.feed(c))
            out.append(stream.close())
        assert info.value is exc
        assert full.startswith(b"".join(out))       # what was returned stays valid
        for chunk in (b"more", b"", None):
            with pytest.raises(HtmlStreamError, match="failed earlier") as later:
                stream.close() if chunk is None else stream.feed(chunk)
            assert later.value.__cause__ is exc
    # the rewriter itself is not affected
    assert Rewriter().on("p", element=set_x).rewrite(FAULT_DOC) == full


def test_exception_from_a_limit_fails_the_stream_too() -> None:
    stream = Rewriter(max_buffer_size=16).stream()
    stream.feed(b"<p title='")
    with pytest.raises(BufferLimitExceeded):
        stream.feed(b"x" * 100)
    with pytest.raises(HtmlStreamError, match="failed earlier"):
        stream.close()


def _feeding_rewriter(action: str) -> tuple[Rewriter, list[Any]]:
    holder: list[Any] = []

    def handler(el: hs.Element) -> None:
        if action == "feed":
            holder[0].feed(b"<i>more</i>")
        else:
            holder[0].close()

    return Rewriter().on("b", element=handler), holder


@pytest.mark.parametrize("action", ["feed", "close"])
def test_handler_using_its_own_stream_gets_a_clear_error_and_fails_it(action: str) -> None:
    """(Found here: the lexer's re-entry guard used to answer first, with ValueError('the lexer
    has failed on an earlier error').)"""
    data = b"<p>a<b>b</b>c</p>"
    for cut in cuts(data):
        rw, holder = _feeding_rewriter(action)
        stream = rw.stream()
        holder.append(stream)
        with pytest.raises(RuntimeError, match="handler may not feed or close the stream"):
            for c in cut:
                stream.feed(c)
            stream.close()
        with pytest.raises(HtmlStreamError, match="failed earlier"):
            stream.feed(b"x")


def test_handler_may_use_another_stream_of_the_same_rewriter() -> None:
    rw = Rewriter()

    def nested(el: hs.Element) -> None:
        inner = rw.rewrite(b"<i>inner</i>")
        el.set_attribute("data-inner", inner.decode())

    rw.on("b", element=nested).on("i", element=set_x)
    data = b"<p><b>b</b><i>i</i></p>"
    for cut in cuts(data):
        assert run(rw, cut) == (b'<p><b data-inner="<i x=&quot;1&quot;>inner</i>">b</b>'
                                b'<i x="1">i</i></p>')


UNIT_CALLS: list[tuple[str, Callable[[Any], Any]]] = [
    ("element", lambda u: u.set_attribute("a", "b")),
    ("element", lambda u: u.remove_attribute("a")),
    ("element", lambda u: setattr(u, "tag_name", "div")),
    ("element", lambda u: u.before("x")),
    ("element", lambda u: u.after("x")),
    ("element", lambda u: u.prepend("x")),
    ("element", lambda u: u.append("x")),
    ("element", lambda u: u.set_inner_content("x")),
    ("element", lambda u: u.replace("x")),
    ("element", lambda u: u.remove()),
    ("element", lambda u: u.remove_and_keep_content()),
    ("element", lambda u: u.on_end_tag(lambda end: None)),
    ("end_tag", lambda u: u.before("x")),
    ("end_tag", lambda u: u.after("x")),
    ("end_tag", lambda u: u.remove()),
    ("end_tag", lambda u: setattr(u, "name", "div")),
    ("text", lambda u: u.before("x")),
    ("text", lambda u: u.after("x")),
    ("text", lambda u: u.replace("x")),
    ("text", lambda u: u.remove()),
    ("comment", lambda u: setattr(u, "text", "x")),
    ("comment", lambda u: u.before("x")),
    ("comment", lambda u: u.remove()),
    ("doctype", lambda u: u.remove()),
    ("end", lambda u: u.append("x")),
]


@pytest.mark.parametrize(("unit", "call"), UNIT_CALLS)
def test_unit_changed_after_its_handler_returned_is_refused(
        unit: str, call: Callable[[Any], Any]) -> None:
    data = b"<!DOCTYPE html><p>text<!--c--></p>"
    saved: list[Any] = []

    def element(el: hs.Element) -> None:
        if unit == "element":
            saved.append(el)
        elif unit == "end_tag":
            el.on_end_tag(saved.append)

    rw = Rewriter().on("p", element=element)
    if unit == "text":
        rw.on("p", text=lambda t: saved.append(t) if t.text else None)
    rw.on_document(comments=saved.append if unit == "comment" else None,
                   doctype=saved.append if unit == "doctype" else None,
                   end=saved.append if unit == "end" else None)
    for cut in cuts(data):
        saved.clear()
        assert run(rw, cut) == data
        assert saved
        for u in saved:
            with pytest.raises(UnitExpired, match="can no longer be changed"):
                call(u)
    assert issubclass(UnitExpired, HtmlStreamError)


def test_close_twice_and_feed_after_close() -> None:
    data = b"<p>a</p><!-- c -->"
    for cut in cuts(data):
        stream = Rewriter().on("p", element=set_x).stream()
        out = b"".join(stream.feed(c) for c in cut)
        out += stream.close()
        assert out == b'<p x="1">a</p><!-- c -->'
        for chunk in (None, b"x", b""):
            with pytest.raises(HtmlStreamError, match="closed"):
                stream.close() if chunk is None else stream.feed(chunk)


def test_close_twice_in_passthrough_mode() -> None:
    stream = Rewriter(max_buffer_size=16, on_limit="passthrough").stream()
    assert stream.feed(b"<p title='") == b""
    assert stream.feed(b"x" * 40) == b"<p title='" + b"x" * 40
    assert stream.close() == b""
    with pytest.raises(HtmlStreamError, match="closed"):
        stream.close()
    with pytest.raises(HtmlStreamError, match="closed"):
        stream.feed(b"x")


def test_tokenizer_close_twice_and_feed_after_close() -> None:
    tk = Tokenizer()
    tk.feed(b"<p>x")
    tk.close()
    for call in (tk.close, lambda: tk.feed(b"x")):
        with pytest.raises((ValueError, HtmlStreamError), match="closed"):
            call()


def test_feeding_str_is_a_type_error_and_does_not_fail_the_stream() -> None:
    stream = Rewriter().stream()
    with pytest.raises(TypeError):
        stream.feed("<p>")  # type: ignore[arg-type]
    assert stream.feed(b"<p>") + stream.close() == b"<p>"


# =========================================================================== threads


def _thread_docs(n: int) -> list[bytes]:
    docs = []
    for i in range(n):
        parts = [b"<!DOCTYPE html><html><head><title>doc %d</title></head><body>" % i]
        for j in range(300 + 40 * i):
            parts.append(b"<div class=d%d><p>para %d &amp; <a href='/x/%d'>link</a></p>"
                         b"<!-- c %d --><img src=i%d.png>text</div>" % (j % 7, j, j, j, j))
        parts.append(b"<script>var x = '</p>';</script></body></html>")
        docs.append(b"".join(parts))
    return docs


def _thread_rewriter() -> Rewriter:
    rw = Rewriter()
    rw.on("a[href]", element=lambda el: el.set_attribute(
        "href", "https://example.com" + (el.get_attribute("href") or "")))
    rw.on("img", element=lambda el: el.set_attribute("loading", "lazy"))
    rw.on("div.d3", element=lambda el: el.on_end_tag(lambda end: end.after("[d3]")))
    rw.on("p", text=lambda t: t.replace(t.text.upper()) if t.text else None)
    rw.on("title", element=lambda el: el.append(" - site"))
    rw.on_document(comments=lambda c: c.remove(), end=lambda end: end.append("<!--end-->",
                                                                              html=True))
    return rw


def _run_in_threads(rw: Rewriter, docs: list[bytes], chunk: int) -> list[bytes | BaseException]:
    results: list[bytes | BaseException] = [b""] * len(docs)
    barrier = threading.Barrier(len(docs))

    def work(i: int) -> None:
        try:
            barrier.wait()
            stream = rw.stream()
            data = docs[i]
            size = chunk + i        # different cuts per thread
            parts = [stream.feed(data[k:k + size]) for k in range(0, len(data), size)]
            parts.append(stream.close())
            results[i] = b"".join(parts)
        except BaseException as exc:    # reported by the assertion in the test
            results[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(docs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


def test_shared_rewriter_used_by_eight_threads() -> None:
    docs = _thread_docs(8)
    rw = _thread_rewriter()
    sequential = [rw.rewrite(d) for d in docs]
    assert len(set(sequential)) == 8
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)     # switch threads as often as possible
    try:
        for chunk in (97, 4096):
            assert _run_in_threads(rw, docs, chunk) == sequential
        # first use of a new rewriter by all threads at once (rules compiled concurrently)
        assert _run_in_threads(_thread_rewriter(), docs, 1000) == sequential
    finally:
        sys.setswitchinterval(old)


# =========================================================================== fuzz findings
#
# Minimal reproducers of what the hypothesis suite and the atheris target found.  Open engine
# bugs are strict xfails; a key in brackets names the KNOWN_BUGS entry of fuzz/htmlmodel.py that
# let the properties go on while the bug was open.  The [adjacency], [eof-absorb],
# [rawtext-escape], [attr-splice] and [empty-chunk] bugs and the CR finding are fixed (the seams
# of docs/guide/rewriting.md): their tests pass, a refusal (ValueError) counting where the
# reproducer allows one.


def _rewrite(data: bytes, selector: str, **handlers: Any) -> bytes:
    return Rewriter().on(selector, **handlers).rewrite(data)


def _no_tag_named(out: bytes, name: str) -> bool:
    return not any(isinstance(t, StartTag) and t.name == name for t in hs.tokenize(out))


def _refused_or(check: Callable[[], bool]) -> bool:
    try:
        return check()
    except ValueError:      # refusing the insertion is fine too
        return True


def test_inserted_text_after_a_lone_lt_stays_text() -> None:
    for cut in cuts(b"<p>a<</p>"):
        rw = Rewriter().on("p", element=lambda el: el.append("b"))
        out = run(rw, cut)
        assert structure(out) == [["StartTag", "p", {}], ["Character", "a<b"], ["EndTag", "p"]]


def test_inserted_text_after_a_lone_lt_does_not_open_a_comment() -> None:
    out = _rewrite(b"<div>a<</div><p>b</p>", "div", element=lambda el: el.append("!-- x"))
    assert ["StartTag", "p", {}] in structure(out)


@pytest.mark.parametrize("tag", ["style", "script", "xmp", "iframe", "noembed"])
def test_raw_text_insertion_cannot_close_the_element(tag: str) -> None:
    data = f"<{tag}>a<</{tag}>".encode()
    payload = f"/{tag}><img src=x>"
    assert _refused_or(lambda: _no_tag_named(
        _rewrite(data, tag, element=lambda el: el.append(payload)), "img"))


def test_raw_text_insertion_cannot_close_the_element_with_what_follows() -> None:
    data = b"<script>/script><img src=x></script>"
    assert _refused_or(lambda: _no_tag_named(
        _rewrite(data, "script", element=lambda el: el.prepend("a<")), "img"))


def test_raw_text_insertions_cannot_close_the_element_together() -> None:
    def two(el: hs.Element) -> None:
        el.append("a<")
        el.append("/script><img src=x>")

    assert _refused_or(lambda: _no_tag_named(
        _rewrite(b"<script>a</script>", "script", element=two), "img"))
    rw = Rewriter().on("script", text=lambda t: t.after("/script><"))
    assert _refused_or(lambda: ["EndTag", "script"] not in structure(rw.rewrite(b"<script>a")))


def test_script_insertion_cannot_start_a_double_escape() -> None:
    data = b"<script>a<!-</script><p>x</p>"
    assert _refused_or(lambda: ["StartTag", "p", {}] in structure(
        _rewrite(data, "script", element=lambda el: el.append("-<script>"))))


def test_cdata_insertion_cannot_end_the_section() -> None:
    data = b"<svg><![CDATA[a]]]></svg>"
    assert _refused_or(lambda: _no_tag_named(
        _rewrite(data, "svg", text=lambda t: t.after("]><img src=x>") if t.text else None),
        "img"))


def test_rcdata_insertion_cannot_make_an_end_tag() -> None:
    out = _rewrite(b"<textarea>a<</textarea>", "textarea",
                   element=lambda el: el.append("/textarea x"))
    assert structure(out) == [["StartTag", "textarea", {}], ["Character", "a</textarea x"],
                              ["EndTag", "textarea"]]


@pytest.mark.parametrize(("before", "text", "want"), [
    (b"x&not", "in;", "x\u00acin;"),
    (b"x&#", "65", "x&#65"),
    (b"x&", "amp;", "x&amp;"),
])
def test_inserted_text_does_not_continue_a_character_reference(
        before: bytes, text: str, want: str) -> None:
    out = _rewrite(before + b"<b>y</b>", "b", element=lambda el: el.before(text))
    assert structure(out)[0] == ["Character", want]


def test_removal_does_not_join_its_neighbours_into_markup() -> None:
    rw = Rewriter().on_document(comments=lambda c: c.remove())
    data = b"<p>a<<!--c-->b</p>"
    for cut in cuts(data):
        assert structure(run(rw, cut)) == [["StartTag", "p", {}], ["Character", "a<b"],
                                           ["EndTag", "p"]]


def test_removal_does_not_join_invalid_utf8_into_a_character() -> None:
    out = _rewrite(b"<p>\xc3<b></b>\xaa</p>", "b", element=lambda el: el.remove_and_keep_content())
    assert structure(out) == [["StartTag", "p", {}], ["Character", "\ufffd\ufffd"],
                              ["EndTag", "p"]]


def test_document_end_text_after_a_trailing_lt_slash() -> None:
    rw = Rewriter().on_document(end=lambda end: end.append("<"))
    assert structure(rw.rewrite(b"a</")) == [["Character", "a</<"]]


def test_document_end_text_after_an_unfinished_comment_is_text() -> None:
    out = Rewriter().on_document(end=lambda end: end.append("X")).rewrite(b"<p>a<!-- c")
    tokens = structure(out)
    assert ["Comment", " c"] in tokens and any(t[0] == "Character" and "X" in t[1]
                                               for t in tokens)


def test_append_at_eof_after_an_unfinished_tag_is_text() -> None:
    out = _rewrite(b"<p>x<b", "p", element=lambda el: el.append("X"))
    assert structure(out) == [["StartTag", "p", {}], ["Character", "xX"]]


def test_end_tag_before_in_script_is_raw_text() -> None:
    out = _rewrite(b"<script>a</script>", "script",
                   element=lambda el: el.on_end_tag(lambda end: end.before("<b>&")))
    assert structure(out)[1] == ["Character", "a<b>&"]


def test_document_end_in_unclosed_raw_text_is_raw_text() -> None:
    out = Rewriter().on_document(end=lambda end: end.append("<b>&")).rewrite(b"<style>a")
    assert structure(out) == [["StartTag", "style", {}], ["Character", "a<b>&"]]


@pytest.mark.parametrize("method", ["append", "after"])
def test_outer_element_insertion_at_eof_in_unclosed_script_is_raw_text(method: str) -> None:
    out = _rewrite(b"<ul><script>a", "ul", element=lambda el: getattr(el, method)("<b>&"))
    assert structure(out) == [["StartTag", "ul", {}], ["StartTag", "script", {}],
                              ["Character", "a<b>&"]]


def test_set_attribute_next_to_a_valueless_equals() -> None:
    out = _rewrite(b"<p href=>", "p", element=lambda el: el.set_attribute("title", ""))
    assert structure(out) == [["StartTag", "p", {"href": "", "title": ""}]]


def test_remove_attribute_with_a_valueless_equals() -> None:
    out = _rewrite(b"<p href=>x", "p", element=lambda el: el.remove_attribute("href"))
    assert structure(out) == [["StartTag", "p", {}], ["Character", "x"]]


def test_remove_attribute_glued_to_the_next_one() -> None:
    out = _rewrite(b"<p a=\"x\"b>y", "p", element=lambda el: el.remove_attribute("a"))
    assert structure(out) == [["StartTag", "p", {"b": ""}], ["Character", "y"]]


def test_no_empty_text_chunk_before_the_last() -> None:
    data = b"<svg><![CDATA[qr]]></svg>"
    seen: list[tuple[bytes, bool]] = []
    rw = Rewriter().on_document(text=lambda t: seen.append((t.raw, t.last_in_text_node)))
    run(rw, [data[:14], data[14:]])
    assert all(raw or last for raw, last in seen), seen


def test_set_attribute_value_with_cr_reads_back() -> None:
    out = _rewrite(b"<p>x</p>", "p", element=lambda el: el.set_attribute("title", "a\rb\r\nc"))
    assert structure(out)[0] == ["StartTag", "p", {"title": "a\rb\r\nc"}]


def test_inserted_text_with_cr_reads_back() -> None:
    out = _rewrite(b"<p>x</p>", "p", element=lambda el: el.append("a\rb"))
    assert structure(out)[1] == ["Character", "xa\rb"]


@pytest.mark.parametrize("crs", [1, 2, 3])
@pytest.mark.parametrize("after", [b"x", b"\n", b"<head>x", b"\r\nx", b""])
def test_crs_before_a_seam_stay_newlines(crs: int, after: bytes) -> None:
    # [cr-pair]: the CR before a removal is written CR LF; one before it stays a newline of its
    # own, in every chunking (the first CR may be returned by feed() before the seam is known)
    data = b"a" + b"\r" * crs + b"<b>x</b><image>" + after
    want = structure(b"a" + b"\n" * crs + after)     # (each CR was followed by no LF)
    rw = Rewriter().on("b, img", element=lambda el: el.remove())
    for cut in chunkings(data):
        assert structure(run(rw, cut)) == want, cut


def test_nul_in_an_attribute_value_reads_back_as_replacement_character() -> None:
    """Not a bug: no markup can give U+0000 in an attribute value (a browser reads both a raw
    NUL and '&#0;' as U+FFFD), so that is what set_attribute('t', '\\0') reads back as."""
    out = _rewrite(b"<p>x</p>", "p", element=lambda el: el.set_attribute("t", "a\x00b"))
    assert structure(out)[0] == ["StartTag", "p", {"t": "a\ufffdb"}]


# Seams beyond the first reproducers (docs/guide/rewriting.md, "Seams").


def _same_for_every_cut(rw: Rewriter, data: bytes) -> bytes:
    outs = {run(rw, cut) for cut in cuts(data)}
    assert len(outs) == 1, outs
    return outs.pop()


@pytest.mark.parametrize(("data", "payload"), [
    (b"<script><!--a</script><p>x</p>", "<script>"),     # inside an escape: double escape
    (b"<script><!--a</script><p>x</p>", "-->"),           # ... or leaving it early
])
def test_script_insertion_in_an_escape_cannot_change_its_state(data: bytes, payload: str) -> None:
    rw = Rewriter().on("script", element=lambda el: el.append(payload))
    with pytest.raises(ValueError, match="the change is refused"):
        rw.rewrite(data)


def test_script_insertion_outside_an_escape_is_allowed() -> None:
    rw = Rewriter().on("script", element=lambda el: el.append("x = '<script>' -->"))
    out = _same_for_every_cut(rw, b"<script>a</script><p>x</p>")
    assert out == b"<script>ax = '<script>' --></script><p>x</p>"


def test_removing_script_text_that_opens_an_escape_is_refused_if_text_follows() -> None:
    data = b"<script>a<!--b</script>"
    rw = Rewriter().on("script", text=lambda t: t.remove() if b"<!--" in t.raw else None)
    # the piece with '<!--' removed, '<script>x</script>' after it would no longer read as in an
    # escape; only the end tag after it: nothing reads differently
    assert rw.rewrite(data) == b"<script></script>"
    stream = rw.stream()
    with pytest.raises(ValueError, match="the change is refused"):
        stream.feed(b"<script>a<!--b")
        stream.feed(b"<script>x</script>y</script>")
        stream.close()


@pytest.mark.parametrize(("chunks", "text"), [
    ([b"<script><!-", b"-<script>a</script>b</script><p>x"], "y"),     # splits '<!--'
    ([b"<script><!--<", b"script>a</script>b</script><p>x"], ">"),     # '<!--' + '>': '-->'
])
def test_script_text_insertion_between_pieces_cannot_change_the_state(
        chunks: list[bytes], text: str) -> None:
    rw = Rewriter().on_document(text=lambda t: t.after(text) if not t.last_in_text_node
                                else None)
    with pytest.raises(ValueError, match="the change is refused"):
        run(rw, chunks)


def test_read_only_text_handler_in_a_double_escaped_script() -> None:
    """Found by atheris: a script's text read from inside '<!--' '<script>' and handled by a
    handler that changes nothing was refused as if text had been removed."""
    data = b"<script><!--<script>a</script>b</script><p>x"
    rw = Rewriter().on_document(text=lambda t: t.text)
    for cut in cuts(data):
        assert run(rw, cut) == data


@pytest.mark.parametrize(("data", "written"), [
    (b"<p>a<!-- x", b"<p>a<!-- x-->Z"),
    (b"<p>a<!-- x-", b"<p>a<!-- x-->Z"),
    (b"<p>a<!-- x--", b"<p>a<!-- x-->Z"),
    (b"<p>a<!-- x--!", b"<p>a<!-- x--!>Z"),
    (b"<p>a<!--", b"<p>a<!-->Z"),
    (b"<p>a<!-", b"<p>a<!->Z"),
    (b"<p>a<?x", b"<p>a<?x>Z"),
    (b"<p>a<!DOCTYPE", b"<p>a<!DOCTYPE>Z"),
    (b"<p>a<!DOCTYPE htm", b"<p>a<!DOCTYPE htm x>Z"),
    (b"<p>a<!DOCTYPE html PUBLIC 'x'", b"<p>a<!DOCTYPE html PUBLIC 'x'x>Z"),
    (b"<p>a<!DOCTYPE html SYSTEM 'x' ", b"<p>a<!DOCTYPE html SYSTEM 'x>Z"),
    (b"<p>a<b c='d", b"<p>aZ"),
    (b"<p>a</p x", b"<p>aZ"),
    (b"<p>a<", b"<p>a&lt;Z"),
    (b"<p>a&not", b"<p>a\xc2\xacZ"),
])
def test_content_after_an_unfinished_token_at_eof(data: bytes, written: bytes) -> None:
    rw = Rewriter().on_document(end=lambda end: end.append("Z"))
    out = _same_for_every_cut(rw, data)
    assert out == written
    want = structure(data)
    if want[-1][0] == "Character":
        want[-1] = ["Character", want[-1][1] + "Z"]
    else:
        want.append(["Character", "Z"])
    assert structure(out) == want


@pytest.mark.parametrize("data", [b"<p>\xf4\x90<b>x</b></p>", b"<p>\xe0\x80<b>x</b></p>"])
def test_invalid_utf8_before_a_seam_is_kept(data: bytes) -> None:
    """Not the beginning of a character (F4 90, E0 80): it reads as two U+FFFD whatever
    follows, so it is written as it is."""
    rw = Rewriter().on("b", element=lambda el: el.before("y"))
    out = _same_for_every_cut(rw, data)
    assert out == data.replace(b"<b>", b"y<b>")


@pytest.mark.parametrize("insert", ["y", "é", ""])
@pytest.mark.parametrize("data", [b"<p>\xc2<b>x</b>a</p>", b"<p>\xe2\x82<b>x</b>a</p>",
                                  b"<style>\xc2<u</style>"])
def test_incomplete_utf8_before_a_seam_is_kept_unless_continued(data: bytes,
                                                                insert: str) -> None:
    """The beginning of a character cut short (C2, E2 82) before a seam: what is written
    next decides.  Inserted text never begins with a continuation byte, nor does the input
    after the removed <b> here: the bytes stay as they were (a rewrite that changes nothing
    writes the input unchanged, for every chunking: test_https_upgrade_with_no_known_host_
    changes_nothing found the <style> one)."""
    rw = Rewriter()
    if data.startswith(b"<style>"):
        rw.on("style", text=lambda c: c.replace(c.text) if c.text.startswith("<") else None)
        assert _same_for_every_cut(rw, data) == data
        return
    rw.on("b", element=lambda el: el.before(insert) if insert else el.remove())
    out = _same_for_every_cut(rw, data)
    assert out == (data.replace(b"<b>", insert.encode() + b"<b>") if insert else
                   data.replace(b"<b>x</b>", b""))


def test_incomplete_utf8_continued_after_a_removal_stays_one_replacement() -> None:
    """A removal between the beginning of a character and a continuation byte: joined they
    would read as a character the input did not have, so the beginning is written as the
    U+FFFD it read as."""
    rw = Rewriter().on("b", element=lambda el: el.remove())
    assert _same_for_every_cut(rw, b"<p>\xc2<b>x</b>\xa9</p>") == b"<p>\xef\xbf\xbd\xa9</p>"


def test_removed_attribute_before_a_slash_keeps_an_unquoted_value() -> None:
    out = _rewrite(b"<p href=a a/>", "p", element=lambda el: el.remove_attribute("a"))
    assert structure(out)[0] == ["StartTag", "p", {"href": "a"}, True]


def test_seams_hold_back_only_while_something_can_change() -> None:
    """A '<' before an unfinished token is kept back by feed() when a handler could still
    rewrite it, and returned at once when no handler is registered."""
    stream = Rewriter().on("b", element=lambda el: el.before("x")).stream()
    assert stream.feed(b"<p>a<") == b"<p>a"
    assert stream.feed(b"<b>") == b"&lt;x<b>"
    assert Rewriter().stream().feed(b"<p>a<<") == b"<p>a<"


@pytest.mark.parametrize("tag", ["pre", "listing", "textarea"])
def test_leading_newline_inserted_into_pre_survives_parsing(tag: str) -> None:
    out = _rewrite(f"<{tag}></{tag}>".encode(), tag, element=lambda el: el.prepend("\nx"))
    element = html5lib.parse(out, namespaceHTMLElements=False).find(f".//{tag}")
    assert element.text == "\nx"


def test_head_closed_by_text_ends_before_the_text() -> None:
    out = _rewrite(b"<html><head> x<p>a", "head", element=lambda el: el.set_inner_content("Z"))
    assert b"x" in out


def test_no_false_match_beyond_max_depth() -> None:
    matched: list[int] = []
    rw = Rewriter().on("div > p", element=lambda el: matched.append(el.offset))
    rw.rewrite(b"<div>" * 1500 + b"<span><p>x</p>")
    assert matched == []


def test_long_ampersand_run_in_text_is_not_held_back() -> None:
    rw = Rewriter(max_buffer_size=MiB).on("p", element=set_x)
    stream = rw.stream()
    stream.feed(b"<p>&")
    for _ in range(40):
        stream.feed(b"a" * 65536)
    stream.close()


def test_long_non_end_tag_in_script_is_not_held_back() -> None:
    stream = Rewriter(max_buffer_size=MiB).stream()
    stream.feed(b"<script></script")
    for _ in range(40):
        stream.feed(b"a" * 65536)
    stream.close()


# --------------------------------------------------------------------------- fuzz corpus


def test_fuzz_corpus_seeds_hold_the_invariants() -> None:
    """The atheris seed corpus (fuzz/corpus) as plain documents, through the shared checks."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
    import htmlmodel as hm

    corpus = sorted((Path(__file__).resolve().parents[1] / "fuzz" / "corpus").iterdir())
    assert corpus
    for path in corpus:
        data = path.read_bytes()
        few = chunkings(data, random_splits=2, split_samples=4, exhaustive_limit=0)
        hm.check_chunking(data, few)
        with contextlib.suppress(hm.KnownBug):
            hm.check_identity(data, few)
        for kind in ("set_attribute", "append", "set_inner_content", "remove"):
            with contextlib.suppress(hm.KnownBug):
                hm.check_mutation(data, hm.Mutation(kind, "*", "t<&>\""), few)



@pytest.mark.parametrize("tag", ["style", "xmp", "iframe", "noembed"])
def test_raw_text_insertion_next_to_another_end_tag_is_kept(tag: str) -> None:
    # ('</' and 'ul>' make an end tag that cannot end the element: the text stays text)
    data = f"<{tag}>a<</{tag}>".encode()
    out = _rewrite(data, tag, element=lambda el: el.append("/ul>b"))
    assert out == f"<{tag}>a</ul>b</{tag}>".encode()
    assert ["EndTag", "ul"] not in structure(out)


@pytest.mark.parametrize("name", ["STYLE", "Style", "style\t", "style/"])
def test_raw_text_insertion_of_the_end_tag_in_any_case_is_refused(name: str) -> None:
    payload = f"/{name}><img src=x>"
    assert _refused_or(lambda: _no_tag_named(
        _rewrite(b"<style>a<</style>", "style", element=lambda el: el.append(payload)), "img"))
    with pytest.raises(ValueError, match="RAWTEXT"):
        _rewrite(b"<style>a<</style>", "style", element=lambda el: el.append(payload))


def test_rcdata_end_before_a_seam_that_cannot_end_it_is_written_as_it_is() -> None:
    # ('</B' at a piece's end in a <textarea> cannot become '</textarea': no '&lt;' for it;
    # lol-html writes it so too. Found by the differential hypothesis test.)
    data = b"<title>t</title><textarea>a &amp; <b>b</b></textarea>"
    rw = Rewriter().on_document(text=lambda t: t.replace(t.raw.decode().upper(), html=True))
    for cut in cuts(data):
        assert run(rw, cut) == b"<title>T</title><textarea>A &AMP; <B>B</B></textarea>"
