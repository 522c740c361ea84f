"""recipes.minify next to minify-html (Rust, whole buffer) and htmlmin (pure Python) on the corpus,
in one run: output size as a fraction of the input, MB/s, and how many pages each leaves with
another tree (html5lib's tree of the output against the input's, tests/oracles/minify_tree.py:
comments aside, whitespace compared as the minifier's rules allow, script and style text
aside).

    .venv/bin/python benchmarks/bench_minify.py [--repeat N] [--chunk-size BYTES] [--cpu]
        [--per-page] [--techniques] [--chromium BATCH [--remove]]

The corpus is ``tests/data/corpus/*.html`` (or ``$HTMLSTREAM_CORPUS``: a folder of ``*.html``
and ``*.html.gz`` pages, such as the article-extraction benchmark's ``html/``); htmlstream is fed in
chunks of 64 KiB, the peers get each document whole (they cannot stream).  Each figure is the
best of N runs over all the files.  htmlmin does not import on Python 3.13 and later (it uses
the removed ``cgi`` module): it is then left out, with a note.  Two reference rows: the recipe as
Python handlers (how it ran before the compiled output stage; the stage's oracle) and a
rewriter with nothing to do (the stream alone).
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from htmlstream import Rewriter, recipes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from oracles.minify_tree import canonical_tree  # noqa: E402


def corpus() -> list[bytes]:
    env = os.environ.get("HTMLSTREAM_CORPUS")
    root = Path(env) if env else ROOT / "tests" / "data" / "corpus"
    paths = sorted([*root.glob("*.html"), *root.glob("*.html.gz")])
    return [gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
            for p in paths]


Minifier = Callable[[bytes], bytes]


def _streamed(rw: Rewriter, chunk_size: int) -> Minifier:
    """One stream of ``rw`` per document, fed in chunks of ``chunk_size``."""

    def run(doc: bytes) -> bytes:
        stream = rw.stream()
        out = [stream.feed(doc[i:i + chunk_size]) for i in range(0, len(doc), chunk_size)]
        out.append(stream.close())
        return b"".join(out)
    return run


def htmlstream_case(chunk_size: int, **options: bool | str) -> Minifier:
    """``minify(**options)`` (css and js on by default where rcssmin and rjsmin are
    installed)."""
    return _streamed(Rewriter().use(recipes.minify(**options)), chunk_size)


def handlers_case(chunk_size: int) -> Minifier:
    """The recipe as Python handlers (tests/oracles/minify_handlers.py: how it ran before the
    compiled stage, and the stage's oracle), default options."""
    from oracles.minify_handlers import handlers_rewriter

    return _streamed(handlers_rewriter(), chunk_size)


def peers() -> tuple[dict[str, Minifier], list[str]]:
    cases: dict[str, Minifier] = {}
    notes = []
    try:
        import minify_html

        def mh(doc: bytes) -> bytes:
            return minify_html.minify(doc.decode("utf-8", "replace")).encode("utf-8")

        def mh_code(doc: bytes) -> bytes:
            return minify_html.minify(doc.decode("utf-8", "replace"), minify_css=True,
                                      minify_js=True).encode("utf-8")
        cases["minify-html"] = mh
        cases["minify-html css+js"] = mh_code
    except ImportError as exc:
        notes.append(f"minify-html left out: {exc}")
    try:
        import htmlmin

        def hm(doc: bytes) -> bytes:
            return htmlmin.minify(doc.decode("utf-8", "replace"), remove_comments=True,
                                  remove_empty_space=True).encode("utf-8")
        cases["htmlmin"] = hm
    except Exception as exc:   # (ImportError, or its cgi import failing on 3.13+)
        notes.append(f"htmlmin left out: {type(exc).__name__}: {exc}")
    return cases, notes


#: The techniques measured apart (``--techniques``): each option of ``minify()`` turned off, the
#: others on; what it saves is the difference to everything on.
TECHNIQUES = ("comments", "whitespace", "attributes", "optional_tags", "css", "js")


def techniques(docs: list[bytes], chunk_size: int) -> None:
    """Bytes saved per technique on ``docs``: everything on (white space as the default
    ``"collapse"``), less the output with that one option off (so each is what it adds to the
    others); and what ``whitespace="remove"`` would save over the default."""
    total = sum(map(len, docs))
    full: dict[str, bool | str] = {name: True for name in TECHNIQUES}
    full["whitespace"] = "collapse"

    def size(**options: bool | str) -> int:
        run = htmlstream_case(chunk_size, **{**full, **options})
        return sum(len(run(d)) for d in docs)

    every = size()
    print(f"bytes saved per technique ({len(docs)} pages, {total:,} bytes; everything on: "
          f"{every / total:.4f} of the input)")
    for name in TECHNIQUES:
        saved = size(**{name: False}) - every
        print(f"  {name:14} {saved:>10,} bytes  {saved / total * 100:6.2f} points")
    saved = every - size(whitespace="remove")
    print(f"  {'ws remove':14} {saved:>10,} bytes  {saved / total * 100:6.2f} points "
          f"(whitespace='remove' over the default, not counted above)")


def chromium(docs: list[bytes], chunk_size: int, batch: int, whitespace: str) -> None:
    """Each page and its ``minify(whitespace=whitespace)`` output compared in headless Chromium
    (tests/minify_browser.py: the DOM after the allowed normalisations, style sheets, computed
    style of every element, innerText), ``batch`` pages per browser process: the pages that
    differ, and how."""
    import tempfile

    from minify_browser import compare_in_chromium

    run = htmlstream_case(chunk_size, whitespace=whitespace)  # type: ignore[arg-type]
    code = bool(recipes.minify().js or recipes.minify().css)
    differ = 0
    for start in range(0, len(docs), batch):
        part = docs[start:start + batch]
        with tempfile.TemporaryDirectory() as tmp:
            results = compare_in_chromium([(d, run(d)) for d in part], Path(tmp) / "profile",
                                          code=code, timeout=1800)
        for i, diffs in enumerate(results):
            if diffs:
                differ += 1
                print(f"page {start + i}: {diffs[:3]}")
    print(f"chromium: {differ} of {len(docs)} pages render differently")


def broken(docs: list[bytes], outs: list[bytes]) -> int:
    """How many outputs html5lib builds another tree from."""
    n = 0
    for doc, out in zip(docs, outs, strict=True):
        a = doc.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        b = out.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        n += canonical_tree(a, code=True) != canonical_tree(b, code=True)
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunk-size", type=int, default=65536)
    parser.add_argument("--cpu", action="store_true",
                        help="CPU time of the process instead of wall-clock time (a busy host)")
    parser.add_argument("--techniques", action="store_true",
                        help="bytes saved per technique (each option off in turn), then stop")
    parser.add_argument("--chromium", type=int, metavar="BATCH", default=0,
                        help="compare each page with its minified form in headless Chromium, "
                        "BATCH pages per browser, then stop")
    parser.add_argument("--remove", action="store_true",
                        help="with --chromium: minify(whitespace='remove') instead of the "
                        "default whitespace='collapse'")
    parser.add_argument("--no-trees", action="store_true",
                        help="leave out the html5lib tree check (slow on large sets)")
    parser.add_argument("--per-page", action="store_true",
                        help="also print each page's size ratio, per case")
    args = parser.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    docs = corpus()
    if args.techniques:
        techniques(docs, args.chunk_size)
        return
    if args.chromium:
        chromium(docs, args.chunk_size, args.chromium,
                 "remove" if args.remove else "collapse")
        return
    total = sum(map(len, docs))
    cases: dict[str, Minifier] = {
        "htmlstream minify": htmlstream_case(args.chunk_size),
        "htmlstream no css/js": htmlstream_case(args.chunk_size, css=False, js=False),
        "htmlstream optional_tags": htmlstream_case(args.chunk_size, optional_tags=True),
        "htmlstream ws=remove": htmlstream_case(args.chunk_size, whitespace="remove"),
        "htmlstream ws=remove opt": htmlstream_case(args.chunk_size, whitespace="remove",
                                                    optional_tags=True),
    }
    cases["htmlstream as handlers"] = handlers_case(args.chunk_size)
    cases["htmlstream no minifying"] = _streamed(Rewriter(), args.chunk_size)
    more, notes = peers()
    cases.update(more)
    for note in notes:
        print(f"note: {note}")
    print(f"corpus: {len(docs)} pages, {total:,} bytes; best of {args.repeat}")
    print(f"{'':26} {'size':>7} {'MB/s':>8} {'broken trees':>13}")
    for name, run in cases.items():
        best = float("inf")
        outs: list[bytes] = []
        for _ in range(args.repeat):
            started = clock()
            outs = [run(d) for d in docs]
            best = min(best, clock() - started)
        size = sum(map(len, outs)) / total
        trees = "" if args.no_trees else f"{broken(docs, outs):>7}/{len(docs)}"
        print(f"{name:26} {size:7.3f} {total / best / 1e6:8.1f} {trees}")
        if args.per_page:
            print("    per page: " + " ".join(
                f"{len(o) / len(d):.3f}" for d, o in zip(docs, outs, strict=True)))


if __name__ == "__main__":
    main()
