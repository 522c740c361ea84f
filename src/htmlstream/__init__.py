"""htmlstream: a low-latency streaming HTML rewriter and parser with a compiled core."""

from htmlstream.encoding import looks_like_html, sniff_content, sniff_encoding
from htmlstream.encoding import lookup as lookup_encoding
from htmlstream.errors import (
    BufferLimitExceeded,
    EncodingError,
    HtmlStreamError,
    ParsingAmbiguityError,
    SelectorError,
)
from htmlstream.tokenizer import DEFAULT_MAX_BUFFER_SIZE, Tokenizer, tokenize
from htmlstream.tokens import (
    Comment,
    Doctype,
    EndTag,
    StartTag,
    Text,
    TextType,
    Token,
    Unparsed,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "DEFAULT_MAX_BUFFER_SIZE",
    "BufferLimitExceeded",
    "Comment",
    "Doctype",
    "EncodingError",
    "EndTag",
    "HtmlStreamError",
    "ParsingAmbiguityError",
    "SelectorError",
    "StartTag",
    "Text",
    "TextType",
    "Token",
    "Tokenizer",
    "Unparsed",
    "__version__",
    "looks_like_html",
    "lookup_encoding",
    "sniff_content",
    "sniff_encoding",
    "tokenize",
]
