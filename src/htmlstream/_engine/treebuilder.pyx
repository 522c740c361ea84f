# cython: language_level=3
"""The tree-builder simulator: the feedback a browser's tree builder gives its tokenizer.

The WHATWG tokenizer cannot run on its own: which state it reads text in (RCDATA after
``<title>``, RAWTEXT after ``<style>``, script data, PLAINTEXT) and whether ``<![CDATA[`` opens a
CDATA section depend on the tree builder.  This module follows the tree-construction rules of the
current HTML standard (including the 2025 ``<select>`` parsing) closely enough to give exactly that
feedback, without building a tree: it keeps the stack of open elements (names as integers, with
their namespace), the list of active formatting elements, the insertion mode, the stack of template
insertion modes and the flags that decide how later tokens are read (frameset-ok, quirks mode,
scripting, the head and form element pointers).  Everything is fixed-size C arrays; handling a tag
costs a few integer comparisons, and nothing here runs per byte of text.

See docs/design/tree-builder-feedback.md for what is tracked, the ambiguities and the strict mode.
"""

cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memchr, memmove

from htmlstream._engine.ascii cimport ascii_lower, lower
from htmlstream._engine.constants cimport (
    CDATA_SECTION,
    DATA,
    PLAINTEXT,
    RAWTEXT,
    RCDATA,
    SCRIPT_DATA,
)
from htmlstream._engine.lexer cimport DoctypeRec, Feedback, Lexer, TagRec
from htmlstream._engine.portable cimport load_le64
from htmlstream._engine.taghash cimport INVALID_HASH, hash_bytes

from htmlstream.errors import ParsingAmbiguityError

#: Default bound of the recorded stack of open elements (see docs/design/tree-builder-feedback.md).
DEFAULT_MAX_DEPTH = MAX_DEPTH_DEFAULT

#: The start tags whose attributes the simulator reads (every other tag may reach it with its
#: attributes skipped, see Lexer.set_attribute_policy): ``<input type>``, ``<font color|face|
#: size>`` (leaving foreign content), ``<annotation-xml encoding>`` (an integration point) and
#: the formatting elements other than ``<a>``, whose attributes the Noah's Ark clause compares.
#: Keep in step with find_attr/attrs_hash below.
ATTRIBUTE_TAGS = ("input", "font", "annotation-xml",
                  "b", "big", "code", "em", "i", "nobr", "s", "small", "strike", "strong", "tt",
                  "u")

NAMESPACE_URIS = (
    "http://www.w3.org/1999/xhtml",
    "http://www.w3.org/2000/svg",
    "http://www.w3.org/1998/Math/MathML",
)
_NS_SHORT = ("html", "svg", "math")


# ---------------------------------------------------------------------------------- tag ids

cdef enum Tid:
    T_OTHER
    T_A
    T_ADDRESS
    T_ANNOTATION_XML
    T_APPLET
    T_AREA
    T_ARTICLE
    T_ASIDE
    T_B
    T_BASE
    T_BASEFONT
    T_BGSOUND
    T_BIG
    T_BLOCKQUOTE
    T_BODY
    T_BR
    T_BUTTON
    T_CAPTION
    T_CENTER
    T_CODE
    T_COL
    T_COLGROUP
    T_DD
    T_DESC
    T_DETAILS
    T_DIALOG
    T_DIR
    T_DIV
    T_DL
    T_DT
    T_EM
    T_EMBED
    T_FIELDSET
    T_FIGCAPTION
    T_FIGURE
    T_FONT
    T_FOOTER
    T_FOREIGNOBJECT
    T_FORM
    T_FRAME
    T_FRAMESET
    T_H1
    T_H2
    T_H3
    T_H4
    T_H5
    T_H6
    T_HEAD
    T_HEADER
    T_HGROUP
    T_HR
    T_HTML
    T_I
    T_IFRAME
    T_IMAGE
    T_IMG
    T_INPUT
    T_KEYGEN
    T_LI
    T_LINK
    T_LISTING
    T_MAIN
    T_MALIGNMARK
    T_MARQUEE
    T_MATH
    T_MENU
    T_META
    T_MGLYPH
    T_MI
    T_MN
    T_MO
    T_MS
    T_MTEXT
    T_NAV
    T_NOBR
    T_NOEMBED
    T_NOFRAMES
    T_NOSCRIPT
    T_OBJECT
    T_OL
    T_OPTGROUP
    T_OPTION
    T_P
    T_PARAM
    T_PLAINTEXT
    T_PRE
    T_RB
    T_RP
    T_RT
    T_RTC
    T_RUBY
    T_S
    T_SCRIPT
    T_SEARCH
    T_SECTION
    T_SELECT
    T_SMALL
    T_SOURCE
    T_SPAN
    T_STRIKE
    T_STRONG
    T_STYLE
    T_SUB
    T_SUMMARY
    T_SUP
    T_SVG
    T_TABLE
    T_TBODY
    T_TD
    T_TEMPLATE
    T_TEXTAREA
    T_TFOOT
    T_TH
    T_THEAD
    T_TITLE
    T_TR
    T_TRACK
    T_TT
    T_U
    T_UL
    T_VAR
    T_WBR
    T_XMP
    T_COUNT

# In Tid order (index = tid).
_TAG_NAMES = (
    "", "a", "address", "annotation-xml", "applet", "area", "article", "aside", "b", "base",
    "basefont", "bgsound", "big", "blockquote", "body", "br", "button", "caption", "center",
    "code", "col", "colgroup", "dd", "desc", "details", "dialog", "dir", "div", "dl", "dt", "em",
    "embed", "fieldset", "figcaption", "figure", "font", "footer", "foreignobject", "form",
    "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr",
    "html", "i", "iframe", "image", "img", "input", "keygen", "li", "link", "listing", "main",
    "malignmark", "marquee", "math", "menu", "meta", "mglyph", "mi", "mn", "mo", "ms", "mtext",
    "nav", "nobr", "noembed", "noframes", "noscript", "object", "ol", "optgroup", "option", "p",
    "param", "plaintext", "pre", "rb", "rp", "rt", "rtc", "ruby", "s", "script", "search",
    "section", "select", "small", "source", "span", "strike", "strong", "style", "sub", "summary",
    "sup", "svg", "table", "tbody", "td", "template", "textarea", "tfoot", "th", "thead", "title",
    "tr", "track", "tt", "u", "ul", "var", "wbr", "xmp",
)

# Tag flags (HTML-namespace meaning of a name).
cdef enum TagFlag:
    F_SPECIAL = 1 << 0
    F_SCOPE = 1 << 1            # default-scope boundary
    F_IMPLIED_END = 1 << 2      # "generate implied end tags"
    F_THOROUGH_END = 1 << 3     # ... "thoroughly" adds these
    F_FORMATTING = 1 << 4
    F_VOID = 1 << 5             # inserted and immediately popped
    F_BREAKOUT = 1 << 6         # a start tag that leaves foreign content
    F_CLOSES_P = 1 << 7         # "address, article, ...": close a p, insert
    F_BLOCK_END = 1 << 8        # "</address>, </article>, ...": in scope -> pop until
    F_HEADING = 1 << 9
    F_GUARDED = 1 << 10         # text-content tags (strict mode)
    F_PLAIN_START = 1 << 11     # "any other start tag" in body: body_start names no such tid
    F_POP_END = 1 << 12         # in body, an end tag whose element is the current node pops it
    F_LIST_ITEM = 1 << 13       # li, dd, dt
    F_VOID_RECONSTRUCT = 1 << 14    # in body: reconstruct, insert (void), frameset-ok "not ok"
    F_VOID_PLAIN = 1 << 15          # in body: insert (void), nothing else

cdef uint64_t TAG_HASH[<int>T_COUNT]
cdef uint32_t TAG_FLAGS[<int>T_COUNT]
# Open-addressing table from name hash to tid (TID_SLOTS entries, linear probing).
cdef enum:
    TID_SLOTS = 1024
cdef uint64_t SLOT_HASH[TID_SLOTS]
cdef uint16_t SLOT_TID[TID_SLOTS]

_FLAG_LISTS = (
    (F_SPECIAL, "address applet area article aside base basefont bgsound blockquote body br "
                "button caption center col colgroup dd details dir div dl dt embed fieldset "
                "figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hgroup "
                "hr html iframe img input keygen li link listing main marquee menu meta nav "
                "noembed noframes noscript object ol p param plaintext pre script search section "
                "select source style summary table tbody td template textarea tfoot th thead "
                "title tr track ul wbr xmp"),
    (F_SCOPE, "applet caption html table td th marquee object select template"),
    (F_IMPLIED_END, "dd dt li optgroup option p rb rp rt rtc"),
    (F_THOROUGH_END, "caption colgroup tbody td tfoot th thead tr"),
    (F_FORMATTING, "a b big code em font i nobr s small strike strong tt u"),
    (F_VOID, "area base basefont bgsound br col embed frame hr image img input keygen link meta "
             "param source track wbr"),
    (F_BREAKOUT, "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 "
                 "head hr i img li listing menu meta nobr ol p pre ruby s small span strong "
                 "strike sub sup table tt u ul var"),
    (F_CLOSES_P, "address article aside blockquote center details dialog dir div dl fieldset "
                 "figcaption figure footer header hgroup main menu nav ol p search section "
                 "summary ul"),
    (F_BLOCK_END, "address article aside blockquote button center details dialog dir div dl "
                  "fieldset figcaption figure footer header hgroup listing main menu nav ol pre "
                  "search section select summary ul"),
    (F_HEADING, "h1 h2 h3 h4 h5 h6"),
    (F_LIST_ITEM, "li dd dt"),
    (F_GUARDED, "textarea title plaintext script style iframe xmp noembed noframes noscript"),
    # Ordinary start tags for body_fast (and T_OTHER, set in _init_tables).  Keep in step with
    # body_start: a tid listed here must fall through every branch of it to its last lines
    # ("reconstruct, insert").
    (F_PLAIN_START, "annotation-xml desc foreignobject malignmark mglyph mi mn mo ms mtext span "
                    "sub sup var"),
    # body_fast: the end tags whose body_end rule, when the current node is an HTML element of
    # the tag's name, comes to popping it ("any other end tag", the F_BLOCK_END list, p, li,
    # dd, dt, headings; the formatting elements when the adoption agency's first step does it)
    (F_POP_END, "annotation-xml desc foreignobject malignmark mglyph mi mn mo ms mtext span "
                "sub sup var "
                "address article aside blockquote button center details dialog dir div dl "
                "fieldset figcaption figure footer header hgroup listing main menu nav ol pre "
                "search section select summary ul "
                "p li dd dt h1 h2 h3 h4 h5 h6 "
                "a b big code em font i nobr s small strike strong tt u"),
    # quick_tag: the void elements whose body_start (or head_start) rule is only the one named
    # by the flag.  Keep in step with those rules.
    (F_VOID_RECONSTRUCT, "area br embed image img keygen wbr"),
    (F_VOID_PLAIN, "param source track base basefont bgsound link meta"),
)


cdef inline Py_ssize_t slot_of(uint64_t h) noexcept nogil:
    return <Py_ssize_t>(((h * <uint64_t>0x9E3779B97F4A7C15ULL) >> 54) & (TID_SLOTS - 1))


cdef void _init_tables() except *:
    cdef int tid, i
    cdef bytes b
    cdef uint64_t h
    cdef Py_ssize_t k
    assert len(_TAG_NAMES) == <int>T_COUNT, "tag table out of step with Tid"
    for k in range(TID_SLOTS):
        SLOT_HASH[k] = INVALID_HASH
        SLOT_TID[k] = T_OTHER
    for tid in range(<int>T_COUNT):
        TAG_FLAGS[tid] = 0
        b = _TAG_NAMES[tid].encode("ascii")
        h = hash_bytes(<const unsigned char*>b, len(b)) if tid else INVALID_HASH
        TAG_HASH[tid] = h
        if tid and h != INVALID_HASH:
            k = slot_of(h)
            while SLOT_HASH[k] != INVALID_HASH:
                k = (k + 1) & (TID_SLOTS - 1)
            SLOT_HASH[k] = h
            SLOT_TID[k] = tid
    index = {name: i for i, name in enumerate(_TAG_NAMES)}
    for flag, names in _FLAG_LISTS:
        for name in names.split():
            TAG_FLAGS[<int>index[name]] |= flag
    TAG_FLAGS[<int>T_OTHER] |= F_PLAIN_START | F_POP_END


_init_tables()


cdef inline int tid_of_hash(uint64_t h) noexcept nogil:
    cdef Py_ssize_t k = slot_of(h)
    cdef uint64_t v
    while True:
        v = SLOT_HASH[k]
        if v == h:
            return SLOT_TID[k]
        if v == INVALID_HASH:
            return T_OTHER
        k = (k + 1) & (TID_SLOTS - 1)




cdef inline bint is_ws(unsigned char c) noexcept nogil:
    return c == 0x20 or c == 0x0A or c == 0x09 or c == 0x0C or c == 0x0D


cdef inline uint64_t fnv_step(uint64_t h, unsigned char c) noexcept nogil:
    return (h ^ c) * <uint64_t>1099511628211ULL


cdef inline uint64_t mix64(uint64_t z) noexcept nogil:
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline uint64_t swar_lower(uint64_t w) noexcept nogil:
    """``w`` with every byte in A-Z (of the eight) lower-cased, the others unchanged."""
    cdef uint64_t low7 = w & <uint64_t>0x7F7F7F7F7F7F7F7FULL
    cdef uint64_t ge_a = low7 + <uint64_t>0x3F3F3F3F3F3F3F3FULL    # bit 7 set: byte >= 'A'
    cdef uint64_t gt_z = low7 + <uint64_t>0x2525252525252525ULL    # bit 7 set: byte > 'Z'
    return w | (((ge_a & ~gt_z & ~w) & <uint64_t>0x8080808080808080ULL) >> 2)


cdef inline bint swar_has_byte(uint64_t w, uint64_t pattern) noexcept nogil:
    """Whether one of the eight bytes of ``w`` equals the byte repeated in ``pattern``."""
    cdef uint64_t x = w ^ pattern
    return ((x - <uint64_t>0x0101010101010101ULL) & ~x & <uint64_t>0x8080808080808080ULL) != 0


cdef uint64_t fnv_name(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """A 64-bit hash of a tag or attribute name as the tokenizer gives it (ASCII-lower-cased,
    NUL as U+FFFD), for names the 5-bit hash cannot hold: two names hash alike when the tokenizer
    makes the same name of them.

    Names without NUL and 0xEF bytes (all but a few) are hashed eight bytes at a time; a name
    with one (the tokenizer's name then has an 0xEF byte) is hashed byte by byte with FNV-1a,
    NUL as EF BF BD, so the two ways never meet on one tokenizer name."""
    cdef uint64_t h = <uint64_t>0x243F6A8885A308D3ULL ^ <uint64_t>n
    cdef uint64_t w
    cdef Py_ssize_t i = 0
    cdef unsigned char c
    while i + 8 <= n:
        w = load_le64(p + i)
        if swar_has_byte(w, 0) or swar_has_byte(w, <uint64_t>0xEFEFEFEFEFEFEFEFULL):
            return fnv_name_bytes(p, n)
        h = (h ^ swar_lower(w)) * <uint64_t>0x9E3779B97F4A7C15ULL
        h ^= h >> 32
        i += 8
    if i < n:
        w = 0
        while i < n:
            c = p[i]
            if c == 0 or c == 0xEF:
                return fnv_name_bytes(p, n)
            w = (w << 8) | lower(c)
            i += 1
        h = (h ^ w) * <uint64_t>0x9E3779B97F4A7C15ULL
    return mix64(h)


cdef inline uint64_t xname_of(TreeBuilderSimulator s, const unsigned char* p, Py_ssize_t n,
                              Py_ssize_t avail) noexcept:
    """fnv_name(p, n) for a tag name, through a small cache keyed by the raw bytes of names of
    up to 16 bytes (custom elements come again and again); ``avail``: bytes readable at p."""
    cdef uint64_t w0, w1
    cdef XnameSlot* slot
    if n > 16 or avail < 16 or not has_name_caches(s):
        return fnv_name(p, n)
    w0 = load_le64(p)               # (first byte lowest: the masks below keep the name's bytes)
    w1 = load_le64(p + 8)
    if n < 8:
        w0 &= ((<uint64_t>1) << (8 * n)) - 1
        w1 = 0
    elif n < 16:
        w1 &= ((<uint64_t>1) << (8 * (n - 8))) - 1
    slot = &s.name_caches.xcache[((w0 ^ (w1 * <uint64_t>0xC2B2AE3D27D4EB4FULL) ^ <uint64_t>n)
                      * <uint64_t>0x9E3779B97F4A7C15ULL) >> 60]
    if slot.w0 != w0 or slot.w1 != w1 or slot.n != <uint64_t>n:
        slot.w0 = w0
        slot.w1 = w1
        slot.n = n
        slot.xname = fnv_name(p, n)
    return slot.xname


cdef uint64_t fnv_name_bytes(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """FNV-1a of the tokenizer's name (see fnv_name), byte by byte."""
    cdef uint64_t h = <uint64_t>14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] == 0:
            h = fnv_step(fnv_step(fnv_step(h, 0xEF), 0xBF), 0xBD)
        else:
            h = fnv_step(h, lower(p[i]))
    return h


cdef uint64_t hash_raw(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """A 64-bit hash of raw bytes (attribute values), eight bytes at a time."""
    cdef uint64_t h = <uint64_t>0x243F6A8885A308D3ULL ^ <uint64_t>n
    cdef uint64_t w
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        w = load_le64(p + i)
        h = (h ^ w) * <uint64_t>0x9E3779B97F4A7C15ULL
        h ^= h >> 32
        i += 8
    if i < n:
        w = 0
        while i < n:
            w = (w << 8) | p[i]
            i += 1
        h = (h ^ w) * <uint64_t>0x9E3779B97F4A7C15ULL
    return mix64(h)


cdef inline bint eq_ci(const unsigned char* p, Py_ssize_t n, const char* lit, Py_ssize_t m) noexcept:
    cdef Py_ssize_t i
    if n != m:
        return False
    for i in range(n):
        if lower(p[i]) != <unsigned char>lit[i]:
            return False
    return True


# ---------------------------------------------------------------------------------- modes

# (the Mode enum is in treebuilder.pxd: the rewriter reads the mode too)

_MODE_NAMES = (
    "initial", "before html", "before head", "in head", "in head noscript", "after head",
    "in body", "text", "in table", "in caption", "in column group", "in table body", "in row",
    "in cell", "in template", "after body", "in frameset", "after frameset", "after after body",
    "after after frameset",
)

cdef enum Scope:
    SC_DEFAULT
    SC_LIST
    SC_BUTTON
    SC_TABLE

# Return values of the mode handlers.
cdef enum:
    DONE = 0
    REPROCESS = 1


# ---------------------------------------------------------------------------------- quirks

_QUIRKS_PUBLIC_EXACT = (
    "-//w3o//dtd w3 html strict 3.0//en//", "-/w3c/dtd html 4.0 transitional/en", "html",
)
_QUIRKS_SYSTEM_EXACT = "http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd"
_QUIRKS_PUBLIC_PREFIXES = tuple(p.lower() for p in (
    "+//Silmaril//dtd html Pro v0r11 19970101//",
    "-//AS//DTD HTML 3.0 asWedit + extensions//",
    "-//AdvaSoft Ltd//DTD HTML 3.0 asWedit + extensions//",
    "-//IETF//DTD HTML 2.0 Level 1//",
    "-//IETF//DTD HTML 2.0 Level 2//",
    "-//IETF//DTD HTML 2.0 Strict Level 1//",
    "-//IETF//DTD HTML 2.0 Strict Level 2//",
    "-//IETF//DTD HTML 2.0 Strict//",
    "-//IETF//DTD HTML 2.0//",
    "-//IETF//DTD HTML 2.1E//",
    "-//IETF//DTD HTML 3.0//",
    "-//IETF//DTD HTML 3.2 Final//",
    "-//IETF//DTD HTML 3.2//",
    "-//IETF//DTD HTML 3//",
    "-//IETF//DTD HTML Level 0//",
    "-//IETF//DTD HTML Level 1//",
    "-//IETF//DTD HTML Level 2//",
    "-//IETF//DTD HTML Level 3//",
    "-//IETF//DTD HTML Strict Level 0//",
    "-//IETF//DTD HTML Strict Level 1//",
    "-//IETF//DTD HTML Strict Level 2//",
    "-//IETF//DTD HTML Strict Level 3//",
    "-//IETF//DTD HTML Strict//",
    "-//IETF//DTD HTML//",
    "-//Metrius//DTD Metrius Presentational//",
    "-//Microsoft//DTD Internet Explorer 2.0 HTML Strict//",
    "-//Microsoft//DTD Internet Explorer 2.0 HTML//",
    "-//Microsoft//DTD Internet Explorer 2.0 Tables//",
    "-//Microsoft//DTD Internet Explorer 3.0 HTML Strict//",
    "-//Microsoft//DTD Internet Explorer 3.0 HTML//",
    "-//Microsoft//DTD Internet Explorer 3.0 Tables//",
    "-//Netscape Comm. Corp.//DTD HTML//",
    "-//Netscape Comm. Corp.//DTD Strict HTML//",
    "-//O'Reilly and Associates//DTD HTML 2.0//",
    "-//O'Reilly and Associates//DTD HTML Extended 1.0//",
    "-//O'Reilly and Associates//DTD HTML Extended Relaxed 1.0//",
    "-//SQ//DTD HTML 2.0 HoTMetaL + extensions//",
    "-//SoftQuad Software//DTD HoTMetaL PRO 6.0::19990601::extensions to HTML 4.0//",
    "-//SoftQuad//DTD HoTMetaL PRO 4.0::19970916::extensions to HTML 4.0//",
    "-//Spyglass//DTD HTML 2.0 Extended//",
    "-//Sun Microsystems Corp.//DTD HotJava HTML//",
    "-//Sun Microsystems Corp.//DTD HotJava Strict HTML//",
    "-//W3C//DTD HTML 3 1995-03-24//",
    "-//W3C//DTD HTML 3.2 Draft//",
    "-//W3C//DTD HTML 3.2 Final//",
    "-//W3C//DTD HTML 3.2//",
    "-//W3C//DTD HTML 3.2S Draft//",
    "-//W3C//DTD HTML 4.0 Frameset//",
    "-//W3C//DTD HTML 4.0 Transitional//",
    "-//W3C//DTD HTML Experimental 19960712//",
    "-//W3C//DTD HTML Experimental 970421//",
    "-//W3C//DTD W3 HTML//",
    "-//W3O//DTD W3 HTML 3.0//",
    "-//WebTechs//DTD Mozilla HTML 2.0//",
    "-//WebTechs//DTD Mozilla HTML//",
))
_QUIRKS_PUBLIC_PREFIXES_NO_SYSTEM = (
    "-//w3c//dtd html 4.01 frameset//", "-//w3c//dtd html 4.01 transitional//",
)


def doctype_is_quirky(name, public_id, system_id, force_quirks):
    """Whether a DOCTYPE puts the document in quirks mode (the "initial" insertion mode's test).

    ``name``, ``public_id``, ``system_id`` are decoded strings or ``None`` when missing.
    """
    if force_quirks or name is None or ascii_lower(name) != "html":
        return True
    pub = None if public_id is None else ascii_lower(public_id)
    sysid = None if system_id is None else ascii_lower(system_id)
    if pub is not None:
        if pub in _QUIRKS_PUBLIC_EXACT or pub.startswith(_QUIRKS_PUBLIC_PREFIXES):
            return True
        if sysid is None and pub.startswith(_QUIRKS_PUBLIC_PREFIXES_NO_SYSTEM):
            return True
    return sysid == _QUIRKS_SYSTEM_EXACT


cdef object _slice_str(Lexer lx, Py_ssize_t start, Py_ssize_t end):
    if start < 0:
        return None
    raw = PyBytes_FromStringAndSize(<const char*>lx.data + (start - lx.base), end - start)
    text = raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return text.replace("\0", "\ufffd")


# ---------------------------------------------------------------------------------- stack

cdef inline bint is_html(OpenElement* e, int tid) noexcept:
    return e.ns == NS_HTML and e.tid == tid


cdef inline OpenElement* top(TreeBuilderSimulator s) noexcept:
    """The current node, or NULL when it is not known (empty, or beyond max_depth)."""
    if s.overflow > 0 or s.depth == 0:
        return NULL
    return &s.stack[s.depth - 1]


cdef inline bint cur_is(TreeBuilderSimulator s, int tid) noexcept:
    cdef OpenElement* e = top(s)
    return e != NULL and e.ns == NS_HTML and e.tid == tid


cdef inline uint8_t html_flags(int tid) noexcept:
    cdef uint32_t f = TAG_FLAGS[tid]
    cdef uint8_t r = 0
    if f & F_SPECIAL:
        r |= E_SPECIAL
    if f & F_SCOPE:
        r |= E_SCOPE
    return r


cdef inline void lower_changed(TreeBuilderSimulator s, Py_ssize_t i) noexcept:
    if i < s.changed_from:
        s.changed_from = i


cdef inline void begin_changes(TreeBuilderSimulator s) noexcept:
    """changed_from (and the transient elements) start afresh for a new event."""
    s.changed_from = s.depth
    s.n_transients = 0
    s.n_kept_ancestors = 0
    s.event_id_mark = s.next_id


cdef void add_transient(TreeBuilderSimulator s, uint64_t name, uint8_t ns,
                        Py_ssize_t pos) noexcept:
    """Note an element created and closed again within the current event."""
    if s.overflow > 0 or s.n_transients >= 4:
        return
    s.transients[s.n_transients].name = name
    s.transients[s.n_transients].ns = ns
    s.transients[s.n_transients].pos = pos
    s.n_transients += 1


cdef inline void text_popped(TreeBuilderSimulator s, Py_ssize_t depth_before) noexcept:
    """Text is about to pop the current node: keep it for the text before the change, if the
    node was open before the text (``depth_before``: the depth when the text began).  A node
    the same text implied first (white space, then "x", before <html>: the head is implied,
    then popped, by the "x") never held the text before the change (issue 38)."""
    if 0 < s.depth <= depth_before and s.n_text_popped < 2:
        s.text_popped[s.n_text_popped] = s.stack[s.depth - 1]
        s.n_text_popped += 1


cdef void pop_head(TreeBuilderSimulator s) noexcept:
    """Pop the current node (the head element); note it when it was implied by this event."""
    cdef OpenElement* e = top(s)
    if e != NULL and e.id > s.event_id_mark:
        add_transient(s, e.name, e.ns, s.depth - 1)
    pop(s)


# The stack and the list of active formatting elements start small and grow (doubling) up to
# max_depth: a stream's simulator costs a few KiB, not max_depth entries (~100 KiB at the
# default), and short documents do not make the C heap grow and shrink by that much each time.
cdef enum:
    STACK_INITIAL = 24
    AFE_INITIAL = 16


cdef bint grow_array(void** array, Py_ssize_t* cap, Py_ssize_t max_depth,
                     size_t item_size) noexcept:
    """Double ``*array`` (``*cap`` items) up to ``max_depth`` items; False when it is there
    already or memory is refused (which then acts as max_depth)."""
    cdef Py_ssize_t new_cap = min(2 * cap[0], max_depth)
    cdef void* grown
    if new_cap <= cap[0]:
        return False
    grown = realloc(array[0], new_cap * item_size)
    if grown == NULL:
        return False
    array[0] = grown
    cap[0] = new_cap
    return True


cdef inline bint stack_full(TreeBuilderSimulator s) noexcept:
    """Whether stack[depth] cannot be written (max_depth reached: deeper elements are only
    counted)."""
    return s.depth >= s.stack_cap and not grow_array(
        <void**>&s.stack, &s.stack_cap, s.max_depth, sizeof(OpenElement))


cdef inline bint afe_full(TreeBuilderSimulator s) noexcept:
    """Whether afe[afe_len] cannot be written (max_depth entries: the oldest is forgotten)."""
    return s.afe_len >= s.afe_cap and not grow_array(
        <void**>&s.afe, &s.afe_cap, s.max_depth, sizeof(FormattingEntry))


cdef inline void push_entry(TreeBuilderSimulator s, OpenElement* e) noexcept:
    """Push ``e`` (its id already set); beyond max_depth it is only counted."""
    if s.overflow > 0 or stack_full(s):
        s.overflow += 1
        s.overflow_last_tid = e.tid
        s.overflow_last_ns = e.ns
        return
    s.stack[s.depth] = e[0]
    if e.tid == T_P and e.ns == NS_HTML:
        s.n_p += 1
    lower_changed(s, s.depth)
    s.depth += 1


cdef inline void push_new(TreeBuilderSimulator s, OpenElement* e) noexcept:
    s.next_id += 1
    e.id = s.next_id
    push_entry(s, e)


cdef inline void pop(TreeBuilderSimulator s) noexcept:
    if s.overflow > 0:
        s.overflow -= 1
    elif s.depth > 0:
        s.depth -= 1
        if is_html(&s.stack[s.depth], T_P):
            s.n_p -= 1
        lower_changed(s, s.depth)


cdef inline void truncate(TreeBuilderSimulator s, Py_ssize_t i) noexcept:
    """Pop elements until the one at index ``i`` has been popped."""
    cdef Py_ssize_t j
    s.overflow = 0
    if i < s.depth:
        if s.n_p > 0:
            for j in range(i, s.depth):
                if is_html(&s.stack[j], T_P):
                    s.n_p -= 1
        s.depth = i
        lower_changed(s, i)


cdef void remove_at(TreeBuilderSimulator s, Py_ssize_t i) noexcept:
    if i < 0 or i >= s.depth:
        return
    if is_html(&s.stack[i], T_P):
        s.n_p -= 1
    memmove(&s.stack[i], &s.stack[i + 1], (s.depth - i - 1) * sizeof(OpenElement))
    s.depth -= 1
    lower_changed(s, i)


cdef void remove_keeping_tree(TreeBuilderSimulator s, Py_ssize_t i) noexcept:
    """remove_at() for an element that stays the parent of the one above it in the tree."""
    if i < 0 or i >= s.depth:
        return
    if s.n_kept_ancestors < 4:
        s.kept_ancestors[s.n_kept_ancestors] = s.stack[i].id
        s.n_kept_ancestors += 1
    remove_at(s, i)


cdef void insert_at(TreeBuilderSimulator s, Py_ssize_t i, OpenElement* e) noexcept:
    if stack_full(s):
        # Full: the current node goes beyond the recorded part.
        s.depth -= 1
        if is_html(&s.stack[s.depth], T_P):
            s.n_p -= 1
        s.overflow += 1
        if i > s.depth:
            s.overflow += 1
            return
    memmove(&s.stack[i + 1], &s.stack[i], (s.depth - i) * sizeof(OpenElement))
    s.stack[i] = e[0]
    if e.tid == T_P and e.ns == NS_HTML:
        s.n_p += 1
    s.depth += 1
    lower_changed(s, i)


cdef inline Py_ssize_t index_of_id(TreeBuilderSimulator s, uint64_t id) noexcept:
    cdef Py_ssize_t i = s.depth - 1
    while i >= 0:
        if s.stack[i].id == id:
            return i
        i -= 1
    return -1


cdef inline bint is_boundary(OpenElement* e, int kind) noexcept:
    if kind == SC_TABLE:
        return e.ns == NS_HTML and (e.tid == T_HTML or e.tid == T_TABLE or e.tid == T_TEMPLATE)
    if e.flags & E_SCOPE:
        return True
    if kind == SC_LIST:
        return e.ns == NS_HTML and (e.tid == T_OL or e.tid == T_UL)
    if kind == SC_BUTTON:
        return e.ns == NS_HTML and e.tid == T_BUTTON
    return False


cdef Py_ssize_t find_in_scope(TreeBuilderSimulator s, int tid, int kind) noexcept:
    """Index of the topmost HTML ``tid`` element if it is in the given scope, else -1."""
    cdef Py_ssize_t i = s.depth - 1
    cdef OpenElement* e
    if tid == T_P and s.n_p == 0:
        return -1       # (no <p> open: the usual answer to "close a p element")
    while i >= 0:
        e = &s.stack[i]
        if e.ns == NS_HTML and e.tid == tid:
            return i
        if is_boundary(e, kind):
            return -1
        i -= 1
    return -1


cdef Py_ssize_t find_in_table_scope3(TreeBuilderSimulator s, int a, int b, int c) noexcept:
    cdef Py_ssize_t i = s.depth - 1
    cdef OpenElement* e
    while i >= 0:
        e = &s.stack[i]
        if e.ns == NS_HTML and (e.tid == a or e.tid == b or e.tid == c):
            return i
        if is_boundary(e, SC_TABLE):
            return -1
        i -= 1
    return -1


cdef Py_ssize_t find_heading_in_scope(TreeBuilderSimulator s) noexcept:
    cdef Py_ssize_t i = s.depth - 1
    cdef OpenElement* e
    while i >= 0:
        e = &s.stack[i]
        if e.ns == NS_HTML and TAG_FLAGS[e.tid] & F_HEADING:
            return i
        if is_boundary(e, SC_DEFAULT):
            return -1
        i -= 1
    return -1


cdef bint node_in_scope(TreeBuilderSimulator s, Py_ssize_t k) noexcept:
    """Whether the element at index ``k`` is in (default) scope."""
    cdef Py_ssize_t i = s.depth - 1
    while i > k:
        if s.stack[i].flags & E_SCOPE:
            return False
        i -= 1
    return k >= 0


cdef Py_ssize_t template_index(TreeBuilderSimulator s) noexcept:
    cdef Py_ssize_t i = s.depth - 1
    while i >= 0:
        if is_html(&s.stack[i], T_TEMPLATE):
            return i
        i -= 1
    return -1


cdef inline bint same_name(OpenElement* e, TreeBuilderSimulator s) noexcept:
    return e.name == s.t_name and (e.name != INVALID_HASH or e.xname == s.t_xname)


cdef void gen_implied(TreeBuilderSimulator s, int except_tid, bint thorough) noexcept:
    cdef OpenElement* e
    cdef uint32_t f
    while True:
        e = top(s)
        if e == NULL or e.ns != NS_HTML or e.tid == except_tid:
            return
        f = TAG_FLAGS[e.tid]
        if not (f & F_IMPLIED_END or (thorough and f & F_THOROUGH_END)):
            return
        pop(s)


cdef inline void close_p_in_button_scope(TreeBuilderSimulator s) noexcept:
    cdef Py_ssize_t i = find_in_scope(s, T_P, SC_BUTTON)
    if i >= 0:
        truncate(s, i)


cdef void clear_to_context(TreeBuilderSimulator s, int a, int b, int c) noexcept:
    """Pop until the current node is an HTML a, b, c, template or html element."""
    cdef OpenElement* e
    while s.depth > 0 or s.overflow > 0:
        e = top(s)
        if e != NULL and e.ns == NS_HTML and (e.tid == a or e.tid == b or e.tid == c
                                              or e.tid == T_TEMPLATE or e.tid == T_HTML):
            return
        pop(s)


cdef void reset_mode(TreeBuilderSimulator s) noexcept:
    cdef Py_ssize_t i = s.depth - 1
    cdef OpenElement* e
    cdef bint last
    cdef int t
    while i >= 0:
        last = i == 0
        e = &s.stack[i]
        if e.ns == NS_HTML:
            t = e.tid
            if (t == T_TD or t == T_TH) and not last:
                s.mode = M_IN_CELL
                return
            if t == T_TR:
                s.mode = M_IN_ROW
                return
            if t == T_TBODY or t == T_THEAD or t == T_TFOOT:
                s.mode = M_IN_TABLE_BODY
                return
            if t == T_CAPTION:
                s.mode = M_IN_CAPTION
                return
            if t == T_COLGROUP:
                s.mode = M_IN_COLUMN_GROUP
                return
            if t == T_TABLE:
                s.mode = M_IN_TABLE
                return
            if t == T_TEMPLATE:
                s.mode = s.template_modes[s.template_modes_len - 1] if s.template_modes_len \
                    else M_IN_BODY
                return
            if t == T_HEAD and not last:
                s.mode = M_IN_HEAD
                return
            if t == T_BODY:
                s.mode = M_IN_BODY
                return
            if t == T_FRAMESET:
                s.mode = M_IN_FRAMESET
                return
            if t == T_HTML:
                s.mode = M_AFTER_HEAD if s.head_seen else M_BEFORE_HEAD
                return
        if last:
            s.mode = M_IN_BODY
            return
        i -= 1
    s.mode = M_IN_BODY


cdef inline void push_template_mode(TreeBuilderSimulator s, int mode) noexcept:
    if s.template_modes == NULL:
        # (allocated at the first <template>: most documents have none; memory refused acts as
        # max_depth, as for the stack)
        s.template_modes = <uint8_t*>malloc(s.max_depth)
        if s.template_modes == NULL:
            return
    if s.template_modes_len < s.max_depth:
        s.template_modes[s.template_modes_len] = <uint8_t>mode
        s.template_modes_len += 1


cdef inline void set_template_mode(TreeBuilderSimulator s, int mode) noexcept:
    if s.template_modes_len:
        s.template_modes[s.template_modes_len - 1] = <uint8_t>mode
    else:
        push_template_mode(s, mode)


# ---------------------------------------------------------------------------------- insertion

cdef inline void note_start(TreeBuilderSimulator s, int ns, bint pushed) noexcept:
    s.last_namespace = ns
    s.last_pushed = pushed
    s.last_inserted = True


cdef inline void push_html_entry(TreeBuilderSimulator s, uint64_t name, uint64_t xname,
                                 Py_ssize_t offset, int tid) noexcept:
    """Push the entry of a new HTML element (id s.next_id) on a stack with room for it, written
    in place field by field (a struct built and then copied would stall on store forwarding)."""
    cdef OpenElement* e = &s.stack[s.depth]
    e.name = name
    e.xname = xname
    e.id = s.next_id
    e.offset = offset
    e.tid = <uint16_t>tid
    e.ns = NS_HTML
    e.flags = html_flags(tid)
    if tid == T_P:
        s.n_p += 1
    lower_changed(s, s.depth)
    s.depth += 1


cdef void insert_html(TreeBuilderSimulator s) noexcept:
    """Insert an HTML element for the current start tag (push_new, from the t_* fields)."""
    s.next_id += 1
    if s.overflow > 0 or stack_full(s):
        s.overflow += 1
        s.overflow_last_tid = s.t_tid
        s.overflow_last_ns = NS_HTML
    else:
        push_html_entry(s, s.t_name, s.t_xname, s.t_offset, s.t_tid)
    note_start(s, NS_HTML, True)
    if s.t_name == INVALID_HASH:
        remember_long_name(s)


cdef void insert_void(TreeBuilderSimulator s) noexcept:
    """Insert an HTML element for the current start tag and pop it at once."""
    note_start(s, NS_HTML, False)


cdef void insert_implied(TreeBuilderSimulator s, int tid) noexcept:
    cdef OpenElement e
    e.name = TAG_HASH[tid]
    e.xname = 0
    e.offset = -1
    e.tid = <uint16_t>tid
    e.ns = NS_HTML
    e.flags = html_flags(tid) | E_IMPLIED
    push_new(s, &e)


cdef inline void remember_long_name(TreeBuilderSimulator s) noexcept:
    """Names the 5-bit hash cannot hold: keep the name for open_elements().  A C cache of the
    names seen recently (two-way set-associative, 128 sets, most recent first) keeps the
    dictionary out of the way: a document has a few dozen such names, used again and again."""
    cdef uint64_t x = s.t_xname
    cdef Py_ssize_t k = <Py_ssize_t>((x >> 57) << 1)
    cdef uint64_t* seen
    if s.t_tag == NULL:
        return
    if not has_name_caches(s):
        _remember_long_name(s)      # (no memory for the cache: the dictionary alone)
        return
    seen = s.name_caches.long_seen
    if seen[k] == x:
        return
    if seen[k + 1] == x:
        seen[k + 1] = seen[k]
        seen[k] = x
        return
    seen[k + 1] = seen[k]
    seen[k] = x
    _remember_long_name(s)


cdef inline bint has_name_caches(TreeBuilderSimulator s) noexcept:
    """Whether s.name_caches is there, allocating it at the first need (false: no memory; the
    caches are only shortcuts)."""
    if s.name_caches == NULL:
        s.name_caches = <NameCaches*>calloc(1, sizeof(NameCaches))
    return s.name_caches != NULL


cdef object _remember_long_name(TreeBuilderSimulator s):
    # (remember_long_name's slow path: the name is not in the C cache.)
    cdef TagRec* t = s.t_tag
    key = s.t_xname
    if s.long_names is None:
        s.long_names = {}
    if key not in s.long_names and len(s.long_names) < 256:
        raw = PyBytes_FromStringAndSize(<const char*>s.t_data + (t.name_start - s.t_base),
                                        t.name_end - t.name_start)
        # (bytes.lower() lower-cases ASCII letters only, as the tokenizer does; an ASCII byte is
        # never part of a multi-byte sequence, so lowering before decoding changes nothing else)
        s.long_names[key] = raw.lower().decode("utf-8", "replace").replace("\0", "\ufffd")
    return None


cdef Py_ssize_t find_attr(TreeBuilderSimulator s, const char* name, Py_ssize_t m) noexcept:
    cdef TagRec* t = s.t_tag
    cdef Py_ssize_t i
    if t == NULL or s.t_no_attrs:
        return -1
    for i in range(t.n_attrs):
        if eq_ci(s.t_data + (t.attrs[i].name_start - s.t_base),
                 t.attrs[i].name_end - t.attrs[i].name_start, name, m):
            return i
    return -1


cdef bint attr_value_is(TreeBuilderSimulator s, Py_ssize_t i, bytes lit) except -1:
    """Whether attribute ``i``'s value is ``lit`` (lower-case ASCII; compared ASCII
    case-insensitively, references resolved)."""
    cdef TagRec* t = s.t_tag
    cdef const unsigned char* p
    cdef Py_ssize_t n
    if t.attrs[i].value_start < 0:
        return len(lit) == 0
    p = s.t_data + (t.attrs[i].value_start - s.t_base)
    n = t.attrs[i].value_end - t.attrs[i].value_start
    if memchr(p, b'&', n) == NULL and memchr(p, 0, n) == NULL and memchr(p, 13, n) == NULL:
        return eq_ci(p, n, lit, len(lit))
    # Rare: character references (or NUL / CR) in the value.
    from htmlstream.charrefs import decode_charrefs
    value = PyBytes_FromStringAndSize(<const char*>p, n).decode("utf-8", "replace")
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    value = decode_charrefs(value, in_attribute=True).replace("\0", "\ufffd")
    return ascii_lower(value) == lit.decode("ascii")


cdef uint64_t attrs_hash(TreeBuilderSimulator s) noexcept:
    """An order-independent hash of the current tag's attributes (duplicates dropped)."""
    cdef TagRec* t = s.t_tag
    cdef Py_ssize_t i, j, ni, nj
    cdef const unsigned char* pi
    cdef const unsigned char* pj
    cdef uint64_t total = 0, count = 0, hv
    cdef bint dup
    if t == NULL or s.t_no_attrs:
        return 0
    for i in range(t.n_attrs):
        pi = s.t_data + (t.attrs[i].name_start - s.t_base)
        ni = t.attrs[i].name_end - t.attrs[i].name_start
        dup = False
        for j in range(i):
            pj = s.t_data + (t.attrs[j].name_start - s.t_base)
            nj = t.attrs[j].name_end - t.attrs[j].name_start
            if ni == nj and fnv_name(pi, ni) == fnv_name(pj, nj):
                dup = True
                break
        if dup:
            continue
        if t.attrs[i].value_start >= 0:
            hv = hash_raw(s.t_data + (t.attrs[i].value_start - s.t_base),
                         t.attrs[i].value_end - t.attrs[i].value_start)
        else:
            hv = hash_raw(NULL, 0)
        total += mix64(fnv_name(pi, ni) * <uint64_t>31 + hv)
        count += 1
    return total ^ mix64(count)


cdef int insert_foreign(TreeBuilderSimulator s, int ns) except -1:
    """Insert a foreign element for the current start tag (not pushed when self-closing)."""
    cdef OpenElement e
    cdef int tid = s.t_tid
    cdef uint8_t flags = 0
    cdef Py_ssize_t i
    if ns == NS_MATHML:
        if tid == T_MI or tid == T_MO or tid == T_MN or tid == T_MS or tid == T_MTEXT:
            flags = E_SPECIAL | E_SCOPE | E_MATHML_TEXT_IP
        elif tid == T_ANNOTATION_XML:
            flags = E_SPECIAL | E_SCOPE
            i = find_attr(s, b"encoding", 8)
            if i >= 0 and (attr_value_is(s, i, b"text/html")
                           or attr_value_is(s, i, b"application/xhtml+xml")):
                flags |= E_HTML_IP
    elif ns == NS_SVG:
        if tid == T_FOREIGNOBJECT or tid == T_DESC or tid == T_TITLE:
            flags = E_SPECIAL | E_SCOPE | E_HTML_IP
    if s.t_self_closing:
        note_start(s, ns, False)
        return 0
    e.name = s.t_name
    e.xname = s.t_xname
    e.offset = s.t_offset
    e.tid = <uint16_t>tid
    e.ns = <uint8_t>ns
    e.flags = flags
    push_new(s, &e)
    note_start(s, ns, True)
    if e.name == INVALID_HASH:
        remember_long_name(s)
    return 0


cdef inline void switch_text(TreeBuilderSimulator s, int text_type) noexcept:
    """The generic RCDATA / raw text element parsing algorithm (the element is inserted)."""
    s.pending_text_type = text_type
    s.orig_mode = s.mode
    s.mode = M_TEXT


# ---------------------------------------------------------------------------------- formatting

cdef void afe_remove_at(TreeBuilderSimulator s, Py_ssize_t i) noexcept:
    if i < 0 or i >= s.afe_len:
        return
    memmove(&s.afe[i], &s.afe[i + 1], (s.afe_len - i - 1) * sizeof(FormattingEntry))
    s.afe_len -= 1


cdef void afe_insert_at(TreeBuilderSimulator s, Py_ssize_t i, FormattingEntry* entry) noexcept:
    if afe_full(s):
        afe_remove_at(s, 0)       # bounded: the oldest entry is forgotten
        i -= 1
        if i < 0:
            i = 0
    memmove(&s.afe[i + 1], &s.afe[i], (s.afe_len - i) * sizeof(FormattingEntry))
    s.afe[i] = entry[0]
    s.afe_len += 1


cdef inline Py_ssize_t afe_index_of_id(TreeBuilderSimulator s, uint64_t id) noexcept:
    cdef Py_ssize_t i = s.afe_len - 1
    while i >= 0:
        if s.afe[i].id == id:
            return i
        i -= 1
    return -1


cdef void afe_push_marker(TreeBuilderSimulator s) noexcept:
    cdef FormattingEntry entry
    entry.id = 0
    entry.attrs_hash = 0
    entry.elem.id = 0
    afe_insert_at(s, s.afe_len, &entry)


cdef void afe_clear_to_marker(TreeBuilderSimulator s) noexcept:
    while s.afe_len > 0:
        s.afe_len -= 1
        if s.afe[s.afe_len].id == 0:
            return


cdef inline void append_afe_entry(TreeBuilderSimulator s, uint64_t id, uint64_t attrs_hash,
                                  uint64_t name, uint64_t xname, Py_ssize_t offset,
                                  int tid) noexcept:
    """Append the entry of the HTML element just pushed (the list has room), from the values it
    was made of: not read back from the stack, whose fields were just written one by one (a
    copy, even field by field, may load two of them as one word, which waits for both stores)."""
    cdef FormattingEntry* entry = &s.afe[s.afe_len]
    entry.id = id
    entry.attrs_hash = attrs_hash
    entry.elem.name = name
    entry.elem.xname = xname
    entry.elem.id = id
    entry.elem.offset = offset
    entry.elem.tid = <uint16_t>tid
    entry.elem.ns = NS_HTML
    entry.elem.flags = html_flags(tid)
    s.afe_len += 1


cdef void afe_push_current(TreeBuilderSimulator s) noexcept:
    """Push the element just inserted for the current tag onto the list (Noah's Ark clause)."""
    cdef Py_ssize_t i, earliest = -1
    cdef int same = 0
    cdef uint64_t h
    cdef OpenElement* e = top(s)
    if e == NULL:
        return      # beyond max_depth: not tracked
    # <a> never has a twin in the list (a new <a> first closes the old one), so only the other
    # formatting elements need their attributes compared.
    h = 0 if e.tid == T_A or s.t_tag == NULL or s.t_tag.n_attrs == 0 else attrs_hash(s)
    i = -1 if e.tid == T_A else s.afe_len - 1
    while i >= 0 and s.afe[i].id != 0:
        if s.afe[i].elem.tid == e.tid and s.afe[i].elem.name == e.name \
                and s.afe[i].attrs_hash == h:
            same += 1
            earliest = i
        i -= 1
    if same >= 3:
        afe_remove_at(s, earliest)
    if afe_full(s):
        afe_remove_at(s, 0)       # bounded: the oldest entry is forgotten (as afe_insert_at)
    append_afe_entry(s, e.id, h, s.t_name, s.t_xname, s.t_offset, s.t_tid)


cdef void reconstruct(TreeBuilderSimulator s) noexcept:
    """Reconstruct the active formatting elements."""
    cdef Py_ssize_t last = s.afe_len - 1, i
    cdef OpenElement e
    if last < 0 or s.afe[last].id == 0 or index_of_id(s, s.afe[last].id) >= 0:
        return
    i = last
    while i > 0 and s.afe[i - 1].id != 0 and index_of_id(s, s.afe[i - 1].id) < 0:
        i -= 1
    while i <= last:
        e = s.afe[i].elem
        e.flags |= E_CLONE
        push_new(s, &e)
        s.afe[i].id = e.id
        i += 1
    s.afe_pending = False


cdef int adoption_agency(TreeBuilderSimulator s, int subject) except -1:
    """The adoption agency algorithm, on the stack only.  Returns 1 when the caller must act as
    for "any other end tag"."""
    cdef OpenElement* cur = top(s)
    cdef Py_ssize_t fe_afe, fe_i, fb_i, node_i, node_afe, j, k, pos
    cdef uint64_t fe_id, fb_id, bookmark_after
    cdef int outer, inner
    cdef bint last_is_fb
    cdef FormattingEntry entry
    cdef OpenElement clone
    if cur != NULL and cur.ns == NS_HTML and cur.tid == subject:
        if s.afe_len > 0 and s.afe[s.afe_len - 1].id == cur.id:
            # The usual <b>...</b>: the formatting element is the current node and the last
            # entry of the list, so it is in scope and has no furthest block: what the loop below
            # comes to is popping it and removing its entry.
            pop(s)
            s.afe_len -= 1
            return 0
        if afe_index_of_id(s, cur.id) < 0:
            pop(s)
            return 0
    for outer in range(8):
        fe_afe = -1
        j = s.afe_len - 1
        while j >= 0 and s.afe[j].id != 0:
            if s.afe[j].elem.ns == NS_HTML and s.afe[j].elem.tid == subject:
                fe_afe = j
                break
            j -= 1
        if fe_afe < 0:
            return 1
        fe_id = s.afe[fe_afe].id
        fe_i = index_of_id(s, fe_id)
        if fe_i < 0:
            afe_remove_at(s, fe_afe)
            return 0
        if not node_in_scope(s, fe_i):
            return 0
        fb_i = -1
        for k in range(fe_i + 1, s.depth):
            if s.stack[k].flags & E_SPECIAL:
                fb_i = k
                break
        if fb_i < 0:
            truncate(s, fe_i)
            afe_remove_at(s, fe_afe)
            return 0
        fb_id = s.stack[fb_i].id
        bookmark_after = 0
        last_is_fb = True
        node_i = fb_i
        inner = 0
        while True:
            inner += 1
            node_i -= 1
            if node_i <= fe_i:
                break
            node_afe = afe_index_of_id(s, s.stack[node_i].id)
            if inner > 3 and node_afe >= 0:
                afe_remove_at(s, node_afe)
                node_afe = -1
            if node_afe < 0:
                remove_at(s, node_i)
                continue
            s.next_id += 1
            s.stack[node_i].id = s.next_id
            s.stack[node_i].flags |= E_CLONE
            s.afe[node_afe].id = s.next_id
            lower_changed(s, node_i)
            if last_is_fb:
                bookmark_after = s.next_id
            last_is_fb = False
        # A new element for the formatting element's token, below the furthest block.
        j = afe_index_of_id(s, fe_id)
        if j < 0:
            return 0
        entry = s.afe[j]
        afe_remove_at(s, j)
        s.next_id += 1
        entry.id = s.next_id
        entry.elem.id = s.next_id
        entry.elem.flags |= E_CLONE
        pos = j
        if bookmark_after:
            pos = afe_index_of_id(s, bookmark_after) + 1
        afe_insert_at(s, pos, &entry)
        remove_at(s, index_of_id(s, fe_id))
        clone = entry.elem
        insert_at(s, index_of_id(s, fb_id) + 1, &clone)
    return 0


# ---------------------------------------------------------------------------------- in head

cdef int head_start(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    if tid == T_HTML:
        return body_start(s)
    if tid == T_BASE or tid == T_BASEFONT or tid == T_BGSOUND or tid == T_LINK or tid == T_META:
        insert_void(s)
        return DONE
    if tid == T_TITLE:
        insert_html(s)
        switch_text(s, RCDATA)
        return DONE
    if (tid == T_NOSCRIPT and s.scripting) or tid == T_NOFRAMES or tid == T_STYLE:
        insert_html(s)
        switch_text(s, RAWTEXT)
        return DONE
    if tid == T_NOSCRIPT:
        insert_html(s)
        s.mode = M_IN_HEAD_NOSCRIPT
        return DONE
    if tid == T_SCRIPT:
        insert_html(s)
        switch_text(s, SCRIPT_DATA)
        return DONE
    if tid == T_TEMPLATE:
        insert_html(s)
        afe_push_marker(s)
        s.frameset_ok = False
        s.mode = M_IN_TEMPLATE
        push_template_mode(s, M_IN_TEMPLATE)
        return DONE
    if tid == T_HEAD:
        return DONE
    pop_head(s)
    s.mode = M_AFTER_HEAD
    return REPROCESS


cdef int head_end(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    cdef Py_ssize_t i
    if tid == T_HEAD:
        pop_head(s)
        s.mode = M_AFTER_HEAD
        return DONE
    if tid == T_BODY or tid == T_HTML or tid == T_BR:
        pop_head(s)
        s.mode = M_AFTER_HEAD
        return REPROCESS
    if tid == T_TEMPLATE:
        i = template_index(s)
        if i < 0:
            return DONE
        truncate(s, i)
        afe_clear_to_marker(s)
        if s.template_modes_len:
            s.template_modes_len -= 1
        reset_mode(s)
        return DONE
    return DONE


# ---------------------------------------------------------------------------------- in body

cdef inline void start_list_item(TreeBuilderSimulator s, int tid) noexcept:
    """A start tag li, dd or dt in body."""
    cdef Py_ssize_t i = s.depth - 1
    cdef OpenElement* e
    s.frameset_ok = False
    while i >= 0:
        e = &s.stack[i]
        if e.ns == NS_HTML and ((tid == T_LI and e.tid == T_LI)
                                or (tid != T_LI and (e.tid == T_DD or e.tid == T_DT))):
            truncate(s, i)
            break
        if e.flags & E_SPECIAL and not (e.ns == NS_HTML and (
                e.tid == T_ADDRESS or e.tid == T_DIV or e.tid == T_P)):
            break
        i -= 1
    close_p_in_button_scope(s)
    insert_html(s)


cdef inline void start_a(TreeBuilderSimulator s) noexcept:
    """A start tag a in body."""
    cdef Py_ssize_t i = s.afe_len - 1
    cdef uint64_t a_id
    while i >= 0 and s.afe[i].id != 0:
        if s.afe[i].elem.ns == NS_HTML and s.afe[i].elem.tid == T_A:
            a_id = s.afe[i].id
            adoption_agency(s, T_A)
            afe_remove_at(s, afe_index_of_id(s, a_id))
            remove_keeping_tree(s, index_of_id(s, a_id))
            break
        i -= 1
    reconstruct(s)
    insert_html(s)
    afe_push_current(s)


cdef int body_start(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    cdef uint32_t f = TAG_FLAGS[tid]
    cdef Py_ssize_t i
    cdef OpenElement* e

    if tid == T_HTML:
        return DONE
    elif tid == T_BASE or tid == T_BASEFONT or tid == T_BGSOUND or tid == T_LINK or tid == T_META \
            or tid == T_NOFRAMES or tid == T_SCRIPT or tid == T_STYLE or tid == T_TEMPLATE \
            or tid == T_TITLE:
        return head_start(s)
    elif tid == T_BODY:
        if s.depth >= 2 and is_html(&s.stack[1], T_BODY) and template_index(s) < 0:
            s.frameset_ok = False
        return DONE
    elif tid == T_FRAMESET:
        if s.depth < 2 or not is_html(&s.stack[1], T_BODY) or not s.frameset_ok:
            return DONE
        truncate(s, 1)
        insert_html(s)
        s.mode = M_IN_FRAMESET
        return DONE
    elif (tid == T_ADDRESS or tid == T_ARTICLE or tid == T_ASIDE or tid == T_BLOCKQUOTE or
            tid == T_CENTER or tid == T_DETAILS or tid == T_DIALOG or tid == T_DIR or
            tid == T_DIV or tid == T_DL or tid == T_FIELDSET or tid == T_FIGCAPTION or
            tid == T_FIGURE or tid == T_FOOTER or tid == T_HEADER or tid == T_HGROUP or
            tid == T_MAIN or tid == T_MENU or tid == T_NAV or tid == T_OL or tid == T_P or
            tid == T_SEARCH or tid == T_SECTION or tid == T_SUMMARY or tid == T_UL):
        close_p_in_button_scope(s)
        insert_html(s)
        return DONE
    elif (tid == T_H1 or tid == T_H2 or tid == T_H3 or tid == T_H4 or tid == T_H5 or
            tid == T_H6):
        close_p_in_button_scope(s)
        e = top(s)
        if e != NULL and e.ns == NS_HTML and TAG_FLAGS[e.tid] & F_HEADING:
            pop(s)
        insert_html(s)
        return DONE
    elif tid == T_PRE or tid == T_LISTING:
        close_p_in_button_scope(s)
        insert_html(s)
        s.frameset_ok = False
        return DONE
    elif tid == T_FORM:
        i = template_index(s)
        if s.form_id != 0 and i < 0:
            return DONE
        close_p_in_button_scope(s)
        insert_html(s)
        if i < 0:
            e = top(s)
            s.form_id = e.id if e != NULL else <uint64_t>-1
        return DONE
    elif tid == T_LI or tid == T_DD or tid == T_DT:
        start_list_item(s, tid)
        return DONE
    elif tid == T_PLAINTEXT:
        close_p_in_button_scope(s)
        insert_html(s)
        switch_text(s, PLAINTEXT)
        return DONE
    elif tid == T_BUTTON:
        i = find_in_scope(s, T_BUTTON, SC_DEFAULT)
        if i >= 0:
            truncate(s, i)
        reconstruct(s)
        insert_html(s)
        s.frameset_ok = False
        return DONE
    elif tid == T_A:
        start_a(s)
        return DONE
    elif tid == T_NOBR:
        reconstruct(s)
        if find_in_scope(s, T_NOBR, SC_DEFAULT) >= 0:
            adoption_agency(s, T_NOBR)
            reconstruct(s)
        insert_html(s)
        afe_push_current(s)
        return DONE
    elif (tid == T_B or tid == T_BIG or tid == T_CODE or tid == T_EM or tid == T_FONT or
            tid == T_I or tid == T_S or tid == T_SMALL or tid == T_STRIKE or tid == T_STRONG or
            tid == T_TT or tid == T_U):
        reconstruct(s)
        insert_html(s)
        afe_push_current(s)
        return DONE
    elif tid == T_APPLET or tid == T_MARQUEE or tid == T_OBJECT:
        reconstruct(s)
        insert_html(s)
        afe_push_marker(s)
        s.frameset_ok = False
        return DONE
    elif tid == T_TABLE:
        if not s.quirks:
            close_p_in_button_scope(s)
        insert_html(s)
        s.frameset_ok = False
        s.mode = M_IN_TABLE
        return DONE
    elif tid == T_AREA or tid == T_BR or tid == T_EMBED or tid == T_IMG or tid == T_KEYGEN \
            or tid == T_WBR or tid == T_IMAGE:
        reconstruct(s)
        insert_void(s)
        s.frameset_ok = False
        return DONE
    elif tid == T_INPUT:
        i = find_in_scope(s, T_SELECT, SC_DEFAULT)
        if i >= 0:
            truncate(s, i)
        reconstruct(s)
        insert_void(s)
        i = find_attr(s, b"type", 4)
        if i < 0 or not attr_value_is(s, i, b"hidden"):
            s.frameset_ok = False
        return DONE
    elif tid == T_PARAM or tid == T_SOURCE or tid == T_TRACK:
        insert_void(s)
        return DONE
    elif tid == T_HR:
        close_p_in_button_scope(s)
        if find_in_scope(s, T_SELECT, SC_DEFAULT) >= 0:
            gen_implied(s, -1, False)
        insert_void(s)
        s.frameset_ok = False
        return DONE
    elif tid == T_TEXTAREA:
        insert_html(s)
        switch_text(s, RCDATA)
        s.frameset_ok = False
        return DONE
    elif tid == T_XMP:
        close_p_in_button_scope(s)
        reconstruct(s)
        s.frameset_ok = False
        insert_html(s)
        switch_text(s, RAWTEXT)
        return DONE
    elif tid == T_IFRAME:
        s.frameset_ok = False
        insert_html(s)
        switch_text(s, RAWTEXT)
        return DONE
    elif tid == T_NOEMBED or tid == T_NOSCRIPT:
        if tid == T_NOSCRIPT and not s.scripting:
            reconstruct(s)          # an ordinary element
            insert_html(s)
            return DONE
        insert_html(s)
        switch_text(s, RAWTEXT)
        return DONE
    elif tid == T_SELECT:
        i = find_in_scope(s, T_SELECT, SC_DEFAULT)
        if i >= 0:
            truncate(s, i)
            return DONE
        reconstruct(s)
        insert_html(s)
        s.frameset_ok = False
        return DONE
    elif tid == T_OPTION or tid == T_OPTGROUP:
        if find_in_scope(s, T_SELECT, SC_DEFAULT) >= 0:
            gen_implied(s, T_OPTGROUP if tid == T_OPTION else -1, False)
        elif cur_is(s, T_OPTION):
            pop(s)
        reconstruct(s)
        insert_html(s)
        return DONE
    elif tid == T_RB or tid == T_RTC:
        if find_in_scope(s, T_RUBY, SC_DEFAULT) >= 0:
            gen_implied(s, -1, False)
        insert_html(s)
        return DONE
    elif tid == T_RP or tid == T_RT:
        if find_in_scope(s, T_RUBY, SC_DEFAULT) >= 0:
            gen_implied(s, T_RTC, False)
        insert_html(s)
        return DONE
    elif tid == T_MATH or tid == T_SVG:
        reconstruct(s)
        insert_foreign(s, NS_MATHML if tid == T_MATH else NS_SVG)
        return DONE
    elif tid == T_CAPTION or tid == T_COL or tid == T_COLGROUP or tid == T_FRAME \
            or tid == T_HEAD or tid == T_TBODY or tid == T_TD or tid == T_TFOOT \
            or tid == T_TH or tid == T_THEAD or tid == T_TR:
        return DONE
    reconstruct(s)
    insert_html(s)
    return DONE


cdef int any_other_end(TreeBuilderSimulator s) noexcept:
    cdef Py_ssize_t i = s.depth - 1
    cdef OpenElement* e
    while i >= 0:
        e = &s.stack[i]
        if e.ns == NS_HTML and same_name(e, s):
            truncate(s, i)
            return DONE
        if e.flags & E_SPECIAL:
            return DONE
        i -= 1
    return DONE


cdef int body_end(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    cdef Py_ssize_t i
    cdef uint64_t fid
    if tid == T_TEMPLATE:
        return head_end(s)
    elif tid == T_BODY or tid == T_HTML:
        if find_in_scope(s, T_BODY, SC_DEFAULT) < 0:
            return DONE
        s.mode = M_AFTER_BODY
        return REPROCESS if tid == T_HTML else DONE
    elif (tid == T_ADDRESS or tid == T_ARTICLE or tid == T_ASIDE or tid == T_BLOCKQUOTE or
            tid == T_BUTTON or tid == T_CENTER or tid == T_DETAILS or tid == T_DIALOG or
            tid == T_DIR or tid == T_DIV or tid == T_DL or tid == T_FIELDSET or
            tid == T_FIGCAPTION or tid == T_FIGURE or tid == T_FOOTER or tid == T_HEADER or
            tid == T_HGROUP or tid == T_LISTING or tid == T_MAIN or tid == T_MENU or
            tid == T_NAV or tid == T_OL or tid == T_PRE or tid == T_SEARCH or
            tid == T_SECTION or tid == T_SELECT or tid == T_SUMMARY or tid == T_UL):
        i = find_in_scope(s, tid, SC_DEFAULT)
        if i >= 0:
            truncate(s, i)
        return DONE
    elif tid == T_FORM:
        if template_index(s) < 0:
            fid = s.form_id
            s.form_id = 0
            i = index_of_id(s, fid) if fid else -1
            if i < 0 or not node_in_scope(s, i):
                return DONE
            gen_implied(s, -1, False)
            remove_keeping_tree(s, index_of_id(s, fid))
        else:
            i = find_in_scope(s, T_FORM, SC_DEFAULT)
            if i >= 0:
                truncate(s, i)
        return DONE
    elif tid == T_P:
        i = find_in_scope(s, T_P, SC_BUTTON)
        if i >= 0:
            truncate(s, i)
        else:
            # an empty <p> is inserted and closed at once
            add_transient(s, TAG_HASH[<int>T_P], NS_HTML, s.depth)
        return DONE
    elif tid == T_LI:
        i = find_in_scope(s, T_LI, SC_LIST)
        if i >= 0:
            truncate(s, i)
        return DONE
    elif tid == T_DD or tid == T_DT:
        i = find_in_scope(s, tid, SC_DEFAULT)
        if i >= 0:
            truncate(s, i)
        return DONE
    elif (tid == T_H1 or tid == T_H2 or tid == T_H3 or tid == T_H4 or tid == T_H5 or
            tid == T_H6):
        i = find_heading_in_scope(s)
        if i >= 0:
            truncate(s, i)
        return DONE
    elif (tid == T_A or tid == T_B or tid == T_BIG or tid == T_CODE or tid == T_EM or
            tid == T_FONT or tid == T_I or tid == T_NOBR or tid == T_S or tid == T_SMALL or
            tid == T_STRIKE or tid == T_STRONG or tid == T_TT or tid == T_U):
        if adoption_agency(s, tid):
            return any_other_end(s)
        return DONE
    elif tid == T_APPLET or tid == T_MARQUEE or tid == T_OBJECT:
        i = find_in_scope(s, tid, SC_DEFAULT)
        if i >= 0:
            truncate(s, i)
            afe_clear_to_marker(s)
        return DONE
    elif tid == T_BR:
        # Treated as <br> without attributes.
        reconstruct(s)
        s.frameset_ok = False
        add_transient(s, TAG_HASH[<int>T_BR], NS_HTML, s.depth)
        return DONE
    return any_other_end(s)


# ---------------------------------------------------------------------------------- tables

cdef bint input_is_hidden(TreeBuilderSimulator s) except -1:
    cdef Py_ssize_t i = find_attr(s, b"type", 4)
    return i >= 0 and attr_value_is(s, i, b"hidden")


cdef int table_start(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    cdef Py_ssize_t i
    if tid == T_CAPTION:
        clear_to_context(s, T_TABLE, T_TABLE, T_TABLE)
        afe_push_marker(s)
        insert_html(s)
        s.mode = M_IN_CAPTION
        return DONE
    if tid == T_COLGROUP:
        clear_to_context(s, T_TABLE, T_TABLE, T_TABLE)
        insert_html(s)
        s.mode = M_IN_COLUMN_GROUP
        return DONE
    if tid == T_COL:
        clear_to_context(s, T_TABLE, T_TABLE, T_TABLE)
        insert_implied(s, T_COLGROUP)
        s.mode = M_IN_COLUMN_GROUP
        return REPROCESS
    if tid == T_TBODY or tid == T_TFOOT or tid == T_THEAD:
        clear_to_context(s, T_TABLE, T_TABLE, T_TABLE)
        insert_html(s)
        s.mode = M_IN_TABLE_BODY
        return DONE
    if tid == T_TD or tid == T_TH or tid == T_TR:
        clear_to_context(s, T_TABLE, T_TABLE, T_TABLE)
        insert_implied(s, T_TBODY)
        s.mode = M_IN_TABLE_BODY
        return REPROCESS
    if tid == T_TABLE:
        i = find_in_scope(s, T_TABLE, SC_TABLE)
        if i < 0:
            return DONE
        truncate(s, i)
        reset_mode(s)
        return REPROCESS
    if tid == T_STYLE or tid == T_SCRIPT or tid == T_TEMPLATE:
        return head_start(s)
    if tid == T_INPUT and input_is_hidden(s):
        insert_void(s)
        return DONE
    if tid == T_FORM:
        if template_index(s) >= 0 or s.form_id != 0:
            return DONE
        s.next_id += 1
        s.form_id = s.next_id     # inserted and popped at once: the pointer stays set
        insert_void(s)
        return DONE
    return body_start(s)          # foster parenting changes where, not what, is inserted


cdef int table_end(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    cdef Py_ssize_t i
    if tid == T_TABLE:
        i = find_in_scope(s, T_TABLE, SC_TABLE)
        if i >= 0:
            truncate(s, i)
            reset_mode(s)
        return DONE
    if tid == T_BODY or tid == T_CAPTION or tid == T_COL or tid == T_COLGROUP or tid == T_HTML \
            or tid == T_TBODY or tid == T_TD or tid == T_TFOOT or tid == T_TH or tid == T_THEAD \
            or tid == T_TR:
        return DONE
    if tid == T_TEMPLATE:
        return head_end(s)
    return body_end(s)


cdef int caption_start(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    cdef Py_ssize_t i
    if tid == T_CAPTION or tid == T_COL or tid == T_COLGROUP or tid == T_TBODY or tid == T_TD \
            or tid == T_TFOOT or tid == T_TH or tid == T_THEAD or tid == T_TR:
        i = find_in_scope(s, T_CAPTION, SC_TABLE)
        if i < 0:
            return DONE
        truncate(s, i)
        afe_clear_to_marker(s)
        s.mode = M_IN_TABLE
        return REPROCESS
    return body_start(s)


cdef int caption_end(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    cdef Py_ssize_t i
    if tid == T_CAPTION or tid == T_TABLE:
        i = find_in_scope(s, T_CAPTION, SC_TABLE)
        if i < 0:
            return DONE
        truncate(s, i)
        afe_clear_to_marker(s)
        s.mode = M_IN_TABLE
        return REPROCESS if tid == T_TABLE else DONE
    if tid == T_BODY or tid == T_COL or tid == T_COLGROUP or tid == T_HTML or tid == T_TBODY \
            or tid == T_TD or tid == T_TFOOT or tid == T_TH or tid == T_THEAD or tid == T_TR:
        return DONE
    return body_end(s)


cdef int colgroup_start(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    if tid == T_HTML:
        return body_start(s)
    if tid == T_COL:
        insert_void(s)
        return DONE
    if tid == T_TEMPLATE:
        return head_start(s)
    if not cur_is(s, T_COLGROUP):
        return DONE
    pop(s)
    s.mode = M_IN_TABLE
    return REPROCESS


cdef int colgroup_end(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    if tid == T_COLGROUP:
        if cur_is(s, T_COLGROUP):
            pop(s)
            s.mode = M_IN_TABLE
        return DONE
    if tid == T_COL:
        return DONE
    if tid == T_TEMPLATE:
        return head_end(s)
    if not cur_is(s, T_COLGROUP):
        return DONE
    pop(s)
    s.mode = M_IN_TABLE
    return REPROCESS


cdef int tbody_start(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    if tid == T_TR:
        clear_to_context(s, T_TBODY, T_TFOOT, T_THEAD)
        insert_html(s)
        s.mode = M_IN_ROW
        return DONE
    if tid == T_TH or tid == T_TD:
        clear_to_context(s, T_TBODY, T_TFOOT, T_THEAD)
        insert_implied(s, T_TR)
        s.mode = M_IN_ROW
        return REPROCESS
    if tid == T_CAPTION or tid == T_COL or tid == T_COLGROUP or tid == T_TBODY \
            or tid == T_TFOOT or tid == T_THEAD:
        if find_in_table_scope3(s, T_TBODY, T_THEAD, T_TFOOT) < 0:
            return DONE
        clear_to_context(s, T_TBODY, T_TFOOT, T_THEAD)
        pop(s)
        s.mode = M_IN_TABLE
        return REPROCESS
    return table_start(s)


cdef int tbody_end(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    if tid == T_TBODY or tid == T_TFOOT or tid == T_THEAD:
        if find_in_scope(s, tid, SC_TABLE) < 0:
            return DONE
        clear_to_context(s, T_TBODY, T_TFOOT, T_THEAD)
        pop(s)
        s.mode = M_IN_TABLE
        return DONE
    if tid == T_TABLE:
        if find_in_table_scope3(s, T_TBODY, T_THEAD, T_TFOOT) < 0:
            return DONE
        clear_to_context(s, T_TBODY, T_TFOOT, T_THEAD)
        pop(s)
        s.mode = M_IN_TABLE
        return REPROCESS
    if tid == T_BODY or tid == T_CAPTION or tid == T_COL or tid == T_COLGROUP or tid == T_HTML \
            or tid == T_TD or tid == T_TH or tid == T_TR:
        return DONE
    return table_end(s)


cdef int row_start(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    if tid == T_TH or tid == T_TD:
        clear_to_context(s, T_TR, T_TR, T_TR)
        insert_html(s)
        s.mode = M_IN_CELL
        afe_push_marker(s)
        return DONE
    if tid == T_CAPTION or tid == T_COL or tid == T_COLGROUP or tid == T_TBODY \
            or tid == T_TFOOT or tid == T_THEAD or tid == T_TR:
        if find_in_scope(s, T_TR, SC_TABLE) < 0:
            return DONE
        clear_to_context(s, T_TR, T_TR, T_TR)
        pop(s)
        s.mode = M_IN_TABLE_BODY
        return REPROCESS
    return table_start(s)


cdef int row_end(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    if tid == T_TR or tid == T_TABLE:
        if find_in_scope(s, T_TR, SC_TABLE) < 0:
            return DONE
        clear_to_context(s, T_TR, T_TR, T_TR)
        pop(s)
        s.mode = M_IN_TABLE_BODY
        return REPROCESS if tid == T_TABLE else DONE
    if tid == T_TBODY or tid == T_TFOOT or tid == T_THEAD:
        if find_in_scope(s, tid, SC_TABLE) < 0 or find_in_scope(s, T_TR, SC_TABLE) < 0:
            return DONE
        clear_to_context(s, T_TR, T_TR, T_TR)
        pop(s)
        s.mode = M_IN_TABLE_BODY
        return REPROCESS
    if tid == T_BODY or tid == T_CAPTION or tid == T_COL or tid == T_COLGROUP or tid == T_HTML \
            or tid == T_TD or tid == T_TH:
        return DONE
    return table_end(s)


cdef void close_cell(TreeBuilderSimulator s) noexcept:
    cdef Py_ssize_t i = find_in_table_scope3(s, T_TD, T_TH, T_TH)
    if i >= 0:
        truncate(s, i)
    afe_clear_to_marker(s)
    s.mode = M_IN_ROW


cdef int cell_start(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    if tid == T_CAPTION or tid == T_COL or tid == T_COLGROUP or tid == T_TBODY or tid == T_TD \
            or tid == T_TFOOT or tid == T_TH or tid == T_THEAD or tid == T_TR:
        if find_in_table_scope3(s, T_TD, T_TH, T_TH) < 0:
            return DONE
        close_cell(s)
        return REPROCESS
    return body_start(s)


cdef int cell_end(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    cdef Py_ssize_t i
    if tid == T_TD or tid == T_TH:
        i = find_in_scope(s, tid, SC_TABLE)
        if i < 0:
            return DONE
        truncate(s, i)
        afe_clear_to_marker(s)
        s.mode = M_IN_ROW
        return DONE
    if tid == T_BODY or tid == T_CAPTION or tid == T_COL or tid == T_COLGROUP or tid == T_HTML:
        return DONE
    if tid == T_TABLE or tid == T_TBODY or tid == T_TFOOT or tid == T_THEAD or tid == T_TR:
        if find_in_scope(s, tid, SC_TABLE) < 0:
            return DONE
        close_cell(s)
        return REPROCESS
    return body_end(s)


# ---------------------------------------------------------------------------------- dispatch

cdef int mode_start(TreeBuilderSimulator s) except -1:
    """Process the current start tag with the rules of the current insertion mode."""
    cdef int m = s.mode
    cdef int tid = s.t_tid
    if m == M_IN_BODY:
        return body_start(s)
    if m == M_INITIAL:
        s.quirks = True
        s.mode = M_BEFORE_HTML
        return REPROCESS
    if m == M_BEFORE_HTML:
        if tid == T_HTML:
            insert_html(s)
            s.mode = M_BEFORE_HEAD
            return DONE
        insert_implied(s, T_HTML)
        s.mode = M_BEFORE_HEAD
        return REPROCESS
    if m == M_BEFORE_HEAD:
        if tid == T_HTML:
            return body_start(s)
        if tid == T_HEAD:
            insert_html(s)
        else:
            insert_implied(s, T_HEAD)
        s.head_seen = True
        if top(s) != NULL:
            s.head_elem = top(s)[0]
        s.mode = M_IN_HEAD
        return DONE if tid == T_HEAD else REPROCESS
    if m == M_IN_HEAD:
        return head_start(s)
    if m == M_IN_HEAD_NOSCRIPT:
        if tid == T_HTML:
            return body_start(s)
        if tid == T_BASEFONT or tid == T_BGSOUND or tid == T_LINK or tid == T_META \
                or tid == T_NOFRAMES or tid == T_STYLE:
            return head_start(s)
        if tid == T_HEAD or tid == T_NOSCRIPT:
            return DONE
        pop(s)
        s.mode = M_IN_HEAD
        return REPROCESS
    if m == M_AFTER_HEAD:
        return after_head_start(s)
    if m == M_TEXT:
        # Cannot happen with a lexer driven by this simulator; recover as for an end tag.
        pop(s)
        s.mode = s.orig_mode
        return REPROCESS
    if m == M_IN_TABLE:
        return table_start(s)
    if m == M_IN_CAPTION:
        return caption_start(s)
    if m == M_IN_COLUMN_GROUP:
        return colgroup_start(s)
    if m == M_IN_TABLE_BODY:
        return tbody_start(s)
    if m == M_IN_ROW:
        return row_start(s)
    if m == M_IN_CELL:
        return cell_start(s)
    if m == M_IN_TEMPLATE:
        if tid == T_BASE or tid == T_BASEFONT or tid == T_BGSOUND or tid == T_LINK \
                or tid == T_META or tid == T_NOFRAMES or tid == T_SCRIPT or tid == T_STYLE \
                or tid == T_TEMPLATE or tid == T_TITLE:
            return head_start(s)
        if tid == T_CAPTION or tid == T_COLGROUP or tid == T_TBODY or tid == T_TFOOT \
                or tid == T_THEAD:
            m = M_IN_TABLE
        elif tid == T_COL:
            m = M_IN_COLUMN_GROUP
        elif tid == T_TR:
            m = M_IN_TABLE_BODY
        elif tid == T_TD or tid == T_TH:
            m = M_IN_ROW
        else:
            m = M_IN_BODY
        set_template_mode(s, m)
        s.mode = m
        return REPROCESS
    if m == M_AFTER_BODY or m == M_AFTER_AFTER_BODY:
        if tid == T_HTML:
            return body_start(s)
        s.mode = M_IN_BODY
        return REPROCESS
    if m == M_IN_FRAMESET:
        if tid == T_HTML:
            return body_start(s)
        if tid == T_FRAMESET:
            insert_html(s)
        elif tid == T_FRAME:
            insert_void(s)
        elif tid == T_NOFRAMES:
            return head_start(s)
        return DONE
    # M_AFTER_FRAMESET, M_AFTER_AFTER_FRAMESET
    if tid == T_HTML:
        return body_start(s)
    if tid == T_NOFRAMES:
        return head_start(s)
    return DONE


cdef int after_head_start(TreeBuilderSimulator s) except -1:
    cdef int tid = s.t_tid
    cdef int r
    cdef OpenElement head
    if tid == T_HTML:
        return body_start(s)
    if tid == T_BODY:
        insert_html(s)
        s.frameset_ok = False
        s.mode = M_IN_BODY
        return DONE
    if tid == T_FRAMESET:
        insert_html(s)
        s.mode = M_IN_FRAMESET
        return DONE
    if tid == T_BASE or tid == T_BASEFONT or tid == T_BGSOUND or tid == T_LINK or tid == T_META \
            or tid == T_NOFRAMES or tid == T_SCRIPT or tid == T_STYLE or tid == T_TEMPLATE \
            or tid == T_TITLE:
        head = s.head_elem
        push_entry(s, &head)
        r = head_start(s)
        remove_at(s, index_of_id(s, head.id))
        s.last_in_head = s.last_inserted
        return r
    if tid == T_HEAD:
        return DONE
    insert_implied(s, T_BODY)
    s.mode = M_IN_BODY
    return REPROCESS


cdef int mode_end(TreeBuilderSimulator s) except -1:
    """Process the current end tag with the rules of the current insertion mode."""
    cdef int m = s.mode
    cdef int tid = s.t_tid
    if m == M_IN_BODY:
        return body_end(s)
    if m == M_INITIAL:
        s.quirks = True
        s.mode = M_BEFORE_HTML
        return REPROCESS
    if m == M_BEFORE_HTML:
        if tid == T_HEAD or tid == T_BODY or tid == T_HTML or tid == T_BR:
            insert_implied(s, T_HTML)
            s.mode = M_BEFORE_HEAD
            return REPROCESS
        return DONE
    if m == M_BEFORE_HEAD:
        if tid == T_HEAD or tid == T_BODY or tid == T_HTML or tid == T_BR:
            insert_implied(s, T_HEAD)
            s.head_seen = True
            if top(s) != NULL:
                s.head_elem = top(s)[0]
            s.mode = M_IN_HEAD
            return REPROCESS
        return DONE
    if m == M_IN_HEAD:
        return head_end(s)
    if m == M_IN_HEAD_NOSCRIPT:
        if tid == T_NOSCRIPT:
            pop(s)
            s.mode = M_IN_HEAD
            return DONE
        if tid == T_BR:
            pop(s)
            s.mode = M_IN_HEAD
            return REPROCESS
        return DONE
    if m == M_AFTER_HEAD:
        if tid == T_TEMPLATE:
            return head_end(s)
        if tid == T_BODY or tid == T_HTML or tid == T_BR:
            insert_implied(s, T_BODY)
            s.mode = M_IN_BODY
            return REPROCESS
        return DONE
    if m == M_TEXT:
        pop(s)
        s.mode = s.orig_mode
        return DONE
    if m == M_IN_TABLE:
        return table_end(s)
    if m == M_IN_CAPTION:
        return caption_end(s)
    if m == M_IN_COLUMN_GROUP:
        return colgroup_end(s)
    if m == M_IN_TABLE_BODY:
        return tbody_end(s)
    if m == M_IN_ROW:
        return row_end(s)
    if m == M_IN_CELL:
        return cell_end(s)
    if m == M_IN_TEMPLATE:
        if tid == T_TEMPLATE:
            return head_end(s)
        return DONE
    if m == M_AFTER_BODY:
        if tid == T_HTML:
            s.mode = M_AFTER_AFTER_BODY
            return DONE
        s.mode = M_IN_BODY
        return REPROCESS
    if m == M_AFTER_AFTER_BODY:
        s.mode = M_IN_BODY
        return REPROCESS
    if m == M_IN_FRAMESET:
        if tid == T_FRAMESET and s.depth > 1:
            pop(s)
            if not cur_is(s, T_FRAMESET):
                s.mode = M_AFTER_FRAMESET
        return DONE
    if m == M_AFTER_FRAMESET:
        if tid == T_HTML:
            s.mode = M_AFTER_AFTER_FRAMESET
        return DONE
    return DONE


cdef int html_start(TreeBuilderSimulator s) except -1:
    while mode_start(s) == REPROCESS:
        pass
    return 0


cdef int html_end(TreeBuilderSimulator s) except -1:
    while mode_end(s) == REPROCESS:
        pass
    return 0


cdef inline bint breaks_out(TreeBuilderSimulator s) except -1:
    """Whether the current start tag leaves foreign content."""
    if TAG_FLAGS[s.t_tid] & F_BREAKOUT:
        return True
    if s.t_tid == T_FONT:
        return find_attr(s, b"color", 5) >= 0 or find_attr(s, b"face", 4) >= 0 \
            or find_attr(s, b"size", 4) >= 0
    return False


cdef void pop_to_html_or_integration_point(TreeBuilderSimulator s) noexcept:
    cdef OpenElement* e
    while True:
        e = top(s)
        if e == NULL or e.ns == NS_HTML or e.flags & (E_MATHML_TEXT_IP | E_HTML_IP):
            return
        pop(s)


cdef bint uses_html_rules_for_start(TreeBuilderSimulator s) noexcept:
    """The tree construction dispatcher, for a start tag."""
    cdef OpenElement* e = top(s)
    cdef int tid = s.t_tid
    if e == NULL or e.ns == NS_HTML:
        return True
    if e.flags & E_MATHML_TEXT_IP and tid != T_MGLYPH and tid != T_MALIGNMARK:
        return True
    if e.ns == NS_MATHML and e.tid == T_ANNOTATION_XML and tid == T_SVG:
        return True
    return (e.flags & E_HTML_IP) != 0


cdef bint uses_html_rules_for_text(TreeBuilderSimulator s) noexcept:
    cdef OpenElement* e = top(s)
    return e == NULL or e.ns == NS_HTML or (e.flags & (E_MATHML_TEXT_IP | E_HTML_IP)) != 0


cdef int foreign_end(TreeBuilderSimulator s) except -1:
    cdef Py_ssize_t i = s.depth - 1
    cdef OpenElement* e = &s.stack[i]
    if s.t_tid == T_SCRIPT and e.ns == NS_SVG and e.tid == T_SCRIPT:
        pop(s)
        return 0
    while True:
        if i == 0:
            return 0
        if same_name(&s.stack[i], s):
            truncate(s, i)
            return 0
        i -= 1
        if s.stack[i].ns == NS_HTML:
            return html_end(s)


# ---------------------------------------------------------------------------------- strict mode

cdef object _tag_name(TreeBuilderSimulator s):
    cdef TagRec* t = s.t_tag
    raw = PyBytes_FromStringAndSize(<const char*>s.t_data + (t.name_start - s.t_base),
                                    t.name_end - t.name_start)
    return ascii_lower(raw.decode("utf-8", "replace")).replace("\0", "\ufffd")


cdef int check_ambiguity(TreeBuilderSimulator s) except -1:
    """Strict mode: raise where browsers may read what follows differently (before any change)."""
    cdef int tid = s.t_tid
    cdef Py_ssize_t i
    cdef bint template_above = False
    cdef bint guarded = (TAG_FLAGS[tid] & F_GUARDED) != 0
    if not guarded and tid != T_SVG and tid != T_MATH:
        return 0
    if guarded and tid != T_NOFRAMES and s.frameset_seen:
        raise ParsingAmbiguityError(
            _tag_name(s), s.t_offset,
            "after <frameset> a text-content tag is read or ignored depending on the frameset-ok "
            "flag, i.e. on everything before it")
    i = s.depth - 1
    while i >= 0:
        if s.stack[i].ns == NS_HTML:
            if s.stack[i].tid == T_TEMPLATE:
                template_above = True
            elif s.stack[i].tid == T_SELECT:
                break
        i -= 1
    if i < 0:
        return 0
    if not guarded:
        raise ParsingAmbiguityError(
            _tag_name(s), s.t_offset,
            "inside <select> browsers before the 2025 parser change ignore <svg> and <math>, so "
            "CDATA sections and the namespace of what follows differ")
    if (tid == T_SCRIPT or tid == T_TEXTAREA) and not template_above:
        return 0
    raise ParsingAmbiguityError(
        _tag_name(s), s.t_offset,
        "inside <select> browsers before the 2025 parser change ignore this tag (its content "
        "is then markup); current ones read its content as text")


# ---------------------------------------------------------------------------------- the simulator

cdef bint overflow_child_certain(TreeBuilderSimulator s) except -1:
    """Beyond max_depth, where no tree-construction rule is applied: whether the current start
    tag's element is certainly a child of the element the previous start tag opened there,
    i.e. the tree builder would neither have closed that one first nor put this one elsewhere
    (or dropped it)."""
    cdef int p = s.overflow_last_tid
    cdef int tid = s.t_tid
    cdef uint32_t f
    if p < 0:
        return False
    if s.overflow_last_ns != NS_HTML:
        return not breaks_out(s)
    f = TAG_FLAGS[p]
    if f & (F_IMPLIED_END | F_THOROUGH_END | F_HEADING | F_VOID):
        return False
    if p == T_A or p == T_NOBR or p == T_BUTTON or p == T_SELECT or p == T_TABLE \
            or p == T_FORM or p == T_HTML or p == T_HEAD or p == T_BODY or p == T_FRAMESET \
            or p == T_TEMPLATE or p == T_SCRIPT or p == T_STYLE or p == T_TITLE \
            or p == T_TEXTAREA or p == T_PLAINTEXT or p == T_XMP or p == T_IFRAME \
            or p == T_NOEMBED or p == T_NOFRAMES or p == T_NOSCRIPT:
        return False
    f = TAG_FLAGS[tid]
    if f & F_THOROUGH_END:
        return False        # table parts: ignored outside a table
    return not (tid == T_HTML or tid == T_HEAD or tid == T_BODY or tid == T_FRAME
                or tid == T_FRAMESET or tid == T_COL or tid == T_FORM)


cdef int overflow_tag(TreeBuilderSimulator s) except -1:
    """Beyond max_depth: count elements, switch text states for HTML text-content tags."""
    cdef int tid = s.t_tid
    cdef OpenElement* e
    cdef int ns = NS_HTML
    if s.t_tag.is_end:
        if s.overflow > 0:
            s.overflow -= 1
        s.overflow_last_tid = -1
        return 0
    s.overflow_parent_known = overflow_child_certain(s)
    if s.depth > 0:
        e = &s.stack[s.depth - 1]
        if e.ns != NS_HTML and not (e.flags & (E_HTML_IP | E_MATHML_TEXT_IP)):
            ns = e.ns
    s.last_namespace = ns
    s.last_pushed = False
    s.last_inserted = True
    if ns != NS_HTML:
        if not s.t_self_closing:
            s.overflow += 1
            s.last_pushed = True
            s.overflow_last_tid = tid
            s.overflow_last_ns = ns
        return 0
    if tid == T_TITLE or tid == T_TEXTAREA:
        s.pending_text_type = RCDATA
    elif tid == T_STYLE or tid == T_XMP or tid == T_IFRAME or tid == T_NOEMBED \
            or tid == T_NOFRAMES or (tid == T_NOSCRIPT and s.scripting):
        s.pending_text_type = RAWTEXT
    elif tid == T_SCRIPT:
        s.pending_text_type = SCRIPT_DATA
    elif tid == T_PLAINTEXT:
        s.pending_text_type = PLAINTEXT
    elif TAG_FLAGS[tid] & F_VOID:
        return 0
    s.overflow += 1
    s.last_pushed = True
    s.overflow_last_tid = tid
    s.overflow_last_ns = NS_HTML
    return 0


# Whether on_tag takes body_fast (tests turn it off to compare with the general rules).
cdef bint fast_paths = True


def _set_fast_paths(bint on):
    """Turn the simulator's fast paths on or off (for tests: both must agree)."""
    global fast_paths
    fast_paths = on


cdef inline bint body_fast(TreeBuilderSimulator s, TagRec* tag, OpenElement* e,
                           int tid) noexcept:
    """The common tags in body, with the HTML element ``e`` as the current node, handled as
    html_start/html_end would through mode_start/body_start, mode_end/body_end, without that
    dispatch: ordinary elements, formatting elements, the elements that close a p, headings,
    and end tags that pop the current node.  False: not one of them, nothing done."""
    cdef uint32_t f = TAG_FLAGS[tid]
    if tag.is_end:
        if not (f & F_POP_END) or e.tid != tid or (tid == T_OTHER and not same_name(e, s)):
            return False
        if f & F_FORMATTING:
            # (the adoption agency's first step: see adoption_agency)
            if s.afe_len > 0 and s.afe[s.afe_len - 1].id == e.id:
                s.afe_len -= 1
            elif afe_index_of_id(s, e.id) >= 0:
                return False
        pop(s)
        return True
    if not (f & (F_PLAIN_START | F_FORMATTING | F_CLOSES_P | F_HEADING | F_LIST_ITEM)) \
            or tid == T_NOBR:
        return False
    # (none of these is one check_ambiguity looks at: strict mode needs nothing more)
    s.last_in_head = False
    if f & F_LIST_ITEM:
        start_list_item(s, tid)
        return True
    if tid == T_A:
        start_a(s)
        return True
    if f & F_CLOSES_P:
        close_p_in_button_scope(s)
    elif f & F_HEADING:
        close_p_in_button_scope(s)
        e = top(s)
        if e != NULL and e.ns == NS_HTML and TAG_FLAGS[e.tid] & F_HEADING:
            pop(s)
    else:
        reconstruct(s)
    insert_html(s)      # (sets the other last_* fields)
    if f & F_FORMATTING:
        afe_push_current(s)
    return True


cdef inline void set_current_tag(TreeBuilderSimulator s, Lexer lx, TagRec* tag) noexcept:
    """The t_* fields the rules read for the tag being handled (t_xname and t_tid apart)."""
    s.t_tag = tag
    s.t_data = lx.data
    s.t_base = lx.base
    s.t_offset = tag.start
    s.t_self_closing = tag.self_closing
    s.t_no_attrs = False
    s.t_name = tag.name_hash


cdef void esi_void(TreeBuilderSimulator s, Lexer lx, TagRec* tag) noexcept:
    """``<esi:include>`` and ``<esi:comment>`` with ``esi_tags`` on (lol-html's
    ``enable_esi_tags``): an element with no content, whether or not the tag ends in ``/>``,
    that changes nothing else in the tree builder's state (no implied ``<html>``/``<body>``,
    no change of insertion mode).  It stands for content an ESI processor puts in its place,
    so the elements around it are those of the assembled page.  In foreign content it takes
    the current node's namespace, as any other start tag there; its end tag, if any, ends no
    element and is read by the ordinary rules (ignored)."""
    cdef OpenElement* e
    if s.changed_reset:
        begin_changes(s)
    e = top(s)
    if e != NULL and e.ns != NS_HTML and not (e.flags & (E_HTML_IP | E_MATHML_TEXT_IP)):
        s.last_namespace = e.ns
    else:
        s.last_namespace = NS_HTML
    s.last_pushed = False
    s.last_inserted = True
    s.last_in_head = False
    s.pending_text_type = -1
    s.t_tag = NULL
    update_after(s)
    s.changed_reset = True


cdef inline bint afe_has_a(TreeBuilderSimulator s) noexcept:
    """Whether the list has an <a> after its last marker (start_a's search)."""
    cdef Py_ssize_t i = s.afe_len - 1
    while i >= 0 and s.afe[i].id != 0:
        if s.afe[i].elem.ns == NS_HTML and s.afe[i].elem.tid == T_A:
            return True
        i -= 1
    return False


cdef inline bint reconstruct_is_noop(TreeBuilderSimulator s) noexcept:
    """Whether reconstruct() would push nothing, when that is known without a stack search:
    the list is empty or ends with a marker, or afe_pending is up to date (frameset-ok "not ok":
    see update_after) and false."""
    return s.afe_len == 0 or s.afe[s.afe_len - 1].id == 0 \
        or (not s.frameset_ok and not s.afe_pending)


cdef inline void quick_push(TreeBuilderSimulator s, Lexer lx, TagRec* tag, int tid,
                            uint64_t xname) noexcept:
    """insert_html for quick_tag, from the tag itself (the caller checked there is room), with
    the event's bookkeeping around it."""
    if s.changed_reset:
        begin_changes(s)
        s.changed_reset = False
    s.next_id += 1
    push_html_entry(s, tag.name_hash, xname, tag.start, tid)
    note_start(s, NS_HTML, True)
    s.last_in_head = False
    if tag.name_hash == INVALID_HASH:
        set_current_tag(s, lx, tag)
        s.t_xname = xname
        remember_long_name(s)
        s.t_tag = NULL
    lx.cdata_allowed = False
    s.changed_reset = True


cdef inline bint quick_tag(TreeBuilderSimulator s, Lexer lx, TagRec* tag, int tid,
                           uint64_t xname) noexcept:
    """on_tag for the usual tags in body (or in a cell or caption, where they take the rules of
    body), with an HTML current node and room on the stack: body_fast's tags and the void
    elements of F_VOID_RECONSTRUCT and F_VOID_PLAIN, with only the bookkeeping they need
    (nothing here raises, switches the text state or leaves the current node foreign after a
    start tag).  ``xname``: see t_xname.  False: not one of them, nothing done."""
    cdef uint32_t f = TAG_FLAGS[tid]
    cdef OpenElement* e = &s.stack[s.depth - 1]
    cdef Py_ssize_t d
    cdef bint fe_last
    if tag.is_end:
        if not (f & F_POP_END) or e.tid != tid \
                or (tid == T_OTHER and (e.name != tag.name_hash or e.xname != xname)):
            return False
        fe_last = f & F_FORMATTING and s.afe_len > 0 and s.afe[s.afe_len - 1].id == e.id
        if not (f & F_FORMATTING) or (fe_last and (
                s.afe_len == 1 or s.afe[s.afe_len - 2].id == 0
                or (s.depth >= 2 and s.afe[s.afe_len - 2].id == s.stack[s.depth - 2].id))):
            # The current node popped, and nothing else (or with the last entry of the list of
            # active formatting elements, when what is left ends with a marker or with the new
            # current node): what the text that follows can do (wants_text) stays as it was,
            # or is frameset-ok.
            if s.changed_reset:
                begin_changes(s)
                s.changed_reset = False
            if fe_last:
                s.afe_len -= 1
                s.afe_pending = False
                s.wants_text = s.frameset_ok
            d = s.depth - 1
            s.depth = d
            if tid == T_P:
                s.n_p -= 1
            if d < s.changed_from:
                s.changed_from = d
            lx.cdata_allowed = d > 0 and s.stack[d - 1].ns != NS_HTML
            s.changed_reset = True
            return True
        # (a formatting end tag: body_fast below, with update_after)
    else:
        d = s.depth
        if f & (F_PLAIN_START | F_CLOSES_P) and d < s.stack_cap and d + 2 < s.max_depth:
            if f & F_PLAIN_START and reconstruct_is_noop(s) or f & F_CLOSES_P and s.n_p == 0:
                # An element pushed, and nothing else: nothing to reconstruct (F_PLAIN_START),
                # no p to close (F_CLOSES_P).  wants_text stays as it was.
                quick_push(s, lx, tag, tid, xname)
                return True
            if f & F_CLOSES_P and e.tid == T_P:
                # <p>...<p> (or <div>, <ul>...): the p closed is the current node, popped
                # (the close-a-p-element steps come to that), then the new element pushed.
                if s.changed_reset:
                    begin_changes(s)
                    s.changed_reset = False
                s.depth = d - 1
                s.n_p -= 1
                if d - 1 < s.changed_from:
                    s.changed_from = d - 1
                quick_push(s, lx, tag, tid, xname)
                return True
        if tid == T_A and d < s.stack_cap and d + 2 < s.max_depth and s.afe_len < s.afe_cap \
                and reconstruct_is_noop(s) and not afe_has_a(s):
            # <a> with no other <a> in the list (start_a): pushed, and put on the list (no
            # Noah's Ark for <a>: afe_push_current), which then ends with an open element.
            quick_push(s, lx, tag, tid, xname)
            append_afe_entry(s, s.next_id, 0, tag.name_hash, xname, tag.start, tid)
            s.afe_pending = False
            s.wants_text = s.frameset_ok
            return True
        if f & F_FORMATTING and tid != T_A and tid != T_NOBR and d < s.stack_cap \
                and d + 2 < s.max_depth and reconstruct_is_noop(s):
            # b, code, em, i... : pushed and put on the list (afe_push_current: the Noah's Ark
            # clause reads the tag's attributes), which then ends with an open element.
            quick_push(s, lx, tag, tid, xname)
            set_current_tag(s, lx, tag)
            s.t_xname = xname
            s.t_tid = tid
            afe_push_current(s)
            s.t_tag = NULL
            s.afe_pending = False
            s.wants_text = s.frameset_ok
            return True
        if not (f & (F_PLAIN_START | F_FORMATTING | F_CLOSES_P | F_HEADING | F_LIST_ITEM
                     | F_VOID_RECONSTRUCT | F_VOID_PLAIN)) or tid == T_NOBR:
            return False
        # (reconstruct pushes up to afe_len elements: beyond max_depth the general path counts)
        if s.depth + s.afe_len + 2 >= s.max_depth:
            return False
    if s.changed_reset:
        begin_changes(s)
    set_current_tag(s, lx, tag)
    s.t_xname = xname
    s.t_tid = tid
    if not tag.is_end and f & (F_VOID_RECONSTRUCT | F_VOID_PLAIN):
        s.last_in_head = False
        if f & F_VOID_RECONSTRUCT:
            reconstruct(s)
            s.frameset_ok = False
        note_start(s, NS_HTML, False)
    elif not body_fast(s, tag, e, tid):
        s.t_tag = NULL
        return False        # (an end tag the adoption agency does more for: nothing done)
    s.t_tag = NULL
    e = top(s)
    lx.cdata_allowed = e != NULL and e.ns != NS_HTML
    update_after(s)
    s.changed_reset = True
    return True


cdef inline void update_after(TreeBuilderSimulator s) noexcept:
    """After a tag: whether the text that follows can change anything (``wants_text``).
    ``afe_pending`` is worked out only when that depends on it (it is read nowhere else)."""
    cdef Py_ssize_t last = s.afe_len - 1
    cdef int m = s.mode
    if s.overflow != 0 or m == M_TEXT:
        s.wants_text = False
    elif m <= M_AFTER_HEAD or m == M_IN_COLUMN_GROUP or s.frameset_ok \
            or m == M_AFTER_BODY or m == M_AFTER_AFTER_BODY:
        # (after </body> or </html>, text other than white space returns to "in body": where
        # a comment after it goes, which the rewriter reads from the mode)
        s.wants_text = True
    else:
        s.afe_pending = last >= 0 and s.afe[last].id != 0 \
            and index_of_id(s, s.afe[last].id) < 0
        s.wants_text = s.afe_pending


@cython.no_gc     # (its only object field, long_names, holds str: no cycle can go through it)
cdef class TreeBuilderSimulator(Feedback):
    """Tree-builder feedback for the lexer: ``Lexer(sink, TreeBuilderSimulator())``.

    ``TreeBuilderSimulator(*, scripting=True, strict=False, max_depth=DEFAULT_MAX_DEPTH,
    esi_tags=False)``

    * ``scripting``: whether ``<noscript>`` content is raw text (scripting on, as in browsers) or
      markup.
    * ``strict``: raise :class:`~htmlstream.ParsingAmbiguityError` (before the tag is handed on)
      where browsers may read the rest differently; by default the current HTML standard's
      reading is taken.
    * ``max_depth``: how many open elements are recorded; deeper ones are only counted (see
      docs/design/tree-builder-feedback.md).  In strict mode going deeper raises.
    * ``esi_tags``: ``<esi:include>`` and ``<esi:comment>`` make elements with no content even
      without ``/>`` and leave the rest of the tree builder's state as it was (see esi_void;
      lol-html's ``enable_esi_tags``).
    """

    def __cinit__(self):
        self.stack = NULL
        self.afe = NULL
        self.template_modes = NULL
        self.name_caches = NULL

    def __init__(self, *, bint scripting=True, bint strict=False,
                 Py_ssize_t max_depth=DEFAULT_MAX_DEPTH, bint esi_tags=False):
        self.init(scripting, strict, max_depth)
        self.esi_tags = esi_tags

    cdef int init(self, bint scripting, bint strict, Py_ssize_t max_depth) except -1:
        """What ``__init__`` does, callable from C on ``TreeBuilderSimulator.__new__(...)`` (a
        rewriter opens a simulator per stream: no keyword arguments to parse)."""
        if max_depth < 4:
            raise ValueError("max_depth must be at least 4")
        _free_arrays(self)
        self.stack_cap = min(<Py_ssize_t>STACK_INITIAL, max_depth)
        self.afe_cap = min(<Py_ssize_t>AFE_INITIAL, max_depth)
        self.stack = <OpenElement*>malloc(self.stack_cap * sizeof(OpenElement))
        self.afe = <FormattingEntry*>malloc(self.afe_cap * sizeof(FormattingEntry))
        if self.stack == NULL or self.afe == NULL:
            _free_arrays(self)
            raise MemoryError()
        self.scripting = scripting
        self.strict = strict
        self.esi_tags = False
        self.max_depth = max_depth
        self.depth = 0
        self.n_p = 0
        self.overflow = 0
        self.next_id = 0
        self.changed_from = 0
        self.changed_reset = False
        self.event_id_mark = 0
        self.n_transients = 0
        self.n_kept_ancestors = 0
        self.overflow_last_tid = -1
        self.overflow_last_ns = NS_HTML
        self.overflow_parent_known = False
        self.text_change_at = 0
        self.text_changed = False
        self.n_text_popped = 0
        self.last_in_head = False
        self.afe_len = 0
        self.afe_pending = False
        self.mode = M_INITIAL
        self.orig_mode = M_INITIAL
        self.template_modes_len = 0
        self.frameset_ok = True
        self.quirks = False
        self.head_seen = False
        self.head_elem.id = 0
        self.form_id = 0
        self.frameset_seen = False
        self.last_namespace = NS_HTML
        self.last_pushed = False
        self.t_tag = NULL
        self.pending_text_type = -1
        self.long_names = None     # (made at the first name the hash cannot hold)
        self.wants_text = True
        return 0

    def __dealloc__(self):
        _free_arrays(self)

    # ------------------------------------------------------------------ Feedback

    cdef int on_tag(self, Lexer lx, TagRec* tag) except -1:
        # Small on purpose: the usual tags take quick_tag without the register saves and the
        # set-up of the general rules (a method: called through the vtable, never inlined).
        cdef int m = self.mode
        cdef const unsigned char* name
        cdef Py_ssize_t n
        cdef int tid
        cdef uint64_t xname = 0
        if tag.name_hash != INVALID_HASH:
            tid = tid_of_hash(tag.name_hash)
        else:
            # custom elements (names with '-', or longer than the hash holds): see t_xname
            name = lx.data + (tag.name_start - lx.base)
            n = tag.name_end - tag.name_start
            if self.esi_tags and not tag.is_end and (
                    eq_ci(name, n, b"esi:include", 11) or eq_ci(name, n, b"esi:comment", 11)):
                # (':' never fits the 5-bit hash: with the setting off this costs nothing)
                esi_void(self, lx, tag)
                return 0
            xname = xname_of(self, name, n, lx.data_len - (tag.name_start - lx.base))
            tid = T_ANNOTATION_XML if eq_ci(name, n, b"annotation-xml", 14) else T_OTHER
        if fast_paths and (m == M_IN_BODY or m == M_IN_CELL or m == M_IN_CAPTION) \
                and self.overflow == 0 and self.depth > 0 \
                and self.stack[self.depth - 1].ns == NS_HTML \
                and quick_tag(self, lx, tag, tid, xname):
            return 0
        return self.on_tag_general(lx, tag, tid, xname)

    cdef int on_tag_general(self, Lexer lx, TagRec* tag, int tid, uint64_t xname) except -1:
        """on_tag for every tag: the tree-construction rules of the current insertion mode
        (``tid``, ``xname``: worked out by on_tag)."""
        cdef OpenElement* e
        set_current_tag(self, lx, tag)
        self.t_xname = xname
        self.t_tid = tid
        self.pending_text_type = -1
        if self.changed_reset:
            begin_changes(self)
        e = top(self)
        if e != NULL and self.mode == M_IN_BODY and e.ns == NS_HTML and fast_paths \
                and body_fast(self, tag, e, tid):
            pass
        elif self.overflow > 0:
            overflow_tag(self)
        elif tag.is_end:
            if e != NULL and e.ns != NS_HTML:
                if tid == T_P or tid == T_BR:
                    pop_to_html_or_integration_point(self)
                    html_end(self)
                else:
                    foreign_end(self)
            else:
                html_end(self)
        else:
            self.last_namespace = NS_HTML
            self.last_pushed = False
            self.last_inserted = False
            self.last_in_head = False
            if uses_html_rules_for_start(self):
                if self.strict:
                    check_ambiguity(self)
                if tid == T_FRAMESET:
                    self.frameset_seen = True
                html_start(self)
            elif breaks_out(self):
                pop_to_html_or_integration_point(self)
                html_start(self)
            else:
                insert_foreign(self, top(self).ns)
        if self.overflow > 0 and self.strict:
            raise ParsingAmbiguityError(
                _tag_name(self), tag.start,
                f"more than max_depth={self.max_depth} open elements: the rest cannot be followed")
        if self.pending_text_type >= 0:
            lx.switch_text_state(self.pending_text_type)
        e = top(self)
        if e != NULL:
            lx.cdata_allowed = e.ns != NS_HTML
        elif self.depth == 0:
            lx.cdata_allowed = False
        update_after(self)
        self.t_tag = NULL
        self.changed_reset = True
        return 0

    cdef int on_text(self, Lexer lx, Py_ssize_t content_start, Py_ssize_t content_end,
                     int text_type) except -1:
        cdef const unsigned char* p
        cdef Py_ssize_t n, i
        cdef bint non_ws = False, non_nul = False, amp = False, nul_char = False
        cdef unsigned char c
        cdef int m, m0
        cdef OpenElement* e
        cdef Py_ssize_t first_char = -1, first_non_ws = -1, depth, changed, n_transients
        cdef Py_ssize_t first_nul = -1
        self.text_changed = False
        self.n_text_popped = 0
        if text_type != DATA and text_type != CDATA_SECTION:
            return 0
        if self.overflow > 0 or content_end <= content_start:
            return 0
        p = lx.data + (content_start - lx.base)
        n = content_end - content_start
        if content_start == 0 and n >= 3 and p[0] == 0xEF and p[1] == 0xBB and p[2] == 0xBF:
            # A byte order mark is not part of the document (the decoder drops it).
            p += 3
            n -= 3
        for i in range(n):
            c = p[i]
            if c == 0:
                if first_nul < 0:
                    first_nul = i
                continue
            if not non_nul:
                first_char = i
            non_nul = True
            if is_ws(c):
                continue
            first_non_ws = i
            if c == b'&' and text_type == DATA:
                amp = True      # a character reference may stand for white space: decode
                break
            non_ws = True
            break
        if amp:
            non_ws = _decoded_has_non_ws(PyBytes_FromStringAndSize(<const char*>p, n))
        if first_nul >= 0 and self.mode <= M_AFTER_HEAD and (
                not non_ws or first_nul < first_non_ws):
            # Before the body a NUL is a character like any other ("anything else": it implies
            # <html>, <head> and <body>); in the body it is dropped.
            nul_char = True
            first_non_ws = first_nul
            if first_char < 0 or first_nul < first_char:
                first_char = first_nul
        if not non_nul and not nul_char:
            return 0
        if self.changed_reset:
            begin_changes(self)
            self.changed_reset = False
        depth = self.depth
        changed = self.changed_from
        n_transients = self.n_transients
        m0 = self.mode
        while True:
            if not uses_html_rules_for_text(self):
                if non_ws:
                    self.frameset_ok = False
                break
            m = self.mode
            if m == M_IN_BODY or m == M_IN_CAPTION or m == M_IN_CELL or m == M_IN_TEMPLATE:
                body_text(self, non_ws)
                break
            if m == M_INITIAL:
                if not (non_ws or nul_char):
                    break
                self.quirks = True
                self.mode = M_BEFORE_HTML
                continue
            if m == M_BEFORE_HTML:
                if not (non_ws or nul_char):
                    break
                insert_implied(self, T_HTML)
                self.mode = M_BEFORE_HEAD
                continue
            if m == M_BEFORE_HEAD:
                if not (non_ws or nul_char):
                    break
                insert_implied(self, T_HEAD)
                self.head_seen = True
                if top(self) != NULL:
                    self.head_elem = top(self)[0]
                self.mode = M_IN_HEAD
                continue
            if m == M_IN_HEAD or m == M_IN_HEAD_NOSCRIPT:
                if not (non_ws or nul_char):
                    break
                text_popped(self, depth)
                if m == M_IN_HEAD:
                    pop_head(self)
                else:
                    pop(self)
                self.mode = M_AFTER_HEAD if m == M_IN_HEAD else M_IN_HEAD
                continue
            if m == M_AFTER_HEAD:
                if not (non_ws or nul_char):
                    break
                insert_implied(self, T_BODY)
                self.mode = M_IN_BODY
                continue
            if m == M_AFTER_BODY or m == M_AFTER_AFTER_BODY:
                if non_ws:
                    self.mode = M_IN_BODY
                body_text(self, non_ws)
                break
            if m == M_IN_TABLE or m == M_IN_TABLE_BODY or m == M_IN_ROW:
                e = top(self)
                if e != NULL and e.ns == NS_HTML and (
                        e.tid == T_TABLE or e.tid == T_TBODY or e.tid == T_TEMPLATE
                        or e.tid == T_TFOOT or e.tid == T_THEAD or e.tid == T_TR):
                    if non_ws:
                        body_text(self, True)      # foster-parented with the in-body rules
                else:
                    body_text(self, non_ws)
                break
            if m == M_IN_COLUMN_GROUP:
                if non_ws and cur_is(self, T_COLGROUP):
                    text_popped(self, depth)
                    pop(self)
                    self.mode = M_IN_TABLE
                    continue
                break
            if m == M_AFTER_AFTER_FRAMESET:
                body_text(self, False)
                break
            break       # text mode, in frameset, after frameset
        if self.depth != depth or self.changed_from < changed or \
                self.n_transients != n_transients:
            # Where the text changed the stack: before the head and in a column group at the
            # first non-white-space character (white space before it is inserted where it is),
            # elsewhere (re-opened formatting elements) at the first character.
            i = first_non_ws if m0 <= M_AFTER_HEAD or m0 == M_IN_COLUMN_GROUP else first_char
            if i < 0:
                i = first_char
            self.text_change_at = content_end - n + i
            self.text_changed = True
        e = top(self)
        if e != NULL:
            lx.cdata_allowed = e.ns != NS_HTML
        update_after(self)
        return 0

    cdef int on_doctype(self, Lexer lx, DoctypeRec* d) except -1:
        if self.mode != M_INITIAL:
            return 0
        if not d.force_quirks and d.public_start < 0 and d.system_start < 0 \
                and d.name_start >= 0 and eq_ci(lx.data + (d.name_start - lx.base),
                                                d.name_end - d.name_start, b"html", 4):
            self.quirks = False         # <!DOCTYPE html>, as good as every page (no strings)
        else:
            self.quirks = bool(doctype_is_quirky(
                _slice_str(lx, d.name_start, d.name_end),
                _slice_str(lx, d.public_start, d.public_end),
                _slice_str(lx, d.system_start, d.system_end),
                d.force_quirks))
        self.mode = M_BEFORE_HTML
        update_after(self)
        return 0

    cdef int on_eof(self, Lexer lx) except -1:
        return 0

    cdef void changes_seen(self) noexcept:
        """The consumer has replayed the stack changes so far (changed_from, the transient
        elements): they are not reported again, and the next event starts afresh."""
        self.changed_reset = True
        self.n_transients = 0
        self.n_kept_ancestors = 0

    # ------------------------------------------------------------------ Python surface

    def open_elements(self, *, bint detail=False):
        """The recorded stack of open elements, outermost first.

        Each item is ``(name, namespace)`` with the lower-cased local name and ``"html"``,
        ``"svg"`` or ``"math"``; with ``detail=True`` also the start tag's stream offset (-1 for
        elements the parser implied) and flags (``"implied"``, ``"clone"``).
        """
        cdef Py_ssize_t i
        cdef OpenElement* e
        out = []
        for i in range(self.depth):
            e = &self.stack[i]
            if e.name != INVALID_HASH:
                name = _TAG_NAMES[e.tid] if e.tid else _unhash(e.name)
            else:
                name = self.long_names.get(e.xname, "?") if self.long_names else "?"
            ns = _NS_SHORT[e.ns]
            if detail:
                flags = []
                if e.flags & E_IMPLIED:
                    flags.append("implied")
                if e.flags & E_CLONE:
                    flags.append("clone")
                out.append((name, ns, e.offset, tuple(flags)))
            else:
                out.append((name, ns))
        return out

    @property
    def insertion_mode(self):
        """The current insertion mode, as the HTML standard names it."""
        return _MODE_NAMES[self.mode]

    @property
    def last_start_tag_namespace(self):
        """The namespace URI of the element the last start tag created."""
        return NAMESPACE_URIS[self.last_namespace]

    @property
    def last_start_tag_pushed(self):
        """Whether the last start tag's element was pushed (it can have content)."""
        return bool(self.last_pushed)

    @property
    def reads_text(self):
        """Whether the lexer tells the simulator of the text that follows (it may change the
        stack: the active formatting elements reopened, frameset-ok, table text)."""
        return bool(self.wants_text)

    @property
    def active_formatting_elements(self):
        """Names of the list of active formatting elements (``None`` for a marker)."""
        cdef Py_ssize_t i
        return [None if self.afe[i].id == 0 else _TAG_NAMES[self.afe[i].elem.tid]
                for i in range(self.afe_len)]


cdef void _free_arrays(TreeBuilderSimulator s) noexcept:
    if s.stack != NULL:
        free(s.stack)
        s.stack = NULL
    if s.afe != NULL:
        free(s.afe)
        s.afe = NULL
    if s.template_modes != NULL:
        free(s.template_modes)
        s.template_modes = NULL
    if s.name_caches != NULL:
        free(s.name_caches)
        s.name_caches = NULL


cdef void body_text(TreeBuilderSimulator s, bint non_ws) noexcept:
    reconstruct(s)
    if non_ws:
        s.frameset_ok = False


cdef bint _decoded_has_non_ws(bytes raw) except -1:
    from htmlstream.charrefs import decode_charrefs
    text = decode_charrefs(raw.decode("utf-8", "replace"))
    for ch in text:
        if ch not in "\t\n\x0c\r \x00":
            return True
    return False


def _unhash(uint64_t h):
    """The name a valid taghash stands for."""
    chars = []
    cdef int c
    while h:
        c = h & 31
        chars.append("123456"[c] if c < 6 else chr(ord("a") + c - 6))
        h >>= 5
    return "".join(reversed(chars))
