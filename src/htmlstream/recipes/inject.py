"""``inject``: HTML inserted once per document at the start or end of ``<head>`` and ``<body>``.

The points are where a browser's tree builder puts them, tags or no tags (the recipe's rules
see the ``<head>`` and ``<body>`` a browser implies: ``Rewriter.on(..., implied=True)``):

* ``head_start``: after the ``<head>`` tag; without one, where the tree builder makes the head:
  before the first thing that implies it (``<title>``, ``<meta>``..., or a body element or text
  when the head is empty);
* ``head_end``: before ``</head>``, or where the tree builder ends the head (before the first
  body element or text, or before ``<body>``);
* ``body_start``: after the ``<body>`` tag; without one, where the body begins: before the
  first element or the first non-white-space text that implies it;
* ``body_end``: before ``</body>``; for a body with no ``</body>``, before ``</html>``, or at
  the end of the input.

What was not placed by the end of the document (a frameset document, which has no body) is
appended at its end, in the order above.  Each snippet is inserted at most once per document;
the state is in the document's context (``context["inject"]``).  Scripts and styles inserted
get the document's CSP nonce when it has one (:func:`htmlstream.recipes.csp.nonce_of`).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from htmlstream.recipes.csp import nonce_of, with_nonce
from htmlstream.units import DocumentEnd, Element, EndTag

__all__ = ["Inject", "inject"]

#: The context key of the per-document state (a set of the points done).
KEY = "inject"
_POINTS = ("head_start", "head_end", "body_start", "body_end")


class Inject:
    """The ``inject`` recipe (made by :func:`inject`)."""

    def __init__(self, head_start: str | None, head_end: str | None, body_start: str | None,
                 body_end: str | None, *, key: str = KEY) -> None:
        #: The context key of the per-document state (recipes that use an Inject of their
        #: own give another, so that their points are placed apart from the user's).
        self.key = key
        for name, value in (("head_start", head_start), ("head_end", head_end),
                            ("body_start", body_start), ("body_end", body_end)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str of HTML, not {type(value).__name__}")
        self.snippets: dict[str, str] = {
            name: value for name, value in (("head_start", head_start),
                                            ("head_end", head_end),
                                            ("body_start", body_start),
                                            ("body_end", body_end)) if value
        }

    def apply(self, rewriter: Any) -> None:
        """Register the handlers (``Rewriter.use`` calls this)."""
        if not self.snippets:
            return
        # (tag names alone, no combinator: the rules keep the engine's lazy mirror)
        rewriter.on("head", element=self.head, implied=True)
        rewriter.on("body", element=self.body, implied=True)
        rewriter.on_document(end=self.end)

    # helpers

    def _state(self, context: MutableMapping[str, Any]) -> set[str]:
        state = context.get(self.key)
        if state is None:
            state = context[self.key] = set()
        return state

    def _take(self, context: MutableMapping[str, Any], state: set[str], *points: str) -> str:
        """The snippets of ``points`` not yet placed, marked placed, with the nonce."""
        out = []
        for point in points:
            if point not in state:
                state.add(point)
                snippet = self.snippets.get(point)
                if snippet:
                    out.append(snippet)
        if not out:
            return ""
        return with_nonce("".join(out), nonce_of(context))

    # handlers

    def head(self, el: Element) -> None:
        """``<head>`` (its tag, or where the tree builder implies it): head_start at its
        start; head_end where it ends."""
        if not el.can_have_content:
            return      # a <head> tag the tree builder ignores (in <template>...)
        context = el.context
        state = self._state(context)
        if "head_seen" in state:
            return      # a second <head> tag: ignored by the tree builder
        state.add("head_seen")
        content = self._take(context, state, "head_start")
        if content:
            el.prepend(content, html=True)
        if "head_end" in self.snippets and "head_end" not in state:
            el.on_end_tag(self._head_end)

    def _head_end(self, end: EndTag) -> None:
        context = end.context
        content = self._take(context, self._state(context), "head_start", "head_end")
        if content:
            end.before(content, html=True)

    def body(self, el: Element) -> None:
        """``<body>`` (its tag, or where the tree builder implies it): what belongs to the
        head before it, body_start at its start, body_end where the body ends."""
        if not el.can_have_content:
            return      # a <body> tag the tree builder ignores (in <template>...)
        context = el.context
        state = self._state(context)
        if "body_seen" in state:
            return      # a <body> tag merged into the body already made
        state.add("body_seen")
        before = self._take(context, state, "head_start", "head_end")
        if before:
            el.before(before, html=True)
        content = self._take(context, state, "body_start")
        if content:
            el.prepend(content, html=True)
        if "body_end" in self.snippets and "body_end" not in state:
            # (before </body>, or </html>, or at the end of the input)
            el.on_end_tag(self._body_end)

    def _body_end(self, end: EndTag) -> None:
        context = end.context
        # (what was not placed yet comes first, in document order)
        content = self._take(context, self._state(context), *_POINTS)
        if content:
            end.before(content, html=True)

    def end(self, end: DocumentEnd) -> None:
        """The end of the document: whatever was not placed yet."""
        context = end.context
        content = self._take(context, self._state(context), *_POINTS)
        if content:
            end.append(content, html=True)


def inject(*, head_start: str | None = None, head_end: str | None = None,
           body_start: str | None = None, body_end: str | None = None) -> Inject:
    """A recipe that inserts HTML once per document at the start or end of ``<head>`` and
    ``<body>``, with or without their tags (see the module documentation for the points).

    Each argument is HTML, inserted as it is (``<script>`` and ``<style>`` elements in it get
    the document's CSP nonce when the document has one, see ``csp_nonce``).
    """
    return Inject(head_start, head_end, body_start, body_end)
