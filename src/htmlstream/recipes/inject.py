"""``inject``: HTML inserted once per document at the start or end of ``<head>`` and ``<body>``.

The points are where a browser's tree builder puts them, tags or no tags:

* ``head_start``: after the ``<head>`` tag; without one, before the head's first element
  (``<title>``...), or where the body begins when the head is empty;
* ``head_end``: before ``</head>``, or where the tree builder ends the head (before the first
  body element or text, or before ``<body>``);
* ``body_start``: after the ``<body>`` tag; without one, where the body begins: before its first
  element (the insertion point of a body implied by text is the first element after that text,
  or the end: no handler sees every text chunk, which would cost 3.5 times a pass-through);
* ``body_end``: before ``</body>``; for a body with no ``<body>`` tag, before ``</html>``, or
  at the end of the input.

What was not placed by the end of the document (a document with no element at all) is
appended at its end, in the order above.  Each snippet is inserted at most once per document;
the state is in the document's context (``context["inject"]``).  Scripts and styles inserted
get the document's CSP nonce when it has one (:func:`htmlstream.recipes.csp.nonce_of`).
"""

from __future__ import annotations

import contextlib
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
        rewriter.on("head", element=self.head)
        rewriter.on("body", element=self.body)
        if "body_end" in self.snippets:
            rewriter.on("html", element=self.html)
        if "head_start" in self.snippets:
            rewriter.on("head > :first-child", element=self.head_child)
        if self.snippets.keys() - {"body_end"}:
            rewriter.on("body > :first-child", element=self.body_child)
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
        """``<head>``: head_start after the tag; head_end where the head ends."""
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
            # (ValueError: no end tag to wait for; the end of the document places it)
            with contextlib.suppress(ValueError):
                el.on_end_tag(self._head_end)

    def _head_end(self, end: EndTag) -> None:
        context = end.context
        content = self._take(context, self._state(context), "head_start", "head_end")
        if content:
            end.before(content, html=True)

    def head_child(self, el: Element) -> None:
        """The first element of a head with no ``<head>`` tag: head_start before it."""
        context = el.context
        state = self._state(context)
        if "head_start" not in state:
            content = self._take(context, state, "head_start")
            if content:
                el.before(content, html=True)

    def body(self, el: Element) -> None:
        """``<body>``: what belongs to the head before the tag, body_start after it,
        body_end where the body ends."""
        if not el.can_have_content:
            return      # a <body> tag the tree builder ignores (in <template>...)
        context = el.context
        state = self._state(context)
        if "body_seen" in state:
            return      # a second <body> tag: merged into the first
        state.add("body_seen")
        before = self._take(context, state, "head_start", "head_end")
        if before:
            el.before(before, html=True)
        content = self._take(context, state, "body_start")
        if content:
            el.prepend(content, html=True)
        if "body_end" in self.snippets and "body_end" not in state:
            # (a <body> tag merged into an implied body ends where that body ends, too)
            el.on_end_tag(self._body_end)

    def html(self, el: Element) -> None:
        """``<html>``: body_end before ``</html>`` when the body has no end tag of its own
        (a body with no ``<body>`` tag)."""
        if not el.can_have_content:
            return      # an <html> tag the tree builder ignores (in <template>)
        state = self._state(el.context)
        if "html_seen" not in state:
            state.add("html_seen")
            el.on_end_tag(self._body_end)

    def _body_end(self, end: EndTag) -> None:
        context = end.context
        # (what was not placed yet comes first, in document order)
        content = self._take(context, self._state(context), *_POINTS)
        if content:
            end.before(content, html=True)

    def body_child(self, el: Element) -> None:
        """The first element of the body: where a body with no ``<body>`` tag begins."""
        context = el.context
        state = self._state(context)
        if "body_start" in state:
            return
        content = self._take(context, state, "head_start", "head_end", "body_start")
        if content:
            el.before(content, html=True)

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
