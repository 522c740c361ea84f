#!/usr/bin/env python3
"""Memory of a streaming rewrite: peak RSS growth, and the bytes ``feed()`` holds back.

For each engine and chunk size, a fresh subprocess imports the engine, builds a rewriter with an
``a[href]`` element handler that reads the attribute and changes nothing, takes its RSS as the
*import baseline*, then streams a generated document (``--size``, 8 MB by default: realistic HTML
with a head, styles and scripts, navigation, articles with links, entities and UTF-8 text, lists,
tables, forms, comments, inline SVG) in chunks, never holding the document in memory.  Reported:

* **peak RSS growth** over the baseline: the kernel's high-water mark (``VmHWM``, reset at the
  baseline through ``/proc/self/clear_refs``) and the largest RSS sampled after each chunk, both
  minus the baseline RSS.  Target: <= 2 MB for htmlstream with 64 KiB chunks.
* **holdback** after each chunk: input bytes fed minus output bytes returned so far.  The handler
  changes nothing, so output bytes == input bytes accounted for, and the holdback is what the
  engine carries over.  The generator knows where every token it writes starts, so each chunk
  boundary has its *unfinished token* (the bytes of the token the boundary cuts, 0 between
  tokens).  Target: holdback <= unfinished token at every boundary.

python-lolhtml runs the same way as a reference (its holdback is its sink's output lag).

Run ``python benchmarks/bench_memory.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

DEFAULT_SIZE = 8_000_000
DEFAULT_CHUNK_SIZES = (65536, 997)  # 64 KiB (the RSS target) and an odd size that cuts anywhere
RSS_TARGET_KB = 2048
ENGINES = ("htmlstream", "lol-html")

# --------------------------------------------------------------------------------------------
# The document
# --------------------------------------------------------------------------------------------

_VOCABULARY = (
    "the stream rewriter parses bytes as they arrive and hands each element to handlers chosen "
    "by selectors without ever building a tree so memory stays bounded however large the page "
    "grows server edge cache worker response header latency throughput"
)
WORDS = tuple(_VOCABULARY.split(" "))
UNICODE_WORDS = ("naïve", "café", "façade", "Größe", "日本語", "Ελληνικά", "emoji 🎉", "€10")
ENTITIES = ("&amp;", "&lt;", "&gt;", "&quot;", "&copy;", "&#169;", "&#x2014;", "&nbsp;", "&hellip;")
CSS = (
    "body{margin:0;font:16px/1.5 system-ui,sans-serif}.post>h2 a{color:#036}"
    "nav ul{display:flex;gap:1em}.note{background:#ffd}td:nth-child(2n){text-align:right}"
)
SCRIPT = (
    'window.dataLayer = window.dataLayer || [];\nfunction track(a, b) { if (a < b && b > 0) '
    '{ dataLayer.push({"event": "view", "n": a}); } }\n'
    'var tpl = "<div class=\\"card\\"><\\/div>"; // a "</div>" in a string, escaped\n'
    "for (var i = 0; i < 3; i++) { track(i, 3); }\n"
)


class Document:
    """Generates the document piece by piece and cuts it into chunks.

    Every piece is one token (a tag, a comment, the doctype, a text node, the content of a raw
    text element), so the chunker knows, at each chunk boundary, how many bytes of the token it
    cuts have already been handed out: the unfinished token.
    """

    def __init__(self, size: int, seed: int = 7) -> None:
        self.size = size
        self.rng = random.Random(seed)
        self.links = 0

    # -- pieces ----------------------------------------------------------------------------

    def words(self, n: int) -> str:
        rng = self.rng
        out = []
        for _ in range(n):
            r = rng.random()
            if r < 0.05:
                out.append(rng.choice(UNICODE_WORDS))
            elif r < 0.09:
                out.append(rng.choice(ENTITIES))
            else:
                out.append(rng.choice(WORDS))
        return " ".join(out)

    def link(self, text: str) -> Iterator[str]:
        self.links += 1
        rng = self.rng
        href = rng.choice(
            (f"/posts/{self.links}", f"https://cdn.example.org/a/{self.links}?ref=home&amp;x=1",
             f"#section-{self.links}", f"/tags/{rng.choice(WORDS)}")
        )
        attrs = f' class="{rng.choice(WORDS)}"' if rng.random() < 0.5 else ""
        yield f'<a href="{href}"{attrs}>'
        yield text
        yield "</a>"

    def paragraph(self) -> Iterator[str]:
        rng = self.rng
        yield "<p>"
        for _ in range(rng.randint(2, 5)):
            yield self.words(rng.randint(8, 30)) + " "
            kind = rng.random()
            if kind < 0.5:
                yield from self.link(self.words(rng.randint(1, 4)))
            elif kind < 0.7:
                yield from ("<em>", self.words(2), "</em>")
            elif kind < 0.85:
                yield from ("<code>", "x &lt; y &amp;&amp; z", "</code>")
            else:
                yield f'<img src="/img/{rng.randint(1, 999)}.png" alt="{self.words(2)}">'
        yield "</p>\n"

    def article(self, n: int) -> Iterator[str]:
        rng = self.rng
        yield f'<article class="post{" note" if n % 7 == 0 else ""}" id="post-{n}">\n'
        yield "<h2>"
        yield from self.link(self.words(rng.randint(3, 8)))
        yield "</h2>\n"
        for _ in range(rng.randint(2, 5)):
            yield from self.paragraph()
        if n % 3 == 0:
            yield "<ul>\n"
            for _ in range(rng.randint(2, 6)):
                yield "<li>"
                yield from self.link(self.words(3))
                yield "</li>\n"
            yield "</ul>\n"
        if n % 5 == 0:
            yield "<table><tbody>\n"
            for r in range(rng.randint(2, 5)):
                yield "<tr>"
                for c in range(3):
                    yield from ("<td>", f"{r}.{c} {self.words(2)}", "</td>")
                yield "</tr>\n"
            yield "</tbody></table>\n"
        if n % 11 == 0:
            yield f"<!-- ad slot {n}: {self.words(6)} -->\n"
        if n % 13 == 0:
            yield '<form action="/comment" method="post"><input type="text" name="q" required>'
            yield "<textarea name=body>"
            yield f"raw &amp; <b>not a tag</b> {self.words(5)}"
            yield "</textarea></form>\n"
        if n % 17 == 0:
            yield '<svg viewBox="0 0 10 10"><path d="M0 0L10 10"/>'
            yield from ("<title>", "icon &amp; text", "</title>", "</svg>\n")
        yield "</article>\n"

    def pieces(self) -> Iterator[str]:
        yield "<!DOCTYPE html>"
        yield "\n"
        yield '<html lang="en">'
        yield "<head>"
        yield '<meta charset="utf-8">'
        yield from ("<title>", "Generated page &mdash; htmlstream memory benchmark", "</title>")
        yield '<link rel="stylesheet" href="/static/site.css">'
        yield from ("<style>", CSS, "</style>")
        yield from ("<script>", SCRIPT, "</script>")
        yield "</head>\n"
        yield '<body class="page">'
        yield "<header><nav><ul>"
        for word in WORDS[:8]:
            yield "<li>"
            yield from self.link(word)
            yield "</li>"
        yield "</ul></nav></header>\n<main>\n"
        written, n = 0, 0
        tail = 200  # room for the closing tags
        while True:
            for piece in self.article(n):
                written += len(piece.encode())
                yield piece
            n += 1
            if n % 50 == 0:
                yield from ("<script>", SCRIPT, "</script>")
            if written >= self.size - tail - 4000:
                break
        yield "</main>\n<footer>"
        yield "<p>"
        yield "&copy; 2024 Example &mdash; all rights reserved"
        yield "</p>"
        yield "</footer>\n</body>\n</html>\n"

    # -- chunks ----------------------------------------------------------------------------

    def chunks(self, chunk_size: int) -> Iterator[tuple[bytes, int, bool]]:
        """``(chunk, unfinished, in_text)``: each chunk, with how many bytes of the token its end
        cuts have been handed out (0 if it ends between tokens), and whether that token is text
        (a text node or raw text content).  The last chunk may be shorter."""
        parts: list[bytes] = []
        filled = 0
        for text in self.pieces():
            piece = text.encode()
            pos = 0
            while pos < len(piece):
                take = min(chunk_size - filled, len(piece) - pos)
                parts.append(piece[pos : pos + take])
                filled += take
                pos += take
                if filled == chunk_size:
                    cut = pos < len(piece)
                    yield b"".join(parts), (pos if cut else 0), cut and piece[:1] != b"<"
                    parts.clear()
                    filled = 0
        if filled:
            yield b"".join(parts), 0, False


# --------------------------------------------------------------------------------------------
# The child: one engine, one chunk size
# --------------------------------------------------------------------------------------------


def status_kb(field: str) -> int:
    """A ``VmXxx`` line of /proc/self/status, in kB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> bool:
    """Reset the kernel's RSS high-water mark (Linux >= 4.0); False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def read_href(element: Any) -> None:
    element.get_attribute("href")  # reads the attribute, changes nothing


def make_stream(engine: str) -> tuple[Callable[[bytes], int], Callable[[], int]]:
    """``(feed, close)`` of a rewriter with the a[href] handler; both return output bytes."""
    if engine == "htmlstream":
        from htmlstream.rewriter import Rewriter

        rewriter = Rewriter()
        rewriter.on("a[href]", element=read_href)
        stream = rewriter.stream()

        def feed(chunk: bytes) -> int:
            return len(stream.feed(chunk))

        def close() -> int:
            return len(stream.close())

        return feed, close
    if engine == "lol-html":
        from types import SimpleNamespace

        import lolhtml

        written = [0]

        def sink(out: bytes) -> None:
            written[0] += len(out)

        lol = lolhtml.HTMLRewriter(sink)
        lol.on("a[href]", SimpleNamespace(element=read_href))

        def feed(chunk: bytes) -> int:
            before = written[0]
            lol.write(chunk)
            return written[0] - before

        def close() -> int:
            before = written[0]
            lol.end()
            return written[0] - before

        return feed, close
    raise ValueError(f"unknown engine {engine!r}")


def child(engine: str, size: int, chunk_size: int) -> dict[str, Any]:
    """Stream the document through ``engine``; returns the measurements."""
    feed, close = make_stream(engine)
    document = Document(size)
    chunks = document.chunks(chunk_size)
    gc.collect()
    baseline = status_kb("VmRSS")
    peak_reset = reset_peak()
    sampled_peak = baseline
    fed = out = 0
    max_hold = max_unfinished = hold_boundaries = max_text_hold = 0
    worst: dict[str, int] | None = None  # the boundary where holdback most exceeds the token
    for chunk, unfinished, in_text in chunks:
        out += feed(chunk)
        fed += len(chunk)
        hold = fed - out
        max_hold = max(max_hold, hold)
        if in_text:
            max_text_hold = max(max_text_hold, hold)
        max_unfinished = max(max_unfinished, unfinished)
        hold_boundaries += hold > 0
        if hold > unfinished and (worst is None or hold - unfinished > worst["excess"]):
            worst = {"offset": fed, "holdback": hold, "unfinished": unfinished,
                     "excess": hold - unfinished}
        sampled_peak = max(sampled_peak, status_kb("VmRSS"))
    out += close()
    hwm = status_kb("VmHWM")
    peak = max(hwm, sampled_peak) if peak_reset else sampled_peak
    return {
        "engine": engine,
        "chunk_size": chunk_size,
        "bytes": fed,
        "output_bytes": out,
        "links": document.links,
        "baseline_kb": baseline,
        "peak_kb": peak,
        "growth_kb": peak - baseline,
        "sampled_growth_kb": sampled_peak - baseline,
        "hwm_reset": peak_reset,
        "max_holdback": max_hold,
        "max_unfinished_token": max_unfinished,
        "max_holdback_in_text": max_text_hold,
        "boundaries_holding": hold_boundaries,
        "holdback_over_token": worst,
    }


# --------------------------------------------------------------------------------------------
# The parent: one subprocess per (engine, chunk size), a table, the verdicts
# --------------------------------------------------------------------------------------------


def run_child(engine: str, size: int, chunk_size: int) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", engine,
               "--size", str(size), "--chunk-size", str(chunk_size)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"engine": engine, "chunk_size": chunk_size, "error": tail}
    return json.loads(done.stdout)


def verdicts(result: dict[str, Any]) -> list[str]:
    """What the result says about the targets (htmlstream only; lol-html is the reference)."""
    if result["engine"] != "htmlstream":
        return []
    out = []
    if result["chunk_size"] == 65536:
        ok = result["growth_kb"] <= RSS_TARGET_KB
        out.append(f"RSS growth {result['growth_kb']} kB {'<=' if ok else '>'} "
                   f"{RSS_TARGET_KB} kB: {'ok' if ok else 'MISSED'}")
    worst = result["holdback_over_token"]
    if worst is None:
        out.append("holdback <= unfinished token at every boundary: ok")
    else:
        out.append(f"holdback exceeds the unfinished token: MISSED (worst at byte "
                   f"{worst['offset']}: {worst['holdback']} B held, token {worst['unfinished']} B)")
    if result["output_bytes"] != result["bytes"]:
        out.append(f"output {result['output_bytes']} B != input {result['bytes']} B: MISSED")
    return out


def format_table(results: list[dict[str, Any]]) -> str:
    header = ["engine", "chunk", "baseline kB", "peak kB", "growth kB", "max holdback B",
              "max unfinished B", "max held in text B", "boundaries holding", "held > token"]
    table = [header]
    for r in results:
        if "error" in r:
            table.append([r["engine"], str(r["chunk_size"]), r["error"]] + [""] * 7)
            continue
        worst = r["holdback_over_token"]
        table.append([
            r["engine"], str(r["chunk_size"]), str(r["baseline_kb"]), str(r["peak_kb"]),
            str(r["growth_kb"]), str(r["max_holdback"]), str(r["max_unfinished_token"]),
            str(r["max_holdback_in_text"]), str(r["boundaries_holding"]),
            "no" if worst is None else f"yes (+{worst['excess']} B at {worst['offset']})",
        ])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for n, row in enumerate(table):
        lines.append("  ".join(c.ljust(w) if i < 1 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE,
                        help=f"document size in bytes (default: {DEFAULT_SIZE})")
    parser.add_argument("--chunk-size", type=int, action="append", metavar="N",
                        help="bytes per chunk (repeatable; default: 65536 and 997)")
    parser.add_argument("--only", action="append", choices=ENGINES,
                        help="run only this engine (repeatable; default: both)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    parser.add_argument("--dump", type=Path, metavar="OUT",
                        help="write the generated document to OUT and exit")
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    chunk_sizes = args.chunk_size or list(DEFAULT_CHUNK_SIZES)

    if args.child:
        print(json.dumps(child(args.child, args.size, chunk_sizes[0])))
        return 0
    if args.dump:
        with open(args.dump, "wb") as dump:
            for chunk, _, _ in Document(args.size).chunks(65536):
                dump.write(chunk)
        return 0

    results = []
    for engine in args.only or ENGINES:
        for chunk_size in chunk_sizes:
            print(f"  {engine}, chunks of {chunk_size} ...", file=sys.stderr)
            results.append(run_child(engine, args.size, chunk_size))
    print(format_table(results))
    first = next((r for r in results if "error" not in r), None)
    if first:
        print(f"\ndocument: {first['bytes']:,} bytes, {first['links']:,} a[href]; handler reads "
              f"href and changes nothing; RSS in kB (1024 B); growth = peak - baseline "
              f"(baseline: after import and set-up, before the first chunk)")
    notes = [f"{r['engine']} ({r['chunk_size']}): {v}" for r in results if "error" not in r
             for v in verdicts(r)]
    if notes:
        print("\ntargets:")
        for note in notes:
            print(f"  {note}")
    if args.json:
        args.json.write_text(json.dumps({"size": args.size, "results": results,
                                         "cpus": os.cpu_count(), "python": sys.version.split()[0]},
                                        indent=2) + "\n")
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
