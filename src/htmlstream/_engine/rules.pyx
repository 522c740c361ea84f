# cython: language_level=3
"""What a Rewriter hands to its streams: its settings and its rules, compiled.

A stream reads nothing else of its Rewriter.  :class:`CompiledRules` is a snapshot of the rules
(selectors and handlers) taken when the stream opens: rules added later apply to the streams
opened after them.  The selectors are compiled per codec (a selector's literals are compared as
bytes in the document's encoding): for the encoding a stream opens with, and again for another
one when a ``<meta charset>`` switches the encoding mid-document (:meth:`CompiledRules.for_codec`).
"""

import threading

from libc.string cimport memchr, memset

from htmlstream._engine.portable cimport find_any, load_le64

from htmlstream._engine.matcher cimport Program


cdef class RewriterSettings:
    """A Rewriter's settings: its attributes of these names are kept here (rewriter.py,
    ``_Setting``), so that a stream reads them as C fields when it opens, not with one
    attribute look-up each on the rewriter.  Values are kept as they were set."""

    def __init__(self):
        self.on_error = None
        self.esi_tags = False
        self._scanner = True
        self._lazy_mirror = True


cdef class Rules:
    """The rules compiled for one codec: the selector program and the handlers, shared by
    streams."""

    def __init__(self, Program program, list element_handlers, list text_handlers,
                 list comment_handlers, list doc_text, list doc_comments, list doc_doctype,
                 list doc_end, list implied_handlers=None):
        self.program = program
        self.element_handlers = element_handlers
        self.text_handlers = text_handlers
        self.comment_handlers = comment_handlers
        self.doc_text = doc_text
        self.doc_comments = doc_comments
        self.doc_doctype = doc_doctype
        self.doc_end = doc_end
        # (plain loops, not any() over generators: a Rewriter made per request pays this)
        cdef bint rule_text = False, rule_comments = False, implied = False
        cdef bint text_filter = False
        for handlers in text_handlers:
            if handlers:
                rule_text = True
                for e in <list>handlers:
                    if len(<tuple>e) == 3:
                        text_filter = True
        for handlers in comment_handlers:
            if handlers:
                rule_comments = True
                break
        for e in doc_text:
            if len(<tuple>e) == 3:
                text_filter = True
        self.any_text = bool(doc_text) or rule_text
        self.any_element = program.n_rules > 0
        self.any_scoped = rule_text or rule_comments
        # (per rule: its element handlers if it was registered with implied=True, else [])
        if implied_handlers is None:
            implied_handlers = [[] for _ in element_handlers]
        else:
            for handlers in implied_handlers:
                if handlers:
                    implied = True
                    break
        self.implied_handlers = implied_handlers
        self.any_implied = implied
        self.any_text_filter = text_filter
        self.attribute_tags = None
        self.attribute_policy = None
        self.active_cache = {}


#: Held while CompiledRules.for_codec compiles for a codec not seen yet (rare: a <meta charset>
#: switch; one lock for all of them, not a lock made per Rewriter).
_FOR_CODEC_LOCK = threading.Lock()


cdef class CompiledRules:
    """What a stream needs from its Rewriter, handed over when the stream opens: the rules
    compiled for a codec (:meth:`for_codec`: the same selectors and handlers for any codec) and
    the rewriter's settings (read when the stream opens and starts its engine).

    Args:
        settings: the rewriter's RewriterSettings (the object itself: later changes apply to
            the streams opened after them).
        rules: the rules compiled for ``codec``.
        selectors: what ``rules.program`` was compiled from (a SelectorList per rule).
        meta_rule: whether rule 0 is the ``<meta charset>`` rule (its handler a
            :class:`MetaCharsetRule`).
    """

    def __init__(self, RewriterSettings settings, Rules rules, str codec, list selectors,
                 bint meta_rule):
        self.settings = settings
        self.first = rules
        self.selectors = selectors
        self.meta_rule = meta_rule
        self.by_codec = {codec: rules}
        self.stages = None
        self.passthrough_hooks = None
        self.program_for = None

    cpdef Rules for_codec(self, str codec):
        """The rules compiled for the Python codec ``codec``: the same handlers, with the
        selectors' literals in that encoding (the program from ``program_for`` when it is
        set: one shared by every rewriter with the same selectors)."""
        cdef Rules rules = self.by_codec.get(codec)     # (no lock to read: one dict look-up)
        cdef Rules first = self.first
        if rules is not None:
            return rules
        with _FOR_CODEC_LOCK:
            rules = self.by_codec.get(codec)
            if rules is None:
                program = (Program(self.selectors, codec) if self.program_for is None
                           else self.program_for(codec))
                rules = Rules(program, first.element_handlers,
                              first.text_handlers, first.comment_handlers, first.doc_text,
                              first.doc_comments, first.doc_doctype, first.doc_end,
                              first.implied_handlers)
                rules.attribute_tags = first.attribute_tags
                rules.attribute_policy = first.attribute_policy
                self.by_codec[codec] = rules
        return rules


#: The text types (htmlstream.TextType: DATA 0 ... CDATA_SECTION 5) a TextFilter may name.
cdef int N_TEXT_TYPES = 6
cdef unsigned ALL_TEXT_TYPES = (1u << N_TEXT_TYPES) - 1


cdef bint utf8_valid(const unsigned char* p, Py_ssize_t n) noexcept:
    """Whether the ``n`` bytes at ``p`` are UTF-8 as Python's codec decodes it without an
    error (no overlong form, no surrogate, nothing above U+10FFFF, nothing cut short)."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c, c1
    while i < n:
        if i + 8 <= n and (load_le64(p + i) & 0x8080808080808080ULL) == 0:
            i += 8      # (eight ASCII bytes at once)
            continue
        c = p[i]
        if c < 0x80:
            i += 1
        elif c < 0xC2:
            return False
        elif c < 0xE0:
            if i + 1 >= n or (p[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
        elif c < 0xF0:
            if i + 2 >= n:
                return False
            c1 = p[i + 1]
            if (c1 & 0xC0) != 0x80 or (p[i + 2] & 0xC0) != 0x80 \
                    or (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 >= 0xA0):
                return False
            i += 3
        elif c < 0xF5:
            if i + 3 >= n:
                return False
            c1 = p[i + 1]
            if (c1 & 0xC0) != 0x80 or (p[i + 2] & 0xC0) != 0x80 \
                    or (p[i + 3] & 0xC0) != 0x80 \
                    or (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 >= 0x90):
                return False
            i += 4
        else:
            return False
    return True


cdef bint any_non_ascii(const unsigned char* p, Py_ssize_t n) noexcept:
    """Whether one of the ``n`` bytes at ``p`` is outside ASCII."""
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        if load_le64(p + i) & 0x8080808080808080ULL:
            return True
        i += 8
    while i < n:
        if p[i] >= 0x80:
            return True
        i += 1
    return False


def _text_filter(chars, undecodable, text_types):
    """A TextFilter from its fields (unpickling: the constructor's options are keywords)."""
    return TextFilter(chars, undecodable=undecodable, text_types=text_types)


cdef class TextFilter:
    """What a text handler waits for (``text_filter=`` of :meth:`htmlstream.Rewriter.on`,
    :meth:`~htmlstream.Rewriter.on_document` and :meth:`~htmlstream.Rewriter.text`): a text
    node that comes in one piece goes to the handler only when it passes the filter; the engine
    spares the handler the others in C, without a Python call.  Every piece of a text node that
    comes in several pieces goes to the handler (see :meth:`~htmlstream.Rewriter.on`).
    ``text_filter="@"`` is ``text_filter=TextFilter("@")``.

    ``chars``: ASCII characters; a piece whose raw bytes hold one of them passes (the raw bytes
    of text in any encoding a handler can read hold an ASCII character as that one byte).  It
    may be empty when ``undecodable`` is true.

    ``undecodable``: a piece with bytes the document's encoding cannot decode (that the handler
    would read as U+FFFD) passes too: in UTF-8, exactly those; in any other encoding, every
    piece with a byte outside ASCII.

    ``text_types``: the :class:`~htmlstream.TextType` values of the text the filter applies
    to; a piece of another type goes to the handler whatever it holds (``None``: the filter
    applies to text of every type).
    """

    def __init__(self, str chars, *, bint undecodable=False, text_types=None):
        cdef unsigned types = 0
        if not chars.isascii() or not (chars or undecodable):
            raise ValueError(f"text_filter must be a non-empty string of ASCII characters, "
                             f"not {chars!r}")
        if text_types is None:
            types = ALL_TEXT_TYPES
        else:
            if isinstance(text_types, (str, bytes, int)):
                raise TypeError("text_types must be a collection of TextType values")
            for t in text_types:
                if not isinstance(t, int) or not 0 <= t < N_TEXT_TYPES:
                    raise ValueError(f"not a TextType: {t!r}")
                types |= 1u << <int>t
        self.chars = bytes(sorted(set(chars.encode("ascii"))))
        self.undecodable = undecodable
        self.types = types
        self.plain = not undecodable and types == ALL_TEXT_TYPES
        self.n_chars = len(self.chars)
        self.first = self.chars[0] if self.chars else 0
        memset(self.table, 0, sizeof(self.table))
        for c in self.chars:
            self.table[c] = 1

    @property
    def text_types(self):
        """The text types the filter applies to (a frozenset of
        :class:`~htmlstream.TextType`)."""
        from htmlstream.tokens import TextType
        return frozenset(TextType(t) for t in range(N_TEXT_TYPES) if self.types >> t & 1)

    cdef bint found(self, const unsigned char* p, Py_ssize_t n) noexcept:
        """Whether the ``n`` bytes at ``p`` hold one of the characters."""
        cdef Py_ssize_t i, k = self.n_chars
        cdef const unsigned char* c
        cdef int high
        if k == 1:
            return memchr(p, self.first, n) != NULL
        c = self.chars
        if k <= 3:          # (memchr's vector scan, once per character)
            for i in range(k):
                if memchr(p, c[i], n) != NULL:
                    return True
            return False
        if k <= 8:          # (one pass for all of them)
            return find_any(p, n, c, <int>k, self.table, &high)
        for i in range(n):
            if self.table[p[i]]:
                return True
        return False

    cdef bint passes(self, const unsigned char* p, Py_ssize_t n, int text_type,
                     bint utf8) noexcept:
        """Whether a text node of type ``text_type`` whose ``n`` raw bytes are at ``p`` goes
        to the handler (``utf8``: the document's encoding is UTF-8)."""
        cdef Py_ssize_t k = len(self.chars)
        cdef int high = 1
        if not (self.types >> text_type) & 1:
            return True
        if not self.undecodable:
            return self.found(p, n)
        if k == 0:
            high = any_non_ascii(p, n)
        elif k <= 8:        # (the characters and the bytes outside ASCII in one pass)
            if find_any(p, n, self.chars, <int>k, self.table, &high):
                return True
        elif self.found(p, n):
            return True
        if not high:
            return False
        return not utf8_valid(p, n) if utf8 else True

    def __reduce__(self):
        return (_text_filter, (self.chars.decode("ascii"), self.undecodable,
                               None if self.types == ALL_TEXT_TYPES else
                               tuple(t for t in range(N_TEXT_TYPES) if self.types >> t & 1)))

    def __eq__(self, other):
        return type(other) is TextFilter and (<TextFilter>other).chars == self.chars and \
            (<TextFilter>other).undecodable == self.undecodable and \
            (<TextFilter>other).types == self.types

    def __hash__(self):
        return hash((self.chars, self.undecodable, self.types))

    def __repr__(self):
        options = ""
        if self.undecodable:
            options += ", undecodable=True"
        if self.types != ALL_TEXT_TYPES:
            names = ", ".join(f"TextType.{t.name}" for t in sorted(self.text_types))
            options += f", text_types={{{names}}}"
        return f"TextFilter({self.chars.decode('ascii')!r}{options})"


cdef class MetaCharsetRule:
    """The handler of the internal ``<meta charset>`` rule (``adjust_charset_on_meta_tag``):
    the sink does not call it, it hands the element to its stream's encoding switch."""

    def __call__(self, element):
        return None

    def __repr__(self):
        return "<the <meta charset> rule>"
