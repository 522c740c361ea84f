"""The minifier checked by what a browser renders: headless Chromium loads each original and its
minified form (scripts off, no network; tests/minify_browser.py) and compares the DOM after the
normalisations the minifier is allowed, ``document.styleSheets``, ``getComputedStyle`` of every
element and ``document.body.innerText``: they must be equal.

The pages: the corpus (``tests/data/corpus``, minified with every option: comments, attributes,
optional tags, css and js, with the default ``whitespace="collapse"`` and again with
``whitespace="remove"``), every example of tests/test_recipes_minify.py's rule tables, and
generated pages (built from pieces that exercise each rule: white space around blocks, inline
elements, tables, lists, ``<br>``, form feeds and tabs; ``type`` and boolean attribute variants;
comments; optional tags), each minified with the default options, with everything, and with
``whitespace="remove"`` (alone and with everything).  All in one Chromium process, one harness
page (a bounded run: about a minute and a half on two busy cores, most of it
``getComputedStyle`` on the two large spec pages), with
controls (pairs that differ as a wrong rule would make them: each must be seen).  Skipped
where Chromium is missing.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import htmlstream as hs
from htmlstream import recipes
from minify_browser import CHROMIUM, compare_in_chromium
from recipe_checks import corpus

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium; `make "
    "test` does it when run as root with apt)")

OPTION_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "everything": {"optional_tags": True, "css": True, "js": True},
    "remove": {"whitespace": "remove"},
    "remove-everything": {"whitespace": "remove", "optional_tags": True, "css": True, "js": True},
}

#: The option sets the corpus pages are checked with (each costs a minute of the run).
CORPUS_OPTION_SETS = ("everything", "remove-everything")

#: Pieces of generated pages: what each rule of the minifier touches.
PIECES = [
    "<div>", "</div>", "<p>", "</p>", "<span>", "</span>", "<b>", "</b>", "<em>", "</em>",
    "<a href=#x>", "</a>", "<br>", "<ul>", "<li>", "</li>", "</ul>", "<ol reversed=reversed>",
    "</ol>", "<dl>", "<dt>", "<dd>", "</dl>", "<table>", "<tr>", "<td>", "<th>", "</td>",
    "</tr>", "</table>", "<h2>", "</h2>", "<section>", "</section>", "<pre>", "</pre>",
    "<textarea>", "</textarea>", "<img alt=i src=/none.png>", "<input value=v>",
    "<button>", "</button>", "<code>", "</code>", "<label>", "</label>", "<small>", "</small>",
    " ", "  ", "\n", "\n  ", "\t", "\x0c", " \x0c ", "&nbsp;", "\u00a0", "x", "word", "two words",
    " lead", "trail ", "<!-- c -->", "<!--[if IE]>ie<![endif]-->",
    "<input type=checkbox checked=checked>", "<input disabled=disabled>",
    "<div open=open>o</div>", "<details open=open><summary>s</summary>d</details>",
    "<select multiple=multiple><option selected=selected>a<option>b</select>",
    "<span hidden=hidden>h</span>", "<p title=\"a b\" class='c'>q</p>",
    "<span data-x=\"a=b\" data-y=\"`\">u</span>", "<span lang=''>e</span>",
    "<style type=\"text/css \">p{color:red}</style>",
    "<style type=\" text/css\">b{color:red}</style>",
    "<style type=TEXT/CSS>em{color:green}</style>",
    "<style type=\"text/css\">i{color:blue}</style>",
    "<style type=text/plain>b{color:red}</style>", "<style>span { margin : 1px }</style>",
    "<link rel=stylesheet type=\"text/css \" href=\"data:text/css,p{color:red}\">",
    "<link rel=stylesheet type=text/css href=\"data:text/css,b{color:green}\">",
    "<link rel=stylesheet href=\"data:text/css,i{color:purple}\">",
    "<script type=\"text/javascript \">var a = 1;</script>", "<script>var  b = 2 ;</script>",
    "<script type=text/plain>  plain  </script>", "<noscript><p>ns</p></noscript>",
    "<svg width=10 height=10><text> a  b </text></svg>", "<math><mi> x </mi></math>",
]


def _generated_pages() -> list[str]:
    """Pages built from PIECES (each piece in several pages; a fixed, reproducible set)."""
    pages = []
    for k in range(24):
        rng = random.Random(f"minify-chromium-{k}")
        body = "".join(rng.choice(PIECES) for _ in range(rng.randint(8, 40)))
        head = "".join(rng.choice(PIECES[-16:-5]) for _ in range(rng.randint(0, 3)))
        doctype = "<!DOCTYPE html>" if k % 4 else ""
        pages.append(f"{doctype}<html>\n<head>\n<title>g{k}</title>\n{head}\n</head>\n"
                     f"<body>\n{body}\n</body>\n</html>\n")
    return pages


def _rule_pages() -> list[str]:
    """Every input of tests/test_recipes_minify.py's rule tables, one page each."""
    import test_recipes_minify as t

    pages: list[str] = []
    for name in ("test_whitespace", "test_whitespace_collapse", "test_comments",
                 "test_attributes", "test_type_rules", "test_boolean_attributes",
                 "test_optional_tags", "test_optional_tags_collapse"):
        for mark in getattr(t, name).pytestmark:
            if mark.name == "parametrize":
                pages.extend(f"<!DOCTYPE html>{html}" for html, _ in mark.args[1])
    return pages


#: Controls, in the same run: pairs that differ as a wrong rule would make them, each with the
#: check that must see it (the check is not blind to what it is for).
CONTROLS = [
    ("<style type='text/css '>p{color:red}</style><p>x", "<style>p{color:red}</style><p>x",
     "styleSheets"),
    ("<p><b>a</b> <i>b</i></p>", "<p><b>a</b><i>b</i></p>", "innerText"),
    ("<p>a\x0cb</p>", "<p>a b</p>", "innerText"),
    ("<div open=open>x</div>", "<div open>x</div>", "dom: attributes"),
    ("<style>div:empty{height:9px}</style><div> </div>", "<style>div:empty{height:9px}</style>"
     "<div></div>", "style: "),
]


def _minified(raw: bytes, options: dict[str, Any]) -> bytes:
    return hs.Rewriter().use(recipes.minify(**options)).rewrite(raw)


def test_browser_renders_the_same(tmp_path: Path) -> None:
    pairs: list[tuple[bytes, bytes]] = []
    names: list[str] = []
    code: list[bool] = []
    for path in corpus():
        raw = path.read_bytes()
        for option_name in CORPUS_OPTION_SETS:
            pairs.append((raw, _minified(raw, OPTION_SETS[option_name])))
            names.append(f"{path.name} {option_name}")
            code.append(True)
    for i, page in enumerate(_rule_pages() + _generated_pages()):
        raw = page.encode("utf-8")
        seen = set()
        for option_name in OPTION_SETS:
            out = _minified(raw, OPTION_SETS[option_name])
            if out in seen:
                continue
            seen.add(out)
            pairs.append((raw, out))
            names.append(f"page {i} {option_name}: {page[:120]!r}")
            recipe = recipes.minify(**OPTION_SETS[option_name])
            code.append(recipe.css or recipe.js)
    assert len(pairs) > 120
    for original, changed, _ in CONTROLS:
        pairs.append((f"<!DOCTYPE html>{original}".encode(), f"<!DOCTYPE html>{changed}".encode()))
        code.append(False)
    results = compare_in_chromium(pairs, tmp_path / "profile", code=code)
    for (original, _, check), diffs in zip(CONTROLS, results[len(names):], strict=True):
        assert any(d.startswith(check) for d in diffs), (original, diffs)
    results = results[:len(names)]
    failures = {name: diffs for name, diffs in zip(names, results, strict=True) if diffs}
    assert not failures, dict(list(failures.items())[:10])
