# cython: language_level=3
"""The WHATWG HTML tokenizer state machine, over bytes, resumable at any byte.

The lexer finds token boundaries only.  It never decodes: it hands its sink the byte ranges of
each token (tag name, attribute names and values, comment and doctype parts, text), and decoding
(character references, case folding, NUL and newline normalisation, the document's encoding) is
done later, only for what someone reads.  Character references never change where tokens start or
end (the bytes they consume are text or attribute-value bytes in every state), so they need no
states here.

Streaming: every position is an absolute stream offset.  Between two chunks the lexer keeps only
the bytes of the token it is in the middle of (from its ``<``) and a few bytes of text whose
decoding could depend on what follows (a partial character reference, a trailing CR, an incomplete
UTF-8 sequence, a possible ``]]>``).  All other text is handed to the sink at the end of each chunk.

Parse errors are not looked for here.  With a checker attached (``errors``, only when a user
asked for them) the lexer hands it the bytes of every text piece and markup token, in stream
order (``report_segment``); the checker (htmlstream._parse_errors) reads them again for errors.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memchr, memcpy, memmove

from htmlstream._engine.constants cimport BODY_HASH, HTML_HASH
from htmlstream._engine.ascii cimport is_alnum, is_alpha, lower
from htmlstream._engine.portable cimport (PORTABLE_BUILD, ctz64, find_byte, find_lt,
                                          find_text_markup, load_le64)
from htmlstream._engine.taghash cimport EMPTY_HASH, INVALID_HASH, hash_bytes, hash_update

from htmlstream.errors import BufferLimitExceeded


cdef extern from *:
    # (Cython's own macro: __builtin_expect where the compiler has it) the branch is laid out
    # off the straight path, for the tests of paths that are taken only when asked for
    bint unlikely(bint condition) noexcept nogil

DEFAULT_MAX_BUFFER_SIZE = 4 * 1024 * 1024
DEFAULT_MAX_ATTRIBUTES = 4096
#: Whether this engine was built with the portable C fallbacks (HTMLSTREAM_PORTABLE=1).
_PORTABLE_BUILD = bool(PORTABLE_BUILD)

cdef enum State:
    S_DATA
    S_RCDATA
    S_RAWTEXT
    S_SCRIPT_DATA
    S_PLAINTEXT
    S_CDATA
    S_CDATA_BRACKET
    S_CDATA_END
    S_TAG_OPEN
    S_END_TAG_OPEN
    S_TAG_NAME
    S_TEXT_LT                   # '<' in RCDATA / RAWTEXT / script data
    S_TEXT_END_TAG_OPEN         # '</' in RCDATA / RAWTEXT / script data (escaped or not)
    S_TEXT_END_TAG_NAME
    S_SCRIPT_ESCAPE_START
    S_SCRIPT_ESCAPE_START_DASH
    S_SCRIPT_ESCAPED
    S_SCRIPT_ESCAPED_DASH
    S_SCRIPT_ESCAPED_DASH_DASH
    S_SCRIPT_ESCAPED_LT
    S_SCRIPT_DOUBLE_ESCAPE_START
    S_SCRIPT_DOUBLE_ESCAPED
    S_SCRIPT_DOUBLE_ESCAPED_DASH
    S_SCRIPT_DOUBLE_ESCAPED_DASH_DASH
    S_SCRIPT_DOUBLE_ESCAPED_LT
    S_SCRIPT_DOUBLE_ESCAPE_END
    S_BEFORE_ATTR_NAME
    S_ATTR_NAME
    S_AFTER_ATTR_NAME
    S_BEFORE_ATTR_VALUE
    S_ATTR_VALUE_DQ
    S_ATTR_VALUE_SQ
    S_ATTR_VALUE_UNQ
    S_AFTER_ATTR_VALUE_QUOTED
    S_SELF_CLOSING_START_TAG
    S_BOGUS_COMMENT
    S_MARKUP_DECL_OPEN
    S_COMMENT_START
    S_COMMENT_START_DASH
    S_COMMENT
    S_COMMENT_END_DASH
    S_COMMENT_END
    S_COMMENT_END_BANG
    S_DOCTYPE
    S_BEFORE_DOCTYPE_NAME
    S_DOCTYPE_NAME
    S_AFTER_DOCTYPE_NAME
    S_AFTER_DOCTYPE_PUBLIC_KW
    S_BEFORE_DOCTYPE_PUBLIC_ID
    S_DOCTYPE_PUBLIC_ID_DQ
    S_DOCTYPE_PUBLIC_ID_SQ
    S_AFTER_DOCTYPE_PUBLIC_ID
    S_BETWEEN_DOCTYPE_IDS
    S_AFTER_DOCTYPE_SYSTEM_KW
    S_BEFORE_DOCTYPE_SYSTEM_ID
    S_DOCTYPE_SYSTEM_ID_DQ
    S_DOCTYPE_SYSTEM_ID_SQ
    S_AFTER_DOCTYPE_SYSTEM_ID
    S_BOGUS_DOCTYPE


# What Lexer.report_segment hands the parse-error checker (htmlstream._parse_errors): a piece
# of text (its TextType as ``arg``) or a markup token (tag, comment, DOCTYPE, or what the input
# ended inside), and at the end of input what the input ended inside (report_eof).
cdef enum:
    SEG_TEXT = 0
    SEG_MARKUP = 1
    EOF_PLAIN = 0
    EOF_IN_SCRIPT_COMMENT = 1     # script data escaped (after '<!--'), or double-escaped
    EOF_IN_CDATA = 2

# What the lexer was reading when a limit was hit, by state (for error messages).
cdef str _construct_name(int state, bint is_end):
    if state == S_TAG_NAME or S_BEFORE_ATTR_NAME <= state <= S_SELF_CLOSING_START_TAG:
        return "an unterminated end tag" if is_end else "an unterminated start tag"
    if state == S_TEXT_END_TAG_NAME or state == S_TEXT_END_TAG_OPEN:
        return "a possible end tag"
    if S_COMMENT_START <= state <= S_COMMENT_END_BANG or state == S_BOGUS_COMMENT:
        return "an unterminated comment"
    if state == S_MARKUP_DECL_OPEN:
        return "a markup declaration"
    if S_DOCTYPE <= state <= S_BOGUS_DOCTYPE:
        return "an unterminated DOCTYPE"
    if S_CDATA <= state <= S_CDATA_END:
        return "a CDATA section"
    return "text (a character reference or multi-byte character)"


cdef inline bint is_ws(unsigned char c) noexcept nogil:
    # HTML whitespace; CR counts because the input stream preprocessor turns it into LF.
    return c == 0x20 or c == 0x0A or c == 0x09 or c == 0x0C or c == 0x0D

cdef inline bint is_hex(unsigned char c) noexcept nogil:
    return (c >= 0x30 and c <= 0x39) or ((c | 0x20) >= 0x61 and (c | 0x20) <= 0x66)


# 0: no more bytes decide it yet, 1: matches, -1: does not match.
cdef inline int match_ci(const unsigned char* p, Py_ssize_t avail, const char* word,
                         Py_ssize_t n, bint case_sensitive) noexcept nogil:
    cdef Py_ssize_t i
    cdef Py_ssize_t m = n if avail > n else avail
    for i in range(m):
        if case_sensitive:
            if p[i] != <unsigned char>word[i]:
                return -1
        elif lower(p[i]) != <unsigned char>word[i]:
            return -1
    return 1 if avail >= n else 0


# feed_ptr: a chunk after one that ended inside a token is copied after it this many bytes at a
# time (doubling) until the token is finished, then read in place (Lexer.finish_carried).
cdef enum:
    CARRY_STEP = 1024

cdef uint64_t SCRIPT_HASH = hash_bytes(<const unsigned char*>b"script", 6)

# Per byte, in a tag name: its code in the tag-name hash (0-31, as hash_update), NAME_END for a
# byte that ends the name, NAME_OTHER for any other (the hash does not fit).
cdef enum:
    NAME_OTHER = 32
    NAME_END = 33
cdef unsigned char NAME_CODE[256]
for _c in range(256):
    NAME_CODE[_c] = NAME_OTHER
for _c in range(26):
    NAME_CODE[0x61 + _c] = _c + 6
    NAME_CODE[0x41 + _c] = _c + 6
for _c in range(6):
    NAME_CODE[0x31 + _c] = _c
for _c in (0x09, 0x0A, 0x0C, 0x0D, 0x20, 0x2F, 0x3E):
    NAME_CODE[_c] = NAME_END

# Per byte: nonzero if it ends an attribute name, 3 if it also ends an unquoted value (scanner).
cdef unsigned char ATTR_STOP[256]
ATTR_STOP[:] = [0] * 256
for _c in (0x09, 0x0A, 0x0C, 0x0D, 0x20, 0x3E):
    ATTR_STOP[_c] = 3
for _c in (0x2F, 0x3D):
    ATTR_STOP[_c] = 1


cdef uint64_t SPACES8 = 0x2020202020202020ULL


cdef inline Py_ssize_t skip_unquoted(const unsigned char* d, Py_ssize_t p,
                                     Py_ssize_t n) noexcept nogil:
    """The index of the first byte from ``p`` that ends an unquoted attribute value (white space
    or ``>``, ATTR_STOP 3), or ``n``.  Eight bytes at a time: in a word (first byte lowest, on
    any byte order), the lowest byte flagged as below 0x21 or ``>`` is the first such byte; it
    ends the value unless it is another control byte (then the scan goes on after it)."""
    cdef uint64_t w, x, m
    while p + 8 <= n:
        w = load_le64(d + p)
        x = w ^ <uint64_t>0x3E3E3E3E3E3E3E3EULL
        m = ((w - <uint64_t>0x2121212121212121ULL) & ~w & <uint64_t>0x8080808080808080ULL) \
            | ((x - <uint64_t>0x0101010101010101ULL) & ~x & <uint64_t>0x8080808080808080ULL)
        if m:
            p += ctz64(m) >> 3
            if ATTR_STOP[d[p]] == 3:
                return p
            p += 1
        else:
            p += 8
    while p < n and ATTR_STOP[d[p]] != 3:
        p += 1
    return p


cdef class AttributePolicy:
    """Tag names worked out for :meth:`Lexer.set_attribute_policy`: their hashes (packed as
    uint64_t) and a one-word filter of them, the lower-cased names the hash cannot hold, and
    whether every such name is meant.  A rule set makes one and hands it to every stream's
    lexer (:func:`attribute_policy`)."""


def attribute_policy(names):
    """Work ``names`` out once for :meth:`Lexer.set_attribute_policy` (tag names as str or
    bytes, or tag-name hashes as int)."""
    cdef AttributePolicy policy = AttributePolicy.__new__(AttributePolicy)
    cdef list hs = []
    cdef list long_names = []
    cdef bint unhashable_all = False
    cdef uint64_t h, filt = 0
    cdef bytes packed
    cdef uint64_t* arr
    for name in names:
        if isinstance(name, int):
            h = name
        elif isinstance(name, str) and not name.isascii():
            h = INVALID_HASH
        else:
            b = name.encode("ascii") if isinstance(name, str) else bytes(name)
            h = hash_bytes(b, len(b))
            if h == INVALID_HASH:
                if b.lower() not in long_names:
                    long_names.append(b.lower())
                continue
        if h == INVALID_HASH:
            unhashable_all = True
        elif h not in hs:
            hs.append(h)
    packed = PyBytes_FromStringAndSize(NULL, len(hs) * sizeof(uint64_t))
    arr = <uint64_t*>PyBytes_AS_STRING(packed)
    for i, h in enumerate(hs):
        arr[i] = h
        filt |= (<uint64_t>1) << (h & 63)
    policy.packed = packed
    policy.filter = filt
    policy.long_names = long_names
    policy.unhashable_all = unhashable_all
    return policy


cdef inline bint wants_attrs(Lexer lx, uint64_t h) noexcept:
    """Lexer.needs_attrs, its usual answers without a call."""
    if lx.attrs_all:
        return True
    if h != INVALID_HASH and not ((lx.attr_filter >> (h & 63)) & 1):
        return False
    return lx.needs_attrs(h)


cdef class TokenSink:
    """Receives tokens from the lexer (subclass in Cython; the default does nothing)."""

    cdef int on_text(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                     Py_ssize_t content_start, Py_ssize_t content_end, int text_type,
                     bint last) except -1:
        return 0

    cdef int on_tag(self, Lexer lx, TagRec* tag) except -1:
        return 0

    cdef int on_comment(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                        Py_ssize_t content_start, Py_ssize_t content_end) except -1:
        return 0

    cdef int on_doctype(self, Lexer lx, DoctypeRec* doctype) except -1:
        return 0

    cdef int on_unparsed(self, Lexer lx, Py_ssize_t start, Py_ssize_t end) except -1:
        return 0

    cdef int on_flush(self, Lexer lx, Py_ssize_t upto) except -1:
        return 0


cdef class Feedback:
    """Tree-builder feedback hook (see treebuilder.pyx); the default changes nothing."""

    cdef int on_tag(self, Lexer lx, TagRec* tag) except -1:
        return 0

    cdef int on_text(self, Lexer lx, Py_ssize_t content_start, Py_ssize_t content_end,
                     int text_type) except -1:
        return 0

    cdef int on_doctype(self, Lexer lx, DoctypeRec* doctype) except -1:
        return 0

    cdef int on_eof(self, Lexer lx) except -1:
        return 0


#: A new lexer's long_names (shared: a policy's list replaces it, nothing changes it in place).
cdef list _NO_LONG_NAMES = []


cdef inline unsigned char _end_tag_first(uint64_t h, Py_ssize_t n) noexcept nogil:
    """The ASCII-lower-case first letter of the last start tag (hash ``h``, ``n`` bytes): the
    only one that can follow '</' in an end tag that ends RCDATA, RAWTEXT or script data; 0
    when the hash cannot tell (then every '</' is looked at)."""
    cdef uint64_t code
    if h == EMPTY_HASH or h == INVALID_HASH or n < 1 or n > 12:
        return 0
    code = h >> (5 * (n - 1))
    return <unsigned char>(code - 6 + 0x61) if 6 <= code < 32 else 0

cdef inline bint gate_leaves_out(Lexer lx) noexcept:
    """The tag gate (lexer.pxd): whether the sink can do without the current tag, and then
    what the sink would do for it (note it, and whether text is read).  The sink keeps the
    gate open only while nothing is mirrored per element, so a tag that changes the stack
    only above the elements with work left (``gate_valid``) and is not matched needs nothing:
    an end tag (but </body> and </html>, where work is done when elements have some), or a
    start tag the filter lets by; not beyond the feedback's recorded stack (the sink follows
    those elements itself)."""
    cdef Feedback fb = lx.feedback
    cdef uint64_t h = lx.tag.name_hash
    if fb.overflow != 0 or fb.changed_from < lx.gate_valid:
        return False
    if lx.tag.is_end:
        if lx.gate_valid and (h == BODY_HASH or h == HTML_HASH):
            return False
    elif h == INVALID_HASH or lx.gate_names & ((<uint64_t>1) << (h & 63)) \
            or (lx.gate_attrs and lx.tag.n_attrs):
        return False
    lx.gate_hit = True
    lx.gate_depth = fb.depth
    lx.want_text = lx.gate_valid > 0 and (fb.wants_text or lx.gate_keep_text)
    return True



cdef class Lexer:
    """The tokenizer state machine.

    ``Lexer(sink=None, feedback=None, *, initial_text_type=DATA, last_start_tag=None,
    max_buffer_size=4 MiB, hold_utf8=True)``.  Feed with :meth:`feed_bytes`, finish with
    :meth:`close`.  With no sink it only scans (the passthrough speed of the engine).
    """

    def __cinit__(self):
        self.buf = NULL
        self.attrs = NULL

    def __init__(self, TokenSink sink=None, Feedback feedback=None, *,
                 int initial_text_type=DATA, last_start_tag=None,
                 Py_ssize_t max_buffer_size=DEFAULT_MAX_BUFFER_SIZE, bint hold_utf8=True,
                 Py_ssize_t max_attributes=DEFAULT_MAX_ATTRIBUTES):
        self.init(sink, feedback, max_buffer_size, hold_utf8, max_attributes)
        if last_start_tag is not None:
            name = last_start_tag.encode("ascii") if isinstance(last_start_tag, str) \
                else bytes(last_start_tag)
            self.set_last_start_tag(name)
        self.switch_text_state(initial_text_type)

    cdef int init(self, TokenSink sink, Feedback feedback, Py_ssize_t max_buffer_size,
                  bint hold_utf8, Py_ssize_t max_attributes) except -1:
        """What ``__init__`` does, callable from C on ``Lexer.__new__(Lexer)`` (a rewriter opens
        a lexer per stream: no keyword arguments to parse): the state of a new lexer, reading
        data."""
        if max_buffer_size < 16:
            raise ValueError("max_buffer_size must be at least 16 bytes")
        if max_attributes < 1:
            raise ValueError("max_attributes must be at least 1")
        self.max_attributes = max_attributes
        self.sink = sink
        self.errors = None
        self.feedback = feedback
        self.max_buffer_size = max_buffer_size
        self.hold_utf8 = hold_utf8
        self.want_text = True
        self.sink_tags = True
        self.tag_gate = False
        self.gate_hit = False
        self.cdata_allowed = False
        if self.attrs == NULL:      # (__init__ may run again on a used lexer: keep its array)
            self.attrs_cap = 16
            self.attrs = <AttrRec*>malloc(self.attrs_cap * sizeof(AttrRec))
            if self.attrs == NULL:
                raise MemoryError()
        self.tag.attrs = self.attrs
        self.pos = 0
        self.text_start = 0
        self.token_start = -1
        self.stream_len = 0
        self.eof_start = -1
        self.eof_drop = -1
        self.eof_cdata = False
        self.last_start_tag_hash = EMPTY_HASH
        self.last_start_tag_len = 0
        self.last_start_tag_name = None
        self.last_name_pending = -1
        self.lazy_attrs = False
        self.attrs_all = True
        self.attribute_policy = None
        self.attr_filter = 0
        self.attr_hashes = NULL
        self.attr_hashes_len = 0
        self.long_names = _NO_LONG_NAMES
        self.unhashable_all = False
        self.switch_text_state(DATA)
        return 0

    def __dealloc__(self):
        if self.buf != NULL:
            free(self.buf)
        if self.attrs != NULL:
            free(self.attrs)

    # ------------------------------------------------------------------ public surface

    @property
    def offset(self):
        """Number of input bytes fed so far."""
        return self.stream_len

    @property
    def buffered(self):
        """Number of input bytes carried over to the next chunk."""
        return self.buf_len

    cpdef int feed_bytes(self, chunk) except -1:
        """Tokenize the next chunk of input (bytes or any object with a contiguous buffer)."""
        cdef Py_buffer view
        if type(chunk) is bytes:    # (no buffer request: the bytes are read in place)
            return self.feed_ptr(<const unsigned char*>PyBytes_AS_STRING(chunk),
                                 PyBytes_GET_SIZE(chunk))
        PyObject_GetBuffer(chunk, &view, PyBUF_SIMPLE)
        try:
            return self.feed_ptr(<const unsigned char*>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    cdef int feed_ptr(self, const unsigned char* chunk, Py_ssize_t n) except -1:
        """Tokenize the ``n`` bytes at ``chunk`` (valid during the call)."""
        if self.closed:
            raise ValueError("the lexer is closed")
        if self.failed:
            raise ValueError("the lexer has failed on an earlier error")
        if n == 0:
            return 0
        self.failed = True      # until this call returns normally
        if self.buf_len == 0:
            # Nothing carried over: read the caller's bytes in place.
            self.data = chunk
            self.data_len = n
            self.base = self.stream_len
            self.stream_len += n
        elif n <= 2 * CARRY_STEP:
            self.append(chunk, n)
            self.stream_len += n
        else:
            self.finish_carried(chunk, n)
        self.run(False)
        self.carry_over()
        if self.errors is not None:
            self.errors.flush()     # (the errors this chunk completed)
        self.failed = False
        return 0

    cdef int append(self, const unsigned char* chunk, Py_ssize_t n) except -1:
        """Read the carried-over bytes and then ``n`` bytes at ``chunk`` as one window."""
        self.reserve(self.buf_len + n)
        memcpy(self.buf + self.buf_len, chunk, n)
        self.buf_len += n
        self.data = self.buf
        self.data_len = self.buf_len
        return 0

    cdef int finish_carried(self, const unsigned char* chunk, Py_ssize_t n) except -1:
        """Read the token carried over from the last chunk on a copy of as little of ``chunk``
        as it needs (CARRY_STEP bytes, doubled while it is unfinished); once nothing pending
        starts before ``chunk``, move the window to ``chunk`` itself, where the rest is read
        (else, all of it copied, the window is the whole).  The shorter windows are not chunk
        ends: no text is handed over at their ends."""
        cdef Py_ssize_t chunk_base = self.stream_len
        cdef Py_ssize_t taken = 0, step = CARRY_STEP, m
        self.stream_len += n
        while True:
            m = n - taken if n - taken < step else step
            self.append(chunk + taken, m)
            taken += m
            if taken == n:
                return 0
            try:
                self.run(False)
            except BaseException:
                # (a limit error keeps the window readable for the caller: all of it)
                self.append(chunk + taken, n - taken)
                raise
            if self.text_start >= chunk_base:
                break
            step *= 2
        # Everything before text_start has been handed over (any pending token starts after
        # it): let the sink take it, keep a name the window will no longer hold, move.
        if self.last_name_pending >= 0 and self.last_name_pending < chunk_base:
            self.keep_last_name()
        if self.sink is not None:
            self.sink.on_flush(self, self.text_start)
        self.buf_len = 0
        self.data = chunk
        self.data_len = n
        self.base = chunk_base
        return 0

    def close(self):
        """Signal the end of input: finish (or give up on) the pending token."""
        self.end_input()

    cdef int end_input(self) except -1:
        """``close()``, for C callers (a stream's close: no method look-up)."""
        if self.closed:
            raise ValueError("the lexer is already closed")
        if self.failed:
            raise ValueError("the lexer has failed on an earlier error")
        self.failed = True
        if self.buf_len:
            self.data = self.buf
            self.data_len = self.buf_len
        else:
            self.data = NULL
            self.data_len = 0
            self.base = self.stream_len
        self.run(True)
        self.note_eof()
        if self.errors is None:
            self.finish_eof()
        else:
            self.report_eof()
        if S_CDATA <= self.state <= S_CDATA_END:
            # Content written after the end is not the section's text: the sink closes the
            # section first (Output.divert), and it reads as foreign content from there.
            self.eof_cdata = True
            self.text_type = DATA
        if self.feedback is not None:
            self.feedback.on_eof(self)
        if self.sink is not None:
            self.sink.on_flush(self, self.stream_len)
        self.buf_len = 0
        self.closed = True
        self.failed = False
        return 0

    cdef int fail_limit(self, str name, Py_ssize_t limit, str construct,
                        Py_ssize_t offset) except -1:
        """Raise BufferLimitExceeded, keeping the current window readable (``unconsumed``) so
        that a caller can pass the rest of the input through instead of losing it."""
        if self.data != <const unsigned char*>self.buf:
            self.reserve(self.data_len)
            memcpy(self.buf, self.data, self.data_len)
            self.data = self.buf
        self.buf_len = self.data_len
        if self.errors is not None:
            self.errors.flush()     # (the errors found before the limit)
        raise BufferLimitExceeded(name, limit, construct, offset)

    def unconsumed(self, Py_ssize_t offset):
        """The input from stream offset ``offset`` that is still held (after a limit error: all
        that was fed from there on)."""
        if offset < self.base:
            raise ValueError(f"bytes before offset {self.base} are no longer held")
        if offset >= self.base + self.data_len:
            return b""
        return PyBytes_FromStringAndSize(<const char*>self.data + (offset - self.base),
                                         self.base + self.data_len - offset)

    def set_attribute_policy(self, bint lazy, bint all_start_tags=True, names=()):
        """Choose which tags have their attributes recorded (the two speeds of the engine).

        With ``lazy`` false (the default) every tag is lexed in full.  With ``lazy`` true the
        attributes of end tags, and of start tags that are not named in ``names``, are only
        scanned past: such a tag is handed over with ``n_attrs == 0`` and ``attrs_skipped``
        set, and its boundaries, name and self-closing flag are exactly those the full lexer
        finds.  ``names``: tag names (str or bytes, compared ASCII case-insensitively; a
        non-ASCII str stands for every name the tag-name hash cannot hold) or tag-name hashes
        (int; the invalid hash, ``2**64 - 1``, stands for every name the hash cannot hold).
        ``names`` may also be an :class:`AttributePolicy` (:func:`attribute_policy`), worked out
        once for many lexers.  ``all_start_tags`` keeps every start tag in full.  May be changed
        between chunks (it applies from the next tag on).
        """
        self.use_attribute_policy(lazy, all_start_tags,
                                  names if type(names) is AttributePolicy
                                  else attribute_policy(names))

    cdef int use_attribute_policy(self, bint lazy, bint all_start_tags,
                                  AttributePolicy policy) except -1:
        """``set_attribute_policy`` with the names worked out: the lexer reads the policy's
        hashes in place (it keeps a reference), so that opening a stream copies nothing."""
        self.attribute_policy = policy
        self.attr_filter = policy.filter
        self.long_names = policy.long_names
        self.unhashable_all = policy.unhashable_all
        self.attr_hashes = <const uint64_t*>PyBytes_AS_STRING(policy.packed)
        self.attr_hashes_len = PyBytes_GET_SIZE(policy.packed) // sizeof(uint64_t)
        self.attrs_all = all_start_tags
        self.lazy_attrs = lazy
        return 0

    def set_last_start_tag_name(self, name):
        """Set the "last start tag" used by the appropriate-end-tag test (bytes)."""
        self.set_last_start_tag(bytes(name))

    def set_text_type(self, int text_type):
        """Switch the lexer into the state that reads the given text type."""
        self.switch_text_state(text_type)

    # ------------------------------------------------------------------ helpers

    cdef int set_last_start_tag(self, bytes name) except -1:
        cdef const unsigned char* p = name
        self.last_start_tag_hash = hash_bytes(p, len(name))
        self.last_start_tag_len = len(name)
        self.last_start_tag_name = name.lower() if self.last_start_tag_hash == INVALID_HASH else None
        self.last_name_pending = -1
        return 0

    cdef int keep_last_name(self) except -1:
        """Copy the last start tag's name out of the window if it is still only there."""
        if self.last_name_pending >= 0:
            self.last_start_tag_name = PyBytes_FromStringAndSize(
                <const char*>self.data + (self.last_name_pending - self.base),
                self.last_start_tag_len).lower()
            self.last_name_pending = -1
        return 0

    cdef int switch_text_state(self, int text_type) except -1:
        if self.last_name_pending >= 0:
            self.keep_last_name()
        if text_type == DATA:
            self.state = S_DATA
        elif text_type == RCDATA:
            self.state = S_RCDATA
        elif text_type == RAWTEXT:
            self.state = S_RAWTEXT
        elif text_type == SCRIPT_DATA:
            self.state = S_SCRIPT_DATA
        elif text_type == PLAINTEXT:
            self.state = S_PLAINTEXT
        elif text_type == CDATA_SECTION:
            self.state = S_CDATA
            self.cdata_content_start = self.pos
        else:
            raise ValueError(f"unknown text type {text_type}")
        self.text_type = text_type
        return 0

    cdef int reserve(self, Py_ssize_t size) except -1:
        cdef Py_ssize_t cap
        cdef unsigned char* nb
        if size <= self.buf_cap:
            return 0
        cap = self.buf_cap * 2 if self.buf_cap else 4096
        while cap < size:
            cap *= 2
        nb = <unsigned char*>realloc(self.buf, cap)
        if nb == NULL:
            raise MemoryError()
        self.buf = nb
        self.buf_cap = cap
        return 0

    cdef int add_attr(self, Py_ssize_t name_start) except -1:
        cdef AttrRec* na
        cdef Py_ssize_t i = self.tag.n_attrs
        if i == self.max_attributes:
            self.fail_limit("max_attributes", self.max_attributes,
                            "a tag with too many attributes", self.token_start)
        if i == self.attrs_cap:
            na = <AttrRec*>realloc(self.attrs, 2 * self.attrs_cap * sizeof(AttrRec))
            if na == NULL:
                raise MemoryError()
            self.attrs = na
            self.attrs_cap *= 2
            self.tag.attrs = na
        self.attrs[i].name_start = name_start
        self.attrs[i].name_end = name_start
        self.attrs[i].value_start = -1
        self.attrs[i].value_end = -1
        self.attrs[i].end = name_start
        self.tag.n_attrs = i + 1
        return 0

    cdef bint needs_attrs(self, uint64_t h) noexcept:
        """Whether the start tag whose name hashes to ``h`` must have its attributes recorded."""
        cdef Py_ssize_t i, k, m
        cdef const unsigned char* p
        cdef const unsigned char* q
        if self.attrs_all:
            return True
        if h == INVALID_HASH:
            # a name the hash cannot hold: compare it with the listed ones
            if self.unhashable_all:
                return True
            p = self.data + (self.tag.name_start - self.base)
            m = self.tag.name_end - self.tag.name_start
            for name in self.long_names:
                if len(<bytes>name) != m:
                    continue
                q = <const unsigned char*><const char*><bytes>name
                for k in range(m):
                    if lower(p[k]) != q[k]:
                        break
                else:
                    return True
            return False
        if not ((self.attr_filter >> (h & 63)) & 1):
            return False
        for i in range(self.attr_hashes_len):
            if self.attr_hashes[i] == h:
                return True
        return False

    cdef Py_ssize_t skip_attrs(self, Py_ssize_t p) except -1:
        """The tag scanner: from window index ``p``, in one of the attribute states, follow the
        attribute syntax without recording anything, up to the tag's ``>`` (the tag is emitted
        and the index after it returned) or the end of the window (the state is kept).  The
        transitions are those of the attribute states of :meth:`run`."""
        cdef const unsigned char* d = self.data
        cdef Py_ssize_t n = self.data_len
        cdef int st = self.state
        cdef unsigned char c
        cdef const unsigned char* hit
        while p < n:
            c = d[p]
            if st == S_BEFORE_ATTR_NAME:
                # The usual run, straight through: white space, name, '=', a quoted or unquoted
                # value, up to the next attribute; anything else goes to its state below.
                if is_ws(c):
                    p += 1
                    # (attributes one per line are indented: spaces eight at a time)
                    while p + 8 <= n and load_le64(d + p) == SPACES8:
                        p += 8
                    while p < n and is_ws(d[p]):
                        p += 1
                    if p >= n:
                        break
                    c = d[p]
                if c == b'>':
                    self.emit_tag(self.base + p + 1)
                    return p + 1
                if c == b'/':
                    st = S_SELF_CLOSING_START_TAG
                    p += 1
                    continue
                # an attribute starts ('=' first is part of its name)
                self.skipped_attrs += 1
                if self.skipped_attrs > self.max_attributes:
                    self.state = st
                    self.fail_limit("max_attributes", self.max_attributes,
                                    "a tag with too many attributes", self.token_start)
                p += 1
                while p < n and ATTR_STOP[d[p]] == 0:
                    p += 1
                if p >= n:
                    st = S_ATTR_NAME
                    break
                c = d[p]
                if c != b'=':
                    st = S_ATTR_NAME        # ('>', '/' or white space: handled there)
                    continue
                p += 1
                if p >= n:
                    st = S_BEFORE_ATTR_VALUE
                    break
                c = d[p]
                if c == b'"' or c == b"'":
                    hit = find_byte(d + p + 1, d + n, c)
                    if hit == NULL:
                        st = S_ATTR_VALUE_DQ if c == b'"' else S_ATTR_VALUE_SQ
                        p = n
                        break
                    p = hit - d + 1
                    if p >= n:
                        st = S_AFTER_ATTR_VALUE_QUOTED
                        break
                    c = d[p]
                    if is_ws(c):
                        p += 1
                    elif c == b'>':
                        self.emit_tag(self.base + p + 1)
                        return p + 1
                    elif c == b'/':
                        st = S_SELF_CLOSING_START_TAG
                        p += 1
                    # (else an attribute follows at once)
                    continue
                if c == b'>' or is_ws(c):
                    st = S_BEFORE_ATTR_VALUE
                    continue
                p = skip_unquoted(d, p, n)
                if p >= n:
                    st = S_ATTR_VALUE_UNQ
                    break
                if d[p] == b'>':
                    self.emit_tag(self.base + p + 1)
                    return p + 1
                p += 1
            elif st == S_AFTER_ATTR_NAME:
                if is_ws(c):
                    p += 1
                    continue
                if c == b'>':
                    self.emit_tag(self.base + p + 1)
                    return p + 1
                if c == b'/':
                    st = S_SELF_CLOSING_START_TAG
                    p += 1
                elif c == b'=':
                    st = S_BEFORE_ATTR_VALUE
                    p += 1
                else:
                    st = S_BEFORE_ATTR_NAME     # another attribute starts here
            elif st == S_ATTR_NAME:
                while p < n and ATTR_STOP[d[p]] == 0:
                    p += 1
                if p >= n:
                    break
                c = d[p]
                if c == b'>':
                    self.emit_tag(self.base + p + 1)
                    return p + 1
                st = S_SELF_CLOSING_START_TAG if c == b'/' else \
                    S_BEFORE_ATTR_VALUE if c == b'=' else S_AFTER_ATTR_NAME
                p += 1
            elif st == S_BEFORE_ATTR_VALUE:
                if is_ws(c):
                    p += 1
                elif c == b'"':
                    st = S_ATTR_VALUE_DQ
                    p += 1
                elif c == b"'":
                    st = S_ATTR_VALUE_SQ
                    p += 1
                elif c == b'>':
                    self.emit_tag(self.base + p + 1)
                    return p + 1
                else:
                    st = S_ATTR_VALUE_UNQ
            elif st == S_ATTR_VALUE_DQ or st == S_ATTR_VALUE_SQ:
                hit = find_byte(d + p, d + n, 0x22 if st == S_ATTR_VALUE_DQ else 0x27)
                if hit == NULL:
                    p = n
                    break
                p = hit - d + 1
                st = S_AFTER_ATTR_VALUE_QUOTED
            elif st == S_ATTR_VALUE_UNQ:
                p = skip_unquoted(d, p, n)
                if p >= n:
                    break
                if d[p] == b'>':
                    self.emit_tag(self.base + p + 1)
                    return p + 1
                st = S_BEFORE_ATTR_NAME
                p += 1
            elif st == S_AFTER_ATTR_VALUE_QUOTED:
                if c == b'>':
                    self.emit_tag(self.base + p + 1)
                    return p + 1
                if is_ws(c):
                    st = S_BEFORE_ATTR_NAME
                    p += 1
                elif c == b'/':
                    st = S_SELF_CLOSING_START_TAG
                    p += 1
                else:
                    st = S_BEFORE_ATTR_NAME
            else:   # S_SELF_CLOSING_START_TAG
                if c == b'>':
                    self.tag.self_closing = True
                    self.emit_tag(self.base + p + 1)
                    return p + 1
                st = S_BEFORE_ATTR_NAME
        self.state = st
        return p

    cdef Py_ssize_t lex_attrs(self, Py_ssize_t p) except -1:
        """The recording twin of :meth:`skip_attrs`: from window index ``p`` in the
        before-attribute-name state, record the attributes of the usual shape (white space, a
        name, ``=`` and a quoted or unquoted value) in one tight loop, up to the tag's ``>``
        (the tag is emitted) or the first thing of another shape or the end of the window,
        where it leaves the state :meth:`run`'s attribute states go on from, with the records
        they would have made so far.  (Each attribute through run's states costs a state
        dispatch per part: most of the price of recording attributes.)"""
        cdef const unsigned char* d = self.data
        cdef Py_ssize_t n = self.data_len
        cdef Py_ssize_t base = self.base
        cdef Py_ssize_t q
        cdef unsigned char c
        cdef const unsigned char* hit
        cdef AttrRec* a
        while True:
            while p < n and is_ws(d[p]):
                p += 1
                while p + 8 <= n and load_le64(d + p) == SPACES8:
                    p += 8
            if p >= n:
                self.state = S_BEFORE_ATTR_NAME
                return p
            c = d[p]
            if c == b'/' or c == b'>':
                self.state = S_AFTER_ATTR_NAME
                return p
            self.add_attr(base + p)
            a = &self.attrs[self.tag.n_attrs - 1]
            q = p + 1           # (its first character is part of the name, '=' too)
            while q < n and ATTR_STOP[d[q]] == 0:
                q += 1
            if q >= n:
                self.state = S_ATTR_NAME
                return q
            a.name_end = base + q
            a.end = base + q
            if d[q] != b'=':
                self.state = S_AFTER_ATTR_NAME
                return q
            q += 1
            if q >= n:
                self.state = S_BEFORE_ATTR_VALUE
                return q
            c = d[q]
            if c == b'"' or c == b"'":
                a.value_start = base + q + 1
                hit = find_byte(d + q + 1, d + n, c)
                if hit == NULL:
                    self.state = S_ATTR_VALUE_DQ if c == b'"' else S_ATTR_VALUE_SQ
                    return n
                q = hit - d
                a.value_end = base + q
                a.end = base + q + 1
                q += 1
                if q >= n:
                    self.state = S_AFTER_ATTR_VALUE_QUOTED
                    return q
                c = d[q]
                if is_ws(c):
                    p = q + 1
                elif c == b'>':
                    self.emit_tag(base + q + 1)
                    return q + 1
                elif c == b'/':
                    self.state = S_SELF_CLOSING_START_TAG
                    return q + 1
                else:
                    p = q       # (another attribute starts at once)
                continue
            if c == b'>' or is_ws(c):
                self.state = S_BEFORE_ATTR_VALUE
                return q
            a.value_start = base + q
            q = skip_unquoted(d, q, n)
            if q >= n:
                self.state = S_ATTR_VALUE_UNQ
                return q
            a.value_end = base + q
            a.end = base + q
            if d[q] == b'>':
                self.emit_tag(base + q + 1)
                return q + 1
            p = q + 1

    cdef void begin_tag(self, Py_ssize_t lt, bint is_end) noexcept:
        self.tag.attrs_skipped = False
        self.skipped_attrs = 0
        self.tag.is_end = is_end
        self.tag.start = lt
        self.tag.name_start = lt + (2 if is_end else 1)
        self.tag.name_hash = EMPTY_HASH
        self.tag.self_closing = False
        self.tag.n_attrs = 0

    cdef int flush_text(self, Py_ssize_t upto, bint last) except -1:
        """Hand the sink the pending text before ``upto`` (exclusive).

        ``last``: the text node ends at ``upto`` (a token or the end of input follows).  Every text
        node ends with exactly one piece marked last, which is empty when the node's text was
        already handed over at earlier chunk ends.
        """
        cdef Py_ssize_t cstart
        if upto <= self.text_start:
            if last and self.text_node_open:
                self.text_node_open = False
                if self.want_text and self.sink is not None:
                    self.sink.on_text(self, upto, upto, upto, upto, self.text_type, True)
            return 0
        if unlikely(self.errors is not None):
            self.report_segment(SEG_TEXT, self.text_start, upto, self.text_type)
        cstart = self.text_start
        if self.text_type == CDATA_SECTION and self.cdata_content_start > cstart:
            cstart = self.cdata_content_start
            if cstart > upto:
                cstart = upto
        if self.feedback is not None and self.feedback.wants_text:
            self.feedback.on_text(self, cstart, upto, self.text_type)
        if self.want_text and self.sink is not None:
            self.sink.on_text(self, self.text_start, upto, cstart, upto, self.text_type, last)
        self.text_node_open = not last
        self.text_start = upto
        return 0

    cdef int emit_tag(self, Py_ssize_t end) except -1:
        """The tag that began at ``token_start`` ends before ``end``."""
        if self.want_text or (self.token_start > self.text_start and self.feedback is not None
                              and self.feedback.wants_text):
            self.flush_text(self.token_start, True)
        else:
            # (what flush_text comes to when no one is told of the text)
            self.text_node_open = False
        if unlikely(self.errors is not None):
            # (the text before the tag, unless flush_text has reported it, then the tag)
            if self.token_start > self.text_start:
                self.report_segment(SEG_TEXT, self.text_start, self.token_start, self.text_type)
            self.report_segment(SEG_MARKUP, self.token_start, end, 0)
        self.tag.end = end
        self.token_start = -1
        self.text_start = end
        self.pos = end
        self.state = S_DATA
        self.text_type = DATA
        if not self.tag.is_end:
            self.last_start_tag_hash = self.tag.name_hash
            self.last_start_tag_len = self.tag.name_end - self.tag.name_start
            # A name the hash cannot hold is copied only if it may be needed: when a text state
            # that looks for an appropriate end tag is entered, or the window moves on.
            self.last_name_pending = self.tag.name_start \
                if self.tag.name_hash == INVALID_HASH else -1
        if self.feedback is not None:
            self.feedback.on_tag(self, &self.tag)
        if self.sink_tags and self.sink is not None:
            if not (self.tag_gate and gate_leaves_out(self)):
                self.sink.on_tag(self, &self.tag)
        return 0

    cdef int emit_comment(self, Py_ssize_t end, Py_ssize_t content_end) except -1:
        self.flush_text(self.token_start, True)
        if content_end < self.content_start:
            content_end = self.content_start
        if self.errors is not None:
            self.report_segment(SEG_MARKUP, self.token_start, end, 0)
        if self.sink is not None:
            self.sink.on_comment(self, self.token_start, end, self.content_start, content_end)
        self.token_start = -1
        self.text_start = end
        self.pos = end
        self.state = S_DATA
        return 0

    cdef int emit_doctype(self, Py_ssize_t end, bint force_quirks) except -1:
        self.flush_text(self.token_start, True)
        self.doctype.start = self.token_start
        self.doctype.end = end
        if self.errors is not None:
            self.report_segment(SEG_MARKUP, self.token_start, end, 0)
        if force_quirks:
            self.doctype.force_quirks = True
        if self.feedback is not None:
            self.feedback.on_doctype(self, &self.doctype)
        if self.sink is not None:
            self.sink.on_doctype(self, &self.doctype)
        self.token_start = -1
        self.text_start = end
        self.pos = end
        self.state = S_DATA
        return 0

    cdef int emit_unparsed(self, Py_ssize_t end) except -1:
        self.flush_text(self.token_start, True)
        if self.errors is not None:
            self.report_segment(SEG_MARKUP, self.token_start, end, 0)
        if self.sink is not None:
            self.sink.on_unparsed(self, self.token_start, end)
        self.token_start = -1
        self.text_start = end
        self.pos = end
        self.state = S_DATA
        return 0

    cdef bint end_tag_is_appropriate(self, Py_ssize_t name_start, Py_ssize_t name_end,
                                      uint64_t h) noexcept:
        cdef Py_ssize_t i, n
        cdef const unsigned char* p
        if self.last_start_tag_hash == EMPTY_HASH:
            return False
        if h != INVALID_HASH or self.last_start_tag_hash != INVALID_HASH:
            return h == self.last_start_tag_hash
        n = name_end - name_start
        if self.last_start_tag_name is None or len(self.last_start_tag_name) != n:
            return False
        p = self.last_start_tag_name
        for i in range(n):
            if lower(self.data[name_start - self.base + i]) != p[i]:
                return False
        return True

    cdef int text_return_state(self) noexcept:
        """The text state an abandoned ``</name`` falls back to."""
        return self.return_state

    # ------------------------------------------------------------------ chunk ends

    cdef Py_ssize_t text_hold_point(self, Py_ssize_t end) noexcept:
        """Where text must stop at a chunk end so that its decoding cannot depend on later bytes."""
        cdef Py_ssize_t q = end
        cdef Py_ssize_t lo = self.text_start
        cdef Py_ssize_t i, k
        cdef const unsigned char* d = self.data - self.base   # index by stream offset
        cdef unsigned char c
        if q <= lo:
            return q
        if self.state == S_CDATA_BRACKET:
            q = self.pos - 1
        elif self.state == S_CDATA_END:
            q = self.pos - 2
        if q <= lo:
            return lo
        # A trailing CR may be the first half of CRLF.
        if d[q - 1] == 0x0D:
            q -= 1
        if q > lo:
            c = d[q - 1]
            if c < 0x80 and not is_alnum(c) and c != 0x26 and c != 0x23:
                return q        # (the usual ends: '>', white space...: nothing to hold)
        # A partial character reference (only text types that have them).
        if self.text_type == DATA or self.text_type == RCDATA:
            i = q
            # (numeric references are held back up to 1024 digits: longer runs are no real
            # reference, and holding them would let plain text grow the buffer)
            while i > lo and q - i < 1024 and is_hex(d[i - 1]):
                i -= 1
            k = i
            while k > lo and q - k <= 34 and is_alnum(d[k - 1]):
                k -= 1
            if k > lo and d[k - 1] == 0x26 and q - k <= 33:       # &name
                q = k - 1
            elif i > lo and d[i - 1] == 0x26 and q - i <= 33:     # & and a short hex-letter run
                q = i - 1
            elif i > lo and d[i - 1] == 0x23 and i - 1 > lo and d[i - 2] == 0x26:   # &#digits
                q = i - 2
            elif (i > lo + 1 and (d[i - 1] | 0x20) == 0x78 and d[i - 2] == 0x23
                  and i - 2 > lo and d[i - 3] == 0x26):                          # &#xhex
                q = i - 3
        # An incomplete UTF-8 sequence.
        if self.hold_utf8 and q > lo:
            i = q - 1
            k = 0
            while i >= lo and k < 3 and (d[i] & 0xC0) == 0x80:
                i -= 1
                k += 1
            if i >= lo:
                c = d[i]
                if c >= 0xC0 and ((c < 0xE0 and k < 1) or (0xE0 <= c < 0xF0 and k < 2)
                                  or (c >= 0xF0 and k < 3)):
                    q = i
        return q

    cdef int carry_over(self) except -1:
        """At a chunk end: flush the text that is final, keep the unfinished rest."""
        cdef Py_ssize_t end = self.base + self.data_len
        cdef Py_ssize_t keep_from, n
        if self.last_name_pending >= 0:
            self.keep_last_name()
        # Text before a pending token is final; text running to the chunk end may not be.
        if self.token_start >= 0:
            self.flush_text(self.token_start, False)
        else:
            self.flush_text(self.text_hold_point(end), False)
        keep_from = self.text_start
        if self.sink is not None:
            self.sink.on_flush(self, keep_from)
        n = end - keep_from
        if n > self.max_buffer_size:
            self.fail_limit("max_buffer_size", self.max_buffer_size,
                            _construct_name(self.state, self.tag.is_end), keep_from)
        if n and self.data != <const unsigned char*>self.buf:
            self.reserve(n)
            memcpy(self.buf, self.data + (keep_from - self.base), n)
        elif n:
            memmove(self.buf, self.buf + (keep_from - self.base), n)
        self.buf_len = n
        self.base = keep_from
        self.data = self.buf
        self.data_len = n
        return 0

    cdef int script_state(self, bint at_end_tag) noexcept:
        """In script data: how the text read last (up to the pending token, if any; with
        ``at_end_tag``, up to the end tag just emitted) is read: 0 plainly, 1 escaped (after
        '<!--'), 2 double-escaped (after '<!--' and '<script>')."""
        cdef int st = self.state
        if at_end_tag or S_TEXT_LT <= st <= S_TEXT_END_TAG_NAME or (
                self.token_start >= 0 and self.tag.is_end
                and S_BEFORE_ATTR_NAME <= st <= S_SELF_CLOSING_START_TAG):
            st = self.return_state          # a possible end tag: the state it began in
        if S_SCRIPT_ESCAPED <= st <= S_SCRIPT_DOUBLE_ESCAPE_START:
            return 1
        if S_SCRIPT_DOUBLE_ESCAPED <= st <= S_SCRIPT_DOUBLE_ESCAPE_END:
            return 2
        return 0

    cdef int report_segment(self, int kind, Py_ssize_t start, Py_ssize_t end,
                            int arg) except -1:
        """Hand the error checker the bytes ``start:end`` (in the window) as a segment."""
        if end > start:
            self.errors.segment(kind, PyBytes_FromStringAndSize(
                <const char*>self.data + (start - self.base), end - start), start, arg)
        return 0

    cdef int report_eof(self) except -1:
        """``finish_eof`` with an error checker: then tell it where the input ended, and in
        what (the end-of-file errors of text states; those of tokens it finds itself)."""
        cdef int st = self.state
        cdef int what = EOF_PLAIN
        if S_SCRIPT_ESCAPED <= st <= S_SCRIPT_DOUBLE_ESCAPE_END or (
                S_TEXT_LT <= st <= S_TEXT_END_TAG_NAME
                and S_SCRIPT_ESCAPED <= self.return_state <= S_SCRIPT_DOUBLE_ESCAPE_END):
            what = EOF_IN_SCRIPT_COMMENT
        elif S_CDATA <= st <= S_CDATA_END:
            what = EOF_IN_CDATA
        self.finish_eof()
        self.errors.end(self.stream_len, what)
        return 0

    cdef int note_eof(self) except -1:
        """Before the end-of-file rules: record the token the input ends inside, if any, and how
        a sink writing content after the end finishes it so that the content is not absorbed
        and the token reads as it does at the end of input (``eof_start``, ``eof_drop``,
        ``eof_closer``).  A tag is dropped (the end of input drops it anyway); a comment is
        closed; a DOCTYPE is closed so that it keeps its fields and force-quirks flag."""
        cdef int st = self.state
        self.eof_start = -1
        if self.token_start < 0:
            return 0
        if st == S_TAG_NAME or S_BEFORE_ATTR_NAME <= st <= S_SELF_CLOSING_START_TAG:
            self.eof_drop = self.token_start
            self.eof_closer = b""
        elif st == S_COMMENT:
            self.eof_closer = b"-->"
        elif st == S_COMMENT_END_DASH:
            self.eof_closer = b"->"
        elif st == S_BOGUS_COMMENT or S_COMMENT_START <= st <= S_COMMENT_END_BANG:
            self.eof_closer = b">"
        elif st == S_DOCTYPE_NAME:
            self.eof_closer = b" x>"          # bogus from here: force-quirks, as at EOF
        elif st == S_AFTER_DOCTYPE_NAME or st == S_AFTER_DOCTYPE_PUBLIC_ID \
                or st == S_BETWEEN_DOCTYPE_IDS:
            self.eof_closer = b"x>"
        elif st == S_AFTER_DOCTYPE_SYSTEM_ID:
            # '>' here would not set force-quirks: reopen the quoted identifier instead
            self.eof_drop = self.doctype.system_end
            self.eof_closer = b">"
        elif S_DOCTYPE <= st <= S_BOGUS_DOCTYPE:
            self.eof_closer = b">"
        else:
            return 0                        # text ('<', '</name'...): the sink handles it
        self.eof_start = self.token_start
        return 0

    cdef int finish_eof(self) except -1:
        """Apply the end-of-file rules of the state the input ended in."""
        cdef Py_ssize_t end = self.base + self.data_len
        cdef int st = self.state
        if self.token_start < 0:
            self.flush_text(end, True)
            return 0
        if st == S_TAG_OPEN or st == S_END_TAG_OPEN or S_TEXT_LT <= st <= S_TEXT_END_TAG_NAME \
                or st == S_SCRIPT_ESCAPED_LT:
            # '<', '</' or '</name' that did not become a tag is text.
            self.token_start = -1
            self.flush_text(end, True)
        elif st == S_TAG_NAME or S_BEFORE_ATTR_NAME <= st <= S_SELF_CLOSING_START_TAG:
            self.emit_unparsed(end)
        elif st == S_BOGUS_COMMENT or st == S_COMMENT_START or st == S_COMMENT:
            self.emit_comment(end, end)
        elif st == S_COMMENT_START_DASH:
            self.emit_comment(end, self.content_start)
        elif st == S_COMMENT_END_DASH:
            self.emit_comment(end, end - 1)
        elif st == S_COMMENT_END:
            self.emit_comment(end, end - 2)
        elif st == S_COMMENT_END_BANG:
            self.emit_comment(end, end - 3)
        elif S_DOCTYPE <= st <= S_BOGUS_DOCTYPE:
            if st == S_DOCTYPE_NAME:
                self.doctype.name_end = end
            elif st == S_DOCTYPE_PUBLIC_ID_DQ or st == S_DOCTYPE_PUBLIC_ID_SQ:
                self.doctype.public_end = end
            elif st == S_DOCTYPE_SYSTEM_ID_DQ or st == S_DOCTYPE_SYSTEM_ID_SQ:
                self.doctype.system_end = end
            self.emit_doctype(end, st != S_BOGUS_DOCTYPE)
        else:
            # S_MARKUP_DECL_OPEN is decided by run(); nothing else keeps a token open.
            self.emit_unparsed(end)
        return 0

    # ------------------------------------------------------------------ the state machine

    cdef int run(self, bint at_eof) except -1:
        cdef const unsigned char* d = self.data
        cdef Py_ssize_t base = self.base
        cdef Py_ssize_t n = self.data_len
        cdef Py_ssize_t p = self.pos - base
        cdef const unsigned char* hit
        cdef unsigned char c
        cdef int r, r2
        cdef Py_ssize_t q
        cdef uint64_t h
        cdef AttrRec* a
        cdef int st
        cdef unsigned char k

        if self.tag.attrs_skipped and self.token_start >= 0 \
                and S_BEFORE_ATTR_NAME <= self.state <= S_SELF_CLOSING_START_TAG:
            # a tag the scanner was in at the end of the last chunk
            p = self.skip_attrs(p)

        while True:
            st = self.state

            # ---------------------------------------------------------- text states
            if st == S_DATA:
                if p >= n:
                    break
                hit = find_lt(d + p, d + n)
                if hit == NULL:
                    p = n
                    break
                p = hit - d
                self.token_start = base + p
                # The usual tags, '<' letter and '</' letter, go straight to the tag name (what
                # S_TAG_OPEN and S_END_TAG_OPEN below do with them); anything else, or a '<' too
                # near the end of the window to tell, takes those states.
                # (they fall through to the tag-name block after this chain, without the
                # state dispatch)
                if p + 2 < n and is_alpha(d[p + 1]):
                    self.begin_tag(base + p, False)
                    p += 1
                elif p + 2 < n and d[p + 1] == b'/' and is_alpha(d[p + 2]):
                    self.begin_tag(base + p, True)
                    p += 2
                else:
                    self.state = S_TAG_OPEN
                    p += 1
                    continue
                self.state = st = S_TAG_NAME

            elif st == S_RCDATA or st == S_RAWTEXT or st == S_SCRIPT_DATA:
                if p >= n:
                    break
                # past every '<' that S_TEXT_LT and the end-tag states would find is text
                hit = NULL
                if p + 2 < n:
                    hit = find_text_markup(d + p, d + n, _end_tag_first(
                        self.last_start_tag_hash, self.last_start_tag_len), st == S_SCRIPT_DATA)
                    if hit == NULL:
                        p = n - 2
                if hit == NULL:
                    hit = <const unsigned char*>memchr(d + p, b'<', n - p)
                    if hit == NULL:
                        p = n
                        break
                p = hit - d
                self.token_start = base + p
                self.return_state = st
                self.state = S_TEXT_LT
                p += 1
                continue

            elif st == S_PLAINTEXT:
                p = n
                break

            elif st == S_TEXT_LT:
                if p >= n:
                    break
                c = d[p]
                if c == b'/':
                    self.state = S_TEXT_END_TAG_OPEN
                    p += 1
                elif c == b'!' and self.return_state == S_SCRIPT_DATA:
                    self.token_start = -1
                    self.state = S_SCRIPT_ESCAPE_START
                    p += 1
                else:
                    self.token_start = -1
                    self.state = self.return_state
                continue

            elif st == S_TEXT_END_TAG_OPEN:
                if p >= n:
                    break
                if is_alpha(d[p]):
                    self.temp_hash = EMPTY_HASH
                    self.state = S_TEXT_END_TAG_NAME
                else:
                    self.token_start = -1
                    self.state = self.text_return_state()
                continue

            elif st == S_TEXT_END_TAG_NAME:
                h = self.temp_hash
                while p < n and is_alpha(d[p]):
                    h = hash_update(h, d[p])
                    p += 1
                self.temp_hash = h
                if base + p - self.token_start - 2 > self.last_start_tag_len:
                    # longer than the last start tag's name: it cannot be the appropriate end
                    # tag, so it is text (and nothing more needs holding back)
                    self.token_start = -1
                    self.state = self.text_return_state()
                    continue
                if p >= n:
                    break
                c = d[p]
                if (is_ws(c) or c == b'/' or c == b'>') and self.end_tag_is_appropriate(
                        self.token_start + 2, base + p, h):
                    self.begin_tag(self.token_start, True)
                    self.tag.name_end = base + p
                    self.tag.name_hash = h
                    self.tag.attrs_skipped = self.lazy_attrs
                    if c == b'>':
                        self.emit_tag(base + p + 1)
                        p += 1
                    else:
                        self.state = S_SELF_CLOSING_START_TAG if c == b'/' \
                            else S_BEFORE_ATTR_NAME
                        p += 1
                        if self.lazy_attrs:
                            p = self.skip_attrs(p)
                            if p >= n:
                                break
                else:
                    self.token_start = -1
                    self.state = self.text_return_state()
                continue

            elif st == S_SCRIPT_ESCAPE_START or st == S_SCRIPT_ESCAPE_START_DASH:
                if p >= n:
                    break
                if d[p] == b'-':
                    self.state = S_SCRIPT_ESCAPE_START_DASH if st == S_SCRIPT_ESCAPE_START \
                        else S_SCRIPT_ESCAPED_DASH_DASH
                    p += 1
                else:
                    self.state = S_SCRIPT_DATA
                continue

            elif st == S_SCRIPT_ESCAPED:
                while p < n and d[p] != b'-' and d[p] != b'<':
                    p += 1
                if p >= n:
                    break
                if d[p] == b'-':
                    self.state = S_SCRIPT_ESCAPED_DASH
                else:
                    self.token_start = base + p
                    self.state = S_SCRIPT_ESCAPED_LT
                p += 1
                continue

            elif st == S_SCRIPT_ESCAPED_DASH or st == S_SCRIPT_ESCAPED_DASH_DASH:
                if p >= n:
                    break
                c = d[p]
                if c == b'-':
                    self.state = S_SCRIPT_ESCAPED_DASH_DASH
                elif c == b'<':
                    self.token_start = base + p
                    self.state = S_SCRIPT_ESCAPED_LT
                elif c == b'>' and st == S_SCRIPT_ESCAPED_DASH_DASH:
                    self.state = S_SCRIPT_DATA
                else:
                    self.state = S_SCRIPT_ESCAPED
                p += 1
                continue

            elif st == S_SCRIPT_ESCAPED_LT:
                if p >= n:
                    break
                c = d[p]
                if c == b'/':
                    self.return_state = S_SCRIPT_ESCAPED
                    self.state = S_TEXT_END_TAG_OPEN
                    p += 1
                elif is_alpha(c):
                    self.token_start = -1
                    self.temp_hash = EMPTY_HASH
                    self.state = S_SCRIPT_DOUBLE_ESCAPE_START
                else:
                    self.token_start = -1
                    self.state = S_SCRIPT_ESCAPED
                continue

            elif st == S_SCRIPT_DOUBLE_ESCAPE_START or st == S_SCRIPT_DOUBLE_ESCAPE_END:
                h = self.temp_hash
                while p < n and is_alpha(d[p]):
                    h = hash_update(h, d[p])
                    p += 1
                self.temp_hash = h
                if p >= n:
                    break
                c = d[p]
                if is_ws(c) or c == b'/' or c == b'>':
                    if st == S_SCRIPT_DOUBLE_ESCAPE_START:
                        self.state = S_SCRIPT_DOUBLE_ESCAPED if h == SCRIPT_HASH \
                            else S_SCRIPT_ESCAPED
                    else:
                        self.state = S_SCRIPT_ESCAPED if h == SCRIPT_HASH \
                            else S_SCRIPT_DOUBLE_ESCAPED
                    p += 1
                else:
                    self.state = S_SCRIPT_ESCAPED if st == S_SCRIPT_DOUBLE_ESCAPE_START \
                        else S_SCRIPT_DOUBLE_ESCAPED
                continue

            elif st == S_SCRIPT_DOUBLE_ESCAPED:
                while p < n and d[p] != b'-' and d[p] != b'<':
                    p += 1
                if p >= n:
                    break
                self.state = S_SCRIPT_DOUBLE_ESCAPED_DASH if d[p] == b'-' \
                    else S_SCRIPT_DOUBLE_ESCAPED_LT
                p += 1
                continue

            elif st == S_SCRIPT_DOUBLE_ESCAPED_DASH or st == S_SCRIPT_DOUBLE_ESCAPED_DASH_DASH:
                if p >= n:
                    break
                c = d[p]
                if c == b'-':
                    self.state = S_SCRIPT_DOUBLE_ESCAPED_DASH_DASH
                elif c == b'<':
                    self.state = S_SCRIPT_DOUBLE_ESCAPED_LT
                elif c == b'>' and st == S_SCRIPT_DOUBLE_ESCAPED_DASH_DASH:
                    self.state = S_SCRIPT_DATA
                else:
                    self.state = S_SCRIPT_DOUBLE_ESCAPED
                p += 1
                continue

            elif st == S_SCRIPT_DOUBLE_ESCAPED_LT:
                if p >= n:
                    break
                if d[p] == b'/':
                    self.temp_hash = EMPTY_HASH
                    self.state = S_SCRIPT_DOUBLE_ESCAPE_END
                    p += 1
                else:
                    self.state = S_SCRIPT_DOUBLE_ESCAPED
                continue

            elif st == S_CDATA:
                if p >= n:
                    break
                hit = <const unsigned char*>memchr(d + p, b']', n - p)
                if hit == NULL:
                    p = n
                    break
                p = hit - d + 1
                self.state = S_CDATA_BRACKET
                continue

            elif st == S_CDATA_BRACKET:
                if p >= n:
                    break
                if d[p] == b']':
                    self.state = S_CDATA_END
                    p += 1
                else:
                    self.state = S_CDATA
                continue

            elif st == S_CDATA_END:
                if p >= n:
                    break
                c = d[p]
                if c == b']':
                    p += 1
                elif c == b'>':
                    # The section ends: its last piece carries the ']]>' outside its content.
                    q = self.text_start if self.text_start > self.cdata_content_start \
                        else self.cdata_content_start
                    if self.feedback is not None and self.feedback.wants_text \
                            and base + p - 2 > q:
                        self.feedback.on_text(self, q, base + p - 2, CDATA_SECTION)
                    if unlikely(self.errors is not None):
                        self.report_segment(SEG_TEXT, self.text_start, base + p + 1,
                                            CDATA_SECTION)
                    if self.want_text and self.sink is not None:
                        self.sink.on_text(self, self.text_start, base + p + 1, q, base + p - 2,
                                          CDATA_SECTION, True)
                    self.text_node_open = False
                    p += 1
                    self.text_start = base + p
                    self.state = S_DATA
                    self.text_type = DATA
                else:
                    self.state = S_CDATA
                continue

            # ---------------------------------------------------------- tags
            elif st == S_TAG_OPEN:
                if p >= n:
                    break
                c = d[p]
                if c == b'!':
                    self.state = S_MARKUP_DECL_OPEN
                    p += 1
                elif c == b'/':
                    self.state = S_END_TAG_OPEN
                    p += 1
                elif is_alpha(c):
                    self.begin_tag(self.token_start, False)
                    self.state = S_TAG_NAME
                elif c == b'?':
                    self.content_start = base + p
                    self.state = S_BOGUS_COMMENT
                else:
                    self.token_start = -1      # '<' was text
                    self.state = S_DATA
                continue

            elif st == S_END_TAG_OPEN:
                if p >= n:
                    break
                c = d[p]
                if is_alpha(c):
                    self.begin_tag(self.token_start, True)
                    self.state = S_TAG_NAME
                elif c == b'>':
                    p += 1
                    self.emit_unparsed(base + p)      # '</>' is dropped by the spec
                else:
                    self.content_start = base + p
                    self.state = S_BOGUS_COMMENT
                continue

            elif st == S_TAG_NAME:
                pass        # (the block after this chain)

            elif st == S_BEFORE_ATTR_NAME:
                while p < n and is_ws(d[p]):
                    p += 1
                    while p + 8 <= n and load_le64(d + p) == SPACES8:
                        p += 8      # (indentation: see skip_attrs)
                if p >= n:
                    break
                c = d[p]
                if c == b'/' or c == b'>':
                    self.state = S_AFTER_ATTR_NAME
                else:
                    self.add_attr(base + p)
                    self.state = S_ATTR_NAME
                    if c == b'=':
                        p += 1      # '=' as the first character is part of the name
                continue

            elif st == S_ATTR_NAME:
                while p < n:
                    c = d[p]
                    if is_ws(c) or c == b'/' or c == b'>' or c == b'=':
                        break
                    p += 1
                if p >= n:
                    break
                a = &self.attrs[self.tag.n_attrs - 1]
                a.name_end = base + p
                a.end = base + p
                if c == b'=':
                    self.state = S_BEFORE_ATTR_VALUE
                    p += 1
                else:
                    self.state = S_AFTER_ATTR_NAME
                continue

            elif st == S_AFTER_ATTR_NAME:
                while p < n and is_ws(d[p]):
                    p += 1
                if p >= n:
                    break
                c = d[p]
                if c == b'/':
                    self.state = S_SELF_CLOSING_START_TAG
                    p += 1
                elif c == b'=':
                    self.state = S_BEFORE_ATTR_VALUE
                    p += 1
                elif c == b'>':
                    self.emit_tag(base + p + 1)
                    p += 1
                else:
                    self.add_attr(base + p)
                    self.state = S_ATTR_NAME
                continue

            elif st == S_BEFORE_ATTR_VALUE:
                while p < n and is_ws(d[p]):
                    p += 1
                if p >= n:
                    break
                c = d[p]
                a = &self.attrs[self.tag.n_attrs - 1]
                if c == b'"' or c == b"'":
                    a.value_start = base + p + 1
                    self.state = S_ATTR_VALUE_DQ if c == b'"' else S_ATTR_VALUE_SQ
                    p += 1
                elif c == b'>':
                    a.value_start = base + p
                    a.value_end = base + p
                    self.emit_tag(base + p + 1)
                    p += 1
                else:
                    a.value_start = base + p
                    self.state = S_ATTR_VALUE_UNQ
                continue

            elif st == S_ATTR_VALUE_DQ or st == S_ATTR_VALUE_SQ:
                if p >= n:
                    break
                hit = find_byte(d + p, d + n, 0x22 if st == S_ATTR_VALUE_DQ else 0x27)
                if hit == NULL:
                    p = n
                    break
                p = hit - d
                a = &self.attrs[self.tag.n_attrs - 1]
                a.value_end = base + p
                a.end = base + p + 1
                self.state = S_AFTER_ATTR_VALUE_QUOTED
                p += 1
                continue

            elif st == S_ATTR_VALUE_UNQ:
                while p < n:
                    c = d[p]
                    if is_ws(c) or c == b'>':
                        break
                    p += 1
                if p >= n:
                    break
                a = &self.attrs[self.tag.n_attrs - 1]
                a.value_end = base + p
                a.end = base + p
                if c == b'>':
                    self.emit_tag(base + p + 1)
                else:
                    self.state = S_BEFORE_ATTR_NAME
                p += 1
                continue

            elif st == S_AFTER_ATTR_VALUE_QUOTED:
                if p >= n:
                    break
                c = d[p]
                if is_ws(c):
                    self.state = S_BEFORE_ATTR_NAME
                    p += 1
                elif c == b'/':
                    self.state = S_SELF_CLOSING_START_TAG
                    p += 1
                elif c == b'>':
                    self.emit_tag(base + p + 1)
                    p += 1
                else:
                    self.state = S_BEFORE_ATTR_NAME
                continue

            elif st == S_SELF_CLOSING_START_TAG:
                if p >= n:
                    break
                if d[p] == b'>':
                    self.tag.self_closing = True
                    self.emit_tag(base + p + 1)
                    p += 1
                else:
                    self.state = S_BEFORE_ATTR_NAME
                continue

            # ---------------------------------------------------------- comments
            elif st == S_MARKUP_DECL_OPEN:
                r = match_ci(d + p, n - p, b"--", 2, True)
                if r == 1:
                    p += 2
                    self.content_start = base + p
                    self.state = S_COMMENT_START
                    continue
                r2 = match_ci(d + p, n - p, b"doctype", 7, False)
                if r2 == 1:
                    p += 7
                    self.doctype.name_start = -1
                    self.doctype.public_start = -1
                    self.doctype.system_start = -1
                    self.doctype.force_quirks = False
                    self.state = S_DOCTYPE
                    continue
                c = 0
                if self.feedback is not None and self.feedback.wants_text:
                    # '<!' always ends the text before it.  The tree builder's reaction to that
                    # text can change whether CDATA sections are allowed: let it see it first.
                    self.flush_text(self.token_start, True)
                if self.cdata_allowed:
                    c = match_ci(d + p, n - p, b"[CDATA[", 7, True) + 1
                    if c == 2:
                        p += 7
                        self.flush_text(self.token_start, True)
                        self.text_start = self.token_start
                        self.token_start = -1
                        self.cdata_content_start = base + p
                        self.state = S_CDATA
                        self.text_type = CDATA_SECTION
                        continue
                if not at_eof and (r == 0 or r2 == 0 or c == 1):
                    break       # wait for the bytes that decide it
                self.content_start = base + p
                self.state = S_BOGUS_COMMENT
                continue

            elif st == S_BOGUS_COMMENT:
                if p >= n:
                    break
                hit = <const unsigned char*>memchr(d + p, b'>', n - p)
                if hit == NULL:
                    p = n
                    break
                p = hit - d
                self.emit_comment(base + p + 1, base + p)
                p += 1
                continue

            elif st == S_COMMENT_START or st == S_COMMENT_START_DASH:
                if p >= n:
                    break
                c = d[p]
                if c == b'-':
                    self.state = S_COMMENT_START_DASH if st == S_COMMENT_START else S_COMMENT_END
                    p += 1
                elif c == b'>':
                    self.emit_comment(base + p + 1, self.content_start)
                    p += 1
                else:
                    self.state = S_COMMENT
                continue

            elif st == S_COMMENT:
                if p >= n:
                    break
                hit = <const unsigned char*>memchr(d + p, b'-', n - p)
                if hit == NULL:
                    p = n
                    break
                p = hit - d + 1
                self.state = S_COMMENT_END_DASH
                continue

            elif st == S_COMMENT_END_DASH:
                if p >= n:
                    break
                if d[p] == b'-':
                    self.state = S_COMMENT_END
                    p += 1
                else:
                    self.state = S_COMMENT
                continue

            elif st == S_COMMENT_END:
                if p >= n:
                    break
                c = d[p]
                if c == b'>':
                    self.emit_comment(base + p + 1, base + p - 2)
                    p += 1
                elif c == b'!':
                    self.state = S_COMMENT_END_BANG
                    p += 1
                elif c == b'-':
                    p += 1
                else:
                    self.state = S_COMMENT
                continue

            elif st == S_COMMENT_END_BANG:
                if p >= n:
                    break
                c = d[p]
                if c == b'-':
                    self.state = S_COMMENT_END_DASH
                    p += 1
                elif c == b'>':
                    self.emit_comment(base + p + 1, base + p - 3)
                    p += 1
                else:
                    self.state = S_COMMENT
                continue

            # ---------------------------------------------------------- DOCTYPE
            elif st == S_DOCTYPE:
                if p >= n:
                    break
                if is_ws(d[p]):
                    p += 1
                self.state = S_BEFORE_DOCTYPE_NAME
                continue

            elif st == S_BEFORE_DOCTYPE_NAME:
                while p < n and is_ws(d[p]):
                    p += 1
                if p >= n:
                    break
                if d[p] == b'>':
                    self.emit_doctype(base + p + 1, True)
                    p += 1
                else:
                    self.doctype.name_start = base + p
                    self.state = S_DOCTYPE_NAME
                continue

            elif st == S_DOCTYPE_NAME:
                while p < n and not is_ws(d[p]) and d[p] != b'>':
                    p += 1
                if p >= n:
                    break
                self.doctype.name_end = base + p
                if d[p] == b'>':
                    self.emit_doctype(base + p + 1, False)
                else:
                    self.state = S_AFTER_DOCTYPE_NAME
                p += 1
                continue

            elif st == S_AFTER_DOCTYPE_NAME:
                while p < n and is_ws(d[p]):
                    p += 1
                if p >= n:
                    break
                if d[p] == b'>':
                    self.emit_doctype(base + p + 1, False)
                    p += 1
                    continue
                r = match_ci(d + p, n - p, b"public", 6, False)
                r2 = match_ci(d + p, n - p, b"system", 6, False)
                if r == 1 or r2 == 1:
                    p += 6
                    self.state = S_AFTER_DOCTYPE_PUBLIC_KW if r == 1 else S_AFTER_DOCTYPE_SYSTEM_KW
                elif not at_eof and (r == 0 or r2 == 0):
                    break
                else:
                    self.doctype.force_quirks = True
                    self.state = S_BOGUS_DOCTYPE
                continue

            elif st == S_AFTER_DOCTYPE_PUBLIC_KW or st == S_AFTER_DOCTYPE_SYSTEM_KW \
                    or st == S_BEFORE_DOCTYPE_PUBLIC_ID or st == S_BEFORE_DOCTYPE_SYSTEM_ID:
                if st == S_BEFORE_DOCTYPE_PUBLIC_ID or st == S_BEFORE_DOCTYPE_SYSTEM_ID:
                    while p < n and is_ws(d[p]):
                        p += 1
                if p >= n:
                    break
                c = d[p]
                if is_ws(c):
                    self.state = S_BEFORE_DOCTYPE_PUBLIC_ID if st == S_AFTER_DOCTYPE_PUBLIC_KW \
                        else S_BEFORE_DOCTYPE_SYSTEM_ID
                    p += 1
                elif c == b'"' or c == b"'":
                    if st == S_AFTER_DOCTYPE_PUBLIC_KW or st == S_BEFORE_DOCTYPE_PUBLIC_ID:
                        self.doctype.public_start = base + p + 1
                        self.state = S_DOCTYPE_PUBLIC_ID_DQ if c == b'"' \
                            else S_DOCTYPE_PUBLIC_ID_SQ
                    else:
                        self.doctype.system_start = base + p + 1
                        self.state = S_DOCTYPE_SYSTEM_ID_DQ if c == b'"' \
                            else S_DOCTYPE_SYSTEM_ID_SQ
                    p += 1
                elif c == b'>':
                    self.emit_doctype(base + p + 1, True)
                    p += 1
                else:
                    self.doctype.force_quirks = True
                    self.state = S_BOGUS_DOCTYPE
                continue

            elif st == S_DOCTYPE_PUBLIC_ID_DQ or st == S_DOCTYPE_PUBLIC_ID_SQ \
                    or st == S_DOCTYPE_SYSTEM_ID_DQ or st == S_DOCTYPE_SYSTEM_ID_SQ:
                c = 0x22 if st == S_DOCTYPE_PUBLIC_ID_DQ or st == S_DOCTYPE_SYSTEM_ID_DQ else 0x27
                while p < n and d[p] != c and d[p] != b'>':
                    p += 1
                if p >= n:
                    break
                if st == S_DOCTYPE_PUBLIC_ID_DQ or st == S_DOCTYPE_PUBLIC_ID_SQ:
                    self.doctype.public_end = base + p
                    self.state = S_AFTER_DOCTYPE_PUBLIC_ID
                else:
                    self.doctype.system_end = base + p
                    self.state = S_AFTER_DOCTYPE_SYSTEM_ID
                if d[p] == b'>':
                    self.emit_doctype(base + p + 1, True)
                p += 1
                continue

            elif st == S_AFTER_DOCTYPE_PUBLIC_ID or st == S_BETWEEN_DOCTYPE_IDS:
                if st == S_BETWEEN_DOCTYPE_IDS:
                    while p < n and is_ws(d[p]):
                        p += 1
                if p >= n:
                    break
                c = d[p]
                if is_ws(c):
                    self.state = S_BETWEEN_DOCTYPE_IDS
                    p += 1
                elif c == b'>':
                    self.emit_doctype(base + p + 1, False)
                    p += 1
                elif c == b'"' or c == b"'":
                    self.doctype.system_start = base + p + 1
                    self.state = S_DOCTYPE_SYSTEM_ID_DQ if c == b'"' else S_DOCTYPE_SYSTEM_ID_SQ
                    p += 1
                else:
                    self.doctype.force_quirks = True
                    self.state = S_BOGUS_DOCTYPE
                continue

            elif st == S_AFTER_DOCTYPE_SYSTEM_ID:
                while p < n and is_ws(d[p]):
                    p += 1
                if p >= n:
                    break
                if d[p] == b'>':
                    self.emit_doctype(base + p + 1, False)
                    p += 1
                else:
                    self.state = S_BOGUS_DOCTYPE      # no force-quirks here
                continue

            elif st == S_BOGUS_DOCTYPE:
                if p >= n:
                    break
                hit = <const unsigned char*>memchr(d + p, b'>', n - p)
                if hit == NULL:
                    p = n
                    break
                p = hit - d
                self.emit_doctype(base + p + 1, False)
                p += 1
                continue

            else:
                raise AssertionError(f"lexer in unknown state {st}")

            # ---------------------------------------------------------- tag names
            if st == S_TAG_NAME:
                # The hash as hash_update makes it, one table look-up per byte.  Up to 12 codes
                # always fit, so the loop does not check for overflow: a longer name is hashed
                # again at its end (hash_bytes, which tells), and a byte the hash cannot take
                # makes it INVALID_HASH for the rest of the name.
                h = self.tag.name_hash
                if h != INVALID_HASH:
                    k = NAME_END
                    while p < n:
                        k = NAME_CODE[d[p]]
                        if k >= 32:
                            break
                        h = (h << 5) | k
                        p += 1
                    if k == NAME_OTHER:
                        h = INVALID_HASH
                if h == INVALID_HASH:
                    while p < n and NAME_CODE[d[p]] != NAME_END:
                        p += 1
                self.tag.name_hash = h
                if p >= n:
                    break
                c = d[p]
                if h != INVALID_HASH and base + p - self.tag.name_start > 12:
                    h = hash_bytes(d + (self.tag.name_start - base), base + p - self.tag.name_start)
                    self.tag.name_hash = h
                self.tag.name_end = base + p
                if c == b'>':
                    self.emit_tag(base + p + 1)
                    p += 1
                    continue
                self.state = S_SELF_CLOSING_START_TAG if c == b'/' else S_BEFORE_ATTR_NAME
                p += 1
                if self.lazy_attrs and (self.tag.is_end or not wants_attrs(self, h)):
                    self.tag.attrs_skipped = True
                    p = self.skip_attrs(p)
                    if p >= n:
                        break
                elif self.state == S_BEFORE_ATTR_NAME:
                    p = self.lex_attrs(p)
                    if p >= n:
                        break
                continue

        self.pos = base + p
        return 0
