# cython: language_level=3
"""The open elements of a rewriting stream: a mirror of the tree builder's stack, and replay.

The tree-builder simulator (treebuilder.pyx) keeps the open-element stack a browser would have;
the matcher (matcher.pyx) keeps a frame per open element.  ``OpenElements`` keeps the rewriter's
view of that stack: the ids and names of the open elements as last synchronised (``mirror``),
and, by depth, the state of those with work left (``states``: an ``OpenElement``).  After every
tag (and at text or the end of input when the simulator changed the stack), ``sync_stack``
replays what the simulator did: it closes the elements it popped, opens the ones it pushed, and
keeps the ones that stay open above a changed one (``sync_middle``: ``</form>``, the adoption
agency), with their matcher frames (``ghosts``) and states.

It knows when elements start and end, not what to do then: for that it calls its subclass's
hooks (``start_element``, ``start_in_head``, ``start_implied``, ``head_transient``,
``finish_element``, ``end_work``; the rewriter's handler dispatch, rewriter.pyx, implements them).
One element is one entry whether its start tag was in the source, implied, merged into it (a
second ``<body>``) or put back into ``<head>`` (``head_frame``, ``head_rules``).

Implied elements with element handlers (``implied_rules``: ``Rewriter.on(..., implied=True)``):
an implied ``<html>``, ``<head>`` or ``<body>`` begins at ``implied_at`` (the tag or the text
whose replay made it), a ``<head>`` made and closed at once is a transient of the simulator
(``head_transient``), and what the tree builder implies at the end of the input, which the
simulator does not simulate, is made there (``implied_at_end``).

The lazy mirror (``lazy``): when the matcher keeps nothing per open element, the mirror is only
kept exact below ``valid``, under which every element with work left is (see sync_stack).  With
matcher frames (``lazy_frames``: every selector but ``:nth-child(... of S)`` with ``S`` tried on
every element; Program.compound_index), ``valid`` also covers the innermost element whose frame
has states pending or counts by type or of ``S`` (``CFrame.pend_top``, sibling states
included): every frame above it has nothing pending.  A start tag is then skipped when its
element can match no compound of any chain, or, tried where it stands (Matcher.probe), matches
no rule and leaves nothing pending; the elements of skipped tags get frames with nothing pending
when the mirror catches up (resync: Matcher.reopen), also those that stay open across the
adoption agency (sync_middle).  With positions among siblings (``positional``:
skip_positional), an element that takes adjacent-sibling states or is counted by type or of
``S`` is replayed, and the elements of skipped tags are counted in their parents
(``count_children``: in the parent's frame when it is in the mirror, else by stack index in
``kid_counts``); a tag that moves elements below the top is not skipped then, so that the
mirror can be rebuilt exactly (resync_counted).  Tags that make elements of no tag of
their own, transient elements or ghosts, tags before a ``<body>`` exists and tags while a form
element pointer is set (``</form>`` keeps the form's frame as a ghost below the elements open in
it, which must be in the mirror), are never skipped, and text that changes the stack is
replayed there, as when exact.

The tag gate: without frames, content handlers or implied elements' handlers, the tags the skip
test would skip for being unmatched and above ``valid`` are left out by the lexer itself, with
no call (lexer.pxd; opened by set_gate after each replay, taken over by _take_gated).  With
``implied_rules``, tags that change the stack below index 2 or make transients are never
skipped, and text is followed while no ``<body>`` is open (it may imply one).  With content
handlers (``lazy_content``: text and comment handlers see the elements they are in), a tag
before a ``<body>`` exists or one that made elements of no tag of their own (implied, re-opened,
cloned: counted by the simulator's ids) is never skipped, and text splits where the simulator
says it changed the stack (``text_changed``), not where a stale mirror differs.
"""

# (uint64_t, TagRec, the simulator and its OpenElement_ entries: cimported in elements.pxd)
from libc.stdlib cimport free, realloc
from libc.string cimport memmove, memset

from htmlstream._engine.matcher cimport CFrame
from htmlstream._engine.constants cimport BODY_HASH, HEAD_HASH, HTML_HASH, IMAGE_HASH, IMG_HASH
from htmlstream._engine.taghash cimport INVALID_HASH
from htmlstream._engine.treebuilder cimport (
    E_CLONE,
    E_IMPLIED,
    M_AFTER_AFTER_FRAMESET,
    M_AFTER_FRAMESET,
)


cdef inline bint _before_body(TreeBuilderSimulator sim) noexcept:
    """Whether text may still imply <html>, <head> or <body> (no <body> or <frameset> yet)."""
    return sim.depth < 2 or sim.stack[1].name == HEAD_HASH


cdef inline void _take_gated(OpenElements self) noexcept:
    """Tags the tag gate left out since the sink last looked were skipped (as by _skip_tag,
    which they would have passed)."""
    if self.gate_ok and self.lx.gate_hit:
        self.lx.gate_hit = False
        self.stale = True
        self.window_depth = self.lx.gate_depth


cdef inline bint _skip_tag(OpenElements self, TagRec* tag) noexcept:
    """Lazy mirror: whether the tag can be left out of the mirror (it changes the stack only
    above ``valid`` and its element, if any, matches no rule).  (For OpenElements.on_tag: a
    function, not a method, so that the C compiler inlines it there.)"""
    cdef uint64_t h = tag.name_hash
    # (self.sim.x rather than a local: no reference counting on this path)
    if self.sim.changed_from < self.valid or self.sim.overflow > 0 or self.overflow_open:
        return False
    if self.implied_rules and (self.sim.changed_from < 2 or self.sim.n_transients > 0):
        return False                    # (it may imply <html>, <head> or <body>: at 0 and 1)
    if self.lazy_content and _content_skip_unsafe(self, tag):
        return False
    if tag.is_end:
        if (h == BODY_HASH or h == HTML_HASH) and self.states:
            return False                # (end_body_or_html)
    elif self.matcher.may_match(self.lx, tag, h) or (
            h == IMAGE_HASH and self.matcher.may_match(self.lx, tag, IMG_HASH)):
        if self.matcher.program.n_any or not _prematch(self, tag, h):
            return False            # (every element may match "*": no match in the skip test)
    self.stale = True
    self.window_depth = self.sim.depth
    if not self.lazy_content:       # (content handlers read all text)
        self.lx.want_text = (self.valid > 0 or (
            self.implied_rules and _before_body(self.sim))) and (
            self.sim.wants_text or self.keep_text)
    return True


cdef int _skip_tag_frames(OpenElements self, TagRec* tag) except -1:
    """_skip_tag with matcher frames (``lazy_frames``; 1: skip, -1: an error, no memory)."""
    cdef uint64_t h = tag.name_hash
    # (self.x.y rather than locals: no reference counting on this path)
    if self.sim.changed_from < self.valid or self.sim.overflow > 0 or self.overflow_open or \
            self.sim.n_transients > 0 or self.n_ghosts > 0:
        return False
    if self.sim.form_id != 0:
        # (while a form element pointer is set, </form> may remove the form from below open
        # elements, which stay in it: they must be in the mirror to keep its frame as a ghost)
        return False
    if self.implied_rules and self.sim.changed_from < 2:
        return False                    # (it may imply <html>, <head> or <body>: at 0 and 1)
    if _content_skip_unsafe(self, tag):
        return False                    # (elements of no tag of their own are matched)
    if tag.is_end:
        if (h == BODY_HASH or h == HTML_HASH) and self.states:
            return False                # (end_body_or_html)
    else:
        if self.matcher.program.compound_index.may_match(self.lx, tag, h) or (
                h == IMAGE_HASH and
                self.matcher.program.compound_index.may_match(self.lx, tag, IMG_HASH)):
            if not _probe(self, tag, h):
                return False
    if self.positional and not self.skip_positional(tag):
        return False                    # (a call through the vtable: not inlined here)
    self.stale = True
    self.window_depth = self.sim.depth
    if not self.lazy_content:
        # (text that re-opens formatting elements is replayed there, as when exact)
        self.lx.want_text = self.sim.wants_text or self.keep_text
    return True


cdef inline Py_ssize_t _new_element_index(TreeBuilderSimulator sim) noexcept:
    """The stack index of the element of the start tag just read (pushed on top, or a void
    element where it would be): its parent is the element below it."""
    return sim.depth - 1 if sim.last_pushed else sim.depth


cdef inline bint _positional_unsafe(OpenElements self, TagRec* tag) noexcept:
    """With positions among siblings read (``positional``), whether a tag the skip test
    would skip must be replayed for them: with child counts, a tag that moves elements below
    the top of the stack (kid_counts are by stack index); an element that takes
    adjacent-sibling states."""
    if self.count_children and self.sim.depth > self.sim.changed_from + (
            not tag.is_end and self.sim.last_inserted and self.sim.last_pushed):
        return True
    if tag.is_end or not self.sim.last_inserted:
        return False
    return self.sibling_states and _takes_adjacent(self)


cdef inline bint _takes_adjacent(OpenElements self) noexcept:
    """With sibling combinators, whether the element of the start tag just read is the next
    child of the element whose frame is the top exact one, with adjacent-sibling states pending
    there (``h1 + p``): the element takes them (they end at it), which the replay does.  (A
    parent above ``valid`` has nothing pending: CFrame.pend_top covers sibling states.)"""
    cdef Py_ssize_t pos = _new_element_index(self.sim)
    cdef CFrame* f
    if pos != self.valid:
        return False
    f = &self.matcher.frames[pos]
    return not f.light and f.adj_n > 0


cdef int _count_skipped(OpenElements self) except -1:
    """count_children: the element of the start tag just skipped is its parent's next child,
    counted in the parent's frame when the parent is in the mirror (its own frame), else in
    ``kid_counts``; when pushed, it has no children yet."""
    cdef TreeBuilderSimulator sim = self.sim
    cdef Py_ssize_t pos = _new_element_index(sim)
    cdef Py_ssize_t q = pos - 1
    cdef uint64_t id
    if q >= 0:
        id = sim.stack[q].id
        if q < self.depth and self.mirror[q] == id:
            self.matcher.frames[q + 1].child_count += 1
        elif q < self.kid_cap and self.kid_ids[q] == id:
            self.kid_counts[q] += 1
    if sim.last_pushed:
        if pos >= self.kid_cap:
            self.kid_reserve(pos + 1)
        self.kid_ids[pos] = sim.stack[pos].id
        self.kid_names[pos] = sim.stack[pos].name
        self.kid_counts[pos] = 0
    return 0


cdef inline bint _matchable_in_skip_test(OpenElements self, uint64_t h) noexcept:
    """Whether the skip test may match a start tag itself (_prematch, _probe): not names the
    hash cannot hold, ``<image>`` (matched as ``<img>``), ``<html>`` and ``<body>`` (merged tags
    are matched where they merge), nor before ``<body>`` exists."""
    return not (h == INVALID_HASH or h == IMAGE_HASH or h == HTML_HASH or h == BODY_HASH
                or self.sim.depth < 2)


cdef inline void _keep_prematch(OpenElements self, TagRec* tag, Py_ssize_t n) noexcept:
    """The skip test matched the start tag to ``n`` rules: start_element takes that match
    while the matcher has matched nothing else since (the matcher's serial)."""
    self.prematch_at = tag.start
    self.prematch_serial = self.matcher.serial
    self.prematch_n = n


cdef bint _prematch(OpenElements self, TagRec* tag, uint64_t h) noexcept:
    """Lazy mirror, a start tag that may match a rule (Matcher.may_match): whether it
    certainly matches none.  Without frames a match depends on the element alone, so the
    matcher decides it here, before any replay (a selector with an attribute value test,
    ``a[href*="mailto:" i]``, would otherwise replay every ``<a>``); the result is kept for
    start_element, which takes it while the matcher has matched nothing else since.  Not for
    names the hash cannot hold, ``<image>`` (matched as ``<img>``), ``<html>`` and ``<body>``
    (merged tags are matched where they merge), nor with selectors tried on every element."""
    cdef Matcher m = self.matcher
    cdef Py_ssize_t n, n_frames
    if not _matchable_in_skip_test(self, h):
        return False
    n_frames = m.n_frames
    m.n_frames = 2          # (not the root: only <html> is, at index 0)
    try:
        n = m.match_ids(self.lx, tag, h, None, self.sim.last_namespace)
    except BaseException:
        n = 1               # (no memory: replay, where the error is raised again)
    m.n_frames = n_frames
    if n == 0:
        return True
    _keep_prematch(self, tag, n)
    return False


cdef int _probe(OpenElements self, TagRec* tag, uint64_t h) except -1:
    """Lazy mirror with frames, a start tag whose element may match a compound of some chain
    (Program.compound_index): whether it certainly matches no rule and leaves nothing pending
    where it stands.  Its ancestors' frames are exact below ``valid`` and empty above it (the
    elements of skipped tags match nothing and leave nothing pending), so the matcher tries it
    as the child of an empty frame or of the frame at ``valid`` (Matcher.probe).  When it
    matches, the tag is replayed and the match is kept for start_element (as _prematch's):
    the frames its element is matched with there are the same.  Not for the names _prematch
    leaves out."""
    cdef Py_ssize_t pos
    cdef int r
    if not _matchable_in_skip_test(self, h):
        return False
    if not self.sim.last_inserted:
        return True             # (a start tag the tree builder ignores: no element, no match)
    pos = _new_element_index(self.sim)     # (its parent is the element below it: frame pos)
    r = self.matcher.probe(self.lx, tag, h, self.sim.last_namespace, self.valid, pos,
                           self.kid_count(self.sim.stack[pos - 1].id, pos - 1)
                           if self.count_children else -1)
    if r == 0:
        return True
    if r == 2:
        return False
    _keep_prematch(self, tag, self.matcher.n_matched)
    return False


cdef inline bint _content_skip_unsafe(OpenElements self, TagRec* tag) noexcept:
    """With content handlers (``lazy_content``), whether the tag must be replayed although it
    matches no rule: before a <body> exists (text there is split and dispatched by the
    mirror's depth), for an element the "after head" rule puts back into <head> (the head's
    content handlers are in force there), or when the simulator made elements this tag did
    not open (implied ones, re-opened formatting elements, clones of the adoption agency: they
    have no tag to be matched by, and a content handler may be in force for them).  Elements
    the adoption agency moves need no replay of their own: those with content handlers in
    force have states, below ``valid``, so the tag that moves them changes the stack there;
    a clone that takes an element's place keeps its content handlers (start_clone)."""
    cdef uint64_t created = self.sim.next_id - self.ids_seen
    self.ids_seen = self.sim.next_id
    if _before_body(self.sim) or self.sim.last_in_head:
        return True                 # (or put back into <head>: start_in_head)
    return created > (1 if (not tag.is_end and self.sim.last_pushed) else 0)


cdef inline Py_ssize_t _capacity(Py_ssize_t cap, Py_ssize_t n) noexcept:
    """The size an array of ``cap`` entries grows to for ``n``: doubled (64 at first)."""
    cap = cap * 2 if cap else 64
    while cap < n:
        cap *= 2
    return cap


cdef class OpenElement:
    """Rewriter state of an open element that has work left for its end, or content handlers
    in force.  One per element, however it was made: its start tag, implied, or with start
    tags merged into it later (a second <body>, or the first after the body was implied)."""


cdef class OpenElements(DocumentSink):
    """A document sink that keeps the open-element mirror (C methods only; see the module)."""

    def __cinit__(self):
        self.mirror = NULL
        self.mirror_names = NULL
        self.mirror_cap = 0
        self.kid_counts = NULL
        self.kid_ids = NULL
        self.kid_names = NULL
        self.kid_cap = 0

    cdef int init_elements(self, bint lazy) except -1:
        """No element open (a new document).  ``lazy``: the mirror may fall behind."""
        self.removing_depth = -1
        self.states = None
        self.source_ids = set() if self.remove_ignored else None
        self.depth = 0
        self.id_mark = 0
        self.head_frame = None
        self.head_rules = None
        self.before_body = None
        self.ghosts = None
        self.n_ghosts = 0
        self.overflow_open = False
        self.close_at = 0
        self.lazy = lazy
        self.gate_ok = False                # (attach_to: once the rules are known)
        self.use_frames(lazy and self.matcher is not None and self.matcher.program.needs_frames)
        self.ids_seen = 0
        self.stale = False
        self.valid = 0
        self.window_depth = 0
        self.keep_text = False
        self.implied_at = 0
        self.prematch_at = -1
        return 0

    cdef int close_all(self) except -1:
        """The end of input: replay the last changes, then close every open element there."""
        self.close_at = self.lx.stream_len
        self.sync_stack(NULL)
        if self.implied_rules:
            self.implied_at_end()
        while self.depth:
            self.close_element(NULL, False)
        return 0

    cdef int implied_at_end(self) except -1:
        """What the tree builder implies at the end of the input (the simulator does not
        simulate it): with no <body> or <frameset> yet, an <html>, a <head> made and closed at
        once, and a <body>, as needed, after the elements open in the head (a <template>)
        end."""
        cdef TreeBuilderSimulator sim = self.sim
        cdef OpenElement_ e
        cdef list matched
        if sim.depth >= 2 and sim.stack[1].name != HEAD_HASH:
            return 0                # (a <body> or <frameset>)
        if sim.mode == M_AFTER_FRAMESET or sim.mode == M_AFTER_AFTER_FRAMESET or \
                sim.overflow > 0 or self.overflow_open:
            return 0
        self.implied_at = self.close_at
        e.id = 0
        e.offset = -1
        e.tid = 0
        e.ns = 0
        e.flags = E_IMPLIED
        if self.depth == 0:
            e.name = e.xname = HTML_HASH
            self.mirror_push(0, HTML_HASH)
            self.start_implied(&e, 0)
        if not sim.head_seen:
            matched = self.matcher.match(self.lx, NULL, HEAD_HASH, None, 0)
            if matched is not None:
                self.head_transient(matched, 0)
        while self.depth > 1:
            self.close_element(NULL, False)
        e.name = e.xname = BODY_HASH
        self.mirror_push(0, BODY_HASH)
        self.start_implied(&e, 1)
        return 0

    def __dealloc__(self):
        if self.mirror != NULL:
            free(self.mirror)
        if self.mirror_names != NULL:
            free(self.mirror_names)
        if self.kid_counts != NULL:
            free(self.kid_counts)
        if self.kid_ids != NULL:
            free(self.kid_ids)
        if self.kid_names != NULL:
            free(self.kid_names)

    # ------------------------------------------------------------------ the mirror

    cdef int mirror_reserve(self, Py_ssize_t n) except -1:
        """Room for n entries in the mirror."""
        cdef Py_ssize_t cap = _capacity(self.mirror_cap, n)
        self.mirror = <uint64_t*>realloc(self.mirror, cap * sizeof(uint64_t))
        self.mirror_names = <uint64_t*>realloc(self.mirror_names, cap * sizeof(uint64_t))
        if self.mirror == NULL or self.mirror_names == NULL:
            raise MemoryError()
        self.mirror_cap = cap
        return 0

    cdef void use_frames(self, bint on) noexcept:
        """Whether the mirror is lazy with matcher frames (``lazy_frames``), and with it what
        positions among siblings need (``sibling_states``, ``count_children``,
        ``positional``)."""
        cdef Program program
        self.lazy_frames = on
        self.sibling_states = self.count_children = self.positional = False
        if on:
            program = self.matcher.program
            self.sibling_states = program.sibling_combinators
            self.count_children = program.uses_nth_child
            self.positional = program.positional

    cdef int skip_positional(self, TagRec* tag) except -1:
        """_skip_tag_frames with ``positional``, a tag it would skip: whether it may, for what
        positions need (_positional_unsafe); if so, the child counts of its element and its
        parent (_count_skipped).  (An element counted by type never gets here: Matcher.probe
        does not try it.)"""
        if _positional_unsafe(self, tag):
            return False
        if self.count_children and not tag.is_end and self.sim.last_inserted:
            _count_skipped(self)
        return True

    cdef int kid_reserve(self, Py_ssize_t n) except -1:
        """Room for n entries in kid_counts, kid_ids and kid_names (new ids zero: none)."""
        cdef Py_ssize_t cap = _capacity(self.kid_cap, n)
        self.kid_counts = <Py_ssize_t*>realloc(self.kid_counts, cap * sizeof(Py_ssize_t))
        self.kid_ids = <uint64_t*>realloc(self.kid_ids, cap * sizeof(uint64_t))
        self.kid_names = <uint64_t*>realloc(self.kid_names, cap * sizeof(uint64_t))
        if self.kid_counts == NULL or self.kid_ids == NULL or self.kid_names == NULL:
            raise MemoryError()
        memset(&self.kid_ids[self.kid_cap], 0, (cap - self.kid_cap) * sizeof(uint64_t))
        self.kid_cap = cap
        return 0

    cdef Py_ssize_t kid_count(self, uint64_t id, Py_ssize_t q) noexcept:
        """count_children: the element children so far of open element ``id``, at stack
        index ``q``: its own frame's count when it is in the mirror there, else its kid_counts
        entry (0 when it has none: cannot be)."""
        if q < self.depth and self.mirror[q] == id:
            return self.matcher.frames[q + 1].child_count
        if q < self.kid_cap and self.kid_ids[q] == id:
            return self.kid_counts[q]
        return 0

    cdef int mirror_push(self, uint64_t id, uint64_t name) except -1:
        if self.depth == self.mirror_cap:
            self.mirror_reserve(self.depth + 1)
        self.mirror[self.depth] = id
        self.mirror_names[self.depth] = name
        self.depth += 1
        return 0

    # ------------------------------------------------------------------ replay

    cdef int on_tag(self, Lexer lx, TagRec* tag) except -1:
        if self.lazy:
            _take_gated(self)
            if self.lazy_frames:
                if _skip_tag_frames(self, tag):
                    return 0
            elif _skip_tag(self, tag):
                return 0
        elif self.matcher is None and not self.remove_ignored:
            # No element rules: no element can have work at its end, nothing to mirror.
            return 0
        self.tag_taken = False
        self.sync_stack(tag)
        if self.remove_ignored and not self.tag_taken:
            self.ignored_tag(tag)
        if self.follow_text:
            lx.want_text = self.sim.wants_text or self.keep_text
        return 0

    cdef bint text_changed_stack(self) noexcept:
        """Whether the text the simulator just read changed the stack (an implied <html>,
        <head> or <body>, <head> closed, formatting elements re-opened)."""
        cdef TreeBuilderSimulator sim = self.sim
        _take_gated(self)
        if self.stale:
            # (lazy_content: the simulator says whether this text changed the stack; the
            # stale mirror cannot)
            return sim.changed_from < self.valid or (
                self.implied_rules and sim.changed_from < 2) or (
                (self.lazy_content or self.lazy_frames) and sim.text_changed)
        return sim.changed_from < self.depth or sim.depth != self.depth or sim.n_transients > 0

    cdef bint implied_head(self) noexcept:
        """Whether the last changes include a <head> that was created and closed again."""
        cdef TreeBuilderSimulator sim = self.sim
        cdef Py_ssize_t t
        for t in range(sim.n_transients):
            if sim.transients[t].name == HEAD_HASH and sim.transients[t].pos == 1:
                return True
        return False

    cdef int sync_stack(self, TagRec* tag) except -1:
        """Replay what the simulator did to the open-element stack since the last replay.

        The lazy mirror: when the matcher keeps nothing per open element (``lazy``), the mirror
        is only kept exact below ``valid``, under which every element with work left at its end
        is (its state, a content removal).  A tag that changes the stack only at or above
        ``valid`` and whose element matches no rule (Matcher.may_match) is skipped (_skip_tag):
        nothing can happen for it.  The next replay first rebuilds the mirror as the stack was
        before the current changes: exact below ``valid``, the entries the current changes left
        alone from the simulator's stack, and one placeholder (id 0, no name) for the elements
        closed since then, none of which has work at its end.  With matcher frames
        (``lazy_frames``) ``valid`` also covers the innermost frame with states pending, the
        skip test tries an element that may match a compound where it stands (_probe), and the
        elements above ``valid`` get empty frames (resync)."""
        cdef Py_ssize_t f
        _take_gated(self)
        if self.stale:
            self.resync()
        self.replay_stack(tag)
        self.ids_seen = self.sim.next_id    # (lazy_content: what was made, replayed)
        if self.lazy:
            self.valid = 0
            if self.states:
                for d in self.states:
                    if <Py_ssize_t>d >= self.valid:
                        self.valid = <Py_ssize_t>d + 1
            if self.lazy_frames:
                # (frame f is that of the element at index f - 1, with no ghosts: with them
                # no tag is skipped)
                f = self.matcher.frames[self.matcher.n_frames - 1].pend_top
                if f > self.valid:
                    self.valid = f if f <= self.depth else self.depth
            if self.gate_ok:
                self.set_gate()
        return 0

    cdef void set_gate(self) noexcept:
        """Open the lexer's tag gate (lexer.pxd), which leaves out tags _skip_tag would skip:
        those that change the stack only above ``valid`` and are not matched (what may be is
        told by the matcher's one-word filter on tag-name hashes, with <image> matched as
        <img>, and, when attributes index selectors, by having attributes at all).  Only with
        ``gate_ok`` (set by the subclass: no content handlers or implied elements' handlers,
        whose text and elements need the mirror; no selector tried on every element), and not
        beyond max_depth."""
        cdef Lexer lx = self.lx
        cdef uint64_t names
        if self.overflow_open or lx.feedback is not self.sim:
            lx.tag_gate = False
            return
        lx.gate_valid = self.valid
        lx.gate_keep_text = self.keep_text
        names = self.matcher.program.hash_filter
        if names & ((<uint64_t>1) << (IMG_HASH & 63)):
            names |= (<uint64_t>1) << (IMAGE_HASH & 63)
        lx.gate_names = names
        lx.gate_attrs = self.matcher.program.attr_index
        lx.tag_gate = True

    cdef int resync(self) except -1:
        """Rebuild the mirror after skipped tags (see sync_stack)."""
        cdef TreeBuilderSimulator sim = self.sim
        cdef Py_ssize_t c = sim.changed_from, j
        if self.count_children:
            return self.resync_counted()
        self.depth = self.valid
        if c > self.valid:
            if c > self.mirror_cap:
                self.mirror_reserve(c)
            for j in range(self.valid, c):
                self.mirror[j] = sim.stack[j].id
                self.mirror_names[j] = sim.stack[j].name
            self.depth = c
        if c >= self.valid and not self.lazy_frames:
            self.id_mark = 0                # (nothing above c has work: all of it is new)
        if self.window_depth > self.depth:
            self.mirror_push(0, 0)
        if self.ghosts:
            self.ghosts = None
            self.n_ghosts = 0
        self.matcher.reopen(self.valid, self.depth)
        self.stale = False
        return 0

    cdef int resync_counted(self) except -1:
        """resync() with ``count_children``: every element of a skipped tag is in kid_ids, by
        stack index, as it was pushed (no tag that moves elements is skipped then), so the
        mirror is rebuilt as the stack was before the current changes, exactly: up to the depth
        after the last skipped tag, an element of a skipped tag made since the last replay
        where there is one, else the element the mirror had there.  The replay then works as
        with an exact mirror (a clone of the adoption agency replaces an element of a skipped
        tag as it would); the frames above ``valid`` have nothing pending, and their child
        counts are their elements'."""
        cdef Py_ssize_t j, n = self.window_depth
        if n > self.kid_cap:
            self.kid_reserve(n)
        if n > self.mirror_cap:
            self.mirror_reserve(n)
        for j in range(self.valid, n):
            if self.kid_ids[j] > self.id_mark:
                self.mirror[j] = self.kid_ids[j]
                self.mirror_names[j] = self.kid_names[j]
            elif j < self.depth:
                self.kid_ids[j] = self.mirror[j]
                self.kid_counts[j] = self.matcher.frames[j + 1].child_count
            else:                   # (cannot be: something was pushed there since)
                self.kid_ids[j] = self.mirror[j] = self.mirror_names[j] = 0
                self.kid_counts[j] = 0
        self.depth = n
        self.matcher.reopen(self.valid, n)
        for j in range(self.valid, n):
            self.matcher.frames[j + 1].child_count = self.kid_counts[j]
        self.stale = False
        return 0

    cdef int replay_stack(self, TagRec* tag) except -1:
        """Replay what the simulator did to the open-element stack for this tag (or, with no
        tag, at ``close_at``: a text, the end of input): close the elements it popped, open the
        ones it pushed, match the ones it created and closed at once.  Elements that stay
        open above a changed one stay as they are (sync_middle)."""
        cdef TreeBuilderSimulator sim = self.sim
        cdef Py_ssize_t k = sim.changed_from
        cdef Py_ssize_t n_new = sim.depth
        cdef Py_ssize_t j, t = 0
        cdef uint64_t explicit_id = 0
        cdef OpenElement_* e
        cdef bint handled = tag == NULL or tag.is_end
        cdef bint middle = False, slow
        cdef uint64_t mark = self.id_mark
        if self.lazy_frames:
            # (what was open before this tag or text, including the elements of skipped tags
            # a stale mirror does not hold: see sync_middle)
            mark = sim.event_id_mark
        self.implied_at = tag.start if tag != NULL else self.close_at
        if self.overflow_open:
            if sim.overflow > 0 and tag != NULL:
                return self.sync_overflow(tag)
            self.overflow_open = False
            self.matcher.pop()
        if k > self.depth:
            k = self.depth
        if k > n_new:
            k = n_new
        while k < self.depth and k < n_new and self.mirror[k] == sim.stack[k].id:
            k += 1
        if k < self.depth:
            # (only an element closed here can have an element that stays open above it)
            for j in range(k, n_new):
                if sim.stack[j].id <= mark:
                    middle = True   # an element that was open stays open above changed ones
                    break
        self.id_mark = sim.next_id
        if tag != NULL and tag.is_end and self.depth == k and self.states and (
                tag.name_hash == BODY_HASH or tag.name_hash == HTML_HASH):
            self.end_body_or_html(tag)
        if tag != NULL and tag.is_end and self.depth > k:
            # The end tag itself belongs to the outermost ended element of its name.
            for j in range(k, self.depth):
                if self.mirror_names[j] == tag.name_hash and not (
                        middle and self.stays(self.mirror[j], k)):
                    explicit_id = self.mirror[j]
                    # (remove_ignored: the end tag of an element with no tag of its own, an
                    # implied or re-opened one, is as ignored as its start)
                    self.tag_taken = self.source_ids is None or explicit_id in self.source_ids
                    break
        if middle:
            k = self.sync_middle(tag, k, explicit_id, mark)
        while self.depth > k:
            self.close_element(tag, self.mirror[self.depth - 1] == explicit_id)
        slow = k <= 1 or sim.n_transients > 0
        for j in range(k, n_new):
            if slow:
                if sim.n_transients:
                    t = self.match_transients(t, j)
                if j == 1 and self.matcher is not None:
                    # for a <body> tag merged into this element later
                    self.before_body = self.matcher.sibling_state(1)
            e = &sim.stack[j]
            if not handled and e.offset == tag.start and not (e.flags & E_CLONE):
                handled = True
                self.tag_taken = True
                if self.source_ids is not None:
                    self.source_ids.add(e.id)
                self.mirror_push(e.id, e.name)
                if sim.last_in_head:
                    self.start_in_head(tag, e.ns, True, j)
                else:
                    self.start_element(tag, e.ns, True, j, False)
            else:
                self.mirror_push(e.id, e.name)
                if self.matcher is not None:
                    if self.rules.any_scoped or self.implied_rules:
                        self.start_implied(e, j)
                    else:
                        self.matcher.match(self.lx, NULL, e.name, None, e.ns)
                        self.matcher.push()
        if sim.n_transients:
            self.match_transients(t, n_new)
            sim.changes_seen()
        if not handled and (sim.last_inserted or tag.name_hash == BODY_HASH
                            or tag.name_hash == HTML_HASH):
            # (a start tag the tree builder ignores is no element: it does not count as a
            # sibling and gets no handlers; <html> and <body> merged into the open ones get
            # the handlers they match, but do not count as siblings either)
            self.tag_taken = True
            if sim.overflow > 0 and sim.last_inserted and self.matcher is not None:
                # the first element beyond max_depth: matched as a child of the deepest
                # recorded one (no end-tag work, as for all elements beyond the bound)
                self.start_element(tag, sim.last_namespace, False, n_new, False)
                if sim.last_pushed:
                    self.matcher.push()
                    self.overflow_open = True
            elif sim.last_in_head:
                self.start_in_head(tag, sim.last_namespace, False, n_new)
            else:
                self.start_element(tag, sim.last_namespace, False, n_new, not sim.last_inserted)
        return 0

    cdef int sync_overflow(self, TagRec* tag) except -1:
        """A tag beyond max_depth, where the simulator only counts elements.  The matcher keeps
        one frame there: the element the last start tag opened, whose child the next element
        is when the simulator is sure of it (``overflow_parent_known``), else a parent that is
        not known (no child, sibling or :nth-* selector matches its children).  Ancestors beyond
        the bound other than that one are forgotten: they match nothing, so nothing is matched
        through a wrong parent."""
        cdef TreeBuilderSimulator sim = self.sim
        if tag.is_end:
            self.matcher.pop()
            self.matcher.push_unknown()
            return 0
        if not sim.overflow_parent_known:
            self.matcher.pop()
            self.matcher.push_unknown()
        self.start_element(tag, sim.last_namespace, False, self.depth, False)
        if sim.last_pushed:
            self.matcher.push()
            self.matcher.detach_frame(self.matcher.n_frames - 2)
        return 0

    cdef Py_ssize_t merged_parent(self, uint64_t name_hash) except -2:
        """The matcher frame of the parent of the open element a merged <html> or <body> start
        tag merges into (-1: none is open, the tag is matched where it stands)."""
        if self.sim.template_modes_len:
            return -1       # (ignored, not merged, with a <template> open)
        if name_hash == HTML_HASH and self.depth > 0 and self.mirror_names[0] == HTML_HASH:
            return 0
        if name_hash == BODY_HASH and self.depth > 1 and self.mirror_names[1] == BODY_HASH:
            return self.frame_index(0)
        return -1

    cdef Py_ssize_t merged_target(self, uint64_t name_hash) noexcept:
        """The index of the open element a merged <html> or <body> start tag merges into (-1:
        none: the tag is handled as an element with no content).  With a ``<template>`` open
        the tree builder ignores both tags: they merge into nothing."""
        if self.sim.template_modes_len:
            return -1
        if name_hash == HTML_HASH and self.depth > 0 and self.mirror_names[0] == HTML_HASH:
            return 0
        if name_hash == BODY_HASH and self.depth > 1 and self.mirror_names[1] == BODY_HASH:
            return 1
        return -1

    cdef Py_ssize_t match_transients(self, Py_ssize_t t, Py_ssize_t upto) except -1:
        """Match the simulator's transient elements from ``t`` on that sat at stack index
        ``upto`` or below (children of the entry below them): they count as siblings, but have
        no tag of their own, so no handler runs for them.  Returns the next one."""
        cdef TreeBuilderSimulator sim = self.sim
        cdef list matched
        while t < sim.n_transients and sim.transients[t].pos <= upto:
            if self.matcher is not None:
                matched = self.matcher.match(self.lx, NULL, sim.transients[t].name, None,
                                             sim.transients[t].ns)
                if sim.transients[t].name == HEAD_HASH and sim.transients[t].pos == 1:
                    if matched is not None and self.rules.any_scoped:
                        self.head_rules = [
                            r for r in matched
                            if self.rules.text_handlers[r] or self.rules.comment_handlers[r]]
                    # kept for what the "after head" rule puts into it later
                    self.matcher.push()
                    self.head_frame = self.matcher.detach_frame(self.frame_index(0) + 1)
                    if matched is not None and self.implied_rules:
                        self.head_transient(matched, sim.transients[t].ns)
            t += 1
        return t

    cdef bint stays(self, uint64_t id, Py_ssize_t k) noexcept:
        """Whether the element ``id`` is (still) in the simulator's stack above index k."""
        cdef TreeBuilderSimulator sim = self.sim
        cdef Py_ssize_t j
        for j in range(k, sim.depth):
            if sim.stack[j].id == id:
                return True
        return False

    cdef Py_ssize_t sync_middle(self, TagRec* tag, Py_ssize_t k, uint64_t explicit_id,
                                uint64_t mark) except -1:
        """The tree builder changed the stack below elements that stay open (``</form>`` while
        elements inside the form are open; the adoption agency removing a formatting element
        and the nodes it skips below a furthest block, or replacing them with clones): replay
        the changes from index k up to the last element that stays, keeping that one and the
        others that stay as they are (Element state, matcher frame and sibling state).
        Elements end innermost first, as at any tag.  Returns the index from which the rest is
        replayed as pushes."""
        cdef TreeBuilderSimulator sim = self.sim
        cdef Py_ssize_t last = -1, j, q, r, i, p, bound
        cdef OpenElement_* e
        for j in range(k, sim.depth):
            if sim.stack[j].id <= mark:
                last = j
        # The plan.  Old entries (mirror[k:]): 1 stays, 2 is replaced in place by a clone made
        # from it (which keeps its matcher frame), 0 ends.  New entries (stack[k:last + 1]):
        # the old entry they continue, or -1 for a new element to insert.
        actions = [0] * (self.depth - k)
        sources = [-1] * (last + 1 - k)
        p = k
        for j in range(k, last + 1):
            q = self.mirror_index(sim.stack[j].id, p)
            if q >= 0:
                actions[q - k] = 1
                sources[j - k] = q
                p = q + 1
                continue
            if self.lazy_frames and sim.stack[j].id <= mark:
                # An element of a skipped tag (lazy mirror): not in the mirror, with nothing
                # pending; it stays, with an empty frame (inserted).  Every element that stays
                # above it was above it before, so it is not in the mirror either.
                p = self.depth
                continue
            # a clone below an element that stays: it replaces the element of its name it was
            # made from, if one ends between here and the next element that stays
            e = &sim.stack[j]
            bound = self.depth
            for i in range(j + 1, last + 1):
                r = self.mirror_index(sim.stack[i].id, p)
                if r >= 0:
                    bound = r
                    break
            for i in range(p, bound):
                if self.mirror_names[i] == e.name and not self.stays(self.mirror[i], k):
                    actions[i - k] = 2
                    sources[j - k] = i
                    p = i + 1
                    break
        # Ends, innermost first.
        i = self.depth - 1
        while i >= k:
            if actions[i - k] == 0:
                self.remove_element(i, tag, self.mirror[i] == explicit_id)
            elif actions[i - k] == 2:
                self.end_in_place(i, tag, self.mirror[i] == explicit_id)
            i -= 1
        # What is left are the entries that continue, in order: insert the new ones.
        for j in range(k, last + 1):
            if sources[j - k] < 0:
                self.insert_element(j, &sim.stack[j])
            else:
                self.mirror[j] = sim.stack[j].id
        return last + 1

    cdef Py_ssize_t mirror_index(self, uint64_t id, Py_ssize_t p) noexcept:
        cdef Py_ssize_t i
        for i in range(p, self.depth):
            if self.mirror[i] == id:
                return i
        return -1

    cdef Py_ssize_t frame_index(self, Py_ssize_t i) except -1:
        """The matcher frame of the element at index i (0: the document, with i = -1)."""
        cdef Py_ssize_t f = i + 1
        if self.ghosts:
            for d, n in self.ghosts.items():
                if d <= i:
                    f += n
        return f

    cdef bint kept_ancestor(self, uint64_t id) noexcept:
        cdef TreeBuilderSimulator sim = self.sim
        cdef Py_ssize_t j
        for j in range(sim.n_kept_ancestors):
            if sim.kept_ancestors[j] == id:
                return True
        return False

    cdef int shift_states(self, Py_ssize_t i, Py_ssize_t by) except -1:
        """Element states (and the content removal, the ghost frames) at index i and above
        move by ``by``."""
        if self.removing_depth >= i:
            self.removing_depth += by
        if self.states:
            self.states = {(d + by if d >= i else d): st for d, st in self.states.items()}
        if self.ghosts:
            self.ghosts = {(d + by if d >= i else d): n for d, n in self.ghosts.items()}
        return 0

    cdef int remove_element(self, Py_ssize_t i, TagRec* tag, bint explicit) except -1:
        """The element at index i ends here; the ones above it stay open.  If it stays their
        ancestor in the tree (``</form>``), its matcher frame stays too, as a ghost below the
        element above it, until that one closes."""
        cdef OpenElement state = None
        cdef bint kept = i + 1 < self.depth and self.kept_ancestor(self.mirror[i])
        cdef Py_ssize_t n_ghosts = 0, f, g
        if self.source_ids:
            self.source_ids.discard(self.mirror[i])
        if self.ghosts:
            n_ghosts = self.ghosts.pop(i, 0)
        if self.matcher is not None and not kept:
            f = self.frame_index(i)     # its own ghosts (popped above) are not counted
            for g in range(n_ghosts + 1):
                self.matcher.detach_frame(f)    # its ghosts, then its own frame
            self.n_ghosts -= n_ghosts
        memmove(&self.mirror[i], &self.mirror[i + 1], (self.depth - i - 1) * sizeof(uint64_t))
        memmove(&self.mirror_names[i], &self.mirror_names[i + 1],
                (self.depth - i - 1) * sizeof(uint64_t))
        self.depth -= 1
        if self.states:
            state = self.states.pop(i, None)
        if state is not None:
            self.finish_element(state, i, tag, explicit)
        self.shift_states(i + 1, -1)
        if kept and self.matcher is not None:
            if self.ghosts is None:
                self.ghosts = {}
            self.ghosts[i] = self.ghosts.get(i, 0) + n_ghosts + 1
            self.n_ghosts += 1
        return 0

    cdef int end_in_place(self, Py_ssize_t i, TagRec* tag, bint explicit) except -1:
        """The element at index i ends here, and a clone of it takes its place."""
        cdef OpenElement state = None
        if self.source_ids:
            self.source_ids.discard(self.mirror[i])
        cdef list scoped
        if self.states:
            state = self.states.pop(i, None)
        if state is not None:
            scoped = state.scoped_rules
            self.finish_element(state, i, tag, explicit)
            if scoped:
                # the clone is matched by the same rules (same name and attributes, same
                # frame): their content handlers stay in force in it
                self.start_clone(scoped, i)
        return 0

    cdef int insert_element(self, Py_ssize_t i, OpenElement_* e) except -1:
        """An element the tree builder inserted at index i, below elements that stay open."""
        cdef Py_ssize_t f = self.frame_index(i - 1) + 1
        self.mirror_push(0, 0)
        memmove(&self.mirror[i + 1], &self.mirror[i], (self.depth - 1 - i) * sizeof(uint64_t))
        memmove(&self.mirror_names[i + 1], &self.mirror_names[i],
                (self.depth - 1 - i) * sizeof(uint64_t))
        self.mirror[i] = e.id
        self.mirror_names[i] = e.name
        self.shift_states(i, 1)
        if self.matcher is not None:
            self.matcher.insert_frame(f)
        return 0

    # ------------------------------------------------------------------ ends

    cdef int close_element(self, TagRec* tag, bint explicit) except -1:
        """The innermost open element ends: at this end tag (explicit), or just before this
        tag, or at the end of input (no tag)."""
        cdef OpenElement state
        cdef Py_ssize_t depth = self.depth - 1
        self.depth = depth
        if self.source_ids:
            self.source_ids.discard(self.mirror[depth])
        if self.matcher is not None:
            if depth == 1 and self.mirror_names[1] == HEAD_HASH:
                # kept: what the "after head" rule puts back into <head> continues its children
                self.head_frame = self.matcher.detach_frame(2)
            else:
                self.matcher.pop()
            if self.n_ghosts:
                for _ in range(<Py_ssize_t>self.ghosts.pop(depth, 0)):
                    self.matcher.pop()      # closed ancestors with no open element left
                    self.n_ghosts -= 1
        if not self.states:
            return 0
        state = self.states.pop(depth, None)
        if state is not None:
            if depth == 1 and self.mirror_names[1] == HEAD_HASH and state.scoped_rules:
                self.head_rules = list(state.scoped_rules)
            self.finish_element(state, depth, tag, explicit)
        return 0

    cdef int end_body_or_html(self, TagRec* tag) except -1:
        """``</body>`` and ``</html>`` do not close their elements in a browser (content after
        them still goes into the body), but for rewriting they are where those elements end:
        their end-tag work is done there, and the elements stay open for matching and for
        their content handlers (until the end of input)."""
        cdef Py_ssize_t j, explicit_at = -1
        cdef bint is_html = tag.name_hash == HTML_HASH
        cdef OpenElement state
        for j in range(self.depth):
            if self.mirror_names[j] == tag.name_hash:
                explicit_at = j
                break
        if explicit_at < 0:
            return 0
        for j in range(self.depth - 1, explicit_at - 1, -1):
            if j != explicit_at and not (is_html and self.mirror_names[j] == BODY_HASH):
                continue
            state = self.states.get(j) if self.states else None
            if state is not None:
                if state.scoped_rules is None:
                    del self.states[j]
                self.end_work(state, j, tag, j == explicit_at)
        return 0

    # ------------------------------------------------------------------ hooks
    #
    # What the subclass does when elements start and end (RewriteSink: match them, run their
    # handlers, write their end-tag work).  Here: nothing.

    cdef int start_element(self, TagRec* tag, int ns, bint pushed, Py_ssize_t depth,
                           bint merged) except -1:
        """The tag's element starts at index ``depth`` (``pushed``: it stays open; ``merged``:
        a start tag merged into the open element of its name)."""
        return 0

    cdef int start_in_head(self, TagRec* tag, int ns, bint pushed, Py_ssize_t depth) except -1:
        """The tag's element goes into <head> after </head> (the "after head" rule)."""
        return 0

    cdef int start_implied(self, OpenElement_* e, Py_ssize_t depth) except -1:
        """An element the tree builder made with no start tag of its own starts at ``depth``."""
        return 0

    cdef int start_clone(self, list scoped, Py_ssize_t depth) except -1:
        """A clone the adoption agency made of an element whose rules ``scoped`` had content
        handlers in force takes its place at index ``depth``."""
        return 0

    cdef int head_transient(self, list matched, int ns) except -1:
        """A <head> the tree builder made and closed at once (implied by a <p> or text at the
        start) begins and ends at ``implied_at``; it matched the rules ``matched``."""
        return 0

    cdef int finish_element(self, OpenElement state, Py_ssize_t depth, TagRec* tag,
                            bint explicit) except -1:
        """The element of ``state`` at index ``depth`` ended: at this end tag (``explicit``),
        just before this tag, or at ``close_at`` (no tag)."""
        return 0

    cdef int end_work(self, OpenElement state, Py_ssize_t depth, TagRec* tag,
                      bint explicit) except -1:
        """Write the end-tag work of the element of ``state`` where it ends (its element stays
        open: ``</body>``, ``</html>``)."""
        return 0

    cdef int ignored_tag(self, TagRec* tag) except -1:
        """``remove_ignored``: the tag made, merged into or ended no element (a start tag the
        tree builder ignores, a stray end tag, ``</body>`` and ``</html>``, which end nothing
        in a browser, unless end-tag work was written there; an end tag beyond max_depth, where
        ends are not followed)."""
        return 0

    cdef int text_before_change_hook(self, bint before) except -1:
        """The text handed over next is (True) or no longer is (False) the part before where
        it changed the stack (``text_before_change``; see text_across_stack_change)."""
        return 0

    cdef int before_text_sync(self) except -1:
        """Text is about to replay a stack change (see text_across_stack_change)."""
        return 0

    # ------------------------------------------------------------------ text

    cdef int text_across_stack_change(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                                      Py_ssize_t content_start, Py_ssize_t content_end,
                                      int text_type, bint last) except -1:
        """Text changed the stack at ``sim.text_change_at`` (implied, closed or re-opened
        elements): the subclass's ``on_text`` gets the text before that point with the elements
        as they were, the change is replayed, then ``on_text`` gets the rest with the elements
        as they are now (``in_text_sync``: it does not split again)."""
        cdef Py_ssize_t at = self.sim.text_change_at
        if at < content_start:
            at = content_start
        if at > content_end:
            at = content_end
        self.in_text_sync = True
        try:
            if at > content_start:
                self.text_before_change = True
                self.text_before_change_hook(True)
                self.on_text(lx, start, at, content_start, at, text_type, False)
                self.text_before_change = False
                self.text_before_change_hook(False)
                start = at
            self.close_at = at
            self.before_text_sync()
            self.sync_stack(NULL)
            self.sim.changes_seen()
            self.on_text(lx, start, end, at, content_end, text_type, last)
        finally:
            self.in_text_sync = False
            self.text_before_change = False
        return 0
