"""The reliability invariants of the rewriter, shared by the hypothesis suite
(``tests/test_fuzz_properties.py``) and the atheris target (``fuzz/fuzz_rewriter.py``).

For a document and one *mutation* (a kind of change, a selector, a text), :func:`check_mutation`
rewrites the document under several chunkings and checks that the output re-tokenizes to the
structure the mutation intends.  The intended structure is computed from the tokens of the input
and what the handlers recorded (offsets of the units they changed, and where elements ended):
text insertions become text at those offsets, removals drop the tokens in the removed ranges,
attribute and name changes edit the start (and end) tag.  Nothing else may differ: inserted text
never creates or hides a tag, a set attribute value reads back exactly and adds no other
attribute.

:func:`check_identity` checks that handlers which read everything and change nothing give the
input back byte for byte, and :func:`check_chunking` that tokens and output do not depend on how
the input is cut.

The texts used here leave out CR and NUL (the HTML tokenizer turns CR into LF, and NUL into
U+FFFD in attribute values and RCDATA, so they cannot read back unchanged; see
tests/test_reliability.py for what happens to them).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import htmlstream as hs
import htmlstream.units as hs_units
from htmlstream.rewriter import Rewriter
from htmlstream.tokens import Text

__all__ = [
    "ATTR_NAMES",
    "ELEMENT_KINDS",
    "FRAGMENTS",
    "KINDS",
    "KNOWN_BUGS",
    "SELECTORS",
    "TAG_NAMES",
    "TEXT_PIECES",
    "InvariantError",
    "KnownBug",
    "Mutation",
    "check_chunking",
    "check_identity",
    "check_minify",
    "check_mutation",
    "classify_failure",
    "rewrite_chunks",
]

# --------------------------------------------------------------------------- input grammar

TAG_NAMES = [
    "p", "div", "span", "var", "a", "b", "i", "em", "li", "ul", "table", "tr", "td", "th",
    "tbody", "caption", "textarea", "title", "script", "style", "xmp", "iframe", "noscript",
    "noembed", "noframes", "svg", "math", "foreignObject", "desc", "mi", "annotation-xml",
    "template", "select", "option", "br", "img", "image", "input", "pre", "listing", "head",
    "body", "html", "font", "h1", "form", "button", "x-y", "DiV", "SCRIPT", "plaintext",
]
# ``<frameset>`` changes how later text-content tags are read depending on whether it was
# accepted, which a removal or an insertion elsewhere can change: it is only in the inputs of the
# properties that make no change (identity, chunking).
STRUCTURAL_ONLY_TAGS = ["frameset", "frame"]

ATTR_NAMES = ["href", "class", "id", "title", "TITLE", "data-x", "color", "type", "x", "a\x00",
              "'", "<", "=", "\xc3\xa9"]
ATTR_VALUES = ["", "a", "a b", "&amp;", "&notin", "&#x41;", "\x00", "\r\n", ">", "\"", "'",
               "hidden", "c", "i"]

FRAGMENTS = [
    b"<", b"</", b">", b"/>", b"/", b"<!", b"<!--", b"-->", b"--!>", b"-", b"--", b"<!-->",
    b"<!-", b"<!DOCTYPE html>", b"<!doctype html PUBLIC \"-//W3C//DTD HTML 4.01//EN\" 'x'>",
    b"<!DOCTYPE", b"<?xml ?>", b"<![CDATA[", b"]]>", b"]", b"]]", b"&amp;", b"&#x41;", b"&#65;",
    b"&#0;", b"&notin;", b"&not", b"&amp", b"&", b"&#", b"&lt", b"=", b"'", b'"', b" ", b"\t",
    b"\n", b"\r", b"\r\n", b"\x0c", b"\x00", b"x", b"hello", b"caf\xc3\xa9", b"\xe2\x82\xac",
    b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"<script>", b"</script>", b"<!--<script>",
    b"</script >", b"<style>", b"</style>", b"<title>", b"</title>", b"<textarea>",
    b"</textarea>", b"<svg>", b"</svg>", b"<math>", b"<mi>", b"<foreignObject>", b"<template>",
    b"</template>", b"<table>", b"<select>", b"<p>", b"</p>", b"</br>", b"<br/>", b"<svg/>",
    b"<font color=red>", b"<a href=x>", b"</a>", b"<b>", b"</b>", b"<li>", b"<td>",
]

#: Pieces of text that handlers insert (joined at random with arbitrary characters).
TEXT_PIECES = [
    "<", "</", ">", "&", "&amp;", "&not", "in;", "&#", "65", ";", "\"", "'", "=", "-->", "<!--",
    "--!>", "-", "]]>", "]", "/", "!", "?", "b", "x", "p>", "/script>", "</script", "</style",
    "script", "<img src=x>", " ", "\t", "\n", "\xe9", "\u20ac", "\U0001f600", "&lt;",
]

SELECTORS = [
    "*", "p", "div", "span", "b", "a", "li", "td", "textarea", "title", "script", "style",
    "xmp", "svg", "math", "mi", "template", "select", "option", "pre", "head", "body",
    "a[href]", "[title]", ".c", "#i", "p > b", "div span", ":not(p)", "p:first-child",
    "li:nth-child(2n+1)",
]

#: Mutation kinds on elements.  The rest act on text chunks, comments, the doctype, end tags
#: and the document end.
ELEMENT_KINDS = [
    "set_attribute", "remove_attribute", "before", "after", "prepend", "append",
    "set_inner_content", "replace", "remove", "remove_and_keep_content", "rename",
]
KINDS = [
    *ELEMENT_KINDS,
    "text_before", "text_after", "text_replace", "text_remove",
    "comment_text", "comment_before", "comment_after", "comment_replace", "comment_remove",
    "doctype_remove", "end_before", "end_after", "document_append",
]
#: Kinds whose output does not depend on where text chunks are cut.
CHUNK_INDEPENDENT_KINDS = frozenset(KINDS) - {
    "text_before", "text_after", "text_replace", "text_remove"}

# remove_and_keep_content only on HTML elements whose tags carry no tokenizer state of their own
# (not text-content elements; and see _FOREIGN below).
KEEP_CONTENT_SAFE = frozenset({"p", "div", "span", "b", "em", "a", "li", "var"})


@dataclass(frozen=True)
class Mutation:
    """One change made by every handler call: ``kind`` on what ``selector`` matches."""

    kind: str
    selector: str = "*"
    text: str = ""
    attr: str = "title"

    def describe(self) -> str:
        return f"{self.kind}({self.text!r}) on {self.selector!r} attr={self.attr!r}"


# --------------------------------------------------------------------------- running


@dataclass
class _Rec:
    """What a handler saw and did: offsets in the input, and the order events happened."""

    kind: str
    order: int
    start: int
    start_end: int
    applied: bool = False
    end_off: int | None = None
    end_end: int | None = None
    end_order: int | None = None
    end_explicit: bool = False
    text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _safe(fn: Callable[[], Any]) -> bool:
    """Run a mutation; False if the engine refused it (ValueError: content that would end a
    raw-text element, a comment text that would end the comment...)."""
    try:
        fn()
    except ValueError:
        return False
    return True


# Removing an element's tags can change the namespace of what follows: in SVG or MathML content
# an HTML tag such as <p> or <span> ends the foreign content, so without it the next <script>
# or <title> is read as SVG/MathML.  That is what the change asks for, not a bug, so removals
# are only made on documents without foreign content.
_FOREIGN = re.compile(rb"<(?:svg|math)", re.IGNORECASE)
_REMOVALS = frozenset({"remove", "replace", "remove_and_keep_content"})


def _build(m: Mutation, recs: list[_Rec], counter: Iterable[int], *,
           foreign: bool = False) -> Rewriter:
    rw = Rewriter()
    nxt = iter(counter).__next__
    kind, text = m.kind, m.text

    if kind in ELEMENT_KINDS:
        def element(el: Any) -> None:
            rec = _Rec(kind, nxt(), el.offset, el.offset + len(el.raw))
            # (a start tag merged into an open <body>/<html>: remove() and replace() take the
            # tag alone, the element's content stays: docs/guide/rewriting.md)
            rec.extra["merged"] = el.merged
            # (the engine writes one more newline in front of content inserted at the start of
            # these, whose first newline the tree builder drops: rewriter.pyx)
            rec.extra["newline_guard"] = (el.tag_name in ("pre", "listing", "textarea")
                                          and el.namespace_uri == hs_units.HTML_NS)
            recs.append(rec)
            if el.can_have_content:
                def end(tag: Any) -> None:
                    rec.end_off = tag.offset
                    rec.end_end = tag.offset + len(tag.raw)
                    rec.end_order = nxt()
                    rec.end_explicit = not tag.implicit
                el.on_end_tag(end)
            else:
                rec.end_off = rec.end_end = rec.start_end
                rec.end_order = rec.order
            if foreign and kind in _REMOVALS:
                rec.applied = False
            elif kind == "set_attribute":
                rec.applied = _safe(lambda: el.set_attribute(m.attr, text))
            elif kind == "remove_attribute":
                rec.applied = _safe(lambda: el.remove_attribute(m.attr))
            elif kind == "rename":
                if el.tag_name == "span" and el.namespace_uri == hs_units.HTML_NS:
                    rec.applied = _safe(lambda: setattr(el, "tag_name", "var"))
            elif kind == "remove":
                rec.applied = _safe(el.remove)
            elif kind == "remove_and_keep_content":
                if el.tag_name in KEEP_CONTENT_SAFE and el.namespace_uri == hs_units.HTML_NS:
                    rec.applied = _safe(el.remove_and_keep_content)
            elif kind in ("prepend", "append", "set_inner_content") and not el.can_have_content:
                rec.applied = False     # documented no-op on void elements
            else:
                rec.applied = _safe(lambda: getattr(el, kind)(text))
            rec.text = text
        rw.on(m.selector, element=element)
    elif kind.startswith("text_"):
        def on_text(chunk: Any) -> None:
            off = chunk.offset
            rec = _Rec(kind, nxt(), off, off + len(chunk.raw))
            recs.append(rec)
            op = kind[5:]
            rec.applied = _safe(chunk.remove if op == "remove"
                                else lambda: getattr(chunk, op)(text))
            rec.text = text
        if m.selector == "*":
            rw.on_document(text=on_text)
        else:
            rw.on(m.selector, text=on_text)
    elif kind.startswith("comment_"):
        def on_comment(c: Any) -> None:
            rec = _Rec(kind, nxt(), c.offset, c.offset + len(c.raw))
            recs.append(rec)
            op = kind[8:]
            if op == "text":
                rec.applied = _safe(lambda: setattr(c, "text", text))
            elif op == "remove":
                rec.applied = _safe(c.remove)
            else:
                rec.applied = _safe(lambda: getattr(c, op)(text))
            rec.text = text
        rw.on_document(comments=on_comment)
    elif kind == "doctype_remove":
        def on_doctype(d: Any) -> None:
            rec = _Rec(kind, nxt(), d.offset, d.offset + len(d.raw))
            recs.append(rec)
            d.remove()
            rec.applied = True
        rw.on_document(doctype=on_doctype)
    elif kind in ("end_before", "end_after"):
        def element2(el: Any) -> None:
            if not el.can_have_content:
                return

            def end(tag: Any) -> None:
                rec = _Rec(kind, nxt(), tag.offset, tag.offset + len(tag.raw))
                recs.append(rec)
                rec.applied = _safe(lambda: getattr(tag, kind[4:])(text))
                rec.text = text
            el.on_end_tag(end)
        rw.on(m.selector, element=element2)
    elif kind == "document_append":
        def on_end(end: Any) -> None:
            rec = _Rec(kind, nxt(), -1, -1)
            recs.append(rec)
            rec.applied = _safe(lambda: end.append(text))
            rec.text = text
        rw.on_document(end=on_end)
    else:
        raise ValueError(f"unknown mutation kind {kind!r}")
    return rw


def rewrite_chunks(rw: Rewriter, chunks: Sequence[bytes]) -> bytes:
    """Feed ``chunks`` to a new stream of ``rw``; every returned piece is final."""
    stream = rw.stream()
    parts = [stream.feed(c) for c in chunks]
    parts.append(stream.close())
    return b"".join(parts)


# --------------------------------------------------------------------------- the model


def _norm(items: Iterable[list[Any]]) -> list[list[Any]]:
    """Merge adjacent Character items, drop empty ones (the form of ``normalize_tokens``)."""
    out: list[list[Any]] = []
    for item in items:
        if item[0] == "Character":
            if not item[1]:
                continue
            if out and out[-1][0] == "Character":
                out[-1] = ["Character", out[-1][1] + item[1]]
                continue
        out.append(list(item))
    return out


def _token_item(tok: Any) -> list[Any] | None:
    kind = type(tok).__name__
    if kind == "StartTag":
        item: list[Any] = ["StartTag", tok.name, dict(tok.attributes)]
        if tok.self_closing:
            item.append(True)
        return item
    if kind == "EndTag":
        return ["EndTag", tok.name]
    if kind == "Comment":
        return ["Comment", tok.text]
    if kind == "Doctype":
        return ["DOCTYPE", tok.name, tok.public_id, tok.system_id, not tok.force_quirks]
    if kind == "Text":
        return ["Character", tok.text]
    return None     # Unparsed


def _tokens(data: bytes) -> list[Any]:
    tk = hs.Tokenizer()
    return tk.feed(data) + tk.close()


def _split_text(tok: Text, cuts: list[int]) -> list[tuple[int, int, str]]:
    """Pieces ``(start, end, decoded text)`` of a text token cut at stream offsets ``cuts``."""
    bounds = sorted({tok.offset, tok.end, *(c for c in cuts if tok.offset < c < tok.end)})
    cs, ce = tok.content_span
    pieces = []
    for a, b in itertools.pairwise(bounds):
        lo = max(a - tok.offset, cs)
        hi = min(b - tok.offset, ce)
        raw = tok.raw[lo:hi] if lo < hi else b""
        piece = Text(raw, a, tok._encoding, int(tok.text_type))
        pieces.append((a, b, piece.text))
    return pieces


def expected_structure(data: bytes, m: Mutation, recs: list[_Rec]) -> list[list[Any]]:
    """What the output should re-tokenize to, given what the handlers recorded."""
    eof = len(data)
    removals: list[tuple[int, int, _Rec]] = []
    for r in recs:
        if not r.applied:
            continue
        k = r.kind
        if k == "set_inner_content":
            assert r.end_off is not None
            removals.append((r.start_end, r.end_off, r))
        elif k in ("replace", "remove"):
            assert r.end_end is not None
            removals.append((r.start, r.start_end if r.extra.get("merged") else r.end_end, r))
        elif k in ("text_replace", "text_remove", "comment_replace", "comment_remove",
                   "doctype_remove"):
            removals.append((r.start, r.start_end, r))

    containers = [(a, b, owner) for a, b, owner in removals if owner.kind in ELEMENT_KINDS]

    def inside_removed(r: _Rec) -> bool:
        """Whether ``r`` is in the content an element removal drops (its handler's changes
        are not written)."""
        return any(a <= r.start < b and owner is not r for a, b, owner in containers)

    live = [r for r in recs if r.applied and not inside_removed(r)]
    cuts: list[tuple[int, int]] = [(a, b) for a, b, owner in removals if owner in live]
    inserts: list[tuple[int, int, int, str]] = []     # (offset, order, sub, text)
    start_edits: dict[int, _Rec] = {}
    end_renames: set[int] = set()
    comment_texts: dict[int, str] = {}
    for r in live:
        k = r.kind
        if k in ("set_attribute", "remove_attribute", "rename"):
            start_edits[r.start] = r
            if k == "rename" and r.end_explicit and r.end_off is not None:
                end_renames.add(r.end_off)
        elif k == "remove_and_keep_content":
            cuts.append((r.start, r.start_end))
            if r.end_explicit and r.end_off is not None and r.end_end is not None:
                cuts.append((r.end_off, r.end_end))
        elif k == "before":
            inserts.append((r.start, r.order, 0, r.text))
        elif k == "prepend":
            inserts.append((r.start_end, r.order, 0, _guarded(r)))
        elif k in ("append", "after"):
            assert r.end_off is not None and r.end_end is not None and r.end_order is not None
            if k == "append":
                inserts.append((r.end_off, r.end_order, 0, r.text))
            else:
                inserts.append((r.end_end, r.end_order, 1, r.text))
        elif k in ("set_inner_content", "text_before", "text_replace", "comment_before",
                   "comment_replace", "end_before"):
            if k == "set_inner_content":
                inserts.append((r.start_end, r.order, 0, _guarded(r)))
            else:
                inserts.append((r.start, r.order, 0, r.text))
        elif k in ("replace",):
            inserts.append((r.start, r.order, 0, r.text))
        elif k in ("text_after", "comment_after", "end_after"):
            inserts.append((r.start_end, r.order, 1, r.text))
        elif k == "comment_text":
            comment_texts[r.start] = r.text
        elif k == "document_append":
            inserts.append((eof, 1 << 60, 0, r.text))
    inserts.sort()

    def cut_out(a: int, b: int) -> bool:
        return any(x <= a and b <= y for x, y in cuts if x < y)

    boundaries = sorted({p for p, *_ in inserts} | {x for c in cuts for x in c})
    items: list[list[Any]] = []
    ins = 0

    def flush_inserts(upto: int) -> None:
        nonlocal ins
        while ins < len(inserts) and inserts[ins][0] <= upto:
            items.append(["Character", inserts[ins][3]])
            ins += 1

    for tok in _tokens(data):
        if isinstance(tok, Text):
            for a, b, text in _split_text(tok, boundaries):
                flush_inserts(a)
                if not cut_out(a, b):
                    items.append(["Character", text])
            continue
        flush_inserts(tok.offset)
        if tok.raw and cut_out(tok.offset, tok.end):
            continue
        item = _token_item(tok)
        if item is None:
            continue
        if item[0] == "StartTag" and tok.offset in start_edits:
            r = start_edits[tok.offset]
            attrs = item[2]
            if r.kind == "set_attribute":
                attrs[r_attr(m)] = r.text
            elif r.kind == "remove_attribute":
                attrs.pop(r_attr(m), None)
            elif r.kind == "rename":
                item[1] = "var"
        elif item[0] == "EndTag" and tok.offset in end_renames:
            item[1] = "var"
        elif item[0] == "Comment" and tok.offset in comment_texts:
            item[1] = comment_texts[tok.offset]
        items.append(item)
    flush_inserts(eof)
    return _norm(items)


def _guarded(r: _Rec) -> str:
    """The text a prepend/set_inner_content writes: with one more newline in front where the
    tree builder would drop the first (``newline_guard``)."""
    if r.extra.get("newline_guard") and r.text.startswith("\n"):
        return "\n" + r.text
    return r.text


def r_attr(m: Mutation) -> str:
    """The attribute name as the tokenizer reports it (ASCII-lower-cased, NUL as U+FFFD)."""
    return m.attr.translate(_ASCII_LOWER).replace("\x00", "\ufffd")


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def actual_structure(out: bytes) -> list[list[Any]]:
    return _norm(i for i in map(_token_item, _tokens(out)) if i)


# --------------------------------------------------------------------------- checks


class InvariantError(AssertionError):
    """An invariant does not hold; the message says which, with the input and the output."""


class KnownBug(Exception):
    """The invariant failed for a reason already reported (a key of :data:`KNOWN_BUGS`)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"known engine bug {key!r}: {KNOWN_BUGS[key]}")
        self.key = key


#: Engine bugs found by fuzzing and reported (each has an xfail regression test in
#: tests/test_reliability.py).  :func:`classify_failure` recognises their failures so that the
#: properties keep looking for new ones; delete an entry once the engine is fixed.  (The five
#: found so far, [adjacency], [eof-absorb], [rawtext-escape], [attr-splice] and [empty-chunk],
#: are fixed: see docs/design/reliability.md.)
KNOWN_BUGS: dict[str, str] = {}


def classify_failure(data: bytes, m: Mutation, recs: list[_Rec],
                     got: list[list[Any]]) -> str | None:
    """If ``check_mutation`` failed for a reason in :data:`KNOWN_BUGS`, return its key (add a
    recogniser here with each new entry)."""
    return None


#: What the engine says when it refuses a change at the place it is written (raw text that,
#: with the text on the other side of a seam, would end the element): the change was refused,
#: which the properties accept as they accept a ValueError from the handler's own call.
SEAM_REFUSAL = re.compile(r"^text (?:inserted into|removed from) \w+ content .*: the change is "
                          r"refused$")


def check_mutation(data: bytes, m: Mutation, cuts: Sequence[Sequence[bytes]], *,
                   classify: bool = True) -> bytes:
    """Rewrite ``data`` with mutation ``m`` under each chunking in ``cuts``; check that the
    output re-tokenizes to the intended structure (and, where the kind allows, that the output
    is the same for every chunking).  Returns the output of the first chunking."""
    first: bytes | None = None
    for chunks in cuts:
        recs: list[_Rec] = []
        rw = _build(m, recs, itertools.count(), foreign=bool(_FOREIGN.search(data)))
        try:
            out = rewrite_chunks(rw, chunks)
        except ValueError as exc:
            if not SEAM_REFUSAL.search(str(exc)):
                raise
            continue        # refused where it was written (see SEAM_REFUSAL)
        want = expected_structure(data, m, recs)
        got = actual_structure(out)
        if got != want:
            known = classify_failure(data, m, recs, got) if classify else None
            if known is not None:
                raise KnownBug(known)
            raise InvariantError(
                f"{m.describe()}: output does not re-tokenize to the intended structure\n"
                f"input:    {data!r}\nchunks:   {list(chunks)!r}\noutput:   {out!r}\n"
                f"expected: {want!r}\ngot:      {got!r}")
        if first is None:
            first = out
        elif m.kind in CHUNK_INDEPENDENT_KINDS and out != first:
            raise InvariantError(
                f"{m.describe()}: output depends on chunking\ninput: {data!r}\n"
                f"chunks: {list(chunks)!r}\nwhole:  {first!r}\nthis:   {out!r}")
    return b"" if first is None else first


def _reader_rewriter(chunks_seen: list[tuple[bytes, bool, int]] | None = None,
                     **options: Any) -> Rewriter:
    """Handlers on everything that read every field and change nothing (text chunks seen by
    the document text handler are appended to ``chunks_seen``)."""
    rw = Rewriter(**options)

    def element(el: Any) -> None:
        el.tag_name, el.namespace_uri, el.attributes, el.is_self_closing  # noqa: B018
        el.get_attribute("class")
        if el.can_have_content:
            el.on_end_tag(lambda end: (end.name, end.raw, end.implicit))

    def text(chunk: Any) -> None:
        chunk.text, chunk.text_type, chunk.last_in_text_node, chunk.raw  # noqa: B018

    def comment(c: Any) -> None:
        c.text  # noqa: B018

    def doctype(d: Any) -> None:
        d.name, d.public_id, d.system_id  # noqa: B018

    def doc_text(chunk: Any) -> None:
        text(chunk)
        if chunks_seen is not None:
            chunks_seen.append((chunk.raw, chunk.last_in_text_node, chunk.offset))

    rw.on("*", element=element, text=text, comments=comment)
    rw.on_document(doctype=doctype, comments=comment, text=doc_text, end=lambda end: None)
    return rw


def check_identity(data: bytes, cuts: Sequence[Sequence[bytes]], **options: Any) -> None:
    """Handlers that change nothing give the input back byte for byte, whatever the chunking;
    text chunks are pieces of the input and only the last of a text node may be empty.

    ``options`` are Rewriter options.  With ``on_limit="passthrough"`` the output must still be
    the input when a limit is hit; with ``on_limit="raise"`` (and ``strict=True``) the error
    must be one of htmlstream's and what was output before it a prefix of the input."""
    for chunks in cuts:
        seen: list[tuple[bytes, bool, int]] = []
        stream = _reader_rewriter(seen, **options).stream()
        parts: list[bytes] = []
        try:
            for c in chunks:
                parts.append(stream.feed(c))
            parts.append(stream.close())
        except (hs.BufferLimitExceeded, hs.ParsingAmbiguityError) as exc:
            out = b"".join(parts)
            if isinstance(exc, hs.BufferLimitExceeded) and \
                    options.get("on_limit") == "passthrough":
                raise InvariantError(f"passthrough mode raised {exc!r} on {data!r}") from exc
            if not data.startswith(out):
                raise InvariantError(
                    f"output before {exc!r} is not a prefix of the input\ninput: {data!r}\n"
                    f"output: {out!r}") from exc
            continue
        out = b"".join(parts)
        if out != data:
            raise InvariantError(
                f"identity: output differs from input\ninput:  {data!r}\n"
                f"chunks: {list(chunks)!r}\noutput: {out!r}")
        for raw, last, offset in seen:
            if stream.passthrough_reason is None and data[offset:offset + len(raw)] != raw:
                raise InvariantError(
                    f"text chunk {raw!r} at {offset} is not the input there: {data!r}")
            if not raw and not last:
                raise InvariantError(
                    f"empty text chunk at {offset} that is not the last of its text node\n"
                    f"input: {data!r}\nchunks: {list(chunks)!r}")


def token_view(tokens: Iterable[Any]) -> list[tuple[Any, ...]]:
    """A chunking-independent view of tokens: text merged per text type; every other token
    with its decoded fields, raw bytes and offset."""
    out: list[tuple[Any, ...]] = []
    for tok in tokens:
        if isinstance(tok, Text):
            if out and out[-1][0] == "Text" and out[-1][1] == tok.text_type:
                out[-1] = ("Text", tok.text_type, out[-1][2] + tok.text, out[-1][3] + tok.raw)
            else:
                out.append(("Text", tok.text_type, tok.text, tok.raw))
            continue
        item = _token_item(tok)
        out.append((repr(item), tok.raw, tok.offset))
    return out


def check_chunking(data: bytes, cuts: Sequence[Sequence[bytes]], **options: Any) -> None:
    """The token stream is the same for every chunking, and its raw bytes are the input.

    ``options`` are Tokenizer options.  With ``strict=True`` a ParsingAmbiguityError must come
    at the same tag for every chunking.  A
    BufferLimitExceeded depends on the chunk sizes (the limit is on bytes carried over between
    chunks): such a chunking is not compared."""
    whole = None
    for chunks in cuts:
        tk = hs.Tokenizer(**options)
        tokens: list[Any] = []
        failure: tuple[str, int] | None = None
        try:
            for c in chunks:
                tokens.extend(tk.feed(c))
            tokens.extend(tk.close())
        except hs.BufferLimitExceeded:
            continue
        except hs.ParsingAmbiguityError as exc:
            failure = (exc.tag_name, exc.offset)
        if failure is None and b"".join(t.raw for t in tokens) != data:
            raise InvariantError(f"tokens' raw bytes do not rebuild the input: {data!r}")
        # (the tokens a failing feed() completed before the error are not returned, so with
        # an error only where it happened is compared)
        view = (token_view(tokens) if failure is None else None, failure)
        if whole is None:
            whole = view
        elif view != whole:
            raise InvariantError(
                f"tokens depend on chunking\ninput: {data!r}\nchunks: {list(chunks)!r}\n"
                f"whole: {whole!r}\nthis:  {view!r}")


# --------------------------------------------------------------------------- recipes: e-mails

#: Pieces that make addresses (and near misses) when they land in text.
EMAIL_PIECES = [
    b"a@b.co", b"x.y+z@sub.example.org", b"jos\xc3\xa9@ex\xc3\xa4mple.fr", b"@", b".", b"a@",
    b"@b.co", b"a@b.co.", b"mailto:", b"<a href=mailto:a@b.co>", b"<a href='MAILTO:c@d.io'>",
    b"<!--email_off-->", b"<!--/email_off-->", b"</a>", b"<body>", b"</body>", b"<template>",
    b"&amp;", b"&#64;", b"\xe2\x80\x9c", b" ",
]


def _feed(rw: Rewriter, chunks: Iterable[bytes]) -> bytes:
    stream = rw.stream()
    out = [stream.feed(c) for c in chunks]
    out.append(stream.close())
    return b"".join(out)


def check_emails(data: bytes, cuts: Sequence[Sequence[bytes]], **options: Any) -> None:
    """``recipes.obfuscate_emails`` (keys seeded per document) gives the same output for every
    chunking, and ``recipes.decode_emails`` gives the input back (when the input has no
    obfuscated addresses or mailto: links of its own).  ``options``: Rewriter options; a
    document a limit or an ambiguity stops is not compared."""
    from htmlstream import recipes

    rw = Rewriter(**options).use(recipes.obfuscate_emails(random=1))
    try:
        whole = _feed(rw, [data])
    except (hs.BufferLimitExceeded, hs.ParsingAmbiguityError):
        return
    # Bytes invalid in the encoding are written as U+FFFD in text the recipe rewrites (as a
    # browser reads them); the engine writes a "<", a character reference without its ";" or a
    # CR next to changed output so that they read the same: with those only the meaning is the
    # same for every chunking.
    encoding = options.get("encoding", "utf-8")
    if data.startswith(b"\xef\xbb\xbf"):       # a byte order mark decides
        encoding = "utf-8"
        options = dict(options, encoding=encoding)
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return                                  # UTF-16: passed through
    valid = _valid(data, encoding)
    if (not valid and encoding in _MULTIBYTE) or encoding in _NOT_ROUND_TRIP:
        # (the tokenizer reads a broken multi-byte sequence, or a lone 0x80 at the end of a
        # gb18030 text, per token, not as a browser does: no reference to compare with; only
        # no crash)
        _feed(Rewriter(**options).use(recipes.decode_emails()), [whole])
        return
    for chunks in cuts:
        try:
            got = _feed(rw, chunks)
        except (hs.BufferLimitExceeded, hs.ParsingAmbiguityError):
            continue
        if got != whole and (_decoded_view(got, options) != _decoded_view(whole, options)
                             or (valid and not _HAZARD.search(data)
                                 and encoding not in _NOT_ROUND_TRIP)):
            raise InvariantError(
                f"obfuscate_emails depends on chunking\ninput: {data!r}\n"
                f"chunks: {list(chunks)!r}\nwhole: {whole!r}\nthis:  {got!r}")
    lower = data.lower()
    if any(k in lower for k in (b"cfemail", b"email-protection", b"email-decode", b"mailto")):
        return
    back = _feed(Rewriter(**options).use(recipes.decode_emails()), [whole])
    if back != data and _decoded_view(back, options) != _decoded_view(data, options):
        raise InvariantError(
            f"decode_emails(obfuscate_emails(x)) != x\ninput: {data!r}\nobfuscated: "
            f"{whole!r}\ndecoded: {back!r}")


def _decoded_view(data: bytes, options: dict[str, Any]) -> list[Any]:
    """What the tokens of ``data`` mean (text merged, no raw bytes or offsets): the decoder may
    write a document back in other bytes of the same meaning (an unfinished tag at the end of
    the input, which stays text, as ``&lt;`` when the decoder script after it is removed)."""
    opts = {k: v for k, v in options.items() if k in ("encoding", "scripting")}
    try:
        tokens = hs.tokenize(data, **opts)
    except hs.HtmlStreamError:
        return [data]
    view = [v[:3] if v[0] == "Text" else v[0] for v in token_view(tokens) if v[0] != "None"]
    # End tags at the end of the input that only close what its end closes anyway (the
    # recipe closes raw text and templates left open before its script).
    while view and view[-1] in _EOF_CLOSERS:
        view.pop()
    # A script the input left open in its "double escaped" state: the first of the recipe's
    # two "</script>" is its text (a script the end of the input closes never runs).
    if view and view[-1][0] == "Text" and view[-1][1] == hs.TextType.SCRIPT_DATA:
        view[-1] = (*view[-1][:2], view[-1][2].removesuffix("</script>"))
    return view


_EOF_CLOSERS = {repr(["EndTag", n]) for n in (
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
    "template")}


#: Encodings in which decoding and encoding back is not the identity (gb18030: a lone 0x80 is
#: U+20AC, written back as A2 E3): text the recipe rewrites keeps its meaning, not its bytes.
#: shift_jis: the engine writes a character reference it resolves next to changed output in the
#: document's encoding, and Python's Shift_JIS writes U+00AC as 81 CA, which reads back U+FFE2.
_NOT_ROUND_TRIP = {"gb18030", "gbk", "shift_jis"}
_MULTIBYTE = {"shift_jis", "euc-kr", "gb18030", "big5", "euc-jp", "gbk"}
_HAZARD = re.compile(rb"&(?![0-9A-Za-z#]+;)|<(?![A-Za-z/!?])|\r")


def _valid(data: bytes, encoding: str) -> bool:
    try:
        data.decode(hs.lookup_encoding(encoding).codec)
    except UnicodeDecodeError:
        return False
    return True


# --------------------------------------------------------------------------- recipes.minify

_MINIFIERS: dict[tuple[bool, str], Rewriter] = {}
#: _HAZARD, with references read as the tokenizer reads them (``&#x4n;`` is ``&#x4`` and
#: ``n;``: a reference without its ';').
_MINIFY_HAZARD = re.compile(
    rb"&(?!(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);)|<(?![A-Za-z/!?])|\r")


def _minifier(scripting: bool, whitespace: str) -> Rewriter:
    rw = _MINIFIERS.get((scripting, whitespace))
    if rw is None:
        from htmlstream import recipes
        ws: Any = whitespace
        try:
            recipe = recipes.minify(optional_tags=True, css=True, js=True, whitespace=ws)
        except ImportError:     # (no rcssmin/rjsmin: the rest of the recipe)
            recipe = recipes.minify(optional_tags=True, whitespace=ws)
        rw = _MINIFIERS[scripting, whitespace] = Rewriter(scripting=scripting).use(recipe)
    return rw


def check_minify(data: bytes, cuts: Sequence[Sequence[bytes]], *, scripting: bool = True
                 ) -> None:
    """``recipes.minify`` (every option on): the output does not depend on the chunking (as
    in :func:`check_emails`: next to rewritten text the engine may write a ``<``, a reference
    or a CR in other bytes, and bytes UTF-8 does not read as U+FFFD, so there only the meaning
    must agree); for a UTF-8 input, html5lib's tree of the output is the input's
    (``tests/oracles/minify_tree.py``; skipped where html5lib 1.1's own tree is outdated).
    The whitespace mode is the default ``"collapse"`` or ``"remove"``, by the input's length
    (each input checks one, the same every time)."""
    rw = _minifier(scripting, "remove" if len(data) % 2 else "collapse")
    whole = _feed(rw, [data])
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    for chunks in cuts:
        got = _feed(rw, chunks)
        if got != whole and ((text is not None and not _MINIFY_HAZARD.search(data)) or
                             _decoded_view(got, {}) != _decoded_view(whole, {})):
            raise InvariantError(f"minify depends on chunking\ninput: {data!r}\n"
                                 f"chunks: {list(chunks)!r}\nwhole: {whole!r}\nthis:  {got!r}")
    if text is None or data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return
    low = text.lower()
    if any(t in low for t in ("<template", "<select", "<frameset", "\r", "\x00")):
        return
    foreign = min((i for i in (low.find("<svg"), low.find("<math")) if i >= 0), default=-1)
    if foreign >= 0 and ("</p" in low[foreign:] or "</br" in low[foreign:]):
        return      # (html5lib 1.1 does not break out of foreign content there)
    from oracles.minify_tree import canonical_tree, first_difference
    a = canonical_tree(text, scripting=scripting, code=True)
    b = canonical_tree(whole.decode("utf-8", "replace"), scripting=scripting, code=True)
    if a != b:
        raise InvariantError(f"minify changed the tree: {first_difference(a, b)}\n"
                             f"input: {data!r}\noutput: {whole!r}")


def check_markdown(data: bytes, cuts: Sequence[Sequence[bytes]]) -> None:
    """``htmlstream.markdown`` (whole page, and ``main_content=True``): no crash, and the
    Markdown does not depend on the chunking."""
    from htmlstream.recipes.markdown import MarkdownConverter

    for main in (False, True):
        whole = _markdown(MarkdownConverter(main_content=main), [data])
        for chunks in cuts:
            got = _markdown(MarkdownConverter(main_content=main), chunks)
            if got != whole:
                raise InvariantError(f"markdown (main_content={main}) depends on chunking\n"
                                     f"input: {data!r}\nchunks: {list(chunks)!r}\n"
                                     f"whole: {whole!r}\nthis:  {got!r}")


def _markdown(conv: Any, chunks: Sequence[bytes]) -> str:
    return "".join([conv.feed(c) for c in chunks] + [conv.close()])
