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

Per-document state: a stream carries a context (``Rewriter.stream(context=...)``, a new dict by
default), which every unit a handler gets has as ``unit.context``; handlers shared by many
documents keep their per-document state there.

The stream itself is compiled (:class:`RewriterStream`, ``_engine/stream.pyx``): a Rewriter hands
each stream a ``CompiledRules`` (its rules compiled for a codec, and its settings) and nothing
else of itself.

A new Rewriter is cheap (a Rewriter per request is a common idiom): selectors are parsed once
per process (``parse_selector``'s cache, by text and namespaces), and a rule set's selectors are
compiled once per process and codec (``_PROGRAMS``: the matcher's program, the tags whose
attributes it reads and the lexer's attribute policy, by the selectors' keys), shared by every
rewriter with the same selectors; the handlers stay each rewriter's own.  Both caches are
:class:`~htmlstream.CompileCache` s (bounded, thread-safe); see docs/design/stream-costs.md,
"A new rewriter per document".
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
)
from typing import IO, Any, Generic, Literal, Protocol, TypeAlias, TypeVar, overload

from htmlstream._engine.lexer import DEFAULT_MAX_ATTRIBUTES, DEFAULT_MAX_BUFFER_SIZE
from htmlstream._engine.matcher import Program
from htmlstream._engine.minifier import Minifier
from htmlstream._engine.rewriter import attribute_policy_for
from htmlstream._engine.rules import (
    CompiledRules,
    MetaCharsetRule,
    RewriterSettings,
    Rules,
    TextFilter,
)
from htmlstream._engine.stream import RewriterStream, check_encoding
from htmlstream.astream import AsyncRewriterStream
from htmlstream.caching import CompileCache
from htmlstream.encoding import Encoding
from htmlstream.errors import BYTES_LIKE, ParseErrorCallback, check_callable, check_type
from htmlstream.handlers import (
    CommentHandler,
    DoctypeHandler,
    DocumentContentHandlers,
    ElementContentHandlers,
    ElementHandler,
    EndHandler,
    TextHandler,
)
from htmlstream.selectors import (
    SelectorKey,
    attribute_tags,
    parse_selector_key,
    selector_key,
)

__all__ = [
    "AsyncRewriterStream", "IgnoredTags", "Minifier", "OnLimit", "OutputStage",
    "PassthroughHook", "Rewriter",
    "RewriterStream", "StageFactory", "TextFilter",
]

#: What a stream does when a limit is exceeded (``Rewriter(on_limit=...)``).
OnLimit: TypeAlias = Literal["raise", "passthrough"]

#: What a stream does with the tags a browser's tree builder ignores
#: (``Rewriter(ignored_tags=...)``).
IgnoredTags: TypeAlias = Literal["keep", "remove"]

T = TypeVar("T")
_E = TypeVar("_E", bound=ElementHandler)
_T = TypeVar("_T", bound=TextHandler)
_C = TypeVar("_C", bound=CommentHandler)
_F = TypeVar("_F", bound=Callable[..., Any])


#: The selector of the internal ``<meta charset>`` rule (``adjust_charset_on_meta_tag``).
_META_SELECTOR = parse_selector_key("meta")
#: Its handler: the sink hands the element to its stream's encoding switch.
_META_RULE = MetaCharsetRule()

#: What a rule set's compiled selectors depend on: the codec, whether the ``<meta charset>``
#: rule comes first, and each rule's selector key (text and namespaces), in rule order.
_ProgramKey: TypeAlias = tuple[str, bool, tuple[SelectorKey, ...]]


class _CompiledSelectors:
    """A rule set's selectors compiled for one codec: the matcher's program and the start tags
    whose attributes they may read.  Immutable once built; shared by every rewriter whose
    rules have the same selectors (the handlers are each rewriter's own)."""

    __slots__ = ("attribute_policy", "attribute_tags", "program", "program_for", "selectors")

    def __init__(self, key: _ProgramKey) -> None:
        codec, meta, keys = key
        #: The same selectors' program for another codec (CompiledRules.program_for: a
        #: <meta charset> switch), from the same cache.
        self.program_for: Callable[[str], Program] = (
            lambda other: _PROGRAMS.get((other, meta, keys)).program)
        selectors = [parse_selector_key(k) for k in keys]
        if meta:
            selectors.insert(0, _META_SELECTOR)
        self.selectors = selectors
        self.program = Program(selectors, codec)
        self.attribute_tags = tags = attribute_tags(selectors)
        self.attribute_policy = None if tags is None else attribute_policy_for(tags)


#: Compiled selectors by rule set and codec (see _CompiledSelectors): a new Rewriter with the
#: rules of one made before compiles nothing.  (1024 rule sets: a program is a few KB.)
_PROGRAMS: CompileCache[_ProgramKey, _CompiledSelectors] = CompileCache(
    _CompiledSelectors, maxsize=1024)
class Recipe(Protocol):
    """What :meth:`Rewriter.use` takes: an object that registers handlers on a rewriter."""

    def apply(self, rewriter: Rewriter, /) -> None:
        """Register the recipe's handlers on ``rewriter``."""


#: A per-document context (``Rewriter.stream(context=...)``).
Context = MutableMapping[str, Any]


class OutputStage(Protocol):
    """What :meth:`Rewriter.pipe` runs a stream's output through, one per stream: like the
    stream itself, ``feed(bytes) -> bytes`` for the output of each ``feed()`` and ``close()
    -> bytes`` at the end (the output bytes it holds back, it writes there)."""

    def feed(self, data: bytes, /) -> bytes:
        """The stage's output for the next output bytes of the stream."""

    def close(self) -> bytes:
        """The rest of the stage's output (the stream's output has ended)."""


#: What :meth:`Rewriter.pipe` takes: called with the stream's output encoding (a Python
#: codec name, e.g. ``"utf-8"``) and its context, at the stream's first output; returns the
#: stream's :class:`OutputStage`.
StageFactory = Callable[[str, Context], OutputStage]

#: What ``Rewriter.on_document(passthrough=...)`` takes: called with the document's context and
#: the stream's ``passthrough_reason`` when the stream passes its input through unchanged.
PassthroughHook = Callable[[Context, str], object]


def _check_callable(fn: object) -> None:
    if fn is not None and not callable(fn):
        raise TypeError(f"handler {fn!r} is not callable")


def _check_handlers(where: str, **handlers: object) -> None:
    for name, fn in handlers.items():
        if fn is not None:
            check_callable(fn, where, name, f"a callable (a {name} handler) or None")


def _is_async(fn: object) -> bool:
    """Whether the handler ``fn`` is async: an ``async def`` (function, bound method, partial),
    or an object whose ``__call__`` is one."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 (the method, not callability)
    return not inspect.isroutine(fn) and inspect.iscoroutinefunction(call)


def _handler_name(fn: object) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _method(obj: object, name: str) -> Callable[..., Any] | None:
    fn = getattr(obj, name, None)
    return fn if callable(fn) else None


def _text_filter(chars: str | TextFilter | None) -> TextFilter | None:
    if chars is None or isinstance(chars, TextFilter):
        return chars
    if not isinstance(chars, str):
        raise TypeError(f"text_filter must be a str or a TextFilter, not "
                        f"{type(chars).__name__}")
    return TextFilter(chars)


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


class _RulesSetting(_Setting[T]):
    """A setting that changes the compiled rules (the ``<meta charset>`` rule): setting it
    recompiles them for the streams opened after it."""

    def __set__(self, rewriter: Rewriter, value: T) -> None:
        setattr(rewriter._settings, self._name, value)
        rewriter._compiled = None


#: A handler list's entries: ``(seq, fn)``, or ``(seq, fn, filter)`` for a text handler
#: registered with ``text_filter=``.
_Entries: TypeAlias = list[
    tuple[int, Callable[..., Any]] | tuple[int, Callable[..., Any], TextFilter]]


#: The handler list of a rule without handlers of one kind (shared: never changed).
_NO_ENTRIES: _Entries = []


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
        on_error: called with each parse error of the tokenizer, a
            :class:`~htmlstream.ParseError`, in input order, while a document is rewritten
            (:meth:`stream` takes one per document instead).  By default parse errors are not
            looked for; reporting them changes nothing in the output (docs/guide/errors.md).
        ignored_tags: what happens to the tags that make no element and end none in a
            browser: a start tag its tree builder ignores (a ``<td>`` outside a table, a
            second ``<head>``, ``<frame>`` outside a frameset), an end tag that ends no open
            element made by a start tag of the source (a stray ``</div>``; the end tag of an
            element the tree builder made by itself, an implied ``<tbody>`` or a re-opened
            ``<b>``; ``</body>`` and ``</html>``, which end nothing in a browser; ``</p>`` and
            ``</br>`` with no element to end, for which a browser makes an empty ``<p>`` or a
            ``<br>``), and the bytes the
            tokenizer drops (a tag left unfinished at the end of input, ``</>``).  ``"keep"``
            (the default) copies them as they are; ``"remove"`` leaves them out of the
            output, so that every tag in it is one that handlers saw (what
            ``recipes.sanitize`` needs).  An element beyond the tree builder's depth bound
            (1024 open elements) gets no end-tag work, and with ``"remove"`` its end tag
            counts as ignored.
        esi_tags: read Edge Side Includes tags as lol-html's ``enable_esi_tags`` does:
            ``<esi:include>`` and ``<esi:comment>`` are elements with no content even without
            ``/>`` (``can_have_content`` false, no end-tag handlers), so they never open an
            element that holds the rest of the page, and they leave the tree builder's state
            as it was (they stand for content put in their place).  ``<esi:remove>`` is an
            ordinary element.  Select them with ``esi\\:include``.  Off by default: a browser
            reads ``<esi:include src=x>`` as the start of an unknown element
            (docs/guide/esi.md).
    """

    # The settings (Args above), kept in ``_settings``.
    scripting: _Setting[bool] = _Setting()
    strict: _Setting[bool] = _Setting()
    esi_tags: _Setting[bool] = _Setting()
    max_buffer_size: _Setting[int] = _Setting()
    max_attributes: _Setting[int] = _Setting()
    on_limit: _Setting[OnLimit] = _Setting()
    adjust_charset_on_meta_tag: _RulesSetting[bool] = _RulesSetting()
    sniff: _Setting[bool] = _Setting()
    transcode: _Setting[bool] = _Setting()
    on_error: _Setting[ParseErrorCallback | None] = _Setting()
    ignored_tags: _Setting[IgnoredTags] = _Setting()
    #: Whether streams scan past the attributes no rule reads (the engine's two speeds, see
    #: DESIGN.md); tests set it to False to compare with every tag lexed in full.
    _scanner: _Setting[bool] = _Setting()      # (True unless set)
    #: Whether streams may let their open-element mirror fall behind where no element has work
    #: left (the sink's lazy mirror, see OpenElements.sync_stack); tests set it to False.
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
        on_error: ParseErrorCallback | None = None,
        ignored_tags: IgnoredTags = "keep",
        esi_tags: bool = False,
    ) -> None:
        if on_limit not in ("raise", "passthrough"):
            raise ValueError(f"on_limit must be 'raise' or 'passthrough', not {on_limit!r}")
        if ignored_tags not in ("keep", "remove"):
            raise ValueError(f"ignored_tags must be 'keep' or 'remove', not {ignored_tags!r}")
        # (the settings' C fields set directly: what the _Setting descriptors do, without a
        # Python call each; a new Rewriter is made per request by some)
        settings = self._settings = RewriterSettings()
        self._compiled: CompiledRules | None = None
        settings.adjust_charset_on_meta_tag = bool(adjust_charset_on_meta_tag)
        settings.sniff = bool(sniff)
        settings.transcode = transcode = bool(transcode)
        settings.ignored_tags = ignored_tags
        #: The documents' encoding (its WHATWG name, e.g. ``"windows-1252"``).
        self.encoding = check_encoding(encoding, transcode).name
        settings.max_attributes = max_attributes
        settings.on_limit = on_limit
        settings.scripting = scripting
        settings.strict = strict
        settings.esi_tags = bool(esi_tags)
        settings.max_buffer_size = max_buffer_size
        settings.on_error = on_error
        # The rules, one entry per rule in each list: its selector key (selector_key), its
        # element, text and comment handlers, and its element handlers again if they also run
        # for implied elements (else []).  A rule's handler lists are made by on() and never
        # changed after: the compiled rules share them.
        self._keys: list[SelectorKey] = []
        self._element: list[_Entries] = []
        self._text: list[_Entries] = []
        self._comments: list[_Entries] = []
        self._implied: list[_Entries] = []
        self._doc_text: _Entries = []
        self._doc_comments: _Entries = []
        self._doc_doctype: _Entries = []
        self._doc_end: list[Callable[..., Any]] = []
        self._stages: list[StageFactory] = []
        self._doc_passthrough: list[PassthroughHook] = []
        self._seq = 0
        self._lock = threading.Lock()
        #: The async handlers registered (described for error messages): streams of a
        #: rewriter that has any run on a fiber that can pause (htmlstream.astream).
        self._async: list[str] = []

    def _check_encoding(self, encoding: str | Encoding) -> Encoding:
        """The encoding ``encoding`` names, if streams can handle it (EncodingError if not)."""
        return check_encoding(encoding, self.transcode)

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
        implied: bool = False,
        text_filter: str | TextFilter | None = None,
    ) -> Rewriter:
        """Run handlers on the elements ``selector`` matches (and on the text and comments
        inside them, descendants included).

        ``handler`` may be an object with ``element``/``text``/``comments`` methods (the shape of
        the Workers ``HTMLRewriter`` and python-lolhtml); keyword handlers are added to it.
        ``namespaces`` maps the selector's namespace prefixes to URIs (``svg|rect`` with
        ``{"svg": "http://www.w3.org/2000/svg"}``; ``""`` is the default namespace), as
        :func:`~htmlstream.parse_selector` takes them.  Returns the rewriter, so calls chain.

        ``implied=True``: the element handler also runs for the matching ``<html>``,
        ``<head>`` and ``<body>`` elements the tree builder makes without a start tag of their
        own (implied by other content; a ``<head>`` made and closed at once by, e.g., a ``<p>``
        at the start), in document order with the other elements.  Its Element has
        ``implied`` true, no attributes (setting or removing one, renaming, ``remove``,
        ``replace``, ``remove_and_keep_content``, ``set_inner_content`` and ``capture`` raise
        ``ValueError``); ``before`` and ``prepend`` insert where the element begins (before the
        tag or the text that implied it), ``append``, ``on_end_tag`` and ``after`` where it
        ends (its end tag if the source has one, else a zero-width implicit EndTag).  Other
        implied elements (``tbody``, ``tr``, ``colgroup``, re-opened formatting elements) are
        not included.  Rules without ``implied=True`` never see implied elements.

        ``text_filter`` (a few ASCII characters, e.g. ``"@"``) spares the text handler the text
        that cannot concern it, without a Python call: a text node that comes in one piece
        (one :class:`~htmlstream.TextChunk`, its ``last_in_text_node`` true) goes to the handler
        only if its raw bytes hold one of the characters.  Every piece of a text node that
        comes in several pieces (cut where a chunk of input ends, or where the open elements
        change) goes to it whatever the pieces hold, so a handler that carries the end of one
        piece over to the next sees the node to its last piece.  The test is on the raw bytes,
        before other handlers change the chunk: a character written as a character reference
        (``&#64;``) is not found (add ``"&"`` to the filter to be handed such text too).
        A :class:`TextFilter` says more: ``TextFilter("&<>", undecodable=True,
        text_types={TextType.DATA})`` also hands over text with bytes the document's encoding
        cannot decode, and only filters text of the types named (the others all go to the
        handler).
        """
        check_type(selector, str, "Rewriter.on()", "selector", "a str (a CSS selector)")
        _check_handlers("Rewriter.on()", element=element, text=text, comments=comments)
        if handler is not None:
            element = element or _method(handler, "element")
            text = text or _method(handler, "text")
            comments = comments or _method(handler, "comments")
            if element is None and text is None and comments is None:
                raise TypeError(f"Rewriter.on(): handler must be an object with element, text "
                                f"or comments methods, not {type(handler).__name__}")
        filter_ = None if text_filter is None else _text_filter(text_filter)
        key = selector if namespaces is None else selector_key(selector, namespaces)
        parse_selector_key(key)     # (a bad selector fails here; parsed once per process)
        with self._lock:
            for fn in (element, text, comments):
                if fn is not None and _is_async(fn):
                    self._async.append(f"{_handler_name(fn)} (on({selector!r}))")
            # (one sequence number per handler, in the order element, text, comments)
            element_entries = text_entries = comment_entries = _NO_ENTRIES
            if element is not None:
                self._seq += 1
                element_entries = [(self._seq, element)]
            if text is not None:
                self._seq += 1
                text_entries = [(self._seq, text) if filter_ is None
                                else (self._seq, text, filter_)]
            if comments is not None:
                self._seq += 1
                comment_entries = [(self._seq, comments)]
            self._keys.append(key)
            self._element.append(element_entries)
            self._text.append(text_entries)
            self._comments.append(comment_entries)
            self._implied.append(element_entries if implied else _NO_ENTRIES)
            self._compiled = None
        return self

    def on_document(
        self,
        handler: DocumentContentHandlers | None = None,
        *,
        doctype: DoctypeHandler | None = None,
        comments: CommentHandler | None = None,
        text: TextHandler | None = None,
        end: EndHandler | None = None,
        text_filter: str | TextFilter | None = None,
        passthrough: PassthroughHook | None = None,
    ) -> Rewriter:
        """Run handlers on the whole document: its doctype, every comment, every text chunk,
        and its end (``end`` handlers run in registration order).  ``text_filter``: as in
        :meth:`on`, the text handler gets a text node that comes in one piece only if it holds
        one of these characters (or passes the :class:`TextFilter`).

        ``passthrough``: called as ``passthrough(context, reason)``, once, when a stream stops
        rewriting and passes its input through unchanged (UTF-16 input without ``transcode``,
        content that is not HTML, a limit with ``on_limit="passthrough"``; ``reason`` is the
        stream's ``passthrough_reason``).  No handler runs on what passes through, the ``end``
        handlers included: a recipe that promises something in the context after
        ``close()`` (a report) makes it here too."""
        _check_handlers("Rewriter.on_document()", doctype=doctype, comments=comments, text=text,
                        end=end, passthrough=passthrough)
        if handler is not None:
            doctype = doctype or _method(handler, "doctype")
            comments = comments or _method(handler, "comments")
            text = text or _method(handler, "text")
            end = end or _method(handler, "end")
        _check_callable(end)
        filter_ = _text_filter(text_filter)
        with self._lock:
            self._add_handlers(((doctype, self._doc_doctype, None),
                                (comments, self._doc_comments, None),
                                (text, self._doc_text, filter_)), "on_document()")
            if end is not None:
                self._doc_end.append(end)
                if _is_async(end):
                    self._async.append(f"{_handler_name(end)} (end handler of on_document())")
            if passthrough is not None:
                self._doc_passthrough.append(passthrough)
            self._compiled = None
        return self

    def use(self, *recipes: Recipe) -> Rewriter:
        """Add the handlers of each recipe (``htmlstream.recipes``), in order; returns the
        rewriter, so calls chain: ``Rewriter().use(recipes.https_upgrade()).on(...)``.

        A recipe is any object with an ``apply(rewriter)`` method that registers its handlers
        with :meth:`on` and :meth:`on_document`; its handlers run in registration order with
        everyone else's, in the same pass.  Recipes keep per-document state in ``unit.context``
        (the stream's context), never in themselves: one recipe object serves any number of
        rewriters and documents, in any number of threads.
        """
        for recipe in recipes:
            apply = getattr(recipe, "apply", None)
            if not callable(apply):
                raise TypeError(f"Rewriter.use(): recipes must be recipes (objects with an "
                                f"apply(rewriter) method), not {type(recipe).__name__}")
            apply(self)
        return self

    def pipe(self, factory: StageFactory) -> Rewriter:
        """Run the output of every stream through an output stage (``recipes.minify`` is
        one): ``factory(encoding, context)`` makes one for each stream, at its first output,
        with the stream's output encoding (a Python codec name) and context; the stage gets
        the output of each ``feed()`` (``stage.feed(bytes) -> bytes``) and ends with the
        stream (``stage.close() -> bytes``), so it sees what every handler and recipe changed,
        in the same streaming pass.  Stages run in the order they were added.  A stream that
        passes its input through unchanged (content that is not HTML, UTF-16 without
        ``transcode``) has none; after a limit with ``on_limit="passthrough"``, the stages
        end with the rewritten part and the rest passes them by.  Returns the rewriter."""
        check_callable(factory, "Rewriter.pipe()", "factory",
                       "a callable: factory(encoding, context) -> stage")
        with self._lock:
            self._stages.append(factory)
            self._compiled = None
        return self

    def element(
        self, selector: str, *, namespaces: Mapping[str, str] | None = None,
        implied: bool = False,
    ) -> Callable[[_E], _E]:
        """Decorator: ``@rw.element("a[href]")`` is ``rw.on("a[href]", element=fn)``
        (``implied``: as for :meth:`on`)."""
        return self._decorator(selector, "element", namespaces, implied)

    def text(
        self, selector: str, *, namespaces: Mapping[str, str] | None = None,
        text_filter: str | TextFilter | None = None,
    ) -> Callable[[_T], _T]:
        """Decorator: ``@rw.text("p")`` is ``rw.on("p", text=fn)`` (``text_filter``: see
        :meth:`on`)."""
        check_type(selector, str, "Rewriter.text()", "selector", "a str (a CSS selector)")

        def register(fn: _T) -> _T:
            self.on(selector, namespaces=namespaces, text=fn, text_filter=text_filter)
            return fn
        return register

    def comments(
        self, selector: str, *, namespaces: Mapping[str, str] | None = None
    ) -> Callable[[_C], _C]:
        """Decorator: ``@rw.comments("div")`` is ``rw.on("div", comments=fn)``."""
        return self._decorator(selector, "comments", namespaces)

    def _decorator(
        self, selector: str, kind: str, namespaces: Mapping[str, str] | None,
        implied: bool = False,
    ) -> Callable[[_F], _F]:
        check_type(selector, str, f"Rewriter.{kind}()", "selector", "a str (a CSS selector)")

        def register(fn: _F) -> _F:
            # (the public decorators bind _F to the handler type of ``kind``)
            self.on(selector, namespaces=namespaces, implied=implied,
                    **{kind: fn})  # type: ignore[arg-type]
            return fn
        return register

    def _add_handlers(
        self, triples: tuple[tuple[Callable[..., Any] | None, _Entries, TextFilter | None], ...],
        where_from: str,
    ) -> None:
        """Append each handler to its list with the next sequence number (and its text filter,
        if any) (lock held); all are checked first, so a bad one adds none.  ``where_from``:
        the call that registers them (for the message about async handlers)."""
        for fn, _, _ in triples:
            _check_callable(fn)
        for fn, where, filter_ in triples:
            if fn is not None:
                if _is_async(fn):
                    self._async.append(f"{_handler_name(fn)} ({where_from})")
                where.append((self._next(), fn) if filter_ is None
                             else (self._next(), fn, filter_))

    def _compiled_rules(self) -> CompiledRules:
        """What a stream needs from the rewriter: the rules as they are now, compiled, and the
        settings (one object, shared by the streams opened until the rules change)."""
        compiled = self._compiled      # (no lock needed to read)
        if compiled is not None:
            return compiled
        with self._lock:
            if self._compiled is None:
                # (a snapshot of the lists of rules; each rule's handler lists never change)
                element = list(self._element)
                text = list(self._text)
                comments = list(self._comments)
                implied = list(self._implied)
                meta = bool(self._settings.adjust_charset_on_meta_tag)
                if meta:
                    # First of all: it runs before the user's handlers on the same <meta>.
                    element.insert(0, [(0, _META_RULE)])
                    text.insert(0, [])
                    comments.insert(0, [])
                    implied.insert(0, [])
                declared = check_encoding(self.encoding, self._settings.transcode)
                codec = declared.codec if declared.ascii_compatible else "utf-8"
                # (the selectors compiled once per process: see _PROGRAMS)
                compiled_selectors = _PROGRAMS.get((codec, meta, tuple(self._keys)))
                # (the document handlers' lists as they are now: on_document adds to them)
                first = Rules(
                    compiled_selectors.program, element, text, comments,
                    self._doc_text[:], self._doc_comments[:], self._doc_doctype[:],
                    self._doc_end[:], implied,
                )
                first.attribute_tags = compiled_selectors.attribute_tags
                first.attribute_policy = compiled_selectors.attribute_policy
                compiled = CompiledRules(self._settings, first, codec,
                                         compiled_selectors.selectors, meta)
                compiled.stages = tuple(self._stages) or None
                compiled.passthrough_hooks = tuple(self._doc_passthrough) or None
                compiled.program_for = compiled_selectors.program_for
                self._compiled = compiled
            return self._compiled

    # ------------------------------------------------------------------ running

    def stream(
        self,
        *,
        encoding: str | None = None,
        context: Context | None = None,
        on_error: ParseErrorCallback | None = None,
    ) -> RewriterStream:
        """A new stream for one document, in the rewriter's encoding or in ``encoding`` (a
        label, e.g. what :func:`htmlstream.sniff_encoding` found for this document).

        ``context``: the document's context (default: a new empty dict), ``stream.context``;
        every unit a handler gets for this document has it as ``unit.context``, so handlers
        shared by many documents keep per-document state there.  ``on_error``: this
        document's parse-error callback (default: the rewriter's ``on_error``).
        """
        if self._async:
            self._refuse_sync("stream()")
        return RewriterStream(self._compiled or self._compiled_rules(),
                              self.encoding if encoding is None else encoding, context,
                              on_error=on_error)

    @property
    def has_async_handlers(self) -> bool:
        """Whether an ``async def`` handler is registered: then only the async entry points
        (:meth:`astream`, :meth:`arewrite`, :meth:`rewrite_aiter`) can run the rewriter, and
        integrations choose them."""
        return bool(self._async)

    def _refuse_sync(self, entry: str) -> None:
        """A sync entry point of a rewriter with async handlers: TypeError, naming them."""
        raise TypeError(
            f"{entry} cannot run async handlers: {', '.join(self._async)} "
            f"{'is' if len(self._async) == 1 else 'are'} async; use astream(), await "
            f"arewrite() or rewrite_aiter() instead")

    def astream(
        self,
        *,
        encoding: str | None = None,
        context: Context | None = None,
        on_error: ParseErrorCallback | None = None,
    ) -> AsyncRewriterStream:
        """A new async stream for one document (``await s.feed(chunk)``, ``await s.close()``):
        it runs ``async def`` handlers as well as sync ones, one at a time in document order,
        the engine paused at a unit while its handler waits (see :mod:`htmlstream.astream` and
        the guide's "Async handlers").  Arguments as for :meth:`stream`.  Handlers run in the
        :mod:`contextvars` context current here.  With only sync handlers it costs what
        :meth:`stream` costs."""
        stream = RewriterStream(self._compiled or self._compiled_rules(),
                                self.encoding if encoding is None else encoding, context,
                                on_error=on_error)
        return AsyncRewriterStream(stream, fibered=bool(self._async))

    @overload
    async def arewrite(self, data: str, *, context: Context | None = None) -> str: ...
    @overload
    async def arewrite(
        self, data: bytes | bytearray | memoryview, *, context: Context | None = None
    ) -> bytes: ...

    async def arewrite(
        self, data: str | bytes | bytearray | memoryview, *, context: Context | None = None
    ) -> str | bytes:
        """:meth:`rewrite` for rewriters with async handlers: a whole document, bytes to bytes
        or str to str."""
        if isinstance(data, str):
            stream = AsyncRewriterStream(
                RewriterStream(self._compiled_rules(), "utf-8", context, _text=True),
                fibered=bool(self._async))
            raw = data.encode("utf-8", "surrogatepass")
            out = await stream.feed(raw)
            return (out + await stream.close()).decode("utf-8", "surrogatepass")
        astream = self.astream(context=context)
        out = await astream.feed(data)
        return out + await astream.close()

    @overload
    def rewrite(self, data: str, *, context: Context | None = None) -> str: ...
    @overload
    def rewrite(
        self, data: bytes | bytearray | memoryview, *, context: Context | None = None
    ) -> bytes: ...

    def rewrite(
        self, data: str | bytes | bytearray | memoryview, *, context: Context | None = None
    ) -> str | bytes:
        """Rewrite a whole document: bytes give bytes (in the rewriter's encoding); str gives
        str (processed as UTF-8 whatever the configured encoding).  ``context``: the
        document's context (see :meth:`stream`)."""
        if isinstance(data, str):
            if self._async:
                self._refuse_sync("rewrite()")
            stream = RewriterStream(self._compiled_rules(), "utf-8", context, _text=True)
            raw = data.encode("utf-8", "surrogatepass")
            return (stream.feed(raw) + stream.close()).decode("utf-8", "surrogatepass")
        if not isinstance(data, BYTES_LIKE):
            check_type(data, BYTES_LIKE, "Rewriter.rewrite()", "data",
                       "str or bytes-like (bytes, bytearray, memoryview)")
        if self._async:
            self._refuse_sync("rewrite()")
        stream = self.stream(context=context)
        return stream.feed(data) + stream.close()

    def rewrite_iter(
        self, chunks: Iterable[bytes], *, context: Context | None = None
    ) -> Iterator[bytes]:
        """Rewrite a document given as an iterable of byte chunks; yield output chunks
        (empty ones are skipped).  ``context``: the document's context (see :meth:`stream`)."""
        if isinstance(chunks, (str, *BYTES_LIKE)) or not isinstance(chunks, Iterable):
            raise TypeError(f"Rewriter.rewrite_iter(): chunks must be an iterable of bytes "
                            f"chunks (a whole document: rewrite()), not {type(chunks).__name__}")
        if self._async:
            self._refuse_sync("rewrite_iter()")
        return self._rewrite_iter(chunks, context)

    def _rewrite_iter(self, chunks: Iterable[bytes], context: Context | None) -> Iterator[bytes]:
        stream = self.stream(context=context)
        for chunk in chunks:
            out = stream.feed(chunk)
            if out:
                yield out
        out = stream.close()
        if out:
            yield out

    async def rewrite_aiter(
        self, chunks: AsyncIterable[bytes], *, context: Context | None = None
    ) -> AsyncIterator[bytes]:
        """Rewrite a document given as an async iterable of byte chunks; yield output chunks
        (empty ones are skipped).  Async handlers are awaited (see :meth:`astream`), and the
        output decided before a handler's unit is yielded before it waits.  ``context``: the
        document's context (see :meth:`stream`)."""
        check_type(chunks, AsyncIterable, "Rewriter.rewrite_aiter()", "chunks",
                   "an async iterable of bytes chunks")
        if not self._async:
            stream = self.stream(context=context)
            async for chunk in chunks:
                out = stream.feed(chunk)
                if out:
                    yield out
            out = stream.close()
            if out:
                yield out
            return
        astream = self.astream(context=context)
        async for chunk in chunks:
            pieces = astream.feed_iter(chunk)
            try:
                async for out in pieces:
                    yield out
            finally:
                await pieces.aclose()
        pieces = astream.close_iter()
        try:
            async for out in pieces:
                yield out
        finally:
            await pieces.aclose()

    def rewrite_file(
        self,
        src: str | os.PathLike[str] | IO[bytes],
        dst: str | os.PathLike[str] | IO[bytes],
        *,
        chunk_size: int = 65536,
        context: Context | None = None,
    ) -> None:
        """Rewrite the file ``src`` into ``dst`` (paths or binary file objects), streaming.
        ``context``: the document's context (see :meth:`stream`).  A ``dst`` path's missing
        folders are created."""
        for name, value in (("src", src), ("dst", dst)):
            if not isinstance(value, (str, os.PathLike)) and not callable(
                    getattr(value, "read" if name == "src" else "write", None)):
                raise TypeError(f"Rewriter.rewrite_file(): {name} must be a path (str, "
                                f"os.PathLike) or a binary file, not {type(value).__name__}")
        if self._async:
            self._refuse_sync("rewrite_file()")
        src_file = open(src, "rb") if isinstance(src, (str, os.PathLike)) else src  # noqa: SIM115
        try:
            if isinstance(dst, (str, os.PathLike)):
                os.makedirs(os.path.dirname(os.fspath(dst)) or ".", exist_ok=True)
            dst_file = (open(dst, "wb") if isinstance(dst, (str, os.PathLike))  # noqa: SIM115
                        else dst)
            try:
                stream = self.stream(context=context)
                while chunk := src_file.read(chunk_size):
                    dst_file.write(stream.feed(chunk))
                dst_file.write(stream.close())
            finally:
                if dst_file is not dst:
                    dst_file.close()
        finally:
            if src_file is not src:
                src_file.close()
