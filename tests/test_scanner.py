"""The tag scanner (the engine's second speed) against the full lexer.

While no one reads a tag's attributes the lexer only scans past them
(``Lexer.set_attribute_policy``).  These tests check that this changes nothing anyone can see:
token boundaries, names, self-closing flags, text, and the rewriter's output and what its
handlers observe are the same with the scanner on and forced off, on hand-written edge cases,
hypothesis documents and the corpus, under many chunkings.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunking import chunkings
from datapaths import corpus_dir
from htmlstream import BufferLimitExceeded, Rewriter
from htmlstream._engine.collector import TokenCollector
from htmlstream._engine.lexer import Lexer, attribute_policy
from htmlstream._engine.treebuilder import ATTRIBUTE_TAGS, TreeBuilderSimulator

EXAMPLES = int(os.environ.get("HTMLSTREAM_FUZZ_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

#: Attribute syntax the scanner must follow exactly: quotes only after '=', '/' before '>'
#: (self-closing) but not inside an unquoted value, '=' first in a name, '>' in quotes.
EDGE_CASES = [
    b'<a href="x">t</a>',
    # attributes one per line, indented: white space runs around eight bytes
    b'<a href="x"\n' + b" " * 7 + b'data-a="1"\n' + b" " * 8 + b"data-b=2" + b" " * 9 + b">t</a>"
    + b"<p" + b" " * 16 + b"x" + b" " * 17 + b"/" + b" " * 8 + b"><i" + b" " * 8 + b"\t  y>"
    + b"<b" + b" " * 15 + b"\n" + b" " * 8 + b">" + b"<u " + b" " * 24,
    b"<a href='x>y'>t</a><b>",
    b'<a b"c=d>x</a>',
    b"<a b'c=d'>x</a>",
    b"<a href=/x/>y<br/>z<br />w<br/ >",
    b"<img src=a/><img src=a />",
    b"<a =x>y<a ==x>z<a x= >",
    b'<a x = "1" y= \'2\' z =3 w>',
    b'<a x="1"y="2"/z>',
    b"<svg><path d='M0 0'/><circle r=1 /></svg><p>",
    b"<math><mi/><mtext>a</mtext></math>",
    b'</a x="y>">text</p  foo=bar >',
    b'<script>x</script x=">">y</script>',
    b'<textarea a="</textarea>">b</textarea c=1>d',
    b"<title>a</title/>b<style x>c</style >",
    b'<a href="x',
    b"<a href='x' ",
    b"<a href=x",
    b"<a /",
    b"<div/",
    b"<p\tclass=note\nid=x\fdata-y\r>t",
    b'<font color="red"><svg><font face=x><p>',
    b"<input type=hidden><input type='text'>",
    b'<table><input type="hidden"><tr><td>x</table>',
    b"<b class=x>1<b class=x>2<b class=x>3<b class=x>4<p>5</b>6",
    b"<code a=1><code a=2><code a=1><code a=1><code a=1><p>x",
    b'<math><annotation-xml encoding="text/html"><p>a</p></annotation-xml></math>',
    b"<a\x00b=c>d<x-y z=1>e</x-y><X-Y Z=2><x-yz z=3><x-z z=4>",
    b"<!DOCTYPE html><!-- <a href='x'> --><![CDATA[<b>]]><?pi <a>?>",
    b"<plaintext a=1></plaintext>",
    # the scanner's straight run (name, '=', value) and where it leaves it; quoted values
    # around the 16 bytes found without memchr
    b"<a x=\"1\"/><a x='1'y=2><a x=1/>t<a x= \"1\"><a x=><a x=\"1\"\t/ ><a x y=z>",
    b'<a x="' + b"v" * 14 + b'"><a x="' + b"v" * 15 + b'"><a x="' + b"v" * 16 + b'">'
    b'<a x="' + b"v" * 17 + b'"><a x=\'' + b"v\"" * 20 + b"'>",
    # unquoted values a word at a time: the end in every byte of a word, control bytes that do
    # not end it, UTF-8
    b"<a x=1234567><a x=12345678><a x=123456789 y=1><a x=1234567\t><a x=a\x01b\x1fc\x00d>"
    b"<a x=\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0e>t<a x=\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\r\ny>",
]


def _view(tokens: Sequence[Any], attributes: bool) -> list[tuple[Any, ...]]:
    out = []
    for tok in tokens:
        kind = type(tok).__name__
        if kind in ("StartTag", "EndTag"):
            item: tuple[Any, ...] = (kind, tok.raw, tok.offset, tok.name, tok.self_closing)
            if attributes:
                item += (tuple(tok.attributes.items()),)
            out.append(item)
        elif kind == "Text":
            out.append((kind, tok.raw, tok.offset, tok.text_type, tok.last_in_text_node))
        else:
            out.append((kind, tok.raw, tok.offset))
    return out


def _lex(chunks: Sequence[bytes], lazy: bool, names: Sequence[str] = (),
         **options: Any) -> list[Any]:
    collector = TokenCollector()
    lexer = Lexer(collector, TreeBuilderSimulator(), **options)
    lexer.set_attribute_policy(lazy, False, names)
    for chunk in chunks:
        lexer.feed_bytes(chunk)
    lexer.close()
    return collector.take()


def check_lexer(data: bytes, cuts: list[list[bytes]]) -> None:
    names = ["a", "x-y", *ATTRIBUTE_TAGS]
    for chunks in cuts:
        full_tokens = _lex(chunks, False)
        full = _view(full_tokens, attributes=False)
        assert _view(_lex(chunks, True), attributes=False) == full, chunks
        tokens = _lex(chunks, True, names)
        assert _view(tokens, attributes=False) == full, chunks
        # the tags named in the policy keep their attributes, the others have none
        assert [tuple(t.attributes.items()) for t in tokens if type(t).__name__ == "StartTag"
                and t.name in names] == \
            [tuple(t.attributes.items()) for t in full_tokens if type(t).__name__ == "StartTag"
             and t.name in names]
        assert all(not t.attributes for t in tokens if type(t).__name__ == "EndTag"
                   or (type(t).__name__ == "StartTag" and t.name not in names))


@pytest.mark.parametrize("data", EDGE_CASES)
def test_lexer_edge_cases(data: bytes) -> None:
    check_lexer(data, chunkings(data))


def test_lexer_attribute_limit() -> None:
    """Attributes scanned past still count against ``max_attributes``."""
    data = b"<p a b c d>x</p><p a b c>"
    for chunks in chunkings(data):
        with pytest.raises(BufferLimitExceeded):
            _lex(chunks, True, max_attributes=3)
        with pytest.raises(BufferLimitExceeded):
            _lex(chunks, False, max_attributes=3)
    for chunks in chunkings(b"<p a b c>x</p a b c d>"):
        with pytest.raises(BufferLimitExceeded):
            _lex(chunks, True, max_attributes=3)


NAMES = ["a", "b", "p", "div", "img", "image", "svg", "math", "mi", "font", "input", "table",
         "td", "script", "style", "textarea", "title", "code", "x-y", "br", "annotation-xml",
         "select", "template", "noscript", "plaintext", "pre", "li", "ul", "span", "body"]
PIECES = [b"<", b">", b"/", b"/>", b"=", b'"', b"'", b" ", b"\n", b"x", b"&amp;", b"<!--",
          b"-->", b"<![CDATA[", b"]]>", b"<!DOCTYPE html>", b"</", b"\x00", "é".encode()]


@st.composite
def _tag(draw: st.DrawFn) -> bytes:
    name = draw(st.sampled_from(NAMES)).encode()
    parts = [b"</" if draw(st.integers(0, 3)) == 0 else b"<", name]
    for _ in range(draw(st.integers(0, 3))):
        parts.append(draw(st.sampled_from([b" ", b"\t", b"", b"/"])))
        parts.append(draw(st.sampled_from([b"href", b"class", b"type", b"color", b"x", b"=y",
                                           b'"q', b"'"])))
        form = draw(st.integers(0, 4))
        value = draw(st.sampled_from([b"v", b"", b"a b", b"/", b">", b"'", b'"', b"note",
                                      b"hidden", b"text/html"]))
        if form == 1:
            parts.append(b"=" + value)
        elif form == 2:
            parts.append(b'="' + value.replace(b'"', b"") + b'"')
        elif form == 3:
            parts.append(b"='" + value.replace(b"'", b"") + b"'")
        elif form == 4:
            parts.append(b" = " + value)
    parts.append(draw(st.sampled_from([b">", b">", b"/>", b" />", b"/ >", b""])))
    return b"".join(parts)


documents = st.lists(st.one_of(_tag(), _tag(), st.sampled_from(PIECES), st.binary(max_size=2)),
                     max_size=25).map(b"".join)


def _cuts(data: bytes) -> list[list[bytes]]:
    return chunkings(data, random_splits=3, split_samples=4, exhaustive_limit=0,
                     single_bytes=len(data) <= 120)


@SETTINGS
@given(documents)
def test_lexer_property(data: bytes) -> None:
    check_lexer(data, _cuts(data))


# ------------------------------------------------------------------------------ the rewriter

Observed = list[Any]


def _rule_sets() -> dict[str, Callable[[Observed], Rewriter]]:
    def passthrough(seen: Observed) -> Rewriter:
        rw = Rewriter()
        rw.on("nonexistent-xyz", element=lambda el: seen.append(el.tag_name))
        return rw

    def no_handlers(seen: Observed) -> Rewriter:
        return Rewriter()

    def href(seen: Observed) -> Rewriter:
        rw = Rewriter()

        def fix(el: Any) -> None:
            seen.append((el.tag_name, el.get_attribute("href"), el.attributes))
            el.set_attribute("href", "https://example.com/")
        rw.on("a[href]", element=fix)
        return rw

    def tags(seen: Observed) -> Rewriter:
        rw = Rewriter()
        rw.on("img", element=lambda el: seen.append(("img", el.attributes)))
        rw.on("div > p", element=lambda el: el.append("!"))
        rw.on("ul", element=lambda el: el.set_inner_content(""))
        rw.on("body", element=lambda el: setattr(el, "tag_name", "body1"))
        rw.on("x-y", element=lambda el: seen.append(("x-y", el.attributes)))
        rw.on("x-y[z] b", text=lambda t: seen.append(t.text))
        return rw

    def attributes(seen: Observed) -> Rewriter:
        rw = Rewriter()
        rw.on(".note, [id], span:not(.x)",
              element=lambda el: seen.append((el.tag_name, el.attributes)))
        rw.on("p", text=lambda t: seen.append(t.text))
        return rw

    def everything(seen: Observed) -> Rewriter:
        rw = Rewriter()
        rw.on("*", element=lambda el: seen.append((el.tag_name, el.attributes)))
        rw.on_document(doctype=lambda d: seen.append(d.name),
                       comments=lambda c: seen.append(c.text),
                       text=lambda t: seen.append(t.text))
        return rw

    return {f.__name__: f for f in (passthrough, no_handlers, href, tags, attributes,
                                    everything)}


RULE_SETS = _rule_sets()


def _rewrite(make: Callable[[Observed], Rewriter], chunks: Sequence[bytes],
             scanner: bool) -> tuple[bytes, Observed]:
    seen: Observed = []
    rw = make(seen)
    rw._scanner = scanner
    stream = rw.stream()
    out = b"".join([stream.feed(chunk) for chunk in chunks]) + stream.close()
    return out, seen


def check_rewriter(data: bytes, cuts: list[list[bytes]], names: Sequence[str]) -> None:
    for name in names:
        make = RULE_SETS[name]
        expected = _rewrite(make, [data], False)[0]
        for chunks in cuts:
            # (text handlers see pieces that depend on the chunking: compare like with like)
            scanned = _rewrite(make, chunks, True)
            assert scanned == _rewrite(make, chunks, False), (name, chunks)
            assert scanned[0] == expected, (name, chunks)


@pytest.mark.parametrize("data", EDGE_CASES)
def test_rewriter_edge_cases(data: bytes) -> None:
    check_rewriter(data, _cuts(data), list(RULE_SETS))


@SETTINGS
@given(documents)
def test_rewriter_property(data: bytes) -> None:
    check_rewriter(data, _cuts(data), list(RULE_SETS))


def _corpus() -> list[Path]:
    root = corpus_dir()
    return sorted(root.glob("*.html")) if root.is_dir() else []


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.name)
@pytest.mark.parametrize("rules", list(RULE_SETS))
def test_rewriter_corpus(path: Path, rules: str) -> None:
    data = path.read_bytes()
    cuts = [[data], [data[i:i + 1024] for i in range(0, len(data), 1024)],
            *chunkings(data, random_splits=2, single_bytes=False, two_way=False)[1:]]
    check_rewriter(data, cuts, [rules])


# ------------------------------------------------------------------------------ carried tokens

def _carry_document() -> bytes:
    """Tokens of every kind, some longer than the lexer's carry step (1 KiB, doubled), text with
    endings that are held back at a chunk end."""
    parts = [b"<!DOCTYPE html><title>t</title><p class=a>x &amp y &am", b"p; z\r\n",
             b"<div class='" + b"v" * 3000 + b"' id=q>", b"<!--" + b"c" * 5000 + b"-->",
             "caf\u00e9 ".encode() * 50, b"<a href=/x title=\"" + b"t" * 700 + b"\">l</a>",
             b"<script>if (a < b) { x = '</scr' + 'ipt>'; }</script>", b"<svg><![CDATA[x]]></svg>",
             b"<x-" + b"n" * 40 + b" a=1>", b"</x-" + b"n" * 40 + b">", b"text " * 300]
    return b"".join(parts) * 3


def test_carried_token_then_chunk_in_place() -> None:
    """A chunk after one that ended inside a token: the token is finished on a copy of the
    chunk's start, the rest is read in place.  Tokens are those of the whole document, and text
    is cut only at the chunk ends (the shorter windows are not chunk ends)."""
    data = _carry_document()
    whole = _view(_lex([data], True), attributes=False)
    whole_tokens = [t for t in whole if t[0] != "Text"]
    for size in (2049, 3001, 4096, 5003, 9000):
        chunks = [data[i:i + size] for i in range(0, len(data), size)]
        tokens = _view(_lex(chunks, True), attributes=False)
        assert [t for t in tokens if t[0] != "Text"] == whole_tokens, size
        ends = {min(i + size, len(data)) for i in range(0, len(data), size)}
        starts = {t[2] for t in tokens if t[0] != "Text"}
        for t in tokens:
            if t[0] == "Text" and not t[4]:     # a piece that is not the last of its node
                # (it ends at a chunk end, give or take what is held back, or before a token
                # that a chunk end cut)
                end = t[2] + len(t[1])
                assert end in starts or any(0 <= e - end <= 40 for e in ends), (size, t)
        for name, make in RULE_SETS.items():
            assert _rewrite(make, chunks, True)[0] == _rewrite(make, [data], True)[0], \
                (size, name)


def test_carried_token_limit_keeps_every_byte() -> None:
    """A limit hit while the carried token is finished on a copy of the chunk's start: with
    on_limit="passthrough" the rest of the input still comes out, byte for byte."""
    data = b"<p>" + b"x" * 3000 + b"<a " + b"b=1 " * 40 + b">" + b"y" * 6000
    for cut in (3001, 3005, 3050):
        rw = Rewriter(max_attributes=10, on_limit="passthrough")
        stream = rw.stream()
        out = stream.feed(data[:cut]) + stream.feed(data[cut:]) + stream.close()
        assert out == data, cut


def test_attribute_policy_worked_out_once_or_each_time() -> None:
    """A policy worked out once (attribute_policy: what a rule set hands every stream), a
    tuple, the same tuple again and a list give the same tokens."""
    data = b'<a href=x><X-Y z=1><b c=d><font color=red><p q=r><x-yz w=1>'
    names = ("a", "x-y", 0xFFFFFFFFFFFFFFFF - 1, *ATTRIBUTE_TAGS)
    views = []
    for policy in (attribute_policy(names), names, list(names), tuple(names)):
        collector = TokenCollector()
        lexer = Lexer(collector, TreeBuilderSimulator())
        lexer.set_attribute_policy(True, False, policy)
        lexer.feed_bytes(data)
        lexer.close()
        views.append(_view(collector.take(), attributes=True))
    assert views[1:] == views[:1] * 3
    assert [v[-1] for v in views[0] if v[0] == "StartTag"] == [
        (("href", "x"),), (("z", "1"),), (("c", "d"),), (("color", "red"),), (), ()]
