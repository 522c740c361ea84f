# Type stub for what a Rewriter hands to its streams (rules.pyx).

from collections.abc import Callable, Iterable, MutableMapping
from typing import Any, TypeAlias

from typing_extensions import disjoint_base

from htmlstream._engine.lexer import AttributePolicy
from htmlstream._engine.matcher import Program
from htmlstream.selectors import SelectorList
from htmlstream.tokens import TextType

# (seq, fn), or (seq, fn, filter) for a text handler registered with text_filter=
_Handlers: TypeAlias = list[
    tuple[int, Callable[..., Any]] | tuple[int, Callable[..., Any], TextFilter]]

# A Rewriter's settings (its attributes of these names are kept here), read by every stream.
@disjoint_base
class RewriterSettings:
    on_limit: Any
    scripting: Any
    strict: Any
    esi_tags: Any
    max_buffer_size: Any
    max_attributes: Any
    adjust_charset_on_meta_tag: Any
    sniff: Any
    transcode: Any
    on_error: Any
    ignored_tags: Any
    _scanner: Any
    _lazy_mirror: Any
    def __init__(self) -> None: ...

# The rules compiled for one codec: the selector program and the handlers (``(sequence, fn)``
# pairs, the sequence number giving registration order), shared by streams.
@disjoint_base
class Rules:
    program: Program
    element_handlers: list[_Handlers]
    text_handlers: list[_Handlers]
    comment_handlers: list[_Handlers]
    doc_text: _Handlers
    doc_comments: _Handlers
    doc_doctype: _Handlers
    doc_end: list[Callable[..., Any]]
    any_text: bool
    any_element: bool
    any_scoped: bool
    # Per rule: its element handlers if they also run for implied elements, else [].
    implied_handlers: list[_Handlers]
    any_implied: bool
    any_text_filter: bool
    # active rules (a bit mask, or a tuple of indices) -> the text and comment handlers in force
    active_cache: dict[int | tuple[int, ...], tuple[_Handlers, _Handlers]]
    # Names of the start tags whose attributes a rule may read, or None for every start tag.
    attribute_tags: tuple[str, ...] | None
    # Those and the simulator's, worked out for the lexer, or None (worked out at first use).
    attribute_policy: AttributePolicy | None
    def __init__(
        self,
        program: Program,
        element_handlers: list[_Handlers],
        text_handlers: list[_Handlers],
        comment_handlers: list[_Handlers],
        doc_text: _Handlers,
        doc_comments: _Handlers,
        doc_doctype: _Handlers,
        doc_end: list[Callable[..., Any]],
        implied_handlers: list[_Handlers] | None = None,
    ) -> None: ...

# What a stream needs from its Rewriter: the rules for any codec, and the settings.
@disjoint_base
class CompiledRules:
    @property
    def settings(self) -> RewriterSettings: ...
    @property
    def selectors(self) -> list[SelectorList]: ...
    @property
    def meta_rule(self) -> bool: ...
    # Rewriter.pipe's stage factories (a tuple), or None
    stages: tuple[Callable[[str, MutableMapping[str, Any]], Any], ...] | None
    passthrough_hooks: tuple[Callable[[MutableMapping[str, Any], str], Any], ...] | None
    # codec -> the selectors' Program for that codec (a shared cache), or None
    program_for: Callable[[str], Program] | None
    def __init__(
        self,
        settings: RewriterSettings,
        rules: Rules,
        codec: str,
        selectors: list[SelectorList],
        meta_rule: bool,
    ) -> None: ...
    def for_codec(self, codec: str) -> Rules: ...

# What a filtered text handler waits for (Rewriter.on(text_filter=...)); public as
# htmlstream.TextFilter.
@disjoint_base
class TextFilter:
    @property
    def chars(self) -> bytes: ...
    @property
    def undecodable(self) -> bool: ...
    @property
    def text_types(self) -> frozenset[TextType]: ...
    def __init__(
        self, chars: str, *, undecodable: bool = False,
        text_types: Iterable[TextType] | None = None,
    ) -> None: ...

# The handler of the internal <meta charset> rule (the sink hands the element to its stream).
class MetaCharsetRule:
    def __call__(self, element: Any) -> None: ...
