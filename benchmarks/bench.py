#!/usr/bin/env python3
"""Throughput of htmlstream and its peers on the benchmark corpus, side by side, case by case.

One process, one run: for every benchmark *case* (a passthrough, each of lol-html's own benchmark
cases, the ``a[href]`` rewrite read-then-set and set-only, reading every text chunk), every
``*.html`` in the corpus (``tests/data/corpus`` in the repository, or ``$HTMLSTREAM_CORPUS``) and
every chunk size,
each *engine* of the case processes the document fed as pre-split ``bytes`` chunks, and the median
throughput (MB/s, 1 MB = 10**6 bytes of input) over ``--repeat`` samples is reported, after a
warm-up run, with the ratios htmlstream / python-lolhtml (and htmlstream / html.parser, htmlstream /
selectolax where the case has them).  Each sample times enough back-to-back runs to last at least
``--min-time`` seconds, with the garbage collector off (as ``timeit`` does), by process CPU time
(``--clock wall`` for wall-clock time); the engines of one (case, file, chunk size) row take their
samples in turn, so that changes in machine load touch them all alike.

The warm-up run of a row also compares htmlstream's output with lol-html's: byte for byte, and if
the bytes differ, as parsed trees (selectolax/lexbor); a different tree is reported (a correctness
bug in one of them, not a benchmark failure), a same-tree difference is noted (serialisation).

Cases are entries of :data:`CASES`; an engine of a case is a factory registered with
:func:`runner` that imports what it needs (``ImportError`` = the peer is missing: skipped with a
note) and returns ``run(chunks) -> output`` processing one whole document.  Cases made of
rewriter rules (selectors and handlers) are written once as :class:`Rules` and run on both
htmlstream and lol-html by :func:`rules_case`.

Run ``python benchmarks/bench.py --help`` for the options, ``--list`` for the cases.
"""

from __future__ import annotations

import argparse
import codecs
import fnmatch
import gc
import html
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

Runner = Callable[[Sequence[bytes]], Any]
"""Processes one whole document given as chunks; returns its output (bytes chunks) or None."""

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus"
DEFAULT_CHUNK_SIZES = (65536, 1024)
NEW_HREF = "https://example.com/"  # the static value of the a[href] rewrite

# --------------------------------------------------------------------------------------------
# Registry: engines (who runs) and cases (what is run)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Engine:
    """A library (or a mode of one), the same across cases."""

    name: str
    column: str  # short column header for the tables


#: Every engine, in table column order.
ENGINES: dict[str, Engine] = {
    e.name: e
    for e in (
        Engine("htmlstream", "htmlstream"),
        Engine("lol-html", "lol-html"),
        Engine("htmlstream lexer", "hs-lexer"),
        Engine("html.parser", "html.parser"),
        Engine("lxml", "lxml"),
        Engine("selectolax", "selectolax"),
    )
}

HS, LOL, HP, SLX = "htmlstream", "lol-html", "html.parser", "selectolax"

#: Ratio columns, shown in a case's table when it has both: (header, numerator, denominator).
RATIOS = (("hs/lol", HS, LOL), ("hs/h.p", HS, HP), ("hs/slx", HS, SLX))


@dataclass
class BenchCase:
    """One benchmark case: what every engine of it does to a document."""

    name: str
    title: str
    description: str
    group: str  # "htmlstream" (the targets) or "lol-html" (lol-html's benches/ cases)
    factories: dict[str, Callable[[], Runner]] = field(default_factory=dict)
    #: Engines that take the document in one piece here (chunk size does not apply).
    whole_document: set[str] = field(default_factory=set)


CASES: dict[str, BenchCase] = {}


def case(name: str, title: str, description: str, group: str = "htmlstream") -> BenchCase:
    """Declare the case ``name`` (engines are added with :func:`runner`)."""
    if name in CASES:
        raise ValueError(f"case {name!r} declared twice")
    CASES[name] = BenchCase(name, title, description, group)
    return CASES[name]


def runner(
    case_name: str, engine_name: str, *, whole_document: bool = False
) -> Callable[[Callable[[], Runner]], Callable[[], Runner]]:
    """Register ``factory`` as what ``engine_name`` runs in the case ``case_name``; with
    ``whole_document`` its runner is given the document as one chunk."""

    def register(factory: Callable[[], Runner]) -> Callable[[], Runner]:
        bench_case = CASES[case_name]
        if engine_name not in ENGINES or engine_name in bench_case.factories:
            raise ValueError(f"engine {engine_name!r} unknown or registered twice in {case_name}")
        bench_case.factories[engine_name] = factory
        if whole_document:
            bench_case.whole_document.add(engine_name)
        return factory

    return register


# --------------------------------------------------------------------------------------------
# Rules cases: the same selectors and handlers on htmlstream and on lol-html
# --------------------------------------------------------------------------------------------

Handler = Callable[[Any], Any]


@dataclass(frozen=True)
class Rules:
    """Rewriter rules, written once for both APIs (their unit methods are the same)."""

    elements: tuple[tuple[str, Handler], ...] = ()  # (selector, element handler)
    doctype: Handler | None = None  # document handlers
    text: Handler | None = None

    def document(self) -> dict[str, Handler]:
        return {k: v for k, v in (("doctype", self.doctype), ("text", self.text)) if v}


def htmlstream_rules(rules: Rules) -> Callable[[], Runner]:
    """htmlstream: the ``Rewriter`` is built once (its rules are compiled once and reused, as a
    program would), a stream is opened per document and its output chunks collected."""

    def factory() -> Runner:
        from htmlstream.rewriter import Rewriter

        rewriter = Rewriter()
        for selector, fn in rules.elements:
            rewriter.on(selector, element=fn)
        if rules.document():
            rewriter.on_document(**rules.document())

        def run(chunks: Sequence[bytes]) -> list[bytes]:
            stream = rewriter.stream()
            feed = stream.feed
            output = [feed(chunk) for chunk in chunks]
            output.append(stream.close())
            return output

        return run

    return factory


def lolhtml_rules(rules: Rules) -> Callable[[], Runner]:
    """python-lolhtml: a rewriter per document (its API has no reusable rules), handler objects
    whose methods are the plain functions, output chunks collected by the sink."""

    def factory() -> Runner:
        import lolhtml

        elements = [(sel, SimpleNamespace(element=fn)) for sel, fn in rules.elements]
        document = SimpleNamespace(**rules.document()) if rules.document() else None

        def run(chunks: Sequence[bytes]) -> list[bytes]:
            output: list[bytes] = []
            rewriter = lolhtml.HTMLRewriter(output.append)
            for selector, handler in elements:
                rewriter.on(selector, handler)
            if document is not None:
                rewriter.on_document(document)
            write = rewriter.write
            for chunk in chunks:
                write(chunk)
            rewriter.end()
            return output

        return run

    return factory


def rules_case(
    name: str, title: str, description: str, rules: Rules, group: str = "lol-html"
) -> BenchCase:
    """Declare a case that runs ``rules`` on htmlstream and on lol-html."""
    bench_case = case(name, title, description, group)
    runner(name, HS)(htmlstream_rules(rules))
    runner(name, LOL)(lolhtml_rules(rules))
    return bench_case


def noop(unit: Any) -> None:
    pass


def read_text(chunk: Any) -> None:
    chunk.text  # noqa: B018 -- reading decodes it


def set_href(element: Any) -> None:
    element.set_attribute("href", NEW_HREF)


def read_set_href(element: Any) -> None:
    """What real handlers do: read the value, then write it (edge recipes read ``href`` first)."""
    if element.get_attribute("href") is not None:
        element.set_attribute("href", NEW_HREF)


def rename_body(element: Any) -> None:
    element.tag_name = "body1"
    element.after("test")


def clear_content(element: Any) -> None:
    element.set_inner_content("")


class TextCounter:
    """Reads every text chunk and keeps what a real handler would: the characters seen."""

    __slots__ = ("chars",)

    def __init__(self) -> None:
        self.chars = 0

    def __call__(self, chunk: Any) -> None:
        self.chars += len(chunk.text)


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

NO_MATCH = "nonexistent-xyz"

# --- passthrough ----------------------------------------------------------------------------

case(
    "passthrough",
    "Passthrough: one element handler on a selector that matches nothing",
    f"htmlstream and lol-html with `{NO_MATCH}` (output = input); the raw htmlstream lexer "
    "scan; html.parser, lxml and selectolax parsing the document",
)
runner("passthrough", HS)(htmlstream_rules(Rules(elements=((NO_MATCH, noop),))))
runner("passthrough", LOL)(lolhtml_rules(Rules(elements=((NO_MATCH, noop),))))


@runner("passthrough", "htmlstream lexer")
def lexer_scan() -> Runner:
    """The full tokenizer state machine over every byte, no sink: no token objects at all."""
    from htmlstream._engine.lexer import Lexer

    def run(chunks: Sequence[bytes]) -> None:
        lexer = Lexer()
        for chunk in chunks:
            lexer.feed_bytes(chunk)
        lexer.close()

    return run


@runner("passthrough", HP)
def stdlib_parse() -> Runner:
    """``html.parser.HTMLParser`` with no-op handlers, fed incrementally decoded ``str``."""
    from html.parser import HTMLParser

    class NoOpParser(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            pass

        def handle_endtag(self, tag: str) -> None:
            pass

        def handle_data(self, data: str) -> None:
            pass

        def handle_comment(self, data: str) -> None:
            pass

        def handle_decl(self, decl: str) -> None:
            pass

    def run(chunks: Sequence[bytes]) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        parser = NoOpParser()
        for chunk in chunks:
            parser.feed(decoder.decode(chunk))
        parser.feed(decoder.decode(b"", final=True))
        parser.close()

    return run


@runner("passthrough", "lxml")
def lxml_pull() -> Runner:
    """``lxml.etree.HTMLPullParser`` (libxml2; builds a tree) fed the chunks, events read."""
    from lxml import etree

    def run(chunks: Sequence[bytes]) -> None:
        parser = etree.HTMLPullParser()
        for chunk in chunks:
            parser.feed(chunk)
        parser.close()
        for _ in parser.read_events():
            pass

    return run


@runner("passthrough", SLX, whole_document=True)
def selectolax_parse() -> Runner:
    """``selectolax.lexbor.LexborHTMLParser`` on the whole document (builds a tree)."""
    from selectolax.lexbor import LexborHTMLParser

    def run(chunks: Sequence[bytes]) -> None:
        (data,) = chunks
        LexborHTMLParser(data)

    return run


# --- lol-html's own cases (benches/cases/*.rs) ---------------------------------------------

rules_case("tag-scanner", "Tag scanner", "no handlers at all", Rules())
rules_case(
    "lexer",
    "Lexer",
    "one document doctype handler (forces lol-html's full lexer; almost no tokens)",
    Rules(doctype=noop),
)
rules_case(
    "text-decoding",
    "Text rewritable unit parsing and decoding",
    "one document text handler that reads `chunk.text`",
    Rules(text=read_text),
)
rules_case(
    "set-tag-name",
    "Modification of tags of an element with lots of content",
    '`body`: `tag_name = "body1"`, `after("test")`',
    Rules(elements=(("body", rename_body),)),
)
rules_case(
    "clear-ul",
    "Remove content of an element",
    '`ul`: `set_inner_content("")`',
    Rules(elements=(("ul", clear_content),)),
)
for _name, _selector, _title in (
    ("select-all", "*", "Match-all selector"),
    ("select-tag", "div", "Tag name selector"),
    ("select-class", ".note", "Class selector"),
    ("select-attr", "[href]", "Attribute selector"),
):
    rules_case(_name, _title, f"`{_selector}` with a no-op element handler",
               Rules(elements=((_selector, noop),)))

MULTI_SELECTORS = (
    "ul",
    "ul > li",
    "table > tbody td dfn",
    "body table > tbody tr",
    "body [href]",
    "div img",
    "div.note span",
)
rules_case(
    "select-multi",
    "Multiple selectors",
    ", ".join(f"`{s}`" for s in MULTI_SELECTORS) + ", each with a no-op element handler",
    Rules(elements=tuple((s, noop) for s in MULTI_SELECTORS)),
)

# --- the a[href] rewrite ---------------------------------------------------------------------

case(
    "rewrite-href-read",
    "`a[href]` rewrite, read then write: every link's href read, then set to a static value",
    "htmlstream and lol-html streaming, the handler "
    "`if el.get_attribute(\"href\") is not None: el.set_attribute(\"href\", ...)` (what real "
    "handlers do: read before they write); selectolax and lxml parse + read + modify + "
    "serialize; the html.parser subclass of the set-only case",
)
runner("rewrite-href-read", HS)(htmlstream_rules(Rules(elements=(("a[href]", read_set_href),))))
runner("rewrite-href-read", LOL)(lolhtml_rules(Rules(elements=(("a[href]", read_set_href),))))

case(
    "rewrite-href",
    "`a[href]` rewrite, set only: every link's href set to a static value",
    "htmlstream and lol-html streaming; selectolax (lexbor) parse + modify + serialize; "
    "lxml.html parse + modify + tostring; an html.parser subclass re-emitting every token",
)
runner("rewrite-href", HS)(htmlstream_rules(Rules(elements=(("a[href]", set_href),))))
runner("rewrite-href", LOL)(lolhtml_rules(Rules(elements=(("a[href]", set_href),))))


@runner("rewrite-href", SLX, whole_document=True)
def selectolax_rewrite() -> Runner:
    """Parse the whole document with lexbor, set every ``a[href]``, serialize it."""
    from selectolax.lexbor import LexborHTMLParser

    def run(chunks: Sequence[bytes]) -> str:
        (data,) = chunks
        tree = LexborHTMLParser(data)
        for node in tree.css("a[href]"):
            node.attrs["href"] = NEW_HREF
        return tree.html or ""

    return run


@runner("rewrite-href-read", SLX, whole_document=True)
def selectolax_read_rewrite() -> Runner:
    """Parse the whole document with lexbor, read and set every ``a[href]``, serialize it."""
    from selectolax.lexbor import LexborHTMLParser

    def run(chunks: Sequence[bytes]) -> str:
        (data,) = chunks
        tree = LexborHTMLParser(data)
        for node in tree.css("a[href]"):
            if node.attrs.get("href") is not None:
                node.attrs["href"] = NEW_HREF
        return tree.html or ""

    return run


@runner("rewrite-href-read", "lxml", whole_document=True)
def lxml_read_rewrite() -> Runner:
    """``lxml.html`` parse of the whole document, read and set every ``a[href]``, ``tostring``
    (the same work as the set-only case: lxml reads the value to find the links)."""
    return lxml_rewrite()


@runner("rewrite-href", "lxml", whole_document=True)
def lxml_rewrite() -> Runner:
    """``lxml.html`` parse of the whole document, set every ``a[href]``, ``tostring``."""
    import lxml.html

    def run(chunks: Sequence[bytes]) -> bytes:
        (data,) = chunks
        root = lxml.html.document_fromstring(data)
        for element in root.iter("a"):
            if element.get("href") is not None:
                element.set("href", NEW_HREF)
        return lxml.html.tostring(root)

    return run


@runner("rewrite-href", HP)
def stdlib_rewrite() -> Runner:
    """An ``html.parser`` subclass that writes every token back, from
    ``get_starttag_text()`` for start tags and the raw pieces for the rest, rebuilding only the
    start tags of ``<a href>``; fed incrementally decoded ``str``, output encoded back."""
    from html.parser import HTMLParser

    class HrefRewriter(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=False)  # character references come back as such
            self.out: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            raw = self.get_starttag_text() or ""
            if tag != "a" or all(name != "href" for name, _ in attrs):
                self.out.append(raw)
                return
            parts = [raw[: len(tag) + 1]]  # "<a" as written
            for name, value in attrs:
                if name == "href":
                    value = NEW_HREF
                if value is None:
                    parts.append(f" {name}")
                else:
                    parts.append(f' {name}="{html.escape(value)}"')
            parts.append("/>" if raw.endswith("/>") else ">")
            self.out.append("".join(parts))

        handle_startendtag = handle_starttag

        def handle_endtag(self, tag: str) -> None:
            self.out.append(f"</{tag}>")

        def handle_data(self, data: str) -> None:
            self.out.append(data)

        def handle_entityref(self, name: str) -> None:
            self.out.append(f"&{name};")

        def handle_charref(self, name: str) -> None:
            self.out.append(f"&#{name};")

        def handle_comment(self, data: str) -> None:
            self.out.append(f"<!--{data}-->")

        def handle_decl(self, decl: str) -> None:
            self.out.append(f"<!{decl}>")

        def handle_pi(self, data: str) -> None:
            self.out.append(f"<?{data}>")

        def unknown_decl(self, data: str) -> None:
            self.out.append(f"<![{data}]>")

    def run(chunks: Sequence[bytes]) -> list[bytes]:
        decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        parser = HrefRewriter()
        output = []
        for chunk in chunks:
            parser.feed(decoder.decode(chunk))
            output.append("".join(parser.out).encode("utf-8", "surrogateescape"))
            parser.out.clear()
        parser.feed(decoder.decode(b"", final=True))
        parser.close()
        output.append("".join(parser.out).encode("utf-8", "surrogateescape"))
        return output

    return run


runner("rewrite-href-read", HP)(stdlib_rewrite)  # (it reads every attribute to write it back)


# --- reading every text chunk ----------------------------------------------------------------

case(
    "text",
    "A text handler that reads every text chunk",
    "a document text handler that reads `chunk.text` and counts its characters",
)
runner("text", HS)(htmlstream_rules(Rules(text=TextCounter())))
runner("text", LOL)(lolhtml_rules(Rules(text=TextCounter())))

#: Order of the tables and of the summary.
CASE_ORDER = (
    "rewrite-href-read",
    "rewrite-href",
    "passthrough",
    "text",
    "tag-scanner",
    "lexer",
    "text-decoding",
    "set-tag-name",
    "clear-ul",
    "select-all",
    "select-tag",
    "select-class",
    "select-attr",
    "select-multi",
)
assert sorted(CASE_ORDER) == sorted(CASES), "CASE_ORDER must list every case"

# --------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------


def split(data: bytes, chunk_size: int) -> list[bytes]:
    """``data`` as chunks of ``chunk_size`` bytes (the last one may be shorter)."""
    return [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)] or [b""]


#: The clocks a sample can be timed with.  "cpu" (process CPU time) does not count the time the
#: process waits for a core, so figures stay comparable on a machine busy with other work.
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


@dataclass
class Trial:
    """One engine of a case on one (file, chunk size), with its samples."""

    engine: Engine
    run: Runner
    chunks: Sequence[bytes]
    whole_document: bool = False
    loops: int = 1
    output: Any = None  # the warm-up run's output
    rates: list[float] = field(default_factory=list)

    def sample(self, size: int, clock: Callable[[], float]) -> float:
        """Time ``loops`` back-to-back runs with the garbage collector off; returns MB/s."""
        gc.collect()
        gc.disable()
        try:
            started = clock()
            for _ in range(self.loops):
                self.run(self.chunks)
            elapsed = clock() - started
        finally:
            gc.enable()
        return size * self.loops / max(elapsed, 1e-9) / 1e6


def measure_row(
    trials: list[Trial],
    size: int,
    repeat: int,
    min_time: float,
    clock: Callable[[], float],
    errors: dict[str, str],
) -> list[Trial]:
    """Take ``repeat`` samples of every trial, round-robin, after a warm-up run of each.

    The warm-up also sizes the samples (enough runs to last ``min_time``) and keeps the output
    for the comparison.  Interleaving the trials exposes them all alike to changes in machine
    load, which keeps the ratios of a row honest.  A trial that raises is dropped, with the reason
    recorded in ``errors``.
    """
    ready = []
    for trial in trials:
        try:
            started = clock()
            trial.output = trial.run(trial.chunks)
            once = clock() - started
        except Exception as exc:
            errors[trial.engine.name] = describe_error(exc)
            continue
        trial.loops = max(1, math.ceil(min_time / max(once, 1e-6)))
        ready.append(trial)
    for _ in range(repeat):
        for trial in list(ready):
            try:
                trial.rates.append(trial.sample(size, clock))
            except Exception as exc:
                errors[trial.engine.name] = describe_error(exc)
                ready.remove(trial)
    return ready


def joined(output: Any) -> bytes:
    """An engine's output as one ``bytes``."""
    if isinstance(output, (bytes, bytearray)):
        return bytes(output)
    if isinstance(output, str):
        return output.encode("utf-8", "surrogateescape")
    return b"".join(bytes(part) for part in output)


def same_tree(a: bytes, b: bytes) -> bool | None:
    """Whether two documents parse to the same tree (lexbor's serialisation of each); None if
    selectolax is missing."""
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError:
        return None
    return LexborHTMLParser(a).html == LexborHTMLParser(b).html


def compare_outputs(ours: Any, theirs: Any) -> tuple[str, str]:
    """How htmlstream's output compares with lol-html's: ``("same", "")``, ``("tree", note)``
    (different bytes, same parsed tree: serialisation, e.g. a rewritten tag's whitespace kept) or
    ``("differs", where)``."""
    a, b = joined(ours), joined(theirs)
    if a == b:
        return "same", ""
    pairs = enumerate(zip(a, b, strict=False))
    at = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
    where = (
        f"first difference at byte {at} (htmlstream {len(a)} B, lol-html {len(b)} B): "
        f"htmlstream {a[max(0, at - 30) : at + 30]!r} / lol-html {b[max(0, at - 30) : at + 30]!r}"
    )
    return ("tree" if same_tree(a, b) else "differs"), where


def select_cases(names: list[str] | None) -> list[BenchCase]:
    """The cases named (exactly, else as a glob or a substring), in :data:`CASE_ORDER`."""
    if not names:
        return [CASES[n] for n in CASE_ORDER]
    chosen: set[str] = set()
    for name in names:
        hits = [name] if name in CASES else [
            n for n in CASE_ORDER if fnmatch.fnmatch(n, name) or name.lower() in n
        ]
        if not hits:
            raise SystemExit(f"bench: no case matches {name!r} (see --list)")
        chosen.update(hits)
    return [CASES[n] for n in CASE_ORDER if n in chosen]


def select_engines(only: list[str] | None) -> list[Engine]:
    """The engines ``only`` names (case-insensitive): each word picks the engine it names exactly
    (name or column), else every engine whose name contains it.  All engines without ``only``."""
    if not only:
        return list(ENGINES.values())
    chosen: set[str] = set()
    for word in (w.lower() for w in only):
        exact = [e.name for e in ENGINES.values() if word in (e.name.lower(), e.column.lower())]
        chosen.update(exact or [e.name for e in ENGINES.values() if word in e.name.lower()])
    return [e for e in ENGINES.values() if e.name in chosen]


def describe_error(exc: BaseException) -> str:
    """A one-line reason for a skip: the exception type and its first sentence."""
    message = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {message.split('. ')[0]}"[:160]


def load_runners(
    cases: list[BenchCase], engines: list[Engine]
) -> tuple[dict[tuple[str, str], Runner], dict[str, str]]:
    """Build each (case, engine) runner; one that cannot be set up is skipped with the reason."""
    runners: dict[tuple[str, str], Runner] = {}
    skipped: dict[str, str] = {}
    for bench_case in cases:
        for eng in engines:
            factory = bench_case.factories.get(eng.name)
            if factory is None:
                continue
            try:
                runners[bench_case.name, eng.name] = factory()
            except Exception as exc:  # ImportError above all: peer not installed / not built
                skipped[f"{eng.name} in {bench_case.name}"] = describe_error(exc)
    return runners, skipped


def run_benchmarks(
    cases: list[BenchCase],
    files: list[Path],
    engines: list[Engine],
    runners: dict[tuple[str, str], Runner],
    chunk_sizes: Sequence[int],
    repeat: int,
    min_time: float,
    clock: Callable[[], float],
    skipped: dict[str, str],
    mismatches: dict[str, dict[str, str]],
) -> list[dict]:
    """Measure every (case, file, chunk size, engine); returns one result dict per measurement.

    An engine that takes the whole document is measured once per file (in the row of the first
    chunk size); its figure is shown in every row of that file.
    """
    results = []
    documents = {path: path.read_bytes() for path in files}
    for bench_case in cases:
        for path, data in documents.items():
            for n, chunk_size in enumerate(chunk_sizes):
                chunks = split(data, chunk_size)
                whole = bench_case.whole_document
                trials = [
                    Trial(eng, runners[bench_case.name, eng.name],
                          [data] if eng.name in whole else chunks, eng.name in whole)
                    for eng in engines
                    if (bench_case.name, eng.name) in runners and (n == 0 or eng.name not in whole)
                ]
                if not trials:
                    continue
                print(f"  {bench_case.name}: {path.name}, chunks of {chunk_size} ...",
                      file=sys.stderr)
                errors: dict[str, str] = {}
                done = measure_row(trials, len(data), repeat, min_time, clock, errors)
                for trial in done:
                    results.append(
                        {
                            "case": bench_case.name,
                            "file": path.name,
                            "size": len(data),
                            "chunk_size": None if trial.whole_document else chunk_size,
                            "engine": trial.engine.name,
                            "mb_s": statistics.median(trial.rates),
                            "min_mb_s": min(trial.rates),
                            "max_mb_s": max(trial.rates),
                            "loops": trial.loops,
                        }
                    )
                where = f"{bench_case.name} on {path.name} (chunks of {chunk_size})"
                by_engine = {t.engine.name: t for t in done}
                if HS in by_engine and LOL in by_engine:
                    verdict, diff = compare_outputs(by_engine[HS].output, by_engine[LOL].output)
                    if verdict != "same":
                        mismatches[where] = {"verdict": verdict, "detail": diff}
                for name, reason in errors.items():
                    skipped[f"{name} in {where}"] = reason
    return results


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def rows_of(results: list[dict], case_name: str, chunk_sizes: Sequence[int]) -> dict:
    """{(file, chunk size): {"size": n, engine: MB/s}} for one case; whole-document figures are
    copied into every chunk size's row of their file."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    mine = [r for r in results if r["case"] == case_name]
    for r in mine:
        for chunk_size in chunk_sizes if r["chunk_size"] is None else [r["chunk_size"]]:
            row = rows.setdefault((r["file"], chunk_size), {"size": r["size"]})
            row[r["engine"]] = r["mb_s"]
    order = {c: i for i, c in enumerate(chunk_sizes)}
    return dict(sorted(rows.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])))


def ratio(row: dict, num: str, den: str) -> float | None:
    return row[num] / row[den] if num in row and den in row and row[den] > 0 else None


def render(table: list[list[str]], markdown: bool) -> list[str]:
    """Align a table (first row = header; first column left-aligned, the rest right-aligned)."""
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = []
    for n, cells in enumerate(table):
        padded = [
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        if markdown:
            lines.append("| " + " | ".join(padded) + " |")
            if n == 0:
                lines.append("| " + " | ".join(
                    "-" * w if i == 0 else "-" * (w - 1) + ":" for i, w in enumerate(widths)
                ) + " |")
        else:
            lines.append("  ".join(padded))
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
    return lines


def format_case(
    bench_case: BenchCase, results: list[dict], chunk_sizes: Sequence[int], markdown: bool
) -> str:
    """A case's table: one row per (file, chunk size), MB/s per engine, then the ratios."""
    rows = rows_of(results, bench_case.name, chunk_sizes)
    if not rows:
        return ""
    shown = [e for e in ENGINES.values() if any(e.name in row for row in rows.values())]
    names = {e.name for e in shown}
    ratios = [r for r in RATIOS if r[1] in names and r[2] in names]
    table = [["file", "KB", "chunk"] + [e.column for e in shown] + [r[0] for r in ratios]]
    for (name, chunk_size), row in rows.items():
        cells = [name, f"{row['size'] / 1000:.0f}", str(chunk_size)]
        cells += [f"{row[e.name]:.1f}" if e.name in row else "-" for e in shown]
        for _, num, den in ratios:
            value = ratio(row, num, den)
            cells.append("-" if value is None else f"{value:.2f}x")
        table.append(cells)
    whole = [e.column for e in shown if e.name in bench_case.whole_document]
    head = f"{bench_case.name}: {bench_case.title}"
    note = f"MB/s, median. {bench_case.description}."
    if whole:
        note += f" {', '.join(whole)}: whole document in one piece (chunk size does not apply)."
    if markdown:
        return "\n".join([f"**{head}** — {note}", "", *render(table, True)])
    return "\n".join([head, *render(table, False), note])


def format_summary(
    cases: list[BenchCase], results: list[dict], chunk_sizes: Sequence[int], markdown: bool
) -> str:
    """htmlstream / lol-html for every case, file and chunk size, and htmlstream's MB/s range."""
    files = sorted({r["file"] for r in results})
    table = [["case", "chunk", *files, "min", "htmlstream MB/s"]]
    for bench_case in cases:
        rows = rows_of(results, bench_case.name, chunk_sizes)
        for chunk_size in chunk_sizes:
            found = [rows.get((f, chunk_size), {}) for f in files]
            ratios = [ratio(row, HS, LOL) for row in found]
            rates = [row[HS] for row in found if HS in row]
            if all(r is None for r in ratios):
                continue
            cells = [bench_case.name, str(chunk_size)]
            cells += ["-" if r is None else f"{r:.2f}x" for r in ratios]
            cells.append(f"{min(r for r in ratios if r is not None):.2f}x")
            cells.append(f"{min(rates):.0f}–{max(rates):.0f}" if rates else "-")
            table.append(cells)
    if len(table) == 1:
        return ""
    title = "summary: htmlstream / lol-html (ratio of MB/s; > 1 = htmlstream faster)"
    if markdown:
        return "\n".join([f"**{title}**", "", *render(table, True)])
    return "\n".join([title, *render(table, False)])


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), or what platform knows."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict[str, Any]:
    """What the figures were measured on."""
    from importlib.metadata import version

    versions = {}
    for dist in ("htmlstream", "python-lolhtml", "lxml", "selectolax", "Cython"):
        try:
            versions[dist] = version(dist)
        except Exception:
            versions[dist] = None
    try:  # read-only: which commit the engine was built from (the tree may have changes on top)
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).resolve().parent,
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "commit": commit,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "versions": versions,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def positive_int(value: str) -> int:
    """``argparse`` type: an integer greater than zero."""
    number = int(value)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0: {value!r}")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--case",
        action="append",
        metavar="NAME",
        help="run only this case (repeatable; exact name, glob or substring; default: all, "
        "see --list)",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="ENGINE",
        help="run only this engine (repeatable; name or column, or a substring of the name, "
        "case-insensitive: htmlstream, lol, lexer, html.parser, lxml, selectolax)",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=Path(os.environ.get("HTMLSTREAM_CORPUS", DEFAULT_CORPUS)),
        help="directory of .html files (default: $HTMLSTREAM_CORPUS or tests/data/corpus)",
    )
    parser.add_argument("--files", default="*.html", metavar="GLOB", help="files in the corpus")
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        action="append",
        metavar="N",
        help="bytes per chunk (repeatable; default: "
        + " and ".join(map(str, DEFAULT_CHUNK_SIZES))
        + ")",
    )
    parser.add_argument("--repeat", type=positive_int, default=5, help="samples (default: 5)")
    parser.add_argument(
        "--min-time",
        type=float,
        default=0.04,
        metavar="SECONDS",
        help="least duration of one sample; short runs are looped (default: 0.04)",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="time samples by process CPU time (default; robust on a busy machine) or wall clock",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    parser.add_argument(
        "--markdown", action="store_true", help="print the tables as Markdown (for the README)"
    )
    parser.add_argument(
        "--report", type=Path, metavar="IN",
        help="print the tables of a --json file instead of measuring (--markdown: as Markdown)",
    )
    parser.add_argument("--list", action="store_true", help="list cases and engines and exit")
    return parser


def list_cases() -> None:
    print("cases:")
    for name in CASE_ORDER:
        c = CASES[name]
        engines = ", ".join(
            e + (" (whole document)" if e in c.whole_document else "")
            for e in ENGINES
            if e in c.factories
        )
        print(f"  {name:<14} {c.title} [{engines}]\n  {'':<14} {c.description}")
    print("engines:")
    for e in ENGINES.values():
        print(f"  {e.column:<14} {e.name}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.list:
        list_cases()
        return 0

    if args.report:
        report = json.loads(args.report.read_text())
        settings = report["settings"]
        cases = [CASES[n] for n in settings["cases"] if n in CASES]
        results = report["results"]
        chunk_sizes = settings["chunk_sizes"]
        blocks = [format_case(c, results, chunk_sizes, args.markdown) for c in cases]
        blocks.append(format_summary(cases, results, chunk_sizes, args.markdown))
        print("\n\n".join(b for b in blocks if b))
        return 0

    cases = select_cases(args.case)
    engines = select_engines(args.only)
    if not engines:
        print(f"bench: no engine matches {args.only} (see --list)", file=sys.stderr)
        return 2
    files = sorted(args.corpus.glob(args.files))
    if not files:
        print(f"bench: no file matches {args.files!r} in {args.corpus}", file=sys.stderr)
        return 2
    chunk_sizes = args.chunk_size or list(DEFAULT_CHUNK_SIZES)

    runners, skipped = load_runners(cases, engines)
    for name, reason in skipped.items():
        print(f"note: skipping {name}: {reason}", file=sys.stderr)

    started = time.perf_counter()
    mismatches: dict[str, dict[str, str]] = {}
    results = run_benchmarks(
        cases, files, engines, runners, chunk_sizes, args.repeat, args.min_time,
        CLOCKS[args.clock], skipped, mismatches,
    )
    total = time.perf_counter() - started

    blocks = [format_case(c, results, chunk_sizes, args.markdown) for c in cases]
    blocks.append(format_summary(cases, results, chunk_sizes, args.markdown))
    print("\n\n".join(b for b in blocks if b))
    differs = {k: v for k, v in mismatches.items() if v["verdict"] == "differs"}
    if differs:
        print("\noutput of htmlstream and lol-html parse to different trees:")
        for name, diff in differs.items():
            print(f"  {name}: {diff['detail']}")
    if len(differs) < len(mismatches):
        print("\noutput of htmlstream and lol-html: same tree, different bytes (serialisation) in "
              + ", ".join(k for k, v in mismatches.items() if v["verdict"] == "tree"))
    if skipped:
        print("\nskipped:")
        for name, reason in skipped.items():
            print(f"  {name}: {reason}")
    env = environment()
    print(
        f"\n{len(results)} measurements in {total:.0f} s; repeat={args.repeat}, min sample "
        f"{args.min_time} s, {args.clock} clock; {env['implementation']} {env['python']}, "
        f"{env['cpu']}, {env['cpus']} CPUs"
    )

    if args.json:
        report = {
            "environment": env,
            "settings": {
                "cases": [c.name for c in cases],
                "corpus": str(args.corpus.resolve()),
                "files": args.files,
                "chunk_sizes": chunk_sizes,
                "repeat": args.repeat,
                "min_time": args.min_time,
                "clock": args.clock,
            },
            "results": results,
            "mismatches": mismatches,
            "skipped": skipped,
            "seconds": total,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
