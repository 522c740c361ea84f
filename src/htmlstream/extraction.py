"""PLACEHOLDER of the extraction contract (/work/notes/extraction-contract.md) for the warc
layer's development: the lead replaces it with the real module at the merge.  Simple cases only:
first-match (or every match) text and attributes through Rewriter handlers.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from htmlstream import Element, Rewriter, TextChunk

__all__ = ["Extractor", "Field", "extract"]

_SPEC = re.compile(r"^(?P<sel>.*?)(?:::(?P<kind>text|html|attr\((?P<attr>[^)]+)\)))?"
                   r"(?P<many>\*)?$", re.S)


@dataclasses.dataclass(frozen=True)
class Field:
    """What to extract: the first match's (or every match's) text, attribute or inner HTML."""

    selector: str
    attr: str | None = None
    text: bool = True
    html: bool = False
    many: bool = False
    limit: int | None = None

    @classmethod
    def parse(cls, spec: str) -> Field:
        """``"title::text"``, ``"a::attr(href)*"``, ``"div::html"``, ``"title"``."""
        m = _SPEC.match(spec.strip())
        if m is None or not m.group("sel").strip():
            raise ValueError(f"invalid field spec {spec!r}")
        kind = m.group("kind") or "text"
        return cls(m.group("sel").strip(), attr=m.group("attr"), text=kind == "text",
                   html=kind == "html", many=bool(m.group("many")))


class Extractor:
    """Extract fields from one document fed in chunks."""

    def __init__(self, fields: Mapping[str, str | Field], *, encoding: str | None = None
                 ) -> None:
        self._fields = {k: v if isinstance(v, Field) else Field.parse(v)
                        for k, v in fields.items()}
        self._values: dict[str, list[str]] = {k: [] for k in self._fields}
        self._open: dict[str, int] = {k: 0 for k in self._fields}
        rw = Rewriter(encoding=encoding or "utf-8")
        for name, field in self._fields.items():
            self._add(rw, name, field)
        self._stream = rw.stream()
        self._closed = False

    def _full(self, name: str) -> bool:
        field = self._fields[name]
        cap = (field.limit if field.limit is not None else -1) if field.many else 1
        return cap != -1 and len(self._values[name]) >= cap and self._open[name] == 0

    def _add(self, rw: Rewriter, name: str, field: Field) -> None:
        values = self._values

        def element(el: Element) -> None:
            if self._full(name) or self._open[name]:
                return
            if field.attr is not None:
                value = el.get_attribute(field.attr)
                if value is not None:
                    values[name].append(value)
                return
            values[name].append("")
            self._open[name] += 1

            def end(_: Any) -> None:
                self._open[name] -= 1

            if el.can_have_content and not el.is_self_closing:
                el.on_end_tag(end)
            else:
                self._open[name] -= 1

        def text(chunk: TextChunk) -> None:
            if self._open[name]:
                values[name][-1] += chunk.text

        rw.on(field.selector, element=element, text=text if field.attr is None else None)

    @property
    def done(self) -> bool:
        """Every field is final."""
        return all(self._full(k) for k in self._fields)

    def feed(self, chunk: bytes) -> None:
        """Feed the next chunk of the document."""
        self._stream.feed(chunk)

    def close(self) -> dict[str, Any]:
        """End the document; the record."""
        if not self._closed:
            self._closed = True
            self._stream.close()
        out: dict[str, Any] = {}
        for name, field in self._fields.items():
            got = self._values[name]
            if field.many:
                out[name] = got if field.limit is None else got[:field.limit]
            else:
                out[name] = got[0] if got else None
        return out


def extract(source: bytes | str | Iterable[bytes], fields: Mapping[str, str | Field], *,
            encoding: str | None = None) -> dict[str, Any]:
    """Extract ``fields`` from a whole document or an iterable of chunks."""
    ex = Extractor(fields, encoding=encoding)
    if isinstance(source, str):
        ex = Extractor(fields, encoding="utf-8")
        ex.feed(source.encode())
    elif isinstance(source, bytes):
        ex.feed(source)
    else:
        for chunk in source:
            ex.feed(chunk)
    return ex.close()
