"""Rewritable units: what handlers receive, read and change while the document streams past.

A unit is valid only while its handler runs (except that an element's end-tag handlers and
``after``/``append`` content are kept until its end).  Changes are recorded, not applied: the
engine writes the unit once every handler has returned, from its raw bytes if nothing changed,
rebuilt otherwise, with the inserted content around it.

Inserted content is text unless ``html=True``: text is escaped for where it lands (``&``, ``<``,
``>`` as character references in ordinary text; checked but left as it is inside ``<script>``,
``<style>`` and other raw-text elements, where character references would not be decoded).
Insertion order is lol-html's: successive ``before``/``append`` calls keep their order, successive
``after``/``prepend`` calls reverse it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from htmlstream.charrefs import decode_charrefs
from htmlstream.errors import EncodingError, HtmlStreamError
from htmlstream.tokens import TextType

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "Comment",
    "Doctype",
    "DocumentEnd",
    "Element",
    "EndTag",
    "TextChunk",
    "UnitExpired",
]

HTML_NS = "http://www.w3.org/1999/xhtml"
SVG_NS = "http://www.w3.org/2000/svg"
MATHML_NS = "http://www.w3.org/1998/Math/MathML"
NAMESPACE_URIS = (HTML_NS, SVG_NS, MATHML_NS)

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_BAD_TAG_NAME = re.compile(r"[\t\n\f\r />\0]")
_BAD_ATTR_NAME = re.compile(r"[\t\n\f\r />=\"'<\0]")
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_ATTR_ESCAPES = str.maketrans({"&": "&amp;", '"': "&quot;"})

# Closing sequences that text inserted into raw-text content must not contain.
_RAW_CLOSERS = {
    TextType.SCRIPT_DATA: re.compile(r"</script[\t\n\f\r />]|</script$|<!--", re.IGNORECASE),
    TextType.RAWTEXT: re.compile(r"</[a-zA-Z]"),
    TextType.PLAINTEXT: None,
    TextType.CDATA_SECTION: re.compile(r"]]>"),
}


class UnitExpired(HtmlStreamError):
    """A unit was used after its handler returned."""


def _newlines(text: str) -> str:
    if "\r" in text:
        return text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def encode_content(content: str, html: bool, text_type: TextType, encoding: str) -> bytes:
    """Encode inserted content for a place whose text is read as ``text_type``."""
    if not isinstance(content, str):
        raise TypeError(f"content must be str, not {type(content).__name__}")
    if html:
        return content.encode(encoding, "xmlcharrefreplace")
    if text_type is TextType.DATA or text_type is TextType.RCDATA:
        return content.translate(_TEXT_ESCAPES).encode(encoding, "xmlcharrefreplace")
    closer = _RAW_CLOSERS.get(text_type)
    if closer is not None and closer.search(content):
        raise ValueError(
            f"text inserted into {text_type.name} content must not contain "
            f"{closer.search(content).group()!r}, which would end it; pass html=True to "  # type: ignore[union-attr]
            f"insert markup deliberately"
        )
    try:
        return content.encode(encoding)
    except UnicodeEncodeError as exc:
        raise EncodingError(
            f"{content[exc.start:exc.end]!r} cannot be written in {encoding} inside "
            f"{text_type.name} content, where character references are not decoded"
        ) from None


def _encode_name(name: str, encoding: str, what: str) -> bytes:
    try:
        return name.encode(encoding)
    except UnicodeEncodeError:
        raise EncodingError(f"{what} {name!r} cannot be written in {encoding}") from None


def validate_tag_name(name: str) -> str:
    """Check a tag name given by a handler; return it."""
    if not isinstance(name, str) or not name:
        raise ValueError("a tag name must be a non-empty str")
    if not ("a" <= name[0].lower() <= "z"):
        raise ValueError(f"a tag name must start with an ASCII letter: {name!r}")
    bad = _BAD_TAG_NAME.search(name)
    if bad:
        raise ValueError(f"a tag name must not contain {bad.group()!r}: {name!r}")
    return name


def validate_attribute_name(name: str) -> str:
    """Check an attribute name given by a handler; return it."""
    if not isinstance(name, str) or not name:
        raise ValueError("an attribute name must be a non-empty str")
    bad = _BAD_ATTR_NAME.search(name)
    if bad:
        raise ValueError(f"an attribute name must not contain {bad.group()!r}: {name!r}")
    return name


class _Unit:
    """What every unit has: content before and after it, replacement and removal."""

    __slots__ = ("_after", "_before", "_encoding", "_live", "_removed", "_replacement")

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._live = True
        self._before: list[bytes] = []
        self._after: list[bytes] = []
        self._replacement: bytes | None = None
        self._removed = False

    def _check(self) -> None:
        if not self._live:
            raise UnitExpired(
                f"this {type(self).__name__} can no longer be changed: its handler has returned"
            )

    def _context(self) -> TextType:
        """How text inserted next to this unit is read."""
        return TextType.DATA

    @property
    def modified(self) -> bool:
        """Whether a handler changed or added anything."""
        return bool(self._before or self._after or self._removed)

    @property
    def removed(self) -> bool:
        """Whether the unit was removed or replaced."""
        return self._removed

    def before(self, content: str, *, html: bool = False) -> None:
        """Insert ``content`` just before the unit."""
        self._check()
        self._before.append(encode_content(content, html, self._context(), self._encoding))

    def after(self, content: str, *, html: bool = False) -> None:
        """Insert ``content`` just after the unit (successive calls: the last comes first)."""
        self._check()
        self._after.insert(0, encode_content(content, html, self._context(), self._encoding))

    def replace(self, content: str, *, html: bool = False) -> None:
        """Replace the unit with ``content``."""
        self._check()
        self._replacement = encode_content(content, html, self._context(), self._encoding)
        self._removed = True

    def remove(self) -> None:
        """Remove the unit."""
        self._check()
        self._replacement = None
        self._removed = True


class TextChunk(_Unit):
    """A piece of a text node (text arrives in pieces as the input does).

    ``text`` is decoded (character references resolved where the text type has them);
    ``raw`` is the undecoded source.  A handler that only reads never changes the bytes.
    """

    __slots__ = ("_text", "last_in_text_node", "offset", "raw", "text_type")

    def __init__(
        self, raw: bytes, text: str | None, text_type: TextType, last: bool, offset: int,
        encoding: str,
    ) -> None:
        super().__init__(encoding)
        self.raw = raw
        self._text = text
        self.text_type = text_type
        self.last_in_text_node = last
        self.offset = offset

    def _context(self) -> TextType:
        return self.text_type

    @property
    def text(self) -> str:
        """The decoded text of this piece (may be empty for the last piece of a node)."""
        if self._text is None:
            text = _newlines(self.raw.decode(self._encoding, "replace"))
            tt = self.text_type
            if tt is TextType.DATA or tt is TextType.RCDATA:
                text = decode_charrefs(text)
            if tt is not TextType.DATA and tt is not TextType.CDATA_SECTION:
                text = text.replace("\0", "\ufffd")
            self._text = text
        return self._text

    def __repr__(self) -> str:
        return f"<TextChunk {self.text[:40]!r} last={self.last_in_text_node}>"


class Comment(_Unit):
    """A comment.  ``text`` can be read and set."""

    __slots__ = ("_new_text", "_text", "offset", "raw")

    def __init__(self, raw: bytes, content: bytes, offset: int, encoding: str) -> None:
        super().__init__(encoding)
        self.raw = raw
        self.offset = offset
        self._text = _newlines(content.decode(encoding, "replace")).replace("\0", "\ufffd")
        self._new_text: bytes | None = None

    @property
    def modified(self) -> bool:
        return super().modified or self._new_text is not None

    @property
    def text(self) -> str:
        """The comment's text."""
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        self._check()
        if not isinstance(value, str):
            raise TypeError("comment text must be str")
        if "-->" in value or "--!>" in value or value.startswith((">", "->")) or value.endswith(
            ("-", "<!-")
        ):
            raise ValueError(f"comment text {value!r} would end the comment early or late")
        self._new_text = _encode_name(value, self._encoding, "comment text")
        self._text = value

    def serialize(self) -> bytes:
        """The comment as it will be written (without before/after content)."""
        if self._new_text is None:
            return self.raw
        return b"<!--" + self._new_text + b"-->"

    def __repr__(self) -> str:
        return f"<Comment {self._text[:40]!r}>"


class Doctype:
    """The DOCTYPE.  It can be read and removed, not changed."""

    __slots__ = ("_live", "force_quirks", "name", "offset", "public_id", "raw", "removed",
                 "system_id")

    def __init__(
        self, raw: bytes, name: str | None, public_id: str | None, system_id: str | None,
        force_quirks: bool, offset: int,
    ) -> None:
        self.raw = raw
        self.name = name
        self.public_id = public_id
        self.system_id = system_id
        self.force_quirks = force_quirks
        self.offset = offset
        self.removed = False
        self._live = True

    def remove(self) -> None:
        """Remove the DOCTYPE from the output."""
        if not self._live:
            raise UnitExpired("this Doctype can no longer be changed: its handler has returned")
        self.removed = True

    def __repr__(self) -> str:
        return f"<Doctype {self.name!r}>"


class DocumentEnd:
    """The end of the document: content can be appended after everything else."""

    __slots__ = ("_encoding", "_live", "_parts")

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._live = True
        self._parts: list[bytes] = []

    def append(self, content: str, *, html: bool = False) -> None:
        """Write ``content`` at the very end of the output."""
        if not self._live:
            raise UnitExpired("this DocumentEnd can no longer be changed")
        self._parts.append(encode_content(content, html, TextType.DATA, self._encoding))


class EndTag(_Unit):
    """An element's end tag, as seen by the handlers given to :meth:`Element.on_end_tag`.

    For an element closed implicitly (``<p>`` closed by ``<div>``, or by the end of input)
    ``implicit`` is true and ``raw`` is empty: ``before``/``after`` still insert content where
    the element ends; renaming or removing it does nothing.
    """

    __slots__ = ("_name", "_new_name", "implicit", "offset", "raw")

    def __init__(self, raw: bytes, name: str, implicit: bool, offset: int, encoding: str) -> None:
        super().__init__(encoding)
        self.raw = raw
        self._name = name
        self._new_name: bytes | None = None
        self.implicit = implicit
        self.offset = offset

    @property
    def name(self) -> str:
        """The tag name (ASCII-lower-cased)."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._check()
        validate_tag_name(value)
        self._new_name = _encode_name(value, self._encoding, "tag name")
        self._name = value

    @property
    def modified(self) -> bool:
        return super().modified or self._new_name is not None

    def serialize(self) -> bytes:
        """The end tag as it will be written (without before/after content)."""
        if self._new_name is None or self.implicit:
            return self.raw
        return b"</" + self._new_name + b">"

    def __repr__(self) -> str:
        return f"<EndTag {self._name!r}{' implicit' if self.implicit else ''}>"


class _Attr:
    __slots__ = ("name", "raw", "value")

    def __init__(self, name: str, value: str, raw: bytes | None) -> None:
        self.name = name      # lower-cased
        self.value = value    # decoded
        self.raw = raw        # the attribute as written, or None once changed


class Element(_Unit):
    """An element, seen at its start tag.  Its content is still to come.

    Changes to the start tag (name, attributes) rebuild it; ``before``/``after`` insert around
    the whole element, ``prepend``/``append`` inside it, and ``set_inner_content``, ``replace``,
    ``remove`` and ``remove_and_keep_content`` drop parts of the markup as it streams past.
    """

    __slots__ = (
        "_append",
        "_attr_spans",
        "_attrs",
        "_can_have_content",
        "_content_text_type",
        "_end_handlers",
        "_inner",
        "_keep_content",
        "_name",
        "_name_changed",
        "_prepend",
        "_remove_content",
        "_tag_modified",
        "namespace_uri",
        "offset",
        "raw",
        "self_closing",
        "start_tag_span",
    )

    def __init__(
        self, raw: bytes, name_span: tuple[int, int],
        attr_spans: Sequence[tuple[int, int, int, int, int]], self_closing: bool,
        namespace: int, can_have_content: bool, content_text_type: TextType, offset: int,
        encoding: str,
    ) -> None:
        super().__init__(encoding)
        self.raw = raw
        self.offset = offset
        self.self_closing = self_closing
        self.namespace_uri = NAMESPACE_URIS[namespace]
        self._can_have_content = can_have_content
        self._content_text_type = content_text_type
        s, e = name_span
        self._name = raw[s:e].decode(encoding, "replace").translate(_ASCII_LOWER)
        self._attr_spans = attr_spans
        self._attrs: list[_Attr] | None = None
        self._name_changed = False
        self._tag_modified = False
        self._prepend: list[bytes] = []
        self._append: list[bytes] = []
        self._inner: bytes | None = None
        self._remove_content = False
        self._keep_content = False
        self._end_handlers: list[Callable[[EndTag], Any]] = []
        self.start_tag_span = (offset, offset + len(raw))

    # ------------------------------------------------------------------ reading

    @property
    def tag_name(self) -> str:
        """The tag name, ASCII-lower-cased.  Setting it renames the start and end tags."""
        return self._name

    @tag_name.setter
    def tag_name(self, value: str) -> None:
        self._check()
        validate_tag_name(value)
        _encode_name(value, self._encoding, "tag name")
        self._name = value
        self._name_changed = True
        self._tag_modified = True

    @property
    def is_self_closing(self) -> bool:
        """Whether the start tag ended with ``/>`` (meaningful only in SVG and MathML)."""
        return self.self_closing

    @property
    def can_have_content(self) -> bool:
        """False for void elements (``<img>``, ``<br>``...) and self-closing foreign elements."""
        return self._can_have_content

    def _parsed(self) -> list[_Attr]:
        if self._attrs is None:
            raw, enc = self.raw, self._encoding
            attrs: list[_Attr] = []
            seen: set[str] = set()
            for ns, ne, vs, ve, end in self._attr_spans:
                name = raw[ns:ne].decode(enc, "replace").translate(_ASCII_LOWER)
                name = name.replace("\0", "\ufffd")
                if name in seen:
                    continue        # duplicate: the first wins, as in a browser
                seen.add(name)
                value = ""
                if vs >= 0:
                    value = _newlines(raw[vs:ve].decode(enc, "replace"))
                    value = decode_charrefs(value, in_attribute=True).replace("\0", "\ufffd")
                attrs.append(_Attr(name, value, raw[ns:end]))
            self._attrs = attrs
        return self._attrs

    @property
    def attributes(self) -> list[tuple[str, str]]:
        """``(name, decoded value)`` pairs in document order (duplicates dropped)."""
        return [(a.name, a.value) for a in self._parsed()]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.attributes)

    def get_attribute(self, name: str) -> str | None:
        """The decoded value of attribute ``name`` (ASCII case-insensitive), or None."""
        wanted = name.translate(_ASCII_LOWER)
        for a in self._parsed():
            if a.name == wanted:
                return a.value
        return None

    def has_attribute(self, name: str) -> bool:
        """Whether the element has attribute ``name``."""
        return self.get_attribute(name) is not None

    # ------------------------------------------------------------------ the start tag

    def set_attribute(self, name: str, value: str) -> None:
        """Set (or add) an attribute; the value is escaped so that it reads back unchanged."""
        self._check()
        validate_attribute_name(name)
        if not isinstance(value, str):
            raise TypeError("an attribute value must be str")
        _encode_name(name, self._encoding, "attribute name")
        wanted = name.translate(_ASCII_LOWER)
        for a in self._parsed():
            if a.name == wanted:
                a.value = value
                a.raw = None
                break
        else:
            self._parsed().append(_Attr(wanted, value, None))
        self._tag_modified = True

    def remove_attribute(self, name: str) -> None:
        """Remove attribute ``name`` if present."""
        self._check()
        wanted = name.translate(_ASCII_LOWER)
        attrs = self._parsed()
        for i, a in enumerate(attrs):
            if a.name == wanted:
                del attrs[i]
                self._tag_modified = True
                return

    def serialize_start_tag(self) -> bytes:
        """The start tag as it will be written."""
        if not self._tag_modified:
            return self.raw
        enc = self._encoding
        parts = [b"<", self._name.encode(enc)]
        for a in self._parsed():
            parts.append(b" ")
            if a.raw is not None:
                parts.append(a.raw)
            else:
                parts.append(a.name.encode(enc))
                parts.append(b'="')
                parts.append(a.value.translate(_ATTR_ESCAPES).encode(enc, "xmlcharrefreplace"))
                parts.append(b'"')
        if self.self_closing:
            parts.append(b" /")
        parts.append(b">")
        return b"".join(parts)

    # ------------------------------------------------------------------ content

    def _inner_context(self) -> TextType:
        return self._content_text_type

    def prepend(self, content: str, *, html: bool = False) -> None:
        """Insert ``content`` at the start of the element's content (no-op on void elements)."""
        self._check()
        if self._can_have_content:
            self._prepend.insert(
                0, encode_content(content, html, self._content_text_type, self._encoding))

    def append(self, content: str, *, html: bool = False) -> None:
        """Insert ``content`` at the end of the element's content (no-op on void elements)."""
        self._check()
        if self._can_have_content:
            self._append.append(
                encode_content(content, html, self._content_text_type, self._encoding))

    def set_inner_content(self, content: str, *, html: bool = False) -> None:
        """Replace the element's content (no-op on void elements)."""
        self._check()
        if self._can_have_content:
            self._inner = encode_content(content, html, self._content_text_type, self._encoding)
            self._prepend.clear()
            self._append.clear()
            self._remove_content = True

    def replace(self, content: str, *, html: bool = False) -> None:
        """Replace the whole element (tags and content) with ``content``."""
        super().replace(content, html=html)
        self._remove_content = True
        self._keep_content = False

    def remove(self) -> None:
        """Remove the whole element (tags and content)."""
        super().remove()
        self._remove_content = True
        self._keep_content = False

    def remove_and_keep_content(self) -> None:
        """Remove the start and end tags, keeping the content."""
        self._check()
        self._removed = True
        self._replacement = None
        self._keep_content = True
        self._remove_content = False

    def on_end_tag(self, handler: Callable[[EndTag], Any]) -> None:
        """Call ``handler(end_tag)`` where the element ends (also when it is closed implicitly)."""
        self._check()
        if not self._can_have_content:
            raise ValueError(f"<{self._name}> cannot have content, so it has no end tag")
        if not callable(handler):
            raise TypeError("the end-tag handler must be callable")
        self._end_handlers.append(handler)

    @property
    def modified(self) -> bool:
        return (super().modified or self._tag_modified or bool(self._prepend or self._append)
                or self._remove_content or bool(self._end_handlers))

    def __repr__(self) -> str:
        return f"<Element {self._name!r} at {self.offset}>"
