# The output of a rewriting stream and its seams (see output.pyx): what the sink writes through.
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint64_t

from htmlstream._engine.lexer cimport Lexer


cdef enum:
    CLOSER_REACH = 9                    # the longest raw-text closer, less one, and a margin


cdef inline bytes input_slice(Lexer lx, Py_ssize_t start, Py_ssize_t end):
    """The input from stream offset ``start`` to ``end`` (in the lexer's window)."""
    return PyBytes_FromStringAndSize(<const char*>lx.data + (start - lx.base), end - start)


@cython.final
cdef class Output:
    cdef Lexer lx                       # the lexer whose input this output follows
    cdef str encoding                   # of the output (and of inserted text)
    cdef bint utf8                      # encoding is UTF-8
    cdef bint may_change                # some handler can change the output
    cdef bint skipping                  # the input is being removed (an element's content)
    cdef bint early                     # take_early: hold back what a seam read as
    cdef int early_ctx                  # early_ctx could rewrite
    cdef bint cdata_written             # the last CDATA text handed over was not removed with
                                        # an element (its section's start is in the output)
    cdef unsigned char* out
    cdef Py_ssize_t out_len
    cdef Py_ssize_t out_cap
    cdef Py_ssize_t out_pos             # input written (or skipped) up to this stream offset
    cdef Py_ssize_t utf8_gap            # a seam (divert) left the output ending with an
                                        # incomplete UTF-8 sequence that begins here: the next
                                        # byte written decides (write), or -1
    # the output ends with input[verb_start_pos:verb_end_pos] written as it was, if out_len
    # is verb_end_out and out_pos is verb_end_pos
    cdef Py_ssize_t verb_start_pos
    cdef Py_ssize_t verb_end_pos
    cdef Py_ssize_t verb_end_out
    # raw text written at a seam, to be checked with what follows it: its text type (-1: no
    # check pending), the output offsets where it begins and where the input after it begins
    # (-1: not yet)
    cdef int guard_ctx
    cdef Py_ssize_t guard_lo
    cdef Py_ssize_t guard_hi
    cdef uint64_t guard_name            # ... in RAWTEXT: the hash of its element's name
    cdef int guard_escape               # ... in script data: its escape state (script_out)
    # in script data, the '<!--' escape state (0 plain, 1 escaped, 2 double-escaped) the input
    # is in after the text handed over so far, and the one the output is in
    # (tracked over the pieces of a script's text, while there are text handlers; script_end:
    # where the last piece ended, -1 after the last of its text node)
    cdef int script_now
    cdef int script_out
    cdef Py_ssize_t script_end
    # output made by flush while no handler can change anything, ahead of out[:out_len]
    cdef bytes ready
    # with handlers that may change it, the output's end still in the chunk read in place:
    # pend[pend_off:pend_off + pend_len] (written by take(); see flush).  Set by the flush at
    # a chunk's end, the lexer's last step: nothing is written between it and take()
    cdef bytes pend
    cdef Py_ssize_t pend_off
    cdef Py_ssize_t pend_len

    cdef int init(self, str encoding, bint may_change) except -1
    cdef int set_encoding(self, str encoding) except -1
    cdef int write(self, const unsigned char* p, Py_ssize_t n) except -1
    cdef int write_bytes(self, bytes b) except -1
    cdef int write_part(self, object part, int ctx) except -1
    cdef int write_all(self, list parts, int ctx) except -1
    cdef int copy_input(self, Py_ssize_t upto) except -1
    cdef int flush(self, Py_ssize_t upto, bytes whole) except -1
    cdef bytes take(self)
    cdef bytes take_early(self, int ctx)
    cdef bytes take_pending(self)
    cdef Py_ssize_t hazard(self, int ctx) noexcept
    cdef bint is_whole(self, Lexer lx, Py_ssize_t m, bytes whole) noexcept
    cdef int divert(self, int ctx) except -1
    cdef int start_guard(self, int ctx) except -1
    cdef int check_guard(self) except -1
    cdef bint may_end_raw_text(self, bytes window, Py_ssize_t name_start) except -1
    cdef int finish_eof_token(self) except -1
    cdef int end_checks(self) except -1
    cdef int script_text(self, Py_ssize_t content_end, bint last) except -1
    cdef int script_escape(self, bint at_end_tag) except -1
    cdef int script_copied(self, int before, int after, Py_ssize_t start,
                           Py_ssize_t end, bint last) except -1


cdef int write_to(object output, const unsigned char* p, Py_ssize_t n) except -1
