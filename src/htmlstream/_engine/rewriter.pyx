# cython: language_level=3
"""Handler dispatch: the token sink of the rewriter, which ties the output and the open elements.

``RewriteSink`` is what a stream drives (it implements ``sink.DocumentSink``).  It is made of
three units, each readable alone:

* the output (output.pyx, ``Output``): the buffer, the input copied through it as it is, and the
  seams where the output stops following the input.  The sink says what to write, ``Output``
  how it joins what is around it;
* the open elements (elements.pyx, ``OpenElements``, the sink's base class): the mirror of the
  tree-builder simulator's stack, replayed after each tag, which says where elements start and
  end (implied, merged and re-opened ones too) through hooks this module implements
  (``start_element``, ``start_in_head``, ``start_implied``, ``head_transient``,
  ``finish_element``, ``end_work``; the element handlers of ``implied=True`` rules run on an
  implied ``<html>``/``<head>``/``<body>`` in ``run_implied``);
* handler dispatch (this module): which handlers are in force (``active_text``,
  ``active_comments``, the per-rule ``active_counts`` the elements' ``OpenElement`` states hold),
  the units the handlers get, and writing a changed unit from its recorded mutations.  Every
  unit carries the stream's context, and the element of the ``<meta charset>`` rule goes to the
  stream's encoding switch (``on_meta``) instead of a handler.  It also feeds the captures
  ``Element.capture`` asks for (capture.pyx): text at each text piece, input at each chunk end,
  delivered where the element ends (``end_work``).
"""

cimport cython
from cpython.ref cimport PyObject, Py_REFCNT
from libc.stdint cimport uint64_t
from libc.string cimport memchr, memset

from htmlstream._engine.constants cimport BODY_HASH, HEAD_HASH, HTML_HASH, IMAGE_HASH, IMG_HASH
from htmlstream._engine.constants cimport CDATA_SECTION as T_CDATA
from htmlstream._engine.constants cimport SCRIPT_DATA as T_SCRIPT
from htmlstream._engine.lexer cimport (
    AttributePolicy,
    AttrRec,
    DoctypeRec,
    Lexer,
    TagRec,
)
from htmlstream._engine.capture cimport (
    CAP_OUTER,
    CAP_TEXT,
    RUN_DATA_FOREIGN,
    Capture,
    make_capture,
)
from htmlstream._engine.constants cimport DATA as T_DATA
from htmlstream._engine.elements cimport OpenElement, OpenElements
from htmlstream._engine.matcher cimport Matcher, Program
from htmlstream._engine.output cimport Output, input_slice, write_to
from htmlstream._engine.rules cimport MetaCharsetRule, Rules, TextFilter
from htmlstream._engine.sink cimport context_of
from htmlstream._engine.taghash cimport INVALID_HASH, hash_bytes
from htmlstream._engine.treebuilder cimport (
    E_IMPLIED,
    M_AFTER_AFTER_BODY,
    M_AFTER_AFTER_FRAMESET,
    M_AFTER_BODY,
    TreeBuilderSimulator,
)

from htmlstream._engine.lexer import attribute_policy
from htmlstream._engine.treebuilder import ATTRIBUTE_TAGS as SIM_ATTRIBUTE_TAGS
from htmlstream._engine.treebuilder cimport OpenElement as OpenElement_

from htmlstream._engine.units cimport (
    BaseUnit,
    Comment,
    Doctype,
    DocumentEnd,
    Element,
    EndTag,
    TextChunk,
    Unit,
    make_comment,
    make_element,
    make_end_tag,
    make_implied_element,
    make_text_chunk,
    process_text,
    release_element,
    resolve_parts,
)

cdef uint64_t PRE_HASH = hash_bytes(<const unsigned char*>b"pre", 3)
cdef uint64_t LISTING_HASH = hash_bytes(<const unsigned char*>b"listing", 7)
cdef uint64_t TEXTAREA_HASH = hash_bytes(<const unsigned char*>b"textarea", 8)
cdef uint64_t TEMPLATE_HASH = hash_bytes(<const unsigned char*>b"template", 8)
#: The tag names of the implied elements element handlers see (run_implied).
cdef dict _IMPLIED_NAMES = {HTML_HASH: "html", HEAD_HASH: "head", BODY_HASH: "body"}


cdef str _end_name(Element el):
    """The name an element's EndTag has: its tag name (a merged tag renamed: the element's
    own name, which its end tag keeps)."""
    if el.merged_ and el.new_name is not None:
        return el.raw_[el.name_start:el.name_end].decode("ascii", "replace").lower()
    return el.tag_name


#: The active_counts of a sink with no rules (never changed: it has no index to change).
# A handler is called with one argument through its vectorcall (slot 0 of the array is free for
# the callee: PY_VECTORCALL_ARGUMENTS_OFFSET), with none of the generic call's checks.
cdef extern from *:
    """
    static CYTHON_INLINE PyObject* hs_call1(PyObject* fn, PyObject* arg) {
        PyObject* args[2] = {NULL, arg};
        return PyObject_Vectorcall(fn, args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    """
    object call1 "hs_call1"(PyObject* fn, PyObject* arg)


cdef list _NO_RULES = []
#: No text handler gets the text (text_passing; never changed).
cdef list _NO_HANDLERS = []


def attribute_policy_for(tags):
    """The lexer's attribute policy (lexer.attribute_policy) for rules whose selectors may
    read the attributes of the start tags ``tags`` (``Rules.attribute_tags``, not None): those
    and the simulator's are lexed in full, every other tag's attributes are scanned past."""
    cdef bytes b
    cdef uint64_t h
    hashes = set()
    for name in tuple(tags) + SIM_ATTRIBUTE_TAGS:
        if not name.isascii():
            hashes.add(INVALID_HASH)    # (every name the hash cannot hold)
            continue
        b = name.lower().encode("ascii")
        h = hash_bytes(b, len(b))
        hashes.add(b if h == INVALID_HASH else h)
    return attribute_policy(hashes)


cdef TextFilter _only_filter(list handlers):
    """The filter every entry of ``handlers`` has (equal ones), if it is a plain one (its
    characters only), or None."""
    cdef TextFilter f = None
    for entry in handlers:
        if len(<tuple>entry) != 3 or (f is not None and (<tuple>entry)[2] != f):
            return None
        f = <TextFilter>(<tuple>entry)[2]
    return f if f is not None and f.plain else None


@cython.final
cdef class RewriteSink(OpenElements):
    """Runs the handlers on the lexer's tokens, where the open elements (its base class) say
    elements start and end; writes the output through an ``Output``."""

    cdef str encoding
    cdef bint utf8                      # the encoding is UTF-8 (for TextFilter.passes)
    cdef Output output                  # the output buffer and its seams (output.pyx)
    cdef list active_counts             # per rule: open elements matching it (no rules:
                                        # _NO_RULES, shared)
    cdef list active_text               # [(seq, fn)] text handlers in force now (replaced,
    cdef list active_comments           # never changed in place)
    cdef bint in_handler
    cdef Element spare                  # a finished Element to reuse (release_element)
    cdef object decoder                 # incremental decoder for multi-byte legacy encodings
    cdef bint ignored_text              # the text being handed over is text the tree builder
                                        # ignores (white space before <head>): no element's
                                        # content handler sees it
    cdef list filter_list               # the last handler list text_passing was asked about,
    cdef TextFilter filter_one          # and its one filter when every handler has it (or None)
    cdef bint text_open                 # the text node of the last piece goes on (it was not
                                        # its last piece): the next piece is not its first
    # captures in progress (capture.pyx; None while there are none): of text, fed at each
    # text piece; of HTML, fed at each chunk end; and those of the element whose handlers just
    # ran, for start_element to keep in its state
    cdef list text_caps
    cdef list html_caps
    cdef list pending_caps

    def __init__(self, Rules rules, str encoding):
        self.init(rules, encoding)

    cdef int init(self, Rules rules, str encoding) except -1:
        """What ``__init__`` does, callable from C on ``RewriteSink.__new__(RewriteSink)``."""
        self.rules = rules
        self.encoding = encoding
        self.utf8 = encoding == "utf-8"
        if rules.any_element:
            self.matcher = Matcher.__new__(Matcher)
            self.matcher.init(rules.program)
        if self.output is None:
            self.output = Output.__new__(Output)
        self.output.init(encoding, bool(rules.any_element or rules.any_text or rules.doc_comments
                                        or rules.doc_doctype or rules.doc_end
                                        or self.remove_ignored))
        self.active_counts = [0] * rules.program.n_rules if rules.program.n_rules else _NO_RULES
        # (the rules' own lists: the active lists are replaced, never changed in place; see
        # refresh_active)
        self.active_text = rules.doc_text
        self.active_comments = rules.doc_comments
        self.in_handler = False
        self.ignored_text = False
        self.in_text_sync = False
        self.text_before_change = False
        self.filter_list = None
        self.text_open = False
        self.text_caps = None
        self.html_caps = None
        self.pending_caps = None
        self.implied_rules = rules.any_implied
        # Element handlers leave work for elements' ends, which text can close (<head>): the
        # sink then follows the text too, as long as the simulator reacts to it.
        self.follow_text = rules.any_element and not rules.any_text
        # Selectors without combinators or structural pseudo-classes leave the matcher nothing
        # to keep per open element.  With content handlers the mirror stays lazy too
        # (lazy_content): text is split where the simulator says the stack changed, and every
        # element made without a tag of its own is replayed and matched (_content_skip_unsafe).
        self.lazy_content = rules.any_text or rules.any_scoped
        # With frames, the mirror is lazy when the selectors' compounds are indexed alone
        # (Program.compound_index: every selector but :nth-child(... of S) with S tried on
        # every element).
        return self.init_elements(self.matcher is not None and (
            not rules.program.needs_frames or rules.program.compound_index is not None))

    def set_encoding(self, str encoding, Program program, decoder=None):
        """Read and write units in ``encoding`` from now on (a ``<meta charset>`` switch);
        ``program`` is the same selectors compiled for it.  ``decoder``: an incremental decoder
        for text, needed for multi-byte encodings other than UTF-8."""
        self.encoding = encoding
        self.utf8 = encoding == "utf-8"
        self.output.set_encoding(encoding)
        self.decoder = decoder
        if self.matcher is not None:
            self.matcher.program = program
            if self.lx is not None:
                self.lx.tag_gate = False    # (until the next replay reads the new program)

    def attach(self, Lexer lx, TreeBuilderSimulator sim, bint scanner=True, bint lazy=True):
        """Connect the lexer and simulator this sink works with.  ``scanner``: let the lexer
        scan past the attributes nobody reads (the rules' ``attribute_tags`` and the
        simulator's ``ATTRIBUTE_TAGS`` are lexed in full); false lexes every tag in full.
        ``lazy``: false keeps the open-element mirror exact at every tag (see sync_stack)."""
        self.attach_to(lx, sim, scanner, lazy)

    cdef int attach_to(self, Lexer lx, TreeBuilderSimulator sim, bint scanner,
                       bint lazy) except -1:
        cdef Rules rules = self.rules
        cdef bytes b
        cdef uint64_t h
        self.lx = lx
        self.output.lx = lx
        self.sim = sim
        # (ignored tags are found by replaying every tag: no lazy mirror)
        self.lazy = self.lazy and lazy and not self.remove_ignored
        self.use_frames(self.lazy_frames and self.lazy)
        # (the gate's filter is that of the selectors' first compounds: not with frames, where
        # later compounds may match too)
        self.gate_ok = self.lazy and not self.lazy_frames and not self.lazy_content \
            and not self.implied_rules and not rules.program.n_any
        lx.tag_gate = False                 # (opened below: set_gate)
        lx.want_text = rules.any_text or (self.follow_text and sim.wants_text)
        # (else on_tag has nothing to do)
        lx.sink_tags = self.matcher is not None or self.remove_ignored
        if scanner and rules.attribute_tags is not None:
            if rules.attribute_policy is None:
                # (once per Rules: streams share it; a Rewriter's compiled selectors come with
                # it, shared by every rewriter with those selectors)
                rules.attribute_policy = attribute_policy_for(rules.attribute_tags)
            lx.use_attribute_policy(True, False, <AttributePolicy>rules.attribute_policy)
        else:
            lx.set_attribute_policy(False)
        if self.gate_ok:
            self.set_gate()
        return 0

    # ------------------------------------------------------------------ output

    @property
    def consumed(self):
        """Stream offset up to which the input has been written to the output (or skipped)."""
        return self.output.out_pos

    def take(self):
        """The output assembled so far (and forget it).  While the stream runs, an end that
        a seam could still have to rewrite (see Output.divert) is kept for later."""
        return self.output.take()

    cdef bytes take_output(self):
        return self.output.take()

    # ------------------------------------------------------------------ tokens

    cdef int on_flush(self, Lexer lx, Py_ssize_t upto) except -1:
        if self.html_caps is not None:
            for cap in self.html_caps:
                (<Capture>cap).copy_input(lx, upto)
        return self.output.flush(upto, self.whole)

    cdef int on_text(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                     Py_ssize_t content_start, Py_ssize_t content_end, int text_type,
                     bint last) except -1:
        cdef list handlers
        cdef TextChunk chunk
        cdef bint one_piece
        cdef int escape_before = 0
        cdef int escape_after = 0
        if text_type == T_CDATA:
            self.output.cdata_written = self.removing_depth < 0
        if not self.sim.changed_reset and not self.in_text_sync and self.text_changed_stack():
            self.text_across_stack_change(lx, start, end, content_start, content_end,
                                          text_type, last)
            if self.follow_text:
                lx.want_text = self.sim.wants_text or self.keep_text
            return 0
        one_piece = not self.text_open  # (and last: the node comes in one piece)
        if last:
            self.text_open = False
        elif content_end > content_start:   # (an empty piece that is not last is dropped)
            self.text_open = True
        handlers = self.active_text
        if self.depth == 1 and handlers is not self.rules.doc_text and (
                self.ignored_text or not self.sim.head_seen):
            handlers = self.rules.doc_text      # (white space before <head>: see ignored_text)
        if self.rules.any_text_filter and one_piece and last and handlers:
            if handlers is not self.filter_list:
                self.filter_list = handlers
                self.filter_one = _only_filter(handlers)
            if self.filter_one is None:
                handlers = self.text_passing(handlers, lx, content_start, content_end,
                                             text_type)
            elif not (memchr(lx.data + (content_start - lx.base), self.filter_one.first,
                             content_end - content_start) != NULL
                      if self.filter_one.n_chars == 1 else
                      self.filter_one.found(lx.data + (content_start - lx.base),
                                            content_end - content_start)):
                handlers = None     # (every handler waits for what the piece does not hold)
        if text_type == T_SCRIPT:
            escape_before = self.output.script_text(content_end, last)
            escape_after = self.output.script_now
        if self.text_caps is not None and content_end > content_start:
            self.capture_text(content_start, content_end, text_type)
        if self.removing_depth >= 0:
            return 0
        if not handlers or (content_start == content_end and not last):
            # (only the last piece of a text node may be empty)
            if text_type == T_SCRIPT:
                self.output.script_copied(escape_before, escape_after, content_start,
                                          content_end, last)
            return 0
        chunk = make_text_chunk(input_slice(lx, content_start, content_end), text_type, last,
                                content_start, self.encoding)
        chunk.open_stack = self.sim.stack
        chunk.open_n = self.sim.depth
        if self.text_before_change:
            # (the elements the text closed are not in the stack any more: see inside())
            if self.sim.changed_from < chunk.open_n:
                chunk.open_n = self.sim.changed_from
            chunk.open_extra = self.sim.text_popped
            chunk.open_extra_n = self.sim.n_text_popped
        if self.decoder is not None:
            # a character may be split between two pieces: decode in stream order
            chunk.text_ = process_text(self.decoder.decode(chunk.raw_, last), text_type)
        self.call_all(handlers, chunk)
        if chunk.async_parts:
            resolve_parts(chunk, self.awaiter)
        chunk.live = False
        if chunk.is_modified():
            self.output.copy_input(content_start)
            if chunk.before_parts is not None:
                self.output.divert(text_type)
                self.output.write_all(chunk.before_parts, text_type)
            if chunk.removed_:
                if content_end > content_start or chunk.replacement is not None:
                    self.output.divert(text_type)
                self.output.write_part(chunk.replacement, text_type)
                if type(chunk.replacement) is bytes:
                    self.output.script_out = escape_after      # markup: as the handler meant it
            else:
                if text_type == T_SCRIPT:
                    self.output.script_copied(escape_before, escape_after, content_start,
                                              content_end, False)
                self.output.copy_input(content_end)
            self.output.out_pos = content_end
            if chunk.after_parts is not None:
                self.output.divert(text_type)
                self.output.write_all(chunk.after_parts, text_type)
        elif text_type == T_SCRIPT:
            self.output.script_copied(escape_before, escape_after, content_start, content_end,
                                      False)
        if text_type == T_SCRIPT and last:
            self.output.script_copied(escape_after, escape_after, content_end, content_end, True)
        return 0

    cdef list text_passing(self, list handlers, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                           int text_type):
        """The handlers that get a text node of type ``text_type`` that comes whole in one
        piece (``start`` to ``end``): those without a filter, and those whose filter it passes
        (TextFilter.passes).  (A piece of a node in several pieces goes to every handler: one
        that carries state from piece to piece sees them all.)"""
        cdef list passing = None
        cdef TextFilter f, seen = None
        cdef bint hit = False
        cdef const unsigned char* p = lx.data + (start - lx.base)
        cdef Py_ssize_t i, n = len(handlers)
        cdef tuple entry
        for i in range(n):
            entry = <tuple>handlers[i]
            if len(entry) == 3:
                f = <TextFilter>entry[2]
                if f is not seen:
                    seen = f
                    hit = f.passes(p, end - start, text_type, self.utf8)
                if not hit:
                    if passing is None:
                        passing = _NO_HANDLERS if i == 0 else handlers[:i]
                    continue
            if passing is not None:
                if passing is _NO_HANDLERS:
                    passing = []
                passing.append(entry)
        return handlers if passing is None else passing

    cdef int on_comment(self, Lexer lx, Py_ssize_t start, Py_ssize_t end,
                        Py_ssize_t content_start, Py_ssize_t content_end) except -1:
        cdef list handlers = self.active_comments
        cdef Comment comment
        cdef int mode
        if not handlers or self.removing_depth >= 0:
            return 0
        mode = self.sim.mode
        if (mode == M_AFTER_BODY or mode == M_AFTER_AFTER_BODY
                or mode == M_AFTER_AFTER_FRAMESET) and self.sim.depth > 0 \
                and self.sim.stack[self.sim.depth - 1].ns == 0:
            # not into the current node: after </body>, into <html>; after </html>, into the
            # document (unless the current node is foreign: the mode does not apply there)
            handlers = self.comments_outside(mode == M_AFTER_BODY)
            if not handlers:
                return 0
        comment = make_comment(input_slice(lx, start, end),
                               input_slice(lx, content_start, content_end), start, self.encoding)
        self.call_all(handlers, comment)
        if comment.async_parts:
            resolve_parts(comment, self.awaiter)
        comment.live = False
        if comment.is_modified():
            self.output.copy_input(start)
            if comment.before_parts is not None or comment.removed_:
                self.output.divert(0)
            self.output.write_all(comment.before_parts, 0)
            if comment.removed_:
                self.output.write_part(comment.replacement, 0)
            elif comment.new_text is None:
                self.output.copy_input(end)    # (as written: it may be unfinished at the end)
            else:
                self.output.write_bytes(comment.serialize())
            self.output.out_pos = end
            if comment.after_parts is not None:
                self.output.divert(0)
                self.output.write_all(comment.after_parts, 0)
        return 0

    cdef int on_doctype(self, Lexer lx, DoctypeRec* d) except -1:
        cdef list handlers = self.rules.doc_doctype
        cdef Doctype doctype
        if not handlers or self.removing_depth >= 0:
            return 0
        from htmlstream.tokens import Doctype as _DoctypeToken
        s = d.start
        token = _DoctypeToken(
            input_slice(self.lx, d.start, d.end), s, self.encoding,
            (None if d.name_start < 0 else (d.name_start - s, d.name_end - s),
             None if d.public_start < 0 else (d.public_start - s, d.public_end - s),
             None if d.system_start < 0 else (d.system_start - s, d.system_end - s)),
            bool(d.force_quirks))
        doctype = Doctype(token.raw, token.name, token.public_id, token.system_id,
                          token.force_quirks, s)
        self.call_all(handlers, doctype)
        doctype.live = False
        if doctype.removed:
            self.output.copy_input(d.start)
            self.output.divert(0)
            self.output.out_pos = d.end
        return 0

    cdef int on_unparsed(self, Lexer lx, Py_ssize_t start, Py_ssize_t end) except -1:
        # (bytes the tokenizer drops: an unfinished tag at the end of input, ``</>``)
        if self.remove_ignored and self.removing_depth < 0 and end > start:
            self.drop_input(start, end)
        return 0

    cdef int ignored_tag(self, TagRec* tag) except -1:
        # (past it already: end-tag work at </body> or </html> wrote or removed it)
        if self.removing_depth < 0 and self.output.out_pos < tag.end:
            self.drop_input(tag.start, tag.end)
        return 0

    cdef int drop_input(self, Py_ssize_t start, Py_ssize_t end) except -1:
        """Leave the input from ``start`` to ``end`` (a token) out of the output."""
        self.output.copy_input(start)
        self.output.divert(0)
        self.output.out_pos = end
        return 0

    cdef int call(self, fn, unit) except -1:
        if self.in_handler:
            raise RuntimeError("a handler may not feed the stream it is handling")
        if type(fn) is MetaCharsetRule:         # (rule 0: the stream's encoding switch)
            if self.on_meta is not None:
                self.on_meta(unit)
            return 0
        context = context_of(self)
        if (<BaseUnit>unit).doc_context is not context:       # (a reused Element has it)
            (<BaseUnit>unit).doc_context = context
        self.in_handler = True
        # (after an exception the stream is failed: the flag needs no reset)
        result = call1(<PyObject*>fn, <PyObject*>unit)
        if result is not None:
            # (an async handler's coroutine: waited for here, the engine paused at the unit,
            # on an async stream; the unit stays live until it is done)
            self.returned(fn, unit, result)
        self.in_handler = False
        return 0

    cdef int returned(self, fn, unit, result) except -1:
        """A handler returned ``result`` (not None): an async stream's awaiter waits for it
        if it is awaitable; a sync stream refuses an awaitable (other values are ignored)."""
        if self.awaiter is not None:
            self.awaiter(result, fn, unit)
            return 0
        if getattr(type(result), "__await__", None) is None:
            return 0
        close = getattr(result, "close", None)
        if close is not None:
            close()         # (a coroutine never started: no "never awaited" warning)
        name = getattr(fn, "__qualname__", None) or repr(fn)
        raise TypeError(
            f"handler {name} is async (it returned {type(result).__name__}): a sync stream "
            f"cannot wait for it; use Rewriter.astream(), arewrite() or rewrite_aiter()")

    cdef int flush_before(self, unit) except -1:
        cdef Py_ssize_t pos
        if isinstance(unit, Unit):
            pos = (<Unit>unit).offset_
        elif isinstance(unit, Doctype):
            pos = (<Doctype>unit).offset
        else:
            return 0            # (the document end: the input is all written)
        if self.removing_depth < 0 and pos > self.output.out_pos:
            self.output.copy_input(pos)
        return 0

    cdef bytes take_early(self, unit):
        # (the seam at the unit is read as the text type its before() content lands in)
        return self.output.take_early((<Unit>unit).text_ctx() if isinstance(unit, Unit) else 0)

    cdef int call_all(self, list handlers, unit) except -1:
        if len(handlers) == 1:
            return self.call((<tuple>handlers[0])[1], unit)     # (seq, fn)
        for entry in handlers:
            self.call((<tuple>entry)[1], unit)
        return 0

    # ------------------------------------------------------------------ stack changes in text

    cdef int text_before_change_hook(self, bint before) except -1:
        # (white space before the text that implied <head> and closed it again is ignored:
        # see ignored_text)
        self.ignored_text = before and self.depth == 1 and self.implied_head()
        return 0

    # ------------------------------------------------------------------ elements
    #
    # The hooks of OpenElements (elements.pyx): match an element where it starts, run its
    # handlers, keep its state for its end; at its end, write its end-tag work.

    cdef int start_in_head(self, TagRec* tag, int ns, bint pushed, Py_ssize_t depth) except -1:
        """The tag's element goes into <head> after </head> (the "after head" rule): match it
        as the next child of the head element, whose frame is re-opened around it; the head's
        content handlers are in force for its content."""
        cdef Py_ssize_t at
        cdef OpenElement state
        if self.matcher is None or self.head_frame is None:
            self.start_element(tag, ns, pushed, depth, False)
        else:
            at = self.frame_index(depth - 1) + 1
            self.matcher.attach_frame(self.head_frame)
            self.start_element(tag, ns, pushed, depth, False)
            self.head_frame = self.matcher.detach_frame(at)
        if pushed and self.head_rules and self.removing_depth < 0:
            state = OpenElement()
            self.activate(state, list(self.head_rules))
            self.keep_state(depth, state)
        return 0

    cdef int start_implied(self, OpenElement_* e, Py_ssize_t depth) except -1:
        """Match an element the tree builder made with no start tag of its own (an implied
        <html>, <head>, <body>, a re-opened formatting element...), at index ``depth``: the
        rules it matches put their text and comment handlers in force for its content, as for
        any element; element handlers run only for an implied <html>, <head> or <body>, and
        only those of rules registered with ``implied=True`` (run_implied)."""
        cdef list matched = self.matcher.match(self.lx, NULL, e.name, None, e.ns)
        cdef list scoped = None
        cdef OpenElement state = None
        self.matcher.push()
        if matched is None or self.removing_depth >= 0:
            return 0
        if self.implied_rules and e.ns == 0 and (e.flags & E_IMPLIED) and (
                (depth == 0 and e.name == HTML_HASH)
                or (depth == 1 and (e.name == HEAD_HASH or e.name == BODY_HASH))):
            state = self.run_implied(matched, e.name, e.ns)
        if self.rules.any_scoped:
            for r in matched:
                if self.rules.text_handlers[r] or self.rules.comment_handlers[r]:
                    if scoped is None:
                        scoped = []
                    scoped.append(r)
        if scoped is not None:
            if state is None:
                state = OpenElement()
            self.activate(state, scoped)
        if state is not None:
            self.keep_state(depth, state)
        return 0

    cdef int start_clone(self, list scoped, Py_ssize_t depth) except -1:
        """The adoption agency's clone of an element takes its place (sync_middle): the
        content handlers the element had in force stay in force in the clone."""
        cdef OpenElement state
        if self.removing_depth >= 0:
            return 0
        state = OpenElement()
        self.activate(state, list(scoped))
        self.keep_state(depth, state)
        return 0

    cdef int head_transient(self, list matched, int ns) except -1:
        """A <head> made and closed at once (implied at the start by a <p>, text...): its
        element handlers run, then its end-tag work is done, at the same point."""
        cdef OpenElement state
        cdef TagRec at                  # (a zero-width point: only start is read, not explicit)
        if self.removing_depth >= 0:
            return 0
        state = self.run_implied(matched, HEAD_HASH, ns)
        if state is not None:
            memset(&at, 0, sizeof(TagRec))
            at.start = self.implied_at
            at.end = self.implied_at
            self.end_work(state, 1, &at, False)
        return 0

    cdef OpenElement run_implied(self, list matched, uint64_t name_hash, int ns):
        """Run the ``implied=True`` element handlers of the rules ``matched`` on the implied
        element ``name_hash`` beginning at ``implied_at``: write what they insert before it
        and at its start there; the state it keeps for its end, or None."""
        cdef list handlers = None
        cdef Element el
        cdef OpenElement state
        cdef Py_ssize_t at = self.implied_at
        for r in matched:
            if self.rules.implied_handlers[r]:
                if handlers is None:
                    handlers = []
                handlers.extend(self.rules.implied_handlers[r])
        if handlers is None:
            return None
        handlers.sort(key=_seq)
        el = make_implied_element(name_hash, _IMPLIED_NAMES[name_hash], ns, at, T_DATA,
                                  self.encoding)
        self.call_all(handlers, el)
        if el.async_parts:
            resolve_parts(el, self.awaiter)
        el.live = False
        if el.before_parts is not None or el.prepend_parts is not None:
            self.output.copy_input(at)
            self.output.divert(T_DATA)
            self.output.write_all(el.before_parts, T_DATA)
            self.output.write_all(el.prepend_parts, T_DATA)
        if el.after_parts is None and el.append_parts is None and el.end_handlers is None:
            return None
        state = OpenElement()
        state.element = el
        return state

    cdef int activate(self, OpenElement state, list scoped) except -1:
        """Put the text and comment handlers of the rules ``scoped`` in force, for the element
        of ``state`` (until it ends: finish_element)."""
        if state.scoped_rules is None:
            state.scoped_rules = scoped
        else:
            state.scoped_rules.extend(scoped)
        for r in scoped:
            self.active_counts[r] += 1
            if self.active_counts[r] == 1:
                self.refresh_active()
        return 0

    cdef int keep_state(self, Py_ssize_t depth, OpenElement state) except -1:
        """Keep ``state`` for the open element at index ``depth``; if it has one already (a
        start tag merged into it), the two become one."""
        cdef OpenElement old
        if state.element is not None and (<Element>state.element).merged_:
            state.merged = [state.element]
            state.element = None
        if self.states is None:
            self.states = {}
        old = self.states.get(depth)
        if old is None:
            self.states[depth] = state
            return 0
        if state.element is not None:
            old.element = state.element
        if state.merged is not None:
            if old.merged is None:
                old.merged = []
            old.merged.extend(state.merged)
        if state.scoped_rules is not None:
            if old.scoped_rules is None:
                old.scoped_rules = state.scoped_rules
            else:
                old.scoped_rules.extend(state.scoped_rules)
        old.removes_content |= state.removes_content
        if state.captures is not None:
            if old.captures is None:
                old.captures = state.captures
            else:
                old.captures.extend(state.captures)
        return 0

    cdef int start_element(self, TagRec* tag, int ns, bint pushed, Py_ssize_t depth,
                           bint merged) except -1:
        """Match the tag's element and run its handlers (``merged``: a start tag merged into
        the open element of its name, which does not count as a sibling: its handlers get an
        Element whose content is that element's from the tag on, and the rules it matches
        put their content handlers in force from there)."""
        cdef list matched = None
        cdef list handlers
        cdef bytes name = None
        cdef OpenElement state = None
        cdef list scoped = None
        cdef uint64_t name_hash = tag.name_hash
        cdef Py_ssize_t n, i
        cdef int single = -1                # the one rule matched, when matched is not made
        cdef bint content = pushed          # the element has content (end-tag work, scoped)
        if merged and self.matcher is not None:
            depth = self.merged_target(name_hash)
            content = depth >= 0
        if self.matcher is not None:
            if name_hash == INVALID_HASH:
                name = input_slice(self.lx, tag.name_start, tag.name_end).lower()
            elif name_hash == IMAGE_HASH and ns == 0:
                name_hash = IMG_HASH            # the tree builder makes <image> an <img>
            if merged:
                matched = self.matcher.match_uncounted(
                    self.lx, tag, name_hash, name, ns, self.merged_parent(name_hash),
                    self.before_body if name_hash == BODY_HASH else None)
            else:
                if self.prematch_at == tag.start and self.prematch_serial == self.matcher.serial:
                    n = self.prematch_n     # (matched in the skip test: _prematch, _probe)
                    if self.count_children:
                        # (counted where it is opened: the probe left the frames as they were)
                        self.matcher.frames[self.matcher.n_frames - 1].child_count += 1
                else:
                    n = self.matcher.match_ids(self.lx, tag, name_hash, name, ns)
                self.prematch_at = -1
                if n == 1 and not self.rules.any_scoped:
                    single = self.matcher.matched[0]
                elif n:
                    matched = [self.matcher.matched[i] for i in range(n)]
            if pushed:
                self.matcher.push()
        if single >= 0 and self.removing_depth < 0:
            handlers = self.rules.element_handlers[single]
            if handlers:
                state = self.run_element_handlers(tag, ns, pushed, depth, handlers, False)
        elif matched is not None and self.removing_depth < 0:
            if len(matched) == 1:
                handlers = self.rules.element_handlers[matched[0]]
            else:
                handlers = []
                for r in matched:
                    handlers.extend(self.rules.element_handlers[r])
                handlers.sort(key=_seq)
            if content and self.rules.any_scoped:
                for r in matched:
                    if self.rules.text_handlers[r] or self.rules.comment_handlers[r]:
                        if scoped is None:
                            scoped = []
                        scoped.append(r)
            if handlers:
                state = self.run_element_handlers(tag, ns, content, depth, handlers,
                                                  merged and content)
            if scoped is not None:
                if state is None:
                    state = OpenElement()
                self.activate(state, scoped)
        if self.pending_caps is not None:
            if state is None:
                state = OpenElement()
            state.captures = self.pending_caps
            self.pending_caps = None
        if content and state is not None:
            self.keep_state(depth, state)
        return 0

    cdef OpenElement run_element_handlers(self, TagRec* tag, int ns, bint pushed,
                                          Py_ssize_t depth, list handlers, bint merged):
        """Run the element handlers on the tag; the state its element keeps for its end, or
        None.  ``pushed``: it has content (for a merged tag, the element it merges into, at
        index ``depth``, does)."""
        cdef OpenElement state
        cdef Element el = make_element(self.lx.data + (tag.start - self.lx.base), tag, ns,
                                       pushed, self.lx.text_type, self.encoding, self.spare)
        self.spare = None
        el.merged_ = merged
        el.open_stack = self.sim.stack      # (the open elements around it: see inside())
        el.open_n = depth if 0 <= depth <= self.sim.depth else self.sim.depth
        el.open_extra_n = 0
        self.call_all(handlers, el)
        if el.async_parts:
            resolve_parts(el, self.awaiter)
        el.live = False
        if el.captures is not None:
            self.begin_captures(el, tag, ns, pushed)
        if not el.is_modified():
            self.recycle(el)
            return None
        cdef int ctx = 0                        # (start tags are read in DATA only)
        cdef int content_ctx = self.lx.text_type
        self.output.script_out = 0                     # (what a script's content starts in)
        self.output.copy_input(tag.start)
        if el.before_parts is not None or el.removed_:
            self.output.divert(ctx)
            self.output.write_all(el.before_parts, ctx)
        if not el.removed_:
            el.write_start_tag(write_to, self.output)
        else:
            self.output.write_part(el.replacement, ctx)
        if ns == 0 and not el.removed_ and (tag.name_hash == PRE_HASH or
                                            tag.name_hash == LISTING_HASH or
                                            tag.name_hash == TEXTAREA_HASH):
            # the tree builder drops a newline right after <pre>, <listing>, <textarea>
            self.protect_leading_newline(el)
        if el.prepend_parts is not None or el.inner is not None:
            self.output.divert(content_ctx)
            self.output.write_all(el.prepend_parts, content_ctx)
            self.output.write_part(el.inner, content_ctx)
        self.output.out_pos = tag.end
        if not pushed:
            if el.after_parts is not None:
                self.output.divert(content_ctx)
                self.output.write_all(el.after_parts, content_ctx)
            self.recycle(el)
            return None
        if (el.after_parts is None and el.append_parts is None and el.end_handlers is None
                and el.new_name is None and not el.removed_ and not el.remove_content):
            self.recycle(el)
            return None                 # nothing to do at its end
        state = OpenElement()
        state.element = el
        if el.remove_content:
            state.removes_content = True
            if self.removing_depth < 0:
                self.removing_depth = depth
                self.output.skipping = True
        return state

    cdef inline void recycle(self, Element el) noexcept:
        """Keep a finished element for the next one, if the caller's reference is the only
        one: a handler that kept it (or a bound method of it) must find it as it was left."""
        if Py_REFCNT(el) == 1:
            release_element(el)
            self.spare = el

    cdef int protect_leading_newline(self, Element el) except -1:
        """Inserted content that starts with a newline gets one more in front: the tree builder
        drops the first newline after <pre>, <listing> and <textarea> (even one written as
        ``&#10;``)."""
        cdef list parts = el.prepend_parts
        cdef Py_ssize_t i
        if parts is not None:
            for i in range(len(parts)):
                if _part_bytes(parts[i]):
                    parts[i] = _newline_first(parts[i])
                    return 0
        if el.inner is not None:
            el.inner = _newline_first(el.inner)
        return 0

    cdef int finish_element(self, OpenElement state, Py_ssize_t depth, TagRec* tag,
                            bint explicit) except -1:
        """An element ended: its content handlers stop, and its end-tag work is written where
        it ends."""
        if state.scoped_rules is not None:
            for r in state.scoped_rules:
                self.active_counts[r] -= 1
                if self.active_counts[r] == 0:
                    self.refresh_active()
            state.scoped_rules = None
        return self.end_work(state, depth, tag, explicit)

    cdef int end_work(self, OpenElement state, Py_ssize_t depth, TagRec* tag,
                      bint explicit) except -1:
        """Write the end-tag work of the element of ``state`` (its own start tag's and the
        merged tags', innermost first: the last merged tag first) where it ends, once."""
        cdef Element el
        cdef EndTag end_tag, written = None
        cdef Py_ssize_t at = tag.start if tag != NULL else self.close_at
        cdef int ctx, ctx_after
        cdef list els
        cdef list afters = None
        cdef list replacements = None
        cdef bint remove_end = False
        cdef bytes rename = None
        if state.captures is not None:
            self.end_captures(state, tag, explicit)
        if state.element is None and state.merged is None:
            return 0
        els = [] if state.merged is None else state.merged[::-1]
        if state.element is not None:
            els.append(state.element)
        state.element = None
        state.merged = None
        if state.removes_content and self.removing_depth == depth:
            self.output.copy_input(at)  # skipped: the content is still being removed
            self.removing_depth = -1
            self.output.skipping = False
        state.removes_content = False
        if self.removing_depth >= 0:
            if depth >= self.removing_depth:
                return 0        # in the content being removed: none of it is written
            # An element opened before the removed one ends inside it (the adoption agency, a
            # <form> or <a> ended by a tag in the removed content): its end-tag work is done
            # where that content is left out; its end tag, if any, goes with the content.
            explicit = False
        self.output.copy_input(at)
        # where the content around it lands: before, in the element's text (at the end of
        # input, in whatever text the input ended in); after an end tag, in what follows it
        # (an end tag is read after DATA text, or after the content of its own raw-text or RCDATA
        # element)
        el = <Element>els[len(els) - 1]
        ctx = (el.content_text_type if explicit else 0) if tag != NULL else self.lx.text_type
        if ctx == T_SCRIPT:
            self.output.script_escape(explicit)
        if len(els) == 1 and el.end_handlers is None and el.after_parts is None \
                and el.new_name is None and not el.merged_:
            # (the common case, what the loop below does for it without an EndTag: content
            # appended, the end tag kept or, the element's tags removed, removed)
            if el.append_parts is not None:
                self.output.divert(ctx)
                self.output.write_all(el.append_parts, ctx)
            if explicit:
                if el.removed_:
                    self.output.divert(ctx)
                else:
                    self.output.copy_input(tag.end)
                self.output.out_pos = tag.end
            return 0
        ctx_after = self.lx.text_type if explicit else ctx
        raw = input_slice(self.lx, tag.start, tag.end) if explicit else b""
        for item in els:
            el = <Element>item
            end_tag = make_end_tag(raw, _end_name(el), not explicit, at, self.encoding, ctx,
                                   ctx_after)
            if el.append_parts is not None:
                end_tag.before_parts = list(el.append_parts)
            if el.after_parts is not None:
                end_tag.after_parts = list(el.after_parts)
            if el.end_handlers is not None:
                for fn in el.end_handlers:
                    self.call(fn, end_tag)
                if end_tag.async_parts:
                    resolve_parts(end_tag, self.awaiter)
            end_tag.live = False
            if end_tag.before_parts is not None:
                self.output.divert(ctx)
                self.output.write_all(end_tag.before_parts, ctx)
            if end_tag.removed_ or (el.removed_ and not el.merged_):
                remove_end = True
            if end_tag.removed_:
                if replacements is None:
                    replacements = []
                replacements.append(end_tag.replacement)
            elif end_tag.new_name is not None:
                written = end_tag
            elif el.new_name is not None and not el.merged_:
                rename = el.new_name
            if end_tag.after_parts is not None:
                if afters is None:
                    afters = []
                afters.append(end_tag.after_parts)
        if explicit:
            if remove_end:
                self.output.divert(ctx)
                if replacements is not None:
                    for part in replacements:
                        self.output.write_part(part, ctx)
            elif written is not None:
                self.output.write_bytes(written.serialize())
            elif rename is not None:
                self.output.write_bytes(b"</" + rename + b">")
            else:
                self.output.copy_input(tag.end)
            self.output.out_pos = tag.end
        if afters is not None:
            for parts in afters:
                self.output.divert(ctx_after)
                self.output.write_all(parts, ctx_after)
        return 0

    # ------------------------------------------------------------------ captures
    #
    # Element.capture (capture.pyx): begun when the element's handlers have returned, fed text
    # (capture_text) and input (on_flush) while it is open, delivered where it ends (end_work).

    cdef int begin_captures(self, Element el, TagRec* tag, int ns, bint pushed) except -1:
        """Make the Captures the element's handlers asked for: kept for its end in
        ``pending_caps`` (``pushed``: it has content), else delivered at once."""
        cdef list caps = []
        cdef Capture cap
        cdef bytes name = input_slice(self.lx, tag.name_start, tag.name_end)
        cdef Py_ssize_t templates = self.sim.template_modes_len
        if ns == 0 and tag.name_hash == TEMPLATE_HASH and pushed:
            templates -= 1          # (a template's content is not its text)
        for request in el.captures:
            cap = make_capture(request, name, tag.start)
            cap.pos = tag.start if cap.kind == CAP_OUTER else tag.end
            cap.templates = templates
            caps.append(cap)
        el.captures = None
        if not pushed:
            for item in caps:
                cap = <Capture>item
                if cap.kind == CAP_OUTER:
                    cap.copy_input(self.lx, tag.end)
            return self.deliver(caps, False)
        for item in caps:
            cap = <Capture>item
            if cap.kind == CAP_TEXT:
                if self.text_caps is None:
                    self.text_caps = []
                    self.keep_text = True
                    self.lx.want_text = True
                self.text_caps.append(cap)
            else:
                if self.html_caps is None:
                    self.html_caps = []
                self.html_caps.append(cap)
        if self.pending_caps is None:
            self.pending_caps = caps
        else:
            self.pending_caps.extend(caps)
        return 0

    cdef int capture_text(self, Py_ssize_t start, Py_ssize_t end, int text_type) except -1:
        """A piece of text: part of the text content of every element captured now, unless
        the tree builder ignores it or it goes into a template's content."""
        cdef TreeBuilderSimulator sim = self.sim
        cdef int run_type = text_type
        cdef bint drop_nl = False
        cdef OpenElement_* e
        if start == self.lx.tag.end and sim.depth > 0:
            # right after the start tag of a <pre>, <listing> or <textarea> (the newest
            # element, open): the tree builder drops a newline there
            e = &sim.stack[sim.depth - 1]
            drop_nl = e.id == sim.next_id and e.ns == 0 and (
                e.name == PRE_HASH or e.name == LISTING_HASH or e.name == TEXTAREA_HASH)
        if self.ignored_text or (sim.depth == 1 and not sim.head_seen):
            return 0                # (white space before <head>)
        if text_type == T_DATA and sim.depth > 0 and sim.stack[sim.depth - 1].ns != 0:
            run_type = RUN_DATA_FOREIGN
        for cap in self.text_caps:
            if (<Capture>cap).templates == sim.template_modes_len:
                (<Capture>cap).add_text(self.lx, start, end, run_type, drop_nl, self.encoding)
        return 0

    cdef int end_captures(self, OpenElement state, TagRec* tag, bint explicit) except -1:
        """The element of ``state`` ends (at its end tag if ``explicit``, else before ``tag``,
        or at ``close_at``): finish its captures and deliver them."""
        cdef list caps = state.captures
        cdef Capture cap
        cdef Py_ssize_t at = tag.start if tag != NULL else self.close_at
        state.captures = None
        for item in caps:
            cap = <Capture>item
            if cap.kind == CAP_TEXT:
                self.text_caps.remove(cap)
            else:
                cap.copy_input(self.lx, tag.end if explicit and cap.kind == CAP_OUTER else at)
                self.html_caps.remove(cap)
        if self.text_caps is not None and not self.text_caps:
            self.text_caps = None
            self.keep_text = False
            self.lx.want_text = self.rules.any_text or (self.follow_text and self.sim.wants_text)
        if self.html_caps is not None and not self.html_caps:
            self.html_caps = None
        return self.deliver(caps, not explicit)

    cdef int deliver(self, list caps, bint implicit) except -1:
        """Call the callbacks of finished captures, in the order they were asked for."""
        results = [(<Capture>cap).finish(self.encoding, implicit) for cap in caps]
        for i in range(len(caps)):
            if self.in_handler:
                raise RuntimeError("a handler may not feed the stream it is handling")
            self.in_handler = True
            result = (<Capture>caps[i]).callback(results[i])
            if result is not None:
                self.returned((<Capture>caps[i]).callback, None, result)
            self.in_handler = False
        return 0

    cdef list comments_outside(self, bint in_html):
        """The comment handlers for a comment that goes into the <html> element (else: into the
        document), whatever elements are open: the document's and those of the rules <html>
        matched."""
        cdef list comments = list(self.rules.doc_comments)
        cdef OpenElement state = self.states.get(0) if in_html and self.states else None
        if state is not None and state.scoped_rules is not None:
            for r in sorted(set(state.scoped_rules)):
                comments.extend(self.rules.comment_handlers[r])
            comments.sort(key=_seq)
        return comments

    cdef int refresh_active(self) except -1:
        """Put in force the text and comment handlers of the document and of the rules that
        some open element activated (``active_counts``).  The lists for each set of active
        rules are made once per Rules and shared (they are never changed in place): an
        element that comes and goes (a scoped rule on ``a``) costs a look-up, not a sort."""
        cdef Rules rules = self.rules
        cdef list counts = self.active_counts
        cdef Py_ssize_t r, n = len(counts)
        cdef uint64_t mask = 0
        cdef tuple lists
        if n <= 64:
            for r in range(n):
                if counts[r]:
                    mask |= (<uint64_t>1) << r
            if mask == 0:
                self.active_text = rules.doc_text
                self.active_comments = rules.doc_comments
                return 0
            key = mask
        else:
            key = tuple([r for r in range(n) if counts[r]])
        lists = rules.active_cache.get(key)
        if lists is None:
            text = list(rules.doc_text)
            comments = list(rules.doc_comments)
            for r in range(n):
                if counts[r]:
                    text.extend(rules.text_handlers[r])
                    comments.extend(rules.comment_handlers[r])
            text.sort(key=_seq)
            comments.sort(key=_seq)
            lists = (text, comments)
            if len(rules.active_cache) < 1024:      # (a bound for selectors by the thousand)
                rules.active_cache[key] = lists
        self.active_text = <list>lists[0]
        self.active_comments = <list>lists[1]
        return 0

    # ------------------------------------------------------------------ the end

    def finish(self):
        """After the lexer is closed: close what is still open, at the end of the input."""
        self.finish_input()

    cdef int finish_input(self) except -1:
        self.close_at = self.lx.stream_len
        if self.lx.text_type == T_SCRIPT:
            self.output.script_escape(False)
        if self.matcher is None:
            # No element rules: no element has work at its end (``states`` stays empty), and
            # the mirror, never read after the end, need not be brought up to date.
            return 0
        return self.close_all()

    def run_end_handlers(self):
        """Run the document end handlers (registration order) and write what they append."""
        self.end_document()

    cdef int end_document(self) except -1:
        cdef DocumentEnd end
        if not self.rules.doc_end:
            return self.end_checks()
        end = DocumentEnd(self.encoding)
        for fn in self.rules.doc_end:
            self.call(fn, end)
        if end.async_parts:
            resolve_parts(end, self.awaiter)
        end.live = False
        if end.parts:
            self.output.divert(self.lx.text_type)
            self.output.write_all(end.parts, self.lx.text_type)
        return self.end_checks()

    cdef int end_checks(self) except -1:
        return self.output.end_checks()


def _seq(item):
    return item[0]


cdef bytes _part_bytes(part):
    return <bytes>part if type(part) is bytes else <bytes>(<tuple>part)[0]


cdef object _newline_first(part):
    """An inserted part with one more newline in front if it starts with one."""
    if _part_bytes(part)[:1] != b"\n":
        return part
    if type(part) is bytes:
        return b"\n" + part
    return (b"\n" + (<tuple>part)[0], "\n" + (<tuple>part)[1], (<tuple>part)[2])
