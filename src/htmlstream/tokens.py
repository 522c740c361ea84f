"""Token objects for users who want tokens rather than rewriting (see :func:`htmlstream.tokenize`).

The classes are used through this namespace, ``hs.tokens.StartTag``, ``hs.tokens.Comment``...:
the top-level ``htmlstream.Comment``, ``Doctype`` and ``EndTag`` are the rewritable units of
:mod:`htmlstream.units`.  :class:`TextType` is also ``htmlstream.TextType`` (text chunks have it
too).

Each token keeps the exact input bytes it came from (``raw``) and where they start in the stream
(``offset``).  Decoded fields are computed the first time they are read, as the WHATWG tokenizer
would give them: names ASCII-lower-cased, character references resolved where the text type has
them, CR and CRLF turned into LF, and NUL replaced by U+FFFD wherever the specification replaces it
(it stays U+0000 in DATA and CDATA text, as a browser's tokenizer emits it there).
"""

from __future__ import annotations

import enum
from typing import ClassVar

from htmlstream._ascii import ASCII_LOWER
from htmlstream.charrefs import decode_charrefs

__all__ = [
    "Attribute",
    "Comment",
    "Doctype",
    "EndTag",
    "StartTag",
    "Text",
    "TextType",
    "Token",
    "Unparsed",
]


class TextType(enum.IntEnum):
    """Which tokenizer state a piece of text was read in (and so how it is decoded)."""

    DATA = 0
    RCDATA = 1
    RAWTEXT = 2
    SCRIPT_DATA = 3
    PLAINTEXT = 4
    CDATA_SECTION = 5

    @property
    def has_character_references(self) -> bool:
        """Whether ``&...;`` is a character reference in this text type."""
        return self is TextType.DATA or self is TextType.RCDATA


_TEXT_TYPES = tuple(TextType)


def _decode(raw: bytes, encoding: str) -> str:
    return raw.decode(encoding, "replace")


def _newlines(text: str) -> str:
    if "\r" in text:
        return text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _name(raw: bytes, encoding: str) -> str:
    return _decode(raw, encoding).translate(ASCII_LOWER).replace("\0", "\ufffd")


def _attribute_value(raw: bytes, encoding: str) -> str:
    text = _newlines(_decode(raw, encoding))
    return decode_charrefs(text, in_attribute=True).replace("\0", "\ufffd")


class Token:
    """Base class of every token: the exact bytes it was read from and where they start."""

    __slots__ = ("_encoding", "offset", "raw")
    kind: ClassVar[str] = "token"

    raw: bytes
    offset: int

    def __init__(self, raw: bytes, offset: int, encoding: str = "utf-8") -> None:
        self.raw = raw
        self.offset = offset
        self._encoding = encoding

    @property
    def end(self) -> int:
        """Stream offset just past the token's last byte."""
        return self.offset + len(self.raw)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.raw[:60]!r} at {self.offset}>"


class Attribute:
    """One attribute of a tag: decoded name and value, and where they are in the input."""

    __slots__ = ("name", "name_span", "raw_name", "raw_value", "value", "value_span")

    name: str
    value: str
    raw_name: bytes
    raw_value: bytes | None
    name_span: tuple[int, int]
    value_span: tuple[int, int] | None

    def __init__(
        self, raw_name: bytes, raw_value: bytes | None, name_span: tuple[int, int],
        value_span: tuple[int, int] | None, encoding: str,
    ) -> None:
        self.raw_name = raw_name
        self.raw_value = raw_value
        self.name_span = name_span
        self.value_span = value_span
        self.name = _name(raw_name, encoding)
        self.value = "" if raw_value is None else _attribute_value(raw_value, encoding)

    def __repr__(self) -> str:
        return f"Attribute({self.name!r}, {self.value!r})"


class _Tag(Token):
    __slots__ = ("_attrs", "_name", "_name_span", "_spans", "self_closing")

    self_closing: bool

    def __init__(
        self, raw: bytes, offset: int, encoding: str, name_span: tuple[int, int],
        attr_spans: tuple[tuple[int, int, int, int], ...], self_closing: bool,
    ) -> None:
        super().__init__(raw, offset, encoding)
        self._name_span = name_span
        self._spans = attr_spans
        self.self_closing = self_closing
        self._name: str | None = None
        self._attrs: list[Attribute] | None = None

    @property
    def name(self) -> str:
        """The tag name, ASCII-lower-cased."""
        if self._name is None:
            s, e = self._name_span
            self._name = _name(self.raw[s:e], self._encoding)
        return self._name

    @property
    def raw_name(self) -> bytes:
        """The tag name as written."""
        s, e = self._name_span
        return self.raw[s:e]

    @property
    def attribute_list(self) -> list[Attribute]:
        """Every attribute as written, duplicates included (spans are offsets in ``raw``)."""
        if self._attrs is None:
            raw, enc = self.raw, self._encoding
            self._attrs = [
                Attribute(raw[ns:ne], None if vs < 0 else raw[vs:ve], (ns, ne),
                          None if vs < 0 else (vs, ve), enc)
                for ns, ne, vs, ve in self._spans
            ]
        return self._attrs

    @property
    def attributes(self) -> dict[str, str]:
        """Decoded attributes in document order; of duplicate names the first wins."""
        result: dict[str, str] = {}
        for attr in self.attribute_list:
            result.setdefault(attr.name, attr.value)
        return result

    def get_attribute(self, name: str) -> str | None:
        """The decoded value of the first attribute called ``name`` (ASCII case-insensitive)."""
        wanted = name.translate(ASCII_LOWER)
        for attr in self.attribute_list:
            if attr.name == wanted:
                return attr.value
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} at {self.offset}>"


class StartTag(_Tag):
    """A start tag, e.g. ``<a href="/">``."""

    __slots__ = ()
    kind: ClassVar[str] = "start_tag"


class EndTag(_Tag):
    """An end tag, e.g. ``</a>`` (attributes on end tags are kept but mean nothing)."""

    __slots__ = ()
    kind: ClassVar[str] = "end_tag"


class Text(Token):
    """A piece of text.  Text arrives in pieces: a text node may span several tokens.

    The last piece of every text node has ``last_in_text_node`` set; it is empty (``raw == b""``)
    when the node's text had all been handed over already at earlier chunk ends.

    ``raw`` may include markup around the text itself (the ``<![CDATA[`` and ``]]>`` of a CDATA
    section); ``content_span`` says which part of ``raw`` is the text.
    """

    __slots__ = ("_span", "_text", "last_in_text_node", "text_type")
    kind: ClassVar[str] = "text"

    text_type: TextType
    last_in_text_node: bool

    def __init__(
        self, raw: bytes, offset: int, encoding: str, text_type: int,
        content_span: tuple[int, int] | None = None, text: str | None = None,
        *, last_in_text_node: bool = False,
    ) -> None:
        super().__init__(raw, offset, encoding)
        self.text_type = _TEXT_TYPES[text_type]
        self.last_in_text_node = last_in_text_node
        self._span = content_span
        self._text = text

    @property
    def content_span(self) -> tuple[int, int]:
        """``(start, end)`` of the text in ``raw``."""
        return self._span if self._span is not None else (0, len(self.raw))

    @property
    def raw_content(self) -> bytes:
        """The undecoded bytes of the text itself."""
        if self._span is None:
            return self.raw
        s, e = self._span
        return self.raw[s:e]

    @property
    def text(self) -> str:
        """The decoded text."""
        if self._text is None:
            self._text = self.decode_content(_decode(self.raw_content, self._encoding))
        return self._text

    def decode_content(self, text: str) -> str:
        """Apply this text type's decoding (newlines, references, NUL) to already decoded text."""
        text = _newlines(text)
        tt = self.text_type
        if tt is TextType.DATA:
            return decode_charrefs(text)
        if tt is TextType.CDATA_SECTION:
            return text
        if tt is TextType.RCDATA:
            text = decode_charrefs(text)
        return text.replace("\0", "\ufffd")

    def __repr__(self) -> str:
        return f"<Text {self.text_type.name} {self.text[:60]!r} at {self.offset}>"


class Comment(Token):
    """A comment, including bogus comments such as ``<?xml ...>`` and ``<!x>``."""

    __slots__ = ("_span", "_text")
    kind: ClassVar[str] = "comment"

    def __init__(
        self, raw: bytes, offset: int, encoding: str, content_span: tuple[int, int]
    ) -> None:
        super().__init__(raw, offset, encoding)
        self._span = content_span
        self._text: str | None = None

    @property
    def text(self) -> str:
        """The comment's text."""
        if self._text is None:
            s, e = self._span
            self._text = _newlines(_decode(self.raw[s:e], self._encoding)).replace("\0", "\ufffd")
        return self._text

    def __repr__(self) -> str:
        return f"<Comment {self.text[:60]!r} at {self.offset}>"


class Doctype(Token):
    """A DOCTYPE.  Missing parts are ``None`` (an empty identifier is ``""``)."""

    __slots__ = ("_spans", "force_quirks")
    kind: ClassVar[str] = "doctype"

    force_quirks: bool

    def __init__(
        self, raw: bytes, offset: int, encoding: str,
        spans: tuple[tuple[int, int] | None, tuple[int, int] | None, tuple[int, int] | None],
        force_quirks: bool,
    ) -> None:
        super().__init__(raw, offset, encoding)
        self._spans = spans
        self.force_quirks = force_quirks

    def _part(self, i: int) -> str | None:
        span = self._spans[i]
        if span is None:
            return None
        text = _newlines(_decode(self.raw[span[0]:span[1]], self._encoding))
        return text.replace("\0", "\ufffd")

    @property
    def name(self) -> str | None:
        """The DOCTYPE name, ASCII-lower-cased."""
        name = self._part(0)
        return None if name is None else name.translate(ASCII_LOWER)

    @property
    def public_id(self) -> str | None:
        """The public identifier."""
        return self._part(1)

    @property
    def system_id(self) -> str | None:
        """The system identifier."""
        return self._part(2)

    def __repr__(self) -> str:
        return f"<Doctype {self.name!r} at {self.offset}>"


class Unparsed(Token):
    """Bytes the specification drops without a token (e.g. a tag left unfinished at the end of
    input, or ``</>``).  They are kept so that the raw bytes of all tokens rebuild the input."""

    __slots__ = ()
    kind: ClassVar[str] = "unparsed"
