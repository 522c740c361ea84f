"""Extraction: pull named values out of a document while it streams, and stop reading early.

``extract(source, fields)`` returns a record, a dict with one entry per field: ``fields`` maps
names to selectors with parsel's suffixes (``"title::text"``, ``"a::attr(href)*"``,
``"div.price::html"``) or to :class:`Field` objects.  Under it, :class:`Extractor` is the same
without I/O: ``feed(chunk)`` until ``done``, then ``close()`` gives the record.

Values are what a browser's DOM gives:

* text (``::text``, the default): the element's ``textContent``: decoded, the text of its
  descendants included, comments left out (see :meth:`htmlstream.Element.capture`);
* ``::attr(name)``: the attribute's decoded value; the first match is the first element that
  *has* the attribute;
* ``::html``: the element's inner HTML, as written in the source;
* ``::markdown``: the element's content as Markdown (:func:`htmlstream.markdown` of its inner
  HTML; relative URLs stay relative; the Markdown converter is a layer, imported when a
  ``::markdown`` value is first made).

A single field's value is its first match's (``None`` when nothing matched); a ``many`` field's
is the list of every match's, in document order (at most ``limit``).

Early stop: ``done`` is true once every field is *final*: a single field when its first match
has ended (an attribute: at its start tag), a many field at its ``limit``; a field whose
selector sits inside ``<head>`` (``head link[rel=canonical]::attr(href)``) once the body has
begun, since nothing can go into ``<head>`` after that; any field at the end of the document.
A caller that stops reading there reads little more of a page than the part that holds its
values (the head, for a head-only extraction).

The extractor is built on :class:`htmlstream.Rewriter` and its public API only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from htmlstream.caching import CompileCache
from htmlstream.errors import BYTES_LIKE, SelectorError, check_type
from htmlstream.rewriter import Rewriter, RewriterStream
from htmlstream.selectors import Combinator, SelectorList, parse_selector
from htmlstream.units import DEFAULT_MAX_CAPTURE_BYTES, Captured, Element

__all__ = ["CHUNK_SIZE", "Extractor", "Field", "OnValueLimit", "aextract", "extract"]

#: What happens to a value beyond ``max_bytes`` (see :class:`Extractor`).
OnValueLimit = Literal["truncate", "error"]

#: The size of the chunks ``extract`` reads (and feeds) at a time.
CHUNK_SIZE = 65536

# "sel::text", "sel::html", "sel::markdown", "sel::attr(name)", at the end of a field spec
_SUFFIX = re.compile(r"::\s*(text|html|markdown|"
                     r"attr\(\s*(?P<q>['\"]?)(?P<name>[^)'\"]*)(?P=q)\s*\))\s*$")
# HTML elements that have no content (an Element of any other HTML element that cannot have
# content is a start tag the tree builder ignored: it made no element of it)
_VOID = frozenset({"area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr",
                   "image", "img", "input", "keygen", "link", "meta", "param", "source",
                   "track", "wbr"})
_HTML_NS = "http://www.w3.org/1999/xhtml"
# characters after which a trailing '*' is the universal selector, not "many"
_STAR_CONTEXT = " \t\n\r\f>+~,(|"


@dataclass(frozen=True)
class Field:
    """What to extract for one name of a record.

    Attributes:
        selector: a CSS selector (:func:`htmlstream.parse_selector`).
        attr: the value of this attribute (decoded) instead of text.
        text: the element's text content (``textContent``, decoded), when neither ``attr`` nor
            ``html`` is given.
        html: the element's inner HTML (as written in the source) instead of text.
        markdown: the element's content as Markdown (its inner HTML converted by
            :func:`htmlstream.markdown`) instead of text.
        many: a list of every match's value instead of the first match's (``None`` when
            nothing matches).
        limit: with ``many``, at most this many values (the field is final once it has them).
    """

    selector: str
    attr: str | None = None
    text: bool = True
    html: bool = False
    many: bool = False
    limit: int | None = None
    markdown: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.selector, str):
            raise TypeError(f"Field(): selector must be a str (a CSS selector), not "
                            f"{type(self.selector).__name__}")
        if (self.attr is not None) + self.html + self.markdown > 1:
            raise ValueError("a Field extracts one of an attribute, HTML or Markdown")
        if self.attr is None and not self.html and not self.text:
            raise ValueError("a Field needs attr=, html=True or text=True")
        if self.limit is not None:
            if not self.many:
                raise ValueError("limit= applies to many=True fields")
            if type(self.limit) is not int or self.limit < 1:
                raise ValueError(f"limit must be an int >= 1, not {self.limit!r}")

    @property
    def kind(self) -> str:
        """``"attr"``, ``"html"``, ``"markdown"`` or ``"text"``: what the field's value is."""
        if self.attr is not None:
            return "attr"
        return "html" if self.html else "markdown" if self.markdown else "text"

    @classmethod
    def parse(cls, spec: str) -> Field:
        """A Field from a parsel-style spec: ``"title::text"`` (or just ``"title"``: text),
        ``"a::attr(href)"``, ``"div.price::html"``; a trailing ``*`` makes it a many field
        (``"a::attr(href)*"``, ``"li*"``).  The selector is checked
        (:class:`~htmlstream.SelectorError`)."""
        if not isinstance(spec, str):
            raise TypeError(f"a field spec must be a str, not {type(spec).__name__}")
        rest = spec.strip()
        many = False
        if rest.endswith("*") and len(rest) > 1:
            before = rest[:-1].rstrip()
            if _SUFFIX.search(before) is not None or rest[-2] not in _STAR_CONTEXT:
                many = True
                rest = before
        attr: str | None = None
        html = markdown = False
        m = _SUFFIX.search(rest)
        if m is not None:
            if m.group(1) == "html":
                html = True
            elif m.group(1) == "markdown":
                markdown = True
            elif m.group(1) != "text":
                attr = m.group("name").strip()
                if not attr:
                    raise SelectorError(f"{spec!r}: ::attr() needs an attribute name", spec,
                                        m.start())
            rest = rest[:m.start()].rstrip()
        elif "::" in rest:
            at = rest.index("::")
            raise SelectorError(
                f"{spec!r}: unknown suffix {rest[at:]!r} (::text, ::html, ::markdown, "
                f"::attr(name))",
                spec, at)
        if not rest:
            raise SelectorError(f"{spec!r}: no selector", spec, 0)
        parse_selector(rest)
        return cls(rest, attr=attr, html=html, many=many, markdown=markdown)


def _head_scoped(selectors: SelectorList) -> bool:
    """Whether every element the selectors match is inside <head> (a ``head`` compound with
    only descendant and child combinators after it), so that nothing matches once the body
    has begun."""
    for complex_selector in selectors:
        compounds = complex_selector.compounds
        combinators = complex_selector.combinators
        for i in range(len(compounds) - 1, -1, -1):
            if i < len(compounds) - 1 and combinators[i] not in (Combinator.DESCENDANT,
                                                                 Combinator.CHILD):
                return False
            tag = compounds[i].tag
            if i < len(compounds) - 1 and tag is not None and tag.lower() == "head" and \
                    compounds[i].namespace in (None, "http://www.w3.org/1999/xhtml"):
                break
        else:
            return False
    return True


class _Document(dict[str, Any]):
    """One document's extraction state; it is also the stream's context (``unit.context``)."""

    def __init__(self, plan: _Plan) -> None:
        super().__init__()
        self.plan = plan
        n = len(plan.fields)
        self.found: list[Any] = [[] if f.many else None for f in plan.fields]
        self.final = [False] * n
        self.pending = [0] * n          # captures asked for and not yet delivered
        self.stopped = [False] * n      # no more matches wanted (the first, or the limit)
        self.open_fields = n
        self.body = False
        self.truncated: set[int] = set()

    def finalize(self, i: int) -> None:
        if not self.final[i]:
            self.final[i] = True
            self.open_fields -= 1

    def check(self, i: int) -> None:
        """Make field i final if it can have nothing more."""
        if self.pending[i]:
            return
        if self.stopped[i] or (self.body and self.plan.head_scoped[i]):
            self.finalize(i)

    def deliver(self, i: int, slot: int, captured: Captured) -> None:
        if captured.truncated:
            self.truncated.add(i)
        value = captured.value
        if self.plan.fields[i].markdown:
            value = _markdown(value)
        if slot < 0:
            self.found[i] = value
        else:
            self.found[i][slot] = value
        self.pending[i] -= 1
        self.check(i)

    def body_begins(self) -> None:
        if not self.body:
            self.body = True
            for i in self.plan.head_indexes:
                self.check(i)


def _element_handler(i: int, field: Field, max_bytes: int,
                     on_limit: OnValueLimit) -> Callable[[Element], None]:
    """The element handler of field ``i``."""
    limit = field.limit
    kind: Literal["text", "inner_html"] = "inner_html" if field.html or field.markdown \
        else "text"
    attr = field.attr

    def handler(el: Element) -> None:
        doc: _Document = el.context     # type: ignore[assignment]
        if doc.stopped[i]:
            return
        if not el.can_have_content and el.namespace_uri == _HTML_NS \
                and el.tag_name not in _VOID:
            return      # (a start tag the tree builder ignores, <td> outside a table: no element)
        if attr is not None:
            value = el.get_attribute(attr)
            if value is None:
                return
            if field.many:
                doc.found[i].append(value)
                doc.stopped[i] = limit is not None and len(doc.found[i]) >= limit
            else:
                doc.found[i] = value
                doc.stopped[i] = True
            doc.check(i)
            return
        if field.many:
            values = doc.found[i]
            slot = len(values)
            values.append(None)
            doc.stopped[i] = limit is not None and slot + 1 >= limit
        else:
            slot = -1
            doc.stopped[i] = True
        doc.pending[i] += 1
        el.capture(functools.partial(doc.deliver, i, slot), kind, max_bytes=max_bytes,
                   on_limit=on_limit)

    return handler


def _markdown(html: str) -> str:
    """A ``::markdown`` value: the inner HTML as Markdown, without the final newline."""
    from htmlstream.recipes.markdown import markdown_document  # (a layer: imported when used)

    return markdown_document(html).markdown.rstrip("\n")


def _body_handler(el: Element) -> None:
    doc: _Document = el.context     # type: ignore[assignment]
    doc.body_begins()


class _Plan:
    """The rewriter and the per-field facts shared by every document of one set of fields."""

    def __init__(self, fields: tuple[Field, ...], encoding: str | None, max_bytes: int,
                 on_limit: OnValueLimit, scripting: bool) -> None:
        self.fields = fields
        self.encoding = encoding
        self.head_scoped = [_head_scoped(parse_selector(f.selector)) for f in fields]
        self.head_indexes = [i for i, scoped in enumerate(self.head_scoped) if scoped]
        # The declared encoding wins over the document's <meta charset> (as an HTTP charset
        # does); without one, UTF-8 until a <meta charset> says otherwise.
        # (transcode: UTF-16 and ISO-2022-JP documents are read too, as UTF-8)
        self.rewriter = Rewriter(encoding=encoding or "utf-8", scripting=scripting,
                                 adjust_charset_on_meta_tag=encoding is None, transcode=True)
        for i, field in enumerate(fields):
            self.rewriter.on(field.selector,
                             element=_element_handler(i, field, max_bytes, on_limit))
        if self.head_indexes:
            # (the first element in the body, or its tag: nothing goes into <head> after it)
            self.rewriter.on("body, body > *", element=_body_handler)


#: What a plan depends on: the fields, the declared encoding, max_bytes, on_limit, scripting.
_PlanKey = tuple[tuple[Field, ...], str | None, int, OnValueLimit, bool]


def _build_plan(key: _PlanKey) -> _Plan:
    return _Plan(*key)


#: Plans by value (compiled once: extractors of equal fields and options share one rewriter).
_PLANS: CompileCache[_PlanKey, _Plan] = CompileCache(_build_plan, maxsize=256)


def _plan(fields: tuple[Field, ...], encoding: str | None, max_bytes: int,
          on_limit: OnValueLimit, scripting: bool) -> _Plan:
    """The plan for these fields (compiled once: extractors of the same fields share it)."""
    return _PLANS.get((fields, encoding, max_bytes, on_limit, scripting))


#: A field map by value: its (name, spec) items, in order.
_FieldsKey = tuple[tuple[str, str | Field], ...]


def _build_fields(key: _FieldsKey) -> tuple[list[str], tuple[Field, ...]]:
    return _parse_fields(dict(key))


#: Field maps parsed by value: a map equal to one seen before (the same names, in the same
#: order, with equal specs) costs a look-up, not a parse of its specs.
_FIELD_MAPS: CompileCache[_FieldsKey, tuple[list[str], tuple[Field, ...]]] = CompileCache(
    _build_fields, maxsize=256)


def _fields(fields: Mapping[str, str | Field]) -> tuple[list[str], tuple[Field, ...]]:
    """The names of a field map, in order, and their Fields (from the cache of field maps
    when every name is a str and every spec a str or a Field)."""
    if not isinstance(fields, Mapping):
        raise TypeError(f"fields must be a mapping of names to selector strs or Fields, not "
                        f"{type(fields).__name__}")
    key = tuple(fields.items())
    for name, spec in key:
        if type(name) is not str or (type(spec) is not str and type(spec) is not Field):
            return _parse_fields(fields)    # (not a plain map: parsed, or refused, uncached)
    names, parsed = _FIELD_MAPS.get(key)
    return list(names), parsed


def _parse_fields(fields: Mapping[str, str | Field]) -> tuple[list[str], tuple[Field, ...]]:
    names = list(fields)
    out = []
    for name in names:
        spec = fields[name]
        if isinstance(spec, Field):
            out.append(spec)
        elif isinstance(spec, str):
            out.append(Field.parse(spec))
        else:
            raise TypeError(f"field {name!r}: a selector str or a Field, not "
                            f"{type(spec).__name__}")
    return names, tuple(out)


class Extractor:
    """Extraction from one document, without I/O: ``feed(chunk)`` until ``done``, then
    ``close()`` returns the record.

    Args:
        fields: names mapped to field specs (``"title::text"``, ``"a::attr(href)*"``, see
            :meth:`Field.parse`) or :class:`Field` objects.
        encoding: the document's encoding, when known (an HTTP charset): it wins over the
            document's ``<meta charset>``.  By default UTF-8 until a ``<meta charset>`` (or a
            byte order mark) says otherwise.
        max_bytes: the most bytes of input held for one value; beyond it ``on_limit`` decides.
        on_limit: ``"truncate"`` (the value is what the first ``max_bytes`` bytes give; its
            name is in ``truncated``) or ``"error"`` (:class:`~htmlstream.BufferLimitExceeded`
            from ``feed``).
        scripting: read ``<noscript>`` content as a browser with scripting on does (the
            default: as text) or, with ``False``, as markup (what a browser without scripts
            shows, and what parsers without scripting, html5lib and lxml, give).
    """

    def __init__(self, fields: Mapping[str, str | Field], *, encoding: str | None = None,
                 max_bytes: int = DEFAULT_MAX_CAPTURE_BYTES,
                 on_limit: OnValueLimit = "truncate", scripting: bool = True) -> None:
        if on_limit not in ("truncate", "error"):
            raise ValueError(f"on_limit must be 'truncate' or 'error', not {on_limit!r}")
        self._names, field_tuple = _fields(fields)
        plan = _plan(field_tuple, encoding, max_bytes, on_limit, bool(scripting))
        self._doc = _Document(plan)
        self._stream: RewriterStream | None = plan.rewriter.stream(context=self._doc)
        self._record: dict[str, Any] | None = None
        self._bytes_read = 0
        if not field_tuple:
            self._stream = None

    @property
    def fields(self) -> dict[str, Field]:
        """The fields, by name."""
        return dict(zip(self._names, self._doc.plan.fields, strict=True))

    @property
    def done(self) -> bool:
        """Whether every field is final: feeding more cannot change the record (stop
        reading)."""
        return self._doc.open_fields == 0

    @property
    def bytes_read(self) -> int:
        """The bytes fed so far."""
        return self._bytes_read

    @property
    def truncated(self) -> list[str]:
        """The names of the fields with a value cut at ``max_bytes``."""
        return [self._names[i] for i in sorted(self._doc.truncated)]

    def feed(self, chunk: bytes | bytearray | memoryview) -> None:
        """Read the next chunk of the document (ignored once ``done`` or closed)."""
        if self._stream is None or self._doc.open_fields == 0:
            return
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            if isinstance(chunk, str):
                raise TypeError("Extractor.feed(): chunk must be bytes-like (bytes, bytearray, "
                                "memoryview), not str; extract() takes a whole str document")
            check_type(chunk, BYTES_LIKE, "Extractor.feed()", "chunk",
                       "bytes-like (bytes, bytearray, memoryview)")
        self._bytes_read += len(chunk)
        self._stream.feed(chunk)

    def close(self) -> dict[str, Any]:
        """End the document (unless ``done``: then nothing more is read) and return the
        record: ``{name: value or None}`` for single fields, ``{name: [values]}`` for many
        fields.  Calling it again returns the same record."""
        if self._record is None:
            stream, self._stream = self._stream, None
            if stream is not None and self._doc.open_fields:
                stream.close()
            values = self._doc.found
            self._record = {name: values[i] for i, name in enumerate(self._names)}
        return self._record

    def __repr__(self) -> str:
        state = "closed" if self._record is not None else "done" if self.done else "reading"
        return f"<Extractor {', '.join(self._names)} ({state}, {self._bytes_read} bytes read)>"


# ---------------------------------------------------------------------------- sources


def _is_response(source: Any) -> bool:
    """An httpx.Response (duck-typed: httpx is not imported for it)."""
    return callable(getattr(source, "iter_bytes", None)) and hasattr(source, "headers") \
        and callable(getattr(source, "close", None))


def _chunks(source: Any) -> tuple[Iterator[bytes], Callable[[], None] | None]:
    """The chunks of ``source`` and what closes it when reading stops early."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = memoryview(source).cast("B")
        return (data[i:i + CHUNK_SIZE].tobytes()
                for i in range(0, max(len(data), 1), CHUNK_SIZE)), None
    if _is_response(source):
        return iter(source.iter_bytes()), source.close
    read = getattr(source, "read", None)
    if callable(read):
        def from_file() -> Iterator[bytes]:
            while True:
                block = read(CHUNK_SIZE)
                if not block:
                    return
                if isinstance(block, str):
                    raise TypeError("extract() needs a binary file (open it with 'rb')")
                yield block
        return from_file(), None
    if isinstance(source, Iterable):
        iterator = iter(source)
        close = getattr(iterator, "close", None)
        return iterator, close if callable(close) else None
    raise TypeError(f"extract(): source must be bytes, str, a binary file, an iterable of bytes "
                    f"chunks or a streamed httpx.Response, not {type(source).__name__}")


def extract(source: Any, fields: Mapping[str, str | Field], *,
            encoding: str | None = None, max_bytes: int = DEFAULT_MAX_CAPTURE_BYTES,
            on_limit: OnValueLimit = "truncate", scripting: bool = True) -> dict[str, Any]:
    """Extract ``fields`` from a document and return the record (see :class:`Extractor`).

    ``source``: bytes, a str (read as the text it is), a binary file, an iterable of bytes
    chunks, or a streamed ``httpx.Response`` (its charset is the encoding unless ``encoding``
    is given; it is closed when reading stops early).  Reading stops as soon as every field is
    final (``Extractor.done``).
    """
    if isinstance(source, str):
        extractor = Extractor(fields, encoding="utf-8", max_bytes=max_bytes, on_limit=on_limit,
                              scripting=scripting)
        data = source.encode("utf-8", "surrogatepass")
        for i in range(0, len(data), CHUNK_SIZE):
            extractor.feed(data[i:i + CHUNK_SIZE])
            if extractor.done:
                break
        return extractor.close()
    if type(source) is bytes and len(source) <= CHUNK_SIZE:
        # (a small document: one chunk, without the chunking generator)
        extractor = Extractor(fields, encoding=encoding, max_bytes=max_bytes,
                              on_limit=on_limit, scripting=scripting)
        extractor.feed(source)
        return extractor.close()
    if encoding is None and _is_response(source):
        encoding = getattr(source, "charset_encoding", None) or None
    extractor = Extractor(fields, encoding=encoding, max_bytes=max_bytes, on_limit=on_limit,
                          scripting=scripting)
    chunks, close = _chunks(source)
    finished = False
    try:
        for chunk in chunks:
            extractor.feed(chunk)
            if extractor.done:
                break
        else:
            finished = True
    finally:
        if not finished and close is not None:
            close()
    return extractor.close()


async def aextract(source: Any, fields: Mapping[str, str | Field], *,
                   encoding: str | None = None, max_bytes: int = DEFAULT_MAX_CAPTURE_BYTES,
                   on_limit: OnValueLimit = "truncate", scripting: bool = True) -> dict[str, Any]:
    """:func:`extract` for an async source: an async iterable of bytes chunks, or a streamed
    ``httpx.Response`` of an ``AsyncClient`` (its charset is the encoding unless ``encoding`` is
    given; it is closed, ``aclose()``, when reading stops early; an async generator is closed
    too)."""
    response = callable(getattr(source, "aiter_bytes", None)) and hasattr(source, "headers")
    if response:
        if encoding is None:
            encoding = getattr(source, "charset_encoding", None) or None
        chunks: Any = source.aiter_bytes()
        close = source.aclose
    elif isinstance(source, AsyncIterable):
        chunks = aiter(source)
        close = getattr(chunks, "aclose", None)
    else:
        raise TypeError(f"aextract(): source must be an async iterable of bytes chunks or a "
                        f"streamed httpx.Response, not {type(source).__name__}")
    extractor = Extractor(fields, encoding=encoding, max_bytes=max_bytes, on_limit=on_limit,
                          scripting=scripting)
    finished = False
    try:
        async for chunk in chunks:
            extractor.feed(chunk)
            if extractor.done:
                break
        else:
            finished = True
    finally:
        if not finished and callable(close):
            await close()
    return extractor.close()
