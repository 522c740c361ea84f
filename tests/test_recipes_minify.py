"""recipes.minify: what it removes, what it keeps, and the oracle: html5lib's tree of the output
equals html5lib's tree of the input (tests/oracles/minify_tree.py) on every html5lib
tree-construction input and corpus page; every output the same in every chunking."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import htmlstream as hs
from chunking import chunkings, feed_bytes, normalize_tokens
from datapaths import conformance_data_dir
from html_strategies import FRAGMENTS, tag
from htmlstream import recipes
from oracles.html5lib_feedback import all_tree_construction_tests, html5lib_tree_agrees
from oracles.minify_handlers import handlers_rewriter
from oracles.minify_tree import canonical_tree, first_difference
from recipe_checks import corpus, rewrite_all

OPTION_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "optional_tags": {"optional_tags": True},
    "everything": {"optional_tags": True, "css": True, "js": True},
    "remove": {"whitespace": "remove"},
    "remove-everything": {"whitespace": "remove", "optional_tags": True, "css": True, "js": True},
}


#: Where the engine may write bytes of the same meaning next to rewritten text, depending on the
#: chunking: a '&' or '<' it cannot see the end of (written '&amp;'/'&lt;', a reference's ';'
#: added), a CR; and bytes the encoding does not read (U+FFFD in rewritten text).
_HAZARD = re.compile(
    rb"&(?!(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);)|<(?![A-Za-z/!?])|\r")


def same_output(got: bytes, whole: bytes, raw: bytes) -> bool:
    """``got`` (one chunking's output) is ``whole`` (the whole input's), byte for byte; or,
    for an input with a hazard (above), has the same tokens."""
    if got == whole:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if not _HAZARD.search(raw):
            return False
    return bool(normalize_tokens(hs.tokenize(got)) == normalize_tokens(hs.tokenize(whole)))


def mini(html: str, **options: Any) -> str:
    """``html`` minified, the same in every chunking."""
    out, _ = rewrite_all(hs.Rewriter().use(recipes.minify(**options)), html)
    return out.decode("utf-8")


# --------------------------------------------------------------------------- whitespace


@pytest.mark.parametrize(("html", "want"), [
    ("<p>a   b\n\n c</p>", "<p>a b c</p>"),
    ("<b>a</b> <i>b</i>", "<b>a</b> <i>b</i>"),
    ("<span>a</span>\n  <span>b</span>", "<span>a</span> <span>b</span>"),
    ("<div>\n  <p> x </p>\n  <p>y</p>\n</div>", "<div><p>x</p><p>y</p></div>"),
    ("<ul>\n <li> one\n <li>two </li>\n</ul>", "<ul><li>one<li>two</li></ul>"),
    ("<p>a <br> b</p>", "<p>a<br>b</p>"),
    ("<p>x <span> y </span> z</p>", "<p>x <span> y </span> z</p>"),
    ("<html>\n<head>\n<title> a  b </title>\n</head>\n<body>\n x \n</body>\n</html>\n",
     "<html><head><title> a  b </title></head><body>x</body></html>"),
    ("<pre>\n  a   b\n</pre>", "<pre>\n  a   b\n</pre>"),
    ("<textarea>  a  </textarea>", "<textarea>  a  </textarea>"),
    ("<script> a  =  1 </script>", "<script> a  =  1 </script>"),
    ("<style> p  { } </style>", "<style> p  { } </style>"),
    ("<svg> <text> a  b </text> </svg>", "<svg> <text> a  b </text> </svg>"),
    ("<p>a <!-- c --> b</p>", "<p>a b</p>"),
    ("<p>x &amp; y &lt; z &nbsp; w</p>", "<p>x &amp; y &lt; z &nbsp; w</p>"),
    ("<p><b>x</p> <p>y", "<p><b>x</p> <p>y"),
    # a form feed is white space to the HTML parser but a character to CSS (Chromium shows
    # it; innerText has it): kept, the spaces around it collapsed
    ("<p>a\x0cb  \x0c\n c</p>", "<p>a\x0cb \x0c c</p>"),
    ("<div>\x0c<p>x</p></div>", "<div>\x0c<p>x</p></div>"),
    ("<p>a\tb\t\t</p>", "<p>a b</p>"),
])
def test_whitespace(html: str, want: str) -> None:
    """``whitespace="remove"``: also removed where the default style sheet shows none."""
    assert mini(html, whitespace="remove", css=False, js=False) == want


def test_whitespace_is_collapsed_across_chunks() -> None:
    html = "<p>" + "a " * 10 + "   \n\t  " + "b" + " " * 40 + "c</p>"
    assert mini(html) == "<p>" + "a " * 10 + "b c</p>"
    assert mini(html, whitespace="remove") == "<p>" + "a " * 10 + "b c</p>"


@pytest.mark.parametrize(("html", "want"), [
    # only collapsed: what renders the same whatever the page's CSS makes of display (a <div>
    # made inline-block keeps the space before it)
    ("<p>a   b\n\n c</p>", "<p>a b c</p>"),
    ("<div>\n  <span>By</span>\n  <div class=author>x</div>\n</div>",
     "<div> <span>By</span> <div class=author>x</div> </div>"),
    ("<ul>\n <li> one\n <li>two </li>\n</ul>", "<ul> <li> one <li>two </li> </ul>"),
    ("<p>a <br> b</p>", "<p>a <br> b</p>"),
    # (but in <head> and between a table's parts, where the browser shows no text)
    ("<html>\n<head>\n<title> a </title>\n</head>\n<body>\n x \n</body>\n</html>\n",
     "<html> <head><title> a </title></head> <body> x </body> </html> "),
    ("<table>\n <tr>\n  <td> 1 </td>\n </tr>\n</table>", "<table><tr><td> 1 </td></tr></table>"),
])
def test_whitespace_collapse(html: str, want: str) -> None:
    """``whitespace="collapse"``, the default (issue 33: the mode that never changes what a
    reader sees)."""
    assert mini(html, whitespace="collapse", css=False, js=False) == want
    assert mini(html, css=False, js=False) == want
    assert hs.minify(html, css=False, js=False) == want


def test_whitespace_option_is_checked() -> None:
    for bad in ("yes", "", None, 1, 0, "Collapse"):
        with pytest.raises(ValueError, match=r"'collapse' \(the default\), 'remove' or False"):
            recipes.minify(whitespace=bad)  # type: ignore[arg-type]
    # True named "remove" while that was the default: refused, the caller must say which
    with pytest.raises(ValueError, match=r"whitespace=True is ambiguous.*'collapse'.*'remove'"):
        recipes.minify(whitespace=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ambiguous"):
        hs.minify("<p>x", whitespace=True)
    assert recipes.minify().whitespace == "collapse"


def test_whitespace_off() -> None:
    assert mini("<p>a   b</p>\n<p>c</p>", whitespace=False) == "<p>a   b</p>\n<p>c</p>"


# --------------------------------------------------------------------------- comments


@pytest.mark.parametrize(("html", "want"), [
    ("<p>a<!-- x -->b</p>", "<p>ab</p>"),
    ("<!--[if IE]><p>old</p><![endif]--><p>x</p>", "<!--[if IE]><p>old</p><![endif]--><p>x</p>"),
    ("<!--[if !IE]><!--><p>new</p><!--<![endif]-->",
     "<!--[if !IE]><!--><p>new</p><!--<![endif]-->"),
    ("<p><!--email_off-->a@b.c<!--/email_off--></p>",
     "<p><!--email_off-->a@b.c<!--/email_off--></p>"),
    ("<pre><!--x-->\nfoo</pre>", "<pre><!--x-->\nfoo</pre>"),
])
def test_comments(html: str, want: str) -> None:
    assert mini(html) == want


def test_keep_comment_predicate() -> None:
    got = mini("<p><!-- keep: me --><!-- drop --></p>",
               keep_comment=lambda text: text.strip().startswith("keep"))
    assert got == "<p><!-- keep: me --></p>"


def test_comments_off() -> None:
    assert mini("<p>a<!-- x -->b</p>", comments=False) == "<p>a<!-- x -->b</p>"


# --------------------------------------------------------------------------- attributes


@pytest.mark.parametrize(("html", "want"), [
    ('<a href="/x" class="a b">t</a>', '<a href=/x class="a b">t</a>'),
    ("<a title='say \"hi\"'>t</a>", "<a title='say \"hi\"'>t</a>"),
    # (unquoted wherever the tokenizer reads the value the same: all but white space and '>',
    # and a quote first; '=', '<', '`' and quotes elsewhere are parse errors read as written)
    ('<a title="it\'s">t</a>', "<a title=it's>t</a>"),
    ('<a title="x=y">t</a>', "<a title=x=y>t</a>"),
    ('<a title="`x">t</a>', "<a title=`x>t</a>"),
    ('<a title="\'x">t</a>', '<a title="\'x">t</a>'),
    ("<a title='\"x' href='/?a=1&amp;b=\"'>t</a>", "<a title='\"x' href=/?a=1&amp;b=\">t</a>"),
    ('<a title="a<b">t</a>', "<a title=a<b>t</a>"),
    ('<a title="<x>">t</a>', '<a title="<x>">t</a>'),
    ('<input value="">', "<input value>"),
    ('<input disabled="disabled" checked="">', "<input disabled checked>"),
    ('<input disabled="false">', "<input disabled=false>"),
    ('<input type="checkbox" checked="checked">', "<input type=checkbox checked>"),
    ('<option value="a" SELECTED="selected">', "<option value=a SELECTED>"),
    ('<br />', "<br>"),
    ('<a href="x/">t</a>', "<a href=x/>t</a>"),
    ('<svg><path d="M0" /></svg>', "<svg><path d=M0 /></svg>"),
    ('<svg><path d="M0 1"/></svg>', '<svg><path d="M0 1"/></svg>'),
    ('<script type="text/javascript">x</script>', "<script>x</script>"),
    ('<script type="text/javascript" language="vbscript">x</script>',
     '<script type=text/javascript language=vbscript>x</script>'),
    ('<script type="module">x</script>', "<script type=module>x</script>"),
    ('<style type="text/css">p{}</style>', "<style>p{}</style>"),
    ('<link rel="stylesheet" type="text/css" href="a.css">', "<link rel=stylesheet href=a.css>"),
    ('<p   id="a"   id="b">x</p>', "<p id=a>x</p>"),
    ('<p title="a&amp;b">x</p>', "<p title=a&amp;b>x</p>"),
    ("<DIV CLASS='x'>y</DIV>", "<DIV CLASS=x>y</div>"),
])
def test_attributes(html: str, want: str) -> None:
    assert mini(html) == want


#: The rules that leave out a ``type``, each with the browser's reading (the HTML standard's
#: processing model; tests/test_minify_chromium.py loads each in Chromium): what stays, stays
#: because without it the browser would read the element otherwise.
@pytest.mark.parametrize(("html", "want"), [
    # <script>: stripped, then compared with the JavaScript MIME type essences
    # (ASCII case-insensitively); with no type the browser reads "text/" + language
    ('<script type=" TEXT/JavaScript\n">x</script>', "<script>x</script>"),
    ('<script type="application/x-javascript">x</script>', "<script>x</script>"),
    ('<script type="text/javascript; charset=utf-8">x</script>',
     '<script type="text/javascript; charset=utf-8">x</script>'),
    ('<script type="text/javascript" language="">x</script>', "<script language>x</script>"),
    ('<script language="" type="text/javascript" language="vbscript">x</script>',
     "<script language>x</script>"),
    ('<script language="JavaScript" type="text/javascript">x</script>',
     "<script language=JavaScript type=text/javascript>x</script>"),
    ('<script type="text/javascript\x0b">x</script>',
     "<script type=text/javascript\x0b>x</script>"),
    ('<script type="module">x</script>', "<script type=module>x</script>"),
    # <style>: not stripped: empty or ASCII case-insensitively "text/css"
    ('<style type="text/css ">p{}</style>', '<style type="text/css ">p{}</style>'),
    ('<style type=" text/css">p{}</style>', '<style type=" text/css">p{}</style>'),
    ('<style type="TEXT/CSS">p{}</style>', "<style>p{}</style>"),
    ('<style type="text/css;charset=utf-8">p{}</style>',
     "<style type=text/css;charset=utf-8>p{}</style>"),
    # <link>: exactly text/css on a style sheet link (a MIME type parser and a plain
    # comparison agree on it); elsewhere the type says what the link may fetch
    ('<link rel="stylesheet" type="Text/CSS" href="a.css">', "<link rel=stylesheet href=a.css>"),
    ('<link type="text/css" rel="alternate  stylesheet" href=a.css title=b>',
     '<link rel="alternate  stylesheet" href=a.css title=b>'),
    ('<link rel="stylesheet" type="text/css " href="a.css">',
     '<link rel=stylesheet type="text/css " href=a.css>'),
    ('<link rel="stylesheet" type="text/css; charset=utf-8" href="a.css">',
     '<link rel=stylesheet type="text/css; charset=utf-8" href=a.css>'),
    ('<link rel="icon" type="text/css" href="a.css">', "<link rel=icon type=text/css href=a.css>"),
    ('<link rel="preload" as="style" type="text/css" href="a.css">',
     "<link rel=preload as=style type=text/css href=a.css>"),
    ('<link type="text/css" href="a.css">', "<link type=text/css href=a.css>"),
    # on no other element
    ('<input type="text/css">', "<input type=text/css>"),
])
def test_type_rules(html: str, want: str) -> None:
    assert mini(html) == want


#: Boolean attributes: the value goes only where the attribute is boolean on that element (on
#: another, it is an ordinary attribute whose value a script or selector reads).
@pytest.mark.parametrize(("html", "want"), [
    ('<input checked="checked" disabled="DISABLED" required="required">',
     "<input checked disabled required>"),
    ('<details open="open"><summary>s</summary></details>',
     "<details open><summary>s</summary></details>"),
    ('<div open="open">x</div>', "<div open=open>x</div>"),
    ('<p disabled="disabled">x</p>', "<p disabled=disabled>x</p>"),
    ('<a selected="selected">x</a>', "<a selected=selected>x</a>"),
    ('<div hidden="hidden">x</div>', "<div hidden=hidden>x</div>"),
    ('<div autofocus="autofocus" inert="inert" itemscope="itemscope">x</div>',
     "<div autofocus inert itemscope>x</div>"),
    ('<video muted="muted" loop="loop" playsinline="playsinline"></video>',
     "<video muted loop playsinline></video>"),
    ('<audio playsinline="playsinline"></audio>', "<audio playsinline=playsinline></audio>"),
    ('<script defer="defer" async="async" nomodule="nomodule" src=a.js></script>',
     "<script defer async nomodule src=a.js></script>"),
    ('<input checked="true">', "<input checked=true>"),
    ('<input checked="">', "<input checked>"),
    ('<div x="">y</div>', "<div x>y</div>"),
    ('<svg><g disabled="disabled"/></svg>', "<svg><g disabled=disabled /></svg>"),
])
def test_boolean_attributes(html: str, want: str) -> None:
    assert mini(html) == want


def test_attributes_off() -> None:
    assert mini('<a href="/x">t</a>', attributes=False) == '<a href="/x">t</a>'


def test_with_other_handlers_in_one_pass() -> None:
    rw = hs.Rewriter()
    rw.on("a", element=lambda el: el.set_attribute("rel", "noopener"))
    rw.use(recipes.https_upgrade(["example.com"]), recipes.minify())
    out, _ = rewrite_all(rw, '<p>\n <a href="http://example.com/">x</a>  y</p>\n')
    assert out == b"<p> <a href=http://example.com/ rel=noopener>x</a> y</p> "
    out, _ = rewrite_all(rw, '<p>\n <img src="http://example.com/" alt="">  y</p>\n')
    assert out == b"<p> <img src=https://example.com/ alt> y</p> "


@pytest.mark.parametrize(("html", "want"), [
    ("<ul>\n <li>a</li>\n <li>b</li>\n</ul>", "<ul><li>a<li>b</ul>"),
    ("<p>x</p>\n<p>y</p><div>z</div>", "<p>x<p>y<div>z</div>"),
    ("<p>x</p>t", "<p>x</p>t"),
    ("<span><p>x</p></span>", "<span><p>x</p></span>"),
    ("<p>x</p><table></table>", "<p>x</p><table></table>"),
    ("<dl><dt>a</dt><dd>b</dd></dl>", "<dl><dt>a<dd>b</dl>"),
    ("<table><tr><td>1</td> <td>2</td></tr>\n<tr><td>3</td></tr></table>",
     "<table><tr><td>1<td>2<tr><td>3</table>"),
    ("<html><head><title>x</title></head><body><p>a</p></body></html>",
     "<html><head><title>x</title><body><p>a"),
    ("<head></head><noscript>n</noscript>", "<head></head><noscript>n</noscript>"),
    ("<p>a</p><!--[if IE]>x<![endif]-->", "<p>a</p><!--[if IE]>x<![endif]-->"),
    # a stray </p> after an end tag left out makes an empty <p>: the end tag stays
    ("<p></p></p>", "<p></p></p>"),
    ("<p>a</p></p>b", "<p>a</p></p>b"),
    ("<div><p>a</p> </p></div>", "<div><p>a</p></p></div>"),
])
def test_optional_tags(html: str, want: str) -> None:
    """(with ``whitespace="remove"``, so that the tags left out show alone; the default's
    white space next to them: :func:`test_optional_tags_collapse`)"""
    assert mini(html, optional_tags=True, whitespace="remove") == want


@pytest.mark.parametrize(("html", "want"), [
    # white space after an end tag left out goes into its element, at its end: where CSS
    # shows it only if the element is inline, and then as it showed between the two
    ("<ul>\n <li>a</li>\n <li>b</li>\n</ul>", "<ul> <li>a <li>b </ul>"),
    ("<p>x</p>\n<p>y</p><div>z</div>", "<p>x <p>y<div>z</div>"),
    ("<div><p>a</p> </p></div>", "<div><p>a </p></p></div>"),
    ("<table><tr><td>1</td> <td>2</td></tr>\n<tr><td>3</td></tr></table>",
     "<table><tr><td>1<td>2<tr><td>3</table>"),
])
def test_optional_tags_collapse(html: str, want: str) -> None:
    assert mini(html, optional_tags=True) == want


@pytest.mark.parametrize(("html", "want"), [
    ("<style type='text/css'>\n p  {  color : red ; }\n</style>", "<style>p{color:red}</style>"),
    ("<script>\n var  a = 1 ;\n</script>", "<script>var a=1;</script>"),
    ("<script type=module> import  x  from 'y' ; </script>",
     "<script type=module>import x from'y';</script>"),
    ('<script type="application/json">{ "a" : 1 }</script>',
     '<script type=application/json>{ "a" : 1 }</script>'),
    ("<script type=text/template> <p>  x </script>",
     "<script type=text/template> <p>  x </script>"),
    ("<script><!--\n a = 1\n--></script>", "<script><!--\n a = 1\n--></script>"),
    # a '<' that cannot start '<!--', '<script' or '</script' is minified past (in every
    # chunking: a piece held may end in '<!-' that the next completes)
    ("<script>\n if (a  <  b) { c ( ) }\n</script>", "<script>if(a<b){c()}</script>"),
    ("<script>'<!-- <sCrIpt> -->' ; x  =  1</script>",
     "<script>'<!-- <sCrIpt> -->' ; x  =  1</script>"),
    ("<script>a = '</scr' + 'ipt>'  ;</script>", "<script>a='</scr'+'ipt>';</script>"),
    ("<script>a = '<'  + 'script>' ;  b  = '<SCRIPT'</script>",
     "<script>a = '<'  + 'script>' ;  b  = '<SCRIPT'</script>"),
    ("<svg><style> a  { } </style></svg>", "<svg><style> a  { } </style></svg>"),
    # a string or comment left open: its reading depends on the line ends (a bad string ends
    # at its line's end), so the sheet stays as it is
    ("<style>a { padding : 1px ; '\n}\nb { color : red }</style>",
     "<style>a { padding : 1px ; '\n}\nb { color : red }</style>"),
    ("<style>a { b : c }  /* open</style>", "<style>a { b : c }  /* open</style>"),
    ("<style>\\\n a { b : c }</style>", "<style>\\\n a { b : c }</style>"),
    ("<style>@supports (a : b) { c { d : e } }</style>",
     "<style>@supports (a : b) { c { d : e } }</style>"),
    ("<style>@media ( -ms-high-contrast : active ) { a { b : c } }</style>",
     "<style>@media ( -ms-high-contrast : active ) { a { b : c } }</style>"),
    ("<style>@media ( min-width : 9px ) { a { b : c } }</style>",
     "<style>@media (min-width:9px){a{b:c}}</style>"),
    ("<style>/* don't */ a { content : \"x\" }</style>", '<style>a{content:"x"}</style>'),
])
def test_css_js(html: str, want: str) -> None:
    pytest.importorskip("rcssmin")
    pytest.importorskip("rjsmin")
    assert mini(html, css=True, js=True) == want


def test_one_call() -> None:
    assert hs.minify("<p>a   b</p>\n") == "<p>a b</p> "
    assert hs.minify(b"<p>a   b</p>\n") == b"<p>a b</p> "
    assert hs.minify("<p>a   b</p>\n", whitespace="remove") == "<p>a b</p>"
    assert hs.minify("<p>a<!--x--></p>", comments=False) == "<p>a<!--x--></p>"


# --------------------------------------------------------------------------- the oracle

TREE_DIR = conformance_data_dir() / "html5lib-tests" / "tree-construction"


def _tree_inputs() -> list[Any]:
    if not TREE_DIR.is_dir():
        return []
    return [t for t in all_tree_construction_tests(TREE_DIR) if not t.is_fragment]


def check_tree(data: str, out: str, scripting: bool, options: str = "default") -> str | None:
    """Where html5lib's trees of ``data`` and ``out`` differ (canonical forms), or None.
    With ``whitespace="collapse"`` (the default) and no optional tags, the trees must be equal
    with white space only collapsed (``canonical_tree(collapse=True)``: nothing removed but
    whitespace-only text in ``<head>``, ``<html>`` and between a table's parts); an end tag
    left out may move white space after it into its element, where CSS collapses it, so with
    ``optional_tags`` (and with ``whitespace="remove"``) white space next to block
    boundaries is compared as ``"remove"`` may change it."""
    recipe = recipes.minify(**OPTION_SETS[options])
    code = recipe.css or recipe.js      # (on by default where rcssmin and rjsmin are installed)
    collapse = recipe.whitespace == "collapse" and not recipe.optional_tags
    return first_difference(
        canonical_tree(data, scripting=scripting, code=code, collapse=collapse),
        canonical_tree(out, scripting=scripting, code=code, collapse=collapse))


def test_collapse_oracle_sees_removed_white_space() -> None:
    """The oracle of the default (``collapse=True``) tells a removed space from a collapsed
    one, where the ``"remove"`` oracle does not (the check is not blind to what it is for)."""
    for original, changed in (("<div> <p>x</p> </div>", "<div><p>x</p></div>"),
                              ("<p>a <br> b</p>", "<p>a<br>b</p>"),
                              ("<ul>\n<li>a</li>\n</ul>", "<ul><li>a</li></ul>")):
        assert canonical_tree(original, collapse=True) != canonical_tree(changed, collapse=True)
        assert canonical_tree(original) == canonical_tree(changed)
    for original, changed in (("<p>a  \n b</p>", "<p>a b</p>"),
                              ("<table>\n<tr> <td>1</td></tr></table>",
                               "<table><tr><td>1</td></tr></table>"),
                              ("<head>\n<title>t</title>\n</head>",
                               "<head><title>t</title></head>")):
        assert canonical_tree(original, collapse=True) == canonical_tree(changed, collapse=True)


@pytest.mark.oracle
@pytest.mark.parametrize("options", OPTION_SETS, ids=list(OPTION_SETS))
def test_oracle_tree_construction(options: str) -> None:
    """Every html5lib tree-construction document input, in each scripting mode: the trees
    agree, and the output is the same whole, byte by byte and in a few other chunkings.
    Inputs where html5lib's tree is not the standard's (its <template>, its old <select>) say
    nothing about the output's tree and are counted apart."""
    tests = _tree_inputs()
    if not tests:
        pytest.skip(f"html5lib tree-construction tests not found in {TREE_DIR}")
    failures = []
    skipped: Counter[str] = Counter()
    runs = 0
    for test in tests:
        data = test.data.replace("\r\n", "\n").replace("\r", "\n")
        raw = data.encode("utf-8", "surrogatepass")
        for scripting in test.scripting_modes():
            rw = hs.Rewriter(scripting=scripting).use(recipes.minify(**OPTION_SETS[options]))
            whole = feed_bytes(rw.stream, [raw])
            for chunks in chunkings(raw, random_splits=2, split_samples=2, exhaustive_limit=0):
                got = feed_bytes(rw.stream, chunks)
                assert same_output(got, whole, raw), (test.id, chunks, got, whole)
            if html5lib_tree_agrees(test, scripting=scripting) is False:
                skipped["html5lib-outdated"] += 1
                continue
            runs += 1
            out = whole.decode("utf-8", "surrogatepass")
            diff = check_tree(data, out, scripting, options)
            if diff:
                failures.append((test.id, scripting, data[:200], out[:200], diff))
    assert not failures, f"{len(failures)} trees differ; first: {failures[:3]}"
    assert runs > 2800
    assert skipped["html5lib-outdated"] < 400, skipped


@pytest.mark.oracle
@pytest.mark.parametrize("options", OPTION_SETS, ids=list(OPTION_SETS))
@pytest.mark.parametrize("path", corpus(), ids=lambda p: p.name)
def test_oracle_corpus(path: Path, options: str) -> None:
    """The corpus pages: the trees agree, and the output is the same in 64 KiB, 1 KiB and a
    random chunking as whole; it is smaller."""
    data = path.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    raw = data.encode("utf-8")
    rw = hs.Rewriter().use(recipes.minify(**OPTION_SETS[options]))
    whole = feed_bytes(rw.stream, [raw])
    cuts = [[raw[i:i + 65536] for i in range(0, len(raw), 65536)],
            [raw[i:i + 1024] for i in range(0, len(raw), 1024)], chunkings(raw)[-1]]
    for chunks in cuts:
        assert same_output(feed_bytes(rw.stream, chunks), whole, raw), len(chunks)
    assert check_tree(data, whole.decode("utf-8"), True, options) is None
    assert len(whole) < len(raw)


@pytest.mark.oracle
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), tag(),
                          st.sampled_from([b" ", b"\n  ", b"  x  ", b"<p>", b"</p>", b"<b>",
                                           b"</b>", b"<div>", b"</div>", b"<pre>", b"<!--c-->",
                                           b"<table>", b"<tr>", b"<td>", b"</table>", b"<br>",
                                           b"<li>", b"<i>", b"</i>", b"<span>", b"</span>"])),
                max_size=20),
       st.sampled_from(list(OPTION_SETS)), st.booleans())
def test_oracle_generated(pieces: list[bytes], options: str, scripting: bool) -> None:
    """Generated documents: the trees agree (unless html5lib's own tree is outdated there:
    <template>, <select>, breaking out of foreign content), and the output does not depend on
    the chunking."""
    raw = b"".join(pieces).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    text = raw.decode("utf-8", "replace")
    raw = text.encode("utf-8")
    rw = hs.Rewriter(scripting=scripting).use(recipes.minify(**OPTION_SETS[options]))
    whole = feed_bytes(rw.stream, [raw])
    for chunks in chunkings(raw, random_splits=3, split_samples=3, exhaustive_limit=0):
        got = feed_bytes(rw.stream, chunks)
        assert same_output(got, whole, raw), (chunks, got, whole)
    low = text.lower()
    if "<template" in low or "<select" in low or "<frameset" in low:
        return
    foreign = min((i for i in (low.find("<svg"), low.find("<math")) if i >= 0), default=-1)
    if foreign >= 0 and ("</p" in low[foreign:] or "</br" in low[foreign:]):
        return
    diff = check_tree(text, whole.decode("utf-8"), scripting, options)
    assert diff is None, (raw, whole, diff)


# --------------------------------------------------------------------------- compiled = handlers

#: The option sets of the compiled stage, each checked against the handlers.
COMPILED_OPTION_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "comments-off": {"comments": False},
    "whitespace-off": {"whitespace": False},
    "attributes-off": {"attributes": False},
    "keep-comment": {"keep_comment": lambda text: "keep" in text or text.startswith(" c")},
    "optional_tags": {"optional_tags": True},
    "collapse": {"whitespace": "collapse", "optional_tags": True},
    "remove": {"whitespace": "remove"},
    "remove-optional_tags": {"whitespace": "remove", "optional_tags": True},
    "remove-keep-comment": {"whitespace": "remove",
                            "keep_comment": lambda text: "keep" in text or text.startswith(" c")},
    "optional_tags-only": {"optional_tags": True, "whitespace": False, "comments": False,
                           "attributes": False},
    "everything": {"optional_tags": True, "css": True, "js": True},
}


def _same_as_handlers(raw: bytes, options: str, scripting: bool = True,
                      cuts: list[list[bytes]] | None = None) -> tuple[bytes, bytes]:
    """The compiled recipe's output of ``raw`` (whole, and in ``cuts``, each the same) and
    the handlers' (whole)."""
    opts = COMPILED_OPTION_SETS[options]
    rw = hs.Rewriter(scripting=scripting).use(recipes.minify(**opts))
    want = feed_bytes(handlers_rewriter(scripting=scripting, **opts).stream, [raw])
    got = feed_bytes(rw.stream, [raw])
    for chunks in cuts or []:
        assert feed_bytes(rw.stream, chunks) == got, (options, chunks)
    return got, want


@pytest.mark.parametrize("options", COMPILED_OPTION_SETS)
@pytest.mark.parametrize(("html", "want"), [
    ('<script type="text/javascript" language="vbscript">x</script>',
     "<script type=text/javascript language=vbscript>x</script>"),
    ('<a x="1" x="2" y="3">t</a>', "<a x=1 x=2 y=3>t</a>"),
    ('<a x="1"  x="2">t</a>', "<a x=1>t</a>"),
    ("<svg><a><p>x</a> y", None),
    ("<table> <tr> <td> a </td> </tr> </table>", None),
    ("<p>a &amp b  <b>c </b> d</p>", None),
    ("</head> <template>  x  </template>", None),
    ("<p>x<!--keep-->  <!-- c -->y", None),
    ("<caf\u00e9/></caf\u00e9 x> <svg><foreignObject  x='1'></foreignobject ></svg>", None),
    ("<ul> <li> a </li> <li> b </ul> <p> c </p> <!-- k --> <p> d", None),
    ("<p> x <script> var  a = 1 ; </script> <style type=text/css> p  { color : red } </style>"
     "<script type=module> a  =  1 </script><script><!-- a < b --></script>", None),
    ("<head> <style>\n a { }\n</style> <script>if (a  &&  b) { c() }</script> </head>", None),
    # (found by the atheris target: an end tag the recipe may leave out, of an SVG element)
    ("<svg><td></td><g></g> <TR></tr> x</svg><p>y</p>", None),
    # (text that closes <head>: the part before the change is still in it)
    ("<head><html> >", None),
    ("<head> <b> x", None),
    # (a <body> in a <template> merges into nothing: an element with no content)
    ("<td><template><body>  x  ", None),
])
def test_compiled_equals_handlers_examples(options: str, html: str, want: str | None) -> None:
    raw = html.encode()
    got, handlers = _same_as_handlers(raw, options, cuts=chunkings(raw))
    assert got == handlers
    if want is not None and options == "default":
        assert got == want.encode()


@pytest.mark.oracle
@pytest.mark.parametrize("options", COMPILED_OPTION_SETS)
@pytest.mark.parametrize("path", corpus(), ids=lambda p: p.name)
def test_compiled_equals_handlers_corpus(path: Path, options: str) -> None:
    """Every corpus page: the compiled stage writes what the handlers write, byte for byte,
    whole and in 64 KiB, 1 KiB and random chunks."""
    raw = path.read_bytes()
    cuts = [[raw[i:i + 65536] for i in range(0, len(raw), 65536)],
            [raw[i:i + 1024] for i in range(0, len(raw), 1024)], chunkings(raw)[-1]]
    got, want = _same_as_handlers(raw, options, cuts=cuts)
    assert got == want


@pytest.mark.oracle
@pytest.mark.parametrize("options", COMPILED_OPTION_SETS)
def test_compiled_equals_handlers_tree_construction(options: str) -> None:
    """Every html5lib tree-construction document input, in each scripting mode: the compiled
    stage writes what the handlers write, byte for byte, whole and in other chunkings."""
    tests = _tree_inputs()
    if not tests:
        pytest.skip(f"html5lib tree-construction tests not found in {TREE_DIR}")
    failures = []
    runs = 0
    for test in tests:
        raw = test.data.encode("utf-8", "surrogatepass")
        for scripting in test.scripting_modes():
            runs += 1
            got, want = _same_as_handlers(
                raw, options, scripting,
                cuts=chunkings(raw, random_splits=1, split_samples=1, exhaustive_limit=0))
            if got != want:
                failures.append((test.id, scripting, raw[:200], got[:200], want[:200]))
    assert not failures, f"{len(failures)} outputs differ; first: {failures[:3]}"
    assert runs > 2800


@pytest.mark.oracle
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), tag(),
                          st.sampled_from([b" ", b"\n  ", b"  x  ", b"<p>", b"</p>", b"<b>",
                                           b"</b>", b"<pre>", b"<!--c-->", b"<table>", b"<tr>",
                                           b"<td>", b"<br>", b"<li>", b"<svg>", b"<head>",
                                           b"</head>", b"<a x='1' x=\"2\">", b"&amp",
                                           b"</td>", b"</li>", b"<math>", b"</svg>",
                                           b"<template>", b"<body>", b"<html>", b"</body>",
                                           b"<frameset>", b"<noscript>", b"<form>",
                                           b"</form>", b"<dd>", b"<style>", b"</style>",
                                           b"\r\n", b"<script>", b"</script>", b"\xc3\xa9"])),
                max_size=24),
       st.sampled_from(list(COMPILED_OPTION_SETS)), st.booleans())
def test_compiled_equals_handlers_generated(pieces: list[bytes], options: str,
                                            scripting: bool) -> None:
    """Generated documents (CR, cut references and UTF-8 included): the same bytes, whole
    and in other chunkings.  (Bytes that are not UTF-8 are where the two differ on purpose:
    see test_bytes_the_encoding_does_not_read; NUL and CR too.)"""
    raw = b"".join(pieces).decode("utf-8", "replace").encode("utf-8").replace(b"\x00", b"")
    raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    got, want = _same_as_handlers(
        raw, options, scripting,
        cuts=chunkings(raw, random_splits=2, split_samples=2, exhaustive_limit=0))
    assert got == want, (raw, got, want)


def test_bytes_the_encoding_does_not_read() -> None:
    """Where the two differ on purpose: the compiled stage writes the bytes it shortens as
    they were, also bytes that are not in the document's encoding (the handlers, which read
    text as characters, wrote U+FFFD for them; and start tags that are not all ASCII they
    wrote from the tokenizer's reading: CR LF in a value as LF, U+FFFD for a NUL in a name, or
    left them as they were when that was not shorter); a browser reads both the same."""
    raw = b"<p  title='a\xff b'>x\xff  y</p>"
    got, want = _same_as_handlers(raw, "default", cuts=chunkings(raw))
    assert got == b'<p title="a\xff b">x\xff y</p>'
    assert want == b"<p  title='a\xff b'>x\xef\xbf\xbd y</p>"
    # (and a tag that is not all ASCII with a NUL in an attribute name, which the tokenizer
    # reads as U+FFFD: the handlers did not write it shorter)
    raw = "<p a\x00  title='\u00e9 x'>".encode()
    got, want = _same_as_handlers(raw, "default", cuts=chunkings(raw))
    assert got == '<p a\x00 title="\u00e9 x">'.encode()
    assert want == raw


def test_later_handlers_are_minified_too() -> None:
    """The stage reads the rewriter's output: a start tag a handler registered after the
    recipe changes is written shorter too (the handlers wrote it from what it was when
    their own handler ran)."""
    for whitespace, want in (("collapse", b"<p> <a href=/y class=k title=x>t</a> </p>"),
                             ("remove", b"<p><a href=/y class=k title=x>t</a></p>")):
        rw = hs.Rewriter().use(recipes.minify(whitespace=whitespace))
        rw.on("a", element=lambda el: el.set_attribute("title", "x"))
        out, _ = rewrite_all(rw, '<p> <a href="/y" class="k">t</a> </p>')
        assert out == want
    rw.on("p", element=lambda el: el.append(" <b>  inserted </b>  ", html=True))
    out, _ = rewrite_all(rw, "<p>a</p>\n<div> b </div>")
    assert out == b"<p>a <b> inserted </b></p><div>b</div>"
    rw = hs.Rewriter().use(recipes.minify())
    rw.on("p", element=lambda el: el.append(" <b>  inserted </b>  ", html=True))
    out, _ = rewrite_all(rw, "<p>a</p>\n<div> b </div>")
    assert out == b"<p>a <b> inserted </b> </p> <div> b </div>"




def test_cli_minify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from htmlstream.cli import main

    source = tmp_path / "in.html"
    source.write_bytes(b'<ul>\n  <li class="a">one</li>\n  <li>two</li>\n</ul>\n<!-- c -->\n')
    output = tmp_path / "out.html"
    assert main(["minify", str(source), "-o", str(output), "--chunk-size", "3"]) == 0
    assert output.read_bytes() == b"<ul> <li class=a>one</li> <li>two</li> </ul>  "
    assert main(["minify", str(source), "-o", str(output), "--whitespace", "collapse"]) == 0
    assert output.read_bytes() == b"<ul> <li class=a>one</li> <li>two</li> </ul>  "
    assert main(["minify", str(source), "-o", str(output), "--whitespace", "remove",
                 "--chunk-size", "3"]) == 0
    assert output.read_bytes() == b"<ul><li class=a>one</li><li>two</li></ul>"
    assert main(["minify", str(source), "-o", str(output), "--optional-tags", "--stats",
                 "--whitespace=remove"]) == 0
    assert output.read_bytes() == b"<ul><li class=a>one<li>two</ul>"
    assert main(["minify", str(source), "-o", str(output), "--optional-tags"]) == 0
    assert output.read_bytes() == b"<ul> <li class=a>one <li>two </ul>  "
    assert "bytes in" in capsys.readouterr().err
    assert main(["minify", str(source), "-o", str(output), "--keep-comments",
                 "--keep-attributes", "--keep-whitespace"]) == 0
    assert output.read_bytes() == source.read_bytes()
    assert main(["minify", str(source), "-o", str(output), "--keep-comments",
                 "--keep-attributes", "--whitespace", "keep"]) == 0
    assert output.read_bytes() == source.read_bytes()
    assert main(["minify", str(tmp_path / "missing.html")]) == 2


def test_cli_minify_code(tmp_path: Path) -> None:
    """css and js: on by default where rcssmin and rjsmin are installed; --keep-css and
    --keep-js leave the text; --css/--js require them."""
    pytest.importorskip("rcssmin")
    pytest.importorskip("rjsmin")
    from htmlstream.cli import main

    source = tmp_path / "in.html"
    source.write_bytes(b"<style> p  { color : red } </style><script> var  a = 1 ; </script>")
    output = tmp_path / "out.html"
    assert main(["minify", str(source), "-o", str(output)]) == 0
    assert output.read_bytes() == b"<style>p{color:red}</style><script>var a=1;</script>"
    assert main(["minify", str(source), "-o", str(output), "--keep-css", "--keep-js"]) == 0
    assert output.read_bytes() == source.read_bytes()
    assert main(["minify", str(source), "-o", str(output), "--keep-css", "--js"]) == 0
    assert output.read_bytes() == b"<style> p  { color : red } </style><script>var a=1;</script>"


def test_one_recipe_many_rewriters_and_encodings() -> None:
    recipe = recipes.minify()
    latin = hs.Rewriter(encoding="windows-1252").use(recipe)
    utf8 = hs.Rewriter().use(recipe)
    doc = "<p title=\"caf\u00e9\"> caf\u00e9  cr\u00e8me </p>\n"
    want = "<p title=caf\u00e9> caf\u00e9 cr\u00e8me </p> "
    assert latin.rewrite(doc.encode("cp1252")) == want.encode("cp1252")
    assert utf8.rewrite(doc.encode()) == want.encode()
