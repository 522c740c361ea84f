# Rewritable units (see units.pyx; documented for users in htmlstream/units.py).
from libc.stdint cimport uint64_t

from htmlstream._engine.lexer cimport TagRec
from htmlstream._engine.treebuilder cimport OpenElement as OpenElement_


# Where a unit writes itself: ``write(sink, p, n)`` appends p[:n] to the output.
ctypedef int (*WriteFn)(object sink, const unsigned char* p, Py_ssize_t n) except -1


cdef struct AttrSpan:           # offsets in the start tag's raw bytes
    Py_ssize_t name_start
    Py_ssize_t name_end
    Py_ssize_t value_start      # -1: no value
    Py_ssize_t value_end
    Py_ssize_t end


cpdef str process_text(str text, int text_type)
cpdef bytes encode_content(content, bint html, int text_type, str encoding)
cpdef str validate_tag_name(name)
cpdef str validate_attribute_name(name)
cdef object text_part(content, bint html, int text_type, str encoding)
cdef int resolve_parts(BaseUnit unit, awaiter) except -1


cdef class BaseUnit:
    cdef object doc_context         # the document's context (set by the sink before a handler)
    cdef bint async_parts           # content from an async iterable is pending (resolve_parts)


cdef class Unit(BaseUnit):
    cdef bytes raw_                 # the unit's bytes as written
    cdef Py_ssize_t offset_         # stream offset of its first byte
    cdef str encoding
    cdef bint live
    cdef list before_parts          # None until used
    cdef list after_parts
    cdef object replacement         # bytes (html) or (bytes, str, text type): see text_part
    cdef bint removed_
    # The open elements around the unit while its handlers run (see inside()): the entries of
    # the simulator's stack, and up to two more (what the text itself closed after it)
    cdef const OpenElement_* open_stack
    cdef Py_ssize_t open_n
    cdef const OpenElement_* open_extra
    cdef Py_ssize_t open_extra_n
    cdef int check(self) except -1
    cdef bint inside_any(self, tuple names) except -1
    cdef int text_ctx(self)
    cdef int text_ctx_after(self)
    cdef bint is_modified(self) noexcept


cdef class TextChunk(Unit):
    cdef str text_
    cdef int text_type_
    cdef bint last


cdef class Comment(Unit):
    cdef bytes content
    cdef str text_
    cdef bytes new_text
    cdef bytes serialize(self)


cdef class Doctype(BaseUnit):
    cdef readonly object raw
    cdef readonly object name
    cdef readonly object public_id
    cdef readonly object system_id
    cdef readonly bint force_quirks
    cdef readonly Py_ssize_t offset
    cdef readonly bint removed
    cdef bint live


cdef class DocumentEnd(BaseUnit):
    cdef str encoding
    cdef bint live
    cdef list parts


cdef class EndTag(Unit):
    cdef str name_
    cdef bytes new_name
    cdef bint implicit_
    cdef int ctx_before             # text type where before() content lands
    cdef int ctx_after              # ... and after() content
    cdef bytes serialize(self)


cdef class Element(Unit):
    cdef Py_ssize_t name_start
    cdef Py_ssize_t name_end
    cdef uint64_t name_hash         # the lexer's hash of the name (taghash)
    cdef AttrSpan* spans
    cdef Py_ssize_t n_spans
    cdef Py_ssize_t spans_cap       # (the buffer is kept when the element is reused)
    cdef bint self_closing
    cdef bint can_have_content_
    cdef int ns
    cdef int content_text_type
    cdef str name_
    cdef bytes new_name
    cdef list overrides             # flat: lower name bytes, new value or None (removed), at
                                    # end; three items per overridden attribute
    cdef list spare_overrides       # an emptied overrides list, for reuse (release_element)
    cdef Py_ssize_t raw_cap         # the allocation of raw_ (make_element refills it in place)
    cdef str looked_name            # the last ASCII name get/has_attribute looked up (or None)
    cdef Py_ssize_t looked_span     # ... the span it found, or -1
    cdef Py_ssize_t set_span        # the span of the first override's name when set_attribute
                                    # knew it (a read of that name first), else -2
    cdef bint tag_modified
    cdef list prepend_parts
    cdef list append_parts
    cdef object inner
    cdef bint remove_content        # the content is dropped (remove, replace, set_inner_content)
    cdef bint whole                 # the whole element goes (remove, replace)
    cdef list end_handlers
    cdef bytes start_tag_markup     # set_start_tag: written in place of the start tag
    cdef list captures              # capture requests (see capture.pyx), taken by the sink
    cdef bint merged_               # a start tag merged into the open element of its name
                                    # (<html>, <body>): its changes apply to the tag only, and
                                    # its content is the element's from the tag on
    cdef bint implied_              # an element the tree builder made with no start tag of
                                    # its own (Rewriter.on(..., implied=True)): no tag to change
    cdef int check_tag(self, str what) except -1
    cdef bint span_named(self, Py_ssize_t i, bytes lname)
    cdef Py_ssize_t span_index(self, bytes lname) except -2
    cdef Py_ssize_t ascii_span(self, str name) noexcept
    cdef Py_ssize_t ascii_override(self, str name) noexcept
    cdef str read_tag_name(self)
    cdef list plain_attributes(self)
    cdef Py_ssize_t override(self, bytes lname) except -2
    cdef bytes lname(self, str name)
    cdef str decode_value(self, Py_ssize_t i)
    cdef str attr_name(self, Py_ssize_t i)
    cdef str dom_name(self, str lower)
    cdef Py_ssize_t span_end(self, Py_ssize_t i) noexcept
    cdef Py_ssize_t prev_end(self, Py_ssize_t i)
    cdef bytes serialize_start_tag(self)
    cdef int write_start_tag(self, WriteFn write, object sink) except -1
    cdef void drop_everything(self)


cdef TextChunk make_text_chunk(bytes raw, int text_type, bint last, Py_ssize_t offset,
                               str encoding)
cdef Comment make_comment(bytes raw, bytes content, Py_ssize_t offset, str encoding)
cdef EndTag make_end_tag(bytes raw, str name, bint implicit, Py_ssize_t offset, str encoding,
                         int ctx_before, int ctx_after)
cdef Element make_element(const unsigned char* p, TagRec* tag, int ns, bint can_have_content,
                          int content_text_type, str encoding, Element reuse)
cdef Element make_implied_element(uint64_t name_hash, str name, int ns, Py_ssize_t offset,
                                  int content_text_type, str encoding)
cdef void release_element(Element el) noexcept
