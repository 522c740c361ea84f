"""htmlstream: a low-latency streaming HTML rewriter and parser with a compiled core.

Rewriting: :class:`Rewriter` with CSS selectors and handlers that receive the rewritable units
:class:`Element`, :class:`EndTag`, :class:`TextChunk`, :class:`Comment`, :class:`Doctype` and
:class:`DocumentEnd`.  Tokens: :func:`tokenize` and :class:`Tokenizer` yield the token classes of
:mod:`htmlstream.tokens` (:class:`StartTag`, :class:`EndTagToken`, :class:`Text`,
:class:`CommentToken`, :class:`DoctypeToken`, :class:`Unparsed`).
"""

from htmlstream.encoding import looks_like_html, sniff_content, sniff_encoding
from htmlstream.encoding import lookup as lookup_encoding
from htmlstream.errors import (
    BufferLimitExceeded,
    EncodingError,
    HtmlStreamError,
    ParsingAmbiguityError,
    SelectorError,
)
from htmlstream.rewriter import Rewriter, RewriterStream
from htmlstream.selectors import parse_selector
from htmlstream.tokenizer import (
    DEFAULT_MAX_ATTRIBUTES,
    DEFAULT_MAX_BUFFER_SIZE,
    Tokenizer,
    tokenize,
)
from htmlstream.tokens import Comment as CommentToken
from htmlstream.tokens import Doctype as DoctypeToken
from htmlstream.tokens import EndTag as EndTagToken
from htmlstream.tokens import StartTag, Text, TextType, Token, Unparsed
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

__all__ = [
    "DEFAULT_MAX_ATTRIBUTES",
    "DEFAULT_MAX_BUFFER_SIZE",
    "BufferLimitExceeded",
    "Comment",
    "CommentToken",
    "Doctype",
    "DoctypeToken",
    "DocumentEnd",
    "Element",
    "EncodingError",
    "EndTag",
    "EndTagToken",
    "HtmlStreamError",
    "ParsingAmbiguityError",
    "Rewriter",
    "RewriterStream",
    "SelectorError",
    "StartTag",
    "Text",
    "TextChunk",
    "TextType",
    "Token",
    "Tokenizer",
    "UnitExpired",
    "Unparsed",
    "__version__",
    "looks_like_html",
    "lookup_encoding",
    "parse_selector",
    "sniff_content",
    "sniff_encoding",
    "tokenize",
]
