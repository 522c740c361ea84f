"""The rewriter: rules (CSS selectors and handlers) applied to HTML as it streams past.

A :class:`Rewriter` holds rules, compiled once and reused for any number of documents (and
shareable across threads: each document gets its own :class:`RewriterStream`).  A stream is
sans-I/O: ``feed(chunk) -> bytes`` returns every output byte already decided, ``close()`` the
rest.  What ``feed`` can hold back: the bytes of a token that is not finished at the end of the
chunk (a tag, comment or doctype cut in two, a possible end tag in raw text) and a few bytes of
text whose meaning depends on what follows (a partial character reference, a trailing CR, an
incomplete UTF-8 character).  Nothing else: text and untouched tags leave at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import IO, Any, TypeVar, overload

from htmlstream._engine.lexer import DEFAULT_MAX_ATTRIBUTES, DEFAULT_MAX_BUFFER_SIZE, Lexer
from htmlstream._engine.matcher import Program
from htmlstream._engine.rewriter import RewriteSink, Rules
from htmlstream._engine.treebuilder import TreeBuilderSimulator
from htmlstream.errors import BufferLimitExceeded, HtmlStreamError
from htmlstream.selectors import SelectorList, parse_selector
from htmlstream.tokenizer import resolve_encoding
from htmlstream.units import Comment, Doctype, DocumentEnd, Element, TextChunk

__all__ = ["Rewriter", "RewriterStream"]

F = TypeVar("F", bound=Callable[..., Any])
ElementHandler = Callable[[Element], Any]
TextHandler = Callable[[TextChunk], Any]
CommentHandler = Callable[[Comment], Any]
DoctypeHandler = Callable[[Doctype], Any]
EndHandler = Callable[[DocumentEnd], Any]


def _method(obj: object, name: str) -> Callable[..., Any] | None:
    fn = getattr(obj, name, None)
    return fn if callable(fn) else None


class _Rule:
    __slots__ = ("comments", "element", "selector", "source", "text")

    def __init__(self, source: str, selector: SelectorList) -> None:
        self.source = source
        self.selector = selector
        self.element: list[tuple[int, Callable[..., Any]]] = []
        self.text: list[tuple[int, Callable[..., Any]]] = []
        self.comments: list[tuple[int, Callable[..., Any]]] = []


class Rewriter:
    """Rules for rewriting HTML: selectors with handlers, and document-wide handlers.

    Args:
        encoding: the documents' encoding (ASCII-compatible; default UTF-8).  Handlers read
            decoded ``str`` and what they write is encoded back.
        scripting: whether ``<noscript>`` content is raw text (as in a browser with scripting
            on, the default) or markup that handlers can rewrite.
        strict: raise :class:`~htmlstream.ParsingAmbiguityError` where a browser's reading
            cannot be known without a full tree, instead of taking the likely reading.
        max_buffer_size: the most bytes carried over between chunks (an unfinished token).
        max_attributes: the most attributes one tag may have.
        on_limit: what a stream does when a limit is exceeded: ``"raise"`` (the default:
            :class:`~htmlstream.BufferLimitExceeded` propagates and the stream fails) or
            ``"passthrough"``: the stream writes the rest of the input unmodified from the point
            it could no longer rewrite, records why in ``passthrough_reason``, and goes on
            passing every later chunk through, so the response is never truncated.
    """

    def __init__(
        self,
        *,
        encoding: str = "utf-8",
        scripting: bool = True,
        strict: bool = False,
        max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
        max_attributes: int = DEFAULT_MAX_ATTRIBUTES,
        on_limit: str = "raise",
    ) -> None:
        if on_limit not in ("raise", "passthrough"):
            raise ValueError(f"on_limit must be 'raise' or 'passthrough', not {on_limit!r}")
        self.encoding = resolve_encoding(encoding)
        self.max_attributes = max_attributes
        self.on_limit = on_limit
        self.scripting = scripting
        self.strict = strict
        self.max_buffer_size = max_buffer_size
        self._rules: list[_Rule] = []
        self._doc_text: list[tuple[int, Callable[..., Any]]] = []
        self._doc_comments: list[tuple[int, Callable[..., Any]]] = []
        self._doc_doctype: list[tuple[int, Callable[..., Any]]] = []
        self._doc_end: list[Callable[..., Any]] = []
        self._seq = 0
        self._compiled: dict[str, Rules] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ rules

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def on(
        self,
        selector: str,
        handler: object = None,
        *,
        element: ElementHandler | None = None,
        text: TextHandler | None = None,
        comments: CommentHandler | None = None,
    ) -> Rewriter:
        """Run handlers on the elements ``selector`` matches (and on the text and comments
        inside them, descendants included).

        ``handler`` may be an object with ``element``/``text``/``comments`` methods (the shape of
        the Workers ``HTMLRewriter`` and python-lolhtml); keyword handlers are added to it.
        Returns the rewriter, so calls chain.
        """
        if handler is not None:
            element = element or _method(handler, "element")
            text = text or _method(handler, "text")
            comments = comments or _method(handler, "comments")
            if element is None and text is None and comments is None:
                raise TypeError("the handler object has no element, text or comments method")
        rule = _Rule(selector, parse_selector(selector))
        for fn, where in ((element, rule.element), (text, rule.text), (comments, rule.comments)):
            if fn is not None:
                if not callable(fn):
                    raise TypeError(f"handler {fn!r} is not callable")
                where.append((self._next(), fn))
        with self._lock:
            self._rules.append(rule)
            self._compiled.clear()
        return self

    def on_document(
        self,
        handler: object = None,
        *,
        doctype: DoctypeHandler | None = None,
        comments: CommentHandler | None = None,
        text: TextHandler | None = None,
        end: EndHandler | None = None,
    ) -> Rewriter:
        """Run handlers on the whole document: its doctype, every comment, every text chunk,
        and its end (``end`` handlers run in registration order)."""
        if handler is not None:
            doctype = doctype or _method(handler, "doctype")
            comments = comments or _method(handler, "comments")
            text = text or _method(handler, "text")
            end = end or _method(handler, "end")
        with self._lock:
            for fn, where in ((doctype, self._doc_doctype), (comments, self._doc_comments),
                              (text, self._doc_text)):
                if fn is not None:
                    if not callable(fn):
                        raise TypeError(f"handler {fn!r} is not callable")
                    where.append((self._next(), fn))
            if end is not None:
                if not callable(end):
                    raise TypeError(f"handler {end!r} is not callable")
                self._doc_end.append(end)
            self._compiled.clear()
        return self

    def element(self, selector: str) -> Callable[[F], F]:
        """Decorator: ``@rw.element("a[href]")`` is ``rw.on("a[href]", element=fn)``."""
        def register(fn: F) -> F:
            self.on(selector, element=fn)
            return fn
        return register

    def text(self, selector: str) -> Callable[[F], F]:
        """Decorator: ``@rw.text("p")`` is ``rw.on("p", text=fn)``."""
        def register(fn: F) -> F:
            self.on(selector, text=fn)
            return fn
        return register

    def comments(self, selector: str) -> Callable[[F], F]:
        """Decorator: ``@rw.comments("div")`` is ``rw.on("div", comments=fn)``."""
        def register(fn: F) -> F:
            self.on(selector, comments=fn)
            return fn
        return register

    def _compiled_rules(self, encoding: str) -> Rules:
        with self._lock:
            rules = self._compiled.get(encoding)
            if rules is None:
                program = Program([r.selector for r in self._rules], encoding)
                rules = Rules(
                    program,
                    [list(r.element) for r in self._rules],
                    [list(r.text) for r in self._rules],
                    [list(r.comments) for r in self._rules],
                    list(self._doc_text), list(self._doc_comments), list(self._doc_doctype),
                    list(self._doc_end),
                )
                self._compiled[encoding] = rules
            return rules

    # ------------------------------------------------------------------ running

    def stream(self) -> RewriterStream:
        """A new stream for one document."""
        return RewriterStream(self, self.encoding)

    @overload
    def rewrite(self, data: str) -> str: ...
    @overload
    def rewrite(self, data: bytes | bytearray | memoryview) -> bytes: ...

    def rewrite(self, data: str | bytes | bytearray | memoryview) -> str | bytes:
        """Rewrite a whole document: bytes give bytes (in the rewriter's encoding); str gives
        str (processed as UTF-8 whatever the configured encoding)."""
        if isinstance(data, str):
            stream = RewriterStream(self, "utf-8")
            raw = data.encode("utf-8", "surrogatepass")
            return (stream.feed(raw) + stream.close()).decode("utf-8", "surrogatepass")
        stream = self.stream()
        return stream.feed(data) + stream.close()

    def rewrite_iter(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """Rewrite a document given as an iterable of byte chunks; yield output chunks
        (empty ones are skipped)."""
        stream = self.stream()
        for chunk in chunks:
            out = stream.feed(chunk)
            if out:
                yield out
        out = stream.close()
        if out:
            yield out

    async def rewrite_aiter(self, chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
        """Rewrite a document given as an async iterable of byte chunks."""
        stream = self.stream()
        async for chunk in chunks:
            out = stream.feed(chunk)
            if out:
                yield out
        out = stream.close()
        if out:
            yield out

    def rewrite_file(
        self,
        src: str | os.PathLike[str] | IO[bytes],
        dst: str | os.PathLike[str] | IO[bytes],
        *,
        chunk_size: int = 65536,
    ) -> None:
        """Rewrite the file ``src`` into ``dst`` (paths or binary file objects), streaming."""
        src_file = open(src, "rb") if isinstance(src, (str, os.PathLike)) else src  # noqa: SIM115
        try:
            dst_file = (open(dst, "wb") if isinstance(dst, (str, os.PathLike))  # noqa: SIM115
                        else dst)
            try:
                stream = self.stream()
                while chunk := src_file.read(chunk_size):
                    dst_file.write(stream.feed(chunk))
                dst_file.write(stream.close())
            finally:
                if dst_file is not dst:
                    dst_file.close()
        finally:
            if src_file is not src:
                src_file.close()


class RewriterStream:
    """One document being rewritten: ``feed(chunk) -> bytes`` then ``close() -> bytes``.

    After an error (a handler's exception, a limit) the stream is failed: bytes already
    returned stay valid, and further calls raise :class:`HtmlStreamError`.
    """

    def __init__(self, rewriter: Rewriter, encoding: str) -> None:
        self._rules = rewriter._compiled_rules(encoding)
        self.encoding = encoding
        self._sink = RewriteSink(self._rules, encoding)
        self._sim = TreeBuilderSimulator(scripting=rewriter.scripting, strict=rewriter.strict)
        self._lexer = Lexer(self._sink, self._sim, max_buffer_size=rewriter.max_buffer_size,
                            hold_utf8=encoding == "utf-8",
                            max_attributes=rewriter.max_attributes)
        self._sink.attach(self._lexer, self._sim)
        self._closed = False
        self._error: BaseException | None = None
        self._on_limit = rewriter.on_limit
        self._passthrough = False
        #: Why the stream stopped rewriting and passes its input through unchanged, or None.
        self.passthrough_reason: str | None = None

    def _check(self) -> None:
        if self._error is not None:
            raise HtmlStreamError(
                f"the stream failed earlier ({type(self._error).__name__}: {self._error}) "
                f"and cannot go on"
            ) from self._error
        if self._closed:
            raise HtmlStreamError("the stream is closed")

    @property
    def offset(self) -> int:
        """How many input bytes have been fed."""
        return self._lexer.offset

    def feed(self, chunk: bytes | bytearray | memoryview) -> bytes:
        """Rewrite the next chunk; return the output bytes that are now decided."""
        self._check()
        if isinstance(chunk, str):
            raise TypeError("feed() takes bytes; encode str input or use Rewriter.rewrite(str)")
        if self._passthrough:
            return bytes(chunk)
        try:
            self._lexer.feed_bytes(chunk)
        except BufferLimitExceeded as exc:
            if self._on_limit != "passthrough":
                self._error = exc
                raise
            return self._start_passthrough(exc)
        except BaseException as exc:
            self._error = exc
            raise
        return self._sink.take()

    def _start_passthrough(self, exc: BufferLimitExceeded) -> bytes:
        # What was rewritten so far, then every input byte from where rewriting stopped.
        self._passthrough = True
        self.passthrough_reason = str(exc)
        return self._sink.take() + self._lexer.unconsumed(self._sink.consumed)

    def close(self) -> bytes:
        """End of input: return the rest of the output, document end content included."""
        self._check()
        if self._passthrough:
            self._closed = True
            return b""
        try:
            self._lexer.close()
            self._sink.finish()
            self._sink.run_end_handlers()
        except BaseException as exc:
            self._error = exc
            raise
        self._closed = True
        return self._sink.take()
