"""The minifier's oracle: html5lib's tree of a document, in a form where what ``minify`` may
change does not show (tests/test_recipes_minify.py compares the input's with the output's).

:func:`canonical_tree` parses with html5lib and gives nested tuples
``("e", namespace, name, attributes, children)``, ``("t", text)`` and ``("d", doctype)``, with:

* comments left out and the text around them joined;
* boolean attributes (:data:`BOOLEAN_ATTRIBUTES`, on the HTML elements where they are boolean)
  whose value is their name given as empty; ``type`` dropped from ``<script>`` when, stripped,
  it is a JavaScript MIME type and the script has no ``language``, from ``<style>`` when
  exactly ``text/css`` (ASCII case-insensitively, not stripped), from ``<link>`` when exactly
  ``text/css`` and ``rel`` is ``stylesheet`` (or ``alternate stylesheet``);
* text in ``<pre>``, ``<listing>``, ``<textarea>``, raw text elements (``<script>``,
  ``<style>``, ``<title>``, ``<xmp>``, ``<iframe>``, ``<noembed>``, ``<noframes>``,
  ``<plaintext>``, ``<noscript>`` with scripting) and inside SVG and MathML as it is;
* elsewhere, runs of ASCII whitespace as one space, and that space left out where it touches a
  line boundary: the start or end of its parent when the parent is block-level, or a
  block-level sibling; whitespace-only text in ``<head>`` (at any depth) and ``<html>`` left
  out.  With ``collapse=True`` (what ``whitespace="collapse"``, the default, may do, and no
  more): runs as one space, and only whitespace-only text in ``<head>`` (at any depth),
  ``<html>`` and a table's parts (``<table>``, ``<tbody>``, ``<thead>``, ``<tfoot>``,
  ``<tr>``) left out.

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

#: Boolean attributes and the HTML elements they are boolean on ("*": all).
BOOLEAN_ATTRIBUTES = {
    "allowfullscreen": "iframe", "async": "script", "autofocus": "*", "autoplay": "audio video",
    "checked": "input", "controls": "audio video", "default": "track", "defer": "script",
    "disabled": "button fieldset input link optgroup option select textarea",
    "formnovalidate": "button input", "inert": "*", "ismap": "img", "itemscope": "*",
    "loop": "audio video", "multiple": "input select", "muted": "audio video",
    "nomodule": "script", "novalidate": "form", "open": "details dialog",
    "playsinline": "video", "readonly": "input textarea", "required": "input select textarea",
    "reversed": "ol", "selected": "option", "shadowrootclonable": "template",
    "shadowrootdelegatesfocus": "template", "shadowrootserializable": "template",
}

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
_WS = re.compile(r"[\t\n\r ]+")     # (CSS white space: a form feed is not)
_Builder: Any = html5lib.getTreeBuilder("dom")


def _attributes(node: Any, name: str, html: bool) -> tuple[tuple[str, str], ...]:
    attrs = {}
    for i in range(node.attributes.length):
        a = node.attributes.item(i)
        attrs[(a.namespaceURI or "") + " " + a.name] = a.value
    if html:
        for key in list(attrs):
            local = key[1:]
            on = BOOLEAN_ATTRIBUTES.get(local, "")
            if (on == "*" or name in on.split()) and attrs[key].lower() == local:
                attrs[key] = ""
        t = attrs.get(" type")
        rel = attrs.get(" rel", "")
        if t is not None and t.isascii() and (
                (name == "script" and t.strip("\t\n\x0c\r ").lower() in JS_TYPES
                 and not attrs.get(" language")) or
                (name == "style" and t.lower() == "text/css") or
                (name == "link" and t.lower() == "text/css" and rel.isascii() and sorted(
                    re.split("[\t\n\x0c\r ]+", rel.lower().strip("\t\n\x0c\r ")))
                 in (["stylesheet"], ["alternate", "stylesheet"]))):
            del attrs[" type"]
    return tuple(sorted(attrs.items()))


def _convert(node: Any, preserve: bool, scripting: bool, head: bool = False,
             code: bool = False, collapse: bool = False) -> tuple[Any, ...]:
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
            children.append(_convert(child, keep, scripting, head or name == "head", code,
                                     collapse))
    if not keep:
        children = _collapse(children, "head" if head else name, collapse)
    return ("e", ns, name, _attributes(node, name, html), tuple(children))


def _is_block(item: Any) -> bool:
    return item[0] == "e" and item[1] == HTML and item[2] in BLOCK


#: Where whitespace-only text is never shown (``collapse=True``): a table's parts.
_TABLE_PARTS = frozenset(["table", "tbody", "thead", "tfoot", "tr"])


def _collapse(children: list[Any], parent: str, collapse: bool = False) -> list[Any]:
    out: list[Any] = []
    n = len(children)
    for i, item in enumerate(children):
        if item[0] != "t":
            out.append(item)
            continue
        text = _WS.sub(" ", item[1])
        if parent in ("head", "html") and text == " ":
            continue
        if collapse:
            if not (text == " " and parent in _TABLE_PARTS):
                out.append(("t", text))
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


def canonical_tree(data: str, *, scripting: bool = True, code: bool = False,
                   collapse: bool = False) -> tuple[Any, ...]:
    """html5lib's tree of ``data`` in the canonical form described above; with ``code``,
    without the text of HTML ``<script>`` and ``<style>`` elements (minified by css/js); with
    ``collapse``, white space only collapsed (``whitespace="collapse"``'s changes)."""
    doc = html5lib.HTMLParser(tree=_Builder).parse(data, scripting=scripting)
    out: list[Any] = []
    for child in doc.childNodes:
        if child.nodeType == Node.DOCUMENT_TYPE_NODE:
            out.append(("d", child.name, child.publicId, child.systemId))
        elif child.nodeType == Node.ELEMENT_NODE:
            out.append(_convert(child, False, scripting, False, code, collapse))
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
