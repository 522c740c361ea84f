"""The types of handlers, for annotating them (and for ``mypy --strict``).

A handler is any callable taking the unit it handles: a function, a lambda, a bound method, or
an ``async def`` (run on ``Rewriter.astream()``; the ``Async*`` protocols describe those).  Its
return value is ignored (the protocols say ``-> object`` so that any return type fits).  The
parameter is positional-only, so a handler may name it as it likes::

    import htmlstream as hs

    def lazy_images(element: hs.Element) -> None:
        element.set_attribute("loading", "lazy")

    handler: hs.handlers.ElementHandler = lazy_images
    hs.Rewriter().on("img", element=handler)

Handler objects, the shape of the Workers ``HTMLRewriter`` and python-lolhtml, have methods of
those names: :data:`ElementContentHandlers` is what :meth:`Rewriter.on
<htmlstream.Rewriter.on>` takes (an object with an ``element``, ``text`` or ``comments`` method,
any of them), :data:`DocumentContentHandlers` what :meth:`Rewriter.on_document
<htmlstream.Rewriter.on_document>` takes (``doctype``, ``comments``, ``text`` or ``end``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, TypeAlias

from htmlstream.units import Comment, Doctype, DocumentEnd, Element, EndTag, TextChunk

__all__ = [
    "AsyncCommentHandler",
    "AsyncDoctypeHandler",
    "AsyncElementHandler",
    "AsyncEndHandler",
    "AsyncEndTagHandler",
    "AsyncTextHandler",
    "CommentHandler",
    "DoctypeHandler",
    "DocumentContentHandlers",
    "ElementContentHandlers",
    "ElementHandler",
    "EndHandler",
    "EndTagHandler",
    "HasCommentsMethod",
    "HasDoctypeMethod",
    "HasElementMethod",
    "HasEndMethod",
    "HasTextMethod",
    "TextHandler",
]


class ElementHandler(Protocol):
    """Called with each :class:`~htmlstream.Element` a selector matches, at its start tag."""

    def __call__(self, element: Element, /) -> object: ...


class EndTagHandler(Protocol):
    """Called with an element's :class:`~htmlstream.EndTag` (:meth:`Element.on_end_tag
    <htmlstream.Element.on_end_tag>`)."""

    def __call__(self, end_tag: EndTag, /) -> object: ...


class TextHandler(Protocol):
    """Called with each :class:`~htmlstream.TextChunk` (a piece of a text node)."""

    def __call__(self, chunk: TextChunk, /) -> object: ...


class CommentHandler(Protocol):
    """Called with each :class:`~htmlstream.Comment`."""

    def __call__(self, comment: Comment, /) -> object: ...


class DoctypeHandler(Protocol):
    """Called with the document's :class:`~htmlstream.Doctype`."""

    def __call__(self, doctype: Doctype, /) -> object: ...


class EndHandler(Protocol):
    """Called once at the end of the document, with its :class:`~htmlstream.DocumentEnd`."""

    def __call__(self, end: DocumentEnd, /) -> object: ...


# The async forms (``async def`` handlers, run by Rewriter.astream(), arewrite() and
# rewrite_aiter()).  The protocols above accept them too (a coroutine is an object); these say
# that a handler is async.


class AsyncElementHandler(Protocol):
    """An ``async def`` element handler: awaited at the element's start tag, the stream paused
    there until it is done."""

    def __call__(self, element: Element, /) -> Awaitable[object]: ...


class AsyncEndTagHandler(Protocol):
    """An ``async def`` end-tag handler (:meth:`Element.on_end_tag
    <htmlstream.Element.on_end_tag>`)."""

    def __call__(self, end_tag: EndTag, /) -> Awaitable[object]: ...


class AsyncTextHandler(Protocol):
    """An ``async def`` text handler."""

    def __call__(self, chunk: TextChunk, /) -> Awaitable[object]: ...


class AsyncCommentHandler(Protocol):
    """An ``async def`` comment handler."""

    def __call__(self, comment: Comment, /) -> Awaitable[object]: ...


class AsyncDoctypeHandler(Protocol):
    """An ``async def`` doctype handler."""

    def __call__(self, doctype: Doctype, /) -> Awaitable[object]: ...


class AsyncEndHandler(Protocol):
    """An ``async def`` document end handler."""

    def __call__(self, end: DocumentEnd, /) -> Awaitable[object]: ...


# Handler objects.  A protocol cannot make its methods optional, so each method has a protocol of
# its own and an object fits the union when it has any of them (``Rewriter.on`` raises TypeError
# at run time when it has none).


class HasElementMethod(Protocol):
    """An object with an ``element(element)`` method."""

    def element(self, element: Element, /) -> object: ...


class HasTextMethod(Protocol):
    """An object with a ``text(chunk)`` method."""

    def text(self, chunk: TextChunk, /) -> object: ...


class HasCommentsMethod(Protocol):
    """An object with a ``comments(comment)`` method."""

    def comments(self, comment: Comment, /) -> object: ...


class HasDoctypeMethod(Protocol):
    """An object with a ``doctype(doctype)`` method."""

    def doctype(self, doctype: Doctype, /) -> object: ...


class HasEndMethod(Protocol):
    """An object with an ``end(end)`` method."""

    def end(self, end: DocumentEnd, /) -> object: ...


#: What ``Rewriter.on(selector, handler)`` takes: an object with an ``element``, ``text`` or
#: ``comments`` method (any of them; those it has are used).
ElementContentHandlers: TypeAlias = HasElementMethod | HasTextMethod | HasCommentsMethod

#: What ``Rewriter.on_document(handler)`` takes: an object with a ``doctype``, ``comments``,
#: ``text`` or ``end`` method.
DocumentContentHandlers: TypeAlias = (
    HasDoctypeMethod | HasCommentsMethod | HasTextMethod | HasEndMethod
)
