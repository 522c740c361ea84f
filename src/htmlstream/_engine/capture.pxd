# Captures of an element's text content or HTML (see capture.pyx); the rewriter's sink drives
# them.
cimport cython

from htmlstream._engine.lexer cimport Lexer


cdef enum:
    CAP_TEXT = 0                        # textContent
    CAP_INNER = 1                       # inner HTML (source bytes)
    CAP_OUTER = 2                       # outer HTML (source bytes)
    RUN_DATA_FOREIGN = 6                # DATA text in SVG or MathML (NUL reads as U+FFFD)


@cython.final
cdef class Capture:
    cdef object callback
    cdef int kind
    cdef Py_ssize_t max_bytes
    cdef bint error_on_limit
    cdef bint truncated
    cdef bytes tag_name                 # (as written) for the limit's error
    cdef Py_ssize_t offset              # the start tag's
    cdef Py_ssize_t templates           # open <template> elements its text must be inside
    cdef unsigned char* buf             # html: the bytes so far; text: the current run's
    cdef Py_ssize_t length
    cdef Py_ssize_t buf_cap
    cdef Py_ssize_t held                # source bytes held so far (what max_bytes bounds)
    cdef Py_ssize_t pos                 # html: the next input offset to copy
    cdef list parts                     # text: the decoded runs before the current one
    cdef Py_ssize_t run_end             # text: where the current run ends (-1: none)
    cdef int run_type
    cdef bint run_drop_nl
    cdef str run_encoding

    cdef int add_bytes(self, const unsigned char* p, Py_ssize_t n) except -1
    cdef int copy_input(self, Lexer lx, Py_ssize_t upto) except -1
    cdef int add_text(self, Lexer lx, Py_ssize_t start, Py_ssize_t end, int run_type,
                      bint drop_nl, str encoding) except -1
    cdef int end_run(self) except -1
    cdef object finish(self, str encoding, bint implicit)


cdef Capture make_capture(object request, bytes tag_name, Py_ssize_t offset)
