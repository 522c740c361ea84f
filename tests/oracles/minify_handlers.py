"""The minifier as Python handlers: the oracle of the compiled one.

``recipes.minify`` runs as a compiled output stage (``htmlstream.rewriter.Minifier``): this is
how the recipe ran before, as handlers on every element, text chunk and comment, kept here as
what the stage must write byte for byte (tests/test_recipes_minify.py; the stage differs on
purpose only for bytes the document's encoding does not read and start tags that are not all
ASCII), and as the "as handlers" row of benchmarks/bench_minify.py.  Independent of the
package's implementation on purpose: only the recipe's documented data (the element and
attribute sets) and its code-minifying helpers are shared.
"""

from __future__ import annotations

import codecs
import copy
import re
from collections.abc import Callable, MutableMapping
from typing import Any

from htmlstream import Element, EndTag, Rewriter, TextChunk, TextType, lookup_encoding
from htmlstream.charrefs import decode_charrefs
from htmlstream.recipes.minify import (
    BLOCK_ELEMENTS,
    BOOLEAN_ATTRIBUTES,
    FORMATTING_ELEMENTS,
    JS_TYPES,
    KEY,
    MAX_CODE,
    OPTIONAL_END_TAGS,
    _code_minifiers,
    _minified,
    code_minifiers_installed,
    is_boolean_attribute,
    is_conditional_comment,
    is_css_style_type,
    is_default_link_type,
    is_default_script_type,
    is_javascript,
)
from htmlstream.units import HTML_NS, Comment, DocumentEnd

#: White space CSS collapses (not a form feed: a character to CSS).
_WS_RUN = re.compile(r"[\t\n\r ]+")
#: One attribute of a start tag, as the tokenizer reads it (its name, then a double-quoted,
#: single-quoted or unquoted value, if any); before it, whitespace and stray '/'.
_ATTRIBUTE = re.compile(rb"[\t\n\x0c\r /]*([^\t\n\x0c\r />][^\t\n\x0c\r /=>]*)"
                        rb"(?:[\t\n\x0c\r ]*=[\t\n\x0c\r ]*"
                        rb"(?:\"([^\"]*)\"|'([^']*)'|([^\t\n\x0c\r >]*)))?")
#: What an unquoted attribute value may not hold: white space and '>' (which end it), a quote
#: first (which starts a quoted one); '"', "'", '=', '<', '`' elsewhere read as in quotes.
_UNQUOTED_BAD_B = re.compile(rb"[\t\n\x0c\r >]|\A[\"']")
#: A start tag whose attributes are each one space, a name and a double-quoted value that
#: needs no quotes: writing it shorter is taking the quotes out.
#: (Not a boolean attribute, which the general path may write as a bare name.)
_SIMPLE_TAG = re.compile(rb"<[A-Za-z][^\t\n\x0c\r />]*(?: (?!(?i:"
                         + "|".join(sorted(BOOLEAN_ATTRIBUTES)).encode() +
                         rb")=)[^\t\n\x0c\r /=>\"'<]+=\"[^\t\n\x0c\r \"'=<>`]+\")+>")
#: A start tag already as short as the minifier writes it, but for boolean attributes with a
#: value, ``type`` attributes and duplicates (checked apart): attributes each one space and a
#: name, with an unquoted value that needs no quotes or none.
_MINIMAL_TAG = re.compile(rb"<[A-Za-z][^\t\n\x0c\r />\"'=<>`]*"
                          rb"(?: [^\t\n\x0c\r />=\"'<>`]+(?:=[^\t\n\x0c\r \"'=<>`]+)?)*>")
_BOOLEAN_VALUE = re.compile(rb" (?i:" + "|".join(sorted(BOOLEAN_ATTRIBUTES)).encode() + rb")=")
_MINIMAL_NAME = re.compile(rb" ([^ =>]+)")
#: Elements whose type attribute the minifier may drop (not by the simple path).
_TYPED = frozenset(("script", "style", "link"))
# (a text chunk written again that ends in these: the engine ends a reference or escapes a
# '<' it cannot see the end of; the space after them is kept so that every chunking agrees)
_REF_TAIL = re.compile(r"(?:&#?[0-9A-Za-z]*|<)\Z")
_REF_TAIL_B = re.compile(rb"(?:&#?[0-9A-Za-z]*|<)\Z")
#: Whitespace the minifier changes: all but single spaces between other characters.
_WS_WORK_B = re.compile(rb"[\t\n\r]|  |\A | \Z")
_UNQUOTED_BAD = re.compile(r"[\t\n\x0c\r >]|\A[\"']")
_TAG_NAME_END = re.compile(rb"[\t\n\x0c\r />]")
_WS = "\t\n\x0c\r "
_TABLE_CONTEXT = frozenset(("table", "tbody", "thead", "tfoot", "tr"))
_FORMATTING_NAMES = frozenset(FORMATTING_ELEMENTS.split(", "))

# Marks a text chunk gets from the scoped handlers that run before the document's.
_PRESERVE = 1      # <pre>, <listing>, SVG, MathML: text as it is
_HEAD = 4          # inside <head>: whitespace-only text goes


# What the element handlers ask of an HTML element's name, in one lookup.
_BLOCK = 1
_FORMATTING = 2
_PRE_LIKE = 4      # <pre>, <listing>, <textarea>: a comment right after the tag stays
_KINDS: dict[str, int] = {}
for _name in BLOCK_ELEMENTS:
    _KINDS[_name] = _KINDS.get(_name, 0) | _BLOCK
for _name in _FORMATTING_NAMES:
    _KINDS[_name] = _KINDS.get(_name, 0) | _FORMATTING
for _name in ("pre", "listing", "textarea"):
    _KINDS[_name] = _KINDS.get(_name, 0) | _PRE_LIKE
del _name

_JS_TYPES_B = frozenset(t.encode() for t in JS_TYPES)
_BOOLEAN_B = frozenset(t.encode() for t in BOOLEAN_ATTRIBUTES)

class _State:
    """One document's state (in its context)."""

    __slots__ = ("after_pre", "code", "code_len", "formatting", "line_start", "mark",
                 "misnested", "owed", "pending", "pending_to", "ref_tail", "space_out", "stack",
                 "table_owed", "table_text")

    def __init__(self) -> None:
        self.owed = False        # a space left out, written before what comes next unless
                                 # that is a line boundary
        self.line_start = True   # nothing shown since the last line boundary
        self.space_out = False   # the output's text ends with a space (collapsing across chunks)
        # the text node's last chunk ended in a '&...' or '<' (a space after it stays with it)
        self.ref_tail = False
        self.mark = 0            # the current text chunk's marks
        self.after_pre = False   # the last token was a <pre>/<listing>/<textarea> start tag
        self.stack: list[str] = []   # the elements open (those whose start tag was seen)
        # How many formatting elements are open: text in them is only collapsed (the adoption
        # agency may later move a block out of one, and the block boundary with it).
        self.formatting = 0
        # An element ended out of order, or a formatting element ended implicitly: the tree
        # builder may now make elements no handler sees (re-opened formatting elements, the
        # adoption agency's clones), so whitespace is only collapsed from here on.
        self.misnested = False
        # css/js: the text of the current <style>/<script> held until its end (None: not
        # minified), and its length
        self.code: list[str] | None = None
        self.code_len = 0
        self.pending: str | None = None   # an end tag left out, if what follows allows it
        # where the input seen since that end tag ends: bytes no handler saw after it (a stray
        # end tag, which a browser may turn into an element) keep the end tag
        self.pending_to = 0
        self.table_owed = False  # whitespace held in a table's text (dropped if nothing follows)
        self.table_text = False  # the table's text node has more than whitespace


def _state(context: MutableMapping[str, Any]) -> _State:
    st = context.get(KEY)
    if st is None:
        st = context[KEY] = _State()
    return st


def _quoted(raw: str) -> str:
    """``raw`` (an attribute value as written) in the shortest form that reads back the same."""
    if not raw:
        return ""
    if _UNQUOTED_BAD.search(raw) is None:
        return "=" + raw
    if '"' not in raw:
        return '="' + raw + '"'
    if "'" not in raw:
        return "='" + raw + "'"
    return '="' + raw.replace('"', "&quot;") + '"'


def _escaped(value: str) -> str:
    """A decoded value (set by another handler) as written in a tag."""
    return value.replace("&", "&amp;").replace('"', "&quot;") if "&" in value or '"' in value \
        else value


#: The end tags that close what is left open inside their element ("generate implied end
#: tags"): an omitted end tag of a child may be followed by one of them.
_CLOSING_END_TAGS = frozenset([
    "address", "article", "aside", "blockquote", "button", "center", "details", "dialog", "dir",
    "div", "dl", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup",
    "listing", "main", "menu", "nav", "ol", "pre", "search", "section", "summary", "ul", "li", "dd",
    "dt", "td", "th", "tr", "tbody", "thead", "tfoot", "table", "caption", "body", "html", "h1",
    "h2", "h3", "h4", "h5", "h6"
])

# (a script with a '<' is not minified: see recipes.minify._minified)
_SCRIPT_HAZARD = re.compile(r"<!--|-->|</?script", re.IGNORECASE)
_STYLE_HAZARD = re.compile(r"</style", re.IGNORECASE)


def _may_follow(ended: str, start: str) -> bool:
    """Whether an element's end tag may be left out before the start tag ``start``."""
    follow = OPTIONAL_END_TAGS[ended]
    return start != "noscript" if follow is None else start in follow


class _Handlers:
    """The recipe as handlers for everything (css and js included: their own copy of the
    package's ``<script>``/``<style>`` handlers, so that "everything" checks those too)."""

    def __init__(self, *, comments: bool, whitespace: bool | str, attributes: bool,
                 optional_tags: bool, css: bool, js: bool,
                 keep_comment: Callable[[str], bool] | None) -> None:
        if keep_comment is not None and not callable(keep_comment):
            raise TypeError("keep_comment must be a predicate: keep_comment(text) -> bool")
        self.comments = comments
        self.whitespace = bool(whitespace)
        self.collapse_only = whitespace == "collapse"
        self.attributes = attributes
        self.optional_tags = optional_tags
        self.css = css
        self.js = js
        self.keep_comment = keep_comment
        self._codec = "utf-8"
        self._css_min: Callable[[str], str] | None = None
        self._js_min: Callable[[str], str] | None = None
        self._code = False      # either is set
        # (bound once: one is given to every element)
        self._end_plain: Callable[[EndTag], None] = self._end
        self._end_written: Callable[[EndTag], None] = self._end_rewritten

    def apply(self, rewriter: Rewriter, /) -> None:
        """Register the handlers (``Rewriter.use`` calls this): those of a copy of the recipe
        that knows the rewriter's encoding (one recipe serves rewriters of any encodings)."""
        run = copy.copy(self)
        run._codec = lookup_encoding(rewriter.encoding).codec
        run._end_plain = run._end
        run._end_written = run._end_rewritten
        # (handlers run in registration order: the scoped ones mark a text chunk before the
        # document's text handler reads it)
        if run.css or run.js:
            run._css_min, run._js_min = _code_minifiers(run.css, run.js)
            run._code = run._css_min is not None or run._js_min is not None
            rewriter.on("script, style", text=run._code_text)
        if run.whitespace:
            rewriter.on("pre, listing, svg, math", text=run._mark_preserve)
            rewriter.on("head", text=run._mark_head)
            rewriter.on_document(text=run._text)
        rewriter.on("*", element=run._element)
        if run.comments or run.whitespace:
            rewriter.on_document(comments=run._comment)
        rewriter.on_document(end=run._end_document)

    def _code_start(self, st: _State, el: Element, name: str) -> None:
        """A ``<style>``/``<script>`` (HTML) starts: whether its text is held and minified."""
        lname = name.lower()
        if lname == "style" and self._css_min is not None:
            st.code = [] if is_css_style_type(el.get_attribute("type")) else None
        elif lname == "script" and self._js_min is not None:
            st.code = [] if is_javascript(el.get_attribute("type"),
                                          el.get_attribute("language")) else None
        st.code_len = 0

    # ------------------------------------------------------------------ marks

    @staticmethod
    def _mark_preserve(chunk: TextChunk) -> None:
        _state(chunk.context).mark |= _PRESERVE

    @staticmethod
    def _mark_head(chunk: TextChunk) -> None:
        _state(chunk.context).mark |= _HEAD

    # ------------------------------------------------------------------ text

    def _decode(self, raw: bytes, text: str | None = None, refs: bool = True) -> str | None:
        """The raw bytes of a chunk as characters (character references as written), or None
        when they do not decode; with ``text`` (the engine's reading: ``refs``, character
        references resolved), also None when the two readings disagree (the stream is in
        another encoding than the rewriter's)."""
        if raw.isascii():
            return raw.decode("ascii")
        try:
            s = codecs.decode(raw, self._codec)
        except LookupError:
            return None
        except UnicodeDecodeError:
            if text is None:
                return None
            # (bytes the encoding does not read: U+FFFD, as a browser and the engine read them)
            s = codecs.decode(raw, self._codec, "replace")
        if text is not None and s != text:
            read = s.replace("\r\n", "\n").replace("\r", "\n")
            if refs:
                read = decode_charrefs(read)
            if read.replace("\x00", "\ufffd") != text.replace("\x00", "\ufffd"):
                return None
        return s

    def _text(self, chunk: TextChunk) -> None:
        ctx = chunk.context
        st = ctx.get(KEY)
        if st is None:
            st = ctx[KEY] = _State()
        mark = st.mark
        st.mark = 0
        raw = chunk.raw
        if not raw:
            if chunk.last_in_text_node:
                st.space_out = st.table_owed = st.table_text = st.ref_tail = False
            return
        ref_tail = st.ref_tail
        st.ref_tail = False
        st.after_pre = False
        if mark & _PRESERVE or chunk.text_type:     # (not DATA: raw text, RCDATA...)
            if st.pending is not None:
                self._resolve(st, chunk, False)
            if st.owed:
                chunk.before(" ")
            st.owed = st.space_out = st.line_start = False
            return
        if _WS_WORK_B.search(raw) is None and raw.isascii() and not st.owed and \
                not st.table_owed and st.pending is None:
            # The common case, text with no whitespace but single spaces between words:
            # written as it is (what the general path below does with it, in short).
            stack = st.stack
            table = bool(stack) and stack[-1] in _TABLE_CONTEXT
            last = chunk.last_in_text_node
            if (table and not st.misnested) or mark & _HEAD:
                st.table_text = not last
            elif not last and not (st.formatting or st.misnested or table):
                st.ref_tail = _REF_TAIL_B.search(raw, max(0, len(raw) - 40)) is not None
            st.space_out = st.line_start = False
            return
        s = raw.decode("ascii") if raw.isascii() else self._decode(raw, chunk.text)
        as_html = True
        if s is None:
            # (bytes the encoding does not read, or not the rewriter's encoding: the engine's
            # reading, written as text; U+FFFD where a browser reads one)
            s = chunk.text
            as_html = False
        last = chunk.last_in_text_node
        if st.pending is not None:
            if s.strip(_WS):
                self._resolve(st, chunk, False)
            elif chunk.offset == st.pending_to:
                st.pending_to = chunk.offset + len(raw)
        c = _WS_RUN.sub(" ", s)
        # Collapse only (never drop or trim): inside a formatting element, where text may be
        # foster-parented out of a table, and after misnested tags.
        stack = st.stack
        table = bool(stack) and stack[-1] in _TABLE_CONTEXT
        head = mark & _HEAD
        misnested = st.misnested
        keep = self.collapse_only or st.formatting or misnested or table or head
        if (table and not misnested) or head:
            # Whitespace-only text goes (in a table it stays in the table, in <head> it is not
            # shown); text with more keeps its spaces (in a table it is foster-parented out of
            # it; in <head> it is a <template>'s): held until the text node says which.
            if c == " " and not st.table_text:
                chunk.remove()
                st.table_owed = not last
                if last:
                    st.space_out = False
                return
            st.table_text = not last
        if st.table_owed:
            st.table_owed = False
            if c[0] != " ":
                c = " " + c
        if c == " ":
            # whitespace only
            if keep:
                if not st.space_out:
                    chunk.replace(" ")
                else:
                    chunk.remove()
                st.space_out = not last
                st.owed = False
                return
            if ref_tail and not (st.line_start or st.space_out):
                # (as the space after a '&...' or '<' in the same chunk would be: kept)
                chunk.replace(" ")
                st.space_out = not last
                return
            chunk.remove()
            if not (st.line_start or st.space_out):
                st.owed = True
            if last:
                st.space_out = False
            return
        if keep:
            lead = " " if st.owed else ""
            if c[0] == " " and (lead or st.space_out):
                c = c[1:]
            out = lead + c
            st.owed = False
            # (collapsed with the next chunk of the same text only: an unseen tag may follow)
            st.space_out = out[-1] == " " and not last
        else:
            lead = " " if st.owed or (c[0] == " " and not st.line_start and not st.space_out) \
                else ""
            trail = c[-1] == " "
            core = c.strip(" ")
            space_out = False
            if trail and _REF_TAIL.search(core, max(0, len(core) - 40)) is not None:
                core += " "
                trail = False
                space_out = not last
            out = lead + core
            st.owed = trail
            st.space_out = space_out
            if not trail and not space_out and not last:
                st.ref_tail = _REF_TAIL.search(core, max(0, len(core) - 40)) is not None
        st.line_start = False
        if out != s:
            chunk.replace(out, html=as_html)

    def _code_text(self, chunk: TextChunk) -> None:
        """``<style>``/``<script>`` text: held until its end, then written minified.  Text with
        a hazard (see :func:`_minified`) is left as it is, and what was held before it goes
        out as it was (the engine refuses to remove script text that enters or leaves a
        ``<!--`` escape)."""
        st = _state(chunk.context)
        code = st.code
        text_type = chunk.text_type
        if code is None or text_type not in (TextType.RAWTEXT, TextType.SCRIPT_DATA):
            return
        raw = chunk.raw
        script = text_type == TextType.SCRIPT_DATA
        s = self._decode(raw, chunk.text, False) if raw else ""
        tail = "".join(code[-8:])[-8:]      # (a hazard is at most 8 characters)
        if s is None or st.code_len + len(s) > MAX_CODE or \
                (_SCRIPT_HAZARD if script else _STYLE_HAZARD).search(tail + s) is not None:
            st.code = None
            if code and s is not None:
                # (in place of this piece, so that the engine reads the escape state the
                # input has after it: held pieces may end in the start of a '<!--')
                chunk.replace("".join(code) + s, html=True)
            elif code:
                chunk.before("".join(code), html=True)
            return
        if not chunk.last_in_text_node:
            code.append(s)
            st.code_len += len(s)
            chunk.remove()
            return
        st.code = None
        source = "".join(code) + s
        minify = self._css_min if not script else self._js_min
        out = _minified(source, minify, script)
        if out != s:
            chunk.replace(out, html=True)

    # ------------------------------------------------------------------ elements

    def _element(self, el: Element) -> None:
        ctx = el.context
        st = ctx.get(KEY)
        if st is None:
            st = ctx[KEY] = _State()
        html = el.namespace_uri == HTML_NS
        name = el.tag_name
        kind = _KINDS.get(name, 0) if html else 0
        merged = el.merged
        # (changed by other handlers: the tag is written again anyway)
        changed = self.attributes and el.modified
        if st.pending is not None:
            self._resolve(st, el, html and _may_follow(st.pending, name))
        if self.whitespace and not merged:    # (a merged <body>, <html>: no boundary)
            if kind & _BLOCK:
                if st.owed:
                    if name == "table":
                        el.before(" ")  # (text foster-parented out of it joins that space)
                    st.owed = False
                st.line_start = True
            else:
                if st.owed:
                    el.before(" ")
                    st.owed = False
                st.line_start = False
            st.space_out = False
            st.after_pre = bool(kind & _PRE_LIKE)
        if self._code and html:
            self._code_start(st, el, name)
        end = self._end_plain
        if self.attributes and not merged and not el.removed:
            raw = el.raw
            if changed or len(raw) != len(name) + 2:    # (not "<name>": nothing to take out)
                tag = self._raw_start_tag(raw, html, name, el.is_self_closing) \
                    if not changed and raw.isascii() else \
                    self._start_tag(el, raw, html, name, changed)
                if tag is not None:
                    el.set_start_tag(tag)
                    end = self._end_written
        if el.can_have_content:
            if kind & _FORMATTING:
                st.formatting += 1
            elif not html and name in _FORMATTING_NAMES:
                name = "\x00" + name   # (SVG's <a>: no formatting element)
            st.stack.append(name)
            el.on_end_tag(end)

    def _end(self, end: EndTag) -> None:
        ctx = end.context
        st = ctx.get(KEY)
        if st is None:
            st = ctx[KEY] = _State()
        name = end.name
        kind = _KINDS.get(name, 0)
        stack = st.stack
        top = bool(stack) and stack[-1] == name
        formatting = kind & _FORMATTING
        if top:
            stack.pop()
            if formatting and st.formatting:
                st.formatting -= 1
        elif formatting and stack and stack[-1] == "\x00" + name:
            stack.pop()
            top = True
            formatting = 0
        else:
            st.misnested = True
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] == name:
                    del stack[i]
                    break
        implicit = end.implicit
        if formatting and implicit:
            st.misnested = True
        if st.pending is not None:
            # an explicit end tag of the parent that closes what is open in it
            self._resolve(st, end, top and not implicit and name in _CLOSING_END_TAGS)
        if self.whitespace:
            if kind & _BLOCK:
                st.owed = False
                st.line_start = True
            else:
                if st.owed:
                    end.before(" ")
                    st.owed = False
                st.line_start = False
            st.space_out = False
        st.after_pre = False
        if implicit:
            return
        if self.optional_tags and top and not st.misnested and name in OPTIONAL_END_TAGS:
            st.pending = name
            st.pending_to = end.offset + len(end.raw)
            end.remove()

    def _end_rewritten(self, end: EndTag) -> None:
        """The end of an element whose start tag was written again: its end tag too, as
        ``</name>``."""
        self._end(end)
        if not end.implicit and not end.removed:
            name = end.name
            if len(end.raw) != len(name) + 3 or not end.raw[2:-1].islower():
                end.name = name

    @staticmethod
    def _resolve(st: _State, unit: Element | EndTag | TextChunk | Comment, omit: bool) -> None:
        """Decide on the end tag left out: it stays out if ``omit``, or is written before
        ``unit``."""
        name = st.pending
        st.pending = None
        if not omit or unit.offset != st.pending_to:
            unit.before(f"</{name}>", html=True)

    def _start_tag(self, el: Element, raw: bytes, html: bool, name: str, changed: bool
                   ) -> str | bytes | None:
        """The start tag written shorter (bytes: ASCII, from the raw tag), or None when it
        cannot be."""
        if not changed and raw.isascii():
            return self._raw_start_tag(raw, html, name, el.is_self_closing)
        details = el.attribute_details()
        if not details and not changed and not el.is_self_closing and raw[-1:] == b">" and \
                len(raw) == len(name) + 2:
            return None
        m = _TAG_NAME_END.search(raw, 1)
        if m is None:       # (no '>': the end of the input)
            return None
        raw_name = self._decode(raw[1:m.start()])
        if raw_name is None or raw_name.lower() != name.lower():
            raw_name = name     # (not the rewriter's encoding, or renamed)
        parts = ["<", raw_name]
        base = el.offset
        current = dict(el.attributes) if details else {}
        seen: set[str] = set()
        lname = name.lower()
        js_type = lname == "script" and html
        last_unquoted = False
        for d in details:
            key = d.name.lower()
            if key.startswith("="):
                return None     # (after a bare name it would be its value)
            if key in seen:
                continue            # a duplicate: the tree builder ignores it
            seen.add(key)
            value = current.get(d.name)
            if value is None:
                continue            # removed by another handler
            if html and key == "type" and (
                    (js_type and is_default_script_type(value, current.get("language")))
                    or (lname == "style" and value and is_css_style_type(value))
                    or (lname == "link" and is_default_link_type(value, current.get("rel")))):
                continue
            n0, n1 = d.name_span
            written_name = self._decode(raw[n0 - base:n1 - base])
            if written_name is None or written_name.lower() != key:
                written_name = d.name
            if html and (value == "" or (value.lower() == key and
                                         is_boolean_attribute(lname, key))):
                parts.append(" " + written_name)
                last_unquoted = False
                continue
            written_ = None
            if value == d.value and d.raw_value is not None:
                written_ = self._decode(d.raw_value)
                if written_ is not None and not d.raw_value.isascii() and \
                        decode_charrefs(written_, in_attribute=True) != value:
                    written_ = None     # (another encoding than the rewriter's)
            written = _escaped(value) if written_ is None else written_
            v = _quoted(written)
            parts.append(" " + written_name + v)
            last_unquoted = bool(v) and v[1] not in "\"'"
        for key, value in current.items():     # added by other handlers
            if key.lower() not in seen:
                parts.append(" " + key + _quoted(_escaped(value)))
                seen.add(key.lower())
        if el.is_self_closing and not html:
            parts.append(" />" if last_unquoted else "/>")
        else:
            parts.append(">")
        tag = "".join(parts)
        if not changed and (len(tag) >= len(raw) or (not tag.isascii() and
                            len(tag.encode(self._codec, "replace")) >= len(raw))):
            return None
        return tag

    def _raw_start_tag(self, raw: bytes, html: bool, name: str, self_closing: bool
                       ) -> bytes | None:
        """:meth:`_start_tag` for a tag no other handler changed: read from its bytes (the
        tokenizer's attribute states as one expression), values as written."""
        if _MINIMAL_TAG.fullmatch(raw) is not None and (not html or (
                name not in _TYPED and _BOOLEAN_VALUE.search(raw) is None)):
            # (the common case on pages already minified: nothing to take out, unless an
            # attribute comes twice)
            if raw.count(b" ") < 2:
                return None
            names = _MINIMAL_NAME.findall(raw.lower())
            if len(set(names)) == len(names):
                return None
        if _SIMPLE_TAG.fullmatch(raw) is not None and (not html or name not in _TYPED):
            # (the common case: single spaces, every value double-quoted and unquotable)
            return raw.replace(b'"', b"")
        if raw[-1:] != b">":
            return None         # (the end of the input)
        m = _TAG_NAME_END.search(raw, 1)
        if m is None:
            return None
        pos = m.start()
        end = len(raw) - 1
        if pos == end and not self_closing:
            return None         # <name>
        attrs: list[tuple[bytes, bytes, bytes | None]] = []
        seen: set[bytes] = set()
        match = _ATTRIBUTE.match
        while True:
            a = match(raw, pos, end)
            if a is None:
                break
            pos = a.end()
            n = a.group(1)
            if n[0] == 0x3D:
                return None     # ('=' starting a name: after a bare name it would be its value)
            key = n.lower()
            if key in seen:
                continue        # a duplicate: the tree builder ignores it
            seen.add(key)
            v = a.group(2)
            if v is None:
                v = a.group(3)
                if v is None:
                    v = a.group(4)
            attrs.append((n, key, v))
        if raw[pos:end].strip(b"\t\n\x0c\r /"):
            return None         # (not read as expected: left as it is)
        out = [raw[:m.start()]]
        lname = name.lower() if html else ""
        firsts = {key: v for _, key, v in attrs}
        last_unquoted = False
        for n, key, v in attrs:
            if v is None or not v:
                out.append(b" " + n)
                last_unquoted = False
                continue
            if html:
                if key == b"type" and b"&" not in v:
                    rel = firsts.get(b"rel")
                    if (lname == "script" and v.strip(b"\t\n\x0c\r ").lower() in _JS_TYPES_B
                            and not firsts.get(b"language")) or \
                            (lname == "style" and v.lower() == b"text/css") or \
                            (lname == "link" and rel is not None and b"&" not in rel and
                             is_default_link_type(v.decode("ascii"), rel.decode("ascii"))):
                        continue
                if key in _BOOLEAN_B and v.lower() == key and \
                        is_boolean_attribute(lname, key.decode("ascii")):
                    out.append(b" " + n)
                    last_unquoted = False
                    continue
            if _UNQUOTED_BAD_B.search(v) is None:
                out.append(b" " + n + b"=" + v)
                last_unquoted = True
            elif b'"' not in v:
                out.append(b" " + n + b'="' + v + b'"')
                last_unquoted = False
            elif b"'" not in v:
                out.append(b" " + n + b"='" + v + b"'")
                last_unquoted = False
            else:
                out.append(b" " + n + b'="' + v.replace(b'"', b"&quot;") + b'"')
                last_unquoted = False
        if self_closing and not html:
            out.append(b" />" if last_unquoted else b"/>")
        else:
            out.append(b">")
        tag = b"".join(out)
        if len(tag) >= len(raw):
            return None
        return tag

    # ------------------------------------------------------------------ comments, end

    def _comment(self, comment: Comment) -> None:
        st = _state(comment.context)
        if st.after_pre or not self.comments:
            st.after_pre = False
            self._keep(st, comment)
            return
        text = comment.text
        t = text.strip(_WS)
        if is_conditional_comment(text) or t == "email_off" or t == "/email_off" or \
                (self.keep_comment is not None and self.keep_comment(text)):
            self._keep(st, comment)
            return
        comment.remove()

    def _keep(self, st: _State, comment: Comment) -> None:
        """A comment written: an end tag left out before it is written first."""
        if st.pending is not None:
            self._resolve(st, comment, False)
        if st.owed:
            comment.before(" ")
            st.owed = False

    def _end_document(self, end: DocumentEnd) -> None:
        st = end.context.pop(KEY, None)
        if st is not None and st.pending not in (None, "head", "body", "html"):
            # (what came after the end tag left out is not known here: written at the end it
            # closes the same element, and after a stray end tag the same as that tag did)
            end.append(f"</{st.pending}>", html=True)


#: The options of the compiled stage, as handler options.
_DEFAULTS: dict[str, Any] = {
    "comments": True, "whitespace": "collapse", "attributes": True, "optional_tags": False,
    "css": code_minifiers_installed()[0], "js": code_minifiers_installed()[1],
    "keep_comment": None,
}


def handlers_rewriter(*, scripting: bool = True, encoding: str = "utf-8",
                      **options: Any) -> Rewriter:
    """A rewriter that minifies with the recipe's handlers (``options``: ``minify()``'s)."""
    return Rewriter(scripting=scripting, encoding=encoding).use(
        _Handlers(**{**_DEFAULTS, **options}))
