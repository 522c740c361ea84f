# Type stub for the compiled rewriter sink (rewriter.pyx): output assembly and handler dispatch.

from collections.abc import Callable
from typing import Any, TypeAlias, final

from typing_extensions import disjoint_base

from htmlstream._engine.lexer import Lexer, TokenSink
from htmlstream._engine.matcher import Program
from htmlstream._engine.treebuilder import TreeBuilderSimulator

_Handlers: TypeAlias = list[tuple[int, Callable[..., Any]]]

# What a Rewriter compiled: the selector program and the handlers (``(sequence, fn)`` pairs, the
# sequence number giving registration order), shared by its streams.
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
    # Names of the start tags whose attributes a rule may read, or None for every start tag.
    attribute_tags: tuple[str, ...] | None
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
    ) -> None: ...

# Rewriter state of an open element that has work left for its end (C fields only).
@disjoint_base
class OpenElement: ...

# Runs the handlers on the lexer's tokens and assembles the output.
@final
class RewriteSink(TokenSink):
    def __init__(self, rules: Rules, encoding: str) -> None: ...
    # ``scanner``: scan past the attributes nobody reads (False: lex every tag in full).
    def attach(
        self, lx: Lexer, sim: TreeBuilderSimulator, scanner: bool = True, lazy: bool = True
    ) -> None: ...
    def set_encoding(self, encoding: str, program: Program, decoder: Any = None) -> None: ...
    # Stream offset up to which the input has been written to the output (or skipped).
    @property
    def consumed(self) -> int: ...
    # The output assembled so far (and forget it).
    def take(self) -> bytes: ...
    # After the lexer is closed: close what is still open, at the end of the input.
    def finish(self) -> None: ...
    def run_end_handlers(self) -> None: ...

# A Rewriter's settings (its attributes of these names are kept here), read by every stream.
@disjoint_base
class RewriterSettings:
    on_limit: Any
    scripting: Any
    strict: Any
    max_buffer_size: Any
    max_attributes: Any
    adjust_charset_on_meta_tag: Any
    sniff: Any
    transcode: Any
    _scanner: Any
    _lazy_mirror: Any
    def __init__(self) -> None: ...

# An Encoding as a stream reads it (C fields only).
@final
class StreamEncoding: ...

# The C part of htmlstream.rewriter.RewriterStream (its subclass): feed() and close() run the
# engine directly while ``_fast``, and call the subclass's _feed_slow (or _engine_failed) and
# _close_slow otherwise; feed() also starts the engine on a plain first chunk (_plain).
@disjoint_base
class StreamBase:
    _busy: bool
    _fast: bool
    _closed: bool
    _error: BaseException | None
    _fed: int
    _lexer: Lexer | None
    _sink: RewriteSink | None
    _plain: bool
    _rewriter: Any
    _rules: Rules
    _selectors: Any
    _codec: str
    _declared: Any
    _held: bytes | bytearray | None
    _hold_utf8: bool
    encoding: str
    output_encoding: str
    passthrough_reason: str | None
    _on_limit: str
    _sniff: bool
    _transcode: bool
    _text: bool
    _meta_pending: bool
    _passthrough: bool
    _transcoder: Any
    def __init__(self, rewriter: Any, encoding: Any, *, _text: bool = False) -> None: ...
    def _start_engine(self, encoding: Any) -> None: ...
    def feed(self, chunk: bytes | bytearray | memoryview) -> bytes: ...
    def close(self) -> bytes: ...
