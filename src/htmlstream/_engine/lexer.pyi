# Type stub for the compiled WHATWG tokenizer state machine (lexer.pyx).
#
# Only the Python-visible surface is described here; sinks and feedback hooks are Cython classes
# (TokenSink, Feedback) whose methods are C-level and cannot be overridden from Python.

from collections.abc import Iterable
from typing import final

from typing_extensions import disjoint_base

from htmlstream._parse_errors import ErrorChecker

# Default bound of the bytes carried over between chunks (an unfinished token): 4 MiB.
DEFAULT_MAX_BUFFER_SIZE: int
# Default bound of the attributes one tag may have.
DEFAULT_MAX_ATTRIBUTES: int

# Receives the lexer's tokens (subclass in Cython; the base class does nothing).
@disjoint_base
class TokenSink: ...

# Tree-builder feedback hook (subclass in Cython; see treebuilder.TreeBuilderSimulator).
@disjoint_base
class Feedback:
    # The open elements' stack, as the lexer's tag gate reads it: how many open elements are
    # recorded (at most the simulator's max_depth), how many lie beyond (counted, not
    # recorded), and the lowest stack index the last tag (and the text before it) changed.
    @property
    def depth(self) -> int: ...
    @property
    def overflow(self) -> int: ...
    @property
    def changed_from(self) -> int: ...

# Tag names worked out once for Lexer.set_attribute_policy (made by attribute_policy).
@disjoint_base
class AttributePolicy:
    packed: bytes
    filter: int
    long_names: list[bytes]
    unhashable_all: bool

# Work tag names (or tag-name hashes) out once for Lexer.set_attribute_policy.
def attribute_policy(names: Iterable[str | bytes | int]) -> AttributePolicy: ...

# The tokenizer state machine over bytes, resumable at any byte.  With no sink it only scans
# (the passthrough speed of the engine); ``feedback`` is told of every tag (and DOCTYPE, and of
# text while it asks for it) before the sink.
@final
class Lexer:
    sink: TokenSink | None
    feedback: Feedback | None
    # Whether "<![CDATA[" starts a CDATA section (the adjusted current node is foreign).
    cdata_allowed: bool
    # Whether the sink is handed text, and tags (it is always handed every other token).
    want_text: bool
    sink_tags: bool
    # The parse-error checker (htmlstream._parse_errors.ErrorChecker), or None: none is looked
    # for.  It is handed every piece of text and every markup token, in stream order.
    errors: ErrorChecker | None
    def __init__(
        self,
        sink: TokenSink | None = None,
        feedback: Feedback | None = None,
        *,
        initial_text_type: int = 0,
        last_start_tag: str | bytes | None = None,
        max_buffer_size: int = ...,
        hold_utf8: bool = True,
        max_attributes: int = ...,
    ) -> None: ...
    @property
    def max_buffer_size(self) -> int: ...
    @property
    def max_attributes(self) -> int: ...
    # The input from stream offset ``offset`` that is still held (after a limit error: all that
    # was fed from there on).
    def unconsumed(self, offset: int) -> bytes: ...
    # The TextType the lexer reads text in now.
    @property
    def text_type(self) -> int: ...
    # After close(): where the token the input ended inside began (-1: none; see note_eof).
    @property
    def eof_start(self) -> int: ...
    # After close(): whether the input ended inside a CDATA section.
    @property
    def eof_cdata(self) -> bool: ...
    # Number of input bytes fed so far.
    @property
    def offset(self) -> int: ...
    # Number of input bytes carried over to the next chunk.
    @property
    def buffered(self) -> int: ...
    # Tokenize the next chunk (BufferLimitExceeded past max_buffer_size).
    def feed_bytes(self, chunk: bytes | bytearray | memoryview) -> int: ...
    # End of input: finish (or give up on) the pending token.
    def close(self) -> None: ...
    # The two speeds: with ``lazy``, the attributes of end tags and of start tags not named in
    # ``names`` (tag names, or tag-name hashes as int) are scanned past, not recorded, unless
    # ``all_start_tags``.  Boundaries, names and self-closing flags do not change.
    # ``names`` may be an AttributePolicy worked out once (attribute_policy).
    def set_attribute_policy(
        self, lazy: bool, all_start_tags: bool = True,
        names: Iterable[str | bytes | int] | AttributePolicy = (),
    ) -> None: ...
    # Set the "last start tag" used by the appropriate-end-tag test.
    def set_last_start_tag_name(self, name: bytes) -> None: ...
    # Switch the lexer into the state that reads the given text type.
    def set_text_type(self, text_type: int) -> None: ...
