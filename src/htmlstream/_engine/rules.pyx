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

from htmlstream._engine.matcher cimport Program


cdef class RewriterSettings:
    """A Rewriter's settings: its attributes of these names are kept here (rewriter.py,
    ``_Setting``), so that a stream reads them as C fields when it opens, not with one
    attribute look-up each on the rewriter.  Values are kept as they were set."""

    def __init__(self):
        self.on_error = None
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
        self.any_text = bool(doc_text) or any(text_handlers)
        self.any_element = program.n_rules > 0
        self.any_scoped = any(text_handlers) or any(comment_handlers)
        # (per rule: its element handlers if it was registered with implied=True, else [])
        self.implied_handlers = (implied_handlers if implied_handlers is not None
                                 else [[] for _ in element_handlers])
        self.any_implied = any(self.implied_handlers)
        self.any_text_filter = any(len(e) == 3 for e in doc_text) or any(
            len(e) == 3 for handlers in text_handlers for e in handlers)
        self.attribute_tags = None
        self.attribute_policy = None
        self.active_cache = {}


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
        self.lock = threading.Lock()

    cpdef Rules for_codec(self, str codec):
        """The rules compiled for the Python codec ``codec``: the same handlers, with the
        selectors' literals in that encoding."""
        cdef Rules rules = self.by_codec.get(codec)     # (no lock to read: one dict look-up)
        cdef Rules first = self.first
        if rules is not None:
            return rules
        with self.lock:
            rules = self.by_codec.get(codec)
            if rules is None:
                rules = Rules(Program(self.selectors, codec), first.element_handlers,
                              first.text_handlers, first.comment_handlers, first.doc_text,
                              first.doc_comments, first.doc_doctype, first.doc_end,
                              first.implied_handlers)
                rules.attribute_tags = first.attribute_tags
                self.by_codec[codec] = rules
        return rules


cdef class TextFilter:
    """The characters a text handler registered with ``text_filter=`` waits for
    (:meth:`htmlstream.Rewriter.on`): the sink hands it a text node that comes in one piece only
    when the piece's bytes hold one of them.

    Args:
        chars: ASCII characters (the raw bytes of text in any encoding a handler can read hold
            an ASCII character as that one byte).
    """

    def __init__(self, str chars):
        if not chars or not chars.isascii():
            raise ValueError(f"text_filter must be a non-empty string of ASCII characters, "
                             f"not {chars!r}")
        self.chars = bytes(sorted(set(chars.encode("ascii"))))
        self.n_chars = len(self.chars)
        self.first = self.chars[0]
        memset(self.table, 0, sizeof(self.table))
        for c in self.chars:
            self.table[c] = 1

    cdef bint found(self, const unsigned char* p, Py_ssize_t n) noexcept:
        """Whether the ``n`` bytes at ``p`` hold one of the characters."""
        cdef Py_ssize_t i, k = self.n_chars
        cdef const unsigned char* c
        if k == 1:
            return memchr(p, self.first, n) != NULL
        c = self.chars
        if k <= 3:          # (memchr's vector scan, once per character)
            for i in range(k):
                if memchr(p, c[i], n) != NULL:
                    return True
            return False
        for i in range(n):
            if self.table[p[i]]:
                return True
        return False

    def __reduce__(self):
        return (TextFilter, (self.chars.decode("ascii"),))

    def __eq__(self, other):
        return type(other) is TextFilter and (<TextFilter>other).chars == self.chars

    def __hash__(self):
        return hash(self.chars)

    def __repr__(self):
        return f"TextFilter({self.chars.decode('ascii')!r})"


cdef class MetaCharsetRule:
    """The handler of the internal ``<meta charset>`` rule (``adjust_charset_on_meta_tag``):
    the sink does not call it, it hands the element to its stream's encoding switch."""

    def __call__(self, element):
        return None

    def __repr__(self):
        return "<the <meta charset> rule>"
