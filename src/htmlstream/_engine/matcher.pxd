# The compiled selector matcher: decides, when a start tag arrives, which rules match the element,
# from the open elements and the siblings that came before it, never from what comes after.
from libc.stdint cimport uint64_t

from htmlstream._engine.lexer cimport AttrRec, Lexer, TagRec


cdef class Compound:
    cdef uint64_t tag_hash              # EMPTY_HASH: any tag
    cdef bytes tag_name                 # lower-cased, when the name does not hash
    cdef list attr_tests                # [(name, op, value, lower value, case mode)]
    cdef list pseudos                   # [(kind, a, b, flag)]
    cdef bint never                     # can never match (e.g. [a^=""])
    cdef bint svg_ok                    # the type selector's case fits SVG element names
    cdef bint math_ok                   # ... and MathML element names


cdef class State:
    cdef public int id
    cdef Compound compound
    cdef int next_state                 # -1: last compound of its chain
    cdef int combinator                 # how next_state is reached
    cdef int target                     # >= 0: rule id; < 0: sets flag (-target - 1)
    cdef int level


cdef class Program:
    cdef public list states             # State objects, by id
    cdef public list compounds
    cdef public list levels             # nesting level of each state
    cdef public dict entry_by_hash      # tag hash -> [state id]: first compounds naming a tag
    cdef public list entry_by_name      # [(lower name bytes, state id)]: tags that do not hash
    cdef public list entry_any          # first compounds with no tag and no needed attribute
    cdef public dict entry_by_id        # id value -> [state id]: first compounds needing it
    cdef public dict entry_by_class     # class name -> [state id]
    cdef public dict entry_by_attr      # lower attribute name -> [state id]
    cdef public bint attr_index         # some first compound is indexed by an attribute
    cdef uint64_t id_bloom[4]           # 256-bit Bloom filters of the indexed ids and classes
    cdef uint64_t class_bloom[4]
    cdef uint64_t attr_len_mask         # bit min(len, 63) set for every indexed attribute name
    cdef uint64_t hash_filter           # bit (hash & 63) set for every hash in entry_by_hash
    cdef public int n_states
    cdef public int n_flags
    cdef public int n_rules
    cdef public bint nested             # some state has a nesting level > 0
    cdef public bint needs_frames       # combinators or structural pseudo-classes are used
    cdef public bint uses_nth_of_type
    cdef public str encoding
    cdef public bint utf8               # raw attribute bytes compare in place


cdef class Frame:
    cdef uint64_t name_hash
    cdef int ns
    cdef Py_ssize_t child_count
    cdef dict type_counts               # name hash -> count of element children of that type
    cdef dict of_counts                 # flag -> count of element children matching it
    cdef list desc                      # states its descendants continue from
    cdef list child                     # states its children continue from
    cdef list adj                       # states the next element child continues from
    cdef list gen                       # states every later element child continues from


cdef class Matcher:
    cdef Program program
    cdef list frames                    # Frame per open element; frames[0] is the document
    cdef Py_ssize_t n_frames
    cdef list cands                     # scratch list of candidate states
    cdef list desc_frames               # the frames that have a non-empty desc list
    cdef int[::1] stamp                 # per state: the element serial it was last queued for
    cdef int[::1] flag_stamp            # per flag: the element serial it was last set for
    cdef int serial
    cdef list pending_desc
    cdef list pending_child
    # the element being matched
    cdef Lexer lx
    cdef TagRec* tag

    cpdef list match_start_tag(self, Lexer lx, int ns, bint implied, uint64_t name_hash,
                               bytes name)
    cdef list match(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name, int ns)
    cdef list _match_simple(self, uint64_t name_hash, bytes name, int ns, Frame parent)
    cdef list _collect(self, list matched, list states, uint64_t name_hash, bytes name, int ns,
                       Frame parent)
    cdef list _attribute_entries(self)
    cdef void _queue(self, list cands, list states)
    cdef void _set_flag(self, int flag, Frame parent)
    cdef bint _flag(self, int flag)
    cdef bint _test(self, Compound c, uint64_t name_hash, bytes name, int ns, Frame parent)
    cdef bint _attr_matches(self, bytes aname, int op, bytes value, bytes lower_value, int case,
                            int ns)
    cdef bytes _value(self, AttrRec* a)
    cpdef push(self, uint64_t name_hash, int ns)
    cpdef pop(self)
    # Changing the stack elsewhere than at its top (see "Stack surgery" in matcher.pyx).
    cdef object detach_frame(self, Py_ssize_t i)
    cdef int attach_frame(self, object f) except -1
    cdef int insert_frame(self, Py_ssize_t i, uint64_t name_hash, int ns) except -1
    cdef int push_unknown(self) except -1
    cdef object sibling_state(self, Py_ssize_t i)
    cdef list match_uncounted(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name,
                              int ns, Py_ssize_t parent, object siblings)
