"""htmlstream: a low-latency streaming HTML rewriter and parser with a compiled core.

Rewriting: :class:`Rewriter` with CSS selectors and handlers that receive the rewritable units
:class:`Element`, :class:`EndTag`, :class:`TextChunk`, :class:`Comment`, :class:`Doctype` and
:class:`DocumentEnd` (:mod:`htmlstream.handlers` has the handlers' types).  Tokens:
:func:`tokenize` and :class:`Tokenizer` yield the token classes of the :mod:`htmlstream.tokens`
namespace (``tokens.StartTag``, ``tokens.EndTag``, ``tokens.Text``, ``tokens.Comment``,
``tokens.Doctype``, ``tokens.Unparsed``, all ``tokens.Token``); :class:`TextType` is shared by
text tokens and text chunks.  Extraction: :func:`extract` (and :class:`Extractor`, without I/O)
pull the values :class:`Field` selectors name out of a document while it streams, and stop
reading as soon as they are known.  Sanitizing untrusted HTML: :func:`sanitize` with a
:class:`Policy` (the ``htmlstream.recipes.sanitize`` recipe in one call).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any, Literal, overload

from htmlstream import handlers, tokens
from htmlstream.caching import CompileCache
from htmlstream.encoding import looks_like_html, sniff_content, sniff_encoding
from htmlstream.encoding import lookup as lookup_encoding
from htmlstream.errors import (
    BYTES_LIKE,
    AllInputsFailed,
    BufferLimitExceeded,
    EncodingError,
    HtmlStreamError,
    ParseError,
    ParseErrorCallback,
    ParsingAmbiguityError,
    SelectorError,
    check_type,
)
from htmlstream.extraction import Extractor, Field, extract
from htmlstream.rewriter import AsyncRewriterStream, OnLimit, Rewriter, RewriterStream, TextFilter
from htmlstream.selectors import SelectorList, parse_selector
from htmlstream.tokenizer import (
    DEFAULT_MAX_ATTRIBUTES,
    DEFAULT_MAX_BUFFER_SIZE,
    InitialState,
    Tokenizer,
    tokenize,
)
from htmlstream.tokens import TextType
from htmlstream.units import (
    Comment,
    Doctype,
    DocumentEnd,
    Element,
    EndTag,
    TextChunk,
    UnitExpired,
)

if TYPE_CHECKING:
    from htmlstream.recipes.markdown import MarkdownDocument
    from htmlstream.recipes.sanitize import Policy

__version__ = "0.1.0.dev0"

_HTML = "str or bytes-like (bytes, bytearray, memoryview)"   # (what the one-call forms take)


def __getattr__(name: str) -> Any:
    # The sanitizer's policy is the recipe layer's: imported when first asked for (the core
    # imports no layer when it loads).
    if name == "Policy":
        from htmlstream.recipes.sanitize import Policy

        return Policy
    raise AttributeError(f"module 'htmlstream' has no attribute {name!r}")


@overload
def sanitize(html: str, policy: Policy | None = None) -> str: ...
@overload
def sanitize(html: bytes | bytearray | memoryview, policy: Policy | None = None) -> bytes: ...
def sanitize(html: Any, policy: Policy | None = None) -> Any:
    """``html`` sanitized in one call (str gives str, bytes give bytes): the
    :func:`htmlstream.recipes.sanitize` recipe with ``policy`` (default: ammonia's defaults,
    :class:`Policy`)."""
    check_type(html, (str, *BYTES_LIKE), "sanitize()", "html", _HTML)
    from htmlstream.recipes.sanitize import sanitize_html  # (a layer: imported when used)

    return sanitize_html(html, policy)


@overload
def minify(html: str, **options: Any) -> str: ...
@overload
def minify(html: bytes, **options: Any) -> bytes: ...
def minify(html: str | bytes, **options: Any) -> str | bytes:
    """``html`` minified in one call (str gives str, bytes give bytes): the
    :func:`htmlstream.recipes.minify` recipe, whose keyword arguments ``options`` are."""
    check_type(html, (str, *BYTES_LIKE), "minify()", "html", _HTML)
    from htmlstream.recipes.minify import minify_html  # (a layer: imported when used)

    return minify_html(html, **options)


@overload
def markdown(source: str | bytes | bytearray | memoryview | IO[bytes] | Iterable[bytes], *,
             metadata: Literal[False] = False, **options: Any) -> str: ...
@overload
def markdown(source: str | bytes | bytearray | memoryview | IO[bytes] | Iterable[bytes], *,
             metadata: Literal[True], **options: Any) -> MarkdownDocument: ...
def markdown(source: Any, *, metadata: bool = False, **options: Any) -> Any:
    """``source`` (HTML: a str, bytes, a binary file or an iterable of bytes chunks) as
    Markdown, converted while it streams (docs/guide/markdown.md).

    Options: ``base_url`` (relative URLs are resolved against it), ``links="inline"`` or
    ``"reference"``, ``images=True``, ``heading_style="atx"`` or ``"setext"``,
    ``main_content=False`` (only the page's main content), ``encoding`` (the document's, when
    known), ``max_table_chars`` (see :mod:`htmlstream.recipes.markdown`).  With
    ``metadata=True`` the result is a :class:`~htmlstream.recipes.markdown.MarkdownDocument`
    with the Markdown and the page's title, byline, language and description.
    """
    from htmlstream.recipes.markdown import markdown_document  # (a layer: imported when used)

    document = markdown_document(source, **options)
    return document if metadata else document.markdown


__all__ = [
    "DEFAULT_MAX_ATTRIBUTES",
    "DEFAULT_MAX_BUFFER_SIZE",
    "AllInputsFailed",
    "AsyncRewriterStream",
    "BufferLimitExceeded",
    "Comment",
    "CompileCache",
    "Doctype",
    "DocumentEnd",
    "Element",
    "EncodingError",
    "EndTag",
    "Extractor",
    "Field",
    "HtmlStreamError",
    "InitialState",
    "OnLimit",
    "ParseError",
    "ParseErrorCallback",
    "ParsingAmbiguityError",
    "Policy",
    "Rewriter",
    "RewriterStream",
    "SelectorError",
    "SelectorList",
    "TextChunk",
    "TextFilter",
    "TextType",
    "Tokenizer",
    "UnitExpired",
    "__version__",
    "extract",
    "handlers",
    "looks_like_html",
    "lookup_encoding",
    "markdown",
    "minify",
    "parse_selector",
    "sanitize",
    "sniff_content",
    "sniff_encoding",
    "tokenize",
    "tokens",
]
