"""The public API: one vocabulary, ``__all__`` with what users need, types that resolve.

Tokens live in the ``htmlstream.tokens`` namespace; the top-level ``Comment``, ``Doctype``,
``EndTag``, ... are the rewritable units.  The static side (mypy --strict on the library and on
``tests/typecheck/api_usage.py``, stubtest on the compiled modules) runs in ``make lint``.
"""

from __future__ import annotations

import importlib
import inspect
import typing

import pytest

import htmlstream as hs
from chunking import chunkings, feed_all, feed_bytes
from htmlstream import handlers, tokens

TOP_LEVEL = {
    # rewriting
    "Rewriter", "RewriterStream", "AsyncRewriterStream", "OnLimit", "TextFilter",
    "Element", "EndTag", "TextChunk", "Comment", "Doctype", "DocumentEnd", "UnitExpired",
    "handlers", "parse_selector", "SelectorList",
    # extraction
    "extract", "Extractor", "Field",
    # tokens
    "tokenize", "Tokenizer", "tokens", "TextType", "InitialState",
    # limits (documented in docs/design/reliability.md)
    "DEFAULT_MAX_BUFFER_SIZE", "DEFAULT_MAX_ATTRIBUTES",
    # encodings
    "looks_like_html", "lookup_encoding", "sniff_content", "sniff_encoding",
    # one-call recipes
    "markdown",
    "minify",
    # caching what is compiled from a value (htmlstream.caching)
    "CompileCache",
    # errors
    "HtmlStreamError", "BufferLimitExceeded", "EncodingError", "ParsingAmbiguityError",
    "SelectorError",
    # runs over many inputs: the failure rule (htmlstream.errors.check_failures)
    "AllInputsFailed",
    # parse errors, reported on request (docs/guide/errors.md)
    "ParseError", "ParseErrorCallback",
    # sanitizing (the recipe layer's one-call form)
    "sanitize", "Policy",
    "__version__",
}

PUBLIC_MODULES = [
    "htmlstream", "htmlstream.charrefs", "htmlstream.cli", "htmlstream.encoding",
    "htmlstream.caching", "htmlstream.errors", "htmlstream.extraction", "htmlstream.handlers",
    "htmlstream.http",
    "htmlstream.rewriter",
    "htmlstream.selectors",
    "htmlstream.tokenizer", "htmlstream.tokens", "htmlstream.units",
    # The web-archive layers (their libraries are imported only when used).
    "htmlstream.warc", "htmlstream.dask",
]

#: Internal names that no module's __all__ may hold.
INTERNAL = {
    "encode_content", "validate_tag_name", "validate_attribute_name", "process_text",
    "resolve_encoding", "_resolve_encoding", "needs_attributes", "sniff_bom",
    "classify_content", "meta_element_encoding", "not_ascii_compatible_message",
    "NEED_MORE", "SNIFF_BYTES", "UTF_8", "CliError", "RewriteSink", "Rules", "StreamBase",
    "Lexer", "TokenCollector", "TreeBuilderSimulator", "Program", "Matcher", "_set_fast_paths",
}

TOKEN_CLASSES = ["Token", "StartTag", "EndTag", "Text", "Comment", "Doctype", "Unparsed"]


def test_top_level_all() -> None:
    assert set(hs.__all__) == TOP_LEVEL
    assert len(hs.__all__) == len(set(hs.__all__))
    for name in hs.__all__:
        assert hasattr(hs, name), name


@pytest.mark.parametrize("name", ["StartTag", "Text", "Token", "Unparsed", "CommentToken",
                                  "DoctypeToken", "EndTagToken"])
def test_old_token_names_are_gone(name: str) -> None:
    assert not hasattr(hs, name)


def test_tokens_namespace() -> None:
    assert hs.tokens is tokens
    assert set(TOKEN_CLASSES) <= set(tokens.__all__)
    for name in TOKEN_CLASSES:
        assert issubclass(getattr(tokens, name), tokens.Token)
    # The top level's names are the rewritable units, not tokens.
    for name in ("Comment", "Doctype", "EndTag"):
        assert getattr(hs, name) is getattr(hs.units, name)
        assert getattr(hs, name) is not getattr(tokens, name)
    assert hs.TextType is tokens.TextType


def test_tokens_are_the_namespace_classes_in_every_chunking() -> None:
    data = b"<!DOCTYPE html><p class=a>x &amp; y<!--c--></p><a href"
    kinds = None
    for chunks in chunkings(data):
        got = feed_all(hs.Tokenizer, chunks)
        assert b"".join(t.raw for t in got) == data
        got = [t for t in got if t.raw]
        merged = [type(t) for i, t in enumerate(got)
                  if not (isinstance(t, tokens.Text) and i and isinstance(got[i - 1], tokens.Text))]
        assert all(cls in {getattr(tokens, n) for n in TOKEN_CLASSES} for cls in merged)
        if kinds is None:
            kinds = merged
        assert merged == kinds
    assert kinds == [tokens.Doctype, tokens.StartTag, tokens.Text, tokens.Comment,
                     tokens.EndTag, tokens.Unparsed]


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_module_all(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = module.__all__
    assert len(names) == len(set(names)), "duplicates"
    assert not set(names) & INTERNAL
    for name in names:
        assert not name.startswith("_") or name == "__version__", name
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj):
            assert (obj.__doc__ or "").strip(), f"{module_name}.{name} has no docstring"


def test_internal_names_are_private() -> None:
    assert not hasattr(hs.units, "encode_content")
    assert not hasattr(hs.units, "validate_tag_name")
    assert not hasattr(hs.units, "validate_attribute_name")
    assert not hasattr(hs.encoding, "resolve_encoding")
    assert not hasattr(hs.tokenizer, "resolve_encoding")
    assert not hasattr(hs.selectors, "needs_attributes")


def test_default_limits() -> None:
    assert hs.DEFAULT_MAX_BUFFER_SIZE == 4 * 1024 * 1024
    assert hs.DEFAULT_MAX_ATTRIBUTES == 4096
    assert inspect.signature(hs.Tokenizer).parameters["max_buffer_size"].default == (
        hs.DEFAULT_MAX_BUFFER_SIZE)
    assert inspect.signature(hs.Rewriter).parameters["max_attributes"].default == (
        hs.DEFAULT_MAX_ATTRIBUTES)


def test_tokenize_takes_the_tokenizer_keywords() -> None:
    options = inspect.signature(hs.Tokenizer).parameters
    params = dict(inspect.signature(hs.tokenize).parameters)
    source = params.pop("source")
    assert source.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert list(params) == list(options)
    for name, param in params.items():
        assert param.kind is inspect.Parameter.KEYWORD_ONLY
        assert param.default == options[name].default, name
        assert param.annotation == options[name].annotation, name
    with pytest.raises(TypeError):
        hs.tokenize(b"<p>", feedbak=False)  # type: ignore[call-arg]


def test_tokenize_keywords_reach_the_tokenizer_in_every_chunking() -> None:
    data = b"a<b>&amp;</title>c"
    for chunks in chunkings(data):
        got = list(hs.tokenize(iter(chunks), initial_state="rcdata", last_start_tag="title"))
        texts = [t for t in got if isinstance(t, tokens.Text)]
        assert "".join(t.text for t in texts) == "a<b>&c"
        assert {t.text_type for t in texts} == {hs.TextType.RCDATA, hs.TextType.DATA}
        assert [t.name for t in got if isinstance(t, tokens.EndTag)] == ["title"]


def test_literal_options() -> None:
    assert typing.get_args(hs.OnLimit) == ("raise", "passthrough")
    assert set(typing.get_args(hs.InitialState)) == set(hs.tokenizer._INITIAL_STATES)
    hints = typing.get_type_hints(hs.Rewriter.__init__)
    assert hints["on_limit"] == hs.OnLimit
    assert typing.get_type_hints(hs.Tokenizer.__init__)["initial_state"] == hs.InitialState
    with pytest.raises(ValueError, match="on_limit"):
        hs.Rewriter(on_limit="ignore")  # type: ignore[arg-type]


def test_type_hints_resolve() -> None:
    """The annotations of the public callables name importable types (for docs and tools)."""
    for fn in (hs.Rewriter.__init__, hs.Rewriter.on, hs.Rewriter.on_document,
               hs.Rewriter.element, hs.Rewriter.rewrite_file, hs.Tokenizer.__init__,
               hs.tokenize, hs.Tokenizer.feed):
        typing.get_type_hints(fn)
    for name in handlers.__all__:
        obj = getattr(handlers, name)
        if isinstance(obj, type):
            for member in ("__call__", "element", "text", "comments", "doctype", "end"):
                if member in vars(obj):
                    typing.get_type_hints(getattr(obj, member))
    on = typing.get_type_hints(hs.Rewriter.on)
    assert on["handler"] == handlers.ElementContentHandlers | None
    assert on["element"] == handlers.ElementHandler | None


class _Handlers:
    """A handler object of the Workers/python-lolhtml shape (handlers.ElementContentHandlers)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def element(self, element: hs.Element) -> None:
        self.seen.append(element.tag_name)
        element.on_end_tag(self.end_tag)

    def text(self, chunk: hs.TextChunk) -> None:
        if chunk.text:
            chunk.replace(chunk.text.upper())

    def end_tag(self, end: hs.EndTag) -> None:
        end.after("!")


def test_handler_objects_and_protocol_handlers_in_every_chunking() -> None:
    # (lambdas on purpose: the protocols type them)
    element: handlers.ElementHandler = lambda el: el.set_attribute("data-x", "1")  # noqa: E731
    end: handlers.EndHandler = lambda e: e.append("<!--e-->", html=True)  # noqa: E731
    data = b"<div><p>ab</p><i>c</i></div>"
    expected = b'<div><p data-x="1">AB</p>!<i>C</i></div>!<!--e-->'
    for chunks in chunkings(data):
        obj = _Handlers()
        rw = hs.Rewriter().on("div, p", obj).on("p", element=element).on_document(end=end)
        assert feed_bytes(rw.stream, chunks) == expected
        assert obj.seen == ["div", "p"]


def test_importing_htmlstream_loads_no_layer() -> None:
    """The core imports no layer: `import htmlstream` loads no recipe, integration, scraping or
    archive module (the one-call sanitize/minify and Policy import theirs when first used)."""
    import subprocess
    import sys

    code = ("import sys, htmlstream; print(sorted(m for m in sys.modules if m.startswith("
            "('htmlstream.recipes', 'htmlstream.integrations', 'htmlstream.scrape', "
            "'htmlstream.warc', 'htmlstream.dask', 'htmlstream.cli'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.strip() == "[]"
    assert hs.Policy.__module__ == "htmlstream.recipes.sanitize"
