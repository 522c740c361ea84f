"""PLACEHOLDER of the extraction module (the *extract* helper's ``htmlstream.extraction`` replaces
it at the merge): the contract of /work/notes/extraction-contract.md for simple cases, enough for
``htmlstream.scrape`` and its tests: first-match text (and lists of matches) and attribute
values through Rewriter handlers.  ``::html`` is read as text here.  Not re-exported at the top
level.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from htmlstream import Element, EndTag, Rewriter, TextChunk

__all__ = ["Extractor", "Field", "extract"]

_SPEC = re.compile(r"^(?P<sel>.*?)(?:::(?P<kind>text|html|attr\((?P<attr>[^)]*)\)))?"
                   r"(?P<many>\*)?$", re.S)


@dataclasses.dataclass(frozen=True)
class Field:
    """What to extract: the first match of ``selector`` (or every match, ``many``)."""

    selector: str
    attr: str | None = None
    text: bool = True
    html: bool = False
    many: bool = False
    limit: int | None = None

    @classmethod
    def parse(cls, spec: str) -> Field:
        """A field from a parsel-style spec: ``"title::text"``, ``"a::attr(href)*"``."""
        match = _SPEC.match(spec.strip())
        if match is None or not match["sel"].strip():
            raise ValueError(f"invalid field spec {spec!r}")
        kind = match["kind"] or "text"
        return cls(match["sel"].strip(), attr=match["attr"].strip() if match["attr"] else None,
                   html=kind == "html", many=bool(match["many"]))


class _State:
    def __init__(self, field: Field) -> None:
        self.field = field
        self.values: list[str] = []
        self.parts: list[str] | None = None   # the text of the match being read
        self.final = False

    def full(self) -> bool:
        f = self.field
        if not f.many:
            return bool(self.values) or self.parts is not None
        return f.limit is not None and len(self.values) >= f.limit


class Extractor:
    """Feed a document's bytes; ``done`` once every field is final; ``close()`` gives the record."""

    def __init__(self, fields: Mapping[str, str | Field], *, encoding: str | None = None) -> None:
        self._states = {name: _State(f if isinstance(f, Field) else Field.parse(f))
                        for name, f in fields.items()}
        rw = Rewriter(encoding=encoding or "utf-8", adjust_charset_on_meta_tag=encoding is None)
        for state in self._states.values():
            rw.on(state.field.selector, element=self._element(state), text=self._text(state))
        self._stream = rw.stream()
        self._record: dict[str, Any] | None = None

    @staticmethod
    def _element(state: _State) -> Any:
        def on_element(el: Element) -> None:
            if state.final or state.full():
                return
            f = state.field
            if f.attr is not None:
                value = el.get_attribute(f.attr)
                if value is not None:
                    state.values.append(value)
                if not f.many and state.values:
                    state.final = True
                return
            state.parts = []
            if not el.can_have_content or el.is_self_closing:
                state.values.append("")
                state.parts = None
                state.final = not f.many
                return

            def on_end(_end: EndTag) -> None:
                if state.parts is not None:
                    state.values.append("".join(state.parts))
                    state.parts = None
                if not f.many or state.full():
                    state.final = True

            el.on_end_tag(on_end)
        return on_element

    @staticmethod
    def _text(state: _State) -> Any:
        def on_text(chunk: TextChunk) -> None:
            if state.parts is not None:
                state.parts.append(chunk.text)
        return on_text

    @property
    def done(self) -> bool:
        """Every field is final: reading more changes nothing."""
        return all(s.final for s in self._states.values())

    def feed(self, chunk: bytes) -> None:
        """Read the next bytes of the document."""
        if not self.done:
            self._stream.feed(chunk)

    def close(self) -> dict[str, Any]:
        """End the document; the record (``None`` or a list for ``many`` fields)."""
        if self._record is None:
            self._stream.close()
            record: dict[str, Any] = {}
            for name, s in self._states.items():
                if s.parts is not None:
                    s.values.append("".join(s.parts))
                    s.parts = None
                if s.field.many:
                    record[name] = s.values[: s.field.limit]
                else:
                    record[name] = s.values[0] if s.values else None
            self._record = record
        return self._record


def extract(source: Any, fields: Mapping[str, str | Field], *,
            encoding: str | None = None) -> dict[str, Any]:
    """Extract ``fields`` from bytes, str, a binary file or an iterable of chunks."""
    ex = Extractor(fields, encoding=encoding)
    chunks: Iterable[bytes]
    if isinstance(source, str):
        chunks = [source.encode(encoding or "utf-8")]
    elif isinstance(source, bytes | bytearray):
        chunks = [bytes(source)]
    elif hasattr(source, "read"):
        chunks = iter(lambda: source.read(65536), b"")
    elif hasattr(source, "iter_bytes"):
        chunks = source.iter_bytes()
    else:
        chunks = source
    for chunk in chunks:
        ex.feed(chunk)
        if ex.done:
            break
    return ex.close()
