"""The minifier's oracle: html5lib's tree of a document, in a form where what ``minify`` may
change does not show (tests/test_recipes_minify.py compares the input's with the output's).

:func:`canonical_tree` parses with html5lib and gives nested tuples
``("e", namespace, name, attributes, children)``, ``("t", text)`` and ``("d", doctype)``, with:

* comments left out and the text around them joined;
* boolean attributes (:data:`BOOLEAN_ATTRIBUTES` on HTML elements) whose value is empty or their
  name given as present (``""``); ``type`` dropped from ``<script>`` when it is a JavaScript
  MIME type and the script has no ``language``, from ``<style>``/``<link>`` when
  ``text/css``;
* text in ``<pre>``, ``<listing>``, ``<textarea>``, raw text elements (``<script>``,
  ``<style>``, ``<title>``, ``<xmp>``, ``<iframe>``, ``<noembed>``, ``<noframes>``,
  ``<plaintext>``, ``<noscript>`` with scripting) and inside SVG and MathML as it is;
* elsewhere, runs of ASCII whitespace as one space, and that space left out where it touches a
  line boundary: the start or end of its parent when the parent is block-level, or a
  block-level sibling; whitespace-only text in ``<head>`` (at any depth) and ``<html>`` left
  out.

It is written from the tree alone (what the minifier does from tokens must agree with it), with
its own copy of the element lists.
"""

from __future__ import annotations

import re
from typing import Any
from xml.dom import Node

import html5lib

__all__ = ["canonical_tree", "first_difference"]

HTML = "http://www.w3.org/1999/xhtml"

BLOCK = frozenset([
    "address", "article", "aside", "blockquote", "body", "br", "caption", "center", "col",
    "colgroup", "dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption",
    "figure", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head",
    "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "nav", "ol", "p", "search",
    "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"
])

BOOLEAN_ATTRIBUTES = frozenset([
    "allowfullscreen", "async", "autofocus", "autoplay", "checked", "controls", "default", "defer",
    "disabled", "formnovalidate", "inert", "ismap", "itemscope", "loop", "multiple", "muted",
    "nomodule", "novalidate", "open", "playsinline", "readonly", "required", "reversed", "selected",
    "shadowrootclonable", "shadowrootdelegatesfocus", "shadowrootserializable"
])

JS_TYPES = frozenset([
    "application/ecmascript", "application/javascript", "application/x-ecmascript",
    "application/x-javascript", "text/ecmascript", "text/javascript", "text/javascript1.0",
    "text/javascript1.1", "text/javascript1.2", "text/javascript1.3", "text/javascript1.4",
    "text/javascript1.5", "text/jscript", "text/livescript", "text/x-ecmascript",
    "text/x-javascript"
])

_PRESERVE = frozenset([
    "pre", "listing", "textarea", "script", "style", "title", "xmp", "iframe", "noembed",
    "noframes", "plaintext"
])
_WS = re.compile(r"[\t\n\x0c\r ]+")
_Builder: Any = html5lib.getTreeBuilder("dom")


def _attributes(node: Any, name: str, html: bool) -> tuple[tuple[str, str], ...]:
    attrs = {}
    for i in range(node.attributes.length):
        a = node.attributes.item(i)
        attrs[(a.namespaceURI or "") + " " + a.name] = a.value
    if html:
        for key in list(attrs):
            local = key[1:]
            if local in BOOLEAN_ATTRIBUTES and attrs[key].lower() in ("", local):
                attrs[key] = ""
        t = attrs.get(" type")
        if t is not None:
            essence = t.strip("\t\n\x0c\r ").lower()
            if (name == "script" and essence in JS_TYPES and not attrs.get(" language")) or \
                    (name in ("style", "link") and essence == "text/css"):
                del attrs[" type"]
    return tuple(sorted(attrs.items()))


def _convert(node: Any, preserve: bool, scripting: bool, head: bool = False,
             code: bool = False) -> tuple[Any, ...]:
    ns = node.namespaceURI or HTML
    name = node.localName if ns != HTML else node.tagName
    html = ns == HTML
    if code and html and name in ("script", "style"):
        return ("e", ns, name, _attributes(node, name, html), ())
    keep = preserve or not html or name in _PRESERVE or (scripting and name == "noscript")
    children: list[Any] = []
    for child in node.childNodes:
        if child.nodeType == Node.TEXT_NODE:
            if children and children[-1][0] == "t":
                children[-1] = ("t", children[-1][1] + child.data)
            else:
                children.append(("t", child.data))
        elif child.nodeType == Node.ELEMENT_NODE:
            children.append(_convert(child, keep, scripting, head or name == "head", code))
    if not keep:
        children = _collapse(children, "head" if head else name)
    return ("e", ns, name, _attributes(node, name, html), tuple(children))


def _is_block(item: Any) -> bool:
    return item[0] == "e" and item[1] == HTML and item[2] in BLOCK


def _collapse(children: list[Any], parent: str) -> list[Any]:
    out: list[Any] = []
    n = len(children)
    for i, item in enumerate(children):
        if item[0] != "t":
            out.append(item)
            continue
        text = _WS.sub(" ", item[1])
        if parent in ("head", "html") and text == " ":
            continue
        prev_line = (i == 0 and parent in BLOCK) or (i > 0 and _is_block(children[i - 1]))
        next_line = (i == n - 1 and parent in BLOCK) or (i < n - 1 and _is_block(children[i + 1]))
        if prev_line and text.startswith(" "):
            text = text[1:]
        if next_line and text.endswith(" "):
            text = text[:-1]
        if text:
            out.append(("t", text))
    return out


def canonical_tree(data: str, *, scripting: bool = True, code: bool = False
                   ) -> tuple[Any, ...]:
    """html5lib's tree of ``data`` in the canonical form described above; with ``code``,
    without the text of HTML ``<script>`` and ``<style>`` elements (minified by css/js)."""
    doc = html5lib.HTMLParser(tree=_Builder).parse(data, scripting=scripting)
    out: list[Any] = []
    for child in doc.childNodes:
        if child.nodeType == Node.DOCUMENT_TYPE_NODE:
            out.append(("d", child.name, child.publicId, child.systemId))
        elif child.nodeType == Node.ELEMENT_NODE:
            out.append(_convert(child, False, scripting, False, code))
    return tuple(out)


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two canonical trees first differ (a short description), or None."""
    if a == b:
        return None
    if isinstance(a, tuple) and isinstance(b, tuple) and a and b and a[0] == b[0] == "e":
        here = f"{path}/{a[2]}"
        if a[1:4] != b[1:4]:
            return f"{here}: {a[1:4]!r} != {b[1:4]!r}"
        for i, (x, y) in enumerate(zip(a[4], b[4], strict=False)):
            d = first_difference(x, y, f"{here}[{i}]")
            if d:
                return d
        return f"{here}: {len(a[4])} children != {len(b[4])}: {a[4][-3:]!r} / {b[4][-3:]!r}"
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and a and \
            a[0] not in ("e", "t", "d"):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
    return f"{path}: {a!r:.200} != {b!r:.200}"
