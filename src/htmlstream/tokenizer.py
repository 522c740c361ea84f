"""The token API: a streaming HTML tokenizer for users who want tokens rather than rewriting.

``Tokenizer`` is sans-I/O: ``feed(chunk)`` returns the tokens that chunk completed and ``close()``
the rest.  ``tokenize(source)`` wraps it for bytes, str, or an iterable of chunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final, Literal, TypeAlias

from htmlstream._engine import lexer as _lexer
from htmlstream._engine.collector import TokenCollector
from htmlstream._engine.lexer import Lexer
from htmlstream.encoding import _resolve_encoding, lookup
from htmlstream.errors import BYTES_LIKE, ParseErrorCallback, check_type
from htmlstream.tokens import Text, TextType, Token

__all__ = [
    "DEFAULT_MAX_ATTRIBUTES",
    "DEFAULT_MAX_BUFFER_SIZE",
    "InitialState",
    "Tokenizer",
    "tokenize",
]

#: The default ``max_buffer_size`` of :class:`Tokenizer` and :class:`~htmlstream.Rewriter`: the
#: most bytes carried over between chunks (an unfinished token), 4 MiB.
DEFAULT_MAX_BUFFER_SIZE: Final[int] = _lexer.DEFAULT_MAX_BUFFER_SIZE
#: The default ``max_attributes`` of :class:`Tokenizer` and :class:`~htmlstream.Rewriter`: the
#: most attributes one tag may have, 4096.
DEFAULT_MAX_ATTRIBUTES: Final[int] = _lexer.DEFAULT_MAX_ATTRIBUTES

#: The tokenizer states a :class:`Tokenizer` can start in (``initial_state``).
InitialState: TypeAlias = Literal[
    "data", "rcdata", "rawtext", "script data", "plaintext", "cdata section"
]

_INITIAL_STATES: Final[dict[str, TextType]] = {
    "data": TextType.DATA,
    "rcdata": TextType.RCDATA,
    "rawtext": TextType.RAWTEXT,
    "script data": TextType.SCRIPT_DATA,
    "plaintext": TextType.PLAINTEXT,
    "cdata section": TextType.CDATA_SECTION,
}


class Tokenizer:
    """A streaming tokenizer: ``feed(chunk) -> list[Token]``, then ``close() -> list[Token]``.

    Args:
        encoding: the document's encoding, a label of the WHATWG Encoding Standard naming an
            ASCII-compatible encoding (default ``"utf-8"``; see docs/guide/encodings.md); decoded
            fields use it and ``str`` chunks are encoded with it.  ``encoding`` is then its
            name (``"latin1"`` gives ``"windows-1252"``).
        initial_state: the tokenizer state to start in: ``"data"`` (default), ``"rcdata"``,
            ``"rawtext"``, ``"script data"``, ``"plaintext"`` or ``"cdata section"``.
        last_start_tag: the name of the "last start tag" for the appropriate-end-tag test, as
            when tokenizing the contents of that element.
        feedback: apply tree-builder feedback (``<script>``, ``<textarea>``, ``<svg>``... switch
            states as in a browser).  ``False`` gives the bare WHATWG tokenizer.
        scripting: with feedback, whether ``<noscript>`` content is raw text (as in a browser
            with scripting on) or markup.
        strict: with feedback, raise :class:`~htmlstream.ParsingAmbiguityError` (before the tag
            is returned) where browsers may read the rest of the page differently, instead of
            taking the current HTML standard's reading (docs/design/tree-builder-feedback.md).
        max_buffer_size: the most bytes carried over between chunks (an unfinished token);
            more raises :class:`~htmlstream.BufferLimitExceeded`.
        max_attributes: the most attributes one tag may have; more raises
            :class:`~htmlstream.BufferLimitExceeded` (``limit_name == "max_attributes"``).
        on_error: called with each parse error of the tokenizer, a
            :class:`~htmlstream.ParseError` (code, offset, line, column), in input order, as
            the chunk that completes it is fed.  By default parse errors are not looked for
            (and cost nothing); see docs/guide/errors.md.
    """

    def __init__(
        self,
        *,
        encoding: str = "utf-8",
        initial_state: InitialState = "data",
        last_start_tag: str | None = None,
        feedback: bool = True,
        scripting: bool = True,
        strict: bool = False,
        max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
        max_attributes: int = DEFAULT_MAX_ATTRIBUTES,
        on_error: ParseErrorCallback | None = None,
    ) -> None:
        try:
            text_type = _INITIAL_STATES[initial_state.lower()]
        except KeyError:
            raise ValueError(
                f"unknown initial_state {initial_state!r}; expected one of "
                f"{', '.join(map(repr, _INITIAL_STATES))}"
            ) from None
        enc = lookup(encoding)
        self._codec = _resolve_encoding(enc)
        self.encoding = enc.name
        self._collector = TokenCollector(self._codec)
        simulator = None
        if feedback:
            from htmlstream._engine.treebuilder import TreeBuilderSimulator

            simulator = TreeBuilderSimulator(scripting=scripting, strict=strict)
        self._lexer = Lexer(
            self._collector,
            simulator,
            initial_text_type=int(text_type),
            last_start_tag=last_start_tag,
            max_buffer_size=max_buffer_size,
            hold_utf8=enc.name == "utf-8",
            max_attributes=max_attributes,
        )
        if on_error is not None:
            from htmlstream._parse_errors import ErrorChecker

            self._lexer.errors = ErrorChecker(on_error, utf8=enc.name == "utf-8")
        # Multi-byte legacy encodings: the lexer cannot see their characters' boundaries, so
        # text is decoded with an incremental decoder, in stream order.
        self._decoder = enc.incremental_decoder() if enc.multibyte else None

    @property
    def offset(self) -> int:
        """How many bytes have been fed."""
        return self._lexer.offset

    def feed(self, chunk: bytes | bytearray | memoryview | str) -> list[Token]:
        """Tokenize the next chunk; return the tokens it completed (text as far as it is known)."""
        if type(chunk) is not bytes:    # (one test per chunk for bytes)
            if isinstance(chunk, str):
                chunk = chunk.encode(self._codec, "surrogatepass" if self._codec == "utf-8"
                                     else "xmlcharrefreplace")
            else:
                check_type(chunk, BYTES_LIKE, "Tokenizer.feed()", "chunk",
                           "bytes-like (bytes, bytearray, memoryview) or str")
        self._lexer.feed_bytes(chunk)
        return self._take()

    def close(self) -> list[Token]:
        """End of input: return the remaining tokens."""
        self._lexer.close()
        tokens = self._take()
        if self._decoder is not None:
            self._decoder.reset()
        return tokens

    def _take(self) -> list[Token]:
        tokens: list[Token] = self._collector.take()
        if self._decoder is not None:
            self._decode_incrementally(tokens)
        return tokens

    def _decode_incrementally(self, tokens: list[Token]) -> None:
        # A multi-byte character may be split between two text pieces: decode in stream order.
        decoder = self._decoder
        assert decoder is not None
        for tok in tokens:
            if isinstance(tok, Text):
                tok._text = tok.decode_content(decoder.decode(tok.raw_content))
            else:
                decoder.reset()


def tokenize(
    source: bytes | bytearray | memoryview | str | Iterable[bytes | str],
    *,
    encoding: str = "utf-8",
    initial_state: InitialState = "data",
    last_start_tag: str | None = None,
    feedback: bool = True,
    scripting: bool = True,
    strict: bool = False,
    max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
    max_attributes: int = DEFAULT_MAX_ATTRIBUTES,
    on_error: ParseErrorCallback | None = None,
) -> Iterator[Token]:
    """Yield the tokens of ``source`` (bytes, str, or an iterable of bytes/str chunks).

    The options are those of :class:`Tokenizer`.  Tokens are yielded as soon as each chunk is
    read.
    """
    tokenizer = Tokenizer(
        encoding=encoding, initial_state=initial_state, last_start_tag=last_start_tag,
        feedback=feedback, scripting=scripting, strict=strict, max_buffer_size=max_buffer_size,
        max_attributes=max_attributes, on_error=on_error,
    )
    chunks: Iterable[bytes | bytearray | memoryview | str]
    chunks = (source,) if isinstance(source, (bytes, bytearray, memoryview, str)) else source
    check_type(chunks, Iterable, "tokenize()", "source",
               "bytes-like, str, or an iterable of bytes or str chunks")
    for chunk in chunks:
        yield from tokenizer.feed(chunk)
    yield from tokenizer.close()
