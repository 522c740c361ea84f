"""Rewriter.pipe: output stages, one per stream, that get the stream's output as it comes
(``feed``) and end with it (``close``)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest

import htmlstream as hs
from chunking import chunkings, feed_bytes
from htmlstream.rewriter import Minifier, OutputStage


class Upper:
    """A stage that upper-cases its input and holds back the last byte until the end (as a
    stage that waits for what follows does), recording what it was given."""

    def __init__(self, log: list[Any], name: str) -> None:
        self.log = log
        self.name = name
        self.held = b""

    def feed(self, data: bytes) -> bytes:
        self.log.append((self.name, "feed", data))
        data = self.held + data
        self.held = data[-1:]
        return data[:-1].upper()

    def close(self) -> bytes:
        self.log.append((self.name, "close"))
        out, self.held = self.held.upper(), b""
        return out


def test_a_stage_gets_the_output_and_ends_with_the_stream() -> None:
    log: list[Any] = []
    made: list[tuple[str, MutableMapping[str, Any]]] = []

    def factory(encoding: str, context: MutableMapping[str, Any]) -> OutputStage:
        made.append((encoding, context))
        return Upper(log, "a")

    rw = hs.Rewriter().pipe(factory)
    rw.on("b", element=lambda el: el.set_attribute("x", "y"))
    ctx: dict[str, Any] = {}
    s = rw.stream(context=ctx)
    out = s.feed(b"<p>a<b>") + s.feed(b"c</b>")
    out += s.close()
    assert out == b'<P>A<B X="Y">C</B>'
    assert made == [("utf-8", ctx)]
    assert log[-1] == ("a", "close")
    assert b"".join(e[2] for e in log if e[1] == "feed") == b'<p>a<b x="y">c</b>'


def test_stages_run_in_order_in_every_chunking() -> None:
    log: list[Any] = []
    rw = hs.Rewriter().pipe(lambda enc, ctx: Upper(log, "1"))
    rw.pipe(lambda enc, ctx: Minifier(enc, collapse_only=False))
    raw = b"<p>  a  <!-- c -->  b  </p>\n<div> x </div>"
    whole = feed_bytes(rw.stream, [raw])
    assert whole == b"<P>A B</P><DIV>X</DIV>"
    for chunks in chunkings(raw):
        assert feed_bytes(rw.stream, chunks) == whole
    assert hs.Rewriter().pipe(lambda e, c: Minifier(e)).rewrite("<p> a </p>") == "<p> a </p>"
    assert hs.Rewriter().pipe(lambda e, c: Minifier(e, collapse_only=False)).rewrite(
        "<p> a </p>") == "<p>a</p>"


def test_the_stage_gets_the_output_encoding() -> None:
    seen: list[str] = []

    def factory(encoding: str, context: MutableMapping[str, Any]) -> OutputStage:
        seen.append(encoding)
        return Minifier(encoding)

    rw = hs.Rewriter(encoding="windows-1252").pipe(factory)
    assert rw.rewrite("<p> caf\u00e9  x </p>".encode("cp1252")) == \
        "<p> caf\u00e9 x </p>".encode("cp1252")
    assert seen == [hs.lookup_encoding("windows-1252").codec]


def test_no_stage_when_the_input_passes_through() -> None:
    made: list[str] = []

    def factory(encoding: str, context: MutableMapping[str, Any]) -> OutputStage:
        made.append(encoding)
        return Minifier(encoding)

    rw = hs.Rewriter(sniff=True).pipe(factory)
    data = b"%PDF-1.4 not  html  " * 100
    s = rw.stream()
    assert s.feed(data) + s.close() == data
    assert s.passthrough_reason is not None and made == []
    utf16 = "<p>  a  </p>".encode("utf-16")
    assert hs.Rewriter().pipe(factory).rewrite(utf16) == utf16
    assert made == []


def test_a_limit_ends_the_stages_and_the_rest_passes_them_by() -> None:
    rw = hs.Rewriter(max_buffer_size=64, on_limit="passthrough")
    rw.pipe(lambda e, c: Minifier(e))
    raw = b"<p>  a  </p>  <div  title='" + b"x" * 200 + b"'>  b  </div>"
    s = rw.stream()
    out = b"".join(s.feed(raw[i:i + 16]) for i in range(0, len(raw), 16)) + s.close()
    assert s.passthrough_reason is not None
    assert out.startswith(b"<p> a </p>") and out.endswith(b"'>  b  </div>")


def test_a_stage_error_fails_the_stream() -> None:
    class Broken:
        def feed(self, data: bytes) -> bytes:
            raise ValueError("broken stage")

        def close(self) -> bytes:
            return b""

    s = hs.Rewriter().pipe(lambda e, c: Broken()).stream()
    with pytest.raises(ValueError, match="broken stage"):
        s.feed(b"<p>x</p>")
    with pytest.raises(hs.HtmlStreamError, match="failed earlier"):
        s.feed(b"<p>y</p>")


def test_pipe_takes_a_factory() -> None:
    with pytest.raises(TypeError, match="factory"):
        hs.Rewriter().pipe(b"no")  # type: ignore[arg-type]
    rw = hs.Rewriter()
    assert rw.pipe(lambda e, c: Minifier(e)) is rw


def test_minifier_alone() -> None:
    m = Minifier()      # (white space collapsed, as recipes.minify()'s default)
    assert m.feed(b"<ul>\n <li> a  b </li>\n</ul>") + m.close() == b"<ul> <li> a b </li> </ul>"
    m = Minifier(collapse_only=False)       # (as whitespace="remove")
    assert m.feed(b"<ul>\n <li> a  b </li>\n</ul>") + m.close() == b"<ul><li>a b</li></ul>"
    with pytest.raises(ValueError, match="closed"):
        m.feed(b"x")
    with pytest.raises(TypeError, match="predicate"):
        Minifier(keep_comment=1)
    m = Minifier(keep_comment=lambda text: "keep" in text, attributes=False)
    assert m.feed(b'<p class="a"><!--keep--><!--no-->x</p>') + m.close() == \
        b'<p class="a"><!--keep-->x</p>'
