# cython: language_level=3
"""A token sink that turns the lexer's byte ranges into Python token objects (htmlstream.tokens).

Only the token API uses it; the rewriter has its own sink that materialises nothing it need not.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize

from htmlstream._engine.lexer cimport AttrRec, DoctypeRec, Lexer, TagRec, TokenSink

from htmlstream.tokens import Comment, Doctype, EndTag, StartTag, Text, Unparsed


cdef inline bytes slice_bytes(Lexer lx, Py_ssize_t start, Py_ssize_t end):
    return PyBytes_FromStringAndSize(<const char*>lx.data + (start - lx.base), end - start)


cdef class TokenCollector(TokenSink):
    """Appends a token object to ``tokens`` for every token the lexer finds."""

    cdef public list tokens
    cdef public str encoding

    def __init__(self, str encoding="utf-8"):
        self.tokens = []
        self.encoding = encoding

    def take(self):
        """Return the tokens collected so far and start a new list."""
        tokens = self.tokens
        self.tokens = []
        return tokens

    cdef int on_text(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                     Py_ssize_t content_start, Py_ssize_t content_end, int text_type,
                     bint last) except -1:
        span = None
        if content_start != start or content_end != end:
            span = (content_start - start, content_end - start)
        self.tokens.append(Text(slice_bytes(lx, start, end), start, self.encoding, text_type, span,
                                last_in_text_node=last))
        return 0

    cdef int on_tag(self, Lexer lx, TagRec* tag) except -1:
        cdef Py_ssize_t i, s = tag.start
        cdef AttrRec* a
        spans = []
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            if a.value_start < 0:
                spans.append((a.name_start - s, a.name_end - s, -1, -1))
            else:
                spans.append((a.name_start - s, a.name_end - s, a.value_start - s, a.value_end - s))
        cls = EndTag if tag.is_end else StartTag
        self.tokens.append(cls(slice_bytes(lx, tag.start, tag.end), s, self.encoding,
                               (tag.name_start - s, tag.name_end - s), tuple(spans),
                               bool(tag.self_closing)))
        return 0

    cdef int on_comment(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                        Py_ssize_t content_start, Py_ssize_t content_end) except -1:
        self.tokens.append(Comment(slice_bytes(lx, start, end), start, self.encoding,
                                   (content_start - start, content_end - start)))
        return 0

    cdef int on_doctype(self, Lexer lx, DoctypeRec* d) except -1:
        cdef Py_ssize_t s = d.start
        spans = (
            None if d.name_start < 0 else (d.name_start - s, d.name_end - s),
            None if d.public_start < 0 else (d.public_start - s, d.public_end - s),
            None if d.system_start < 0 else (d.system_start - s, d.system_end - s),
        )
        self.tokens.append(Doctype(slice_bytes(lx, d.start, d.end), s, self.encoding, spans,
                                   bool(d.force_quirks)))
        return 0

    cdef int on_unparsed(self, Lexer lx, Py_ssize_t start, Py_ssize_t end) except -1:
        self.tokens.append(Unparsed(slice_bytes(lx, start, end), start, self.encoding))
        return 0
