# cython: language_level=3
"""The stream: one document being rewritten, ``feed(chunk) -> bytes`` then ``close() -> bytes``.

A :class:`RewriterStream` is all of a stream, in one place.  It gets from its Rewriter only a
:class:`~htmlstream._engine.rules.CompiledRules` (the rules compiled for a codec, and the
rewriter's settings) and drives the engine through the sink interface
(:class:`~htmlstream._engine.sink.DocumentSink`).  Its modes (``mode``):

- ``M_START``: the first bytes are held back (``held``) while they may be a byte order mark (at
  most 2) or, with ``sniff``, until the stream knows whether the input is HTML (at most 1024
  bytes).  Then the stream decides how to read the document (``decide``): in the encoding a byte
  order mark gives or the declared one, transcoded to UTF-8 (UTF-16, ISO-2022-JP with
  ``transcode``), or passed through.
- ``M_ENGINE``: the lexer reads the input; while nothing is transcoded, ``feed`` and ``close``
  run the engine directly, in C, with no Python frame (the fast paths; ``plain`` lets the first
  chunk take them too, when it cannot hold a byte order mark and nothing else is to decide).
- ``M_PASSTHROUGH``: the input passes through unchanged (``passthrough_reason`` says why),
  transcoded to UTF-8 if it was being transcoded.
- ``M_FAILED`` (a handler's exception or a limit: ``error``) and ``M_CLOSED``.

A ``<meta charset>`` switch (``adjust_charset_on_meta_tag``) goes through the sink: it hands
the element of the internal ``<meta>`` rule to the stream's ``on_meta`` while the stream
watches for one, and the stream recompiles the same selectors for the new codec
(``CompiledRules.for_codec``).
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.object cimport PyObject, PyTypeObject

from htmlstream._engine.lexer cimport Lexer
from htmlstream._engine.rules cimport CompiledRules, RewriterSettings, Rules
from htmlstream._engine.sink cimport DocumentSink, context_of
from htmlstream._engine.treebuilder cimport MAX_DEPTH_DEFAULT, TreeBuilderSimulator

from htmlstream._engine.rewriter import RewriteSink
from htmlstream._engine.units import HTML_NS
from htmlstream.encoding import (
    NEED_MORE,
    SNIFF_BYTES,
    UTF_8,
    classify_content,
    lookup,
    meta_element_encoding,
    not_ascii_compatible_message,
    sniff_bom,
)
from htmlstream._parse_errors import ErrorChecker
from htmlstream.errors import BufferLimitExceeded, EncodingError, HtmlStreamError

#: The sink a stream makes (made with its type's tp_new: no Python call).
cdef type _SINK_TYPE = RewriteSink
_BYTE_ORDER_MARKS = (b"\xef\xbb\xbf", b"\xfe\xff", b"\xff\xfe")


@cython.final
cdef class StreamEncoding:
    """An Encoding as a stream reads it: the fields opening a stream needs, as C fields."""


cdef StreamEncoding stream_encoding(encoding):
    cdef StreamEncoding known = StreamEncoding.__new__(StreamEncoding)
    known.encoding = encoding
    known.name = encoding.name
    known.codec = encoding.codec
    known.ascii_compatible = encoding.ascii_compatible
    known.multibyte = encoding.multibyte
    known.utf8 = known.name == "utf-8"
    return known


#: Encodings of labels already looked up (lookup() is a pure function of the label).
cdef dict _lookups = {}
#: The stream encodings of the labels streams have checked, when no setting changes the
#: verdict: every stream of a rewriter checks its label.  Both caches are shared by all threads,
#: free-threaded builds too: entries are only added, with setdefault (never replaced or removed,
#: so an entry read stays alive; racing threads build equal ones), and they stop growing at
#: about 256 labels.
cdef dict _stream_encodings = {}


def check_encoding(encoding, bint transcode):
    """The Encoding ``encoding`` (a label or an Encoding) names, if a stream can read it:
    EncodingError if not (the replacement encoding; ISO-2022-JP unless ``transcode``)."""
    enc = _lookups.get(encoding) if type(encoding) is str else None
    if enc is None:
        enc = lookup(encoding)
        if type(encoding) is str and len(_lookups) < 256:
            enc = _lookups.setdefault(encoding, enc)
    if enc.name == "replacement" or (enc.name == "iso-2022-jp" and not transcode):
        raise EncodingError(not_ascii_compatible_message(str(encoding), enc))
    return enc


cdef class RewriterStream:
    """One document being rewritten: ``feed(chunk) -> bytes`` then ``close() -> bytes``.

    Made by :meth:`Rewriter.stream`.  After an error (a handler's exception, a limit) the
    stream is failed: bytes already returned stay valid, and further calls raise
    :class:`~htmlstream.HtmlStreamError`.

    Attributes:
        context: the per-document context: the mapping given as ``Rewriter.stream(context=...)``
            (a new dict by default).  Every unit a handler gets while this document is
            rewritten has it as ``unit.context``: per-document state belongs there.
        encoding: the encoding the document is read in (its WHATWG name); it changes when a
            byte order mark or (``adjust_charset_on_meta_tag``) a ``<meta charset>`` says so.
        output_encoding: the encoding of the output: ``encoding``, except ``"utf-8"`` when
            UTF-16 (or ISO-2022-JP) input is transcoded.
        passthrough_reason: why the stream does not rewrite and passes its input through
            unchanged (UTF-16 input, content that is not HTML, a limit with
            ``on_limit="passthrough"``), or None.
    """

    def __init__(self, CompiledRules compiled not None, encoding, context=None, *,
                 on_error=None, bint _text=False):
        """A stream reading ``encoding`` (a label or an Encoding) with ``compiled``'s rules and
        settings (rules added to the rewriter later do not apply to this document).
        ``on_error``: the parse-error callback (default: the rewriter's ``on_error``).
        ``_text``: for ``Rewriter.rewrite(str)`` (UTF-8; no ``<meta charset>`` switch)."""
        cdef RewriterSettings settings = compiled.settings
        cdef bint cacheable = type(encoding) is str
        cdef StreamEncoding declared = _stream_encodings.get(encoding) if cacheable else None
        if declared is None:
            declared = stream_encoding(check_encoding(encoding, settings.transcode))
            # (iso-2022-jp is refused unless the rewriter transcodes, which may change)
            if cacheable and declared.name != "iso-2022-jp" and len(_stream_encodings) < 256:
                declared = _stream_encodings.setdefault(encoding, declared)
        self.compiled = compiled
        self.settings = settings
        self.declared = declared
        self.encoding = self.output_encoding = declared.name
        self.ctx = context
        self.on_error = settings.on_error if on_error is None else on_error
        self.on_limit = settings.on_limit
        self.sniff = settings.sniff
        self.transcode = settings.transcode
        self.meta_pending = compiled.meta_rule and not _text
        self.held = b""
        self.stage_factories = compiled.stages
        # (feed() starts the engine itself on a first chunk that has no byte order mark, when
        # nothing else is to be decided)
        self.plain = declared.ascii_compatible and not self.sniff

    @property
    def context(self):
        """The per-document context (see the class docstring)."""
        if self.ctx is None:
            self.ctx = {} if self.sink is None else context_of(self.sink)
        return self.ctx

    @property
    def offset(self):
        """How many input bytes have been fed."""
        return self.fed

    # ------------------------------------------------------------------ feed

    def feed(self, chunk):
        """Rewrite the next chunk (bytes-like); return the output bytes that are now decided."""
        cdef unsigned char first
        cdef DocumentSink sink
        if self.busy or type(chunk) is not bytes:
            return self.feed_slow(chunk)
        if self.plain and PyBytes_GET_SIZE(chunk):
            # (decide() for this case: no byte order mark, so the declared encoding)
            first = (<bytes>chunk)[0]
            if first != 0xEF and first != 0xFE and first != 0xFF:
                self.plain = False
                self.start_engine(self.declared)
        if self.mode != M_ENGINE or self.transcoder is not None:
            return self.feed_slow(chunk)
        # The fast path (the same steps as feed_slow's for this case).
        sink = self.sink
        self.busy = True
        self.fed += PyBytes_GET_SIZE(chunk)
        sink.whole = <bytes>chunk
        try:
            self._lexer.feed_ptr(<const unsigned char*>PyBytes_AS_STRING(chunk),
                                 PyBytes_GET_SIZE(chunk))
        except BaseException as exc:
            return self.engine_failed(exc)
        finally:
            self.busy = False
            sink.whole = None
        if self.stage_factories is not None:
            return self.run_stages(sink.take_output(), False)
        return sink.take_output()

    cdef int check(self) except -1:
        if self.busy:
            raise RuntimeError(
                "a handler may not feed or close the stream it is handling; collect what it "
                "wants to add and write it with the unit's before/after/append methods")
        if self.mode == M_FAILED:
            raise HtmlStreamError(
                f"the stream failed earlier ({type(self.error).__name__}: {self.error}) "
                f"and cannot go on"
            ) from self.error
        if self.mode == M_CLOSED:
            raise HtmlStreamError("the stream is closed")
        return 0

    cdef bytes feed_slow(self, chunk):
        self.plain = False
        self.check()
        self.busy = True
        try:
            out = self.feed_checked(chunk)
        finally:
            self.busy = False
        if self.stage_factories is not None:
            return self.run_stages(out, False)
        return out

    cdef bytes feed_checked(self, chunk):
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            # (the slow path only: the fast one takes exact bytes)
            if isinstance(chunk, str):
                raise TypeError("RewriterStream.feed(): chunk must be bytes-like (bytes, "
                                "bytearray, memoryview), not str; encode str input or use "
                                "Rewriter.rewrite(str)")
            try:
                memoryview(chunk)
            except TypeError:
                raise TypeError(f"RewriterStream.feed(): chunk must be bytes-like (bytes, "
                                f"bytearray, memoryview), not {type(chunk).__name__}") from None
        self.fed += len(chunk)
        if self.mode == M_START:
            if self.held:
                self.held += chunk
            else:   # (the first chunk: no copy unless it is held back)
                self.held = chunk if type(chunk) is bytes else bytes(chunk)
            return self.decide(False)
        if self.mode == M_PASSTHROUGH:
            if self.transcoder is not None:     # after a limit: the rest, transcoded
                return self.transcode_chunk(chunk)
            return bytes(chunk)
        return self.feed_engine(chunk)

    # ------------------------------------------------------------------ the start

    cdef bytes decide(self, bint final):
        """Decide from the held-back input how to read the document, if it can be told yet:
        then start and return the output so far."""
        data = self.held
        if not final and len(data) < 3 and any(bom.startswith(data)
                                               for bom in _BYTE_ORDER_MARKS):
            self.held = bytearray(data)
            return b""
        bom, bom_length = sniff_bom(data)
        encoding = self.declared.encoding if bom is None else bom
        if bom is not None:
            self.meta_pending = False       # a byte order mark is certain
        if not encoding.ascii_compatible and not self.transcode:
            if bom is not None:
                why = (f"the input starts with a {encoding.name.upper()} byte order mark, and "
                       f"UTF-16 is not ASCII-compatible")
            else:
                why = f"the document's encoding, {encoding.name}, is not ASCII-compatible"
            return self.pass_held(
                f"{why}: passed through unchanged (Rewriter(transcode=True) rewrites it as UTF-8)"
            )
        if self.sniff:
            sample = bytes(data[:SNIFF_BYTES + 4])
            if not encoding.ascii_compatible and bom is None:
                sample = sample.decode(encoding.codec, "replace").encode("utf-8")
            verdict = classify_content(sample[:SNIFF_BYTES],
                                       final or len(data) >= SNIFF_BYTES)
            if verdict == NEED_MORE:
                self.held = bytearray(data)
                return b""
            if verdict is not None:
                return self.pass_held(f"not HTML: {verdict}")
        held = bytes(data)
        if encoding.ascii_compatible:
            self.start_engine(self.declared if encoding is self.declared.encoding
                              else stream_encoding(encoding))
            return self.feed_engine(held)
        # Transcoding: decode incrementally, rewrite as UTF-8, output UTF-8 (with a BOM).
        self.meta_pending = False
        self.start_engine(stream_encoding(UTF_8))
        self.encoding = encoding.name
        self.transcoder = encoding.incremental_decoder("replace")
        return self.run_lexer(b"\xef\xbb\xbf" + self.transcode_chunk(held[bom_length:]))

    cdef bytes pass_held(self, str reason):
        data = self.held
        self.held = None
        self.mode = M_PASSTHROUGH
        self.passthrough_reason = reason
        self.notify_passthrough()
        return bytes(data or b"")

    cdef int notify_passthrough(self) except -1:
        """The ``on_document(passthrough=...)`` hooks, once, when the stream starts passing its
        input through: recipes that promise a context entry (a report) make it there, since
        no handler of theirs runs on what passes through.  A hook's exception fails the
        stream, as a handler's does."""
        hooks = self.compiled.passthrough_hooks
        if hooks is None:
            return 0
        context = self.context
        try:
            for hook in hooks:
                hook(context, self.passthrough_reason)
        except BaseException as exc:
            self.mode = M_FAILED
            self.error = exc
            raise
        return 0

    cdef int start_engine(self, StreamEncoding encoding) except -1:
        """Make the engine (sink, simulator, lexer) for reading the input in ``encoding``."""
        cdef RewriterSettings settings = self.settings
        cdef str codec = encoding.codec
        cdef Rules rules = self.compiled.for_codec(codec)
        # (made with tp_new and their C init: no Python call, no keyword arguments to parse)
        cdef DocumentSink sink = <DocumentSink>(<PyTypeObject*>_SINK_TYPE).tp_new(
            _SINK_TYPE, <PyObject*>(), NULL)
        sink.remove_ignored = settings.ignored_tags == "remove"
        sink.init(rules, codec)
        if encoding.multibyte:
            # Characters may be cut between text pieces: decode them in stream order.
            sink.set_encoding(codec, rules.program, encoding.encoding.incremental_decoder())
        sink.context = self.ctx
        sink.awaiter = self._awaiter
        if self.meta_pending:
            sink.on_meta = self._on_meta
        cdef TreeBuilderSimulator simulator = TreeBuilderSimulator.__new__(TreeBuilderSimulator)
        simulator.init(settings.scripting, settings.strict, MAX_DEPTH_DEFAULT)
        simulator.esi_tags = settings.esi_tags
        self.hold_utf8 = encoding.utf8
        cdef Lexer lexer = Lexer.__new__(Lexer)
        lexer.init(sink, simulator, settings.max_buffer_size, self.hold_utf8,
                   settings.max_attributes)
        sink.attach_to(lexer, simulator, settings._scanner, settings._lazy_mirror)
        if self.on_error is not None:
            lexer.errors = ErrorChecker(self.on_error, utf8=encoding.utf8)
        self.sink = sink
        self._lexer = lexer
        self.held = None
        self.encoding = self.output_encoding = encoding.name
        self.mode = M_ENGINE
        return 0

    # ------------------------------------------------------------------ the engine

    cdef bytes transcode_chunk(self, chunk, bint final=False):
        return self.transcoder.decode(bytes(chunk), final).encode("utf-8", "surrogatepass")

    cdef bytes feed_engine(self, chunk):
        if self.transcoder is not None:
            chunk = self.transcode_chunk(chunk)
        return self.run_lexer(chunk)

    cdef bytes run_lexer(self, chunk):
        try:
            self._lexer.feed_bytes(chunk)
        except BaseException as exc:
            return self.engine_failed(exc)
        return self.sink.take_output()

    cdef bytes engine_failed(self, exc):
        """The engine raised ``exc`` while reading a chunk: pass the rest through (a limit,
        with ``on_limit="passthrough"``: returns the output) or fail the stream (re-raises)."""
        if isinstance(exc, BufferLimitExceeded) and self.on_limit == "passthrough":
            # What was rewritten so far, then every input byte from where rewriting stopped
            # (the output stages end with the rewritten part: the rest passes them by).
            self.mode = M_PASSTHROUGH
            self.passthrough_reason = str(exc)
            self.notify_passthrough()
            out = self.sink.take_output()
            if self.stage_factories is not None:
                out = self.run_stages(out, True)
                self.stage_factories = None
            return out + self._lexer.unconsumed(self.sink.consumed)
        self.mode = M_FAILED
        self.error = exc
        raise exc

    def _on_meta(self, element):
        """The sink's ``on_meta`` (``adjust_charset_on_meta_tag``): the first ``<meta>``
        element naming an ASCII-compatible encoding decides the encoding from here on."""
        if not self.meta_pending or element.namespace_uri != HTML_NS:
            return
        encoding = meta_element_encoding(element.get_attribute)
        if encoding is None or not encoding.ascii_compatible:
            return
        self.meta_pending = False
        self.sink.on_meta = None
        if encoding.name == self.encoding:
            return
        codec = encoding.codec
        decoder = None
        if encoding.name == "utf-8":
            # The lexer keeps an incomplete character for the next chunk from here on, as it
            # does when the stream starts in UTF-8: text handlers see whole characters.
            self.hold_utf8 = True
            self._lexer.hold_utf8 = True
        elif encoding.multibyte:
            decoder = encoding.incremental_decoder()
        self.sink.set_encoding(codec, self.compiled.for_codec(codec).program, decoder)
        self.encoding = self.output_encoding = encoding.name

    def _take_before(self, unit):
        """For an async stream (htmlstream.astream) whose handler of ``unit`` waits: the
        output decided before the unit (what ``feed`` would return if the chunk ended there),
        through the output stages."""
        if self.sink is None or self.mode != M_ENGINE or self._lexer.closed:
            # (at the end of input the output's end may still be rewritten where content is
            # added (Output.divert, the unfinished token at the end): it leaves with the rest)
            return b""
        self.sink.flush_before(unit)
        out = self.sink.take_early(unit)
        if self.stage_factories is not None:
            out = self.run_stages(out, False)
        return out

    # ------------------------------------------------------------------ close

    def close(self):
        """End of input: return the rest of the output, document end content included."""
        cdef Lexer lexer = self._lexer
        cdef DocumentSink sink = self.sink
        if self.busy or self.mode != M_ENGINE or self.transcoder is not None:
            return self.close_slow()
        # The fast path (the same steps as close_checked's for this case).
        self.busy = True
        try:
            self.end_engine(lexer, sink)
        finally:
            self.busy = False
        if self.stage_factories is not None:
            return self.run_stages(sink.take_output(), True)
        return sink.take_output()

    cdef bytes close_slow(self):
        self.plain = False
        self.check()
        self.busy = True
        try:
            out = self.close_checked()
        finally:
            self.busy = False
        if self.stage_factories is not None:
            return self.run_stages(out, True)
        return out

    cdef bytes run_stages(self, bytes out, bint final):
        """The output through the stages (Rewriter.pipe), made at the first output of a
        stream that rewrites (one that passes its input through has none); ``final``: the end
        of the output (the stages are closed)."""
        cdef list stages = self.stages
        if stages is None:
            if self.passthrough_reason is not None:
                self.stage_factories = None     # (the input passes through: no stage)
                return out
            if not out and not final:
                return out
            codec = lookup(self.output_encoding).codec
            stages = self.stages = [factory(codec, self.context)
                                    for factory in self.stage_factories]
        try:
            for stage in stages:
                out = stage.feed(out)
                if final:
                    out += stage.close()
        except BaseException as exc:
            self.mode = M_FAILED
            self.error = exc
            raise
        if final:
            self.stage_factories = None
        return out

    cdef bytes close_checked(self):
        cdef bytes out = b""
        cdef Lexer lexer
        cdef DocumentSink sink
        if self.mode == M_START:
            try:
                out = self.decide(True)
            except BaseException as exc:
                self.mode = M_FAILED
                self.error = exc
                raise
        if self.mode == M_PASSTHROUGH:
            self.mode = M_CLOSED
            if self.transcoder is not None:
                out += self.transcode_chunk(b"", True)
            return out
        lexer = self._lexer
        sink = self.sink
        if self.transcoder is not None:
            rest = self.transcode_chunk(b"", True)
            if rest:
                out += self.run_lexer(rest)
                if self.mode == M_PASSTHROUGH:
                    self.mode = M_CLOSED
                    return out
        self.end_engine(lexer, sink)
        return out + sink.take_output()

    cdef int end_engine(self, Lexer lexer, DocumentSink sink) except -1:
        """The end of input for the engine: the lexer's, the open elements', the document's;
        then the stream is closed (or failed, if that raised)."""
        try:
            lexer.end_input()
            sink.finish_input()
            sink.end_document()
        except BaseException as exc:
            self.mode = M_FAILED
            self.error = exc
            raise
        finally:
            # The lexer and its sink refer to each other (and the sink to the stream, through
            # on_meta): part them, so that the document's buffers are freed as soon as the
            # stream is (not at the next garbage collection).
            lexer.sink = None
            sink.on_meta = None
        self.mode = M_CLOSED
        return 0
