"""``minify``: a streaming HTML minifier that keeps the document's tree.

What it removes (each can be turned off):

* **whitespace** (``whitespace="collapse"``, the default): in ordinary text, every run of white
  space CSS collapses (space, tab, line feed; not a form feed, which CSS renders as a
  character) becomes one space, and whitespace-only text goes where no CSS shows it: inside
  ``<head>`` and between a table's parts.  Nothing else is removed, so the output renders the
  same whatever the page's CSS makes of ``display``.  ``whitespace="remove"`` also removes a
  run that touches a *line boundary* of the default style sheet: the start or end of a
  block-level element (``<div>``, ``<p>``, ``<li>``, ``<table>`` and its parts, ``<html>``,
  ``<body>``..., :data:`BLOCK_ELEMENTS`) or a ``<br>``; that assumes the page's CSS keeps
  those elements blocks (see below).  ``whitespace=False`` leaves white space alone;
  ``whitespace=True`` is refused (a ValueError), because it named the ``"remove"`` mode when
  that was the default, and would now read as either.  Text is never touched inside
  ``<pre>``, ``<listing>``, ``<textarea>``,
  ``<script>``, ``<style>``, ``<xmp>``, ``<plaintext>``, ``<title>`` and other raw text, nor in
  SVG and MathML; whitespace is never removed between inline elements (``<b>a</b> <i>b</i>``
  keeps its space), nor inside a formatting element (``<a>``, ``<b>``, ``<em>``...: the tree
  builder may re-open one for a whitespace character).

  Why ``"collapse"`` is the default (issue 33): the minifier's rule is that it never changes
  what a reader or a script sees, and a rule that is almost right is a bug.  Measured in
  Chromium on 181 real news pages, ``"remove"`` changed the rendered text
  (``document.body.innerText``) of 14: they make a ``<div>`` or ``<li>`` ``inline`` or
  ``inline-block`` in their CSS, which a stream cannot see, and the space removed next to it
  was shown (``<span>By</span> <div class=author>Sarah`` read "BySarah").  ``"collapse"``
  changed it on none, for about 0.3 points of size.
* **comments** (``comments=True``): all but conditional comments (``<!--[if IE]>``, ``<![if
  ...]>``, ``<!--<![endif]-->``), the ``<!--email_off-->``/``<!--/email_off-->`` markers of
  e-mail obfuscation, a comment right after a ``<pre>``/``<listing>`` start tag (removing it
  would make the tree builder drop the newline after it), and those ``keep_comment(text)``
  accepts.
* **attributes** (``attributes=True``): start tags are written again, shorter: one space
  between attributes; quotes left out wherever the tokenizer reads the value the same (no
  white space or ``>`` in it, no quote first, not empty: ``"``, ``'``, ``=``, ``<`` and
  backtick inside an unquoted value are parse errors that read as written), otherwise the quote
  the value does not contain; an empty value as the bare name;
  a boolean attribute whose value is its name as the bare name, on the elements where it is
  boolean (:data:`BOOLEAN_ATTRIBUTE_ELEMENTS`: ``<input checked=checked>``, not ``<div
  open=open>``); duplicate attributes (which the tree builder ignores) left out; a ``type``
  that reads as its absence, by the HTML standard's processing model: on ``<script>``, one
  that, ASCII whitespace stripped, is a JavaScript MIME type essence (ASCII
  case-insensitively), when the element has no non-empty ``language`` (which the browser
  reads when ``type`` is missing); on ``<style>``, exactly ``text/css`` (ASCII
  case-insensitively, not stripped: a browser applies no sheet of ``type="text/css "``); on
  ``<link>``, exactly ``text/css`` when ``rel`` is ``stylesheet`` (or ``alternate
  stylesheet``), where parsing it as a MIME type and a plain comparison agree; the ``/`` of a
  self-closing HTML tag (ignored by HTML parsers; kept on SVG and MathML elements, where it
  means something).  Values are written as they were (character references stay).

What it assumes: with ``whitespace="remove"``, that the elements keep the display of the
standard's default style sheet (a CSS rule ``display: inline`` on a ``<div>`` cannot be known in
a stream: whitespace the default style does not show is removed there too); in every mode, that
only the elements that preserve white space by default do (``white-space: pre`` on a ``<p>``
cannot be known: its runs are collapsed), no selector
tells white-space-only text from none (``:empty`` does: ``<div> </div>`` becomes ``<div></div>``,
which it matches), boolean attributes are read by presence where they are boolean
(``[disabled=disabled]`` selectors stop matching), and the document's encoding is
ASCII-compatible (text whose bytes do not decode in it is left as it is).

How it is verified: html5lib's tree of the output equals html5lib's tree of the input, comments
aside and text compared after the whitespace changes above, on every html5lib tree-construction
input and corpus page, in many chunkings (tests/test_recipes_minify.py); and what the browser
renders is the same: headless Chromium loads the corpus pages, every rule's examples and
generated pages next to their minified forms and finds the same DOM (after the changes above),
style sheets, computed style of every element and ``innerText``
(tests/test_minify_chromium.py).

How it runs: as an **output stage** of the rewriter (``Rewriter.pipe``): the rewriter's output
goes, chunk by chunk, through the compiled minifier (:class:`htmlstream.rewriter.Minifier`, its own
lexer and tree-builder simulator over those bytes), which makes no Python call per element,
text or comment (only ``keep_comment``, where given, is called, once per comment).  So it
minifies what every other recipe and handler wrote, wherever ``minify()`` is in the
``use()`` order (a start tag a later handler changed is minified too), in the same streaming
pass; it holds back only what it must (a run of white space whose fate the next tag decides,
a token cut by the chunk's end, an end tag left out until what follows says).  ``css`` and
``js`` (on by default where rcssmin and rjsmin are installed) add handlers on ``<script>``
and ``<style>`` (their state in the document's context as ``context["minify"]``), which
hold each one's text and write it minified, calling the library once per element; the stage
then reads that as it reads the rest.  How the recipe ran before,
as handlers for everything (tests/oracles/minify_handlers.py), is the stage's oracle: it writes
exactly what they write, byte for byte, on every corpus page and tree-construction input
(tests/test_recipes_minify.py), but for bytes the document's encoding does not read.
"""

from __future__ import annotations

import codecs
import importlib.util
import re
from collections.abc import Callable, MutableMapping
from typing import Any, Literal

from htmlstream import CompileCache, Element, Rewriter, TextChunk, TextType, lookup_encoding
from htmlstream.errors import check_type
from htmlstream.rewriter import Minifier
from htmlstream.units import HTML_NS, DocumentEnd

__all__ = [
    "BLOCK_ELEMENTS",
    "BOOLEAN_ATTRIBUTES",
    "BOOLEAN_ATTRIBUTE_ELEMENTS",
    "KEY",
    "WHITESPACE_MODES",
    "Minify",
    "Whitespace",
    "minify",
    "minify_html",
]

#: The context key of the per-document state.
KEY = "minify"

#: Elements whose start and end are line boundaries in the default style sheet (display
#: block, list-item, table and its parts, and ``<br>``): whitespace touching them is not shown.
BLOCK_ELEMENTS = frozenset([
    "address", "article", "aside", "blockquote", "body", "br", "caption", "center", "col",
    "colgroup", "dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption",
    "figure", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head",
    "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "nav", "ol", "p", "search",
    "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"
])

#: The boolean attributes of HTML, each with the HTML elements it is boolean on (None: every
#: HTML element): on those its presence is what counts, its value is not read (the HTML
#: standard's index of attributes; on another element it is an ordinary attribute).
BOOLEAN_ATTRIBUTE_ELEMENTS: dict[str, frozenset[str] | None] = {
    "allowfullscreen": frozenset(["iframe"]), "async": frozenset(["script"]),
    "autofocus": None, "autoplay": frozenset(["audio", "video"]),
    "checked": frozenset(["input"]), "controls": frozenset(["audio", "video"]),
    "default": frozenset(["track"]), "defer": frozenset(["script"]),
    "disabled": frozenset(["button", "fieldset", "input", "link", "optgroup", "option",
                           "select", "textarea"]),
    "formnovalidate": frozenset(["button", "input"]), "inert": None,
    "ismap": frozenset(["img"]), "itemscope": None, "loop": frozenset(["audio", "video"]),
    "multiple": frozenset(["input", "select"]), "muted": frozenset(["audio", "video"]),
    "nomodule": frozenset(["script"]), "novalidate": frozenset(["form"]),
    "open": frozenset(["details", "dialog"]), "playsinline": frozenset(["video"]),
    "readonly": frozenset(["input", "textarea"]),
    "required": frozenset(["input", "select", "textarea"]), "reversed": frozenset(["ol"]),
    "selected": frozenset(["option"]), "shadowrootclonable": frozenset(["template"]),
    "shadowrootdelegatesfocus": frozenset(["template"]),
    "shadowrootserializable": frozenset(["template"]),
}

#: Boolean attributes of HTML (their presence is what counts, on the elements
#: :data:`BOOLEAN_ATTRIBUTE_ELEMENTS` gives).
BOOLEAN_ATTRIBUTES = frozenset(BOOLEAN_ATTRIBUTE_ELEMENTS)


def is_boolean_attribute(element: str, name: str) -> bool:
    """Whether ``name`` is a boolean attribute on the HTML element ``element`` (both
    lower-case): where the browser reads only its presence."""
    elements = BOOLEAN_ATTRIBUTE_ELEMENTS.get(name, ())
    return elements is None or element in elements


#: The formatting elements: the tree builder may re-open one for any character.
FORMATTING_ELEMENTS = "a, b, big, code, em, font, i, nobr, s, small, strike, strong, tt, u"

#: The JavaScript MIME type essences (the HTML standard): a script with one runs as a classic
#: script, as one with no ``type``.
JS_TYPES = frozenset([
    "application/ecmascript", "application/javascript", "application/x-ecmascript",
    "application/x-javascript", "text/ecmascript", "text/javascript", "text/javascript1.0",
    "text/javascript1.1", "text/javascript1.2", "text/javascript1.3", "text/javascript1.4",
    "text/javascript1.5", "text/jscript", "text/livescript", "text/x-ecmascript",
    "text/x-javascript"
])

_WS = "\t\n\x0c\r "
_WS_RUN = re.compile("[\t\n\x0c\r ]+")


def is_conditional_comment(text: str) -> bool:
    """Whether a comment's text is an Internet Explorer conditional comment (or one of its
    ``<![endif]>`` ends), which old browsers read as markup."""
    t = text.lstrip(_WS)
    return t.startswith(("[if", "<![endif]", "[endif]", "<!-->"))  # ("<!-->": <!--<!-->)


#: The most characters of one ``<style>``/``<script>`` held to be minified; a longer one is
#: written as it is.
MAX_CODE = 4 * 1024 * 1024

#: optional_tags: the end tags left out, and the start tags that may follow each one (the HTML
#: standard's "Optional tags", less what a stream cannot check: ``</p>`` before ``<table>``
#: depends on quirks mode; ``</head>`` before ``<noscript>`` moves it into the body).
_P_FOLLOW = frozenset([
    "address", "article", "aside", "blockquote", "details", "dialog", "div", "dl", "fieldset",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hgroup", "hr", "main", "menu", "nav", "ol", "p", "pre", "search", "section", "ul"
])
OPTIONAL_END_TAGS: dict[str, frozenset[str] | None] = {
    "p": _P_FOLLOW, "li": frozenset(("li",)), "dt": frozenset(("dt", "dd")),
    "dd": frozenset(("dt", "dd")), "td": frozenset(("td", "th")),
    "th": frozenset(("td", "th")), "tr": frozenset(("tr",)),
    # (None: any start tag but <noscript>)
    "head": None, "body": None, "html": None,
}

# (a script with '<!--', '-->', '<script' or '</script' is not minified: they change where the
# tokenizer ends it, and the engine follows the input's '<!--' escapes over script text and
# refuses to write text after a removed piece that could read differently; any other '<', as
# in 'a<b', is script text in every state)
_SCRIPT_HAZARD = re.compile(r"<!--|-->|</?script", re.IGNORECASE)
_STYLE_HAZARD = re.compile(r"</style", re.IGNORECASE)


def is_javascript(type_: str | None, language: str | None) -> bool:
    """Whether a ``<script>`` with these ``type`` and ``language`` attributes holds JavaScript
    (a classic script or a module), as the HTML standard decides: ``type`` with ASCII
    whitespace stripped, compared ASCII case-insensitively with the JavaScript MIME type
    essences; with no ``type``, ``"text/" + language``."""
    if type_ is None:
        if not language:
            return True
        type_ = "text/" + language
    essence = type_.strip(_WS).lower() if type_.isascii() else type_
    return essence == "" or essence == "module" or essence in JS_TYPES


def is_default_script_type(type_: str, language: str | None) -> bool:
    """Whether a ``<script>``'s ``type`` may be left out: it reads as a classic script, and so
    does the element without it (which needs no ``language``, or an empty one: with one the
    browser reads ``"text/" + language`` instead)."""
    return type_.isascii() and type_.strip(_WS).lower() in JS_TYPES and not language


def is_css_style_type(type_: str | None) -> bool:
    """Whether a ``<style>`` with this ``type`` applies (the HTML standard: absent, empty or
    ASCII case-insensitively ``text/css``; not stripped: ``"text/css "`` is not CSS)."""
    return type_ is None or (type_.isascii() and type_.lower() in ("", "text/css"))


def is_default_link_type(type_: str, rel: str | None) -> bool:
    """Whether a ``<link>``'s ``type`` may be left out: exactly ``text/css`` (ASCII
    case-insensitively: the MIME type's essence, and no parameters or white space that a
    MIME type parser and a browser's plain comparison could read apart) on a link whose
    ``rel`` is ``stylesheet`` (or ``alternate stylesheet``), where a missing type means a
    style sheet too."""
    return type_.lower() == "text/css" and rel is not None and rel.isascii() and \
        sorted(_WS_RUN.split(rel.lower().strip(_WS))) in (["stylesheet"],
                                                         ["alternate", "stylesheet"])


# A CSS comment, a string closed on its line, or the start of one that is not (a quote or '/*'
# left alone): a style sheet with an unclosed string or comment reads differently once the
# line ends it had are gone (a bad string ends at its line's end), so it is not minified.
_CSS_OPEN = re.compile(r"/\*[\s\S]*?\*/"
                       r"""|"(?:[^"\\\n\r\x0c]|\\[\s\S])*"|'(?:[^'\\\n\r\x0c]|\\[\s\S])*'"""
                       r"""|["']|/\*""")


# A backslash before a line end (an invalid escape outside strings: rcssmin would make it
# escape what follows), '@supports' (whose condition the CSSOM keeps as written), and a media
# query with a vendor-prefixed feature (which a browser that does not know it keeps as written).
_CSS_KEEP = re.compile(r"\\[\n\r\x0c]|@supports|@media[^{;]*(?:\(\s*-|--)", re.IGNORECASE)


def _css_unclosed(source: str) -> bool:
    """Whether a style sheet is one rcssmin could change the reading of: a string or comment
    that its line or the sheet does not close, or a backslash before a line end (invalid CSS
    whose reading depends on the line ends rcssmin removes); or one whose CSSOM would differ,
    a ``@supports`` or a media query with a vendor-prefixed feature (kept as written)."""
    return _CSS_KEEP.search(source) is not None or any(
        len(m.group()) <= 2 and m.group() in ('"', "'", "/*") for m in _CSS_OPEN.finditer(source))


def _minified(source: str, minify: Callable[[str], str] | None, script: bool) -> str:
    """``source`` minified, or as it is when that is not safe: a script that has (or would
    get) ``<!--``, ``-->``, ``<script`` or ``</script`` (which may change where the tokenizer
    ends it), a style sheet that has or would get ``</style``, or has a string or comment left
    open (see :func:`_css_unclosed`)."""
    if minify is None or not source.strip(_WS):
        return source
    hazard = _SCRIPT_HAZARD if script else _STYLE_HAZARD
    if hazard.search(source) is not None or (not script and _css_unclosed(source)):
        return source
    try:
        out = minify(source)
    except Exception:       # (a minifier's bug must not stop the page)
        return source
    if hazard.search(out) is not None:
        return source
    return out


def code_minifiers_installed() -> tuple[bool, bool]:
    """Whether rcssmin and rjsmin (the ``htmlstream[minify]`` extra) can be imported: what
    ``css`` and ``js`` default to."""
    return (importlib.util.find_spec("rcssmin") is not None,
            importlib.util.find_spec("rjsmin") is not None)


def _code_minifiers(css: bool, js: bool) -> tuple[Callable[[str], str] | None,
                                                  Callable[[str], str] | None]:
    """rcssmin's and rjsmin's functions (the ``htmlstream[minify]`` extra)."""
    try:
        css_min = __import__("rcssmin").cssmin if css else None
        js_min = __import__("rjsmin").jsmin if js else None
    except ImportError as exc:
        raise ImportError(f"minify(css=True/js=True) needs rcssmin and rjsmin: pip install "
                          f"'htmlstream[minify]' ({exc})") from None
    return css_min, js_min


class _CodeState:
    """One document's ``<style>``/``<script>`` being held (in its context, ``KEY``)."""

    __slots__ = ("code", "code_len")

    def __init__(self) -> None:
        self.code: list[str] | None = None  # the text held until its end (None: not minified)
        self.code_len = 0


def _code_state(context: MutableMapping[str, Any]) -> _CodeState:
    st = context.get(KEY)
    if st is None:
        st = context[KEY] = _CodeState()
    return st


class _CodeHandlers:
    """What ``css`` and ``js`` add (the compiled stage does the rest, on the output): handlers
    on ``<script>`` and ``<style>`` that hold their text and write it minified, calling the
    library once per element."""

    def __init__(self, codec: str, css: bool, js: bool) -> None:
        self._codec = codec
        self._css_min, self._js_min = _code_minifiers(css, js)

    def apply(self, rewriter: Rewriter, /) -> None:
        rewriter.on("script, style", element=self._code_element, text=self._code_text)
        rewriter.on_document(end=self._end_document)

    def _code_element(self, el: Element) -> None:
        if el.namespace_uri == HTML_NS:
            self._code_start(_code_state(el.context), el, el.tag_name)

    def _code_start(self, st: _CodeState, el: Element, name: str) -> None:
        """A ``<style>``/``<script>`` (HTML) starts: whether its text is held and minified."""
        lname = name.lower()
        if lname == "style" and self._css_min is not None:
            st.code = [] if is_css_style_type(el.get_attribute("type")) else None
        elif lname == "script" and self._js_min is not None:
            st.code = [] if is_javascript(el.get_attribute("type"),
                                          el.get_attribute("language")) else None
        st.code_len = 0

    def _decode(self, raw: bytes, text: str) -> str | None:
        """The raw bytes of a chunk as characters, or None when the engine's reading (``text``)
        disagrees (the stream is in another encoding than the rewriter's)."""
        if raw.isascii():
            return raw.decode("ascii")
        try:
            s = codecs.decode(raw, self._codec)
        except LookupError:
            return None
        except UnicodeDecodeError:
            # (bytes the encoding does not read: U+FFFD, as a browser and the engine read them)
            s = codecs.decode(raw, self._codec, "replace")
        if s != text:
            read = s.replace("\r\n", "\n").replace("\r", "\n")
            if read.replace("\x00", "\ufffd") != text.replace("\x00", "\ufffd"):
                return None
        return s

    def _code_text(self, chunk: TextChunk) -> None:
        """``<style>``/``<script>`` text: held until its end, then written minified.  Text with
        a hazard (see :func:`_minified`) is left as it is, and what was held before it goes
        out as it was (the engine refuses to remove script text that enters or leaves a
        ``<!--`` escape)."""
        st = _code_state(chunk.context)
        code = st.code
        text_type = chunk.text_type
        if code is None or text_type not in (TextType.RAWTEXT, TextType.SCRIPT_DATA):
            return
        raw = chunk.raw
        script = text_type == TextType.SCRIPT_DATA
        s = self._decode(raw, chunk.text) if raw else ""
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

    @staticmethod
    def _end_document(end: DocumentEnd) -> None:
        end.context.pop(KEY, None)


class Minify:
    """The ``minify`` recipe (made by :func:`minify`): the compiled output stage (and with
    ``css`` or ``js``, handlers on ``<script>`` and ``<style>``)."""

    def __init__(self, *, comments: bool, whitespace: Whitespace, attributes: bool,
                 optional_tags: bool, css: bool, js: bool,
                 keep_comment: Callable[[str], bool] | None) -> None:
        if keep_comment is not None and not callable(keep_comment):
            raise TypeError(f"minify(): keep_comment must be a predicate keep_comment(text) -> "
                            f"bool, or None, not {type(keep_comment).__name__}")
        check_whitespace(whitespace)
        self.comments = comments
        self.whitespace = whitespace
        self.attributes = attributes
        self.optional_tags = optional_tags
        self.css = css
        self.js = js
        self.keep_comment = keep_comment

    def apply(self, rewriter: Rewriter, /) -> None:
        """Add the minifier to ``rewriter`` (``Rewriter.use`` calls this): as an output stage
        made for each stream, with the rewriter's parsing settings as they are then."""
        if self.css or self.js:
            _CodeHandlers(lookup_encoding(rewriter.encoding).codec, self.css,
                          self.js).apply(rewriter)
        comments, whitespace, attributes = self.comments, self.whitespace, self.attributes
        optional_tags, keep_comment = self.optional_tags, self.keep_comment

        def stage(encoding: str, context: MutableMapping[str, Any]) -> Minifier:
            return Minifier(encoding, comments=comments, whitespace=bool(whitespace),
                            collapse_only=whitespace == "collapse",
                            attributes=attributes, optional_tags=optional_tags,
                            keep_comment=keep_comment,
                            scripting=bool(rewriter.scripting),
                            max_buffer_size=rewriter.max_buffer_size,
                            max_attributes=rewriter.max_attributes)

        rewriter.pipe(stage)


#: The values of ``minify(whitespace=...)``.
Whitespace = Literal["collapse", "remove", False]

#: What ``whitespace`` may be (``True`` is refused: see :func:`check_whitespace`).
WHITESPACE_MODES: tuple[Whitespace, ...] = ("collapse", "remove", False)


def check_whitespace(whitespace: object) -> None:
    """Raise ValueError unless ``whitespace`` is one of :data:`WHITESPACE_MODES`.  ``True`` is
    refused with its own message: it meant ``"remove"`` while that was the default, and now
    reads as "the default" just as well, so the caller must say which."""
    if whitespace is True:
        raise ValueError("minify(): whitespace=True is ambiguous: pass whitespace='collapse' (the "
                         "default: runs of white space to one space, which renders the same "
                         "whatever the page's CSS does) or whitespace='remove' (also removed "
                         "next to block-level elements: assumes the page's CSS keeps them "
                         "blocks)")
    if whitespace is not False and whitespace not in ("collapse", "remove"):
        raise ValueError(f"minify(): whitespace must be 'collapse' (the default), 'remove' "
                         f"or False, not {whitespace!r}")


def minify(
    *,
    comments: bool = True,
    whitespace: Whitespace = "collapse",
    attributes: bool = True,
    optional_tags: bool = False,
    css: bool | None = None,
    js: bool | None = None,
    keep_comment: Callable[[str], bool] | None = None,
) -> Minify:
    """A recipe that makes HTML smaller without changing its tree (see the module
    documentation for what is removed and what is assumed).

    Args:
        comments: remove comments (not conditional comments, ``email_off`` markers, or those
            ``keep_comment`` accepts).
        whitespace: ``"collapse"`` (the default): each run of white space to one space, and
            whitespace-only text in ``<head>`` and between a table's parts left out: what
            renders the same whatever the page's CSS does with ``display``; ``"remove"``: also
            remove it where the default style sheet shows none (next to block-level elements
            and ``<br>``), which changes the rendered text of pages whose CSS makes such an
            element inline; ``False``: leave it.  ``True`` is refused (ambiguous: it named
            ``"remove"`` when that was the default).
        attributes: write start tags shorter (quotes, boolean attributes, default types).
        optional_tags: leave out the end tags the standard makes optional.
        css: minify ``<style>`` text with ``rcssmin`` (``pip install 'htmlstream[minify]'``):
            None (the default) where it is installed, True requires it (ImportError without).
        js: minify JavaScript ``<script>`` text with ``rjsmin`` (same extra; same default).
        keep_comment: a predicate given a comment's text: True keeps the comment.
    """
    if css is None or js is None:
        css_installed, js_installed = code_minifiers_installed()
        css = css_installed if css is None else css
        js = js_installed if js is None else js
    return Minify(comments=comments, whitespace=whitespace, attributes=attributes,
                  optional_tags=optional_tags, css=css, js=js, keep_comment=keep_comment)


def _build_minifier(options: tuple[tuple[str, Any], ...]) -> Rewriter:
    return Rewriter().use(minify(**dict(options)))


#: The rewriters of minify_html, by its options' value (equal options share one rewriter; a
#: Rewriter serves any number of documents and threads).
_MINIFIERS: CompileCache[tuple[tuple[str, Any], ...], Rewriter] = CompileCache(
    _build_minifier, maxsize=64)


def minify_html(html: str | bytes, **options: Any) -> str | bytes:
    """``html`` minified in one call (str gives str, bytes give bytes); ``options`` are
    :func:`minify`'s.  The rewriter for equal options is made once and reused."""
    check_type(html, (str, bytes, bytearray, memoryview), "minify_html()", "html",
               "str or bytes-like (bytes, bytearray, memoryview)")
    key = tuple(sorted(options.items()))
    try:
        hash(key)
    except TypeError:       # (an unhashable option value: made for this call alone)
        return Rewriter().use(minify(**options)).rewrite(html)
    return _MINIFIERS.get(key).rewrite(html)
