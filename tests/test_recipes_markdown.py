"""The Markdown converter (htmlstream.markdown, recipes.markdown): hand-written cases for every
construct, escaping, structure and text kept on the corpus (rendered back to HTML by
markdown-it-py), and the same output in every chunking."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import htmlstream as hs
from chunking import chunkings
from datapaths import corpus_dir
from htmlstream import recipes
from htmlstream.recipes.markdown import MarkdownConverter, MarkdownDocument
from markdown_checks import f1, links, render, structure, tree, visible, words


def convert(html: str | bytes, *, chunks: int = 6, **options: object) -> str:
    """The Markdown of ``html``, checked to be the same in many chunkings (and as a str)."""
    data = html.encode() if isinstance(html, str) else html
    expected = hs.markdown(data, **options)  # type: ignore[arg-type]
    for chunked in chunkings(data, random_splits=chunks, split_samples=chunks):
        conv = MarkdownConverter(**options)  # type: ignore[arg-type]
        out = "".join(conv.feed(c) for c in chunked) + conv.close()
        assert out == expected, (chunked, out, expected)
        assert conv.document.markdown == expected
    if isinstance(html, str):
        assert hs.markdown(html, **options) == expected  # type: ignore[arg-type]
    return expected


def body_text(html: str) -> str:
    """The body's text (comments aside), whitespace collapsed."""
    text = "".join(x for kind, x in visible(tree(html), source=False) if kind == "text")
    return " ".join(text.split())


def rendered_text(md: str) -> str:
    return body_text(render(md))


# ---------------------------------------------------------------------------- constructs

CASES = [
    ("<h1>T</h1><h2>Two</h2><h6>Six</h6>", "# T\n\n## Two\n\n###### Six\n"),
    ("<p>a</p><p>b</p>", "a\n\nb\n"),
    ("<p>  lots   of\n\tspace  </p>", "lots of space\n"),
    ("<p><b>b</b> <strong>s</strong> <i>i</i> <em>e</em> <del>d</del> <s>s</s></p>",
     "**b** **s** *i* *e* ~~d~~ ~~s~~\n"),
    ("<p>a<em> b </em>c</p>", "a *b* c\n"),
    ("<p><em><em>x</em></em> <b><i>y</i></b></p>", "*x* ***y***\n"),
    ("<p>a<b>b</b><b>c</b>d</p>", "a**bc**d\n"),
    ("<p><b></b>x<em> </em>y</p>", "x y\n"),
    ("<p><a href='https://e.com/x'>t</a> <a href='/rel' title='T \"q\"'>r</a></p>",
     '[t](https://e.com/x) [r](/rel "T \\"q\\"")\n'),
    ("<p><a href='a b(c)'>x</a> <a href='javascript:go()'>js</a> <a>plain</a></p>",
     "[x](a%20b\\(c\\)) js plain\n"),
    ("<p><a href='/x'></a>empty</p>", "empty\n"),
    ("<a href='/card'><h2>Card</h2><p>desc</p></a>", "## [Card](/card)\n\n[desc](/card)\n"),
    ("<p><img src='/i.png' alt='An *alt*' title='t'> <img src='data:image/png;base64,AA' "
     "alt='x'></p>", '![An \\*alt\\*](/i.png "t")\n'),
    ("<p><a href='/h'><img src='/i.png' alt='logo'></a></p>", "[![logo](/i.png)](/h)\n"),
    ("<ul><li>a<li>b</ul>", "- a\n- b\n"),
    ("<ol><li>a<li>b</ol>", "1. a\n2. b\n"),
    ("<ol start=7><li>a<li>b</ol>", "7. a\n8. b\n"),
    ("<ul><li>a<ul><li>b<ol><li>c</ol></ul><li>d</ul>", "- a\n  - b\n    1. c\n- d\n"),
    ("<ol><li>a<ol start=3><li>c</ol></ol>", "1. a\n\n   3. c\n"),
    ("<ul><li>x</ul><ul><li>y</ul>", "- x\n\n* y\n"),
    ("<ol><li>x</ol><ol><li>y</ol>", "1. x\n\n1) y\n"),
    ("<ul><li><p>p1<p>p2<li>b</ul>", "- p1\n\n  p2\n\n- b\n"),
    ("<ul><li></ul>", "- \n"),
    ("<blockquote><p>a<p>b</blockquote>", "> a\n>\n> b\n"),
    ("<blockquote>a<blockquote>b</blockquote></blockquote>", "> a\n>\n> > b\n"),
    ("<ul><li><blockquote>q</blockquote></ul>", "- > q\n"),
    ("<pre>\nline1\n  line2\n</pre>", "```\nline1\n  line2\n```\n"),
    ("<pre><code class='language-python'>x = `a`\n```\n</code></pre>",
     "````python\nx = `a`\n```\n````\n"),
    ("<pre class='lang-js'><span>a</span><br>b</pre>", "```js\na\nb\n```\n"),
    ("<ul><li>x<pre>a\n\nb</pre></ul>", "- x\n\n  ```\n  a\n\n  b\n  ```\n"),
    ("<p>Use <code>a  b</code> or <code>x`y</code> or <kbd>`k</kbd></p>",
     "Use `a b` or ``x`y`` or `` `k ``\n"),
    ("<p><code>a<a href='/d'>doc</a>b</code></p>", "`a`[`doc`](/d)`b`\n"),
    ("<p>a<br>b<br><br>c</p>", "a\\\nb\n\nc\n"),
    ("<p>a<br></p><p><br>b</p>", "a\n\nb\n"),
    ("<p>a</p><hr><p>b</p>", "a\n\n---\n\nb\n"),
    ("<ul><li><hr></ul>", "- ___\n"),
    ("<dl><dt>Term<dd>Def<dd>Two</dl>", "**Term**\n: Def\n: Two\n"),
    ("<dl><dt>T<dd><ol><li>x<li>y</ol></dl>", "**T**\n\n1. x\n2. y\n"),
    ("<table><tr><th>A<th>B<tr><td>1<td>2</table>", "| A | B |\n|---|---|\n| 1 | 2 |\n"),
    ("<table><thead><tr><th>A</thead><tbody><tr><td>x|y<td>z</tbody></table>",
     "| A |  |\n|---|---|\n| x\\|y | z |\n"),
    ("<table><caption>Cap</caption><tr><td><p>a</p><p>b</p><td><b>c</b><br>d</table>",
     "Cap\n\n| a b | **c** d |\n|---|---|\n"),
    ("<table><tr><td colspan=2>wide<tr><td>a<td>b</table>", "wide\n\na\n\nb\n"),
    ("<table><tr><td><ul><li>x</ul><td>y</table>", "- x\n\ny\n"),
    ("<table><tr><td>a<table><tr><td>in</table></table>", "a\n\nin\n"),
    ("<h2>A <code>b</code> #1</h2>", "## A `b` \\#1\n"),
    ("<h1>a<br>b</h1>", "# a b\n"),
    ("<p>x<script>bad()</script><style>p{}</style>y</p>", "xy\n"),
    ("<p>a<template><p>t</template>b<noscript>n</noscript>c</p>", "abc\n"),
    ("<p>a<span hidden>h</span>b<span aria-hidden=TRUE>h</span>c<span aria-hidden=false>"
     "d</span><div style='display: none'>h</div><img hidden src=/x alt=h></p>", "abcd\n"),
    ("<form><label>Name <input value=v></label><button>Go</button><select><option>o"
     "</select><textarea>t</textarea></form>", "Name\n"),
    ("<p>a<svg><text>s</text></svg><math><mi>m</mi></math>b</p>", "ab\n"),
    ("<dialog>closed</dialog><dialog open>shown</dialog>", "shown\n"),
    ("<head><title>T</title><style>x</style></head><body>b</body>", "b\n"),
    ("", ""),
    ("<p>\u00a0</p><p>caf\u00e9 \U0001f600</p>", "\u00a0\n\ncaf\u00e9 \U0001f600\n"),
]


@pytest.mark.parametrize(("html", "md"), CASES)
def test_constructs(html: str, md: str) -> None:
    assert convert(html) == md


def test_options() -> None:
    html = "<h1>T</h1><h2>U</h2><h3>V</h3><p><a href='x'>a</a> <a href='y' title='t'>b</a> " \
           "<a href='x'>c</a> <img src='i.png' alt='I'></p>"
    assert convert(html, base_url="https://e.com/d/", links="reference",
                   heading_style="setext", images=False) == \
        "T\n===\n\nU\n---\n\n### V\n\n[a][1] [b][2] [c][1]\n\n" \
        '[1]: https://e.com/d/x\n[2]: https://e.com/d/y "t"\n'
    assert convert("<base href='/b/'><a href=x><img src=i alt=logo></a>",
                   base_url="https://e.com/a/", images=False) == "[logo](https://e.com/b/x)\n"
    with pytest.raises(ValueError, match="links"):
        MarkdownConverter(links="footnote")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="heading_style"):
        MarkdownConverter(heading_style="x")  # type: ignore[arg-type]


def test_metadata() -> None:
    html = ("<html lang=fr><head><title> Le  titre </title><meta name=description "
            "content='Desc'><meta name=author content='Ann'></head><body><p>x</p>")
    doc = hs.markdown(html, metadata=True, base_url="https://e.com/")
    assert isinstance(doc, MarkdownDocument)
    assert (doc.title, doc.byline, doc.language, doc.description, doc.url, doc.markdown) == \
        ("Le titre", "Ann", "fr", "Desc", "https://e.com/", "x\n")
    doc = hs.markdown("<meta property='og:title' content=OG><meta property='og:description' "
                      "content=D2><p>by <a rel=author href=/me>Bob  B</a></p>", metadata=True)
    assert (doc.title, doc.byline, doc.description, doc.language) == ("OG", "Bob B", "D2", None)
    assert doc.as_dict()["markdown"] == "by [Bob B](/me)\n"


def test_sources() -> None:
    html = b"<p>caf\xe9</p>"
    assert hs.markdown(html, encoding="windows-1252") == "caf\u00e9\n"
    assert hs.markdown(b"<meta charset=windows-1252><p>caf\xe9</p>") == "caf\u00e9\n"
    assert hs.markdown(io.BytesIO(b"<p>x</p>")) == "x\n"
    assert hs.markdown([b"<p>", b"x</p>"]) == "x\n"
    with pytest.raises(TypeError):
        hs.markdown(io.StringIO("<p>x</p>"))
    conv = MarkdownConverter()
    conv.close()
    with pytest.raises(ValueError):
        conv.feed(b"x")


def test_recipe_output_stage() -> None:
    rw = hs.Rewriter().on("b", element=lambda el: el.set_inner_content("changed"))
    rw.use(recipes.markdown(base_url="https://e.com/"))
    assert rw.rewrite(b"<h1>T</h1><p><b>x</b> <a href=/y>y</a></p>") == \
        b"# T\n\n**changed** [y](https://e.com/y)\n"
    stream = rw.stream()
    out = b"".join(stream.feed(bytes([c])) for c in b"<p>a<b>b</b></p>") + stream.close()
    assert out == b"a**changed**\n"


def test_streams_as_html_arrives() -> None:
    conv = MarkdownConverter()
    assert conv.feed(b"<h1>Title</h1><p>first paragraph</p><ul><li>one") == \
        "# Title\n\nfirst paragraph\n\n- one"
    assert conv.feed(b"<li>") == ""       # (the break waits for what follows)
    assert conv.feed(b"two") == "\n- two"
    assert conv.close() == "\n"


# ---------------------------------------------------------------------------- escaping

ESCAPES = [
    "*not emphasis*", "_not emphasis_", "__x__", "# not a heading", "## two", "1. not a list",
    "1) no", "2024. A year", "- not a bullet", "+ plus", "> not a quote", "[x](y)", "![i](s)",
    "`code`", "``two``", "<tag>", "<!-- c -->", "a <b> c", "~~not struck~~", "AT&T &amp; &#65;",
    "back\\slash \\*", "x\\", "snake_case_name", "a_ b _c", "===", "---", "***", "| a | b |",
    ":--", "<https://e.com>", "[ref]: /url", "a  *b*  c", "trailing #", "1986", "1986.",
    "\\", "&copy;", "*", "_", "[", "]", "`",
]


@pytest.mark.parametrize("text", ESCAPES)
def test_escaping(text: str) -> None:
    from html import escape
    for html in (f"<p>{escape(text)}</p>", f"<p>x<br>{escape(text)}</p>",
                 f"<ul><li>{escape(text)}</ul>", f"<h2>{escape(text)}</h2>",
                 f"<table><tr><td>{escape(text)}</table>",
                 f"<p><span>{escape(text[:1])}</span>{escape(text[1:])}</p>"):
        md = convert(html, chunks=2)
        # (whitespace aside: <br> is a line break in the rendering, nothing in itertext)
        assert "".join(rendered_text(md).split()) == "".join(body_text(html).split()), \
            (html, md, render(md))


@given(st.lists(st.sampled_from([*"ab1 .)#*_-+=>|:[]()`<>&!\\~\n", "&amp;", "&lt;"]),
                max_size=30),
       st.sampled_from(["p", "li", "h3", "td", "em", "a", "blockquote"]))
def test_text_reads_as_itself(pieces: list[str], where: str) -> None:
    text = "".join(pieces)
    shapes = {"li": "<ul><li>{}</ul>", "td": "<table><tr><td>{}</table>",
              "a": "<p><a href=/x>{}</a></p>", "em": "<p><em>{}</em></p>"}
    html = shapes.get(where, f"<{where}>{{}}</{where}>").format(text)
    md = convert(html, chunks=3)
    assert rendered_text(md) == body_text(html), (html, md)


# ---------------------------------------------------------------------------- structure

STRUCTURES = [
    "<h1>One</h1><p>x</p><h3>Three <em>em</em></h3><h2><a href=/x>Link</a></h2>",
    "<ul><li>a<li>b <b>bold</b><ul><li>c<li>d</ul><li>e</ul><ol><li>1<li>2</ol>",
    "<table><tr><th>h1<th>h 2<tr><td>a<td><code>b|c</code><tr><td>x</table>",
    "<pre>def f():\n\treturn '<b>'\n\n   x  \n</pre><pre><code>```\nfence\n```</code></pre>",
    "<blockquote><ul><li>q<pre>code\n  indented</pre></ul></blockquote>",
]


@pytest.mark.parametrize("html", STRUCTURES)
def test_structure(html: str) -> None:
    md = convert(html)
    assert structure(render(md), source=False) == structure(html)


# ---------------------------------------------------------------------------- limits


def test_long_pre_streams_with_a_safe_fence(monkeypatch: pytest.MonkeyPatch) -> None:
    m = sys.modules["htmlstream.recipes.markdown"]
    monkeypatch.setattr(m, "MAX_PRE_CHARS", 20)
    html = "<pre>a `` b\n" + "x" * 30 + "\n```\n  ```\nend</pre>"
    md = convert(html, chunks=3)
    assert md == "```\na `` b\n" + "x" * 30 + "\n    ```\n      ```\nend\n```\n"
    assert structure(render(md), source=False)["code"] == \
        ["a `` b\n" + "x" * 30 + "\n    ```\n      ```\nend"]


def test_long_code_span_is_text(monkeypatch: pytest.MonkeyPatch) -> None:
    m = sys.modules["htmlstream.recipes.markdown"]
    monkeypatch.setattr(m, "MAX_CODE_CHARS", 8)
    assert convert("<p><code>a*b</code> <code>0123456789*</code>x</p>") == \
        "`a*b` 0123456789\\*x\n"


def test_table_limit_falls_back_to_text() -> None:
    rows = "".join(f"<tr><td>r{i}<td>v{i}" for i in range(50))
    html = f"<table>{rows}</table><p>after</p>"
    full = convert(html)
    assert full.startswith("| r0 | v0 |\n|---|---|\n| r1 | v1 |")
    small = convert(html, max_table_chars=100)
    assert small.startswith("r0\n\nv0\n\nr1\n\nv1\n\n")
    assert small.endswith("r49\n\nv49\n\nafter\n")
    assert words(render(small), source=False) == words(html)


def test_bounded_memory_on_a_long_document() -> None:
    conv = MarkdownConverter()
    conv.feed(b"<body>")
    for i in range(2000):
        out = conv.feed(b"<p>paragraph %d with <b>bold</b> and <a href=/l>a link</a></p>" % i)
        if i > 1:
            assert out.startswith("\n\nparagraph")
    assert conv.close().endswith("\n")


# ---------------------------------------------------------------------------- corpus


def corpus() -> list[Path]:
    return sorted(corpus_dir().glob("*.html"))


@pytest.mark.parametrize("path", corpus(), ids=lambda p: p.name)
def test_corpus(path: Path) -> None:
    data = path.read_bytes()
    md = convert(data, chunks=2, base_url="https://example.com/dir/")
    html = render(md)
    assert f1(words(data), words(html, source=False)) >= 0.97
    src = links(data, "https://example.com/dir/")
    got = links(html, source=False)
    kept = sum(1 for href, text in src.items() if got.get(href) == text)
    assert kept >= 0.97 * len(src)
    want, have = structure(data), structure(html, source=False)
    assert have["headings"] == want["headings"]
    assert have["code"] == want["code"]


# ---------------------------------------------------------------------------- main content

LONG = "This paragraph is the article's text, long enough to count as content. " * 4


def test_main_content_landmark() -> None:
    html = (f"<header><nav><a href=/>Home</a> <a href=/x>X</a></nav></header>"
            f"<p>Teaser before the article that is not part of it at all, really. {LONG}</p>"
            f"<article><h1>Title</h1><p>{LONG}</p><div class=share><a href=/s>Share</a></div>"
            f"<p>Second <a href=/in>paragraph</a>. {LONG}</p><aside>Related stuff</aside>"
            f"</article><footer>Copyright</footer>")
    md = convert(html, main_content=True)
    # (the heading before the first paragraph is the title: metadata=True has it)
    assert md.startswith(LONG.strip())
    assert "[paragraph](/in)" in md
    for gone in ("Title", "Home", "Teaser", "Share", "Related", "Copyright"):
        assert gone not in md
    # the most specific landmark with text wins
    html2 = f"<main><p>In main only. {LONG}</p><div itemprop=articleBody><p>{LONG}</p></div></main>"
    assert convert(html2, main_content=True) == LONG.strip() + "\n"


def test_main_content_by_density() -> None:
    links_ = "".join(f"<li><a href=/{i}>Link {i}</a>" for i in range(10))
    html = (f"<div class=menu><ul>{links_}</ul></div><div><h2>Heading</h2><p>{LONG}</p>"
            f"<p>Short one.</p><p>{LONG}</p></div><div id=sidebar><p>{LONG} side</p></div>"
            f"<div><ul>{links_}</ul></div>")
    md = convert(html, main_content=True)
    assert md == f"## Heading\n\n{LONG.strip()}\n\nShort one.\n\n{LONG.strip()}\n"


def test_main_content_keeps_a_page_inside_its_hints() -> None:
    # (a page whose content is all inside a <form>, as ASP.NET pages are: the hints yield)
    html = f"<form><div class=sidebar-layout><p>{LONG}</p><p>{LONG}</p></div></form>"
    assert convert(html, main_content=True) == f"{LONG.strip()}\n\n{LONG.strip()}\n"
    assert convert("<nav>x</nav>", main_content=True) == ""


def test_main_content_metadata() -> None:
    doc = hs.markdown(f"<title>T</title><meta name=author content=A><article><p>{LONG}"
                      f"</article>", main_content=True, metadata=True)
    assert (doc.title, doc.byline, doc.markdown) == ("T", "A", LONG.strip() + "\n")


# ---------------------------------------------------------------------------- scraping


def test_extract_markdown_suffix() -> None:
    html = "<div class=a><h2>T</h2><p>x <b>y</b><li>z</div><p class=b>1<p class=b>*2*"
    assert hs.extract(html, {"a": "div.a::markdown", "b": "p.b::markdown*", "t": "h2"}) == \
        {"a": "## T\n\nx **y**\n\n- z", "b": ["1", "\\*2\\*"], "t": "T"}
    assert hs.Field.parse("div::markdown").kind == "markdown"
    with pytest.raises(ValueError):
        hs.Field("div", html=True, markdown=True)


def test_cli_markdown(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    import json

    from htmlstream.cli import main
    page = tmp_path / "a.html"
    page.write_bytes(b"<html lang=en><title>T</title><nav><a href=/>Home</a></nav><article>"
                     b"<p>Hello <a href='/x'>x</a>. " + LONG.encode() + b"</p></article>")
    assert main(["markdown", str(page), str(page), "--base-url", "https://e.com/"]) == 0
    one = f"[Home](https://e.com/)\n\nHello [x](https://e.com/x). {LONG.strip()}\n"
    assert capsysbinary.readouterr().out.decode() == one + "\n" + one
    assert main(["markdown", str(page), "--jsonl", "--main-content"]) == 0
    record = json.loads(capsysbinary.readouterr().out)
    assert record == {"url": str(page), "title": "T", "byline": None, "language": "en",
                      "description": None, "markdown": f"Hello [x](/x). {LONG.strip()}\n"}
    out = tmp_path / "out.md"
    assert main(["markdown", str(page), "-o", str(out), "--links", "reference",
                 "--no-images"]) == 0
    assert out.read_text().endswith("[1]: /\n[2]: /x\n")
    assert main(["markdown", str(tmp_path / "missing.html")]) == 2


# ---------------------------------------------------------------------------- at the edge


@pytest.mark.parametrize(("accept", "markdown"), [
    (None, False), ("", False), ("text/markdown", True), ("text/markdown, text/html", True),
    ("text/html, text/markdown", True), ("text/html;q=1, text/markdown;q=0.9", False),
    ("text/markdown;q=0.9, text/html;q=0.8", True), ("text/markdown;q=0", False),
    ("text/*", False), ("*/*", False), ("text/*;q=0.5, text/markdown", True),
    ("TEXT/Markdown ; Q=0.7, text/html;q=0.5", True), ("text/markdown;q=x, text/html", False),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", False),
    ("text/markdown;q=0.8, */*", False), ("text/markdown, */*;q=0.1", True),
])
def test_accepts_markdown(accept: str | None, markdown: bool) -> None:
    from htmlstream.recipes.markdown import accepts_markdown
    assert accepts_markdown(accept) is markdown


def test_estimate_tokens() -> None:
    from htmlstream.recipes.markdown import estimate_tokens
    assert [estimate_tokens(s) for s in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


def test_main_content_on_benchmark_pages() -> None:
    """Four pages of the article-extraction benchmark (tests/data/articles): the benchmark's
    metric on main_content=True, and the same Markdown in other chunkings."""
    import gzip
    import json

    from markdown_checks import markdown_text, shingle_scores
    root = Path(__file__).parent / "data" / "articles"
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    tp = fp = fn = 0.0
    for key, page in truth.items():
        data = gzip.decompress((root / f"{key}.html.gz").read_bytes())
        md = convert(data, chunks=1, main_content=True, base_url=page["url"])
        a, b, c = shingle_scores(markdown_text(md), page["articleBody"])
        assert a / (a + (b + c) / 2) >= 0.95, page["url"]
        tp, fp, fn = tp + a, fp + b, fn + c
    assert tp / (tp + (fp + fn) / 2) >= 0.97
