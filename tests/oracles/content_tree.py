"""What html5lib's tree puts inside ``html``, ``head``, ``body`` and the children of ``body``.

The oracle of ``tests/test_rewriter_merged.py``: content handlers (``text=``, ``comments=``)
on an element must see the text and comments a browser puts inside it, whether the element's
start tag was in the source, implied by the tree builder, or merged into it later.

* :func:`tree_content`: for each of :data:`SELECTORS`, the text and comments inside the
  matching elements of html5lib's tree, in document order, as ``[("t", text) | ("c", text)]``
  (adjacent text joined; see :func:`normalise`).  It also says whether html5lib moved nodes
  after the fact (foster parenting out of a table, the adoption agency's furthest block), which
  a stream cannot follow (docs/guide/selectors.md, "Where a stream differs from a browser's tree").
* :func:`stream_content`: the same, as seen by htmlstream's content handlers.
* :func:`document_content`: the same from a tree-construction test's expected ``#document``
  (the current standard's tree, where html5lib 1.1's is outdated).
* :func:`normalise`: what both sides go through: NUL and U+FFFD left out of text (the tree
  builder drops NUL in body text, or replaces it, where the tokenizer keeps it) and adjacent
  text joined (text reaches handlers in pieces).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from xml.dom import Node

import html5lib

import htmlstream as hs
from htmlstream.units import HTML_NS

__all__ = [
    "SELECTORS",
    "Content",
    "TreeContent",
    "document_content",
    "normalise",
    "stream_content",
    "tree_content",
]

#: The selectors compared.
SELECTORS = ("html", "head", "body", "body > *")

#: One selector's content: ("t", text) and ("c", comment text) in document order.
Content = list[tuple[str, str]]

_DomBuilder: Any = html5lib.getTreeBuilder("dom")


class _Moves:
    """Counts html5lib's after-the-fact moves during one parse (module-wide: parses run one at
    a time)."""

    foster = 0
    adoption = 0


def _node_class() -> Any:
    """html5lib's DOM node class (made inside a closure: found from a parse)."""
    parser = html5lib.HTMLParser(tree=_DomBuilder)
    parser.parse("<p>")
    return type(parser.tree.openElements[0])


class _Element(_node_class()):  # type: ignore[misc]
    def reparentChildren(self, new_parent: Any) -> None:
        # (the adoption agency's furthest block is the only caller in the parser)
        _Moves.adoption += 1
        super().reparentChildren(new_parent)

    def cloneNode(self) -> Any:
        node = super().cloneNode()
        node.__class__ = _Element
        return node


class _TreeBuilder(_DomBuilder):  # type: ignore[misc, valid-type]
    def elementClass(self, name: str, namespace: str | None = None) -> Any:
        node = super().elementClass(name, namespace)
        node.__class__ = _Element
        return node

    def getTableMisnestedNodePosition(self) -> Any:
        _Moves.foster += 1
        return super().getTableMisnestedNodePosition()


@dataclass
class TreeContent:
    """html5lib's answer for one document."""

    content: dict[str, Content]
    fostered: bool       # foster parenting moved content out of a table
    adopted: bool        # the adoption agency moved nodes (a furthest block)
    frameset: bool       # the document has a <frameset> (its body was dropped or never made)
    # <html> has a comment after <head> or <body> (a comment right after </head> or </body>):
    # text after it in the source still goes into the head (a <style>, <title>... after
    # </head> is put back into the head: WHATWG "after head" insertion mode) or the body,
    # before the comment in the tree
    comment_after_head_or_body: bool = False


def normalise(seq: Iterable[tuple[str, str]]) -> Content:
    """NUL and U+FFFD left out of text, empty text dropped, adjacent text joined."""
    out: Content = []
    for kind, text in seq:
        if kind == "t":
            text = text.replace("\x00", "").replace("\ufffd", "")
            if not text:
                continue
            if out and out[-1][0] == "t":
                out[-1] = ("t", out[-1][1] + text)
                continue
        out.append((kind, text))
    return out


def _walk(node: Any, out: Content) -> None:
    for child in node.childNodes:
        if child.nodeType == Node.TEXT_NODE:
            out.append(("t", child.data))
        elif child.nodeType == Node.COMMENT_NODE:
            out.append(("c", child.data))
        elif child.nodeType == Node.ELEMENT_NODE:
            _walk(child, out)


def tree_content(data: str, *, scripting: bool) -> TreeContent:
    """Parse ``data`` (newlines already normalised) with html5lib and collect the content."""
    _Moves.foster = _Moves.adoption = 0
    doc = html5lib.HTMLParser(tree=_TreeBuilder).parse(data, scripting=scripting)
    res: dict[str, Content] = {s: [] for s in SELECTORS}
    html = doc.documentElement
    frameset = after_head_or_body = False
    if html is not None:
        _walk(html, res["html"])
        for child in html.childNodes:
            if child.nodeType == Node.COMMENT_NODE:
                before = html.childNodes[:html.childNodes.index(child)]
                after_head_or_body |= any(c.nodeType == Node.ELEMENT_NODE
                                          and c.tagName in ("head", "body") for c in before)
            if child.nodeType != Node.ELEMENT_NODE:
                continue
            frameset |= child.tagName == "frameset"
            if child.tagName in ("head", "body"):
                _walk(child, res[child.tagName])
            if child.tagName == "body":
                for grandchild in child.childNodes:
                    if grandchild.nodeType == Node.ELEMENT_NODE:
                        _walk(grandchild, res["body > *"])
    return TreeContent({k: normalise(v) for k, v in res.items()}, _Moves.foster > 0,
                       _Moves.adoption > 0, frameset or "<frameset" in data.lower(),
                       after_head_or_body)


def _document_nodes(document: str) -> list[tuple[int, str, str]]:
    """The nodes of a ``#document`` dump as (depth, kind, value): kind "e" (element, value its
    name), "t", "c", "a" (attribute) or "content" (template contents)."""
    nodes: list[tuple[int, str, str]] = []
    lines = document.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        body = line[2:]
        indent = len(body) - len(body.lstrip(" "))
        depth, body = indent // 2, body[indent:]
        if body.startswith('"'):
            text = body[1:]
            while not text.endswith('"') and i < len(lines):     # (multi-line text)
                text += "\n" + lines[i]
                i += 1
            nodes.append((depth, "t", text[:-1]))
        elif body.startswith("<!-- "):
            text = body[5:]
            while not text.endswith(" -->") and i < len(lines):
                text += "\n" + lines[i]
                i += 1
            nodes.append((depth, "c", text[:-4]))
        elif body.startswith("<!DOCTYPE"):
            continue
        elif body.startswith("<"):
            nodes.append((depth, "e", body[1:-1]))
        elif body == "content":
            nodes.append((depth, "content", ""))
        else:
            nodes.append((depth, "a", body))
    return nodes


def document_content(document: str) -> tuple[dict[str, Content], bool]:
    """What :func:`tree_content` collects, from a ``#document`` dump, and whether <html> has
    a comment after <head> or <body> (``TreeContent.comment_after_head_or_body``)."""
    nodes = _document_nodes(document)
    res: dict[str, Content] = {s: [] for s in SELECTORS}
    parents: list[str] = []     # the element at each depth on the way to the node
    head_or_body_seen = after_head_or_body = False
    for depth, kind, value in nodes:
        del parents[depth:]
        head_or_body_seen |= depth == 1 and kind == "e" and value in ("head", "body")
        after_head_or_body |= depth == 1 and kind == "c" and head_or_body_seen
        if kind in ("t", "c"):
            if parents[:1] == ["html"]:
                res["html"].append((kind, value))
                if len(parents) >= 2 and parents[1] in ("head", "body"):
                    res[parents[1]].append((kind, value))
                    if parents[1] == "body" and len(parents) >= 3:
                        res["body > *"].append((kind, value))
        elif kind in ("e", "content"):
            parents.append(value if kind == "e" else "content")
    return {k: normalise(v) for k, v in res.items()}, after_head_or_body


def stream_content(chunks: Sequence[bytes], *, scripting: bool,
                   encoding: str = "utf-8") -> dict[str, Content]:
    """What htmlstream's text and comment handlers on :data:`SELECTORS` see, fed ``chunks``.

    The tree builder drops a newline right after ``<pre>``, ``<listing>`` and ``<textarea>``;
    handlers see it (it is in the source), so it is left out here: an element handler on those
    notes where their content starts."""
    seen: dict[str, Content] = {s: [] for s in SELECTORS}
    starts: set[int] = set()
    rw = hs.Rewriter(encoding=encoding, scripting=scripting)
    def note_start(el: hs.Element) -> None:
        if el.namespace_uri == HTML_NS:
            starts.add(el.offset + len(el.raw))

    rw.on("pre, listing, textarea", element=note_start)

    def recorder(selector: str) -> tuple[Any, Any]:
        def text(chunk: hs.TextChunk) -> None:
            value = chunk.text
            if chunk.offset in starts and value.startswith("\n"):
                value = value[1:]
            seen[selector].append(("t", value))

        def comment(c: hs.Comment) -> None:
            seen[selector].append(("c", c.text))

        return text, comment

    for selector in SELECTORS:
        text, comment = recorder(selector)
        rw.on(selector, text=text, comments=comment)
    stream = rw.stream()
    for chunk in chunks:
        stream.feed(chunk)
    stream.close()
    return {k: normalise(v) for k, v in seen.items()}
