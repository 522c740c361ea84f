# The open-element mirror of a rewriting sink (see elements.pyx); the rewriter's RewriteSink
# subclasses OpenElements and implements its hooks.
cimport cython
from libc.stdint cimport uint64_t

from htmlstream._engine.lexer cimport Lexer, TagRec
from htmlstream._engine.matcher cimport Matcher, Program
from htmlstream._engine.rules cimport Rules
from htmlstream._engine.sink cimport DocumentSink
from htmlstream._engine.treebuilder cimport TreeBuilderSimulator
from htmlstream._engine.treebuilder cimport OpenElement as OpenElement_


cdef class OpenElement:
    cdef object element                 # the Element of its own start tag, or None
    cdef list merged                    # the Elements of start tags merged into it, or None
    cdef list scoped_rules              # rules whose text/comment handlers it activated
    cdef bint removes_content
    cdef list captures                  # its Captures in progress (capture.pyx), or None


cdef class OpenElements(DocumentSink):
    cdef Rules rules
    cdef Lexer lx
    cdef TreeBuilderSimulator sim
    cdef Matcher matcher                # None without element rules
    cdef Py_ssize_t removing_depth      # depth of the element whose content is removed, or -1
    cdef dict states                    # depth -> OpenElement, for open elements with work left
                                        # (None until the first: most streams have none)
    cdef uint64_t* mirror               # ids of the open elements, as last synchronised
    cdef uint64_t* mirror_names         # their name hashes
    cdef Py_ssize_t depth               # how many there are
    cdef Py_ssize_t mirror_cap
    cdef uint64_t id_mark               # the simulator's last element id when last synchronised
    cdef object head_frame              # the matcher frame of <head> once it is closed
    cdef list head_rules                # the rules whose content handlers <head> put in force,
                                        # once it is closed (for what goes back into it)
    cdef object before_body             # <html>'s sibling states before its 2nd child
    cdef dict ghosts                    # depth -> matcher frames kept below that element for
                                        # closed ancestors (</form> with elements open in it),
                                        # or None
    cdef Py_ssize_t n_ghosts            # how many such frames there are
    cdef bint overflow_open             # beyond max_depth: a matcher frame for the parent of
                                        # the next element is open on top (see sync_overflow)
    cdef Py_ssize_t close_at            # where elements closed with no tag end
    cdef bint in_text_sync              # text_across_stack_change is handing text over
    cdef bint text_before_change        # ... the part before where it changed the stack
    cdef bint follow_text               # sync at text while the simulator reacts to text
    cdef bint keep_text                 # the subclass needs all text (text captures), whatever
                                        # the simulator reacts to (its elements have work left,
                                        # so valid > 0)
    cdef bint tag_taken                 # the current tag made, merged into or ended an element
    cdef set source_ids                 # remove_ignored: ids of the open elements made by a
                                        # start tag of the source (not implied, not clones)
    # --- the lazy mirror (see sync_stack) ---
    cdef bint lazy                      # the mirror may fall behind where nothing has work
    cdef bint stale                     # it did: tags were skipped since the last replay
    cdef Py_ssize_t valid               # the mirror's first entries that stay exact: every
                                        # element with work left is below this index
    cdef Py_ssize_t window_depth        # the simulator's depth after the last tag skipped
    cdef bint gate_ok                   # the tag gate may be opened (see set_gate)
    cdef bint lazy_frames               # lazy with matcher frames (Program.compound_index):
                                        # ``valid`` also covers every element whose frame has
                                        # states pending
    cdef bint sibling_states            # ... with + or ~: a skipped element must take no
                                        # adjacent-sibling state (_skip_tag_frames)
    cdef bint count_children            # ... with :nth-child()/:first-child: the child counts
                                        # of the elements of skipped tags are kept (kid_*)
    cdef bint positional                # ... with any of these or :nth-of-type() (see
                                        # _positional_unsafe)
    cdef Py_ssize_t* kid_counts         # count_children: by stack index, the element children
    cdef uint64_t* kid_ids              # so far of the element of that id and name (the
    cdef uint64_t* kid_names            # elements of skipped tags, as they were pushed, and
    cdef Py_ssize_t kid_cap             # those resync_counted takes frames from)
    # --- implied elements (Rewriter.on(..., implied=True)) ---
    cdef bint lazy_content              # lazy with content handlers: text splits from the
                                        # simulator, created elements never skipped
    cdef uint64_t ids_seen              # the simulator's next_id as last replayed or skipped
    cdef bint implied_rules             # some rule's element handlers run for implied
                                        # <html>, <head>, <body> (Rules.any_implied)
    cdef Py_ssize_t implied_at          # where the elements the current replay implies begin
    # --- a start tag matched in the skip test (_prematch): its result, for start_element ---
    cdef Py_ssize_t prematch_at         # the tag's start, or -1
    cdef int prematch_serial            # the matcher's serial right after that match
    cdef Py_ssize_t prematch_n          # how many rules it matched (ids in matcher.matched)

    cdef int init_elements(self, bint lazy) except -1
    @cython.final
    cdef int close_all(self) except -1
    @cython.final
    cdef int implied_at_end(self) except -1
    @cython.final
    cdef int mirror_reserve(self, Py_ssize_t n) except -1
    @cython.final
    cdef int mirror_push(self, uint64_t id, uint64_t name) except -1
    @cython.final
    cdef bint text_changed_stack(self) noexcept
    @cython.final
    cdef bint implied_head(self) noexcept
    @cython.final
    cdef void set_gate(self) noexcept
    @cython.final
    cdef int sync_stack(self, TagRec* tag) except -1
    @cython.final
    cdef int resync(self) except -1
    @cython.final
    cdef int resync_counted(self) except -1
    @cython.final
    cdef void use_frames(self, bint on) noexcept
    cdef int skip_positional(self, TagRec* tag) except -1     # (not final: see its call)
    @cython.final
    cdef int kid_reserve(self, Py_ssize_t n) except -1
    cdef Py_ssize_t kid_count(self, uint64_t id, Py_ssize_t q) noexcept  # (not final: _probe)
    @cython.final
    cdef int replay_stack(self, TagRec* tag) except -1
    @cython.final
    cdef int sync_overflow(self, TagRec* tag) except -1
    @cython.final
    cdef Py_ssize_t merged_parent(self, uint64_t name_hash) except -2
    @cython.final
    cdef Py_ssize_t merged_target(self, uint64_t name_hash) noexcept
    @cython.final
    cdef Py_ssize_t match_transients(self, Py_ssize_t t, Py_ssize_t upto) except -1
    @cython.final
    cdef bint stays(self, uint64_t id, Py_ssize_t k) noexcept
    @cython.final
    cdef Py_ssize_t sync_middle(self, TagRec* tag, Py_ssize_t k, uint64_t explicit_id,
                                uint64_t mark) except -1
    @cython.final
    cdef Py_ssize_t mirror_index(self, uint64_t id, Py_ssize_t p) noexcept
    @cython.final
    cdef Py_ssize_t frame_index(self, Py_ssize_t i) except -1
    @cython.final
    cdef bint kept_ancestor(self, uint64_t id) noexcept
    @cython.final
    cdef int shift_states(self, Py_ssize_t i, Py_ssize_t by) except -1
    @cython.final
    cdef int remove_element(self, Py_ssize_t i, TagRec* tag, bint explicit) except -1
    @cython.final
    cdef int end_in_place(self, Py_ssize_t i, TagRec* tag, bint explicit) except -1
    @cython.final
    cdef int insert_element(self, Py_ssize_t i, OpenElement_* e) except -1
    @cython.final
    cdef int close_element(self, TagRec* tag, bint explicit) except -1
    @cython.final
    cdef int end_body_or_html(self, TagRec* tag) except -1
    # hooks (see elements.pyx)
    cdef int start_element(self, TagRec* tag, int ns, bint pushed, Py_ssize_t depth,
                           bint merged) except -1
    cdef int start_in_head(self, TagRec* tag, int ns, bint pushed, Py_ssize_t depth) except -1
    cdef int start_implied(self, OpenElement_* e, Py_ssize_t depth) except -1
    cdef int start_clone(self, list scoped, Py_ssize_t depth) except -1
    cdef int head_transient(self, list matched, int ns) except -1
    cdef int finish_element(self, OpenElement state, Py_ssize_t depth, TagRec* tag,
                            bint explicit) except -1
    cdef int end_work(self, OpenElement state, Py_ssize_t depth, TagRec* tag,
                      bint explicit) except -1
    cdef int ignored_tag(self, TagRec* tag) except -1
    cdef int text_before_change_hook(self, bint before) except -1
    cdef int before_text_sync(self) except -1
    @cython.final
    cdef int text_across_stack_change(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                                      Py_ssize_t content_start, Py_ssize_t content_end,
                                      int text_type, bint last) except -1
