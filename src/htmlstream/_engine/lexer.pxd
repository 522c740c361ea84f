# The WHATWG tokenizer state machine over bytes (see lexer.pyx).
#
# Positions handed to sinks are absolute byte offsets in the input stream.  The bytes of the
# current window are ``lx.data[0 : lx.data_len]`` and start at stream offset ``lx.base``, so the
# byte at offset ``pos`` is ``lx.data[pos - lx.base]``.  A sink may only read bytes of the token it
# is handed, during the call.
cimport cython
from libc.stdint cimport uint64_t


# Text types (what kind of text a text token is, i.e. the tokenizer state it was read in).
from htmlstream._engine.constants cimport (
    CDATA_SECTION,
    DATA,
    PLAINTEXT,
    RAWTEXT,
    RCDATA,
    SCRIPT_DATA,
    TextType,
)


cdef struct AttrRec:
    Py_ssize_t name_start
    Py_ssize_t name_end
    Py_ssize_t value_start      # -1 when the attribute has no value
    Py_ssize_t value_end
    Py_ssize_t end              # end of the whole attribute, closing quote included


cdef struct TagRec:
    bint is_end
    Py_ssize_t start            # offset of '<'
    Py_ssize_t end              # offset just past '>'
    Py_ssize_t name_start
    Py_ssize_t name_end
    uint64_t name_hash          # taghash of the name (INVALID_HASH when it does not fit)
    bint self_closing
    bint attrs_skipped          # scanned past, not recorded (see Lexer.set_attribute_policy):
                                # n_attrs is 0 whatever the tag has
    Py_ssize_t n_attrs
    AttrRec* attrs              # owned by the lexer, valid during the call


cdef struct DoctypeRec:
    Py_ssize_t start
    Py_ssize_t end
    Py_ssize_t name_start       # -1: missing
    Py_ssize_t name_end
    Py_ssize_t public_start     # -1: missing
    Py_ssize_t public_end
    Py_ssize_t system_start     # -1: missing
    Py_ssize_t system_end
    bint force_quirks


cdef class TokenSink:
    """Receives tokens from the lexer.  Every method returns 0, or -1 with an exception set."""
    cdef int on_text(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                     Py_ssize_t content_start, Py_ssize_t content_end, int text_type,
                     bint last) except -1
    cdef int on_tag(self, Lexer lx, TagRec* tag) except -1
    cdef int on_comment(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                        Py_ssize_t content_start, Py_ssize_t content_end) except -1
    cdef int on_doctype(self, Lexer lx, DoctypeRec* doctype) except -1
    cdef int on_unparsed(self, Lexer lx, Py_ssize_t start, Py_ssize_t end) except -1
    # All input before ``upto`` has been handed over: the window is about to move past it.
    cdef int on_flush(self, Lexer lx, Py_ssize_t upto) except -1


cdef class Feedback:
    """Tree-builder feedback: told of every tag before the sink, it may switch the lexer's state
    (``lx.switch_text_state``) and whether CDATA sections are allowed (``lx.cdata_allowed``).
    It is also told of each DOCTYPE (quirks mode) and, while ``wants_text`` is set, of the content
    range of each text piece (the tree builder's reaction to text: implied ``<body>``, the
    frameset-ok flag, re-opened formatting elements), before the sink."""
    cdef bint wants_text
    cdef readonly Py_ssize_t depth      # open elements recorded (the tree builder's stack)
    cdef readonly Py_ssize_t overflow   # open elements beyond those (counted only)
    cdef readonly Py_ssize_t changed_from   # the lowest index the last event changed
    cdef int on_tag(self, Lexer lx, TagRec* tag) except -1
    cdef int on_text(self, Lexer lx, Py_ssize_t content_start, Py_ssize_t content_end,
                     int text_type) except -1
    cdef int on_doctype(self, Lexer lx, DoctypeRec* doctype) except -1
    cdef int on_eof(self, Lexer lx) except -1


cdef class AttributePolicy:
    cdef readonly bytes packed          # the tag-name hashes, as uint64_t
    cdef readonly uint64_t filter       # bit (hash & 63) of each of them
    cdef readonly list long_names       # lower-cased names the hash cannot hold
    cdef readonly bint unhashable_all   # every name the hash cannot hold is meant


@cython.final     # (its methods are called directly: no subclass may override them)
cdef class Lexer:
    # --- the current window of input ---
    cdef const unsigned char* data
    cdef Py_ssize_t data_len
    cdef Py_ssize_t base            # stream offset of data[0]
    cdef unsigned char* buf         # carried-over bytes (owned)
    cdef Py_ssize_t buf_len
    cdef Py_ssize_t buf_cap
    cdef Py_ssize_t stream_len      # bytes fed so far

    # --- settings ---
    cdef readonly Py_ssize_t max_buffer_size
    cdef readonly Py_ssize_t max_attributes
    cdef public TokenSink sink
    cdef public Feedback feedback
    cdef public bint cdata_allowed
    cdef public bint want_text      # sink.on_text is called only when set
    cdef public bint sink_tags      # sink.on_tag is called only when set
    # The tag gate: a sink whose mirror of the open elements may fall behind (elements.pyx, the
    # lazy mirror) has the lexer leave out of sink.on_tag the tags it has nothing to do for,
    # with no call (emit_tag); the sink reads what was left out at its next call.
    cdef bint tag_gate              # tags may be left out (set by the sink) ...
    cdef uint64_t gate_names        # ... not start tags whose name hash has bit (h & 63) set
    cdef bint gate_attrs            # ... nor start tags with attributes
    cdef Py_ssize_t gate_valid      # ... nor tags that change the stack below this index
                                    # (the sink's elements with work left), nor then </body>
                                    # and </html>
    cdef bint gate_keep_text        # the sink reads text below gate_valid, whatever the
                                    # feedback does with it
    cdef bint gate_hit              # tags were left out since the sink last looked
    cdef Py_ssize_t gate_depth      # the feedback's depth after the last one left out
    cdef bint hold_utf8             # keep an incomplete trailing UTF-8 sequence for the next chunk
    # The parse-error checker (htmlstream._parse_errors), or None (the default: no error is
    # looked for).  While set, every piece of text and every markup token is handed to it, in
    # stream order, as bytes (see Lexer.report_segment).
    cdef public object errors

    # --- state machine ---
    cdef int state
    cdef int return_state
    cdef Py_ssize_t pos             # next byte to read (stream offset)
    cdef Py_ssize_t text_start      # start of text not yet emitted
    cdef bint text_node_open        # pieces of the current text node were emitted, not the last
    cdef Py_ssize_t token_start     # start of the markup token being read, -1 when none
    cdef readonly int text_type     # the TextType the lexer reads now
    cdef Py_ssize_t cdata_content_start
    cdef bint closed
    cdef bint failed
    # what the input ended inside (set by close() for a sink that writes after the end): the
    # unfinished token's start (-1: none), from where its bytes must be dropped (-1: keep them)
    # and the bytes that finish it without changing it (None: drop it instead)
    cdef readonly Py_ssize_t eof_start
    cdef readonly bint eof_cdata        # the input ended inside a CDATA section
    cdef Py_ssize_t eof_drop
    cdef bytes eof_closer

    # tag being built
    cdef TagRec tag
    cdef AttrRec* attrs
    cdef Py_ssize_t attrs_cap
    cdef uint64_t temp_hash         # script double-escape / end-tag name buffer, hashed
    cdef uint64_t last_start_tag_hash
    cdef Py_ssize_t last_start_tag_len
    cdef bytes last_start_tag_name  # lower-cased, for names whose hash does not fit
    cdef Py_ssize_t last_name_pending   # stream offset of that name while not yet copied, or -1

    # --- the tag scanner (two speeds, DESIGN principle 5) ---
    # While ``lazy_attrs`` is set, the attributes of end tags and of start tags whose name is
    # not in the policy are scanned past without being recorded (only quotes and ``/>`` are
    # followed); the tag's boundaries, name and self-closing flag are the same as when lexed.
    cdef bint lazy_attrs
    cdef bint attrs_all             # every start tag needs its attributes
    cdef uint64_t attr_filter       # bit (hash & 63) of every hash in attr_hashes
    cdef AttributePolicy attribute_policy   # what the three below are read from
    cdef const uint64_t* attr_hashes    # name hashes of start tags whose attributes are needed
                                        # (in attribute_policy.packed)
    cdef Py_ssize_t attr_hashes_len
    cdef Py_ssize_t skipped_attrs   # attributes scanned past in the current tag (for the limit)
    cdef list long_names            # lower-cased names the hash cannot hold, lexed in full
    cdef bint unhashable_all        # every name the hash cannot hold is lexed in full

    # comment / doctype being built
    cdef Py_ssize_t content_start
    cdef Py_ssize_t content_end
    cdef DoctypeRec doctype

    cdef int init(self, TokenSink sink, Feedback feedback, Py_ssize_t max_buffer_size,
                  bint hold_utf8, Py_ssize_t max_attributes) except -1
    cdef int end_input(self) except -1
    cdef int use_attribute_policy(self, bint lazy, bint all_start_tags,
                                  AttributePolicy policy) except -1
    cdef int run(self, bint at_eof) except -1
    cdef int switch_text_state(self, int text_type) except -1
    cdef int set_last_start_tag(self, bytes name) except -1
    cdef int keep_last_name(self) except -1
    cdef int reserve(self, Py_ssize_t size) except -1
    cdef int add_attr(self, Py_ssize_t name_start) except -1
    cdef bint needs_attrs(self, uint64_t h) noexcept
    cdef Py_ssize_t skip_attrs(self, Py_ssize_t p) except -1
    cdef Py_ssize_t lex_attrs(self, Py_ssize_t p) except -1
    cdef void begin_tag(self, Py_ssize_t lt, bint is_end) noexcept
    cdef int flush_text(self, Py_ssize_t upto, bint last) except -1
    cdef int emit_tag(self, Py_ssize_t end) except -1
    cdef int emit_comment(self, Py_ssize_t end, Py_ssize_t content_end) except -1
    cdef int emit_doctype(self, Py_ssize_t end, bint force_quirks) except -1
    cdef int emit_unparsed(self, Py_ssize_t end) except -1
    cdef bint end_tag_is_appropriate(self, Py_ssize_t name_start, Py_ssize_t name_end,
                                     uint64_t h) noexcept
    cdef int text_return_state(self) noexcept
    cdef Py_ssize_t text_hold_point(self, Py_ssize_t end) noexcept
    cdef int carry_over(self) except -1
    cdef int fail_limit(self, str name, Py_ssize_t limit, str construct,
                        Py_ssize_t offset) except -1
    cdef int finish_eof(self) except -1
    cpdef int feed_bytes(self, chunk) except -1
    cdef int feed_ptr(self, const unsigned char* chunk, Py_ssize_t n) except -1
    cdef int append(self, const unsigned char* chunk, Py_ssize_t n) except -1
    cdef int finish_carried(self, const unsigned char* chunk, Py_ssize_t n) except -1
    cdef int note_eof(self) except -1
    cdef int script_state(self, bint at_end_tag) noexcept
    cdef int report_segment(self, int kind, Py_ssize_t start, Py_ssize_t end,
                            int arg) except -1
    cdef int report_eof(self) except -1
