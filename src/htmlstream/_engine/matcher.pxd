# The compiled selector matcher: decides, when a start tag arrives, which rules match the element,
# from the open elements and the siblings that came before it, never from what comes after.
#
# Everything the per-element path reads is C data: the compiled selectors are arrays of structs
# owned by the Program, the pending states of the open elements are ranges of integer stacks
# owned by the Matcher.  An element none of the selectors can match costs a few hash probes.
cimport cython
from libc.stdint cimport uint64_t

from htmlstream._engine.lexer cimport AttrRec, Lexer, TagRec
from htmlstream._engine.taghash cimport INVALID_HASH


cdef struct CState:
    uint64_t tag_hash           # the compound's (a copy, for a quick rejection)
    bint needs_attrs            # the compound tests attributes (an element without any fails)
    bint never                  # the compound can never match
    uint64_t tag_bit            # bit (tag_hash & 63), or all bits for a compound with no tag hash
    uint64_t class_bits         # the token_bits of its first .c test, or 0
    uint64_t cls_key            # class_bits, or all bits when it has no .c test (the class
                                # masks of the ranges it is pending in, see Matcher._no_class)
    int is_flag                 # the flag of its first :is()/:where(), or -1
    int not_flag                # the flag of its first :not(), or -1
    bint trivial                # the quick rejection (Matcher._rejects) decides the compound
    Py_ssize_t min_child        # > 0: its :nth-child(An+B)/:nth-of-type(An+B) needs the parent
                                # to have at least this many element children, itself included
    int compound                # index in Program.c_compounds
    int next_state              # -1: last compound of its chain (else the first next state)
    int next_start              # its next states: Program.c_next[next_start : + next_n]
    int next_n
    int combinator              # how next_state is reached
    int target                  # >= 0: rule id; < 0: sets flag (-target - 1)
    int level                   # nesting level (arguments of :not/:is... are one deeper)


cdef struct CAttrTest:
    const unsigned char* lname  # ASCII-lower-cased name in document bytes; NULL: compare decoded
    Py_ssize_t lname_len
    const unsigned char* value  # the value in document bytes; NULL: not encodable
    const unsigned char* lower  # ... ASCII-lower-cased
    Py_ssize_t value_len
    int op
    int case
    bint svg_ok                 # the name's case fits the (adjusted) SVG attribute names
    bint math_ok                # ... and the MathML ones
    bint raw_ok                 # a raw value without '&', CR or NUL compares in place
    bint class_token            # .c (class ~= c, case-sensitive, in place): see token_bits
    uint64_t token_bits         # two bits of the element's class Bloom filter that c sets
    int py_index                # in Program.attr_py: (lower name, value, lower value) as str
    unsigned long long lname_word   # lname as a word (ascii.name_word; lname_len <= 8), and
    unsigned long long lname_mask   # its letters' 0x20 bits


cdef struct CPseudo:
    int kind
    int flag
    long a
    long b


cdef struct CCompound:
    uint64_t tag_hash           # EMPTY_HASH: any tag (or see name_index)
    int name_index              # >= 0: a tag name that does not hash, in Program.names
    bint name_decoded           # compare that name with the decoded tag name
    bint never                  # can never match (e.g. [a^=""])
    bint svg_ok                 # the type selector's case fits SVG element names
    bint math_ok                # ... and MathML element names
    int attr_first
    int n_attrs
    int pseudo_first
    int n_pseudos


cdef struct Slot:
    uint64_t key                # tag hash, or FNV-1a of key_bytes
    const unsigned char* key_bytes  # NULL: the key is a tag hash
    Py_ssize_t key_len          # -1: empty slot
    int start                   # entry states: Program.entries[start : start + count]
    int count


cdef struct Table:
    Slot* slots
    Py_ssize_t mask             # capacity - 1 (a power of two)
    Py_ssize_t n
    uint64_t bloom[4]           # 256-bit Bloom filter of the keys


cdef class Program:
    cdef public list states             # per state: (compound, next_state, combinator, target, level)
    cdef public list levels             # nesting level of each state
    cdef public dict entry_by_hash      # tag hash -> [state id]: first compounds indexed by tag
    cdef public dict entry_by_name      # name bytes -> [state id]: tag names that do not hash
    cdef public list entry_any          # first compounds tried on every element
    cdef public dict entry_by_id        # id bytes -> [state id]: first compounds needing it
    cdef public dict entry_by_class     # class bytes -> [state id]
    cdef public dict entry_by_attr      # lower attribute name bytes -> [state id]
    cdef public dict entry_by_attrv     # lower name + NUL + first value byte -> [state id]
    cdef public dict entry_by_attrv_all # lower name -> [state id] of all its entry_by_attrv
    cdef public bint attr_index         # some first compound is indexed by an attribute
    cdef public int n_states
    cdef public int n_flags
    cdef public int n_rules
    cdef public int max_level
    cdef public bint nested             # some state has a nesting level > 0
    cdef public bint needs_frames       # combinators or structural pseudo-classes are used
    cdef public bint uses_nth_of_type
    cdef public bint nth_of_type_all    # some :nth-of-type() compound names no hashable tag
    cdef bint uses_nth_child            # :nth-child() or :first-child (child_count is read)
    cdef bint sibling_combinators       # some chain has + or ~
    cdef bint positional                # sibling combinators, :nth-child() or :nth-of-type()
    cdef bint of_counts                 # :nth-child(An+B of S) (of_flags is not empty)
    cdef list chain_compounds           # compile-time: every compound of the level-0 chains
    # For the rewriter's lazy mirror with frames (every selector):
    # these selectors' compounds, each alone as a selector, so that may_match on it says
    # whether an element can match any compound of any chain (the entry and the later ones);
    # None for other selectors.
    cdef Program compound_index
    cdef public str encoding
    cdef public bint utf8
    cdef public bint raw_values         # raw bytes compare as characters (UTF-8, 1-byte codecs)
    cdef public list names              # tag names that do not hash (bytes, or str if decoded)
    cdef public list attr_py            # per attribute test: (lower name, value, lower value)
    cdef list keep                      # bytes objects the C arrays point into
    cdef list compound_specs            # compile-time: per compound (spec dict)
    # C form
    cdef dict _shared                   # compile-time: (compound, combinator, level) -> state
    cdef public dict next_extra         # state -> [further next states] (shared first states)
    cdef CState* c_states
    cdef int* c_next
    cdef CCompound* c_compounds
    cdef CAttrTest* c_attrs
    cdef CPseudo* c_pseudos
    cdef int* entries
    cdef int* any_entries
    cdef int n_any
    cdef set of_flags                   # flags counted for :nth-child(An+B of S)
    cdef int* flag_counted              # per flag: 1 if in of_flags
    cdef uint64_t* nth_types            # tag hashes counted for :nth-of-type()
    cdef int n_nth_types
    cdef uint64_t hash_filter           # bit (hash & 63) set for every hash in by_hash
    cdef uint64_t scan_len_mask         # bit min(len, 63) of every attribute name the index
                                        # scan looks at (by_attr, by_attrv_all, id, class)
    cdef uint64_t attr_len_mask         # bit min(len, 63) set for every name in by_attr
    cdef uint64_t attrv_len_mask        # ... in by_attrv_all
    cdef uint64_t attrv_first[4]        # 256-bit set of the value bytes by_attrv keys end with
    cdef uint64_t id_len_mask           # ... id
    cdef uint64_t id_first[4]           # 256-bit set of the bytes an id value that could be (or
                                        # decode to) a key in by_id can start with
    cdef uint64_t class_len_mask        # ... class
    cdef uint64_t cls_hash_mask         # class_len_mask and the lengths of the .c tests
    cdef uint64_t nth_filter            # bit (hash & 63) set for every hash in nth_types
    cdef int simple_n                   # > 0: the program is that many "simple" states (see
                                        # Matcher._match_simple), matched by a loop over them
    cdef Table by_hash
    cdef Table by_name
    cdef Table by_id
    cdef Table by_class
    cdef Table by_attr
    cdef Table by_attrv
    cdef Table by_attrv_all

    cdef uint64_t name_lengths          # bit min(len, 63) of every name in by_name

    cdef Py_ssize_t _fill(self, Table* t, dict index, Py_ssize_t pos, bint hashes) except -1
    # Without frames, for the rewriter's lazy open-element mirror (end of matcher.pyx).
    cdef bint may_match_indexed(self, Lexer lx, TagRec* tag, uint64_t name_hash) noexcept
    cdef bint may_match_attributes(self, Lexer lx, TagRec* tag) noexcept

    cdef inline bint counts_type(self, uint64_t name_hash) noexcept:
        """Whether the elements named ``name_hash`` (INVALID_HASH: a name the hash cannot
        hold) are counted among their siblings of their type, for :nth-of-type()."""
        cdef Py_ssize_t i
        if not self.uses_nth_of_type:
            return False
        if self.nth_of_type_all:
            return True
        if name_hash == INVALID_HASH or not (
                self.nth_filter & ((<uint64_t>1) << (name_hash & 63))):
            return False
        for i in range(self.n_nth_types):
            if self.nth_types[i] == name_hash:
                return True
        return False

    cdef inline bint may_match(self, Lexer lx, TagRec* tag, uint64_t name_hash) noexcept:
        """Whether some first compound can be tried on the element of the start tag ``tag``,
        named ``name_hash`` (INVALID_HASH: its name is read from the lexer's window).  False:
        match() returns None for it (without frames, wherever it stands).  (Inline: most tags
        are answered by the one-word filter on the tag hashes, with no call.)"""
        if (name_hash != INVALID_HASH and not self.n_any and not (
                self.attr_index and tag.n_attrs) and not (
                self.hash_filter & ((<uint64_t>1) << (name_hash & 63)))):
            return False
        if self.simple_n and name_hash != INVALID_HASH:
            return True         # (match_ids decides it in a few instructions: _match_simple)
        return self.may_match_indexed(lx, tag, name_hash)


cdef struct CFrame:
    bint detached               # removed from the open-element stack, above elements still open
    bint light                  # nothing pending in it yet: only detached, child_count and
                                # desc_mask are set; its ranges (all empty) start where those
                                # of the next frame that is not light do (Matcher._materialize)
    Py_ssize_t child_count
    Py_ssize_t desc_start       # the states it added to the descendant stack start here
    Py_ssize_t dup_start        # the descendant states it made pending that an ancestor had
                                # pending already (``dup`` stack; see "Stack surgery")
    Py_ssize_t child_start      # states its element children continue from
    Py_ssize_t child_n
    Py_ssize_t adj_start        # states its next element child continues from
    Py_ssize_t adj_n
    Py_ssize_t gen_start        # states every later element child continues from
    Py_ssize_t gen_n
    Py_ssize_t type_start       # counts of its element children by type (TypeCount)
    Py_ssize_t type_n
    Py_ssize_t of_start         # counts of its element children by flag (pairs flag, count)
    Py_ssize_t of_n
    uint64_t child_mask         # the tag_bit of every state in its child range, ORed
    uint64_t adj_mask           # ... adj range
    uint64_t gen_mask           # ... gen range
    uint64_t child_cls          # the cls_key of every state in its child range, ORed
    uint64_t adj_cls            # ... adj range
    uint64_t gen_cls            # ... gen range
    uint64_t desc_mask          # ... the descendant states it and its ancestors added
    Py_ssize_t pend_top         # the innermost frame at or below it that has states pending
                                # (descendant, child or sibling) or counts by type (0: none),
                                # for the rewriter's lazy mirror


cdef struct TypeCount:
    uint64_t key                # tag hash, or the id of a name that does not hash
    int kind                    # 0: tag hash; 1: name id
    Py_ssize_t count


cdef struct IntStack:
    int* data
    Py_ssize_t n
    Py_ssize_t cap


@cython.final
cdef class SavedFrame:
    # A frame out of the open-element stack with its pending states (see "Stack surgery").
    cdef CFrame f
    cdef list staged                    # descendant states (owned, then duplicates)
    cdef list child
    cdef list adj
    cdef list gen
    cdef list ofs                       # (flag, count) pairs, flat
    cdef list types                     # (key, kind, count)


@cython.final
cdef class Matcher:
    cdef Program program                # may be replaced by the same selectors in another encoding
    cdef CFrame* frames                 # frames[0] is the document; frames[1:n_frames] are open
    cdef Py_ssize_t n_frames
    cdef Py_ssize_t frames_cap
    cdef Py_ssize_t n_detached
    cdef IntStack desc                  # active descendant states, each once (see desc_owner)
    cdef IntStack dup                   # descendant states an ancestor had pending already
    cdef IntStack child
    cdef IntStack adj
    cdef IntStack gen
    cdef IntStack ofs                   # (flag, count) pairs
    cdef TypeCount* types
    cdef Py_ssize_t types_n
    cdef Py_ssize_t types_cap
    cdef Py_ssize_t cap_states          # the per-state arrays below have this size
    cdef Py_ssize_t cap_flags
    cdef Py_ssize_t cap_rules
    cdef int* stamp                     # per state: the element serial it was last queued for
    cdef int* pend_stamp                # per state: the element serial it was last staged for
    cdef int* adj_pos                   # per state: where it was last pushed on ``adj`` (checked)
    cdef int* gen_pos                   # ... on ``gen``
    cdef int* desc_owner                # per state: the frame that made it a descendant state, -1
    cdef int* flag_stamp                # per flag: the element serial it was last set for
    cdef int* rule_stamp                # per rule: the element serial it last matched
    cdef int* cands                     # candidate states of the element being matched (level 0)
    cdef Py_ssize_t n_cands
    cdef int* hi                        # ... of nesting levels above 0
    cdef Py_ssize_t n_hi
    cdef int* matched
    cdef Py_ssize_t n_matched
    cdef int* stage_desc                # states the element's descendants will continue from
    cdef Py_ssize_t n_stage_desc
    cdef int* stage_child
    cdef Py_ssize_t n_stage_child
    cdef int* stage_dup
    cdef Py_ssize_t n_stage_dup
    cdef uint64_t stage_desc_mask
    cdef uint64_t stage_child_mask
    cdef uint64_t stage_child_cls
    cdef int serial
    cdef bint probing                   # probe() is matching: :nth-child(... of S) counts wait
    cdef bint probe_counted             # ... and it would have counted one
    cdef dict name_ids                  # names that do not hash -> id, for :nth-of-type()
    cdef int cls_serial                 # the element serial cls_bits are for
    cdef int cls_state                  # 0: no class attribute; 1: cls_bits valid; 2: unknown
    cdef uint64_t cls_bits              # 64-bit Bloom filter of the element's classes
    cdef list dvals                     # decoded attribute values of the current element
    cdef int* dstamp
    cdef Py_ssize_t dcap
    # the element being matched
    cdef const unsigned char* d         # the lexer's window, indexed by stream offset
    cdef TagRec* tag

    cpdef list match_start_tag(self, Lexer lx, int ns, bint implied, uint64_t name_hash,
                               bytes name)
    cdef list match(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name, int ns)
    cdef Py_ssize_t match_ids(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name,
                              int ns) except -1
    cdef int init(self, Program program) except -1
    cdef int _reserve(self) except -1
    cdef inline void _queue_entries(self, int start, int count) noexcept
    cdef inline void _queue_range(self, IntStack* st, Py_ssize_t start, Py_ssize_t n) noexcept
    cdef int _attribute_entries(self) except -1
    cdef bint _scan_classes(self, const unsigned char* v, Py_ssize_t vn, bint back, bint bits,
                            bint index) noexcept
    cdef inline void _class_token(self, const unsigned char* t, Py_ssize_t n, bint bits,
                                  bint index) noexcept
    cdef int _decoded_entries(self, Py_ssize_t i, bint is_id) except -1
    cdef int _count_type(self, CFrame* parent, uint64_t name_hash, bytes name) except -1
    cdef Py_ssize_t _type_count(self, CFrame* parent, uint64_t name_hash, bytes name) except -1
    cdef inline bint _rejects(self, const CState* st, uint64_t name_hash, bint no_attrs,
                              const CFrame* parent) noexcept
    cdef inline int _process(self, int s, uint64_t name_hash, bytes name, int ns) except -1
    cdef int _set_flag(self, int flag) except -1
    cdef inline int _pend(self, int combinator, int nxt) except -1
    cdef Py_ssize_t _of_count(self, CFrame* parent, int flag) noexcept
    cdef inline void _cut_ranges(self, CFrame* f) noexcept
    cdef inline void _drop(self) noexcept
    cdef int _test(self, const CCompound* c, uint64_t name_hash, bytes name, int ns) except -1
    cdef int _attr_test(self, const CAttrTest* t, int ns) except -1
    cdef void _class_bits(self) noexcept
    cdef inline bint _lacks_class(self, uint64_t bits) noexcept
    cdef inline bint _no_class(self, uint64_t cls, bint no_attrs) noexcept
    cdef int _decoded_test(self, const CAttrTest* t, Py_ssize_t i, int ns) except -1
    cdef str _decoded(self, Py_ssize_t i)
    cdef void _sort_matched(self) noexcept
    cpdef int push(self) except -1
    cdef int _push_staged(self, Py_ssize_t top) except -1
    cdef void _materialize(self, CFrame* f) noexcept
    cdef void _materialize_all(self) noexcept
    cpdef void pop(self) noexcept
    cpdef remove_at(self, Py_ssize_t index)
    # Changing the stack elsewhere than at its top (see "Stack surgery" in matcher.pyx); not on
    # the per-element path.
    cdef SavedFrame _save(self, Py_ssize_t j)
    cdef int _truncate(self, Py_ssize_t k) except -1
    cdef int _restore(self, SavedFrame sf) except -1
    cdef object detach_frame(self, Py_ssize_t i)
    cdef int attach_frame(self, object f) except -1
    cdef int insert_frame(self, Py_ssize_t i) except -1
    cdef int push_unknown(self) except -1
    cdef object sibling_state(self, Py_ssize_t i)
    cdef Py_ssize_t _match_simple(self, Lexer lx, TagRec* tag, uint64_t name_hash,
                                  int ns) noexcept
    cdef list match_uncounted(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name,
                              int ns, Py_ssize_t parent, object siblings)
    # For the rewriter's lazy open-element mirror (end of matcher.pyx).
    cdef inline bint may_match(self, Lexer lx, TagRec* tag, uint64_t name_hash) noexcept:
        """Program.may_match of the current program."""
        return self.program.may_match(lx, tag, name_hash)
    cdef int reopen(self, Py_ssize_t exact, Py_ssize_t n) except -1
    cdef int probe(self, Lexer lx, TagRec* tag, uint64_t name_hash, int ns, Py_ssize_t exact,
                   Py_ssize_t parent, Py_ssize_t parent_count) except -1
