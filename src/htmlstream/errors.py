"""The exceptions htmlstream raises (all derive from :class:`HtmlStreamError`), and the parse
errors it reports on request (:class:`ParseError`, which is not an exception)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "BufferLimitExceeded",
    "EncodingError",
    "HtmlStreamError",
    "ParseError",
    "ParseErrorCallback",
    "ParsingAmbiguityError",
    "SelectorError",
]


class HtmlStreamError(Exception):
    """Base class of every error raised by htmlstream."""


class BufferLimitExceeded(HtmlStreamError):
    """More bytes had to be carried over between chunks than a configured limit allows.

    Attributes:
        limit_name: the setting that was exceeded (e.g. ``"max_buffer_size"``).
        limit: its value in bytes.
        construct: what was being read (e.g. ``"an unterminated start tag"``).
        offset: the stream offset (in bytes) where that construct began.
    """

    def __init__(self, limit_name: str, limit: int, construct: str, offset: int) -> None:
        self.limit_name = limit_name
        self.limit = limit
        self.construct = construct
        self.offset = offset
        unit = " bytes" if limit_name.endswith("size") else ""
        super().__init__(
            f"{limit_name}={limit}{unit} exceeded while reading {construct} "
            f"that began at byte offset {offset}"
        )


class ParsingAmbiguityError(HtmlStreamError):
    """The right tokenizer state cannot be known without building a whole tree (``strict=True``).

    Attributes:
        tag_name: the tag whose meaning is ambiguous.
        offset: the stream offset of its ``<``.
    """

    def __init__(self, tag_name: str, offset: int, reason: str = "") -> None:
        self.tag_name = tag_name
        self.offset = offset
        detail = f": {reason}" if reason else ""
        super().__init__(
            f"ambiguous text-content tag <{tag_name}> at byte offset {offset}{detail}; a browser "
            f"may read what follows either as text or as markup"
        )


class EncodingError(HtmlStreamError):
    """An encoding is unknown, not supported by the byte-level engine, or cannot encode a value."""


class SelectorError(HtmlStreamError, ValueError):
    """A CSS selector is invalid or cannot be decided while streaming.

    Attributes:
        selector: the selector text.
        position: the character position of the problem in ``selector``.
    """

    def __init__(self, message: str, selector: str = "", position: int = 0) -> None:
        self.selector = selector
        self.position = position
        super().__init__(f"{message}: position {position}" if selector else message)


@dataclass(frozen=True, slots=True)
class ParseError:
    """A parse error of the WHATWG tokenizer, as handed to an ``on_error`` callback.

    Parse errors are never raised: a browser reads every document, and so does htmlstream.
    They are looked for only when ``on_error`` is given (:class:`~htmlstream.Tokenizer`,
    :func:`~htmlstream.tokenize`, :class:`~htmlstream.Rewriter`); see docs/guide/errors.md.

    Attributes:
        code: the error's name in the HTML standard, e.g. ``"eof-in-tag"`` or
            ``"missing-semicolon-after-character-reference"``.
        offset: where it is, in bytes from the start of the input (as ``Token.offset``): the
            character the tokenizer was reading when it found the error, or the end of the
            input for the ``eof-...`` errors.
        line: the line of ``offset``, from 1 (CR, LF and CRLF each end a line).
        column: the column of ``offset``, from 1, in characters as html5lib-tests count them
            (UTF-16 code units: a character beyond U+FFFF counts two; in an encoding other
            than UTF-8, one per byte).
    """

    code: str
    offset: int
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.code} at line {self.line}, column {self.column} (byte {self.offset})"


#: The type of an ``on_error`` callback: called with each :class:`ParseError`, in input order.
ParseErrorCallback: TypeAlias = Callable[[ParseError], object]
