# cython: language_level=3
"""The interface between a stream and the sink that runs its rules (as the lexer knows only
its TokenSink, the stream knows only this).

The stream (stream.pyx) makes the sink with the rules compiled for the document's codec, hands
it the chunk it feeds in place (``whole``), takes the output after each chunk, and ends the
document.  The sink hands every unit it gives a handler the stream's ``context``, and the
element of the ``<meta charset>`` rule to the stream's ``on_meta`` switch.  RewriteSink
(rewriter.pyx) implements it.
"""

from htmlstream._engine.lexer cimport Lexer, TokenSink
from htmlstream._engine.rules cimport Rules
from htmlstream._engine.treebuilder cimport TreeBuilderSimulator


cdef class DocumentSink(TokenSink):
    """What a stream needs of its sink (an abstract base: RewriteSink implements it)."""

    cdef int init(self, Rules rules, str encoding) except -1:
        """Start a document read in the codec ``encoding`` with ``rules``."""
        raise NotImplementedError

    cdef int attach_to(self, Lexer lx, TreeBuilderSimulator sim, bint scanner,
                       bint lazy) except -1:
        """Connect the lexer and simulator this sink works with."""
        raise NotImplementedError

    cdef bytes take_output(self):
        """The output assembled so far (and forget it)."""
        raise NotImplementedError

    cdef int flush_before(self, unit) except -1:
        """Write the input up to where ``unit`` (whose handler is waiting) begins: that output
        is decided whatever the handler does."""
        raise NotImplementedError

    cdef bytes take_early(self, unit):
        """take_output() there, holding back what a seam at the unit could rewrite."""
        raise NotImplementedError

    cdef int finish_input(self) except -1:
        """After the lexer's end of input: close what is still open."""
        raise NotImplementedError

    cdef int end_document(self) except -1:
        """Run the document end handlers and write what they append."""
        raise NotImplementedError
