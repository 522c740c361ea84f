# The tree-builder simulator (see treebuilder.pyx and docs/design/tree-builder-feedback.md).
#
# It follows the WHATWG tree-construction rules far enough to give the lexer the feedback a
# browser's tree builder gives (text states, CDATA sections) and to know the namespace of every
# element and the stack of open elements as a browser has it.  It builds no tree: its whole state
# is the fixed-size arrays below and a few flags.
from libc.stdint cimport uint8_t, uint16_t, uint64_t

from htmlstream._engine.lexer cimport DoctypeRec, Feedback, Lexer, TagRec


# Default bound of the recorded stack of open elements (DEFAULT_MAX_DEPTH in Python).
cdef enum:
    MAX_DEPTH_DEFAULT = 1024


cpdef enum Namespace:
    NS_HTML = 0
    NS_SVG = 1
    NS_MATHML = 2


# OpenElement.flags
cpdef enum ElementFlag:
    E_SPECIAL = 1           # in the parser's "special" category (namespace-aware)
    E_SCOPE = 2             # ends the default "has an element in scope" search
    E_HTML_IP = 4           # an HTML integration point (SVG foreignObject/desc/title, annotation-xml)
    E_MATHML_TEXT_IP = 8    # a MathML text integration point (mi mo mn ms mtext)
    E_IMPLIED = 16          # created by the parser with no start tag of its own (html, head, body,
                            # tbody, tr, colgroup)
    E_CLONE = 32            # a re-created formatting element (reconstruction / adoption agency):
                            # its start tag is the one at ``offset``, which opened an earlier element


# Insertion modes (TreeBuilderSimulator.mode; the rewriter reads it to place comments and text
# the tree builder puts elsewhere than into the current node).
cdef enum Mode:
    M_INITIAL
    M_BEFORE_HTML
    M_BEFORE_HEAD
    M_IN_HEAD
    M_IN_HEAD_NOSCRIPT
    M_AFTER_HEAD
    M_IN_BODY
    M_TEXT
    M_IN_TABLE
    M_IN_CAPTION
    M_IN_COLUMN_GROUP
    M_IN_TABLE_BODY
    M_IN_ROW
    M_IN_CELL
    M_IN_TEMPLATE
    M_AFTER_BODY
    M_IN_FRAMESET
    M_AFTER_FRAMESET
    M_AFTER_AFTER_BODY
    M_AFTER_AFTER_FRAMESET


cdef struct OpenElement:
    uint64_t name           # taghash of the lower-cased local name; INVALID_HASH when it does not fit
    uint64_t xname          # when name == INVALID_HASH: 64-bit FNV-1a of the lower-cased name bytes
    uint64_t id             # unique per element (never 0)
    Py_ssize_t offset       # stream offset of the start tag's '<' (-1 for E_IMPLIED elements)
    uint16_t tid            # the tree builder's tag id (0 for names it has no rule for)
    uint8_t ns              # Namespace
    uint8_t flags           # ElementFlag bits


cdef struct Transient:
    uint64_t name           # taghash of the lower-cased local name
    Py_ssize_t pos          # the stack index it had: its parent is the entry below it
    uint8_t ns              # Namespace


cdef struct FormattingEntry:
    uint64_t id             # the element's id; 0 for a marker
    uint64_t attrs_hash     # for the "Noah's Ark" clause (raw attribute bytes, order-independent)
    OpenElement elem        # what to re-create the element from


cdef struct XnameSlot:
    uint64_t w0             # the name's raw bytes (up to 16, the rest zero)
    uint64_t w1
    uint64_t n              # its length (0: empty slot)
    uint64_t xname          # fnv_name of it


cdef struct NameCaches:
    uint64_t long_seen[256]     # xnames already in long_names (a cache: remember_long_name)
    XnameSlot xcache[16]        # names the 5-bit hash cannot hold, as last seen (xname_of)


# A tag name's 64-bit hash, as OpenElement.xname holds it (for names taghash cannot hold).
cdef uint64_t fnv_name(const unsigned char* p, Py_ssize_t n) noexcept nogil


cdef class TreeBuilderSimulator(Feedback):
    # --- settings ---
    cdef readonly bint scripting
    cdef readonly bint strict
    cdef public bint esi_tags           # <esi:include>/<esi:comment> have no content (esi_void)
    cdef readonly Py_ssize_t max_depth

    # --- the stack of open elements: stack[0 : depth]; stack[depth - 1] is the current node ---
    # Beyond max_depth elements are not recorded, only counted in ``overflow``.
    cdef OpenElement* stack
    cdef Py_ssize_t stack_cap           # entries allocated (grows up to max_depth: grow_stack)
    # (depth: recorded open elements; overflow: open elements beyond max_depth, counted only;
    # fields of Feedback, for the lexer's tag gate)
    cdef Py_ssize_t n_p                 # HTML <p> elements in stack[0 : depth] (kept by push_entry,
                                        # pop, truncate, remove_at, insert_at)
    cdef uint64_t next_id
    # Lowest stack index changed since the previous tag was handled, i.e. by the text before
    # the last tag and by the last tag itself (entries below it are the same elements as then).
    # (changed_from: a field of Feedback, for the lexer's tag gate)
    cdef bint changed_reset       # changed_from starts afresh at the next event
    cdef uint64_t event_id_mark   # next_id when changed_from last started afresh
    # Elements created and closed again since changed_from last started afresh, which the stack
    # never shows (the implied <head> before <body>, the <p> of a stray </p>, the <br> of
    # </br>), in the order they were created; beyond 4 they are not recorded.
    cdef Transient transients[4]
    cdef readonly Py_ssize_t n_transients
    # Ids of elements removed from the middle of the stack since changed_from last started
    # afresh that stay ancestors of the elements above them in the tree (</form>, an <a> that
    # a new <a> takes off the stack), unlike those the adoption agency moves elements out of.
    cdef uint64_t kept_ancestors[4]
    cdef readonly Py_ssize_t n_kept_ancestors
    # Beyond max_depth: the element the last start tag opened there (tid and namespace; tid -1
    # after an end tag), and whether the last start tag's element is certainly its child.
    cdef int overflow_last_tid
    cdef int overflow_last_ns
    cdef readonly bint overflow_parent_known
    # Stream offset of the character at which the last text changed the stack.
    cdef readonly Py_ssize_t text_change_at
    # Whether the last text (on_text) changed the stack (then at text_change_at).
    cdef readonly bint text_changed
    # The elements the last text popped before it changed the stack (a <head>, the <noscript>
    # in it, a <colgroup>): the text before text_change_at was in them (see units' inside()).
    cdef OpenElement text_popped[2]
    cdef Py_ssize_t n_text_popped

    # --- the list of active formatting elements ---
    cdef FormattingEntry* afe
    cdef Py_ssize_t afe_cap             # entries allocated (grows up to max_depth: grow_afe)
    cdef Py_ssize_t afe_len
    cdef bint afe_pending       # its last entry is an element that is not open (text re-opens it;
                                # up to date after a tag only where update_after needs it)

    # --- insertion modes ---
    cdef int mode
    cdef int orig_mode
    cdef uint8_t* template_modes        # max_depth entries, allocated at the first <template>
    cdef Py_ssize_t template_modes_len
    cdef readonly bint frameset_ok
    cdef readonly bint quirks
    cdef bint head_seen
    cdef OpenElement head_elem
    cdef uint64_t form_id
    cdef bint frameset_seen     # a <frameset> start tag was processed (strict mode)

    # --- the last start tag ---
    cdef readonly int last_namespace        # Namespace the element of the last start tag has
    cdef readonly bint last_pushed          # whether that element was pushed (has content)
    cdef readonly bint last_inserted        # whether it became an element at all (a start tag
                                            # the tree builder ignores or merges does not)
    cdef readonly bint last_in_head         # it was inserted into the <head> element, which is
                                            # not open ("after head": <meta>, <script>...)

    # --- the tag being handled ---
    cdef TagRec* t_tag
    cdef const unsigned char* t_data
    cdef Py_ssize_t t_base
    cdef int t_tid
    # (t_name and t_xname are written one by one and read by insert_html: apart, the compiler
    # cannot read them as one 16-byte word, which would wait for both stores)
    cdef uint64_t t_name
    cdef Py_ssize_t t_offset
    cdef uint64_t t_xname
    cdef bint t_self_closing
    cdef bint t_no_attrs          # synthetic token without attributes (</br> as <br>)
    cdef int pending_text_type

    cdef dict long_names          # xname -> name, for open_elements() (bounded), or None
    # Allocated, zeroed, at the first name the 5-bit hash cannot hold: most documents have none,
    # and 2.5 KiB in the object made opening a stream allocate and clear them every time.
    cdef NameCaches* name_caches

    cdef int on_tag_general(self, Lexer lx, TagRec* tag, int tid,
                            uint64_t xname) except -1   # (on_tag's slow path)
    cdef int init(self, bint scripting, bint strict, Py_ssize_t max_depth) except -1
    cdef void changes_seen(self) noexcept   # the consumer replayed the changes: start afresh
