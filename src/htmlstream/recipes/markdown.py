"""``markdown``: HTML streamed into Markdown (CommonMark, with GFM tables and strikethrough).

:func:`htmlstream.markdown` converts a whole document in one call; :class:`MarkdownConverter`
is the same without I/O (``feed(bytes) -> str`` as the HTML arrives, ``close() -> str``); the
recipe :func:`markdown` is the converter as an output stage of a :class:`~htmlstream.Rewriter`
(``Rewriter.pipe``): the rewriter's output, whatever its handlers changed, leaves as Markdown
(UTF-8 bytes).

How it streams.  The converter is a set of handlers on a rewriter (elements, their end tags via
``Element.on_end_tag``, text chunks): no tree is built.  The handlers turn the document into
events (an element's start with the few attributes that matter, its end, a piece of text) and a
Markdown writer turns the events into lines as they come.  Between two ``feed()`` calls the
converter holds: the stack of open containers (block quotes, list items), the inline marks open
(emphasis, links), one character of text whose escaping depends on the next one, and three
bounded buffers:

* a ``<pre>`` block's text until its end (the code fence must be longer than any run of
  backticks in it): at most :data:`MAX_PRE_CHARS` characters, after which the fence is chosen
  from what was seen and the rest streams (a later line that would close the fence early is
  indented by four spaces, which keeps it inside the block);
* an inline ``<code>``'s text until its end (the same reason): at most :data:`MAX_CODE_CHARS`,
  after which its text is written as escaped text;
* a ``<table>``'s events until its end, to choose between a GFM table and readable text: at
  most ``max_table_chars`` (default :data:`MAX_TABLE_CHARS`) characters of text and markup;
  beyond it the table is written as readable text (each cell a paragraph), streaming.

What it writes:

* headings (``heading_style="atx"``: ``## Title``; ``"setext"``: underlined levels 1 and 2),
  paragraphs, ``**strong**``, ``*emphasis*``, ``~~strikethrough~~``, ``code spans``, links
  (``links="inline"``: ``[text](url "title")``; ``"reference"``: ``[text][1]`` with the
  definitions at the end), images (``![alt](src "title")``; ``data:`` URLs left out;
  ``images=False`` leaves them out, but for the alt text of an image inside a link, which
  stays as the link's text), nested lists (``-``; ``1.`` from the list's ``start``; two lists
  in a row get different bullets, so that they stay two), block quotes, fenced code blocks
  with the language of a ``language-x`` or ``lang-x`` class, hard line breaks (``\\`` at a
  line's end), thematic breaks, definition lists (the term in bold, each definition on its own
  line after ``: ``), and tables (below);
* URLs resolved against ``base_url`` and the document's ``<base href>``; ``javascript:`` links
  are written as their text alone;
* tables: a table whose cells hold only inline content (paragraphs and line breaks are
  flattened to spaces) and span one row and one column is a GFM table (its first row the
  header, rows padded to the widest); any other (merged cells, lists, code blocks, headings,
  block quotes or tables inside cells, a cell of more than :data:`MAX_CELL_CHARS` characters:
  layout tables) is written as readable text: each cell's content as blocks, in order.

Main content (``main_content=True``): the output is cut into segments at paragraph breaks, each
noted with its text's length, its link text, the landmark around it and the boilerplate hints
around it, held (at most :data:`MAX_MAIN_CHARS` characters) and chosen at the end
(docs/guide/markdown.md says how).  At the edge, :func:`accepts_markdown` is the content
negotiation decision for ``Accept: text/markdown`` and :func:`estimate_tokens` the value of an
``x-markdown-tokens`` header.

Left out: ``<head>`` (but ``<title>`` and the metadata), ``<script>``, ``<style>``,
``<template>``, ``<noscript>`` (read as a browser with scripting on does: its content is
text the page does not show), ``<iframe>``, ``<object>``, ``<embed>``, ``<video>``,
``<audio>``, ``<canvas>``, ``<svg>``, ``<math>``, ``<map>``, a closed ``<dialog>``, form
controls (``<input>``, ``<button>``, ``<select>``, ``<textarea>``, ``<datalist>``,
``<option>``, ``<output>``, ``<progress>``, ``<meter>``), and every element with ``hidden``,
``aria-hidden="true"`` or an inline ``style`` of ``display: none`` / ``visibility: hidden``,
with all its content.

Escaping: text never reads as syntax it was not.  Everywhere, ``\\``, backticks, ``*``,
``[``, ``]``, ``<`` and ``~`` are backslash-escaped; ``_`` unless between two ASCII letters or
digits (``snake_case`` stays readable); ``&`` when a letter, digit or ``#`` follows (an
entity); at a line's start ``#``, ``>``, ``-``, ``+``, ``=``, ``|``, ``:`` and the ``.`` or
``)`` after digits (``1\\.``); ``#`` anywhere in a heading and ``|`` anywhere in a table.
Whitespace is collapsed as a browser shows it (runs of ASCII whitespace to one space, none at a
line's start), so no line starts indented.  The output is the same however the input is cut
into chunks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import IO, Any, Literal, TypeAlias
from urllib.parse import urljoin

from htmlstream.errors import check_type
from htmlstream.rewriter import Rewriter, RewriterStream
from htmlstream.tokens import TextType
from htmlstream.units import Element, EndTag, TextChunk

__all__ = [
    "MAX_CELL_CHARS",
    "MAX_CODE_CHARS",
    "MAX_PRE_CHARS",
    "MAX_TABLE_CHARS",
    "HeadingStyle",
    "LinkStyle",
    "Markdown",
    "MarkdownConverter",
    "MarkdownDocument",
    "accepts_markdown",
    "estimate_tokens",
    "markdown",
    "markdown_document",
]

#: ``links=``: inline links or reference links with their definitions at the end.
LinkStyle: TypeAlias = Literal["inline", "reference"]
#: ``heading_style=``: ``# Title`` (ATX) or underlined (setext, levels 1 and 2; ATX beyond).
HeadingStyle: TypeAlias = Literal["atx", "setext"]

#: The most characters of a ``<pre>`` block held to choose its fence (see the module docs).
MAX_PRE_CHARS = 1 << 20
#: The most characters of an inline ``<code>`` held to choose its backtick string.
MAX_CODE_CHARS = 1 << 16
#: The default most characters (text and markup) of a table held to choose its form.
MAX_TABLE_CHARS = 1 << 20
#: A table cell longer than this (in Markdown characters) makes its table readable text.
MAX_CELL_CHARS = 1000

# ---------------------------------------------------------------------------- events
# The handlers make events for the writer: (START, tag, attrs), (END, tag), (TEXT, s, final).
START, END, TEXT = 0, 1, 2
Event: TypeAlias = tuple[Any, ...]

#: Elements whose content is left out.
SKIP = frozenset([
    "script", "style", "template", "noscript", "iframe", "object", "embed", "video", "audio",
    "canvas", "svg", "math", "map", "input", "button", "select", "textarea", "datalist",
    "option", "optgroup", "output", "progress", "meter", "head", "noembed", "noframes",
    "frameset", "dialog",
])
#: Block elements: a paragraph break before and after.
BLOCKS = frozenset([
    "address", "article", "aside", "body", "center", "details", "div", "fieldset",
    "figcaption", "figure", "footer", "form", "header", "hgroup", "html", "legend", "main",
    "nav", "p", "search", "section", "summary", "caption", "dir", "listing", "xmp",
    "plaintext", "frame",
])
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_EMPHASIS = {"em": "*", "i": "*", "cite": "*", "dfn": "*", "strong": "**", "b": "**",
             "del": "~~", "s": "~~", "strike": "~~"}
_CODE = frozenset(["code", "kbd", "samp", "tt"])
_LISTS = frozenset(["ul", "ol", "menu", "dir"])
_TABLE_PARTS = frozenset(["table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption",
                          "colgroup", "col"])
_META = frozenset(["title", "meta", "base", "link"])
#: Elements the handlers listen to (the others are inline and change nothing).
ELEMENTS = (SKIP | BLOCKS | frozenset(_HEADINGS) | frozenset(_EMPHASIS) | _CODE | _LISTS
            | _TABLE_PARTS | _META | frozenset([
                "a", "img", "br", "hr", "pre", "blockquote", "li", "dl", "dt", "dd", "wbr"]))
_VOID = frozenset(["img", "br", "hr", "wbr", "meta", "base", "link", "input", "col", "embed",
                   "frame"])

_WS_RE = re.compile(r"[ \t\n\r\f]+")
_BASIC_RE = re.compile(r"[\\`*\[\]<~]")
_UNDERSCORE_RE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_AMP_RE = re.compile(r"&(?=[A-Za-z0-9#]|$)")
_SPECIAL_RE = re.compile(r"[\\`*\[\]<~_&]")
_LINE_START = frozenset("#>-+=|:")
_DIGITS_RE = re.compile(r"[0-9]*")
_BACKTICKS_RE = re.compile(r"`+")
_LANG_RE = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)", re.ASCII)
_DEST_OK = re.compile(r"[^\x00-\x20<>()\\\x7f]*")
_HIDDEN_STYLE_RE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


def _attrs(el: Element, tag: str) -> tuple[str | None, ...]:
    """The attributes the writer needs for ``tag``, read while the element is live."""
    get = el.get_attribute
    if tag == "a":
        return (get("href"), get("title"))
    if tag == "img":
        return (get("src"), get("alt"), get("title"))
    if tag in ("td", "th"):
        return (get("colspan"), get("rowspan"))
    if tag in ("ol",):
        return (get("start"),)
    if tag in ("pre", "code"):
        return (get("class"),)
    if tag == "meta":
        return (get("name") or get("property") or get("itemprop"), get("content"),
                get("http-equiv"))
    if tag in ("base", "html"):
        return (get("href") if tag == "base" else get("lang"),)
    if tag == "link":
        return (get("rel"), get("href"))
    return ()


def _hidden(el: Element) -> bool:
    if el.has_attribute("hidden"):
        return True
    aria = el.get_attribute("aria-hidden")
    if aria is not None and aria.strip().lower() == "true":
        return True
    style = el.get_attribute("style")
    return style is not None and _HIDDEN_STYLE_RE.search(style) is not None


# ---------------------------------------------------------------------------- metadata


@dataclass
class MarkdownDocument:
    """What :func:`htmlstream.markdown` returns with ``metadata=True``: the Markdown and the
    page's metadata (each ``None`` when the page does not say).

    Attributes:
        markdown: the Markdown.
        title: ``<title>`` (else ``og:title``).
        byline: the author: ``<meta name="author">`` (else ``article:author``, ``og:author``,
            the text of the first ``[rel=author]``/``[itemprop=author]`` link).
        language: ``<html lang>`` (else ``<meta http-equiv="content-language">``).
        description: ``<meta name="description">`` (else ``og:description``).
        url: the base URL links were resolved against (``base_url``, or ``<base href>``).
    """

    markdown: str
    title: str | None = None
    byline: str | None = None
    language: str | None = None
    description: str | None = None
    url: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        """The record as a dict (``markdown`` last)."""
        return {"url": self.url, "title": self.title, "byline": self.byline,
                "language": self.language, "description": self.description,
                "markdown": self.markdown}


@dataclass
class _Meta:
    title: list[str] | None = None
    title_done: bool = False
    og_title: str | None = None
    author: str | None = None
    og_author: str | None = None
    language: str | None = None
    content_language: str | None = None
    description: str | None = None
    og_description: str | None = None
    author_link: list[str] | None = None
    author_link_done: bool = False

    def meta(self, name: str | None, content: str | None, http_equiv: str | None) -> None:
        if content is None:
            return
        content = " ".join(content.split())
        if http_equiv is not None and http_equiv.strip().lower() == "content-language":
            self.content_language = self.content_language or content
        if name is None:
            return
        key = name.strip().lower()
        if key == "description":
            self.description = self.description or content
        elif key == "og:description":
            self.og_description = self.og_description or content
        elif key == "author":
            self.author = self.author or content
        elif key in ("article:author", "og:author", "dc.creator", "byl"):
            self.og_author = self.og_author or content
        elif key == "og:title":
            self.og_title = self.og_title or content

    def document(self, md: str, url: str | None) -> MarkdownDocument:
        title = " ".join("".join(self.title).split()) if self.title else None
        link_author = " ".join("".join(self.author_link).split()) if self.author_link else None
        return MarkdownDocument(
            md, title or self.og_title or None,
            self.author or self.og_author or link_author or None,
            self.language or self.content_language or None,
            self.description or self.og_description or None, url)


# ---------------------------------------------------------------------------- the writer


class _Container:
    """A block quote or list item: the prefix of its first line and of the others."""

    __slots__ = ("cont", "first", "started")

    def __init__(self, first: str, cont: str) -> None:
        self.first = first
        self.cont = cont
        self.started = False


class _Mark:
    """An inline mark (emphasis or link): written when its first content comes, closed where
    it ends, and closed and opened again around a paragraph break."""

    __slots__ = ("close", "emitted", "open", "tag")

    def __init__(self, tag: str, open_: str, close: str) -> None:
        self.tag = tag
        self.open = open_
        self.close = close
        self.emitted = False


class _List:
    __slots__ = ("bullet", "number", "ordered", "serial")

    def __init__(self, ordered: bool, number: int, bullet: str, serial: int) -> None:
        self.serial = serial
        self.ordered = ordered
        self.number = number
        self.bullet = bullet


class _Writer:
    """Markdown from events (see the module documentation); ``out`` collects what it wrote."""

    def __init__(self, options: _Options, meta: _Meta | None, *, cell: bool = False) -> None:
        self.opt = options
        self.meta = meta
        self.out: list[str] = []
        self.base = options.base_url
        self.containers: list[_Container] = []
        self.marks: list[_Mark] = []
        self.lists: list[_List] = []
        self.list_after: tuple[int, int, bool, int] | None = None
        self.started = False          # anything written yet
        self.pb = 0                   # pending break: 1 a new line, 2 a blank line
        self.hard = False             # pending hard line break
        self.space = False            # pending space
        self.line = 0                 # 0: at a line's start, 1: only digits on it, 2: other
        self.prev = " "               # the last text character written (for '_')
        self.carry = ""               # a text character whose escaping waits for the next
        self.pclose = ""              # closing delimiters not yet written (merged if reopened)
        self.inline = 1 if cell else 0  # inside a heading or a cell: no line breaks
        self.cell = cell
        self.heading: tuple[int, int] | None = None  # (level, len(out) at its start)
        self.skip = 0                 # depth inside a left-out element
        self.title = 0
        self.pre: list[str] | None = None
        self.pre_len = 0
        self.pre_lang = ""
        self.pre_depth = 0
        self.pre_first = False
        self.pre_stream: str | None = None   # the fence, once a long <pre> streams
        self.pre_line = ""
        self.pre_midline = False
        self.code: list[str] | None = None
        self.code_len = 0
        self.code_depth = 0
        self.table: list[Event] | None = None
        self.table_depth = 0
        self.table_len = 0
        self.flat_tables = 0
        self.refs: dict[tuple[str, str | None], int] = {}
        self.urls: dict[str, str] = {}
        self.author_depth = 0
        self.head = False
        self.hide_void = False
        self.based = False
        self.nwrites = 0
        self.code_tag = ""
        # main_content: the landmark level and boilerplate depth open, and what the text
        # of the current segment had (see _Main)
        self.main: _Main | None = None
        self.land = [0]
        self.boiler = 0
        self.seg_text = 0
        self.seg_link = 0
        self.seg_land = 0
        self.seg_boiler = 0
        self.seg_cboiler = 0
        self.seg_heading = False

    # -- output primitives

    def _prefix(self, first_line: bool) -> str:
        parts = []
        for c in self.containers:
            if not c.started and first_line:
                parts.append(c.first)
                c.started = True
            else:
                parts.append(c.cont)
        return "".join(parts)

    def _blank_prefix(self) -> str:
        return "".join(c.cont for c in self.containers if c.started).rstrip()

    def _flush_close(self) -> None:
        if self.pclose:
            self.out.append(self.pclose)
            self.pclose = ""

    def _content(self) -> None:
        """Write what must come before content: breaks, prefixes, a space, opening marks."""
        out = self.out
        if self.pb:
            self._flush_close()
            if self.started:
                out.append("\n" + self._blank_prefix() + "\n" if self.pb == 2 else "\n")
            out.append(self._prefix(True))
            self.pb = 0
            self.hard = False
            self.space = False
            self.line = 0
            self.prev = " "
        elif self.hard:
            self._flush_close()
            out.append("\\\n" + self._prefix(True))
            self.hard = False
            self.space = False
            self.line = 0
            self.prev = " "
        elif not self.started:
            out.append(self._prefix(True))
        self.started = True
        self.nwrites += 1
        if self.space:
            self._flush_close()
            if self.line:
                out.append(" ")
                self.prev = " "
            self.space = False
        marks = self.marks
        if marks and not marks[-1].emitted:
            for m in marks:
                if not m.emitted:
                    m.emitted = True
                    if not m.open:
                        continue
                    if self.pclose and self.pclose == m.open and m.open[0] in "*~":
                        self.pclose = ""     # (**a****b** reads badly: **ab**)
                        continue
                    self._flush_close()
                    out.append(m.open)
                    self.line = 2
                    self.prev = " "
        self._flush_close()

    def _break(self, level: int) -> None:
        """A paragraph break (2) or a new line (1) before what comes next."""
        if self.inline:
            self.space = True
            return
        if self.marks and any(m.tag == "dd" for m in self.marks):
            self.marks = [m for m in self.marks if m.tag != "dd"]
        self._close_marks()
        if self.main is not None and self.out:
            self.main.cut(self)
        if level > self.pb:
            self.pb = level
        self.hard = False

    def _close_marks(self) -> None:
        """Close the open marks that were written (they open again at the next content)."""
        for m in reversed(self.marks):
            if m.emitted:
                self.pclose += m.close
                m.emitted = False
        self._flush_close()

    # -- text

    def text(self, s: str, final: bool) -> None:
        if self.skip:
            return
        if self.table is not None:
            self.table.append((TEXT, s, final))
            self.table_len += len(s)
            if self.table_len > self.opt.max_table_chars:
                self._table_overflow()
            return
        if self.title:
            if self.meta is not None and self.meta.title is not None:
                self.meta.title.append(s)
            return
        if self.pre is not None or self.pre_stream is not None:
            self._pre_text(s)
            return
        if self.code is not None:
            self.code.append(s)
            self.code_len += len(s)
            if self.code_len > MAX_CODE_CHARS:
                self._code_overflow()
            return
        if self.author_depth and self.meta is not None and self.meta.author_link is not None:
            self.meta.author_link.append(s)
        if self.carry:
            s = self.carry + s
            self.carry = ""
        tail = ""
        if not final and s and s[-1] in "_&":
            self.carry = s[-1]
            s = s[:-1]
            tail = " "      # (what the held character is to the one before it: no letter)
        if not s:
            return
        if not s.strip(" \t\n\r\f"):      # (whitespace between tags: most text nodes)
            self.space = True
            self.prev = " "
            return
        s = _WS_RE.sub(" ", s)
        core = s.strip(" ")
        if s[0] == " ":
            self.space = True
        if _SPECIAL_RE.search(s) is not None:
            lead = "a" if self.prev.isascii() and self.prev.isalnum() else " "
            esc = _BASIC_RE.sub(r"\\\g<0>", lead + s + tail)
            if "_" in esc:
                esc = _UNDERSCORE_RE.sub(r"\\_", esc)
            if "&" in esc:
                esc = _AMP_RE.sub(r"\\&", esc)
            esc = esc[1:].strip(" ")
        else:
            esc = core
        if self.heading is not None and "#" in esc:
            esc = esc.replace("#", "\\#")
        if self.cell and "|" in esc:
            esc = esc.replace("|", "\\|")
        self._content()
        if self.line != 2:
            esc = self._line_start(esc)
        self.out.append(esc)
        self.prev = s[-1]
        if s[-1] == " ":
            self.space = True
        if self.main is not None:
            self._count(len(core) - core.count(" "))   # (not the spaces: however it came)

    def _count(self, n: int) -> None:
        """main_content: ``n`` characters of text were written (of a link if one is open)."""
        self.seg_text += n
        if self.boiler:
            if self.boiler % 1000:
                self.seg_boiler += n
            else:
                self.seg_cboiler += n
        if self.land[-1] > self.seg_land:
            self.seg_land = self.land[-1]
        if self.heading is not None:
            self.seg_heading = True
        for m in self.marks:
            if m.tag == "a" and m.open:
                self.seg_link += n
                break

    def _line_start(self, esc: str) -> str:
        """Escape what would start a block at a line's start (``esc``: escaped text; the line
        holds nothing yet, or only digits)."""
        if self.line == 0 and esc[0] in _LINE_START:
            self.line = 2
            return "\\" + esc
        m = _DIGITS_RE.match(esc)
        end = m.end() if m is not None else 0
        if end == len(esc):
            self.line = 1
            return esc
        digits = end > 0 or self.line == 1
        self.line = 2
        if digits and esc[end] in ".)":
            return esc[:end] + "\\" + esc[end:]
        return esc

    def _end_text(self) -> None:
        """A text character held for its next one: its next one is not text."""
        if self.carry:
            carry, self.carry = self.carry, ""
            self.text(carry, True)

    # -- elements

    def start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        if self.carry:
            self._end_text()
        if self.table is not None:
            self.table.append((START, tag, attrs))
            self.table_len += 16 + sum(len(a) for a in attrs if a)
            if tag == "table":
                self.table_depth += 1
            if self.table_len > self.opt.max_table_chars:
                self._table_overflow()
            return
        if self.pre is not None or self.pre_stream is not None:
            self.pre_first = False
            if tag == "pre":
                self.pre_depth += 1
            elif tag == "br":
                self._pre_text("\n")
            elif tag == "code" and not self.pre_lang:
                self.pre_lang = _language(attrs[0])
            return
        if self.code is not None:
            if tag == self.code_tag:
                self.code_depth += 1
            elif tag == "br":
                self.code.append(" ")
            elif tag == "a" or tag == "img":
                # (a link in code: `code`[`text`](url)`code`)
                self._code_flush()
                _STARTS[tag](self, tag, attrs)
            return
        handler = _STARTS.get(tag)
        if handler is not None:
            handler(self, tag, attrs)
        elif tag in BLOCKS:
            self._break(2)

    def end(self, tag: str) -> None:
        if self.carry:
            self._end_text()
        if self.table is not None:
            if tag == "table":
                self.table_depth -= 1
                if self.table_depth == 0:
                    events, self.table = self.table, None
                    self._table(events)
                    return
            self.table.append((END, tag))
            return
        if self.pre is not None or self.pre_stream is not None:
            if tag == "pre":
                self.pre_depth -= 1
                if self.pre_depth == 0:
                    self._pre_end()
            return
        if self.code is not None:
            if tag == self.code_tag:
                self.code_depth -= 1
                if self.code_depth == 0:
                    self._code_flush()
                    self.code = None
            elif tag == "a":
                self._code_flush()
                self._close_mark(tag)
            return
        handler = _ENDS.get(tag)
        if handler is not None:
            handler(self, tag)
        elif tag in BLOCKS:
            self._break(2)

    # -- blocks

    def _heading_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        if self.inline:
            self.inline += 1
            return
        self._break(2)
        level = _HEADINGS[tag]
        if self.opt.heading_style == "atx" or level > 2:
            self.marks.insert(0, _Mark("#", "#" * level + " ", ""))
        self.heading = (level, self.nwrites)
        self.inline += 1

    def _heading_end(self, tag: str) -> None:
        self.inline -= 1
        if self.inline or self.heading is None:
            return
        level, writes = self.heading
        self.heading = None
        self._close_marks()
        if self.marks and self.marks[0].tag == "#":
            del self.marks[0]
        elif self.nwrites != writes:
            self.out.append("\n" + self._prefix(False) + ("===" if level == 1 else "---"))
        self._break(2)

    def _block_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        self._break(2)

    def _blockquote_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        self._break(2)
        if not self.inline:
            self.containers.append(_Container("> ", "> "))

    def _blockquote_end(self, tag: str) -> None:
        self._break(2)
        if not self.inline and self.containers:
            self.containers.pop()

    def _list_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        ordered = tag == "ol"
        number = 1
        if ordered and attrs and attrs[0] is not None:
            try:
                number = max(0, min(int(attrs[0].strip()), 999_999_999))
            except ValueError:
                number = 1
        # (a list in a list item follows its text on the next line; an ordered one not
        # starting at 1 cannot interrupt a paragraph: a blank line)
        nested = bool(self.lists) and bool(self.containers) and number == 1
        self._break(1 if nested else 2)
        # (a list right after another at the same depth takes the other bullet, or the two
        # would be one list)
        depth = len(self.containers)
        serial = 0
        if self.list_after is not None and \
                self.list_after[:3] == (depth, self.nwrites, ordered):
            serial = self.list_after[3] + 1
        bullet = ("." if serial % 2 == 0 else ")") if ordered else \
            ("-" if serial % 2 == 0 else "*")
        self.lists.append(_List(ordered, number, bullet, serial))

    def _list_end(self, tag: str) -> None:
        if self.lists:
            lst = self.lists.pop()
            self.list_after = (len(self.containers), self.nwrites, lst.ordered, lst.serial)
        self._break(1 if self.lists else 2)

    def _li_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        if self.inline:
            self.space = True
            self.containers.append(_Container("", ""))
            return
        self._break(1)
        if self.lists:
            lst = self.lists[-1]
            if lst.ordered:
                marker = f"{lst.number}{lst.bullet} "
                lst.number += 1
            else:
                marker = lst.bullet + " "
        else:
            marker = "- "
        self.containers.append(_Container(marker, " " * len(marker)))

    def _li_end(self, tag: str) -> None:
        if not self.containers:
            return
        if not self.containers[-1].started and not self.inline:
            self._content()         # (an empty item: its marker alone)
        self.containers.pop()
        self._break(1)

    def _dt_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        self._break(2)
        self.marks.append(_Mark("dt", "**", "**"))

    def _dt_end(self, tag: str) -> None:
        self._close_mark("dt")
        self._break(1)

    def _dd_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        self._break(1)
        if not self.inline:
            # (": " before the definition's first line, when that is text: a block in it
            # drops the mark, see _break)
            self.marks.append(_Mark("dd", ": ", ""))

    def _dd_end(self, tag: str) -> None:
        self._break(1)

    def _hr(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        if self.inline:
            self.space = True
            return
        self._break(2)
        # ("- ---" and "* ***" would be one thematic break, not a list item holding one)
        first = bool(self.containers) and not self.containers[-1].started
        self._content()
        self.out.append("___" if first else "---")
        self.line = 2
        self._break(2)

    def _br(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        if self.inline:
            self.space = True
        elif self.hard:
            self._break(2)
        elif self.started and not self.pb:
            self.hard = True
            self.space = False

    def _pre_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        if self.inline:
            self._code_start("code", attrs)
            return
        self._break(2)
        self.pre = []
        self.pre_len = 0
        self.pre_depth = 1
        self.pre_lang = _language(attrs[0])
        self.pre_first = True

    def _pre_text(self, s: str) -> None:
        if self.pre_first:
            self.pre_first = False
            if s.startswith("\n"):
                s = s[1:]
        if self.pre_stream is not None:
            self._pre_stream_text(s)
            return
        assert self.pre is not None
        self.pre.append(s)
        self.pre_len += len(s)
        if self.pre_len > MAX_PRE_CHARS:
            # (the fence from the first MAX_PRE_CHARS characters, however they came)
            text = "".join(self.pre)
            self.pre = None
            fence = _fence(text[:MAX_PRE_CHARS])
            self._content()
            self.out.append(fence + self.pre_lang + "\n" + self._prefix(False))
            self.pre_stream = fence
            self.pre_line = ""
            self._pre_stream_text(text)

    def _pre_stream_text(self, s: str) -> None:
        fence = self.pre_stream
        assert fence is not None
        lines = (self.pre_line + s).split("\n")
        self.pre_line = lines.pop()
        prefix = "\n" + self._prefix(False)
        for line in lines:
            if self.pre_midline:
                self.pre_midline = False
                self.out.append(line + prefix)
            else:
                self.out.append(_unfence(line, fence) + prefix)
        tail = self.pre_line
        if len(tail) > 64 and (self.pre_midline or not _could_fence(tail, fence)):
            self.out.append(tail)     # (it cannot be a fence: no need to hold it)
            self.pre_line = ""
            self.pre_midline = True

    def _pre_end(self) -> None:
        if self.pre_stream is not None:
            fence = self.pre_stream
            self.pre_stream = None
            tail = self.pre_line
            self.pre_line = ""
            if tail or self.pre_midline:
                if not self.pre_midline:
                    tail = _unfence(tail, fence)
                self.out.append(tail + "\n" + self._prefix(False))
            self.pre_midline = False
            self.out.append(fence)
            self.line = 2
            self._break(2)
            return
        assert self.pre is not None
        text = "".join(self.pre)
        self.pre = None
        if text.endswith("\n"):
            text = text[:-1]
        if not text:
            self._break(2)
            return
        fence = _fence(text)
        self._content()
        prefix = self._prefix(False)
        blank = prefix.rstrip()
        lines = [prefix + line if line else blank for line in text.split("\n")]
        if self.main is not None:
            self._count(len(text) - text.count(" ") - text.count("\n"))
        self.out.append(fence + self.pre_lang + "\n" + "\n".join(lines) + "\n" + prefix + fence)
        self.line = 2
        self._break(2)

    def _code_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        self.code_tag = "pre" if tag == "pre" else tag
        self.code = []
        self.code_len = 0
        self.code_depth = 1

    def _code_overflow(self) -> None:
        code = self.code or []
        self.code = None
        self.code_depth = 0
        # (what is left of the element is ordinary text; its end is then ignored)
        self.text("".join(code), False)

    def _code_flush(self) -> None:
        """Write the code span held (and hold the next)."""
        assert self.code is not None
        text = _WS_RE.sub(" ", "".join(self.code))
        self.code = []
        self.code_len = 0
        core = text.strip(" ")
        if text.startswith(" "):
            self.space = True
        if core:
            runs = _BACKTICKS_RE.findall(core)
            ticks = "`" * (max(map(len, runs)) + 1 if runs else 1)
            pad = " " if core[0] == "`" or core[-1] == "`" else ""
            if self.cell:
                core = core.replace("|", "\\|")
            if self.prev == "`" and not self.space and self.line and \
                    not (self.marks and not self.marks[-1].emitted):
                self.space = True       # (two spans in a row would read as one)
            self._content()
            self.out.append(ticks + pad + core + pad + ticks)
            if self.main is not None:
                self._count(len(core) - core.count(" "))
            self.line = 2
            self.prev = "`"
        if text.endswith(" "):
            self.space = True

    # -- inline marks

    def _emphasis_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        delim = _EMPHASIS[tag]
        for m in self.marks:
            if m.open == delim:          # (already inside: no second one)
                self.marks.append(_Mark(tag, "", ""))
                return
        self.marks.append(_Mark(tag, delim, delim))

    def _mark_end(self, tag: str) -> None:
        self._close_mark(tag)

    def _close_mark(self, tag: str) -> None:
        marks = self.marks
        for i in range(len(marks) - 1, -1, -1):
            if marks[i].tag == tag:
                break
        else:
            return
        for m in reversed(marks[i + 1:]):
            if m.emitted:
                self.pclose += m.close
                m.emitted = False
        m = marks.pop(i)
        if m.emitted:
            if m.close[:1] in ("*", "~"):
                self.pclose += m.close
            else:
                self._flush_close()
                self.out.append(m.close)
                self.line = 2
                self.prev = ")"

    def _url(self, url: str | None) -> str | None:
        if url is None:
            return None
        url = url.strip(" \t\n\r\f")
        if not url:
            return None
        if not self.base or url.startswith(("https://", "http://")):
            return url
        resolved = self.urls.get(url)
        if resolved is None:
            try:
                resolved = urljoin(self.base, url)
            except ValueError:
                resolved = url
            if len(self.urls) < 4096:      # (a page's relative URLs repeat: menus, footers)
                self.urls[url] = resolved
        return resolved

    def _destination(self, url: str, title: str | None) -> str:
        """``(url "title")`` or, with ``links="reference"``, ``[n]``."""
        if self.opt.links == "reference":
            n = self.refs.setdefault((url, title), len(self.refs) + 1)
            return f"[{n}]"
        return "(" + _dest(url) + _title(title) + ")"

    def _a_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        url = self._url(attrs[0])
        if url is None or url[:11].lower().startswith("javascript:"):
            self.marks.append(_Mark("a", "", ""))
            return
        self.marks.append(_Mark("a", "[", "]" + self._destination(url, attrs[1])))

    def _img(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        src, alt, title = attrs
        alt_text = " ".join(alt.split()) if alt else ""
        if not self.opt.images:
            if alt_text and any(m.tag == "a" and m.open for m in self.marks):
                self.text(alt_text, True)
            return
        url = self._url(src)
        if url is None or url[:5].lower() == "data:":
            return
        esc = _BASIC_RE.sub(r"\\\g<0>", alt_text)
        esc = _UNDERSCORE_RE.sub(r"\\_", esc)
        esc = _AMP_RE.sub(r"\\&", esc)
        if self.cell:
            esc = esc.replace("|", "\\|")
        self._content()
        self.out.append("![" + esc + "]" + self._destination(url, title))
        self.line = 2
        self.prev = ")"

    # -- head and metadata

    def _skip_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        self.skip += 1

    def _title_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        self.title += 1
        if self.meta is not None and self.meta.title is None:
            self.meta.title = []

    def _title_end(self, tag: str) -> None:
        self.title -= 1

    def _meta(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        if self.meta is not None:
            self.meta.meta(*attrs)

    def _base(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        href = attrs[0]
        if href and not self.based:
            self.based = True
            self.urls.clear()
            self.base = urljoin(self.base, href.strip()) if self.base else href.strip()

    def _html(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        if self.meta is not None and attrs and attrs[0] and self.meta.language is None:
            self.meta.language = attrs[0].strip() or None

    # -- tables

    def _table_start(self, tag: str, attrs: tuple[str | None, ...]) -> None:
        if self.flat_tables or self.inline:
            self.flat_tables += 1
            self._break(2)
            return
        self._break(2)
        self.table = []
        self.table_depth = 1
        self.table_len = 0

    def _table_end(self, tag: str) -> None:
        if self.flat_tables:
            self.flat_tables -= 1
        self._break(2)

    def _table_overflow(self) -> None:
        """The table is too long to hold: what was held is written as readable text, and the
        rest streams as it comes."""
        events = self.table or []
        self.table = None
        # (the outer table is open: its end comes as an ordinary end, counted here; the
        # tables open inside it count themselves as their starts are replayed)
        self.flat_tables += 1
        self._replay(events)

    def _replay(self, events: list[Event]) -> None:
        for ev in events:
            if ev[0] == TEXT:
                self.text(ev[1], ev[2])
            elif ev[0] == START:
                self.start(ev[1], ev[2])
            else:
                self.end(ev[1])

    def _table(self, events: list[Event]) -> None:
        rows = _table_rows(events)
        if rows is None:
            self.flat_tables += 1
            self._replay(events)
            self.flat_tables -= 1
            self._break(2)
            return
        caption, cells = rows
        if caption:
            self.flat_tables += 1
            self._replay(caption)
            self.flat_tables -= 1
            self._break(2)
        rendered: list[list[str]] = []
        for row in cells:
            out_row = []
            for cell_events in row:
                sub = _Writer(self.opt, None, cell=True)
                sub.base = self.base
                sub.refs = self.refs
                sub._replay(cell_events)
                sub._end_text()
                sub._close_marks()
                sub._flush_close()
                md = "".join(sub.out)
                if len(md) > MAX_CELL_CHARS:
                    self.flat_tables += 1
                    self._replay(events)
                    self.flat_tables -= 1
                    self._break(2)
                    return
                out_row.append(md)
            rendered.append(out_row)
        width = max(len(r) for r in rendered)
        if width == 0:
            return
        self._break(2)
        self._content()
        nl = "\n" + self._prefix(False)
        lines = []
        for i, cells_md in enumerate(rendered):
            padded = cells_md + [""] * (width - len(cells_md))
            lines.append("| " + " | ".join(padded) + " |")
            if i == 0:
                lines.append("|" + "---|" * width)
        self.out.append(nl.join(lines))
        if self.main is not None:
            for cells_md in rendered:
                for md in cells_md:
                    self._count(len(md) - md.count(" "))
        self.line = 2
        self._break(2)

    # -- the end

    def close(self) -> None:
        self._end_text()
        if self.pre is not None or self.pre_stream is not None:
            self.pre_depth = 1
            self._pre_end()
        if self.code is not None:
            self._code_flush()
            self.code = None
        if self.table is not None:
            events, self.table = self.table, None
            self._table(events)
        self._close_marks()
        self._flush_close()
        if self.main is not None:
            self.main.cut(self)
            self.main.finish()
            self.out = self.main.ready
            self.started = self.main.any
        if self.refs and self.opt.links == "reference":
            defs = [f"[{n}]: {_dest(url)}{_title(title)}"
                    for (url, title), n in self.refs.items()]
            self.out.append(("\n\n" if self.started else "") + "\n".join(defs))
            self.started = True
        if self.started:
            self.out.append("\n")


#: The most characters of Markdown main_content holds before it decides (see _Main).
MAX_MAIN_CHARS = 1 << 21
#: The least text (characters other than spaces) a landmark or a choice of main content must
#: have to be taken.
MIN_MAIN_TEXT = 200

_BOILER_TAGS = frozenset(["nav", "aside", "footer", "header", "form", "figcaption"])
_BOILER_ROLES = frozenset(["navigation", "banner", "complementary", "contentinfo", "search",
                           "dialog", "menu", "menubar", "alert", "alertdialog"])
_BOILER_RE = re.compile(
    r"(?:^|[\s_-])(?:nav|navbar|navigation|menu|footer|sidebar|side|aside|comments?|share|"
    r"sharing|social|ad|ads|advert\w*|sponsor\w*|promo\w*|related|recommend\w*|"
    r"breadcrumbs?|newsletter|subscribe|subscription|signup|cookies?|banner|popup|modal|"
    r"widget|masthead|toolbar|tags|tag-list|author-bio|bio|byline|dateline|meta|caption|"
    r"credit|disclaimer|paywall|outbrain|taboola|hidden|print|skip|more-stories|"
    r"trending|most-popular|popular|login|overlay|header)(?:$|[\s_-])",
    re.IGNORECASE)
_CONTENT_RE = re.compile(r"article-?body|post-?body|entry-?content|story-?body|"
                         r"article-?content|post-?content|main-?content|articlebody",
                         re.IGNORECASE)
#: What a landmark is worth: [itemprop=articleBody] 3, <article> 2, <main>/[role=main] 1.
_MAIN_SELECTOR = ("div, section, article, main, aside, nav, header, footer, ul, ol, table, "
                  "form, figure, figcaption, [role], [itemprop]")


class _Segment:
    __slots__ = ("boiler", "cboiler", "heading", "land", "link", "md", "text")

    def __init__(self, md: str, text: int, link: int, land: int, boiler: int, cboiler: int,
                 heading: bool) -> None:
        self.md = md
        self.text = text
        self.link = link
        self.land = land
        self.boiler = boiler        # characters of text inside boilerplate by tag or role
        self.cboiler = cboiler      # ... by a class or id name only
        self.heading = heading


class _Main:
    """``main_content=True``: the writer's output cut into segments at paragraph breaks, each
    with what its text was (its length, how much was link text, the landmark around it, how
    much was inside boilerplate); held (at most MAX_MAIN_CHARS characters) and chosen at the
    end, or when the buffer is full.

    The choice: where the page has landmarks with text (``[itemprop=articleBody]``, else
    ``<article>``, else ``<main>``/``[role=main]``, whichever is the most specific with
    :data:`MIN_MAIN_TEXT` characters of text or more, spaces aside), the segments inside
    them, less boilerplate and link lists.
    Otherwise the segments whose text is long and not links (80 characters or more, a link
    density under 0.3), the short ones between two such, and headings before one; boilerplate
    (``<nav>``, ``<aside>``, ``<header>``, ``<footer>``, ``<form>``, navigation roles, and
    class or id names such as nav, menu, sidebar, comment, share, social, ad, related,
    breadcrumb, newsletter, cookie) never.
    """

    def __init__(self) -> None:
        self.segments: list[_Segment] = []
        self.held = 0
        self.ready: list[str] = []
        self.any = False

    def cut(self, w: _Writer) -> None:
        md = "".join(w.out)
        w.out.clear()
        if md:
            self.segments.append(_Segment(md, w.seg_text, w.seg_link, w.seg_land,
                                          w.seg_boiler, w.seg_cboiler, w.seg_heading))
            self.held += len(md)
        w.seg_text = w.seg_link = w.seg_land = w.seg_boiler = w.seg_cboiler = 0
        w.seg_heading = False
        if self.held > MAX_MAIN_CHARS:
            self.finish()

    def _emit(self, md: str) -> None:
        if not self.any:
            md = md.lstrip("\n")
            if not md:
                return
            self.any = True
        self.ready.append(md)

    def finish(self) -> None:
        segments, self.segments = self.segments, []
        self.held = 0
        # (the boilerplate hints, then the tags' and roles' alone, then none, until the
        # choice has some text: a page inside a <form>, or whose wrapper's class is "side")
        for hints in (2, 1, 0):
            keep = _choose(segments, hints, MIN_MAIN_TEXT)
            if sum(seg.text for seg, k in zip(segments, keep, strict=True) if k) >= MIN_MAIN_TEXT:
                break
        else:
            # (a short page: its landmark whatever its length, else all but boilerplate)
            keep = _choose(segments, 2, 1)
            if not any(keep):
                keep = [seg.text > 0 and not _boiler(seg, 2) for seg in segments]
        for seg, k in zip(segments, keep, strict=True):
            if k:
                self._emit(seg.md)


def _boiler(seg: _Segment, hints: int) -> bool:
    boiler = seg.boiler + seg.cboiler if hints == 2 else seg.boiler if hints else 0
    return boiler * 2 > seg.text if seg.text else boiler > 0


def _choose(segments: list[_Segment], hints: int, min_text: int) -> list[bool]:
    """Which segments are main content (``hints``: 2 boilerplate hints of tags, roles and
    names count, 1 of tags and roles, 0 none)."""
    text_by_level = [0, 0, 0, 0]
    for seg in segments:
        if seg.land and not _boiler(seg, hints):
            for level in range(1, seg.land + 1):
                text_by_level[level] += seg.text
    best = 0
    for level in (3, 2, 1):
        if text_by_level[level] >= min_text:
            best = level
            break
    n = len(segments)
    keep = [False] * n
    cls = [_classify(seg, hints) for seg in segments]
    if best:
        # (the landmark's segments from its first paragraph of content to its last: not the
        # title, byline and date before, nor the bio and links after)
        inside = [i for i, seg in enumerate(segments) if seg.land >= best]
        good = [i for i in inside if cls[i] == 2]
        if not good:
            for i in inside:
                keep[i] = cls[i] != 0
            return keep
        for i in inside:
            keep[i] = cls[i] == 2 or (cls[i] == 1 and good[0] < i < good[-1])
        return keep
    for i in range(n):
        if cls[i] == 2:
            keep[i] = True
        elif cls[i] == 1:
            before = next((cls[j] for j in range(i - 1, -1, -1) if cls[j] != 1), 0)
            after = next((cls[j] for j in range(i + 1, n) if cls[j] != 1), 0)
            keep[i] = after == 2 and (before == 2 or segments[i].heading)
    return keep


_SHORT_BOILER_RE = re.compile(
    r"\W*(advertisement|advertising|sponsored|ad|share( this)?|print|email|tweet|"
    r"newsletter|subscribe|sign up|follow us|related|read more|more|comments?|trending|"
    r"trending news|recommended|most popular|photo|video|image|click here|loading)\W*",
    re.IGNORECASE)


def _classify(seg: _Segment, hints: int) -> int:
    """0: boilerplate, 1: uncertain (short), 2: content."""
    if _boiler(seg, hints) or not seg.text or seg.link > 0.5 * seg.text:
        return 0
    if seg.text < 40 and hints and _SHORT_BOILER_RE.fullmatch(_plain(seg.md)):
        return 0
    if seg.text >= 80 and seg.link < 0.3 * seg.text:
        return 2
    return 1


def _plain(md: str) -> str:
    return " ".join(_MD_SYNTAX_RE.sub(" ", md).split())


_MD_SYNTAX_RE = re.compile(r"\]\([^)]*\)|[\\*_#>\[\]`~|-]+")


def _main_element(el: Element) -> None:
    writer: _Writer = el.context.writer      # type: ignore[attr-defined]
    if writer.skip or not el.can_have_content:
        return
    tag = el.tag_name
    if tag == "body" or tag == "html":
        return      # (their classes describe the page: "menu-open", "has-sidebar")
    level = 0
    if tag == "main":
        level = 1
    elif tag == "article":
        level = 2
    role = el.get_attribute("role")
    if role is not None:
        role = role.strip().lower()
        if role == "main":
            level = max(level, 1)
    itemprop = el.get_attribute("itemprop")
    if itemprop is not None and "articlebody" in itemprop.lower():
        level = 3
    names = " ".join(filter(None, (el.get_attribute("class"), el.get_attribute("id"))))
    if level == 0 and names and _CONTENT_RE.search(names) is not None:
        level = 3
    # (boiler: 1 by tag or role, 1000 by a class or id name: the weaker hint, dropped when
    # taking it leaves too little text)
    boiler = 1 if tag in _BOILER_TAGS or (role is not None and role in _BOILER_ROLES) else \
        1000 if level == 0 and names and _BOILER_RE.search(names) is not None else 0
    if level:
        writer.land.append(max(level, writer.land[-1]))
    writer.boiler += boiler
    if level or boiler:
        el.on_end_tag(functools.partial(_main_end, level > 0, boiler))


def _main_end(level: bool, boiler: int, end: EndTag) -> None:
    w = end.context.writer                  # type: ignore[attr-defined]
    if level:
        w.land.pop()
    w.boiler -= boiler


def _language(cls: str | None) -> str:
    if not cls:
        return ""
    m = _LANG_RE.search(cls)
    return m.group(1) if m is not None else ""


def _fence(text: str) -> str:
    runs = _BACKTICKS_RE.findall(text)
    return "`" * max(3, max(map(len, runs)) + 1 if runs else 3)


def _unfence(line: str, fence: str) -> str:
    """A line of a streaming ``<pre>``: indented by four spaces if it would close the fence."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) <= 3 and stripped.startswith(fence) and \
            not stripped.strip("`").strip():
        return "    " + line
    return line


def _could_fence(line: str, fence: str) -> bool:
    """Whether the start of a line could still turn out to close the fence."""
    stripped = line.lstrip(" ")
    return len(line) - len(stripped) <= 3 and not stripped.strip("`")


def _dest(url: str) -> str:
    """A link destination: spaces, controls and ``<>`` percent-encoded, parentheses and
    backslashes escaped."""
    if _DEST_OK.fullmatch(url) is not None:
        return url
    out = []
    for ch in url:
        o = ord(ch)
        if o <= 0x20 or ch in "<>" or o == 0x7F:
            out.append(f"%{o:02X}")
        elif ch in "()\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _title(title: str | None) -> str:
    if not title:
        return ""
    t = " ".join(title.split())
    if not t:
        return ""
    return ' "' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _span(value: str | None) -> int:
    if value is None:
        return 1
    try:
        return int(value.strip() or "1")
    except ValueError:
        return 1


_CELL_BLOCKS = frozenset(["ul", "ol", "menu", "dir", "pre", "blockquote", "table", "h1", "h2",
                          "h3", "h4", "h5", "h6", "hr", "dl", "li"])


def _table_rows(events: list[Event]) -> tuple[list[Event], list[list[list[Event]]]] | None:
    """A held table's caption events and its rows of cells' events, or None when it is not a
    simple table (merged cells, blocks in cells, a nested table, text outside cells)."""
    caption: list[Event] = []
    rows: list[list[list[Event]]] = []
    cell: list[Event] | None = None
    in_caption = 0
    depth = 0       # depth of elements inside the current cell
    for ev in events:
        kind = ev[0]
        if cell is not None:
            if kind == START:
                if ev[1] in _CELL_BLOCKS:
                    return None
                if ev[1] not in _VOID:
                    depth += 1
            elif kind == END:
                if depth == 0:
                    cell = None
                    continue
                depth -= 1
            cell.append(ev)
            continue
        if in_caption:
            if kind == START and ev[1] == "caption":
                in_caption += 1
            elif kind == END and ev[1] == "caption":
                in_caption -= 1
                if not in_caption:
                    continue
            caption.append(ev)
            continue
        if kind == START:
            tag = ev[1]
            if tag in ("td", "th"):
                if _span(ev[2][0]) != 1 or _span(ev[2][1]) != 1:
                    return None
                if not rows:
                    rows.append([])
                cell = []
                rows[-1].append(cell)
                depth = 0
            elif tag == "tr":
                rows.append([])
            elif tag == "caption":
                in_caption = 1
            elif tag not in ("thead", "tbody", "tfoot", "colgroup", "col"):
                return None
        elif kind == TEXT and ev[1].strip(" \t\n\r\f"):
            return None
    rows = [r for r in rows if r]
    if not rows:
        return None
    return caption, rows


_Start = Callable[[_Writer, str, tuple[str | None, ...]], None]
_End = Callable[[_Writer, str], None]
_STARTS: dict[str, _Start] = {
    "a": _Writer._a_start, "img": _Writer._img, "br": _Writer._br, "hr": _Writer._hr,
    "pre": _Writer._pre_start, "blockquote": _Writer._blockquote_start,
    "li": _Writer._li_start, "dt": _Writer._dt_start, "dd": _Writer._dd_start,
    "dl": _Writer._block_start, "table": _Writer._table_start, "title": _Writer._title_start,
    "meta": _Writer._meta, "base": _Writer._base, "html": _Writer._html,
}
_ENDS: dict[str, _End] = {
    "a": _Writer._mark_end, "blockquote": _Writer._blockquote_end, "li": _Writer._li_end,
    "dt": _Writer._dt_end, "dd": _Writer._dd_end, "dl": lambda w, t: w._break(2),
    "table": _Writer._table_end, "title": _Writer._title_end,
}
for _tag in _HEADINGS:
    _STARTS[_tag] = _Writer._heading_start
    _ENDS[_tag] = _Writer._heading_end
for _tag in _LISTS:
    _STARTS[_tag] = _Writer._list_start
    _ENDS[_tag] = _Writer._list_end
for _tag in _EMPHASIS:
    _STARTS[_tag] = _Writer._emphasis_start
    _ENDS[_tag] = _Writer._mark_end
for _tag in _CODE:
    _STARTS[_tag] = _Writer._code_start
for _tag in ("tr", "td", "th", "thead", "tbody", "tfoot", "caption"):
    _STARTS[_tag] = _Writer._block_start
    _ENDS[_tag] = lambda w, t: w._break(2)
del _tag


# ---------------------------------------------------------------------------- the converter


@dataclass(frozen=True)
class _Options:
    base_url: str | None = None
    links: LinkStyle = "inline"
    images: bool = True
    heading_style: HeadingStyle = "atx"
    max_table_chars: int = MAX_TABLE_CHARS
    main_content: bool = False


class _Document(dict[str, Any]):
    """One document's state; also the stream's context."""

    def __init__(self, writer: _Writer) -> None:
        super().__init__()
        self.writer = writer


def _element(el: Element) -> None:
    writer: _Writer = el.context.writer      # type: ignore[attr-defined]
    if writer.skip:
        return
    if writer.hide_void:
        writer.hide_void = False
        return
    tag = el.tag_name
    if tag in SKIP:
        if tag == "head":
            # (its content is left out, but for the title and the metadata)
            writer.head = True
            el.on_end_tag(_end_head)
        elif tag == "dialog" and el.has_attribute("open"):
            writer.start("div", ())
            el.on_end_tag(_end_div)
        elif el.can_have_content:
            writer.skip += 1
            el.on_end_tag(_end_skip)
        return
    writer.start(tag, _attrs(el, tag))
    if el.can_have_content and tag not in _VOID:
        el.on_end_tag(_end)


def _end(end: EndTag) -> None:
    end.context.writer.end(end.name)       # type: ignore[attr-defined]


def _end_div(end: EndTag) -> None:
    end.context.writer.end("div")          # type: ignore[attr-defined]


def _end_head(end: EndTag) -> None:
    end.context.writer.head = False        # type: ignore[attr-defined]


def _end_skip(end: EndTag) -> None:
    end.context.writer.skip -= 1           # type: ignore[attr-defined]


def _author_element(el: Element) -> None:
    writer: _Writer = el.context.writer      # type: ignore[attr-defined]
    meta = writer.meta
    if meta is None or meta.author_link_done or writer.skip or el.inside("head"):
        return
    meta.author_link_done = True
    meta.author_link = []
    writer.author_depth += 1
    if el.can_have_content:
        el.on_end_tag(_author_end)


def _author_end(end: EndTag) -> None:
    end.context.writer.author_depth -= 1   # type: ignore[attr-defined]


def _text(chunk: TextChunk) -> None:
    writer: _Writer = chunk.context.writer   # type: ignore[attr-defined]
    if writer.skip:
        return
    tt = chunk.text_type
    if tt != TextType.DATA:
        if (tt == TextType.RCDATA and writer.title) or tt == TextType.PLAINTEXT:
            writer.text(chunk.text, chunk.last_in_text_node)
        return
    if writer.head:
        return
    writer.text(chunk.text, chunk.last_in_text_node)


_SELECTOR = ", ".join(sorted(ELEMENTS | {"dialog"}))


def _rewriter(encoding: str, adjust: bool, main: bool) -> Rewriter:
    rw = Rewriter(encoding=encoding, adjust_charset_on_meta_tag=adjust, transcode=True)
    # (in this order: a hidden element is skipped before _element sees it)
    # (the selector narrows it down in the engine; _hidden decides)
    rw.on("[hidden], [aria-hidden=true i], [style*=none i], [style*=hidden i]",
          element=_hidden_element)
    if main:
        rw.on(_MAIN_SELECTOR, element=_main_element)
    rw.on("[rel~=author], [itemprop~=author]", element=_author_element)
    rw.on(_SELECTOR, element=_element)
    rw.on_document(text=_text)
    return rw


def _hidden_element(el: Element) -> None:
    writer: _Writer = el.context.writer      # type: ignore[attr-defined]
    if not writer.skip and _hidden(el):
        if el.can_have_content:
            writer.skip += 1
            el.on_end_tag(_end_skip)
        else:
            writer.hide_void = True     # (for _element, which runs next on it)


_REWRITERS: dict[tuple[str, bool, bool], Rewriter] = {}


def _shared_rewriter(encoding: str, adjust: bool, main: bool) -> Rewriter:
    key = (encoding, adjust, main)
    rw = _REWRITERS.get(key)
    if rw is None:
        rw = _REWRITERS[key] = _rewriter(encoding, adjust, main)
    return rw


class MarkdownConverter:
    """HTML to Markdown without I/O: ``feed(bytes) -> str`` returns the Markdown already
    decided, ``close() -> str`` the rest; :attr:`document` (after ``close``) has the metadata.

    Args:
        base_url: relative link and image URLs are resolved against it (and the document's
            ``<base href>``).
        links: ``"inline"`` or ``"reference"`` (definitions at the end).
        images: write images (``False``: left out).
        heading_style: ``"atx"`` or ``"setext"``.
        main_content: only the page's main content (docs/guide/markdown.md says how it is
            chosen); the Markdown is then held until the end of the document, or until
            :data:`MAX_MAIN_CHARS` characters of it are held.
        encoding: the document's encoding when known (an HTTP charset); by default UTF-8 until
            a ``<meta charset>`` or byte order mark says otherwise.
        max_table_chars: the most characters of one table held to choose its form (see the
            module documentation).
    """

    def __init__(self, *, base_url: str | None = None, links: LinkStyle = "inline",
                 images: bool = True, heading_style: HeadingStyle = "atx",
                 main_content: bool = False, encoding: str | None = None,
                 max_table_chars: int = MAX_TABLE_CHARS) -> None:
        _check_options(base_url, encoding)
        if links not in ("inline", "reference"):
            raise ValueError(f"links must be 'inline' or 'reference', not {links!r}")
        if heading_style not in ("atx", "setext"):
            raise ValueError(f"heading_style must be 'atx' or 'setext', not {heading_style!r}")
        if type(max_table_chars) is not int or max_table_chars < 0:
            raise ValueError("max_table_chars must be an int >= 0")
        self._options = _Options(base_url, links, bool(images), heading_style, max_table_chars,
                                 bool(main_content))
        self._meta = _Meta()
        self._writer = _Writer(self._options, self._meta)
        if main_content:
            self._writer.main = _Main()
        self._doc = _Document(self._writer)
        self._stream: RewriterStream | None = _shared_rewriter(
            encoding or "utf-8", encoding is None, bool(main_content)).stream(context=self._doc)
        self._document: MarkdownDocument | None = None
        self._parts: list[str] = []

    def _take(self) -> str:
        main = self._writer.main
        out = main.ready if main is not None else self._writer.out
        if not out:
            return ""
        s = "".join(out)
        out.clear()
        return s

    def feed(self, chunk: bytes | bytearray | memoryview) -> str:
        """Read the next chunk of HTML; return the Markdown it decided."""
        if self._stream is None:
            raise ValueError("feed() after close()")
        if isinstance(chunk, str):
            raise TypeError("feed() takes bytes; htmlstream.markdown() takes a whole str")
        self._stream.feed(chunk)
        s = self._take()
        self._parts.append(s)
        return s

    def close(self) -> str:
        """End the document; return the rest of the Markdown."""
        if self._stream is None:
            return ""
        stream, self._stream = self._stream, None
        stream.close()
        self._writer.close()
        s = self._take()
        self._parts.append(s)
        self._document = self._meta.document("".join(self._parts), self._writer.base)
        self._parts = []
        return s

    @property
    def document(self) -> MarkdownDocument:
        """The whole Markdown with the page's metadata (after :meth:`close`)."""
        if self._document is None:
            raise ValueError("the document is not closed yet")
        return self._document


# ---------------------------------------------------------------------------- one call

CHUNK_SIZE = 65536


def _chunks(source: Any) -> Iterator[bytes]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = memoryview(source).cast("B")
        for i in range(0, len(data), CHUNK_SIZE):
            yield data[i:i + CHUNK_SIZE].tobytes()
        return
    read = getattr(source, "read", None)
    if callable(read):
        while True:
            block = read(CHUNK_SIZE)
            if not block:
                return
            if isinstance(block, str):
                raise TypeError("markdown() needs a binary file (open it with 'rb')")
            yield block
        return
    if isinstance(source, Iterable):
        yield from source
        return
    raise TypeError(f"markdown(): source must be bytes, str, a binary file or an iterable of "
                    f"bytes chunks, not {type(source).__name__}")


def markdown_document(source: str | bytes | IO[bytes] | Iterable[bytes], **options: Any
                      ) -> MarkdownDocument:
    """The Markdown of ``source`` with the page's metadata (see :func:`htmlstream.markdown`,
    whose options ``options`` are)."""
    encoding = options.pop("encoding", None)
    if isinstance(source, str):
        source = source.encode("utf-8", "surrogatepass")
        encoding = "utf-8"
    conv = MarkdownConverter(encoding=encoding, **options)
    for chunk in _chunks(source):
        conv.feed(chunk)
    conv.close()
    return conv.document


# ---------------------------------------------------------------------------- at the edge


def _media_ranges(accept: str) -> list[tuple[str, str, float]]:
    """An ``Accept`` header's media ranges: (type, subtype, q), lower-cased; a range with a
    malformed q counts as q=0 (it is not a preference anyone can rely on)."""
    out = []
    for item in accept.split(","):
        parts = item.split(";")
        media = parts[0].strip().lower()
        if "/" not in media:
            continue
        type_, _, subtype = media.partition("/")
        q = 1.0
        for param in parts[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
                if not 0.0 <= q <= 1.0:
                    q = 0.0
        out.append((type_.strip(), subtype.strip(), q))
    return out


def _quality(ranges: list[tuple[str, str, float]], type_: str, subtype: str
             ) -> tuple[float, bool]:
    """The q of the most specific range that matches (RFC 9110, 12.5.1), and whether the
    media type is named exactly."""
    best: tuple[int, float] = (-1, 0.0)
    for t, sub, q in ranges:
        if t == type_ and sub == subtype:
            level = 2
        elif t == type_ and sub == "*":
            level = 1
        elif t == "*" and sub == "*":
            level = 0
        else:
            continue
        if level > best[0] or (level == best[0] and q > best[1]):
            best = (level, q)
    return best[1], best[0] == 2


def accepts_markdown(accept: str | None) -> bool:
    """Whether a request with this ``Accept`` header gets Markdown rather than HTML (content
    negotiation at the edge, as Cloudflare's "Markdown for Agents" does it).

    Each type's quality is the q of the most specific media range that matches it
    (``text/markdown``, else ``text/*``, else ``*/*``; RFC 9110).  Markdown is chosen when its
    quality is above zero and above HTML's, or equal to HTML's with ``text/markdown`` named
    exactly (``Accept: text/markdown, text/html``: an agent that asks for Markdown by name).
    A browser's ``text/html,...,*/*;q=0.8`` and a missing header get HTML."""
    if accept is not None:
        check_type(accept, str, "accepts_markdown()", "accept",
                   "a str (an Accept header's value) or None")
    if not accept:
        return False
    ranges = _media_ranges(accept)
    md, named = _quality(ranges, "text", "markdown")
    html, _ = _quality(ranges, "text", "html")
    return md > 0 and (md > html or (md == html and named))


def estimate_tokens(markdown: str) -> int:
    """An estimate of the language-model tokens of ``markdown`` (an ``x-markdown-tokens``
    header's value): its characters divided by four, rounded up, the usual rule of thumb for
    English text with BPE tokenizers (it is an estimate: a tokenizer's own count differs by
    language and vocabulary)."""
    check_type(markdown, str, "estimate_tokens()", "markdown", "a str (Markdown text)")
    return (len(markdown) + 3) // 4


# ---------------------------------------------------------------------------- the recipe


class _Stage:
    """The output stage: the rewriter's output, converted."""

    def __init__(self, encoding: str, options: dict[str, Any]) -> None:
        self._conv = MarkdownConverter(encoding=encoding, **options)

    def feed(self, data: bytes, /) -> bytes:
        return self._conv.feed(data).encode("utf-8", "surrogatepass")

    def close(self) -> bytes:
        return self._conv.close().encode("utf-8", "surrogatepass")


class Markdown:
    """The ``markdown`` recipe (made by :func:`markdown`): an output stage that turns the
    rewriter's output into Markdown (UTF-8)."""

    def __init__(self, **options: Any) -> None:
        MarkdownConverter(**options)     # (checks the options)
        self.options = options

    def apply(self, rewriter: Rewriter, /) -> None:
        """Add the stage to ``rewriter`` (``Rewriter.use`` calls this)."""
        options = self.options

        def stage(encoding: str, context: MutableMapping[str, Any]) -> _Stage:
            return _Stage(encoding, options)

        rewriter.pipe(stage)


def _check_options(base_url: object, encoding: object = None) -> None:
    """The TypeErrors of the converter's options (once per converter)."""
    if base_url is not None:
        check_type(base_url, str, "markdown()", "base_url", "a str (an absolute URL) or None")
    if encoding is not None:
        check_type(encoding, str, "markdown()", "encoding", "a str (an encoding label) or None")


def markdown(*, base_url: str | None = None, links: LinkStyle = "inline", images: bool = True,
             heading_style: HeadingStyle = "atx", main_content: bool = False,
             max_table_chars: int = MAX_TABLE_CHARS) -> Markdown:
    """A recipe whose output is the document as Markdown (UTF-8 bytes), converted from what
    the rewriter's handlers wrote: ``Rewriter().use(sanitize(), markdown())``.  Its options are
    :class:`MarkdownConverter`'s."""
    _check_options(base_url)
    return Markdown(base_url=base_url, links=links, images=images, heading_style=heading_style,
                    main_content=main_content, max_table_chars=max_table_chars)
