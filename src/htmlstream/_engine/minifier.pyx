# cython: language_level=3
"""The compiled HTML minifier: an output stage that reads bytes of HTML and writes them shorter.

:class:`Minifier` is ``recipes.minify``'s algorithm (see that module for what it removes and what
it assumes) as a token sink with its own lexer and tree-builder simulator, so that the common
path makes no Python call: it reads the bytes a rewriting stream writes (``feed(bytes) ->
bytes``, ``close() -> bytes``: a stage of ``Rewriter.pipe``), follows the open elements as the
rewriter does (it is an :class:`~htmlstream._engine.elements.OpenElements`: the same mirror of
the simulator's stack, the same element starts and ends, implicit ones included), and writes
through the rewriter's :class:`~htmlstream._engine.output.Output`, whose seams keep what it
writes reading as it did.  Python is called only where the user gave a callable
(``keep_comment``).

What it keeps per document is what the recipe's handlers kept (``owed``, ``line_start``...: the
same names), and the recipe's own stack of elements (``rstack``: the elements whose start tag
it saw, by name key; the end of each is matched against it as the recipe matched names).

The engine module is core: it knows nothing of recipes; ``recipes.minify`` configures it.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t, uint16_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy

from htmlstream._engine.constants cimport CDATA_SECTION as T_CDATA
from htmlstream._engine.constants cimport DATA as T_DATA
from htmlstream._engine.constants cimport SCRIPT_DATA as T_SCRIPT
from htmlstream._engine.constants cimport HEAD_HASH
from htmlstream._engine.elements cimport OpenElement, OpenElements
from htmlstream._engine.lexer cimport AttrRec, DoctypeRec, Lexer, TagRec
from htmlstream._engine.output cimport Output, input_slice
from htmlstream._engine.rules cimport Rules
from htmlstream._engine.taghash cimport INVALID_HASH, hash_bytes
from htmlstream._engine.treebuilder cimport MAX_DEPTH_DEFAULT, TreeBuilderSimulator

import re

from htmlstream._engine.lexer import DEFAULT_MAX_ATTRIBUTES, DEFAULT_MAX_BUFFER_SIZE

__all__ = ["Minifier"]

# What an element's name is to the minifier (one look-up: _kind).
cdef enum:
    K_BLOCK = 1
    K_FORMATTING = 2
    K_PRE_LIKE = 4      # <pre>, <listing>, <textarea>: a comment right after the tag stays
    K_TABLE = 8         # text in it is foster-parented (table, tbody, thead, tfoot, tr)
    K_PRESERVE = 16     # text in it (at any depth) as it is: pre, listing, svg, math
    K_HEAD = 32         # whitespace-only text in it goes
    K_TYPED = 64        # its type attribute may be dropped (script, style, link)
    K_P_FOLLOW = 128    # optional_tags: a </p> left out may be followed by its start tag
    K_CLOSING = 256     # optional_tags: its end tag closes what is left open in it
    K_OPTIONAL = 512    # optional_tags: its end tag may be left out

# A key of the recipe's stack for an element not in the HTML namespace whose name is a
# formatting element's (SVG's <a>): the recipe's "\x00" + name.
cdef uint64_t FOREIGN_FORMATTING = (<uint64_t>1) << 63
cdef uint64_t LONG_NAME = (<uint64_t>1) << 62

_BLOCK_NAMES = (
    "address article aside blockquote body br caption center col colgroup dd details dialog dir "
    "div dl dt fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head "
    "header hgroup hr html legend li main menu nav ol p search section summary table tbody td "
    "tfoot th thead tr ul").split()
_FORMATTING_NAMES = "a b big code em font i nobr s small strike strong tt u".split()
_BOOLEAN_NAMES = (
    "allowfullscreen async autofocus autoplay checked controls default defer disabled "
    "formnovalidate inert ismap itemscope loop multiple muted nomodule novalidate open "
    "playsinline readonly required reversed selected shadowrootclonable "
    "shadowrootdelegatesfocus shadowrootserializable").split()
_WS_RUN = re.compile(rb"[\t\n\x0c\r ]+")
# The elements each boolean attribute is boolean on (None: all): recipes.minify's
# BOOLEAN_ATTRIBUTE_ELEMENTS.
_BOOLEAN_ON = {n.encode(): (None if e == "*" else frozenset(x.encode() for x in e.split()))
               for n, e in (
    ("allowfullscreen", "iframe"), ("async", "script"), ("autofocus", "*"),
    ("autoplay", "audio video"), ("checked", "input"), ("controls", "audio video"),
    ("default", "track"), ("defer", "script"),
    ("disabled", "button fieldset input link optgroup option select textarea"),
    ("formnovalidate", "button input"), ("inert", "*"), ("ismap", "img"), ("itemscope", "*"),
    ("loop", "audio video"), ("multiple", "input select"), ("muted", "audio video"),
    ("nomodule", "script"), ("novalidate", "form"), ("open", "details dialog"),
    ("playsinline", "video"), ("readonly", "input textarea"),
    ("required", "input select textarea"), ("reversed", "ol"), ("selected", "option"),
    ("shadowrootclonable", "template"), ("shadowrootdelegatesfocus", "template"),
    ("shadowrootserializable", "template"))}
_JS_TYPES = frozenset(t.encode() for t in (
    "application/ecmascript", "application/javascript", "application/x-ecmascript",
    "application/x-javascript", "text/ecmascript", "text/javascript", "text/javascript1.0",
    "text/javascript1.1", "text/javascript1.2", "text/javascript1.3", "text/javascript1.4",
    "text/javascript1.5", "text/jscript", "text/livescript", "text/x-ecmascript",
    "text/x-javascript"))
# The SVG element names the HTML parser gives mixed case (an end tag written again as
# ``</name>`` is written with the element's DOM name, as the rewriter's EndTag has it).
_SVG_NAMES = {n.lower(): n for n in (
    "altGlyph altGlyphDef altGlyphItem animateColor animateMotion animateTransform clipPath "
    "feBlend feColorMatrix feComponentTransfer feComposite feConvolveMatrix feDiffuseLighting "
    "feDisplacementMap feDistantLight feDropShadow feFlood feFuncA feFuncB feFuncG feFuncR "
    "feGaussianBlur feImage feMerge feMergeNode feMorphology feOffset fePointLight "
    "feSpecularLighting feSpotLight feTile feTurbulence foreignObject glyphRef linearGradient "
    "radialGradient textPath").split()}

# The kinds, by name hash: an open-addressing table (no Python object on the hot path).
cdef uint64_t _kind_keys[512]
cdef uint16_t _kind_vals[512]
# Boolean attribute names, by hash where the hash holds them (the longer ones: apart).
cdef uint64_t _bool_keys[128]


cdef inline Py_ssize_t _slot(uint64_t h, Py_ssize_t size) noexcept:
    return <Py_ssize_t>((h * 0x9E3779B97F4A7C15ULL) >> 55) & (size - 1)


cdef uint64_t _name_hash(str name):
    cdef bytes b = name.encode("ascii")
    return hash_bytes(<const unsigned char*><const char*>b, len(b))


cdef void _add_kind(str name, uint16_t kind):
    cdef uint64_t h = _name_hash(name)
    cdef Py_ssize_t i = _slot(h, 512)
    while _kind_keys[i] != 0 and _kind_keys[i] != h:
        i = (i + 1) & 511
    _kind_keys[i] = h
    _kind_vals[i] |= kind


cdef inline uint16_t _kind(uint64_t h) noexcept:
    cdef Py_ssize_t i = _slot(h, 512)
    while _kind_keys[i] != 0:
        if _kind_keys[i] == h:
            return _kind_vals[i]
        i = (i + 1) & 511
    return 0


cdef void _add_bool(str name):
    cdef uint64_t h = _name_hash(name)
    cdef Py_ssize_t i
    if h == INVALID_HASH:
        return
    i = _slot(h, 128)
    while _bool_keys[i] != 0:
        i = (i + 1) & 127
    _bool_keys[i] = h


cdef inline bint _bool_hash(uint64_t h) noexcept:
    cdef Py_ssize_t i = _slot(h, 128)
    while _bool_keys[i] != 0:
        if _bool_keys[i] == h:
            return True
        i = (i + 1) & 127
    return False



for _n in _BLOCK_NAMES:
    _add_kind(_n, K_BLOCK)
for _n in _FORMATTING_NAMES:
    _add_kind(_n, K_FORMATTING)
for _n in ("pre", "listing", "textarea"):
    _add_kind(_n, K_PRE_LIKE)
for _n in ("table", "tbody", "thead", "tfoot", "tr"):
    _add_kind(_n, K_TABLE)
for _n in ("pre", "listing", "svg", "math"):
    _add_kind(_n, K_PRESERVE)
_add_kind("head", K_HEAD)
for _n in ("script", "style", "link"):
    _add_kind(_n, K_TYPED)
for _n in _BOOLEAN_NAMES:
    _add_bool(_n)
for _n in ("address article aside blockquote details dialog div dl fieldset figcaption figure "
           "footer form h1 h2 h3 h4 h5 h6 header hgroup hr main menu nav ol p pre search "
           "section ul").split():
    _add_kind(_n, K_P_FOLLOW)
for _n in ("address article aside blockquote button center details dialog dir div dl "
           "fieldset figcaption figure footer form header hgroup listing main menu nav ol pre "
           "search section summary ul li dd dt td th tr tbody thead tfoot table caption body "
           "html h1 h2 h3 h4 h5 h6").split():
    _add_kind(_n, K_CLOSING)
for _n in ("p", "li", "dt", "dd", "td", "th", "tr", "head", "body", "html"):
    _add_kind(_n, K_OPTIONAL)

cdef uint64_t TABLE_H = _name_hash("table")
cdef uint64_t P_H = _name_hash("p")
cdef uint64_t LI_H = _name_hash("li")
cdef uint64_t DT_H = _name_hash("dt")
cdef uint64_t DD_H = _name_hash("dd")
cdef uint64_t TD_H = _name_hash("td")
cdef uint64_t TH_H = _name_hash("th")
cdef uint64_t TR_H = _name_hash("tr")
cdef uint64_t NOSCRIPT_H = _name_hash("noscript")
cdef uint64_t BODY_H = _name_hash("body")
cdef uint64_t HTML_H = _name_hash("html")


cdef bint _may_follow(uint64_t ended, uint64_t start) noexcept:
    """optional_tags: whether the end tag of ``ended`` may be left out before the start tag
    ``start`` (the recipe's OPTIONAL_END_TAGS)."""
    if ended == P_H:
        return (_kind(start) & K_P_FOLLOW) != 0
    if ended == LI_H:
        return start == LI_H
    if ended == DT_H or ended == DD_H:
        return start == DT_H or start == DD_H
    if ended == TD_H or ended == TH_H:
        return start == TD_H or start == TH_H
    if ended == TR_H:
        return start == TR_H
    return start != NOSCRIPT_H      # (head, body, html)
cdef uint64_t SCRIPT_H = _name_hash("script")
cdef uint64_t STYLE_H = _name_hash("style")
cdef uint64_t TYPE_H = _name_hash("type")
cdef uint64_t LANGUAGE_H = _name_hash("language")


cdef inline bint _ws(unsigned char c) noexcept:
    return c == 0x20 or c == 0x0A or c == 0x09 or c == 0x0C or c == 0x0D


cdef inline bint _css_ws(unsigned char c) noexcept:
    """White space CSS collapses (space, tab, line feed; a CR never reaches the DOM): not a
    form feed, which is white space to the HTML parser but a character to CSS (Chromium
    shows it, and innerText has it)."""
    return c == 0x20 or c == 0x0A or c == 0x09 or c == 0x0D


cdef inline unsigned char _lower(unsigned char c) noexcept:
    return c + 32 if 0x41 <= c <= 0x5A else c


# 1: a byte an unquoted attribute value may not have: white space and '>' (which end it); the
# tokenizer reads '"', "'", '=', '<' and '`' in one as it reads them in a quoted value (parse
# errors, the same characters), but for a quote as the first character (which starts a quoted
# value: checked apart)
cdef unsigned char _BAD[256]
for _c in (9, 10, 12, 13, 32, 62):
    _BAD[_c] = 1
# 1: what the valid unquoted attribute value syntax excludes (the simple path: a tag that is all
# name="value" loses its quotes only where the value is valid unquoted)
cdef unsigned char _INVALID[256]
for _c in (9, 10, 12, 13, 32, 34, 39, 60, 61, 62, 96):
    _INVALID[_c] = 1


cdef inline bint _unquoted_bad(unsigned char c) noexcept:
    return _BAD[c] != 0


cdef inline bint _alnum(unsigned char c) noexcept:
    return (0x30 <= c <= 0x39) or (0x41 <= c <= 0x5A) or (0x61 <= c <= 0x7A)


cdef bint _ref_tail(const unsigned char* p, Py_ssize_t n) noexcept:
    """Whether p[0:n] ends in a '&', '&#' and letters or digits, or a '<' that starts in its
    last 40 bytes (the recipe's _REF_TAIL, searched from 40 before the end)."""
    cdef Py_ssize_t i = n, lo = n - 40 if n > 40 else 0
    if n == 0:
        return False
    if p[n - 1] == 0x3C:
        return True
    while i > lo and _alnum(p[i - 1]):
        i -= 1
    if i > lo and p[i - 1] == 0x23:
        i -= 1
    return i > lo and p[i - 1] == 0x26


cdef uint64_t _fnv(const unsigned char* p, Py_ssize_t n) noexcept:
    cdef uint64_t h = 0xcbf29ce484222325ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ _lower(p[i])) * 0x100000001b3ULL
    return h


cdef class _Ends(OpenElement):
    """The recipe's end-tag handlers of an open element: one per start tag (its own, then
    those merged into it), innermost last."""
    cdef uint64_t key           # the first one's name key
    cdef bint rewritten         # its start tag was written again (its end tag is too)
    cdef int content_type       # the text type of its content
    cdef bint in_head           # put into <head> by the "after head" rule
    cdef bytes name             # its lower-cased name as written
    cdef int ns
    cdef list more              # (key, rewritten, name, ns) of tags merged into it, or None


@cython.final
cdef class Minifier(OpenElements):
    """An HTML minifier over a stream of bytes (``feed(bytes) -> bytes``, ``close() ->
    bytes``), the compiled form of ``recipes.minify`` (comments, whitespace, attributes and
    optional tags; its module says what each removes).

    Args:
        encoding: the codec of the bytes (Python name; ASCII-compatible): comments given to
            ``keep_comment`` are decoded in it.
        comments, whitespace, attributes, optional_tags: as ``recipes.minify``'s.
        collapse_only: whitespace is collapsed, never removed (``whitespace="collapse"``, the
            default), but whitespace-only text in ``<head>`` and between a table's parts;
            False with ``whitespace``: also removed next to block-level elements
            (``whitespace="remove"``).
        keep_comment: a predicate given a comment's text: True keeps it.
        scripting: whether ``<noscript>`` content is raw text (as the rewriter's setting).
        max_buffer_size, max_attributes: the lexer's limits (as the rewriter's settings).
    """

    cdef Lexer lexer
    cdef Output out
    cdef bint comments
    cdef bint whitespace
    cdef bint collapse_only         # whitespace: collapsed, never removed (but in <head>, tables)
    cdef bint attributes
    cdef object keep_comment
    cdef str codec
    cdef bytes whole_chunk
    cdef bint done
    # the recipe's state (see recipes/minify.py: _State)
    cdef bint owed
    cdef bint line_start
    cdef bint space_out
    cdef bint ref_tail
    cdef bint after_pre
    # optional_tags: the end tag left out (its name key, 0: none, and name), if what follows
    # allows it; where the input seen since it ends (bytes nothing saw after it, a stray end tag,
    # keep it)
    cdef bint optional_tags
    cdef uint64_t pending
    cdef bytes pending_name
    cdef Py_ssize_t pending_to
    cdef bytes end_before           # (end_one: what goes before the end, or None)
    cdef bint end_removed           # (end_one: the end tag is left out)
    cdef Py_ssize_t formatting
    cdef bint misnested
    cdef bint table_owed
    cdef bint table_text
    cdef Py_ssize_t head_extra      # open elements put into <head> after it closed
    # K_PRESERVE | K_HEAD of the mirror's mirror_names[0 : j + 1] at mcum[j], valid below
    # mvalid (the entries under the lowest index a tag or text changed stay as they were)
    cdef uint8_t mcum[MAX_DEPTH_DEFAULT + 1]
    cdef Py_ssize_t mvalid
    cdef uint64_t* rstack
    cdef Py_ssize_t rdepth
    cdef Py_ssize_t rcap
    # scratch: the tag or text written again
    cdef unsigned char* buf
    cdef Py_ssize_t buf_cap
    cdef Py_ssize_t buf_len

    def __cinit__(self):
        self.rstack = NULL
        self.buf = NULL

    def __dealloc__(self):
        if self.rstack != NULL:
            free(self.rstack)
        if self.buf != NULL:
            free(self.buf)

    def __init__(self, str encoding="utf-8", *, bint comments=True, bint whitespace=True,
                 bint attributes=True, bint optional_tags=False, keep_comment=None,
                 bint collapse_only=True,
                 bint scripting=True,
                 Py_ssize_t max_buffer_size=DEFAULT_MAX_BUFFER_SIZE,
                 Py_ssize_t max_attributes=DEFAULT_MAX_ATTRIBUTES):
        if keep_comment is not None and not callable(keep_comment):
            raise TypeError("keep_comment must be a predicate: keep_comment(text) -> bool")
        cdef TreeBuilderSimulator sim = TreeBuilderSimulator.__new__(TreeBuilderSimulator)
        cdef Lexer lx = Lexer.__new__(Lexer)
        self.codec = encoding
        self.comments = comments
        self.whitespace = whitespace
        self.collapse_only = collapse_only
        self.attributes = attributes
        self.optional_tags = optional_tags
        self.keep_comment = keep_comment
        self.rules = Rules.__new__(Rules)
        self.matcher = None
        self.remove_ignored = False
        self.implied_rules = False
        self.lazy_content = False
        self.follow_text = False
        self.init_elements(False)
        sim.init(scripting, False, MAX_DEPTH_DEFAULT)
        lx.init(self, sim, max_buffer_size, encoding == "utf-8", max_attributes)
        lx.set_attribute_policy(False)
        lx.want_text = True
        lx.sink_tags = True
        self.lx = lx
        self.sim = sim
        self.lexer = lx
        self.out = Output.__new__(Output)
        self.out.init(encoding, True)
        self.out.lx = lx
        self.line_start = True

    # ------------------------------------------------------------------ the stage

    def feed(self, data):
        """Minify the next bytes; return the output that is now decided."""
        if self.done:
            raise ValueError("the minifier is closed")
        if type(data) is not bytes:
            data = bytes(data)
        if not PyBytes_GET_SIZE(data):
            return b""
        self.whole_chunk = <bytes>data
        try:
            self.lexer.feed_ptr(<const unsigned char*>PyBytes_AS_STRING(data),
                                PyBytes_GET_SIZE(data))
        finally:
            self.whole_chunk = None
        return self.out.take()

    def close(self):
        """The end of the input: return the rest of the output."""
        if self.done:
            raise ValueError("the minifier is closed")
        self.done = True
        try:
            self.lexer.end_input()
            self.close_at = self.lexer.stream_len
            if self.lexer.text_type == T_SCRIPT:
                self.out.script_escape(False)
            self.close_all()
            if self.pending and self.pending != HEAD_HASH and self.pending != BODY_H and \
                    self.pending != HTML_H:
                # (what came after the end tag left out is not known here: written at the end
                # it closes the same element, and after a stray end tag the same as that did)
                self.out.divert(self.lexer.text_type)
                self.out.write_part(b"</" + self.pending_name + b">", self.lexer.text_type)
            self.out.end_checks()
        finally:
            self.lexer.sink = None
        return self.out.take()

    # ------------------------------------------------------------------ tokens

    cdef int on_flush(self, Lexer lx, Py_ssize_t upto) except -1:
        return self.out.flush(upto, self.whole_chunk)

    cdef int on_tag(self, Lexer lx, TagRec* tag) except -1:
        self.tag_taken = False
        if self.sim.changed_from < self.mvalid:
            self.mvalid = self.sim.changed_from
        return self.sync_stack(tag)

    cdef int on_doctype(self, Lexer lx, DoctypeRec* d) except -1:
        return 0

    cdef int on_unparsed(self, Lexer lx, Py_ssize_t start, Py_ssize_t end) except -1:
        return 0

    cdef inline tuple space(self, int ctx):
        return (b" ", " ", ctx)

    cdef bytes resolve(self, bint omit, Py_ssize_t offset):
        """optional_tags: decide on the end tag left out: it stays out if ``omit`` and nothing
        came between (the recipe's _resolve); else it is returned, to be written before the
        unit at ``offset``."""
        self.pending = 0
        if not omit or offset != self.pending_to:
            return b"</" + self.pending_name + b">"
        return None

    cdef int on_comment(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                        Py_ssize_t cs, Py_ssize_t ce) except -1:
        cdef const unsigned char* p
        cdef Py_ssize_t a, b
        cdef bint keep = False
        if not (self.comments or self.whitespace):
            return 0
        if self.after_pre or not self.comments:
            self.after_pre = False
            keep = True
        else:
            p = lx.data + (cs - lx.base)
            a = 0
            b = ce - cs
            while a < b and _ws(p[a]):
                a += 1
            keep = _conditional(p + a, b - a)
            if not keep:
                while b > a and _ws(p[b - 1]):
                    b -= 1
                keep = (b - a == 9 and memeq(p + a, b"email_off", 9)) or (
                    b - a == 10 and memeq(p + a, b"/email_off", 10))
            if not keep and self.keep_comment is not None:
                keep = bool(self.keep_comment(
                    input_slice(lx, cs, ce).decode(self.codec, "replace")))
        if keep:
            before = self.resolve(False, start) if self.pending else None
            if not self.owed and before is None:
                return 0
            self.out.copy_input(start)
            self.out.divert(0)
            if before is not None:
                self.out.write_part(before, 0)
            if self.owed:
                self.out.write_part(self.space(0), 0)
            self.owed = False
            self.out.copy_input(end)
            self.out.out_pos = end
            return 0
        self.out.copy_input(start)
        self.out.divert(0)
        self.out.out_pos = end
        return 0

    # ------------------------------------------------------------------ text

    cdef int on_text(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                     Py_ssize_t cs, Py_ssize_t ce, int text_type, bint last) except -1:
        cdef int eb = 0, ea = 0
        cdef Output out = self.out
        if text_type == T_CDATA:
            out.cdata_written = True
        if not self.sim.changed_reset and not self.in_text_sync and self.text_changed_stack():
            return self.text_across_stack_change(lx, start, end, cs, ce, text_type, last)
        if text_type == T_SCRIPT:
            eb = out.script_text(ce, last)
            ea = out.script_now
        if not self.whitespace or (cs == ce and not last):
            if text_type == T_SCRIPT:
                out.script_copied(eb, ea, cs, ce, last)
            return 0
        self.text(lx, cs, ce, text_type, last, eb, ea)
        if text_type == T_SCRIPT and last:
            out.script_copied(ea, ea, ce, ce, True)
        return 0

    cdef int before_text_sync(self) except -1:
        if self.sim.changed_from < self.mvalid:
            self.mvalid = self.sim.changed_from
        return 0

    cdef int marks(self) noexcept:
        """K_PRESERVE and K_HEAD of the open elements (the recipe's scoped text handlers: in
        force for the elements of the mirror, which, for the text before a change the text
        makes, is the stack before it)."""
        cdef Py_ssize_t j, d = self.depth
        cdef uint8_t m
        if d > MAX_DEPTH_DEFAULT:
            d = MAX_DEPTH_DEFAULT
        if self.mvalid > d:
            self.mvalid = d
        if self.mvalid < d:
            m = self.mcum[self.mvalid - 1] if self.mvalid > 0 else 0
            for j in range(self.mvalid, d):
                m |= _kind(self.mirror_names[j]) & (K_PRESERVE | K_HEAD)
                self.mcum[j] = m
        self.mvalid = d
        m = self.mcum[d - 1] if d > 0 else 0
        if self.head_extra > 0:
            m |= K_HEAD
        return m

    cdef int reserve(self, Py_ssize_t n) except -1:
        """Room for n bytes in buf."""
        cdef Py_ssize_t cap
        if n > self.buf_cap:
            cap = self.buf_cap * 2 if self.buf_cap else 4096
            while cap < n:
                cap *= 2
            self.buf = <unsigned char*>realloc(self.buf, cap)
            if self.buf == NULL:
                raise MemoryError()
            self.buf_cap = cap
        return 0

    cdef inline int put(self, const unsigned char* p, Py_ssize_t n) except -1:
        cdef Py_ssize_t cap
        if self.buf_len + n > self.buf_cap:
            cap = self.buf_cap * 2 if self.buf_cap else 4096
            while cap < self.buf_len + n:
                cap *= 2
            self.buf = <unsigned char*>realloc(self.buf, cap)
            if self.buf == NULL:
                raise MemoryError()
            self.buf_cap = cap
        memcpy(self.buf + self.buf_len, p, n)
        self.buf_len += n
        return 0

    cdef int text(self, Lexer lx, Py_ssize_t cs, Py_ssize_t ce, int tt, bint last,
                  int eb, int ea) except -1:
        """The recipe's text handler (``Minify._text``) on one piece of text, over bytes."""
        cdef const unsigned char* p = lx.data + (cs - lx.base)
        cdef Py_ssize_t n = ce - cs, i, j, a, b, off, k
        cdef unsigned char* q
        cdef bytes before = None
        cdef int mark
        cdef bint ref_tail, table, head, keep, work, space_only, lead, trail, space_out
        cdef unsigned char c
        cdef uint64_t top
        if n == 0:
            if last:
                self.space_out = self.table_owed = self.table_text = self.ref_tail = False
            return 0
        mark = self.marks()
        ref_tail = self.ref_tail
        self.ref_tail = False
        self.after_pre = False
        if mark & K_PRESERVE or tt != T_DATA:
            before = self.resolve(False, cs) if self.pending else None
            if self.owed or before is not None:
                self.write_text(cs, ce, tt, self.owed, before, 0, 0, 0, last, eb, ea)
            self.owed = self.space_out = self.line_start = False
            return 0
        top = self.rstack[self.rdepth - 1] if self.rdepth else 0
        table = self.rdepth > 0 and (_kind(top) & K_TABLE) != 0
        head = (mark & K_HEAD) != 0
        # whitespace to change: other than single spaces between other characters
        work = p[0] == 0x20 or p[n - 1] == 0x20
        if not work:
            for i in range(n):
                c = p[i]
                if c == 0x20:
                    if p[i + 1] == 0x20:
                        work = True
                        break
                elif c <= 0x0D and (c == 0x0A or c == 0x09 or c == 0x0D):
                    work = True
                    break
        if not work and not self.owed and not self.table_owed and not self.pending:
            # the recipe's common case (its fast path): written as it is
            if (table and not self.misnested) or head:
                self.table_text = not last
            elif not last and not (self.formatting or self.misnested or table):
                self.ref_tail = _ref_tail(p, n)
            self.space_out = self.line_start = False
            return 0
        if self.pending:
            for i in range(n):
                if not _ws(p[i]):
                    before = self.resolve(False, cs)
                    break
            else:
                if cs == self.pending_to:
                    self.pending_to = ce
        # collapse: every run of whitespace to one space (into buf[1:]: buf[0] is room for
        # a space put in front)
        self.reserve(n + 2)
        q = self.buf
        q[0] = 0x20
        k = 1
        i = 0
        while i < n:
            c = p[i]
            if _css_ws(c):
                q[k] = 0x20
                k += 1
                i += 1
                while i < n and _css_ws(p[i]):
                    i += 1
            else:
                q[k] = c
                k += 1
                i += 1
        self.buf_len = k
        off = 1
        space_only = self.buf_len == 2 and self.buf[1] == 0x20
        keep = self.collapse_only or self.formatting or self.misnested or table or head
        if (table and not self.misnested) or head:
            if space_only and not self.table_text:
                self.write_text(cs, ce, tt, False, before, 1, 0, 0, last, eb, ea)
                self.table_owed = not last
                if last:
                    self.space_out = False
                return 0
            self.table_text = not last
        if self.table_owed:
            self.table_owed = False
            if self.buf[off] != 0x20:
                off -= 1
                self.buf[off] = 0x20
        if space_only:
            if keep:
                if not self.space_out:
                    self.write_text(cs, ce, tt, False, before, 2, 0, 0, last, eb, ea)
                else:
                    self.write_text(cs, ce, tt, False, before, 1, 0, 0, last, eb, ea)
                self.space_out = not last
                self.owed = False
                return 0
            if ref_tail and not (self.line_start or self.space_out):
                self.write_text(cs, ce, tt, False, before, 2, 0, 0, last, eb, ea)
                self.space_out = not last
                return 0
            self.write_text(cs, ce, tt, False, before, 1, 0, 0, last, eb, ea)
            if not (self.line_start or self.space_out):
                self.owed = True
            if last:
                self.space_out = False
            return 0
        b = self.buf_len
        if keep:
            lead = self.owed
            if self.buf[off] == 0x20 and (lead or self.space_out):
                off += 1
            if lead:
                off -= 1
                self.buf[off] = 0x20
            self.owed = False
            self.space_out = self.buf[b - 1] == 0x20 and not last
        else:
            lead = self.owed or (self.buf[off] == 0x20 and not self.line_start
                                 and not self.space_out)
            trail = self.buf[b - 1] == 0x20
            a = off + 1 if self.buf[off] == 0x20 else off
            if trail:
                b -= 1
            space_out = False
            if trail and _ref_tail(self.buf + a, b - a):
                b += 1
                trail = False
                space_out = not last
            self.owed = trail
            self.space_out = space_out
            if not trail and not space_out and not last:
                self.ref_tail = _ref_tail(self.buf + a, b - a)
            if lead:
                a -= 1
                self.buf[a] = 0x20
            off = a
        self.line_start = False
        if b - off != n or not _memeq(self.buf + off, p, n):
            self.write_text(cs, ce, tt, False, before, 3, off, b, last, eb, ea)
        elif before is not None:
            self.write_text(cs, ce, tt, False, before, 0, 0, 0, last, eb, ea)
        return 0

    cdef int write_text(self, Py_ssize_t cs, Py_ssize_t ce, int tt, bint space_before,
                        bytes before, int action, Py_ssize_t a, Py_ssize_t b, bint last, int eb,
                        int ea) except -1:
        """Write a piece of text changed (as the rewriter writes a changed TextChunk):
        ``space_before`` a space; ``action`` 0 the text as it is, 1 nothing, 2 a space,
        3 buf[a:b]."""
        cdef Output out = self.out
        out.copy_input(cs)
        if space_before or before is not None:
            out.divert(tt)
            if before is not None:
                out.write_part(before, tt)
            if space_before:
                out.write_part(self.space(tt), tt)
        if action:
            out.divert(tt)
            if action == 2:
                out.write_part(b" ", tt)
            elif action == 3:
                out.write_part(PyBytes_FromStringAndSize(<const char*>self.buf + a, b - a), tt)
            if action >= 2 and tt == T_SCRIPT:
                out.script_out = ea
        else:
            if tt == T_SCRIPT:
                out.script_copied(eb, ea, cs, ce, False)
            out.copy_input(ce)
        out.out_pos = ce
        return 0

    # ------------------------------------------------------------------ elements
    #
    # The hooks of OpenElements: the recipe's element handler where an element starts, its
    # end-tag handlers where it ends (implicitly too).

    cdef int start_element(self, TagRec* tag, int ns, bint pushed, Py_ssize_t depth,
                           bint merged) except -1:
        return self.element(tag, ns, pushed, depth, merged, False)

    cdef int start_in_head(self, TagRec* tag, int ns, bint pushed, Py_ssize_t depth) except -1:
        return self.element(tag, ns, pushed, depth, False, True)

    cdef int element(self, TagRec* tag, int ns, bint pushed, Py_ssize_t depth, bint merged,
                     bint in_head) except -1:
        """The recipe's element handler (``Minify._element``)."""
        cdef Lexer lx = self.lx
        cdef Output out = self.out
        cdef bint html = ns == 0
        cdef uint64_t key = self.key_of(tag)
        cdef int kind = _kind(key) if html else 0
        cdef bint content = pushed
        cdef bint space = False
        cdef bint rewritten = False
        cdef uint64_t rkey
        cdef _Ends st
        cdef bytes before = None
        if merged:
            # (as the rewriter's Element: merged only into an open element; with a <template>
            # open, into none: then an element with no content)
            depth = self.merged_target(tag.name_hash)
            content = depth >= 0
            merged = content
        if self.pending:
            before = self.resolve(html and _may_follow(self.pending, key), tag.start)
        if self.whitespace and not merged:
            if kind & K_BLOCK:
                if self.owed:
                    space = key == TABLE_H
                    self.owed = False
                self.line_start = True
            else:
                if self.owed:
                    space = True
                    self.owed = False
                self.line_start = False
            self.space_out = False
            self.after_pre = (kind & K_PRE_LIKE) != 0
        if self.attributes and not merged and \
                tag.end - tag.start != tag.name_end - tag.name_start + 2:
            rewritten = self.start_tag(lx, tag, html, kind)
        if space or rewritten or before is not None:
            out.script_out = 0
            out.copy_input(tag.start)
            if space or before is not None:
                out.divert(0)
            if before is not None:
                out.write_part(before, 0)
            if space:
                out.write_part(self.space(0), 0)
            if rewritten:
                out.write(self.buf, self.buf_len)
            else:
                out.write(lx.data + (tag.start - lx.base), tag.end - tag.start)
            out.out_pos = tag.end
        if not content:
            return 0
        rkey = key
        if kind & K_FORMATTING:
            self.formatting += 1
        elif not html and _kind(key) & K_FORMATTING:
            rkey = key | FOREIGN_FORMATTING
        self.rpush(rkey)
        if self.states is None:
            self.states = {}
        st = <_Ends>self.states.get(depth)
        if st is not None:
            if st.more is None:
                st.more = []
            st.more.append((key, rewritten, self.tag_name(tag), ns))
            return 0
        st = _Ends.__new__(_Ends)
        st.key = key
        st.rewritten = rewritten
        st.content_type = lx.text_type
        st.ns = ns
        if rewritten or (self.optional_tags and _kind(key) & K_OPTIONAL):
            # (the end's name is looked up in any namespace, as the recipe's is: an SVG <td>)
            st.name = self.tag_name(tag)
        if in_head:
            st.in_head = True
            self.head_extra += 1
        self.states[depth] = st
        return 0

    cdef bytes tag_name(self, TagRec* tag):
        cdef Lexer lx = self.lx
        return input_slice(lx, tag.name_start, tag.name_end).lower()

    cdef uint64_t key_of(self, TagRec* tag) noexcept:
        cdef Lexer lx = self.lx
        if tag.name_hash != INVALID_HASH:
            return tag.name_hash
        return (_fnv(lx.data + (tag.name_start - lx.base), tag.name_end - tag.name_start)
                & ~FOREIGN_FORMATTING) | LONG_NAME

    cdef int rpush(self, uint64_t key) except -1:
        cdef Py_ssize_t cap
        if self.rdepth == self.rcap:
            cap = self.rcap * 2 if self.rcap else 64
            self.rstack = <uint64_t*>realloc(self.rstack, cap * sizeof(uint64_t))
            if self.rstack == NULL:
                raise MemoryError()
            self.rcap = cap
        self.rstack[self.rdepth] = key
        self.rdepth += 1
        return 0

    cdef int finish_element(self, OpenElement state, Py_ssize_t depth, TagRec* tag,
                            bint explicit) except -1:
        return self.end_work(state, depth, tag, explicit)

    cdef int end_work(self, OpenElement state, Py_ssize_t depth, TagRec* tag,
                      bint explicit) except -1:
        """The recipe's end-tag handlers of the element (innermost first: the tags merged
        into it, the last first, then its own), where it ends."""
        cdef _Ends st = <_Ends>state
        cdef Lexer lx = self.lx
        cdef Output out = self.out
        cdef Py_ssize_t at = tag.start if tag != NULL else self.close_at
        cdef int ctx = (st.content_type if explicit else 0) if tag != NULL else lx.text_type
        cdef bytes written = None
        if st.in_head:
            st.in_head = False
            self.head_extra -= 1
        out.copy_input(at)
        if ctx == T_SCRIPT:
            out.script_escape(explicit)
        remove = False
        if st.more is not None:
            for item in reversed(st.more):
                self.end_entry(<uint64_t>item[0], <bytes>item[2], tag, explicit, ctx)
                remove = remove or self.end_removed
                if item[1] and explicit and not self.end_removed:
                    written = self.end_written(tag, <bytes>item[2], item[3]) or written
            st.more = None
        self.end_entry(st.key, st.name, tag, explicit, ctx)
        remove = remove or self.end_removed
        if st.rewritten and explicit and not self.end_removed:
            written = self.end_written(tag, st.name, st.ns) or written
        st.rewritten = False
        if explicit:
            if remove:
                out.divert(ctx)
            elif written is not None:
                out.write_bytes(written)
            else:
                out.copy_input(tag.end)
            out.out_pos = tag.end
        return 0

    cdef int end_entry(self, uint64_t key, bytes name, TagRec* tag, bint explicit,
                       int ctx) except -1:
        """One end-tag handler of the recipe, and what it writes before the end."""
        cdef Output out = self.out
        cdef bint space = self.end_one(key, name, tag, explicit)
        if self.end_before is not None or space:
            out.divert(ctx)
            if self.end_before is not None:
                out.write_part(self.end_before, ctx)
                self.end_before = None
            if space:
                out.write_part(self.space(ctx), ctx)
        return 0

    cdef bytes end_written(self, TagRec* tag, bytes name, int ns):
        """The end tag of an element whose start tag was written again: ``</name>`` (None: it
        is that already)."""
        cdef Lexer lx = self.lx
        cdef const unsigned char* p = lx.data + (tag.start - lx.base)
        cdef Py_ssize_t n = tag.end - tag.start, i
        cdef bint lower = False, upper = False
        cdef str dom = name.decode(self.codec, "replace")
        if ns == 1:
            dom = _SVG_NAMES.get(dom, dom)
        if n == len(dom) + 3:
            for i in range(2, n - 1):
                if 0x61 <= p[i] <= 0x7A:
                    lower = True
                elif 0x41 <= p[i] <= 0x5A:
                    upper = True
            if lower and not upper:
                return None
        return ("</" + dom + ">").encode(self.codec, "replace")

    cdef bint end_one(self, uint64_t key, bytes name, TagRec* tag, bint explicit) except -1:
        """The recipe's end-tag handler (``Minify._end``); whether a space goes before the
        end (and in end_before, the end tag left out before, to write before it first; in
        end_removed, whether this end tag is left out)."""
        cdef int kind = _kind(key)
        cdef bint fmt = (kind & K_FORMATTING) != 0
        cdef bint space = False
        cdef bint top = True
        cdef Py_ssize_t i
        self.end_removed = False
        if self.rdepth and self.rstack[self.rdepth - 1] == key:
            self.rdepth -= 1
            if fmt and self.formatting:
                self.formatting -= 1
        elif fmt and self.rdepth and self.rstack[self.rdepth - 1] == (key | FOREIGN_FORMATTING):
            self.rdepth -= 1
            fmt = False
        else:
            top = False
            self.misnested = True
            i = self.rdepth - 1
            while i >= 0:
                if self.rstack[i] == key:
                    while i < self.rdepth - 1:
                        self.rstack[i] = self.rstack[i + 1]
                        i += 1
                    self.rdepth -= 1
                    break
                i -= 1
        if fmt and not explicit:
            self.misnested = True
        if self.pending:
            # an explicit end tag of the parent that closes what is open in it
            self.end_before = self.resolve(top and explicit and (kind & K_CLOSING) != 0,
                                           tag.start if tag != NULL else self.close_at)
        if self.whitespace:
            if kind & K_BLOCK:
                self.owed = False
                self.line_start = True
            else:
                if self.owed:
                    space = True
                    self.owed = False
                self.line_start = False
            self.space_out = False
        self.after_pre = False
        if explicit and self.optional_tags and top and not self.misnested and \
                kind & K_OPTIONAL:
            self.pending = key
            self.pending_name = name
            self.pending_to = tag.end
            self.end_removed = True
        return space

    # ------------------------------------------------------------------ start tags

    cdef bint start_tag(self, Lexer lx, TagRec* tag, bint html, int kind) except -1:
        """The recipe's start tag written shorter (``Minify._raw_start_tag``), into buf;
        False when it is not shorter (or cannot be read as expected)."""
        cdef const unsigned char* p = lx.data + (tag.start - lx.base)
        cdef Py_ssize_t n = tag.end - tag.start
        cdef Py_ssize_t ne = tag.name_end - tag.start
        cdef Py_ssize_t i, k, prev, a0, a1, v0, v1
        cdef AttrRec* a
        cdef bint dups, simple, last_unquoted = False, bad, dq, sq
        cdef unsigned char c
        if p[n - 1] != 0x3E or tag.attrs_skipped:
            return False
        if ne == n - 1 and not tag.self_closing:
            return False
        # duplicates (which the tree builder ignores) are left out, except in the tag the
        # recipe's short path takes (_SIMPLE_TAG): all of it " name=\"value\"" with values that
        # need no quotes, which loses its quotes and nothing else
        dups = False
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            if p[a.name_start - tag.start] == 0x3D:
                return False    # ('=' starting a name: after a bare name it would be its value)
            if not dups and i and self.seen_before(tag, i, p):
                dups = True
        simple = dups and not tag.self_closing and not (html and kind & K_TYPED)
        if simple:
            simple = self.is_simple(tag, p, n, ne)
        self.buf_len = 0
        self.put(p, ne)
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            a0 = a.name_start - tag.start
            a1 = a.name_end - tag.start
            if dups and not simple and self.seen_before(tag, i, p):
                continue        # a duplicate: the tree builder ignores it
            if a.value_start < 0 or a.value_end <= a.value_start:
                self.put(<const unsigned char*>b" ", 1)
                self.put(p + a0, a1 - a0)
                last_unquoted = False
                continue
            v0 = a.value_start - tag.start
            v1 = a.value_end - tag.start
            if html:
                if kind & K_TYPED and _ci_eq(p + a0, a1 - a0, b"type", 4) and \
                        _no_amp(p + v0, v1 - v0) and self.default_type(tag, p, v0, v1):
                    continue
                if v1 - v0 == a1 - a0 and _ci_eq(p + v0, v1 - v0, p + a0, a1 - a0) and \
                        self.boolean_name(p + a0, a1 - a0) and \
                        self.boolean_on(tag, p + a0, a1 - a0):
                    self.put(<const unsigned char*>b" ", 1)
                    self.put(p + a0, a1 - a0)
                    last_unquoted = False
                    continue
            bad = p[v0] == 0x22 or p[v0] == 0x27
            dq = sq = False
            for k in range(v0, v1):
                c = p[k]
                if _BAD[c]:
                    bad = True
                elif c == 0x22:
                    dq = True
                elif c == 0x27:
                    sq = True
            self.put(<const unsigned char*>b" ", 1)
            self.put(p + a0, a1 - a0)
            if not bad:
                self.put(<const unsigned char*>b"=", 1)
                self.put(p + v0, v1 - v0)
                last_unquoted = True
                continue
            last_unquoted = False
            if not dq:
                self.put(<const unsigned char*>b'="', 2)
                self.put(p + v0, v1 - v0)
                self.put(<const unsigned char*>b'"', 1)
            elif not sq:
                self.put(<const unsigned char*>b"='", 2)
                self.put(p + v0, v1 - v0)
                self.put(<const unsigned char*>b"'", 1)
            else:
                self.put(<const unsigned char*>b'="', 2)
                for k in range(v0, v1):
                    if p[k] == 0x22:
                        self.put(<const unsigned char*>b"&quot;", 6)
                    else:
                        self.put(p + k, 1)
                self.put(<const unsigned char*>b'"', 1)
        if tag.self_closing and not html:
            if last_unquoted:
                self.put(<const unsigned char*>b" />", 3)
            else:
                self.put(<const unsigned char*>b"/>", 2)
        else:
            self.put(<const unsigned char*>b">", 1)
        return self.buf_len < n

    cdef bint default_type(self, TagRec* tag, const unsigned char* p, Py_ssize_t v0,
                           Py_ssize_t v1) except -1:
        """Whether the ``type`` attribute (value p[v0:v1]) of a ``<script>``, ``<style>`` or
        ``<link>`` reads as its absence does (``recipes.minify``'s is_default_script_type,
        is_css_style_type and is_default_link_type): a script's stripped and compared with the
        JavaScript MIME type essences (and no ``language``, which the browser reads when there
        is no ``type``); a style's exactly ``text/css``, not stripped; a link's exactly
        ``text/css`` on a ``rel=stylesheet``."""
        cdef bytes value = PyBytes_FromStringAndSize(<const char*>p + v0, v1 - v0).lower()
        cdef bytes rel
        if tag.name_hash == SCRIPT_H:
            return value.strip(b"\t\n\x0c\r ") in _JS_TYPES and \
                not self.attr_value(tag, p, b"language")
        if value != b"text/css":
            return False
        if tag.name_hash == STYLE_H:
            return True
        rel = self.attr_value(tag, p, b"rel")
        return rel is not None and b"&" not in rel and \
            sorted(_WS_RUN.split(rel.lower().strip(b"\t\n\x0c\r "))) in (
                [b"stylesheet"], [b"alternate", b"stylesheet"])

    cdef bytes attr_value(self, TagRec* tag, const unsigned char* p, bytes name):
        """The value (as written) of the tag's first attribute ``name`` (ASCII
        case-insensitively), or None."""
        cdef AttrRec* a
        cdef Py_ssize_t i
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            if _ci_eq(p + (a.name_start - tag.start), a.name_end - a.name_start,
                      <const char*>name, len(name)):
                if a.value_start < 0 or a.value_end <= a.value_start:
                    return b""
                return PyBytes_FromStringAndSize(<const char*>p + (a.value_start - tag.start),
                                                 a.value_end - a.value_start)
        return None

    cdef bint boolean_on(self, TagRec* tag, const unsigned char* p, Py_ssize_t n) except -1:
        """Whether the boolean attribute named p[0:n] is boolean on the tag's element (the
        recipe's BOOLEAN_ATTRIBUTE_ELEMENTS)."""
        cdef Lexer lx = self.lx
        cdef object elements = _BOOLEAN_ON[PyBytes_FromStringAndSize(<const char*>p, n).lower()]
        if elements is None:
            return True
        return input_slice(lx, tag.name_start, tag.name_end).lower() in elements

    cdef bint is_simple(self, TagRec* tag, const unsigned char* p, Py_ssize_t n,
                        Py_ssize_t ne) noexcept:
        """Whether the tag is the recipe's _SIMPLE_TAG."""
        cdef Py_ssize_t i, k, a0, a1, v0, v1, prev = ne
        cdef AttrRec* a
        cdef unsigned char c
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            a0 = a.name_start - tag.start
            a1 = a.name_end - tag.start
            v0 = a.value_start - tag.start
            v1 = a.value_end - tag.start
            if not (a0 == prev + 1 and p[prev] == 0x20 and a.value_start >= 0
                    and v0 == a1 + 2 and p[a1] == 0x3D and p[a1 + 1] == 0x22
                    and v1 > v0 and v1 < n and p[v1] == 0x22
                    and a.end - tag.start == v1 + 1
                    and not self.boolean_name(p + a0, a1 - a0)):
                return False
            for k in range(a0, a1):
                c = p[k]
                if c == 0x22 or c == 0x27 or c == 0x3C:
                    return False
            for k in range(v0, v1):
                if _INVALID[p[k]]:
                    return False
            prev = a.end - tag.start
        return prev == n - 1

    cdef bint seen_before(self, TagRec* tag, Py_ssize_t i, const unsigned char* p) noexcept:
        """Whether an attribute before attribute i has its name (ASCII case-insensitively)."""
        cdef AttrRec* a = &tag.attrs[i]
        cdef AttrRec* b
        cdef Py_ssize_t j, n = a.name_end - a.name_start
        for j in range(i):
            b = &tag.attrs[j]
            if b.name_end - b.name_start == n and _ci_eq(
                    p + (a.name_start - tag.start), n, p + (b.name_start - tag.start), n):
                return True
        return False

    cdef bint boolean_name(self, const unsigned char* p, Py_ssize_t n) noexcept:
        cdef uint64_t h
        if n > 12:
            return n >= 14 and self.long_boolean(p, n)
        h = hash_bytes(p, n)
        return h != INVALID_HASH and _bool_hash(h)

    cdef bint long_boolean(self, const unsigned char* p, Py_ssize_t n) noexcept:
        """The boolean attribute names the name hash cannot hold."""
        return _ci_eq(p, n, b"formnovalidate", 14) or _ci_eq(p, n, b"shadowrootclonable", 18) \
            or _ci_eq(p, n, b"shadowrootserializable", 22) \
            or _ci_eq(p, n, b"shadowrootdelegatesfocus", 24)


cdef inline bint _memeq(const unsigned char* a, const unsigned char* b, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


cdef inline bint memeq(const unsigned char* a, const char* b, Py_ssize_t n) noexcept:
    return _memeq(a, <const unsigned char*>b, n)


cdef inline bint _ci_eq(const unsigned char* a, Py_ssize_t n, const void* bp,
                        Py_ssize_t m) noexcept:
    """a[0:n] equals b[0:m], ASCII case-insensitively."""
    cdef const unsigned char* b = <const unsigned char*>bp
    cdef Py_ssize_t i
    if n != m:
        return False
    for i in range(n):
        if _lower(a[i]) != _lower(b[i]):
            return False
    return True


cdef inline bint _no_amp(const unsigned char* p, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] == 0x26:
            return False
    return True


cdef bint _conditional(const unsigned char* p, Py_ssize_t n) noexcept:
    """Whether a comment's text (white space stripped in front) starts as a conditional
    comment's (``htmlstream.recipes.minify.is_conditional_comment``)."""
    return (n >= 3 and memeq(p, b"[if", 3)) or (n >= 9 and memeq(p, b"<![endif]", 9)) or (
        n >= 7 and memeq(p, b"[endif]", 7)) or (n >= 5 and memeq(p, b"<!-->", 5))
