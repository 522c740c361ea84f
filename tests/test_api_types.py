"""Wrong types at the public API get a clear ``TypeError`` (issue 37): the error names the
parameter and what it accepts (``sanitize(): html must be str or bytes-like (bytes, bytearray,
memoryview), not int``), raised at the API boundary, once per call.

The test walks ``__all__`` of every public module: each public function and each class users
construct is an entry point of :func:`entries`, called once per parameter with that parameter of
the wrong type (an object of a class no entry point accepts) and the others right; what is
neither is in :data:`NOT_ENTRY_POINTS`, with the reason (units, tokens and reports are made by
htmlstream, not by users).  A public name added without its check fails
:func:`test_every_public_callable_is_covered`.
"""

from __future__ import annotations

import asyncio
import enum
import importlib
import inspect
import io
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import htmlstream as hs
from htmlstream.compat import nh3 as _nh3

_md = importlib.import_module("htmlstream.recipes.markdown")

#: The public modules: their ``__all__`` is the public API.
MODULES = [
    "htmlstream", "htmlstream.charrefs", "htmlstream.cli", "htmlstream.encoding",
    "htmlstream.errors", "htmlstream.extraction", "htmlstream.handlers", "htmlstream.http",
    "htmlstream.rewriter", "htmlstream.selectors", "htmlstream.tokenizer", "htmlstream.tokens",
    "htmlstream.units", "htmlstream.warc", "htmlstream.dask",
    "htmlstream.recipes", "htmlstream.recipes.csp", "htmlstream.recipes.emails",
    "htmlstream.recipes.https", "htmlstream.recipes.inject", "htmlstream.recipes.minify",
    "htmlstream.recipes.sanitize", "htmlstream.compat.nh3", "htmlstream.recipes.markdown",
    "htmlstream.scrape", "htmlstream.scrape.errors",
    "htmlstream.integrations.asgi", "htmlstream.integrations.wsgi",
    "htmlstream.integrations.django", "htmlstream.integrations.aiohttp",
    "htmlstream.integrations.httpx", "htmlstream.integrations.proxy",
    "htmlstream.integrations.proxy_metrics",
    "htmlstream.integrations.mitmproxy",     # (where mitmproxy is installed)
]

#: Public classes users do not construct (htmlstream makes them and hands them out), and the
#: type checkers, by name.
NOT_ENTRY_POINTS = {
    # the rewritable units, handed to handlers
    "Element", "EndTag", "TextChunk", "Comment", "Doctype", "DocumentEnd", "AttributeDetails",
    "Captured",
    # made by Rewriter.stream() and Rewriter.astream() (feed() is an entry point)
    "RewriterStream", "AsyncRewriterStream",
    # tokens, made by the tokenizer
    "Token", "StartTag", "Text", "Unparsed", "Attribute",
    # reported parse errors
    "ParseError",
    # selectors: made by parse_selector() (an entry point), and their syntax tree
    "SelectorList", "AttributeSelector", "ComplexSelector",
    "Compound", "Is", "Not", "NthChild", "NthOfType", "Root", "Where",
    # results: of the encoding functions, of decide(), of content_decoder(), of the WARC
    # and Dask functions, of fetch() and scrape()
    "Encoding", "SniffResult", "Decision", "BadRecord", "WarcReport",
    "WarcJob", "RewriteJob", "Page", "Response", "AsyncResponse",
    # the proxy's counters, made by the proxy and read by its log and metrics
    "ServerCounters",
    # recipes: made by their functions (entry points), e.g. recipes.minify() -> Minify
    "CspNonce", "Esi", "HttpsUpgrade", "Inject", "Minify", "Markdown", "Sanitize", "UpgradeReport",
    "MarkdownDocument",
    "DecodeEmails", "ObfuscateEmails",
    # the minifier output stage, made by recipes.minify() through Rewriter.pipe()
    "Minifier",
    # made by iter_rewritten() / aiter_rewritten() (entry points)
    "RewrittenBody", "AsyncRewrittenBody",
    # the checkers themselves: raising this TypeError is what they do
    "check_type", "check_callable",
}


class Wrong:
    """Of a type no entry point accepts."""

    def __repr__(self) -> str:
        return "<Wrong>"


WRONG = Wrong()


def handler(_: object) -> None:
    """A handler that does nothing."""


async def achunks() -> AsyncIterator[bytes]:
    yield b"<p>x"


async def afetch(url: str) -> bytes:
    return b""


def make_rewriter() -> hs.Rewriter:
    return hs.Rewriter()


async def asgi_app(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI application."""


def wsgi_app(environ: Any, start_response: Any) -> list[bytes]:
    return []


#: An entry point: the callable, a right call's positional and keyword arguments, and the
#: parameters to call with a wrong type, each in turn.
Entry = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], list[str]]


def entries(tmp: Path) -> dict[str, Entry]:
    """Every entry point, made afresh (a stream is used once)."""
    from htmlstream import charrefs, encoding, errors, extraction, http, selectors
    from htmlstream import recipes as r
    # (the recipe functions minify and sanitize shadow their modules as attributes)
    csp, emails, https, minify_module, sanitize_module = (
        importlib.import_module(f"htmlstream.recipes.{m}")
        for m in ("csp", "emails", "https", "minify", "sanitize"))

    rw = hs.Rewriter()
    headers = [("content-type", "text/html")]
    e: dict[str, Entry] = {
        # htmlstream
        "sanitize": (hs.sanitize, ("<p>x", None), {}, ["html", "policy"]),
        "minify": (hs.minify, ("<p>x",), {}, ["html"]),
        "extract": (hs.extract, ("<title>x</title>", {"t": "title"}), {}, ["source", "fields"]),
        "aextract": (extraction.aextract, (achunks(), {"t": "title"}), {},
                     ["source", "fields"]),
        "tokenize": (hs.tokenize, ("<p>x",), {}, ["source"]),
        "Tokenizer": (hs.Tokenizer, (), {"encoding": "utf-8"}, ["encoding"]),
        "Tokenizer.feed": (hs.Tokenizer().feed, (b"<p>",), {}, ["chunk"]),
        "Rewriter": (hs.Rewriter, (), {"encoding": "utf-8"}, ["encoding"]),
        "Rewriter.on": (rw.on, ("p",), {"element": handler, "text": handler,
                                        "comments": handler}, ["selector", "element", "text",
                                                               "comments"]),
        "Rewriter.on(handler)": (rw.on, ("p", WRONG), {}, ["handler"]),
        "Rewriter.on_document": (rw.on_document, (), {"doctype": handler, "comments": handler,
                                                      "text": handler, "end": handler},
                                 ["doctype", "comments", "text", "end"]),
        "Rewriter.element": (rw.element, ("p",), {}, ["selector"]),
        "Rewriter.text": (rw.text, ("p",), {}, ["selector"]),
        "Rewriter.comments": (rw.comments, ("p",), {}, ["selector"]),
        "Rewriter.rewrite": (rw.rewrite, ("<p>x",), {}, ["data"]),
        "Rewriter.rewrite_iter": (rw.rewrite_iter, ([b"<p>x"],), {}, ["chunks"]),
        "Rewriter.rewrite_aiter": (rw.rewrite_aiter, (achunks(),), {}, ["chunks"]),
        "Rewriter.stream": (rw.stream, (), {"encoding": "utf-8"}, ["encoding"]),
        "Rewriter.use": (rw.use, (r.minify(),), {}, ["recipes"]),
        "Rewriter.pipe": (rw.pipe, (lambda codec, context: None,), {}, ["factory"]),
        "Rewriter.rewrite_file": (rw.rewrite_file, (io.BytesIO(b"<p>"), io.BytesIO()), {},
                                  ["src", "dst"]),
        "RewriterStream.feed": (rw.stream().feed, (b"<p>",), {}, ["chunk"]),
        "Extractor": (hs.Extractor, ({"t": "title"},), {}, ["fields"]),
        "Extractor.feed": (hs.Extractor({"t": "title"}).feed, (b"<p>",), {}, ["chunk"]),
        "Field": (hs.Field, ("title",), {}, ["selector"]),
        "TextFilter": (hs.TextFilter, ("@",), {}, ["chars"]),
        "Policy": (hs.Policy, (), {"tags": {"p"}, "attributes": {"a": {"href"}}},
                   ["tags", "attributes"]),
        "parse_selector": (hs.parse_selector, ("p",), {}, ["text"]),
        "looks_like_html": (hs.looks_like_html, (b"<p>",), {}, ["prefix"]),
        "sniff_content": (hs.sniff_content, (b"<p>",), {}, ["prefix"]),
        "sniff_encoding": (hs.sniff_encoding, (b"<p>",), {}, ["prefix"]),
        "lookup_encoding": (hs.lookup_encoding, ("utf-8",), {}, ["label"]),
        # htmlstream.charrefs, .encoding, .errors, .selectors
        "decode_charrefs": (charrefs.decode_charrefs, ("&amp;",), {}, ["text"]),
        "content_type_charset": (encoding.content_type_charset, ("text/html",), {},
                                 ["content_type"]),
        "get_encoding": (encoding.get_encoding, ("utf-8",), {}, ["label"]),
        "meta_content_charset": (encoding.meta_content_charset, ("text/html",), {},
                                 ["content"]),
        "prescan": (encoding.prescan, (b"<p>",), {}, ["prefix"]),
        "sniff": (encoding.sniff, (b"<p>",), {}, ["prefix"]),
        "check_failures": (errors.check_failures, ("inputs", [None]), {}, ["what", "errors"]),
        "CompileCache": (hs.CompileCache, (str,), {"maxsize": 4}, ["build", "maxsize"]),
        "markdown": (hs.markdown, ("<p>x",), {"base_url": "https://a.example/"},
                     ["source", "base_url"]),
        "recipes.markdown": (hs.recipes.markdown, (), {"base_url": "https://a.example/"},
                             ["base_url"]),
        "markdown.MarkdownConverter": (_md.MarkdownConverter, (),
                                       {"base_url": "https://a.example/"}, ["base_url"]),
        "markdown.markdown_document": (_md.markdown_document, ("<p>x",),
                                       {"base_url": "https://a.example/"},
                                       ["source", "base_url"]),
        "markdown.accepts_markdown": (_md.accepts_markdown, ("text/markdown",), {}, ["accept"]),
        "markdown.estimate_tokens": (_md.estimate_tokens, ("x",), {}, ["markdown"]),
        # htmlstream.recipes.sanitize, htmlstream.compat.nh3
        "join_url": (importlib.import_module("htmlstream.recipes.sanitize").join_url,
                     ("https://a.example/", "b"), {}, ["base", "relative"]),
        "nh3.clean": (_nh3.clean, ("<p>x",), {}, ["html", "tags"]),
        "nh3.Cleaner": (_nh3.Cleaner, (), {"tags": {"p"}}, ["tags"]),
        "nh3.clean_text": (_nh3.clean_text, ("<p>x",), {}, ["html"]),
        "nh3.escape": (_nh3.escape, ("<p>x",), {}, ["html"]),
        "nh3.is_html": (_nh3.is_html, ("<p>x",), {}, ["html"]),
        "attribute_tags": (selectors.attribute_tags, ([hs.parse_selector("p")],), {},
                           ["selector_lists"]),
        "serialize_identifier": (selectors.serialize_identifier, ("a",), {}, ["name"]),
        "serialize_string": (selectors.serialize_string, ("a",), {}, ["value"]),
        # htmlstream.http
        "HttpOptions": (http.HttpOptions, (), {"html_types": frozenset({"text/html"})},
                        ["html_types"]),
        "ResponseRewrite": (http.ResponseRewrite, (rw, "GET", 200, headers),
                            {"markdown": http.MarkdownOptions()},
                            ["rewriter", "method", "status", "headers", "markdown"]),
        "MarkdownOptions": (http.MarkdownOptions, (), {"content_signal": "a=b",
                                                       "hold_chars": 10},
                            ["content_signal", "hold_chars"]),
        "markdown_requested": (http.markdown_requested, ([("accept", "text/markdown")],), {},
                               ["request_headers"]),
        "decide": (http.decide, ("GET", 200, headers, b"<p>"), {},
                   ["method", "status", "headers", "prefix"]),
        "decide_headers": (http.decide_headers, ("GET", 200, headers), {},
                           ["method", "status", "headers"]),
        "add_csp_nonce": (http.add_csp_nonce, ([("content-security-policy", "script-src a")],
                                               "abc"), {}, ["headers", "nonce"]),
        "content_decoder": (http.content_decoder, ("gzip",), {}, ["coding"]),
        "csp_nonce_hook": (http.csp_nonce_hook, ({}, headers), {}, ["context", "headers"]),
        "accept_encoding": (http.accept_encoding, ("gzip, br",), {}, ["values"]),
        "decodable_codings": (http.decodable_codings, (), {}, []),
        "forward_range": (http.forward_range, ("GET", "/a.mp4", [("range", "bytes=0-")]),
                          {"options": http.HttpOptions()},
                          ["method", "path", "request_headers", "options"]),
        "forwarded_request_headers": (http.forwarded_request_headers,
                                      ("GET", "/", [("accept-encoding", "br")]),
                                      {"options": http.HttpOptions()},
                                      ["method", "path", "headers", "options"]),
        "warn_app_compresses": (http.warn_app_compresses, ("test", "gzip"), {},
                                ["integration", "coding"]),
        # htmlstream.recipes
        "recipes.csp_nonce": (r.csp_nonce, (), {"nonce": "abc", "select": "script"},
                              ["nonce", "select"]),
        "recipes.decode_emails": (r.decode_emails, (), {"path": "/x"}, ["path"]),
        "recipes.https_upgrade": (r.https_upgrade, (["example.com"],), {}, ["hosts"]),
        "recipes.inject": (r.inject, (), {"head_start": "<a>", "head_end": "<a>",
                                          "body_start": "<a>", "body_end": "<a>"},
                           ["head_start", "head_end", "body_start", "body_end"]),
        "recipes.minify": (r.minify, (), {"keep_comment": bool}, ["keep_comment"]),
        "recipes.esi": (r.esi, (afetch,), {"max_depth": 2, "timeout": 1.0, "on_error": "fail"},
                        ["fetch", "max_depth", "timeout", "on_error"]),
        "recipes.nonce_of": (r.nonce_of, ({},), {}, ["context"]),
        "recipes.obfuscate_emails": (r.obfuscate_emails, (), {"path": "/x"}, ["path"]),
        "recipes.sanitize": (r.sanitize, (None,), {}, ["policy"]),
        "recipes.sanitize_html": (r.sanitize_html, ("<p>", None), {}, ["html", "policy"]),
        "csp.merge_policy": (csp.merge_policy, ("script-src a", "abc"), {},
                             ["policy", "nonce"]),
        "csp.prepare": (csp.prepare, ({}, "abc"), {}, ["context", "nonce"]),
        "csp.with_nonce": (csp.with_nonce, ("<script>", "abc"), {}, ["html", "nonce"]),
        "emails.decode_hex": (emails.decode_hex, ("00",), {}, ["encoded"]),
        "emails.decoder_script": (emails.decoder_script, ("/x", None), {}, ["path", "nonce"]),
        "emails.encode_hex": (emails.encode_hex, ("a@example.com", 1), {}, ["address", "key"]),
        "emails.find_addresses": (emails.find_addresses, ("a@example.com",), {}, ["text"]),
        "https.upgrade_url": (https.upgrade_url, ("http://a.example/", lambda host: True), {},
                              ["value", "known"]),
        "minify.minify_html": (minify_module.minify_html, ("<p>",), {}, ["html"]),
        "sanitize.safe_style": (sanitize_module.safe_style, ("color: red",), {}, ["value"]),
        # the command line
        "cli.main": (importlib.import_module("htmlstream.cli").main, (["--version"],), {},
                     ["argv"]),
    }
    try:
        from htmlstream import warc
    except ImportError:     # (the warc extra)
        pass
    else:
        e["warc.rewrite_warc"] = (warc.rewrite_warc, ("in.warc", tmp / "out.warc", rw), {},
                                  ["source", "output", "rewriter"])
        e["warc.extract_warc"] = (warc.extract_warc, ("in.warc", {"t": "title"}), {},
                                  ["source", "fields"])
    if importlib.util.find_spec("dask") and importlib.util.find_spec("distributed"):
        from htmlstream import dask
        e["dask.extract_warcs"] = (dask.extract_warcs, (["in.warc"], {"t": "title"}), {},
                                   ["paths", "fields"])
        e["dask.rewrite_warcs"] = (dask.rewrite_warcs, (["in.warc"], tmp / "out", make_rewriter),
                                   {}, ["paths", "output_dir", "make_rewriter"])
    if importlib.util.find_spec("httpx") and importlib.util.find_spec("protego"):
        from htmlstream import scrape
        url = "http://127.0.0.1:9/"     # (never fetched: the checks come first)
        e["scrape.FetchOptions"] = (scrape.FetchOptions, (), {"timeout": 1.0, "retries": 1},
                                    ["timeout", "retries"])
        e["scrape.fetch"] = (scrape.fetch, (url,), {"options": None}, ["url", "options"])
        e["scrape.afetch"] = (scrape.afetch, (url,), {"options": None}, ["url", "options"])
        e["scrape.scrape"] = (scrape.scrape, ([url], {"t": "title"}), {}, ["urls", "fields"])
        e["scrape.ascrape"] = (scrape.ascrape, ([url], {"t": "title"}), {}, ["urls", "fields"])
    from htmlstream.integrations import asgi, wsgi
    e["asgi.HtmlRewriteMiddleware"] = (asgi.HtmlRewriteMiddleware, (asgi_app, rw),
                                       {"markdown": None}, ["app", "rewriter", "markdown"])
    e["wsgi.HtmlRewriteMiddleware"] = (wsgi.HtmlRewriteMiddleware, (wsgi_app, rw), {},
                                       ["app", "rewriter"])
    if importlib.util.find_spec("django"):
        from htmlstream.integrations import django
        e["django.HtmlRewriteMiddleware"] = (django.HtmlRewriteMiddleware, (handler,), {},
                                             ["get_response"])
    if importlib.util.find_spec("aiohttp"):
        from htmlstream.integrations import aiohttp, proxy
        e["aiohttp.rewrite_middleware"] = (aiohttp.rewrite_middleware, (rw,),
                                           {"markdown": None}, ["rewriter", "markdown"])
        from htmlstream.integrations import proxy_metrics
        e["proxy.ReverseProxy"] = (proxy.ReverseProxy, (rw, "http://127.0.0.1:1"),
                                   {"markdown": None, "metrics": None},
                                   ["rewriter", "upstream", "markdown", "metrics"])
        e["proxy_metrics.ProxyMetrics"] = (proxy_metrics.ProxyMetrics, (), {"workers": 1},
                                           ["workers"])
        e["proxy_metrics.classify"] = (proxy_metrics.classify, ("rewritten",), {}, ["note"])
        e["proxy.hop_by_hop"] = (proxy.hop_by_hop, ([],), {}, ["headers"])
        limits = {"header_timeout": 1.0, "body_timeout": 1.0, "max_body_size": 1,
                  "send_timeout": 1.0, "keepalive_timeout": 1.0, "max_connections": 1,
                  "backlog": 1, "summary_interval": 1.0}
        e["proxy.ServerLimits"] = (proxy.ServerLimits, (), limits, list(limits))
    if importlib.util.find_spec("httpx"):
        import httpx

        from htmlstream.integrations import httpx as hx
        response = httpx.Response(200, headers=headers, content=b"<p>")
        e["httpx.RewritingTransport"] = (hx.RewritingTransport, (rw, None), {},
                                         ["rewriter", "transport"])
        e["httpx.AsyncRewritingTransport"] = (hx.AsyncRewritingTransport, (rw, None), {},
                                              ["rewriter", "transport"])
        e["httpx.iter_rewritten"] = (hx.iter_rewritten, (response, rw), {},
                                     ["response", "rewriter"])
        e["httpx.aiter_rewritten"] = (hx.aiter_rewritten, (response, rw), {},
                                      ["response", "rewriter"])
    if importlib.util.find_spec("mitmproxy"):
        from htmlstream.integrations import mitmproxy
        e["mitmproxy.HtmlRewriteAddon"] = (mitmproxy.HtmlRewriteAddon, (rw,), {}, ["rewriter"])
    return e


def _drive(result: Any) -> None:
    """Run what a lazy entry point returned far enough for its checks to run (a generator's
    first step, a context manager's entry, a coroutine)."""
    async def arun() -> None:
        if inspect.iscoroutine(result):
            await result
        elif hasattr(result, "__aenter__"):
            async with result:
                pass
        elif hasattr(result, "__anext__"):
            try:
                await anext(result)
            finally:
                await result.aclose()

    if inspect.iscoroutine(result) or hasattr(result, "__aenter__") or hasattr(
            result, "__anext__"):
        asyncio.run(arun())
    elif hasattr(result, "__enter__") and not isinstance(result, hs.Rewriter):
        with result:
            pass
    elif isinstance(result, Iterator):
        try:
            next(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()


def _wrong_call(entry: Entry, param: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    fn, args, kwargs, _ = entry
    if param in kwargs:
        return args, {**kwargs, param: WRONG}
    try:
        names = list(inspect.signature(fn).parameters)
    except ValueError:          # a compiled class: its first parameter
        names = [param]
    index = names.index(param)
    if index >= len(args):
        return args, {**kwargs, param: WRONG}
    return (*args[:index], WRONG, *args[index + 1:]), kwargs


CASES = [(name, param) for name, entry in entries(Path("/nonexistent")).items()
         for param in entry[3]]


@pytest.mark.parametrize(("name", "param"), CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_wrong_type_names_parameter_and_accepted_types(name: str, param: str,
                                                       tmp_path: Path) -> None:
    entry = entries(tmp_path)[name]
    args, kwargs = _wrong_call(entry, param)
    with pytest.raises(TypeError) as info:
        _drive(entry[0](*args, **kwargs))
    message = str(info.value)
    assert param in message, message
    assert "must be" in message or "expected" in message, message
    assert "Wrong" in message, message       # the type given is named too


#: The rewritable units' methods a handler calls: (the rule's kind, the call, the parameter).
UNIT_CALLS: list[tuple[str, Callable[[Any], object], str]] = [
    ("element", lambda el: el.set_attribute(WRONG, "v"), "attribute name"),
    ("element", lambda el: el.set_attribute("a", WRONG), "value"),
    ("element", lambda el: el.get_attribute(WRONG), "name"),
    ("element", lambda el: el.has_attribute(WRONG), "name"),
    ("element", lambda el: el.remove_attribute(WRONG), "name"),
    ("element", lambda el: setattr(el, "tag_name", WRONG), "tag name"),
    ("element", lambda el: el.before(WRONG), "content"),
    ("element", lambda el: el.after(WRONG), "content"),
    ("element", lambda el: el.prepend(WRONG), "content"),
    ("element", lambda el: el.append(WRONG), "content"),
    ("element", lambda el: el.set_inner_content(WRONG), "content"),
    ("element", lambda el: el.replace(WRONG), "content"),
    ("element", lambda el: el.on_end_tag(WRONG), "handler"),
    ("text", lambda chunk: chunk.before(WRONG), "content"),
    ("text", lambda chunk: chunk.replace(WRONG), "content"),
    ("comments", lambda comment: comment.after(WRONG), "content"),
    ("end", lambda end: end.append(WRONG), "content"),
]


@pytest.mark.parametrize(("kind", "call", "param"), UNIT_CALLS,
                         ids=[f"{kind}-{i}" for i, (kind, _, _) in enumerate(UNIT_CALLS)])
def test_unit_methods_name_what_they_accept(kind: str, call: Callable[[Any], object],
                                            param: str) -> None:
    rw = hs.Rewriter()
    if kind == "end":
        rw.on_document(end=call)
    else:
        rw.on("p", **{kind: call})
    with pytest.raises(TypeError) as info:
        rw.rewrite("<p>x<!--c--></p>")
    message = str(info.value)
    assert param in message and ("must be" in message or "expected" in message), message
    assert "Wrong" in message, message


def _public_callables() -> Iterator[tuple[str, str, object]]:
    for module_name in MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:          # an extra not installed
            continue
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                if (issubclass(obj, BaseException | enum.Enum)
                        or getattr(obj, "_is_protocol", False)):
                    continue
            elif not inspect.isfunction(obj) and not inspect.isbuiltin(obj):
                continue        # constants, type aliases
            elif not inspect.signature(obj).parameters:
                continue        # nothing to get wrong
            yield module_name, name, obj


def test_every_public_callable_is_covered(tmp_path: Path) -> None:
    covered = set()
    for fn, *_ in entries(tmp_path).values():
        covered.add(id(getattr(fn, "__func__", fn)))
    missing = [f"{module}.{name}" for module, name, obj in _public_callables()
               if id(obj) not in covered and name not in NOT_ENTRY_POINTS]
    assert missing == []
    # (and no stale exemption)
    names = {name for _, name, _ in _public_callables()}
    assert NOT_ENTRY_POINTS - names == set()
