"""Checks for the Markdown converter (tests/test_recipes_markdown.py): its Markdown rendered
back to HTML by a CommonMark implementation (markdown-it-py, with GFM tables and
strikethrough), and the source's visible text, links, headings, list items, table cells and code
blocks as html5lib's tree has them, to compare with the rendered HTML's.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any
from urllib.parse import unquote, urljoin

import html5lib
from markdown_it import MarkdownIt

# (maxNesting: the preset's 20 levels cut the deep lists of real pages out of the rendering)
_MD = MarkdownIt("commonmark", {"maxNesting": 10000}).enable("table").enable("strikethrough")
_NS = "{http://www.w3.org/1999/xhtml}"

#: What the converter leaves out (as its module documentation says).
SKIPPED = frozenset([
    "script", "style", "template", "noscript", "iframe", "object", "embed", "video", "audio",
    "canvas", "svg", "math", "map", "input", "button", "select", "textarea", "datalist",
    "option", "optgroup", "output", "progress", "meter", "head", "noembed", "noframes",
    "frameset", "dialog",
])
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_WORD = re.compile(r"\w+")


def render(md: str) -> str:
    """The Markdown rendered to HTML (raw HTML in it is escaped: the converter writes none)."""
    return _MD.render(md)


def tree(html: str | bytes) -> Any:
    return html5lib.parse(html, namespaceHTMLElements=True)


def _tag(el: Any) -> str:
    t = el.tag
    if not isinstance(t, str):
        return ""
    return t[len(_NS):] if t.startswith(_NS) else "#foreign"


def _hidden(el: Any) -> bool:
    if "hidden" in el.attrib:
        return True
    if (el.get("aria-hidden") or "").strip().lower() == "true":
        return True
    return bool(_HIDDEN_STYLE.search(el.get("style") or ""))


def visible(root: Any, source: bool = True):  # type: ignore[no-untyped-def]
    """The elements and text of the tree in document order, without what is left out:
    yields ``("start", el)``, ``("end", el)`` and ``("text", s)``."""
    def walk(el: Any):  # type: ignore[no-untyped-def]
        tag = _tag(el)
        if source and (tag in SKIPPED or tag == "#foreign" or _hidden(el)) \
                and not (tag == "dialog" and "open" in el.attrib):
            if el.tail:
                yield ("text", el.tail)
            return
        if tag:
            yield ("start", el)
            if el.text and tag != "title":
                yield ("text", el.text)
            for child in el:
                yield from walk(child)
            yield ("end", el)
        if el.tail:
            yield ("text", el.tail)
    body = root.find(f"{_NS}body")
    if body is not None:
        yield from walk(body)


_INLINE = frozenset(["a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font",
                     "i", "kbd", "mark", "q", "s", "samp", "small", "span", "strike", "strong",
                     "sub", "sup", "time", "tt", "u", "var", "del", "ins", "label", "nobr", "big",
                     "wbr", "img"])


def words(html: str | bytes, source: bool = True) -> list[str]:
    """The words of the body's visible text (block elements separate words)."""
    parts: list[str] = []
    for kind, x in visible(tree(html), source):
        if kind == "text":
            parts.append(x)
        elif _tag(x) not in _INLINE:
            parts.append(" ")
    return _WORD.findall("".join(parts))


def f1(expected: list[str], got: list[str]) -> float:
    """Bag-of-words F1."""
    a, b = Counter(expected), Counter(got)
    common = sum((a & b).values())
    if not a and not b:
        return 1.0
    if not common:
        return 0.0
    precision = common / sum(b.values())
    recall = common / sum(a.values())
    return 2 * precision * recall / (precision + recall)


def _text(el: Any) -> str:
    """The element's text, words only (blocks and line breaks separate words)."""
    parts: list[str] = []

    def walk(e: Any) -> None:
        tag = _tag(e)
        if tag and tag not in _INLINE:
            parts.append(" ")
        if e.text:
            parts.append(e.text)
        for child in e:
            walk(child)
            if child.tail:
                parts.append(child.tail)
        if tag and tag not in _INLINE:
            parts.append(" ")
    walk(el)
    return " ".join(_WORD.findall("".join(parts)))


def links(html: str | bytes, base_url: str | None = None, source: bool = True
          ) -> dict[str, str]:
    """The links with text: each target with the text of its links, in order (words only, so
    that a link written in pieces counts as one)."""
    out: dict[str, list[str]] = {}
    stack: list[tuple[str, list[str]]] = []
    for kind, x in visible(tree(html), source):
        if kind == "start" and _tag(x) == "a" and x.get("href") is not None:
            href = unquote(x.get("href").strip(" \t\n\r\f"))
            if href and not href.lower().startswith("javascript:"):
                stack.append((urljoin(base_url, href) if base_url else href, []))
                continue
            stack.append(("", []))
        elif kind == "end" and _tag(x) == "a" and x.get("href") is not None:
            href, text = stack.pop()
            href = unquote(href)
            if href:
                out.setdefault(href, []).extend(text)
        elif kind == "text":
            for _, text in stack:
                text.extend(_WORD.findall(x))
        elif kind == "start" and _tag(x) not in _INLINE:
            # (a block inside a link ends it in Markdown: its words still go with it)
            pass
    return {href: " ".join(ws) for href, ws in out.items() if ws}


def structure(html: str | bytes, source: bool = True) -> dict[str, list[Any]]:
    """Headings with their levels, list items' own text, table cells and code blocks."""
    out: dict[str, list[Any]] = {"headings": [], "items": [], "cells": [], "code": []}
    for kind, x in visible(tree(html), source):
        if kind != "start":
            continue
        tag = _tag(x)
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            out["headings"].append((int(tag[1]), _text(x)))
        elif tag == "li":
            out["items"].append(_text(x))
        elif tag == "tr":
            row = [_text(c) for c in x if _tag(c) in ("td", "th")]
            while row and not row[-1]:
                row.pop()     # (GFM pads short rows)
            out["cells"].append(row)
        elif tag == "pre":
            text = "".join(x.itertext())
            out["code"].append(text[:-1] if text.endswith("\n") else text)
    return out


def shingle_scores(predicted: str, truth: str) -> tuple[float, float, float]:
    """The article-extraction benchmark's TP, FP and FN for one page: multisets of 4-token
    shingles of ``\\w+`` tokens, normalised to sum to 1."""
    def shingles(text: str) -> Counter[tuple[str, ...]]:
        tokens = _WORD.findall(text)
        return Counter(tuple(tokens[i:i + 4]) for i in range(max(len(tokens) - 3, 1)))
    p, t = shingles(predicted), shingles(truth)
    a, b, c = sum((p & t).values()), sum((p - t).values()), sum((t - p).values())
    total = (a + b + c) or 1
    return a / total, b / total, c / total


def markdown_text(md: str) -> str:
    """The text of Markdown as it reads (rendered, tags removed)."""
    return " ".join(_text(tree(render(md)).find(f"{_NS}body")).split())
