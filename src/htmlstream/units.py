"""Rewritable units: what handlers receive, read and change while the document streams past.

- :class:`Element`: an element, seen at its start tag (its content is still to come); for
  rules registered with ``Rewriter.on(..., implied=True)``, also an ``<html>``, ``<head>`` or
  ``<body>`` the tree builder implied (``Element.implied``: no tag, no attributes; content
  inserted where it begins and ends).
- :class:`EndTag`: an element's end, given to the handlers of :meth:`Element.on_end_tag`.
- :class:`TextChunk`: a piece of a text node.
- :class:`Comment`, :class:`Doctype`, :class:`DocumentEnd`.
- :class:`Captured`: what :meth:`Element.capture` delivers where an element ends (its text
  content, inner or outer HTML).

A unit is valid only while its handler runs (using it later raises :class:`UnitExpired`); an
element's ``after``/``append`` content and end-tag handlers are kept until its end.  Changes are
recorded, not applied: the engine writes the unit once every handler has returned, from its raw
bytes if nothing changed, rebuilt otherwise, with the inserted content around it.

Every unit has ``context``: the per-document context of the stream it belongs to (the mapping
given as ``Rewriter.stream(context=...)``, a new dict by default), where handlers shared by many
documents keep per-document state.

Inserted content is text unless ``html=True``: text is escaped for where it lands (``&``, ``<``,
``>`` as character references in ordinary text; inside ``<script>``, ``<style>`` and other
raw-text elements it is written as it is, and refused if it contains the sequence that would end
that element).  Insertion order is lol-html's: successive ``before``/``append`` calls keep their
order, successive ``after``/``prepend`` calls reverse it.

The classes are compiled (one is made for every matched element and handled text chunk); this
module is their public home.
"""

from htmlstream._engine.capture import Captured
from htmlstream._engine.units import (
    DEFAULT_MAX_CAPTURE_BYTES,
    HTML_NS,
    MATHML_NS,
    NAMESPACE_URIS,
    SVG_NS,
    AttributeDetails,
    Comment,
    Doctype,
    DocumentEnd,
    Element,
    EndTag,
    TextChunk,
    UnitExpired,
)

__all__ = [
    "DEFAULT_MAX_CAPTURE_BYTES",
    "HTML_NS",
    "MATHML_NS",
    "NAMESPACE_URIS",
    "SVG_NS",
    "AttributeDetails",
    "Captured",
    "Comment",
    "Doctype",
    "DocumentEnd",
    "Element",
    "EndTag",
    "TextChunk",
    "UnitExpired",
]
