"""Hypothesis strategies shared by the property tests: HTML-ish documents and chunkings.

The grammar is built from fragments that reach every tokenizer state (markup declarations, raw
text and RCDATA elements, foreign content with CDATA, character references, NUL, CR, non-ASCII
and invalid UTF-8) and random tags with every kind of attribute quoting.
"""

from __future__ import annotations

from hypothesis import strategies as st

from chunking import cut_at

FRAGMENTS = [
    b"<", b"</", b">", b"/>", b"/", b"<!", b"<!--", b"-->", b"--!>", b"-", b"--", b"<!-->",
    b"<!--x-->", b"<!-- a -- b -->", b"<!---->",
    b"<!DOCTYPE html>", b"<!doctype html PUBLIC \"-//W3C//DTD HTML 4.01//EN\" 'x'>", b"<!DOCTYPE",
    b"<!DOCTYPE html SYSTEM 'about:legacy-compat'>", b"<?xml version='1.0'?>", b"<![CDATA[",
    b"]]>", b"]", b"]]", b"<![CDATA[x<y]]>", b"&amp;", b"&#x41;", b"&#65;", b"&#0;",
    b"&#x110000;", b"&notin;", b"&notit;", b"&amp", b"&", b"&#", b"&lt", b"&nbsp", b"=", b"'",
    b'"', b"`", b" ", b"\t", b"\n", b"\r", b"\r\n", b"\x0c", b"\x00", b"x", b"hello",
    b"caf\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\xed\xa0\x80",
    b"\xff\xc3", b"\xe2\x82",
    b"<script>", b"</script>", b"<!--<script>", b"</script >", b"<script type=module>",
    b"<style>", b"</style>", b"<title>", b"</title>", b"<textarea>", b"</textarea>", b"<xmp>",
    b"</xmp>", b"<plaintext>", b"<svg>", b"</svg>", b"<math>", b"</math>", b"<mi>",
    b"<annotation-xml encoding='text/html'>", b"<foreignObject>", b"</foreignObject>",
    b"<desc>", b"<svg:path/>", b"<circle r=1/>", b"<noscript>", b"</noscript>", b"<iframe>",
    b"</iframe>", b"<noembed>", b"<noframes>", b"<template>", b"</template>", b"<table>",
    b"<tr>", b"<td>", b"</table>", b"<select>", b"<option>", b"</select>", b"<p>", b"</p>",
    b"<li>", b"<dd>", b"<a href=x>", b"</a>", b"<b>", b"</b>", b"<i>", b"</i>", b"<br/>",
    b"</br>", b"<img src=a.png>", b"<html>", b"</html>", b"<head>", b"<body>", b"</body>",
    b"<frameset>", b"<image>", b"<font color=red>",
]

TAG_NAMES = [
    b"p", b"a", b"div", b"DiV", b"br", b"script", b"SCRIPT", b"style", b"title", b"textarea",
    b"xmp", b"plaintext", b"svg", b"math", b"desc", b"img", b"x-y", b"a\x00b", b"h1", b"li",
    b"span", b"table", b"td", b"template", b"foreignobject", b"mtext", b"caf\xc3\xa9", b"b",
]

ATTR_NAMES = [
    b"href", b"class", b"ID", b"data-x", b"x", b"a\x00", b"'", b"<", b"=", b"\xc3\xa9",
    b"encoding", b"type", b"xlink:href", b"HREF",
]
ATTR_VALUES = [
    b"", b"a", b"a b", b"&amp;", b"&notin", b"&notin;", b"&#x41;", b"&#0;", b"\x00", b"\r\n",
    b"\r", b">", b"\xff", b"\xc3\xa9", b"text/html", b"&lt;&gt", b"a&b=c", b"'", b'"', b"`",
]


@st.composite
def attribute(draw: st.DrawFn) -> bytes:
    name = draw(st.sampled_from(ATTR_NAMES))
    value = draw(st.sampled_from(ATTR_VALUES))
    form = draw(st.integers(0, 3))
    if form == 0:
        return name
    quote = [b"", b"'", b'"'][form - 1]
    space = draw(st.sampled_from([b"", b" ", b"\n"]))
    return name + space + b"=" + space + quote + value + quote


@st.composite
def tag(draw: st.DrawFn) -> bytes:
    end = draw(st.integers(0, 3)) == 0
    name = draw(st.sampled_from(TAG_NAMES))
    attrs = draw(st.lists(attribute(), max_size=4))
    sep = draw(st.sampled_from([b" ", b"\t", b"\r\n", b"/"]))
    closer = draw(st.sampled_from([b">", b">", b"/>", b" >", b" / >", b""]))
    return b"<" + (b"/" if end else b"") + name + b"".join(sep + a for a in attrs) + closer


def html_documents(max_size: int = 30) -> st.SearchStrategy[bytes]:
    """HTML-ish byte strings: up to ``max_size`` pieces, each a fragment, a random tag, a few
    random bytes or a few random characters (lone surrogates included) in UTF-8."""
    return st.lists(
        st.one_of(
            st.sampled_from(FRAGMENTS),
            tag(),
            st.binary(max_size=3),
            st.text(max_size=4).map(lambda s: s.encode("utf-8", "surrogatepass")),
        ),
        max_size=max_size,
    ).map(b"".join)


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """A random chunking of ``data`` (possibly with empty chunks)."""
    if not data:
        return draw(st.sampled_from([[], [b""]]))
    points = draw(st.lists(st.integers(0, len(data)), max_size=min(12, len(data) + 1)))
    return cut_at(data, points)
