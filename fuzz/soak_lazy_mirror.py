"""A longer run of tests/test_rewriter_lazy.py's comparison: the lazy open-element mirror against
the exact one (``rewriter._lazy_mirror = False``), on random tag soup, for the rule sets with
matcher frames (``CHAIN_SETS``: combinators, positions among siblings, ``of S``...).

The suite's hypothesis properties run 150 documents each; this runs as many as asked, from a
seed, with two vocabularies (``chains``: the elements the rule sets name, formatting elements
and forms; ``rare``: tables, templates, foreign content, select, raw text, frameset, void and
self-closed tags as well), and prints the first differences (the document and the rule set)::

    .venv/bin/python fuzz/soak_lazy_mirror.py --seed 1 --documents 3000
    .venv/bin/python fuzz/soak_lazy_mirror.py --seed 2 --documents 2000 --vocabulary rare

Exit status 1 when a difference was found.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import test_rewriter_lazy as lazy_tests  # (tests/ is not a package: from the path above)

_CHAIN_NAMES = [b"div", b"p", b"span", b"b", b"i", b"a", b"ul", b"ol", b"li", b"h1", b"form",
                b"input", b"table", b"tr", b"td", b"tbody", b"cite", b"img", b"svg", b"body",
                b"html", b"head", b"title", b"em", b"select", b"option", b"template", b"dd",
                b"dt", b"nobr", b"button", b"br"]
_RARE_NAMES = [*_CHAIN_NAMES, b"th", b"caption", b"colgroup", b"col", b"optgroup", b"math",
               b"mi", b"foreignObject", b"desc", b"noscript", b"frameset", b"frame", b"strong",
               b"dl", b"textarea", b"script", b"style", b"xmp", b"iframe", b"plaintext",
               b"image", b"hr", b"x-y", b"h2", b"section"]
_ATTRS = [b"", b" class=x", b" id=a", b" href=h", b" class='y x'", b" type=hidden"]
_OTHER = [b"t", b" ", b"<!--c-->", b"a@b", b"<br>", b"</p>", b"\x00", b"&amp;",
          b"<!DOCTYPE html>"]


def document(rng: random.Random, names: list[bytes]) -> bytes:
    """Up to 90 start tags, end tags, text and comments."""
    out = []
    for _ in range(rng.randint(0, 90)):
        kind = rng.randint(0, 11)
        name = rng.choice(names)
        if kind <= 5:
            close = b"/>" if rng.random() < 0.05 else b">"
            out.append(b"<" + name + rng.choice(_ATTRS) + close)
        elif kind <= 8:
            out.append(b"</" + name + b">")
        else:
            out.append(rng.choice(_OTHER))
    return b"".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--vocabulary", choices=["chains", "rare"], default="chains")
    parser.add_argument("--rule-set", action="append", dest="rule_sets",
                        help="a rule set of tests/test_rewriter_lazy.py (repeatable; default: "
                             "CHAIN_SETS)")
    args = parser.parse_args(argv)
    names = _CHAIN_NAMES if args.vocabulary == "chains" else _RARE_NAMES
    rule_sets = args.rule_sets or lazy_tests.CHAIN_SETS
    rng = random.Random(args.seed)
    differences = 0
    for _ in range(args.documents):
        data = document(rng, names)
        cuts = sorted({rng.randint(0, len(data)) for _ in range(3)})
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        try:
            lazy_tests.check(data, rule_sets, [[data], pieces])
        except AssertionError as exc:
            differences += 1
            if differences <= 3:
                print("difference:", data, str(exc)[:300])
    print(f"seed {args.seed}: {differences} differences in {args.documents} documents")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
