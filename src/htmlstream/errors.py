"""The exceptions htmlstream raises.  All derive from :class:`HtmlStreamError`."""

from __future__ import annotations

__all__ = [
    "BufferLimitExceeded",
    "EncodingError",
    "HtmlStreamError",
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
