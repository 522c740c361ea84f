"""Atheris (libFuzzer) target for the tokenizer and the rewriter.

Run it with ``make fuzz FUZZ_SECONDS=60`` (see fuzz/README.md), or directly::

    .venv/bin/python fuzz/fuzz_rewriter.py build/fuzz-corpus fuzz/corpus -max_total_time=60

Each input is decoded into: a document (raw bytes, or a sequence of HTML grammar fragments and
tags picked by the bytes), a mutation (kind, selector, text), Rewriter/Tokenizer options
(an ASCII-compatible encoding, scripting, strict, a small max_buffer_size or max_attributes,
on_limit) and a seed for the chunkings.  It then checks the invariants of
``fuzz/htmlmodel.py``:

* the tokens do not depend on the chunking (and rebuild the input), under the options;
* handlers that change nothing give the input back, under the options (in passthrough mode even
  when a limit is hit; in raise mode the output before the error is a prefix of the input);
* the mutation's output re-tokenizes to the intended structure, the same for every chunking;
* ``recipes.obfuscate_emails`` does not depend on the chunking and ``recipes.decode_emails``
  undoes it (``htmlmodel.check_emails``);
* ``recipes.sanitize`` (ammonia's default policy, one with ammonia's value options, and a
  permissive one with SVG, MathML,
  ``<style>``, comments and the doctype): parsed by html5lib, its output holds no element,
  attribute or URL scheme outside the policy, closes what it opens, sanitizes to itself, and
  does not depend on the chunking (``tests/sanitize_checks.py``);
* ``recipes.minify`` does not depend on the chunking and keeps html5lib's tree
  (``htmlmodel.check_minify``);
* ``htmlstream.markdown`` (whole page and ``main_content``) does not crash and does not depend
  on the chunking (``htmlmodel.check_markdown``);
* ``htmlstream.http.ResponseRewrite(markdown=...)`` with ``Accept: text/markdown``: a page is
  converted to exactly its Markdown with its headers, or passed when it is not HTML, the same
  in every chunking (``check_markdown_edge``);
* ``Rewriter(esi_tags=True)`` with handlers that read everything gives the input back in every
  chunking, and ``recipes.esi`` (fragments from a dict) does not depend on the chunking;
* nothing raises but htmlstream's documented errors.

A failure of a kind already reported (``htmlmodel.KNOWN_BUGS``) is counted, not reported; any
other failure is a crash (libFuzzer writes the input to ``crash-*``).  Statistics go to stderr
every 20 seconds.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

try:
    import atheris
except ImportError:     # pragma: no cover - reported by `make fuzz`
    sys.exit("atheris is not installed: pip install atheris (Linux or macOS, CPython 3.8-3.12)")

with atheris.instrument_imports():     # htmlmodel imports htmlstream: its Python modules too
    import htmlmodel as hm

    from chunking import chunkings

ENCODINGS = ["utf-8", "utf-8", "utf-8", "windows-1252", "iso-8859-2", "shift_jis", "euc-kr",
             "gb18030", "big5", "koi8-r"]
BUFFER_SIZES = [None, None, 16, 17, 64, 256]
ATTRIBUTE_LIMITS = [None, None, 1, 2, 5]
KINDS = list(hm.KINDS)

# The grammar: a byte < len(TABLE) picks a fragment or tag; other bytes are themselves.
TABLE: list[bytes] = list(hm.FRAGMENTS)
for _name in hm.TAG_NAMES + hm.STRUCTURAL_ONLY_TAGS:
    TABLE += [f"<{_name}>".encode(), f"</{_name}>".encode()]
TABLE += [b" href=x", b" title=\"t\"", b" class=c", b" id=i", b" a=", b"=", b"/>"]
TABLE += [p for p in hm.EMAIL_PIECES if p not in TABLE][:12]
#: A document with one of these tags is checked for chunking and identity only, never with a
#: mutation: whether ``<frameset>`` is accepted depends on text before it, which a mutation
#: elsewhere may add or remove (hm.STRUCTURAL_ONLY_TAGS).
STRUCTURAL_ONLY = re.compile(
    rb"<(?:" + b"|".join(t.encode() for t in hm.STRUCTURAL_ONLY_TAGS) + rb")[\s/>]", re.I)
assert len(TABLE) < 256

STATS: Counter[str] = Counter()
_last_report = time.monotonic()


def _report() -> None:
    global _last_report
    now = time.monotonic()
    if now - _last_report >= 20:
        _last_report = now
        known = ", ".join(f"{k}={v}" for k, v in sorted(STATS.items()) if k != "inputs")
        print(f"#stats inputs={STATS['inputs']} {known}", file=sys.stderr, flush=True)


def _document(fdp: atheris.FuzzedDataProvider, grammar: bool) -> bytes:
    raw = fdp.ConsumeBytes(fdp.remaining_bytes())
    if not grammar:
        return raw
    out = bytearray()
    it = iter(raw)
    for b in it:
        if b < len(TABLE):
            out += TABLE[b]
        else:
            out.append(next(it, b))
    return bytes(out)


def _text(fdp: atheris.FuzzedDataProvider) -> str:
    parts = []
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        if fdp.ConsumeBool():
            parts.append(fdp.PickValueInList(hm.TEXT_PIECES))
        else:
            parts.append(fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 6)))
    return "".join(parts).replace("\r", "").replace("\x00", "")


def _options(fdp: atheris.FuzzedDataProvider) -> tuple[dict[str, object], dict[str, object]]:
    """(Rewriter options, Tokenizer options) drawn from the input."""
    common: dict[str, object] = {
        "encoding": fdp.PickValueInList(ENCODINGS),
        "scripting": fdp.ConsumeBool(),
        "strict": fdp.ConsumeIntInRange(0, 7) == 0,
    }
    size = fdp.PickValueInList(BUFFER_SIZES)
    if size is not None:
        common["max_buffer_size"] = size
    attrs = fdp.PickValueInList(ATTRIBUTE_LIMITS)
    if attrs is not None:
        common["max_attributes"] = attrs
    rewriter = dict(common, on_limit=fdp.PickValueInList(["raise", "passthrough"]))
    return rewriter, common


def TestOneInput(data: bytes) -> None:
    STATS["inputs"] += 1
    _report()
    fdp = atheris.FuzzedDataProvider(data)
    grammar = fdp.ConsumeBool()
    kind = fdp.PickValueInList(KINDS)
    selector = fdp.PickValueInList(hm.SELECTORS)
    attr = fdp.PickValueInList(["title", "data-x", "class", "TITLE"])
    text = _text(fdp)
    rw_options, tk_options = _options(fdp)
    seed = fdp.ConsumeIntInRange(0, 1 << 30)
    doc = _document(fdp, grammar)

    cuts = chunkings(doc, seed=seed, random_splits=2, split_samples=2, exhaustive_limit=0,
                     single_bytes=len(doc) <= 48)
    try:
        hm.check_chunking(doc, cuts, **tk_options)
        hm.check_chunking(doc, cuts)
        hm.check_identity(doc, cuts, **rw_options)
        check_esi(doc, cuts)
        if not STRUCTURAL_ONLY.search(doc):
            hm.check_mutation(doc, hm.Mutation(kind, selector, text, attr), cuts)
            # recipes.obfuscate_emails / decode_emails (no limits: where a limit stops a
            # stream depends on the chunk sizes; no <frameset>: what the recipe inserts before
            # it decides whether it is accepted)
            hm.check_emails(doc, cuts, encoding=rw_options["encoding"],
                            scripting=rw_options["scripting"])
    except hm.KnownBug as bug:
        STATS[bug.key] += 1
    check_recipes(doc, cuts)
    check_sanitize(doc, cuts)
    hm.check_minify(doc, cuts)
    hm.check_markdown(doc, cuts)
    check_markdown_edge(doc, cuts)


_EDGE_RW: list[Any] = []     # (the rewriter, made at first use)


def _edge_response(chunks: list[bytes]) -> tuple[bytes, object]:
    import htmlstream
    from htmlstream import http
    if not _EDGE_RW:
        _EDGE_RW.append(htmlstream.Rewriter())
    t: Any = http.ResponseRewrite(
        _EDGE_RW[0], "GET", 200, [("content-type", "text/html")],
        request_headers=[("accept", "text/markdown")], markdown=http.MarkdownOptions())
    out = b"".join(t.feed(c) for c in chunks) + t.close()
    return out, (t.headers, t.decision.encoding if t.rewriting else None)


def check_markdown_edge(doc: bytes, cuts: list[list[bytes]]) -> None:
    """Content negotiation (issue 36): a page that is rewritten leaves as exactly its Markdown,
    as text/markdown with its token count; the same in every chunking."""
    import htmlstream
    try:
        expected = _edge_response([doc])
    except htmlstream.HtmlStreamError:
        return      # (refused: UTF-16 without transcoding)
    headers, encoding = expected[1]  # type: ignore[misc]
    if encoding is not None:
        enc = encoding if htmlstream.lookup_encoding(encoding).ascii_compatible else "utf-8"
        md = htmlstream.markdown(doc, encoding=enc).encode("utf-8", "surrogatepass")
        if expected[0] != md or ("content-type", "text/markdown; charset=utf-8") not in headers:
            raise AssertionError("markdown edge: not the page's Markdown")
    for chunks in cuts:
        if _edge_response(chunks) != expected:
            raise AssertionError(f"markdown edge: output depends on the chunking {chunks!r}")


def check_esi(doc: bytes, cuts: list[list[bytes]]) -> None:
    """Issue 31: esi_tags changes no byte where handlers change nothing; recipes.esi's output
    does not depend on the chunking."""
    import asyncio

    hm.check_identity(doc, [[doc]])      # (a known engine bug is counted by the caller)
    rw = _RECIPES["esi_tags"]
    for chunks in cuts:
        stream = rw.stream()
        if b"".join([stream.feed(c) for c in chunks] + [stream.close()]) != doc:
            raise AssertionError(f"esi_tags: handlers that change nothing changed {chunks!r}")
    if b"esi" not in doc.lower():
        return

    async def run() -> None:
        esi = _RECIPES["esi"]
        expected = await esi.rewrite(doc, "http://o/page")
        for chunks in cuts:
            if await esi.rewrite(chunks, "http://o/page") != expected:
                raise AssertionError(f"recipes.esi: output depends on the chunking {chunks!r}")

    asyncio.run(run())


async def _esi_fetch(url: str) -> bytes:
    fragments = {"http://o/a": b"[A]", "http://o/b": b"<esi:include src=a>[B]"}
    if url not in fragments:
        raise LookupError(url)
    return fragments[url]


def check_sanitize(doc: bytes, cuts: list[list[bytes]]) -> None:
    """recipes.sanitize: what it promises (sanitize_checks.check), in every chunking."""
    source = doc.decode("utf-8", "replace")
    for policy in _SANITIZE_POLICIES:
        sanitize_checks.check(source, policy)
    rw = _RECIPES["sanitize"]
    expected = rw.rewrite(doc)
    for chunks in cuts:
        stream = rw.stream()
        if b"".join([stream.feed(c) for c in chunks] + [stream.close()]) != expected:
            raise AssertionError(f"sanitize: output depends on the chunking {chunks!r}")


def _recipes_output(chunks: list[bytes], known: bool) -> tuple[bytes, object]:
    ctx: dict[str, object] = {}
    stream = _RECIPES[known].stream(context=ctx)
    out = b"".join(stream.feed(c) for c in chunks) + stream.close()
    if stream.passthrough_reason is not None:
        # (UTF-16 input passes through unchanged: no handler runs, so there is no report)
        return out, stream.passthrough_reason
    report = ctx["https_upgrade"]
    return out, (report.upgraded, report.left, ctx.get("csp_nonce"))  # type: ignore[attr-defined]


def check_recipes(doc: bytes, cuts: list[list[bytes]]) -> None:
    """The recipes (htmlstream.recipes): output and report the same in every chunking; with no
    host known (and nothing to inject or nonce), no byte changes."""
    expected = _recipes_output([doc], True)
    for chunks in cuts:
        got = _recipes_output(chunks, True)
        if got != expected and (
                got[1] != expected[1] or not isinstance(got[0], bytes)
                or hm._decoded_view(got[0], {}) != hm._decoded_view(expected[0], {})):
            # (the same meaning is enough: next to a seam, the engine writes a '<' that text a
            # recipe carried over could turn into a tag as '&lt;', as for the e-mail recipe)
            raise AssertionError(f"recipes: output depends on the chunking {chunks!r}")
        if _recipes_output(chunks, False)[0] != doc:
            raise AssertionError("recipes: https_upgrade with no known host changed the input")


def _make_recipes() -> dict[Any, object]:
    from htmlstream import Rewriter, recipes
    every = Rewriter().use(
        recipes.csp_nonce(nonce=lambda: "n0nce"),
        recipes.inject(head_start="<!--hs-->", head_end="<script>h()</script>",
                       body_start="<!--bs-->", body_end="<!--be-->"),
        recipes.https_upgrade(["*"], hsts_preload=False, links=True,
                              upgrade_insecure_requests=True),
        recipes.obfuscate_emails(random=1))     # (filtered text handlers: text_filter="@")
    none = Rewriter().use(recipes.https_upgrade(lambda host: False, hsts_preload=False,
                                                links=True))
    esi_tags = Rewriter(esi_tags=True)
    esi_tags.on("*", element=lambda el: (el.tag_name, list(el.attributes), el.can_have_content))
    return {True: every, False: none, "sanitize": Rewriter().use(recipes.sanitize()),
            "esi_tags": esi_tags, "esi": recipes.esi(_esi_fetch, max_depth=3)}


def _sanitize_policies() -> list[Any]:
    import dataclasses

    from htmlstream import Policy
    default = Policy()
    permissive = dataclasses.replace(
        default, tags=default.tags | {"svg", "math", "mi", "mtext", "style", "rect", "text",
                                      "foreignObject", "textarea", "title", "desc"},
        allow_comments=True, allow_doctype=True,
        attributes={**default.attributes, "*": frozenset({"title", "data-*", "style"})})
    # ammonia's value options (issue 32): classes, values, ids, relative URLs rewritten
    options = dataclasses.replace(
        default.add(tags={"span", "select", "option", "selectedcontent", "svg", "circle"},
                    attributes={"*": {"id", "for"}, "img": {"srcset"}},
                    allowed_classes={"span": {"a", "b"}},
                    tag_attribute_values={"div": {"role": {"note"}}}),
        id_prefix="u-", url_relative=("rewrite_with_base", "https://example.com/d/"))
    return [default, permissive, options]


with atheris.instrument_imports():
    _RECIPES: dict[Any, Any] = _make_recipes()
    _SANITIZE_POLICIES = _sanitize_policies()
    import sanitize_checks


def main() -> None:
    argv = list(sys.argv)
    if not any(a.startswith("-timeout=") for a in argv):
        argv.append("-timeout=30")
    if not any(a.startswith("-max_len=") for a in argv):
        argv.append("-max_len=2048")
    if not any(a.startswith("-rss_limit_mb=") for a in argv):
        argv.append("-rss_limit_mb=4096")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    atheris.Setup(argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
