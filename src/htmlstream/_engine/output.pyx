# cython: language_level=3
"""The output of a rewriting stream: its buffer, and the seams where it stops following the input.

Input bytes reach the output untouched unless a handler changed the unit they belong to:
``Output`` remembers how far the input has been written (``out_pos``) and copies everything up to
the next changed unit as one slice (``copy_input``), at the latest at the end of each chunk
(``flush``).  The sink writes a changed unit from its recorded mutations instead (``write``,
``write_part``), and skips the content an element removal covers (``skipping``).

A seam is where the output stops following the input: content is inserted, or input is removed.
The input before it was tokenized with the bytes that followed it there, and some endings of text
are read differently when other bytes follow (a '<' that was text because '<' followed, '&not'
before 'in;', a CR before LF, half a UTF-8 character).  At every seam (``divert``) the output
neutralises such an ending: in DATA and RCDATA by writing it in a form that reads the same
whatever follows; in raw text, which has no escapes, by checking the text on both sides of the
seam together for what would end it (``start_guard``/``check_guard``: the change is refused).  In
script data it also follows the '<!--' escape state of the input and of the output
(``script_text``, ``script_copied``).  Nothing of this runs while no handler changes anything.

This module knows the lexer's window and nothing of elements or handlers: the sink
(rewriter.pyx) decides what is written, this decides how it joins what is around it.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memmove

import re

from htmlstream._engine.ascii cimport is_alnum, is_alpha
from htmlstream._engine.constants cimport CDATA_SECTION as T_CDATA
from htmlstream._engine.constants cimport PLAINTEXT as T_PLAINTEXT
from htmlstream._engine.constants cimport RAWTEXT as T_RAWTEXT
from htmlstream._engine.constants cimport RCDATA as T_RCDATA
from htmlstream._engine.constants cimport SCRIPT_DATA as T_SCRIPT
from htmlstream._engine.lexer cimport Lexer
from htmlstream._engine.taghash cimport EMPTY_HASH, hash_bytes
from htmlstream._engine.units cimport encode_content

from htmlstream._engine.units import RAW_TEXT_ELEMENTS as _RAW_TEXT_ELEMENTS
from htmlstream._engine.units import RCDATA_ELEMENTS as _RCDATA_ELEMENTS
from htmlstream.charrefs import decode_charrefs

# What raw text (which has no escapes) must not contain across a seam, by text type: the
# sequences that end it or change how it is read.  (As the insertion check of units.pyx, which
# looks at each piece of inserted text alone; here the text on both sides of a seam counts.)
# Every occurrence is found, overlapping ones too ('<!-->' holds '<!--' and '-->').
_SEAM_CLOSERS = {
    T_SCRIPT: re.compile(rb"(?=(</script[\t\n\f\r />]|<!--))", re.IGNORECASE),
    T_RAWTEXT: re.compile(rb"(?=(</[a-zA-Z]))"),
    T_CDATA: re.compile(rb"(?=(]]>))"),
}


cdef bint _may_become(bytes after, uint64_t element, tuple names) except -1:
    """Whether ``after`` (what follows a ``</``, as far as it is known) may be or become the
    end tag of the element whose name hashes to ``element`` (one of ``names``; not known: yes):
    its name, whole or cut short, then white space, ``/``, ``>`` or nothing yet."""
    cdef bytes name = None, candidate
    for candidate in names:
        if hash_bytes(candidate, len(candidate)) == element:
            name = candidate
    if name is None:
        return True
    seen = after[:len(name) + 1].lower()
    if seen[:len(name)] != name[:len(seen)]:
        return False
    return len(seen) <= len(name) or seen[len(name)] in b"\t\n\f\r />"
# Script data inside a '<!--' escape: '-->', '<script' and '</script' change its state too.
_ESCAPED_SCRIPT_CLOSERS = re.compile(rb"(?=(</?script[\t\n\f\r />]|<!--|-->))",
                                     re.IGNORECASE)
_TYPE_NAMES = ("DATA", "RCDATA", "RAWTEXT", "SCRIPT_DATA", "PLAINTEXT", "CDATA_SECTION")


cdef bint _utf8_prefix(const unsigned char* p, Py_ssize_t n) noexcept:
    """Whether p[0:n] is the beginning of a UTF-8 sequence, not the whole of one (what the
    decoder reads as one U+FFFD if the sequence stops there, and completes if it goes on)."""
    cdef unsigned char c = p[0]
    cdef unsigned char lo = 0x80
    cdef unsigned char hi = 0xBF
    cdef Py_ssize_t need
    if 0xC2 <= c <= 0xDF:
        need = 2
    elif 0xE0 <= c <= 0xEF:
        need = 3
        if c == 0xE0:
            lo = 0xA0
        elif c == 0xED:
            hi = 0x9F
    elif 0xF0 <= c <= 0xF4:
        need = 4
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F
    else:
        return False
    if n >= need:
        return False
    if n >= 2 and not (lo <= p[1] <= hi):
        return False
    return True


cdef Py_ssize_t hazard_in(const unsigned char* o, Py_ssize_t n, int ctx, bint utf8,
                          bint partial) noexcept:
    """How many bytes at the end of ``o[:n]`` more bytes could read differently, for text read
    as ``ctx`` (0: none).  ``partial``: ``o`` is the end of the output, not all of it: -1 if
    the answer depends on the bytes before it."""
    cdef Py_ssize_t i, k, a
    cdef unsigned char c
    if n == 0:
        return -1 if partial else 0
    c = o[n - 1]
    if c == 0x0D:                               # CR: CR LF is one newline
        return 1
    if c >= 0x80 and utf8:                      # an incomplete UTF-8 sequence
        i = n - 1
        k = 0
        while i > 0 and k < 3 and (o[i] & 0xC0) == 0x80:
            i -= 1
            k += 1
        if partial and i == 0 and k < 3 and (o[0] & 0xC0) == 0x80:
            return -1
        return n - i if _utf8_prefix(o + i, k + 1) else 0
    if ctx <= T_RCDATA:
        if c == 0x3C:                           # '<'
            return 1
        if not is_alnum(c) and c != 0x26 and c != 0x23 and c != 0x2F:
            return 0                            # (the usual ends: '>', white space...)
        # one scan back over the alphanumeric end: where its letters begin (a) and where
        # it begins (i)
        i = n
        a = -1
        while i > 0 and n - i <= 1026 and is_alnum(o[i - 1]):
            if a < 0 and not is_alpha(o[i - 1]):
                a = i
            i -= 1
        if partial and i < 2:
            return -1                           # (the scan or its checks go on before o)
        if a < 0:
            a = i
        if n - a <= 40 and a >= 2 and o[a - 1] == 0x2F and o[a - 2] == 0x3C:   # '</name'
            # (a name of at most 40 letters)
            return n - a + 2
        if i > 0 and o[i - 1] == 0x26 and n - i <= 33:          # '&name', '&'
            return n - i + 1
        if i >= 2 and o[i - 1] == 0x23 and o[i - 2] == 0x26:    # '&#digits', '&#x..'
            return n - i + 2
        return 0
    if ctx == T_PLAINTEXT:
        return 0
    # raw text: a closer can start at a '<' (']' in CDATA) among the last bytes
    if partial and n < CLOSER_REACH:
        return -1
    k = n - CLOSER_REACH if n > CLOSER_REACH else 0
    for i in range(k, n):
        if o[i] == (0x5D if ctx == T_CDATA else 0x3C):
            return n - i
    return 0


cdef int write_to(object output, const unsigned char* p, Py_ssize_t n) except -1:
    """A WriteFn (units.pxd) for Output.write."""
    return (<Output>output).write(p, n)


@cython.final
cdef class Output:
    """The output buffer of one stream and its seams (C methods only)."""

    def __cinit__(self):
        self.out = NULL

    def __dealloc__(self):
        if self.out != NULL:
            free(self.out)

    cdef int init(self, str encoding, bint may_change) except -1:
        self.lx = None
        self.may_change = may_change
        self.skipping = False
        self.cdata_written = False
        self.out_len = 0
        self.out_cap = 0
        self.out_pos = 0
        self.utf8_gap = -1
        self.script_end = -1
        self.verb_start_pos = 0
        self.verb_end_pos = -1
        self.verb_end_out = -1
        self.guard_ctx = -1
        self.ready = None
        self.pend = None
        return self.set_encoding(encoding)

    cdef int set_encoding(self, str encoding) except -1:
        self.encoding = encoding
        self.utf8 = encoding == "utf-8"
        return 0

    # ------------------------------------------------------------------ writing

    cdef int write(self, const unsigned char* p, Py_ssize_t n) except -1:
        cdef Py_ssize_t cap
        cdef unsigned char* nb
        if n <= 0:
            return 0
        if self.utf8_gap >= 0:
            # (after a seam: a continuation byte would complete the sequence the input had
            # incomplete; it stays one U+FFFD, as it read there)
            if (p[0] & 0xC0) == 0x80:
                self.out_len = self.utf8_gap
                self.utf8_gap = -1
                self.write(<const unsigned char*>b"\xef\xbf\xbd", 3)
            self.utf8_gap = -1
        if self.out_len + n > self.out_cap:
            cap = self.out_cap * 2 if self.out_cap else 65536
            while cap < self.out_len + n:
                cap *= 2
            nb = <unsigned char*>realloc(self.out, cap)
            if nb == NULL:
                raise MemoryError()
            self.out = nb
            self.out_cap = cap
        memcpy(self.out + self.out_len, p, n)
        self.out_len += n
        return 0

    cdef int write_bytes(self, bytes b) except -1:
        return self.write(<const unsigned char*><const char*>b, len(b))

    cdef int write_part(self, object part, int ctx) except -1:
        """Write inserted content (see units.text_part) where text is read as ``ctx``."""
        cdef int pctx
        cdef bytes b
        if part is None:
            return 0
        if type(part) is bytes:         # html: written as it is, and not checked
            if self.guard_ctx >= 0:
                if self.guard_hi < 0:
                    self.guard_hi = self.out_len
                self.check_guard()
            return self.write_bytes(<bytes>part)
        b = (<tuple>part)[0]
        pctx = (<tuple>part)[2]
        if pctx != ctx and (pctx > T_RCDATA or ctx > T_RCDATA):
            # (raw text as it is: what it must not contain is checked with its neighbours)
            b = encode_content((<tuple>part)[1], False,
                               ctx if ctx <= T_RCDATA else T_PLAINTEXT, self.encoding)
        if ctx == T_RAWTEXT or ctx == T_SCRIPT or ctx == T_CDATA:
            if self.guard_ctx >= 0 and self.guard_hi >= 0:
                self.check_guard()
            if self.guard_ctx < 0:
                self.start_guard(ctx)
        return self.write_bytes(b)

    cdef int write_all(self, list parts, int ctx) except -1:
        if parts is not None:
            for part in parts:
                self.write_part(part, ctx)
        return 0

    cdef int copy_input(self, Py_ssize_t upto) except -1:
        """Write the input from out_pos to upto (skip it while content is being removed)."""
        if upto <= self.out_pos:
            return 0
        if not self.skipping:
            if self.out_len != self.verb_end_out or self.out_pos != self.verb_end_pos:
                self.verb_start_pos = self.out_pos
            if self.guard_ctx >= 0 and self.guard_hi < 0:
                self.guard_hi = self.out_len
            self.write(self.lx.data + (self.out_pos - self.lx.base), upto - self.out_pos)
            self.verb_end_out = self.out_len
            self.verb_end_pos = upto
            if self.guard_ctx >= 0 and self.out_len - self.guard_hi >= CLOSER_REACH:
                self.check_guard()
        self.out_pos = upto
        return 0

    cdef int flush(self, Py_ssize_t upto, bytes whole) except -1:
        """The end of a chunk: the input up to ``upto`` is written (``whole``: the chunk the
        stream feeds in place, or None)."""
        cdef Lexer lx = self.lx
        cdef Py_ssize_t m, k
        cdef bytes b
        if self.out_len == 0 and upto > self.out_pos:
            m = upto - self.out_pos
            if not self.may_change:
                # Nothing can change the output, which is the input: make the bytes take()
                # returns straight from the window (one copy, not two through the output
                # buffer).
                if self.ready is None:
                    if self.is_whole(lx, m, whole):
                        self.ready = whole          # the chunk read in place, all of it: no copy
                    else:
                        self.ready = input_slice(lx, self.out_pos, upto)
                else:       # (a second flush before take(): one bytes object for both)
                    k = len(self.ready)
                    b = PyBytes_FromStringAndSize(NULL, k + m)
                    memcpy(PyBytes_AS_STRING(b), <const char*>self.ready, k)
                    memcpy(PyBytes_AS_STRING(b) + k, lx.data + (self.out_pos - lx.base), m)
                    self.ready = b
                self.out_pos = upto
                return 0
        if (self.may_change and whole is not None and upto > self.out_pos
                and self.pend is None and self.ready is None and not self.skipping
                and self.utf8_gap < 0           # (write decides it: copy_input)
                and self.guard_ctx < 0 and self.out_pos >= lx.base
                and lx.data == <const unsigned char*>PyBytes_AS_STRING(whole)):
            # The chunk read in place: its input up to ``upto`` is written by take(), straight
            # from the chunk into the bytes it returns (one copy, not two through the buffer;
            # none when that is all of the chunk).  The bookkeeping is copy_input's.
            m = upto - self.out_pos
            if self.out_len != self.verb_end_out or self.out_pos != self.verb_end_pos:
                self.verb_start_pos = self.out_pos
            self.verb_end_out = self.out_len + m
            self.verb_end_pos = upto
            self.pend = whole
            self.pend_off = self.out_pos - lx.base
            self.pend_len = m
            self.out_pos = upto
            return 0
        return self.copy_input(upto)

    cdef bint is_whole(self, Lexer lx, Py_ssize_t m, bytes whole) noexcept:
        """Whether the next ``m`` bytes to write are all of ``whole``, read in place."""
        return (whole is not None and self.out_pos == lx.base and m == lx.data_len
                and m == PyBytes_GET_SIZE(whole)
                and lx.data == <const unsigned char*>PyBytes_AS_STRING(whole))

    cdef bytes take(self):
        """The output assembled so far (and forget it).  While the stream runs, an end that
        a seam could still have to rewrite (see divert) is kept for later."""
        cdef Py_ssize_t keep = 0
        cdef Py_ssize_t lo, n
        cdef Lexer lx = self.lx
        cdef bytes ready = self.ready
        if ready is not None:
            self.ready = None
            if self.out_len == 0:
                return ready
            return ready + self.take()
        if self.pend is not None:
            return self.take_pending()
        # (lx.failed is set while the lexer runs: early, it runs)
        if self.may_change and lx is not None and (self.early or not lx.failed) \
                and not lx.closed:
            keep = self.hazard(lx.text_type)
            if self.early:
                # (mid-token: the seam at the unit is read as early_ctx, which may not be
                # the lexer's text type now)
                keep = max(keep, self.hazard(self.early_ctx))
            if self.guard_ctx >= 0:
                lo = self.guard_lo - CLOSER_REACH if self.guard_lo > CLOSER_REACH else 0
                if self.out_len - lo > keep:
                    keep = self.out_len - lo
        n = self.out_len - keep
        out = PyBytes_FromStringAndSize(<const char*>self.out, n)
        if keep:
            memmove(self.out, self.out + n, keep)
        self.out_len = keep
        if self.utf8_gap >= 0:
            self.utf8_gap = self.utf8_gap - n if self.utf8_gap >= n else -1
        self.verb_end_out -= n
        self.guard_lo -= n
        if self.guard_hi >= 0:
            self.guard_hi -= n
        return out

    cdef bytes take_early(self, int ctx):
        """take() in the middle of a chunk, before a unit whose handler waits (an async
        stream): what a seam right there, read as ``ctx``, could still rewrite is kept."""
        self.early = True
        self.early_ctx = ctx
        try:
            return self.take()
        finally:
            self.early = False

    cdef bytes take_pending(self):
        """take() with the end of the output still in the chunk (``pend``, see flush)."""
        cdef bytes src = self.pend
        cdef const unsigned char* p = <const unsigned char*>PyBytes_AS_STRING(src) + self.pend_off
        cdef Py_ssize_t m = self.pend_len
        cdef Py_ssize_t keep = 0
        cdef Py_ssize_t n
        cdef Lexer lx = self.lx
        cdef bytes out
        self.pend = None
        if lx is not None and (self.early or not lx.failed) and not lx.closed:
            keep = -1 if self.early else hazard_in(p, m, lx.text_type, self.utf8, True)
            if keep < 0:
                # (the end's verdict depends on the output before the chunk: as copy_input)
                self.write(p, m)
                return self.take()
        n = self.out_len + m - keep
        if self.out_len == 0 and keep == 0 and self.pend_off == 0 \
                and m == PyBytes_GET_SIZE(src):
            out = src           # all of the chunk, unchanged: no copy
        else:
            out = PyBytes_FromStringAndSize(NULL, n)
            memcpy(PyBytes_AS_STRING(out), self.out, self.out_len)
            memcpy(PyBytes_AS_STRING(out) + self.out_len, p, m - keep)
        self.out_len = 0
        if keep:        # (what a seam could still have to rewrite stays, as take() keeps it)
            self.write(p + m - keep, keep)
        self.verb_end_out -= n
        self.guard_lo -= n
        if self.guard_hi >= 0:
            self.guard_hi -= n
        return out

    # ------------------------------------------------------------------ seams

    cdef Py_ssize_t hazard(self, int ctx) noexcept:
        """How many bytes at the end of the output more bytes could read differently, for text
        read as ``ctx`` (0: none)."""
        return hazard_in(self.out, self.out_len, ctx, self.utf8, False)

    cdef int divert(self, int ctx) except -1:
        """The output is about to go on with something else than the input that followed it
        (inserted content, or input after a removal), where text is read as ``ctx``: make its
        end read the same whatever follows, or (raw text) watch what follows."""
        cdef Lexer lx = self.lx
        cdef Py_ssize_t n, p
        cdef unsigned char c
        cdef bytes tail
        if lx.eof_start >= 0 and self.out_pos == lx.stream_len:
            self.finish_eof_token()
        elif lx.eof_cdata and self.cdata_written and self.out_pos == lx.stream_len:
            # the input ended inside a CDATA section: close it, so that it does not absorb
            # what follows (any ']' at its end stays text: ']]>' after it ends it all the same)
            self.guard_ctx = -1             # (no CDATA text to watch from here)
            self.write(<const unsigned char*>b"]]>", 3)
            self.cdata_written = False
        n = self.hazard(ctx)
        if n:
            p = self.out_len - n
            c = self.out[p]
            if self.out[self.out_len - 1] == 0x0D:
                # CR LF after it: one newline whatever follows.  (Not the CR turned into LF: a
                # CR before it, maybe output already, would pair with that LF: finding
                # [cr-pair] in docs/design/reliability.md.)
                self.write(<const unsigned char*>b"\n", 1)
            elif c >= 0x80:
                # an incomplete UTF-8 sequence: only a continuation byte next would read
                # differently (write decides; ASCII, a lead byte, the end leave it as it is)
                self.utf8_gap = p
            elif ctx <= T_RCDATA:
                tail = PyBytes_FromStringAndSize(<const char*>self.out + p, n)
                if ctx == T_RCDATA and n > 2 and tail[1] == 0x2F and not _may_become(
                        tail[2:], lx.last_start_tag_hash, _RCDATA_ELEMENTS):
                    # ('</b' in a <textarea>: no bytes can make it end the element)
                    tail = None
                else:
                    self.out_len = p
                if tail is None:
                    pass
                elif c == 0x3C:
                    self.write(<const unsigned char*>b"&lt;", 4)
                    self.write(<const unsigned char*><const char*>tail + 1, n - 1)
                else:                               # the reference, as it reads now
                    self.write_bytes(encode_content(decode_charrefs(tail.decode("ascii")),
                                                    False, 0, self.encoding))
            self.verb_end_out = -1
        if ctx == T_RAWTEXT or ctx == T_SCRIPT or ctx == T_CDATA:
            if self.guard_ctx >= 0 and self.guard_hi >= 0:
                self.check_guard()
            if self.guard_ctx < 0:
                self.start_guard(ctx)
        return 0

    cdef int start_guard(self, int ctx) except -1:
        self.guard_ctx = ctx
        self.guard_lo = self.out_len
        self.guard_hi = -1
        self.guard_escape = self.script_out
        self.guard_name = self.lx.last_start_tag_hash if self.lx is not None else EMPTY_HASH
        return 0

    cdef int check_guard(self) except -1:
        """Raw text was inserted (or input removed) at output offset guard_lo, and the input
        after it begins at guard_hi: refuse the change if what ends the raw text now starts
        before guard_hi and ends after guard_lo (it was not in the input)."""
        cdef Py_ssize_t lo = self.guard_lo - CLOSER_REACH if self.guard_lo > CLOSER_REACH else 0
        cdef Py_ssize_t hi = self.guard_hi if self.guard_hi >= 0 else self.out_len
        cdef int ctx = self.guard_ctx
        self.guard_ctx = -1
        window = PyBytes_FromStringAndSize(<const char*>self.out + lo, self.out_len - lo)
        closers = _SEAM_CLOSERS[ctx]
        if ctx == T_SCRIPT and self.guard_escape:
            closers = _ESCAPED_SCRIPT_CLOSERS
        for m in closers.finditer(window):
            if m.start() + lo < hi and m.end(1) + lo > self.guard_lo:
                if ctx == T_RAWTEXT and not self.may_end_raw_text(window, m.start() + 2):
                    continue
                raise ValueError(
                    f"text inserted into {_TYPE_NAMES[ctx]} content makes "
                    f"{m.group(1).decode('latin-1')!r} together with the text next to it, "
                    f"which would end it or change how it is read: the change is refused")
        if ctx == T_SCRIPT and hi > self.guard_lo:
            # Nor may the insertion split such a sequence of the input ('<!-' | '-'): script
            # text comes in pieces cut anywhere, and the input's state would no longer change.
            view = window[:self.guard_lo - lo] + window[hi - lo:]
            for m in _ESCAPED_SCRIPT_CLOSERS.finditer(view):
                if m.start() < self.guard_lo - lo < m.end(1):
                    raise ValueError(
                        f"text inserted into SCRIPT_DATA content splits "
                        f"{m.group(1).decode('latin-1')!r} of the input, which would change how "
                        f"it is read: the change is refused")
        return 0

    cdef bint may_end_raw_text(self, bytes window, Py_ssize_t name_start) except -1:
        """Whether the end tag name at ``name_start`` of ``window`` (after a ``</``) may end
        the raw-text element the text was inserted into (``guard_name``): ``</ul>`` cannot end
        a ``<style>``, and text written back where it was (a handler's carry) may well sit next
        to one."""
        return _may_become(window[name_start:], self.guard_name, _RAW_TEXT_ELEMENTS)

    cdef int finish_eof_token(self) except -1:
        """Content is written after the end of input, which ended inside a token: finish the
        token (a comment or DOCTYPE) or drop it (a tag) so that it does not absorb the content
        and reads as it did at the end of input (Lexer.note_eof)."""
        cdef Lexer lx = self.lx
        if (self.out_len == self.verb_end_out and self.out_pos == self.verb_end_pos
                and self.out_pos == lx.stream_len and self.verb_start_pos <= lx.eof_start):
            if lx.eof_drop >= 0:
                self.out_len -= lx.stream_len - lx.eof_drop
            self.write_bytes(lx.eof_closer)
            self.verb_end_out = -1
        return 0

    cdef int end_checks(self) except -1:
        """The end of the output: nothing follows raw text inserted last."""
        if self.guard_ctx >= 0:
            self.check_guard()
        return 0

    # ------------------------------------------------------------------ script data

    cdef int script_text(self, Py_ssize_t content_end, bint last) except -1:
        """A piece of a script's text is handed over (its content ends at ``content_end``;
        ``last``: the last of its text node): follow the input's escape state over it.  Returns
        the state before it (the one after it is ``script_now``)."""
        cdef int before
        if self.script_end < 0:             # a script's text starts
            self.script_now = 0
            self.script_out = 0
        before = self.script_now
        self.script_now = self.lx.script_state(False)
        self.script_end = -1 if last else content_end
        return before

    cdef int script_escape(self, bint at_end_tag) except -1:
        """Before a script's end tag, or at the end of input in a script: the output's escape
        state there (with text handlers, as tracked over its pieces; else as the input's)."""
        if not self.lx.want_text:
            self.script_out = self.lx.script_state(at_end_tag)
        return 0

    cdef int script_copied(self, int before, int after, Py_ssize_t start,
                           Py_ssize_t end, bint last) except -1:
        """Script text the input read from escape state ``before`` to ``after`` is written as
        it is.  If the output is in another state there (text was removed), the text must not
        contain what could read differently.  ``last``: the text node ends there, at the
        script's end tag (or at the end of input), which must still end it."""
        cdef const unsigned char* p
        cdef Py_ssize_t i
        if self.script_out == before:
            self.script_out = after
        else:
            p = self.lx.data + (start - self.lx.base)
            for i in range(end - start):
                if p[i] == 0x3C or p[i] == 0x2D:        # '<', '-'
                    raise ValueError(
                        "text removed from SCRIPT_DATA content goes into or out of a '<!--' "
                        "escape, so the text after it would be read differently: the change is "
                        "refused")
        if last and self.script_out == 2 and after != 2 and end < self.lx.stream_len:
            raise ValueError(
                "text removed from SCRIPT_DATA content leaves it double-escaped (after '<!--' "
                "and '<script>'), where its end tag would not end it: the change is refused")
        return 0
