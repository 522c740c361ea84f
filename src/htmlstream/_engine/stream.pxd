# One document being rewritten (see stream.pyx).
from htmlstream._engine.lexer cimport Lexer
from htmlstream._engine.rules cimport CompiledRules, RewriterSettings, Rules
from htmlstream._engine.sink cimport DocumentSink


# What the stream does with the input now (``RewriterStream.mode``).
cdef enum Mode:
    M_START = 0         # holding back the first bytes until the start is decided (``held``)
    M_ENGINE = 1        # the engine reads the input (decoded by ``transcoder`` first, if any)
    M_PASSTHROUGH = 2   # the input passes through unchanged (transcoded, if ``transcoder``)
    M_FAILED = 3        # an error stopped the stream (``error``)
    M_CLOSED = 4


cdef class StreamEncoding:
    cdef object encoding                # the Encoding
    cdef str name
    cdef str codec
    cdef bint ascii_compatible
    cdef bint multibyte
    cdef bint utf8


cdef class RewriterStream:
    cdef int mode                       # a Mode
    cdef bint busy                      # inside feed() or close(): a handler must not re-enter
    # The first chunk may start the engine in feed() itself: the stream reads its declared
    # encoding (ASCII-compatible) and sniffs nothing, so that only a byte order mark could
    # change how it starts (cleared by the first call that takes the general path).
    cdef bint plain
    cdef object ctx                     # the per-document context (None: the default one,
                                        # not made yet; see sink.context_of)
    cdef object error                   # what failed the stream (M_FAILED)
    cdef Py_ssize_t fed                 # input bytes fed
    cdef readonly Lexer _lexer          # (None until the engine starts)
    cdef DocumentSink sink
    cdef CompiledRules compiled         # what the rewriter handed over
    cdef RewriterSettings settings      # the rewriter's (compiled.settings)
    cdef StreamEncoding declared        # the encoding the stream was opened with
    cdef object held                    # input held back until the start is decided (M_START)
    cdef bint hold_utf8                 # the lexer keeps incomplete UTF-8 characters back
    cdef readonly str encoding
    cdef readonly str output_encoding
    cdef readonly object passthrough_reason
    # the rewriter's settings as they were when the stream was opened
    cdef object on_limit
    cdef bint sniff
    cdef bint transcode
    cdef bint meta_pending              # watching for a <meta> that names the encoding
    cdef object transcoder              # incremental decoder of transcoded input, or None
    cdef object on_error                # the parse-error callback, or None
    # An async stream's awaiter (htmlstream.astream), given to the sink (DocumentSink.awaiter)
    cdef public object _awaiter
    # Output stages (Rewriter.pipe): their factories (a tuple; None: no stage, or the stream
    # passes its input through), and the stages made for this stream at its first output
    cdef object stage_factories
    cdef list stages
    cdef object __weakref__

    cdef int start_engine(self, StreamEncoding encoding) except -1
    cdef int check(self) except -1
    cdef bytes feed_slow(self, chunk)
    cdef bytes feed_checked(self, chunk)
    cdef bytes decide(self, bint final)
    cdef bytes pass_held(self, str reason)
    cdef int notify_passthrough(self) except -1
    cdef bytes transcode_chunk(self, chunk, bint final=*)
    cdef bytes feed_engine(self, chunk)
    cdef bytes run_lexer(self, chunk)
    cdef bytes engine_failed(self, exc)
    cdef bytes close_slow(self)
    cdef bytes close_checked(self)
    cdef int end_engine(self, Lexer lexer, DocumentSink sink) except -1
    cdef bytes run_stages(self, bytes out, bint final)
