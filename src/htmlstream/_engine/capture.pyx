# cython: language_level=3
"""Captures: an element's text content, inner HTML or outer HTML, delivered where it ends.

A handler asks for one with ``Element.capture(callback, kind, max_bytes=, on_limit=)`` (units.pyx
records the request); the sink (rewriter.pyx) makes a ``Capture`` for it once the element's
handlers have returned, feeds it while the element is open and calls ``callback`` with a
:class:`Captured` where the element ends (its end tag, the tag or text that closes it implicitly,
or the end of input), before the element's end-tag handlers (which can use what it gave:
insert a summary of the text after the element, say).

What a capture holds is read from the input, not the output: other handlers' changes (and the
removal of the element) do not change it.

- Text (``CAP_TEXT``): the source bytes of every text piece the lexer hands over while the
  element is open (its descendants' text too; comments are not text), kept as *runs* of
  contiguous bytes read in one text type and decoded one run at a time, the way the tokenizer
  reads them: character references (DATA, RCDATA), newlines, NUL; so a character reference, a
  CR LF or a multi-byte character cut by a chunk boundary reads as it does whole.  The tree
  builder's own rules on text that the tokens do not show are applied too: the newline right
  after ``<pre>``, ``<listing>`` and ``<textarea>`` is dropped, NUL in HTML text is dropped (in
  SVG and MathML it is U+FFFD), text inside a ``<template>`` below the element (a template's
  content is not its text) is left out.
- HTML (``CAP_INNER``, ``CAP_OUTER``): the input bytes from the start tag's end (inner) or start
  (outer) to where the element ends (inner: before its end tag; outer: after it), copied from the
  lexer's window at each chunk end and at the element's end, decoded at the end.

``max_bytes`` bounds the source bytes a capture holds.  Beyond it the capture stops holding
more: the value is what the first ``max_bytes`` bytes give (cut at a character boundary) with
``truncated`` set; with ``on_limit="error"`` it raises :class:`BufferLimitExceeded` instead
(which fails the stream, or with the rewriter's ``on_limit="passthrough"`` passes the rest of
the document through, as any limit does).
"""

cimport cython
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy

from htmlstream._engine.constants cimport CDATA_SECTION, DATA
from htmlstream._engine.lexer cimport Lexer
from htmlstream._engine.units cimport process_text

import codecs
from typing import NamedTuple

from htmlstream.errors import BufferLimitExceeded

KIND_NAMES = ("text", "inner_html", "outer_html")


class Captured(NamedTuple):
    """What :meth:`Element.capture` delivers where the element ends.

    Attributes:
        kind: ``"text"``, ``"inner_html"`` or ``"outer_html"``.
        value: the element's text content (decoded, as the DOM's ``textContent``), or its inner
            or outer HTML (the source markup, decoded).
        truncated: the content went beyond ``max_bytes``: ``value`` is what the first
            ``max_bytes`` bytes of it give.
        implicit: the element ended without an end tag of its own (closed by another tag, by
            text, or by the end of input); always false for a void element.
    """

    kind: str
    value: str
    truncated: bool
    implicit: bool


cdef str _text_of(bytes raw, str encoding, int run_type, bint cut):
    """The text a run of source bytes reads as (``cut``: the run was cut at the cap: an
    incomplete character at its end is dropped, not replaced)."""
    cdef str text
    if cut:
        text = codecs.getincrementaldecoder(encoding)("replace").decode(raw, False)
    else:
        text = raw.decode(encoding, "replace")
    if "&" not in text and "\r" not in text and "\0" not in text:
        return text                 # (nothing to decode: the common case)
    if run_type == RUN_DATA_FOREIGN:
        text = process_text(text, DATA)
        if "\0" in text:
            text = text.replace("\0", "\ufffd")
    else:
        text = process_text(text, run_type)
        if "\0" in text:    # (HTML text: the tree builder drops NUL; CDATA: U+FFFD)
            text = text.replace("\0", "\ufffd" if run_type == CDATA_SECTION else "")
    return text


@cython.final
cdef class Capture:
    """One capture in progress (C methods only; see the module)."""

    def __cinit__(self):
        self.buf = NULL

    def __dealloc__(self):
        if self.buf != NULL:
            free(self.buf)

    cdef int add_bytes(self, const unsigned char* p, Py_ssize_t n) except -1:
        """Hold p[:n], within max_bytes."""
        cdef Py_ssize_t cap
        cdef unsigned char* nb
        if n <= 0 or self.truncated:
            return 0
        if self.held + n > self.max_bytes:
            if self.error_on_limit:
                raise BufferLimitExceeded(
                    "max_bytes", self.max_bytes,
                    f"the {KIND_NAMES[self.kind]} captured of "
                    f"<{self.tag_name.decode('utf-8', 'replace').lower()}>", self.offset)
            n = self.max_bytes - self.held
            self.truncated = True
        if self.length + n > self.buf_cap:
            cap = self.buf_cap * 2 if self.buf_cap else 256
            while cap < self.length + n:
                cap *= 2
            nb = <unsigned char*>realloc(self.buf, cap)
            if nb == NULL:
                raise MemoryError()
            self.buf = nb
            self.buf_cap = cap
        memcpy(self.buf + self.length, p, n)
        self.length += n
        self.held += n
        return 0

    cdef int copy_input(self, Lexer lx, Py_ssize_t upto) except -1:
        """HTML: hold the input from ``pos`` to ``upto`` (in the lexer's window)."""
        if upto > self.pos:
            self.add_bytes(lx.data + (self.pos - lx.base), upto - self.pos)
            self.pos = upto
        return 0

    cdef int add_text(self, Lexer lx, Py_ssize_t start, Py_ssize_t end, int run_type,
                      bint drop_nl, str encoding) except -1:
        """Text: the piece of text content from ``start`` to ``end`` (read as ``run_type``;
        ``drop_nl``: a newline at its start is dropped)."""
        if self.truncated:
            return 0
        if start != self.run_end or run_type != self.run_type:
            self.end_run()
            self.run_type = run_type
            self.run_drop_nl = drop_nl
            self.run_encoding = encoding
        self.add_bytes(lx.data + (start - lx.base), end - start)
        self.run_end = end
        return 0

    cdef int end_run(self) except -1:
        """Text: decode the current run."""
        cdef str text
        if self.run_end < 0:
            return 0
        text = _text_of((<char*>self.buf)[:self.length], self.run_encoding, self.run_type,
                        self.truncated)
        if self.run_drop_nl and text.startswith("\n"):
            text = text[1:]
        if self.parts is None:
            self.parts = []
        self.parts.append(text)
        self.length = 0
        self.run_end = -1
        return 0

    cdef object finish(self, str encoding, bint implicit):
        """The Captured value (the capture is over)."""
        cdef str value
        if self.kind == CAP_TEXT:
            self.end_run()
            value = "" if self.parts is None else "".join(self.parts)
            self.parts = None
        elif self.truncated:
            value = codecs.getincrementaldecoder(encoding)("replace").decode(
                (<char*>self.buf)[:self.length], False)
        else:
            value = (<char*>self.buf)[:self.length].decode(encoding, "replace")
        if self.buf != NULL:
            free(self.buf)
            self.buf = NULL
            self.buf_cap = 0
            self.length = 0
        # (tuple.__new__: the NamedTuple's own __new__ is a Python function)
        return tuple.__new__(Captured, (KIND_NAMES[self.kind], value, self.truncated,
                                        implicit))


cdef Capture make_capture(object request, bytes tag_name, Py_ssize_t offset):
    """A Capture for a request Element.capture recorded: ``(callback, kind, max_bytes,
    error_on_limit)``."""
    cdef Capture c = Capture.__new__(Capture)
    c.callback = (<tuple>request)[0]
    c.kind = (<tuple>request)[1]
    c.max_bytes = (<tuple>request)[2]
    c.error_on_limit = (<tuple>request)[3]
    c.tag_name = tag_name
    c.offset = offset
    c.run_end = -1
    c.run_type = -1
    return c
