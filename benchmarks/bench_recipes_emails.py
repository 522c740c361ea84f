#!/usr/bin/env python3
"""Throughput of ``recipes.obfuscate_emails`` on the corpus: MB/s next to a passthrough and next
to the same recipe written on python-lolhtml.

Documents: every ``*.html`` of the corpus (``tests/data/corpus`` or ``$HTMLSTREAM_CORPUS``) as it
is (it has almost no addresses: the cost of looking) and with addresses put into its paragraphs
(two addresses and a ``mailto:`` link per ``<p>``: the cost of obfuscating), fed in 64 KiB
chunks.  Engines:

* ``passthrough``: htmlstream with one rule that matches nothing;
* ``htmlstream``: ``Rewriter().use(recipes.obfuscate_emails(random=SEED))``;
* ``lolhtml``: the same recipe on python-lolhtml (``lolhtml`` module; skipped when missing): the
  same address rule, carry and hold-back over text chunks, the same output format.  Its API has
  no end-tag handlers, so the regions left alone are found with text handlers on their
  selectors (lol-html runs them before the document's text handler) instead of counters, and
  the script goes at the end of the document.

Each figure is the median of ``--repeat`` samples of at least ``--min-time`` s of process CPU
time each (garbage collector off), after a warm-up run.  Targets (issue 16): htmlstream >= 1.5x
python-lolhtml; all four recipes together at most 3x passthrough time (this file measures the
e-mail recipe alone: its cost relative to passthrough is printed).

    .venv/bin/python benchmarks/bench_recipes_emails.py [--repeat 5] [--min-time 0.3]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import htmlstream as hs
from htmlstream import recipes
from htmlstream.recipes.emails import MAX_RUN, encode_hex, find_addresses

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus"
CHUNK = 64 * 1024
SEED = 1

Runner = Callable[[Sequence[bytes]], Any]


def with_addresses(data: bytes) -> bytes:
    """The document with two addresses and a mailto: link put into each paragraph."""
    count = 0

    def para(m: re.Match[bytes]) -> bytes:
        nonlocal count
        count += 1
        n = str(count).encode()
        return (m.group(0) + b"Write to user" + n + b"@example.com or jos\xc3\xa9" + n
                + b'@ex\xc3\xa4mple.fr. <a href="mailto:list' + n + b'@example.org">list</a> ')

    return re.sub(rb"<p(?: [^>]*)?>", para, data)


def htmlstream_runner(rw: hs.Rewriter) -> Runner:
    def run(chunks: Sequence[bytes]) -> bytes:
        stream = rw.stream()
        out = [stream.feed(c) for c in chunks]
        out.append(stream.close())
        return b"".join(out)
    return run


# --------------------------------------------------------------------------- the lolhtml port

LOL_SKIP = ("head, script, style, textarea, title, noscript, template, xmp, svg, math, iframe, "
            "noembed, noframes, plaintext")
_RUN_END = re.compile(r"[\w.%+\-@]*\Z")


class _LolState:
    __slots__ = ("carry", "count", "in_link", "off", "rng", "skip")

    def __init__(self) -> None:
        self.carry = ""
        self.skip = False        # set by the skip selector's text handler for this chunk
        self.in_link = False     # set by the "a" text handler for this chunk
        self.off = False
        self.count = 0
        self.rng = random.Random(SEED)


def add_lolhtml_emails(rw: Any) -> None:
    """Register the e-mail recipe's lolhtml port on the python-lolhtml rewriter ``rw`` (one
    document: its state is made here)."""
    import lolhtml

    html = lolhtml.ContentType.HTML
    path = "/cdn-cgi/l/email-protection"
    st = _LolState()

    class Skip:
        def text(self, t: Any) -> None:
            st.skip = True

    class Link:
        def text(self, t: Any) -> None:
            st.in_link = True

    class Mailto:
        def element(self, el: Any) -> None:
            href = (el.get_attribute("href") or "").strip()
            if href[:7].lower() == "mailto:" and "@" in href:
                el.set_attribute("href",
                                 f"{path}#{encode_hex(href[7:], st.rng.randrange(256))}")
                st.count += 1

    class Document:
        def comments(self, c: Any) -> None:
            text = c.text.strip()
            if text == "email_off":
                st.off = True
            elif text == "/email_off":
                st.off = False

        def text(self, chunk: Any) -> None:
            skip, in_link = st.skip, st.in_link
            st.skip = st.in_link = False
            if skip or st.off:
                return
            s = chunk.text
            last = chunk.last_in_text_node
            if not st.carry and "@" not in s and (last or not s or not (
                    s[-1].isalnum() or s[-1] in "_.%+-@<&#\r")):
                return
            s = st.carry + s
            hold = len(s)
            if not last:
                hold = _RUN_END.search(s).start()
                if len(s) - hold > MAX_RUN:
                    hold = len(s)
                while hold and s[hold - 1] in "<&#\r":
                    hold -= 1
            spans = find_addresses(s[:hold])
            if not spans and not st.carry and hold == len(s):
                return
            pieces, pos = [], 0
            for a, b in spans:
                code = encode_hex(s[a:b], st.rng.randrange(256))
                pieces.append(s[pos:a])
                pieces.append(
                    f'<span class="__cf_email__" data-cfemail="{code}">'
                    "[email&#160;protected]</span>" if in_link else
                    f'<a href="{path}" class="__cf_email__" data-cfemail="{code}">'
                    "[email&#160;protected]</a>")
                pos = b
            pieces.append(s[pos:hold])
            st.count += len(spans)
            st.carry = s[hold:]
            chunk.replace("".join(pieces), html)

        def end(self, end: Any) -> None:
            if st.count:
                end.append(recipes.emails.decoder_script(path), html)

    rw.on(LOL_SKIP, Skip())
    rw.on("a", Link())
    rw.on('a[href*="mailto:" i], area[href*="mailto:" i]', Mailto())
    rw.on_document(Document())


def lolhtml_runner() -> Runner:
    import lolhtml

    def run(chunks: Sequence[bytes]) -> bytes:
        out: list[bytes] = []
        rw = lolhtml.HTMLRewriter(out.append)
        add_lolhtml_emails(rw)
        for c in chunks:
            rw.write(c)
        rw.end()
        return b"".join(out)

    return run


# --------------------------------------------------------------------------- measuring


def sample(run: Runner, chunks: Sequence[bytes], min_time: float) -> float:
    """Seconds per run (process CPU time), over enough runs to last ``min_time``."""
    n = 0
    gc.disable()
    try:
        start = time.process_time()
        while True:
            run(chunks)
            n += 1
            elapsed = time.process_time() - start
            if elapsed >= min_time:
                return elapsed / n
    finally:
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.3)
    args = parser.parse_args(argv)
    corpus = Path(os.environ.get("HTMLSTREAM_CORPUS", DEFAULT_CORPUS))
    files = sorted(corpus.glob("*.html"))
    if not files:
        print(f"no corpus under {corpus}", file=sys.stderr)
        return 1
    engines: dict[str, Runner] = {
        "passthrough": htmlstream_runner(hs.Rewriter().on("nomatch-xyz", element=lambda e: None)),
        "htmlstream": htmlstream_runner(
            hs.Rewriter().use(recipes.obfuscate_emails(random=SEED))),
    }
    try:
        engines["lolhtml"] = lolhtml_runner()
    except ImportError:
        print("python-lolhtml is not installed: its column is skipped", file=sys.stderr)
    print(f"{'document':34} {'MB':>6} " + " ".join(f"{e:>12}" for e in engines)
          + f" {'vs pass':>8} {'vs lol':>7}")
    totals: dict[str, list[float]] = {e: [] for e in engines}
    for path in files:
        raw = path.read_bytes()
        for label, data in ((path.name, raw), (path.name + " +addresses", with_addresses(raw))):
            chunks = [data[i: i + CHUNK] for i in range(0, len(data), CHUNK)]
            for run in engines.values():
                run(chunks)                                 # warm-up
            times: dict[str, list[float]] = {e: [] for e in engines}
            for _ in range(args.repeat):
                for name, run in engines.items():          # in turn: load touches all alike
                    times[name].append(sample(run, chunks, args.min_time))
            mbs = {e: len(data) / statistics.median(t) / 1e6 for e, t in times.items()}
            for e, v in mbs.items():
                totals[e].append(v)
            vs_pass = mbs["passthrough"] / mbs["htmlstream"]
            vs_lol = (f"{mbs['htmlstream'] / mbs['lolhtml']:6.2f}x" if "lolhtml" in mbs
                      else "    n/a")
            print(f"{label:34} {len(data) / 1e6:6.2f} "
                  + " ".join(f"{mbs[e]:8.1f} MB/s" for e in engines)
                  + f" {vs_pass:7.2f}x {vs_lol}")
    print("geometric means: " + ", ".join(
        f"{e} {statistics.geometric_mean(v):.1f} MB/s" for e, v in totals.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
