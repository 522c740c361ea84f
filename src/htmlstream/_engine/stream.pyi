# Type stub for the stream (stream.pyx); documented in htmlstream.rewriter.

from collections.abc import Callable, MutableMapping
from typing import Any, final

from typing_extensions import disjoint_base

from htmlstream._engine.lexer import Lexer
from htmlstream._engine.rules import CompiledRules
from htmlstream.encoding import Encoding
from htmlstream.errors import ParseErrorCallback

def check_encoding(encoding: str | Encoding, transcode: bool) -> Encoding: ...

# An Encoding as a stream reads it (C fields only).
@final
class StreamEncoding: ...

@disjoint_base
class RewriterStream:
    @property
    def context(self) -> MutableMapping[str, Any]: ...
    @property
    def encoding(self) -> str: ...
    @property
    def output_encoding(self) -> str: ...
    @property
    def passthrough_reason(self) -> str | None: ...
    @property
    def offset(self) -> int: ...
    @property
    def _lexer(self) -> Lexer | None: ...
    def __init__(
        self,
        compiled: CompiledRules,
        encoding: str | Encoding,
        context: MutableMapping[str, Any] | None = None,
        *,
        on_error: ParseErrorCallback | None = None,
        _text: bool = False,
    ) -> None: ...
    def feed(self, chunk: bytes | bytearray | memoryview) -> bytes: ...
    def close(self) -> bytes: ...
    def _on_meta(self, element: Any) -> None: ...
    # An async stream's awaiter (htmlstream.astream): called with (result, fn, unit) when a
    # handler returns something other than None.
    _awaiter: Callable[[object, object, object], None] | None
    def _take_before(self, unit: object) -> bytes: ...
