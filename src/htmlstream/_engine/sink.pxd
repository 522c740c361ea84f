# What a stream needs of the sink that runs its rules (see sink.pyx; RewriteSink implements it).
from htmlstream._engine.lexer cimport Lexer, TokenSink
from htmlstream._engine.rules cimport Rules
from htmlstream._engine.treebuilder cimport TreeBuilderSimulator


cdef class DocumentSink(TokenSink):
    # the chunk the stream is feeding in place (None otherwise): when all of it is output as
    # it is, it is the output (Output.flush)
    cdef bytes whole
    # the stream's context (RewriterStream.context): every unit a handler gets carries it
    # (None until needed when the stream has the default one: see context_of)
    cdef object context
    # the stream's <meta charset> switch, called with the element of the <meta charset> rule
    # (rules.MetaCharsetRule) while the stream watches for one; None otherwise
    cdef object on_meta
    # Rewriter(ignored_tags="remove"): tags the tree builder ignores and the bytes the tokenizer
    # drops are left out of the output (set by the stream before init)
    cdef bint remove_ignored
    # An async stream's (htmlstream.astream): called as ``awaiter(result, fn, unit)`` when a
    # handler returns something other than None, on the engine's fiber; it waits for an
    # awaitable there (the engine paused at the unit) and returns when it is done.  None: a
    # sync stream, where a handler that returns an awaitable is a TypeError.
    cdef object awaiter
    cdef int init(self, Rules rules, str encoding) except -1
    cdef int attach_to(self, Lexer lx, TreeBuilderSimulator sim, bint scanner,
                       bint lazy) except -1
    cdef bytes take_output(self)
    cdef int flush_before(self, unit) except -1
    cdef bytes take_early(self, unit)
    cdef int finish_input(self) except -1
    cdef int end_document(self) except -1


cdef inline object context_of(DocumentSink sink):
    """The document's context; the default one (a new dict) is made at first use, by the sink
    or by the stream, whichever needs it first (most documents never do)."""
    if sink.context is None:
        sink.context = {}
    return sink.context
