"""The rewriter: rules (CSS selectors and handlers) applied to HTML as it streams past.

A :class:`Rewriter` holds rules, compiled once and reused for any number of documents (and
shareable across threads: each document gets its own :class:`RewriterStream`).  A stream is
sans-I/O: ``feed(chunk) -> bytes`` returns every output byte already decided, ``close()`` the
rest.  What ``feed`` can hold back: the bytes of a token that is not finished at the end of the
chunk (a tag, comment or doctype cut in two, a possible end tag in raw text) and a few bytes of
text whose meaning depends on what follows (a partial character reference, a trailing CR, an
incomplete UTF-8 character).  Nothing else: text and untouched tags leave at once.

Encodings (docs/guide/encodings.md): the engine reads any ASCII-compatible encoding of the WHATWG
Encoding Standard as bytes; a stream also holds back the first bytes of a document while they
may be a byte order mark (at most 2), and, with ``sniff=True``, until it knows whether the input
is HTML at all (at most 1024 bytes).  UTF-16 input passes through unchanged, or with
``transcode=True`` is rewritten as UTF-8.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import IO, Any, Generic, Literal, TypeAlias, TypeVar, overload

from htmlstream._engine.lexer import DEFAULT_MAX_ATTRIBUTES, DEFAULT_MAX_BUFFER_SIZE
from htmlstream._engine.matcher import Program
from htmlstream._engine.rewriter import RewriterSettings, Rules, StreamBase
from htmlstream.encoding import (
    NEED_MORE,
    SNIFF_BYTES,
    UTF_8,
    Encoding,
    classify_content,
    lookup,
    meta_element_encoding,
    not_ascii_compatible_message,
    sniff_bom,
)
from htmlstream.errors import BufferLimitExceeded, EncodingError, HtmlStreamError
from htmlstream.handlers import (
    CommentHandler,
    DoctypeHandler,
    DocumentContentHandlers,
    ElementContentHandlers,
    ElementHandler,
    EndHandler,
    TextHandler,
)
from htmlstream.selectors import SelectorList, parse_selector
from htmlstream.units import HTML_NS, Element

__all__ = ["OnLimit", "Rewriter", "RewriterStream"]

#: What a stream does when a limit is exceeded (``Rewriter(on_limit=...)``).
OnLimit: TypeAlias = Literal["raise", "passthrough"]

T = TypeVar("T")
_E = TypeVar("_E", bound=ElementHandler)
_T = TypeVar("_T", bound=TextHandler)
_C = TypeVar("_C", bound=CommentHandler)
_F = TypeVar("_F", bound=Callable[..., Any])


#: The selector of the internal ``<meta charset>`` rule (``adjust_charset_on_meta_tag``).
_META_SELECTOR = parse_selector("meta")
#: The stream whose handlers are running, per thread (for the internal ``<meta>`` handler:
#: rules are shared by every stream of a rewriter).
_active = threading.local()
_BYTE_ORDER_MARKS = (b"\xef\xbb\xbf", b"\xfe\xff", b"\xff\xfe")
#: Encoding labels already looked up (lookup() is a pure function of the label).  Safe to share
#: between threads without the GIL too: only setdefault adds to it (an entry is never replaced
#: or removed; racing threads compute equal values) and it stops growing at about 256 labels.
_LOOKUPS: dict[str, Encoding] = {}


def _meta_charset(element: Element) -> None:
    """The internal element handler on ``meta`` (registered first)."""
    stream = getattr(_active, "stream", None)
    if stream is not None:
        stream._on_meta(element)


def _check_callable(fn: object) -> None:
    if fn is not None and not callable(fn):
        raise TypeError(f"handler {fn!r} is not callable")


def _attribute_tags(selectors: list[SelectorList]) -> tuple[str, ...] | None:
    """The names of the start tags whose attributes the rules may read: those a compound with
    an id, class or attribute test names, and the subjects of the rules (their handlers get the
    element).  None when that can be any tag (a compound with such a test, or a subject, has no
    type selector).  Every other tag's attributes are only scanned past."""
    names: set[str] = set()

    def walk(selector_list: SelectorList, top: bool) -> bool:
        for complex_sel in selector_list.selectors:
            last = len(complex_sel.compounds) - 1
            for i, compound in enumerate(complex_sel.compounds):
                for pseudo in compound.pseudos:
                    arg = getattr(pseudo, "arg", None) or getattr(pseudo, "of", None)
                    if arg is not None and not walk(arg, False):
                        return False
                if compound.ids or compound.classes or compound.attributes or (
                        top and i == last):
                    if compound.tag is None:
                        return False
                    name = compound.tag.lower()
                    names.add(name)
                    if name == "img":
                        names.add("image")      # the tree builder makes <image> an <img>
        return True

    for selector_list in selectors:
        if not walk(selector_list, True):
            return None
    return tuple(sorted(names))


def _method(obj: object, name: str) -> Callable[..., Any] | None:
    fn = getattr(obj, name, None)
    return fn if callable(fn) else None


class _Setting(Generic[T]):
    """A Rewriter attribute kept in the rewriter's RewriterSettings, whose C fields every
    stream reads when it opens (no attribute look-up on the rewriter per setting)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, rewriter: None, owner: type | None = None) -> _Setting[T]: ...
    @overload
    def __get__(self, rewriter: Rewriter, owner: type | None = None) -> T: ...

    def __get__(self, rewriter: Rewriter | None, owner: type | None = None) -> Any:
        if rewriter is None:
            return self
        return getattr(rewriter._settings, self._name)

    def __set__(self, rewriter: Rewriter, value: T) -> None:
        setattr(rewriter._settings, self._name, value)


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
        encoding: the documents' encoding: a label of the WHATWG Encoding Standard (default
            ``"utf-8"``; ``"latin1"`` and ``"iso-8859-1"`` mean windows-1252, as in browsers).
            Handlers read decoded ``str`` and what they write is encoded back (a character the
            encoding cannot represent becomes a numeric character reference in text and
            attribute values, and is an :class:`~htmlstream.EncodingError` in names).  A
            document that starts with a byte order mark is read in the encoding it gives.
            UTF-16 documents pass through unchanged (see ``transcode``); ISO-2022-JP needs
            ``transcode=True``.
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
        adjust_charset_on_meta_tag: switch the encoding at the first ``<meta charset=...>``
            or ``<meta http-equiv="Content-Type" content="...; charset=...">`` that names an
            ASCII-compatible encoding (once per document, as a browser's parser does when the
            encoding it uses is only tentative); the bytes before it were read in ``encoding``.
            Not done when a byte order mark decided the encoding, nor for ``rewrite(str)``.
        sniff: content sniffing: a stream holds back its output until it knows whether the
            input looks like HTML (see :func:`htmlstream.looks_like_html`: the first
            non-whitespace byte must be ``<``, and JSON, images, archives, binary data and
            XML other than XHTML are recognised), reading at most its first 1024 bytes; an
            input that is not HTML passes through unchanged, with ``passthrough_reason`` saying
            what it is (``"not HTML: JSON"``).
        transcode: what to do with UTF-16 input (a UTF-16 byte order mark, or
            ``encoding="utf-16le"``/``"utf-16be"``): by default it passes through unchanged,
            with ``passthrough_reason`` set, since its bytes cannot be rewritten as
            ASCII-compatible ones.  With ``transcode=True`` it is decoded incrementally and
            rewritten as UTF-8: the output is then UTF-8 (starting with a UTF-8 byte order mark,
            which browsers obey whatever the ``Content-Type`` says; ``stream.output_encoding``
            is ``"utf-8"``; update the ``Content-Type`` header anyway).  ISO-2022-JP input
            needs ``transcode=True``.
    """

    # The settings (Args above), kept in ``_settings``.
    scripting: _Setting[bool] = _Setting()
    strict: _Setting[bool] = _Setting()
    max_buffer_size: _Setting[int] = _Setting()
    max_attributes: _Setting[int] = _Setting()
    on_limit: _Setting[OnLimit] = _Setting()
    adjust_charset_on_meta_tag: _Setting[bool] = _Setting()
    sniff: _Setting[bool] = _Setting()
    transcode: _Setting[bool] = _Setting()
    #: Whether streams scan past the attributes no rule reads (the engine's two speeds, see
    #: DESIGN.md); tests set it to False to compare with every tag lexed in full.
    _scanner: _Setting[bool] = _Setting()      # (True unless set)
    #: Whether streams may let their open-element mirror fall behind where no element has work
    #: left (the sink's lazy mirror, see RewriteSink.sync_stack); tests set it to False.
    _lazy_mirror: _Setting[bool] = _Setting()  # (True unless set)

    def __init__(
        self,
        *,
        encoding: str = "utf-8",
        scripting: bool = True,
        strict: bool = False,
        max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
        max_attributes: int = DEFAULT_MAX_ATTRIBUTES,
        on_limit: OnLimit = "raise",
        adjust_charset_on_meta_tag: bool = False,
        sniff: bool = False,
        transcode: bool = False,
    ) -> None:
        if on_limit not in ("raise", "passthrough"):
            raise ValueError(f"on_limit must be 'raise' or 'passthrough', not {on_limit!r}")
        self._settings = RewriterSettings()
        self.adjust_charset_on_meta_tag = bool(adjust_charset_on_meta_tag)
        self.sniff = bool(sniff)
        self.transcode = bool(transcode)
        #: The documents' encoding (its WHATWG name, e.g. ``"windows-1252"``).
        self.encoding = self._check_encoding(encoding).name
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
        self._compiled: dict[str, tuple[Rules, list[SelectorList]]] = {}
        self._selectors: list[SelectorList] | None = None
        self._lock = threading.Lock()

    def _check_encoding(self, encoding: str | Encoding) -> Encoding:
        """The encoding ``encoding`` names, if streams can handle it (EncodingError if not)."""
        enc = _LOOKUPS.get(encoding) if isinstance(encoding, str) else None
        if enc is None:
            enc = lookup(encoding)
            if isinstance(encoding, str) and len(_LOOKUPS) < 256:
                enc = _LOOKUPS.setdefault(encoding, enc)    # (every stream looks its label up)
        if enc.name == "replacement" or (enc.name == "iso-2022-jp" and not self.transcode):
            raise EncodingError(not_ascii_compatible_message(str(encoding), enc))
        return enc

    # ------------------------------------------------------------------ rules

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def on(
        self,
        selector: str,
        handler: ElementContentHandlers | None = None,
        *,
        element: ElementHandler | None = None,
        text: TextHandler | None = None,
        comments: CommentHandler | None = None,
        namespaces: Mapping[str, str] | None = None,
    ) -> Rewriter:
        """Run handlers on the elements ``selector`` matches (and on the text and comments
        inside them, descendants included).

        ``handler`` may be an object with ``element``/``text``/``comments`` methods (the shape of
        the Workers ``HTMLRewriter`` and python-lolhtml); keyword handlers are added to it.
        ``namespaces`` maps the selector's namespace prefixes to URIs (``svg|rect`` with
        ``{"svg": "http://www.w3.org/2000/svg"}``; ``""`` is the default namespace), as
        :func:`~htmlstream.parse_selector` takes them.  Returns the rewriter, so calls chain.
        """
        if handler is not None:
            element = element or _method(handler, "element")
            text = text or _method(handler, "text")
            comments = comments or _method(handler, "comments")
            if element is None and text is None and comments is None:
                raise TypeError("the handler object has no element, text or comments method")
        rule = _Rule(selector, parse_selector(selector, namespaces))
        with self._lock:
            self._add_handlers(((element, rule.element), (text, rule.text),
                                (comments, rule.comments)))
            self._rules.append(rule)
            self._compiled.clear()
            self._selectors = None
        return self

    def on_document(
        self,
        handler: DocumentContentHandlers | None = None,
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
        _check_callable(end)
        with self._lock:
            self._add_handlers(((doctype, self._doc_doctype), (comments, self._doc_comments),
                                (text, self._doc_text)))
            if end is not None:
                self._doc_end.append(end)
            self._compiled.clear()
        return self

    def element(
        self, selector: str, *, namespaces: Mapping[str, str] | None = None
    ) -> Callable[[_E], _E]:
        """Decorator: ``@rw.element("a[href]")`` is ``rw.on("a[href]", element=fn)``."""
        return self._decorator(selector, "element", namespaces)

    def text(
        self, selector: str, *, namespaces: Mapping[str, str] | None = None
    ) -> Callable[[_T], _T]:
        """Decorator: ``@rw.text("p")`` is ``rw.on("p", text=fn)``."""
        return self._decorator(selector, "text", namespaces)

    def comments(
        self, selector: str, *, namespaces: Mapping[str, str] | None = None
    ) -> Callable[[_C], _C]:
        """Decorator: ``@rw.comments("div")`` is ``rw.on("div", comments=fn)``."""
        return self._decorator(selector, "comments", namespaces)

    def _decorator(
        self, selector: str, kind: str, namespaces: Mapping[str, str] | None
    ) -> Callable[[_F], _F]:
        def register(fn: _F) -> _F:
            # (the public decorators bind _F to the handler type of ``kind``)
            self.on(selector, namespaces=namespaces, **{kind: fn})  # type: ignore[arg-type]
            return fn
        return register

    def _add_handlers(self, pairs: tuple[tuple[object, list[tuple[int, Any]]], ...]) -> None:
        """Append each handler to its list with the next sequence number (lock held); all are
        checked first, so a bad one adds none."""
        for fn, _ in pairs:
            _check_callable(fn)
        for fn, where in pairs:
            if fn is not None:
                where.append((self._next(), fn))

    def _compiled_rules(self, encoding: str) -> Rules:
        """The rules compiled for the Python codec ``encoding``."""
        return self._compiled_entry(encoding)[0]

    def _compiled_entry(self, encoding: str) -> tuple[Rules, list[SelectorList]]:
        entry = self._compiled.get(encoding)    # (no lock needed to read: one dict lookup)
        if entry is not None:
            return entry
        with self._lock:
            entry = self._compiled.get(encoding)
            if entry is None:
                rules = [r for r in self._rules]
                element = [list(r.element) for r in rules]
                text = [list(r.text) for r in rules]
                comments = [list(r.comments) for r in rules]
                if self._selectors is None:
                    self._selectors = [r.selector for r in rules]
                    if self.adjust_charset_on_meta_tag:
                        self._selectors.insert(0, _META_SELECTOR)
                if self.adjust_charset_on_meta_tag:
                    # First of all: it runs before the user's handlers on the same <meta>.
                    element.insert(0, [(0, _meta_charset)])
                    text.insert(0, [])
                    comments.insert(0, [])
                compiled = Rules(
                    Program(self._selectors, encoding), element, text, comments,
                    list(self._doc_text), list(self._doc_comments), list(self._doc_doctype),
                    list(self._doc_end),
                )
                compiled.attribute_tags = _attribute_tags(self._selectors)
                entry = self._compiled[encoding] = (compiled, self._selectors)
            return entry

    def _program_for(self, encoding: str, selectors: list[SelectorList]) -> Program:
        """The selectors ``selectors`` (a stream's, from :meth:`_compiled_entry`) compiled for
        the codec ``encoding``: the same program, with literals in another encoding."""
        rules, current = self._compiled_entry(encoding)
        if current is selectors:
            return rules.program
        return Program(selectors, encoding)     # the rules changed since the stream began

    def _rules_for(self, encoding: str, base: Rules, selectors: list[SelectorList]) -> Rules:
        """A stream's rules (``base``, compiled from ``selectors``) for the codec
        ``encoding``."""
        program = self._program_for(encoding, selectors)
        if program is base.program:
            return base
        rules = Rules(program, base.element_handlers, base.text_handlers,
                      base.comment_handlers, base.doc_text, base.doc_comments, base.doc_doctype,
                      base.doc_end)
        rules.attribute_tags = base.attribute_tags
        return rules

    # ------------------------------------------------------------------ running

    def stream(self, *, encoding: str | None = None) -> RewriterStream:
        """A new stream for one document, in the rewriter's encoding or in ``encoding`` (a
        label, e.g. what :func:`htmlstream.sniff_encoding` found for this document)."""
        return RewriterStream(self, self.encoding if encoding is None else encoding)

    @overload
    def rewrite(self, data: str) -> str: ...
    @overload
    def rewrite(self, data: bytes | bytearray | memoryview) -> bytes: ...

    def rewrite(self, data: str | bytes | bytearray | memoryview) -> str | bytes:
        """Rewrite a whole document: bytes give bytes (in the rewriter's encoding); str gives
        str (processed as UTF-8 whatever the configured encoding)."""
        if isinstance(data, str):
            stream = RewriterStream(self, "utf-8", _text=True)
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


class RewriterStream(StreamBase):
    """One document being rewritten: ``feed(chunk) -> bytes`` then ``close() -> bytes``.

    After an error (a handler's exception, a limit) the stream is failed: bytes already
    returned stay valid, and further calls raise :class:`HtmlStreamError`.

    Attributes:
        encoding: the encoding the document is read in (its WHATWG name); it changes when a
            byte order mark or (``adjust_charset_on_meta_tag``) a ``<meta charset>`` says so.
        output_encoding: the encoding of the output: ``encoding``, except ``"utf-8"`` when
            UTF-16 (or ISO-2022-JP) input is transcoded.
        passthrough_reason: why the stream does not rewrite and passes its input through
            unchanged (UTF-16 input, content that is not HTML, a limit with
            ``on_limit="passthrough"``), or None.
    """

    # RewriterStream(rewriter, encoding, *, _text=False) is StreamBase's __init__ (C): it looks
    # the encoding up, takes the rules as they are now (rules added later do not apply to this
    # document) and the rewriter's settings; every field of a stream is StreamBase's.

    def _check(self) -> None:
        if self._busy:
            raise RuntimeError(
                "a handler may not feed or close the stream it is handling; collect what it "
                "wants to add and write it with the unit's before/after/append methods")
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
        return self._fed

    # feed(chunk) -> bytes is StreamBase.feed (C): it runs the engine directly while ``_fast``
    # (set once the engine runs plainly: no transcoding, no <meta> to watch, no error; _busy,
    # _closed, _error, _fed, _lexer and _sink are its fields), and calls _feed_slow in every
    # other case.

    def _feed_slow(self, chunk: bytes | bytearray | memoryview) -> bytes:
        self._plain = False
        self._check()
        self._busy = True
        try:
            return self._feed(chunk)
        finally:
            self._busy = False

    def _feed(self, chunk: bytes | bytearray | memoryview) -> bytes:
        if isinstance(chunk, str):
            raise TypeError("feed() takes bytes; encode str input or use Rewriter.rewrite(str)")
        self._fed += len(chunk)
        if self._held is not None:
            if self._held:
                self._held += chunk
            else:   # (the first chunk: no copy unless it is held back)
                self._held = chunk if isinstance(chunk, bytes) else bytes(chunk)
            return self._decide(final=False)
        if self._passthrough:
            if self._transcoder is not None:    # after a limit: the rest, transcoded
                return self._transcode_chunk(chunk)
            return bytes(chunk)
        return self._feed_engine(chunk)

    # ------------------------------------------------------------------ the start

    def _decide(self, final: bool) -> bytes:
        """Decide from the held-back input how to read the document, if it can be told yet:
        then start and return the output so far."""
        data = self._held
        assert data is not None
        if not final and len(data) < 3 and any(bom.startswith(data) for bom in _BYTE_ORDER_MARKS):
            self._held = bytearray(data)
            return b""
        bom, bom_length = sniff_bom(data)
        encoding = self._declared if bom is None else bom
        if bom is not None:
            self._meta_pending = False      # a byte order mark is certain
        if not encoding.ascii_compatible and not self._transcode:
            if bom is not None:
                why = (f"the input starts with a {encoding.name.upper()} byte order mark, and "
                       f"UTF-16 is not ASCII-compatible")
            else:
                why = f"the document's encoding, {encoding.name}, is not ASCII-compatible"
            return self._pass_held(
                f"{why}: passed through unchanged (Rewriter(transcode=True) rewrites it as UTF-8)"
            )
        if self._sniff:
            sample = bytes(data[:SNIFF_BYTES + 4])
            if not encoding.ascii_compatible and bom is None:
                sample = sample.decode(encoding.codec, "replace").encode("utf-8")
            verdict = classify_content(sample[:SNIFF_BYTES],
                                       final or len(data) >= SNIFF_BYTES)
            if verdict == NEED_MORE:
                self._held = bytearray(data)
                return b""
            if verdict is not None:
                return self._pass_held(f"not HTML: {verdict}")
        self._held = None
        held = bytes(data)
        if encoding.ascii_compatible:
            self.encoding = self.output_encoding = encoding.name
            self._start_engine(encoding)
            self._fast = not self._meta_pending
            return self._feed_engine(held)
        # Transcoding: decode incrementally, rewrite as UTF-8, output UTF-8 (with a BOM).
        self.encoding = encoding.name
        self.output_encoding = "utf-8"
        self._meta_pending = False
        self._start_engine(UTF_8)
        self._transcoder = encoding.incremental_decoder("replace")
        return self._run_lexer(b"\xef\xbb\xbf" + self._transcode_chunk(held[bom_length:]))

    def _pass_held(self, reason: str) -> bytes:
        data = self._held
        self._held = None
        self._passthrough = True
        self.passthrough_reason = reason
        return bytes(data or b"")

    # _start_engine(encoding) is StreamBase's: it makes the engine (sink, simulator, lexer).

    # ------------------------------------------------------------------ the engine

    def _transcode_chunk(self, chunk: bytes | bytearray | memoryview, final: bool = False) -> bytes:
        return self._transcoder.decode(bytes(chunk), final).encode("utf-8", "surrogatepass")  # type: ignore[no-any-return]

    def _feed_engine(self, chunk: bytes | bytearray | memoryview) -> bytes:
        if self._transcoder is not None:
            chunk = self._transcode_chunk(chunk)
        return self._run_lexer(chunk)

    def _run_lexer(self, chunk: bytes | bytearray | memoryview) -> bytes:
        lexer = self._lexer
        sink = self._sink
        assert lexer is not None and sink is not None
        watching = self._meta_pending   # the <meta> handler needs to find this stream
        if watching:
            previous = getattr(_active, "stream", None)
            _active.stream = self
        try:
            lexer.feed_bytes(chunk)
        except BaseException as exc:
            return self._engine_failed(exc)
        finally:
            if watching:
                _active.stream = previous
        return sink.take()

    def _engine_failed(self, exc: BaseException) -> bytes:
        """The engine raised ``exc`` while reading a chunk: pass the rest through (a limit,
        with ``on_limit="passthrough"``: returns the output) or fail the stream (re-raises)."""
        self._fast = False
        if isinstance(exc, BufferLimitExceeded) and self._on_limit == "passthrough":
            return self._start_passthrough(exc)
        self._error = exc
        raise exc

    def _start_passthrough(self, exc: BufferLimitExceeded) -> bytes:
        # What was rewritten so far, then every input byte from where rewriting stopped.
        assert self._lexer is not None and self._sink is not None
        self._passthrough = True
        self.passthrough_reason = str(exc)
        return self._sink.take() + self._lexer.unconsumed(self._sink.consumed)

    def _on_meta(self, element: Element) -> None:
        """A ``<meta>`` element (``adjust_charset_on_meta_tag``): the first one naming an
        ASCII-compatible encoding decides the encoding from here on."""
        if not self._meta_pending or element.namespace_uri != HTML_NS:
            return
        encoding = meta_element_encoding(element.get_attribute)
        if encoding is None or not encoding.ascii_compatible:
            return
        self._meta_pending = False
        if encoding.name == self.encoding:
            return
        assert self._sink is not None
        codec = encoding.codec
        program = self._rewriter._program_for(codec, self._selectors)
        decoder = None
        if encoding.multibyte or (encoding.name == "utf-8" and not self._hold_utf8):
            decoder = encoding.incremental_decoder()
        self._sink.set_encoding(codec, program, decoder)
        self.encoding = self.output_encoding = encoding.name

    # close() -> bytes is StreamBase.close (C): the engine's end directly while ``_fast``, and
    # _close_slow in every other case.

    def _close_slow(self) -> bytes:
        self._plain = False
        self._check()
        self._busy = True
        try:
            return self._close()
        finally:
            self._busy = False

    def _close(self) -> bytes:
        out = b""
        if self._held is not None:
            try:
                out = self._decide(final=True)
            except BaseException as exc:
                self._error = exc
                raise
        self._fast = False      # (after _decide, which sets it when it starts the engine)
        if self._passthrough:
            self._closed = True
            if self._transcoder is not None:
                out += self._transcode_chunk(b"", True)
            return out
        lexer = self._lexer
        sink = self._sink
        assert lexer is not None and sink is not None
        if self._transcoder is not None:
            rest = self._transcode_chunk(b"", True)
            if rest:
                out += self._run_lexer(rest)
                if self._passthrough:
                    self._closed = True
                    return out
        watching = self._meta_pending
        if watching:
            previous = getattr(_active, "stream", None)
            _active.stream = self
        try:
            lexer.close()
            sink.finish()
            sink.run_end_handlers()
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            if watching:
                _active.stream = previous
            # The lexer and its sink refer to each other: part them, so that the document's
            # buffers are freed as soon as the stream is (not at the next garbage collection).
            lexer.sink = None
        self._closed = True
        return out + sink.take()
