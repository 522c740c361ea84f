"""htmlstream: a low-latency streaming HTML rewriter and parser with a compiled core.

Rewriting: :class:`Rewriter` with CSS selectors and handlers that receive the rewritable units
:class:`Element`, :class:`EndTag`, :class:`TextChunk`, :class:`Comment`, :class:`Doctype` and
:class:`DocumentEnd` (:mod:`htmlstream.handlers` has the handlers' types).  Tokens:
:func:`tokenize` and :class:`Tokenizer` yield the token classes of the :mod:`htmlstream.tokens`
namespace (``tokens.StartTag``, ``tokens.EndTag``, ``tokens.Text``, ``tokens.Comment``,
``tokens.Doctype``, ``tokens.Unparsed``, all ``tokens.Token``); :class:`TextType` is shared by
text tokens and text chunks.
"""

from typing import Any, overload

from htmlstream import handlers, tokens
from htmlstream.encoding import looks_like_html, sniff_content, sniff_encoding
from htmlstream.encoding import lookup as lookup_encoding
from htmlstream.errors import (
    BufferLimitExceeded,
    EncodingError,
    HtmlStreamError,
    ParsingAmbiguityError,
    SelectorError,
)
from htmlstream.rewriter import OnLimit, Rewriter, RewriterStream
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

__version__ = "0.1.0.dev0"


@overload
def minify(html: str, **options: Any) -> str: ...
@overload
def minify(html: bytes, **options: Any) -> bytes: ...
def minify(html: str | bytes, **options: Any) -> str | bytes:
    """``html`` minified in one call (str gives str, bytes give bytes): the
    :func:`htmlstream.recipes.minify` recipe, whose keyword arguments ``options`` are."""
    from htmlstream.recipes.minify import minify_html  # (a layer: imported when used)

    return minify_html(html, **options)


__all__ = [
    "DEFAULT_MAX_ATTRIBUTES",
    "DEFAULT_MAX_BUFFER_SIZE",
    "BufferLimitExceeded",
    "Comment",
    "Doctype",
    "DocumentEnd",
    "Element",
    "EncodingError",
    "EndTag",
    "HtmlStreamError",
    "InitialState",
    "OnLimit",
    "ParsingAmbiguityError",
    "Rewriter",
    "RewriterStream",
    "SelectorError",
    "SelectorList",
    "TextChunk",
    "TextType",
    "Tokenizer",
    "UnitExpired",
    "__version__",
    "handlers",
    "looks_like_html",
    "lookup_encoding",
    "minify",
    "parse_selector",
    "sniff_content",
    "sniff_encoding",
    "tokenize",
    "tokens",
]
