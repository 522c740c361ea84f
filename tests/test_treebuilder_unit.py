"""Unit tests of the tree-builder simulator (``htmlstream._engine.treebuilder``).

The conformance run against html5lib is ``test_feedback_html5lib.py``; these tests pin the
behaviour that it does not show directly: the scripting flag, strict mode and its recovery
reading, namespaces, the open-element stack, quirks mode, the text hooks and ``max_depth``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import htmlstream as hs
from chunking import chunkings, feed_all, normalize_tokens
from datapaths import conformance_data_dir
from htmlstream._engine.collector import TokenCollector
from htmlstream._engine.lexer import Lexer
from htmlstream._engine.treebuilder import (
    DEFAULT_MAX_DEPTH,
    NAMESPACE_URIS,
    TreeBuilderSimulator,
    doctype_is_quirky,
)
from oracles.html5lib_feedback import expected_tokens

HTML, SVG, MATH = NAMESPACE_URIS


def tokens(data: str | bytes, **options: Any) -> list[list[Any]]:
    """Our tokens in html5lib form, checked to be the same in every chunking."""
    raw = data.encode() if isinstance(data, str) else data
    results = []
    for chunks in chunkings(raw, random_splits=3, split_samples=8):
        results.append(normalize_tokens(feed_all(lambda: hs.Tokenizer(**options), chunks)))
    for other in results[1:]:
        assert other == results[0]
    return results[0]


def run(data: str | bytes, **options: Any) -> TreeBuilderSimulator:
    """The simulator after the whole input (not closed)."""
    tokenizer = hs.Tokenizer(**options)
    tokenizer.feed(data.encode() if isinstance(data, str) else data)
    simulator: TreeBuilderSimulator = tokenizer._lexer.feedback
    return simulator


def stack(data: str, **options: Any) -> list[str]:
    """Names of the open elements after ``data``, with "svg:"/"math:" for foreign ones."""
    return [name if ns == "html" else f"{ns}:{name}"
            for name, ns in run(data, **options).open_elements()]


# ----------------------------------------------------------------------------- scripting

@pytest.mark.parametrize("prefix", ["", "<head>", "<body>", "<p>"])
def test_noscript_with_scripting_is_raw_text(prefix: str) -> None:
    data = prefix + "<noscript><b>x</b></noscript>"
    got = tokens(data)
    assert ["Character", "<b>x</b>"] in got
    assert got == expected_tokens(data, scripting=True)


@pytest.mark.parametrize("prefix", ["", "<head>", "<body>", "<p>"])
def test_noscript_without_scripting_is_markup(prefix: str) -> None:
    data = prefix + "<noscript><b>x</b></noscript>"
    got = tokens(data, scripting=False)
    assert ["StartTag", "b", {}] in got
    assert got == expected_tokens(data, scripting=False)


def test_noscript_in_head_without_scripting_has_its_own_mode() -> None:
    simulator = run("<head><noscript>", scripting=False)
    assert simulator.insertion_mode == "in head noscript"
    assert stack("<head><noscript><style>x", scripting=False) == [
        "html", "head", "noscript", "style"]
    # Anything else leaves <noscript> and <head>.
    assert stack("<head><noscript><div>", scripting=False) == ["html", "body", "div"]


def test_scripting_setting_is_exposed() -> None:
    assert TreeBuilderSimulator().scripting is True
    assert TreeBuilderSimulator(scripting=False).scripting is False


# ----------------------------------------------------------------------------- text states

@pytest.mark.parametrize(("tag", "text_type"), [
    ("title", hs.TextType.RCDATA), ("textarea", hs.TextType.RCDATA),
    ("style", hs.TextType.RAWTEXT), ("xmp", hs.TextType.RAWTEXT),
    ("iframe", hs.TextType.RAWTEXT), ("noembed", hs.TextType.RAWTEXT),
    ("noframes", hs.TextType.RAWTEXT), ("noscript", hs.TextType.RAWTEXT),
    ("script", hs.TextType.SCRIPT_DATA), ("plaintext", hs.TextType.PLAINTEXT),
])
def test_text_content_tags(tag: str, text_type: hs.TextType) -> None:
    toks = list(hs.tokenize(f"<body><{tag}><b>&amp;</b></{tag}>x".encode()))
    texts = [t for t in toks if isinstance(t, hs.tokens.Text)]
    assert texts[0].text_type is text_type
    if text_type is hs.TextType.PLAINTEXT:
        assert texts[0].raw == f"<b>&amp;</b></{tag}>x".encode()
    else:
        assert texts[0].raw == b"<b>&amp;</b>"
        assert [t.name for t in toks if isinstance(t, hs.tokens.EndTag)] == [tag]


@pytest.mark.parametrize("tag", ["title", "textarea", "style", "script", "plaintext", "xmp"])
def test_text_content_tags_mean_nothing_in_foreign_content(tag: str) -> None:
    for root in ("svg", "math"):
        data = f"<{root}><{tag}><b>x</b></{tag}></{root}>"
        got = tokens(data)
        assert ["StartTag", "b", {}] in got
        assert got == expected_tokens(data)


# ----------------------------------------------------------------------------- namespaces

def test_namespace_of_each_element() -> None:
    assert run("<svg>").last_start_tag_namespace == SVG
    assert run("<math>").last_start_tag_namespace == MATH
    assert run("<svg><g>").last_start_tag_namespace == SVG
    assert run("<svg><foreignObject><div>").last_start_tag_namespace == HTML
    assert run("<math><mi><b>").last_start_tag_namespace == HTML
    assert run("<math><mi><mglyph>").last_start_tag_namespace == MATH
    assert run("<math><svg>").last_start_tag_namespace == MATH       # not an SVG element
    assert run("<math><annotation-xml><svg>").last_start_tag_namespace == SVG
    assert run("<p>").last_start_tag_namespace == HTML


def test_integration_points() -> None:
    assert stack("<svg><desc><p>") == ["html", "body", "svg:svg", "svg:desc", "p"]
    assert stack("<svg><title><p>") == ["html", "body", "svg:svg", "svg:title", "p"]
    assert stack("<svg><foreignObject><p>") == [
        "html", "body", "svg:svg", "svg:foreignobject", "p"]
    assert stack("<math><mtext><p>") == ["html", "body", "math:math", "math:mtext", "p"]
    # A self-closing integration point is not entered.
    assert stack("<svg><foreignObject/><g>") == ["html", "body", "svg:svg", "svg:g"]
    # The end tag of an integration point leaves it.
    assert stack("<svg><desc></desc><g>") == ["html", "body", "svg:svg", "svg:g"]
    # <title> in SVG is an integration point, not RCDATA.
    assert tokens("<svg><title><b>") == [
        ["StartTag", "svg", {}], ["StartTag", "title", {}], ["StartTag", "b", {}]]


@pytest.mark.parametrize(("encoding", "html"), [
    ("text/html", True), ("TEXT/HTML", True), ("application/xhtml+xml", True),
    ("appliCation/xhtml+xml", True), ("text&#47;html", True), ("text/javascript", False),
    ("", False), (None, False),
])
def test_annotation_xml_encoding(encoding: str | None, html: bool) -> None:
    attr = "" if encoding is None else f' encoding="{encoding}"'
    data = f"<math><annotation-xml{attr}><div><![CDATA[x]]>"
    simulator = run(data)
    names = [name for name, _ in simulator.open_elements()]
    if html:
        assert names[-2:] == ["annotation-xml", "div"]
        assert tokens(data)[-1] == ["Comment", "[CDATA[x]]"]
    else:
        # <div> breaks out of MathML; the CDATA section then is a bogus comment either way.
        assert names == ["html", "body", "div"]
    assert tokens(data) == expected_tokens(data)


@pytest.mark.parametrize("tag", ["b", "div", "p", "table", "ul", "h3", "span", "br"])
def test_breakout_start_tags(tag: str) -> None:
    data = f"<svg><g><{tag}><![CDATA[x]]>"
    got = tokens(data)
    assert got[-1] == ["Comment", "[CDATA[x]]"]
    assert got == expected_tokens(data)
    assert stack(f"<svg><g><{tag}>")[:2] == ["html", "body"]
    assert "svg:svg" not in stack(f"<svg><g><{tag}>")


@pytest.mark.parametrize(("attrs", "breaks_out"), [
    ("", False), (" color=red", True), (" FACE=x", True), (" size=3", True), (" class=x", False),
])
def test_font_breaks_out_only_with_color_face_or_size(attrs: str, breaks_out: bool) -> None:
    data = f"<svg><font{attrs}><![CDATA[x]]></font></svg>"
    got = tokens(data)
    assert (got[2] == ["Comment", "[CDATA[x]]"]) is breaks_out
    assert got == expected_tokens(data)
    assert run(f"<svg><font{attrs}>").last_start_tag_namespace == (HTML if breaks_out else SVG)


def test_p_and_br_end_tags_break_out_of_foreign_content() -> None:
    # The current standard (html5lib 1.1 predates it): </p> and </br> leave foreign content.
    assert stack("<svg><g></p>") == ["html", "body"]
    assert stack("<math><mrow></br>") == ["html", "body"]
    # ... but not out of a MathML text integration point (<br> is inserted there).
    assert stack("<math><mo></br>") == ["html", "body", "math:math", "math:mo"]
    assert tokens("<svg></p><![CDATA[x]]>")[-1] == ["Comment", "[CDATA[x]]"]
    assert tokens("<svg></g><![CDATA[x]]>")[-1] == ["Character", "x"]


def test_self_closing_foreign_elements_are_not_pushed() -> None:
    assert stack("<svg><circle/><rect/>") == ["html", "body", "svg:svg"]
    assert stack("<svg/><p>") == ["html", "body", "p"]
    assert stack("<math><mi/><mo>") == ["html", "body", "math:math", "math:mo"]
    simulator = run("<svg><path/>")
    assert simulator.last_start_tag_namespace == SVG and not simulator.last_start_tag_pushed
    simulator = run("<svg><path>")
    assert simulator.last_start_tag_pushed


def test_svg_script_end_tag() -> None:
    assert stack("<svg><script>") == ["html", "body", "svg:svg", "svg:script"]
    assert stack("<svg><script></script>") == ["html", "body", "svg:svg"]
    assert tokens("<svg><script><b></script>") == [
        ["StartTag", "svg", {}], ["StartTag", "script", {}], ["StartTag", "b", {}],
        ["EndTag", "script"]]


def test_cdata_follows_the_current_node() -> None:
    data = "<svg><![CDATA[a]]><foreignObject><![CDATA[b]]></foreignObject><![CDATA[c]]></svg>"
    assert tokens(data) == expected_tokens(data)
    assert tokens("<![CDATA[x]]>") == [["Comment", "[CDATA[x]]"]]


def test_text_at_an_integration_point_can_close_cdata() -> None:
    # The text re-opens <b> (reconstruction) inside foreignObject: the current node is then an
    # HTML element and <![CDATA[ is a bogus comment -- whatever the chunking.
    data = "<svg><foreignObject><p><b></p>x<![CDATA[y]]>"
    assert tokens(data) == expected_tokens(data)
    assert tokens(data)[-1] == ["Comment", "[CDATA[y]]"]
    data = "<svg><foreignObject><p><b></p><![CDATA[y]]>"
    assert tokens(data)[-1] == ["Character", "y"]


# ----------------------------------------------------------------------------- the stack

@pytest.mark.parametrize(("data", "expected"), [
    ("<p>a<p>b", ["html", "body", "p"]),
    ("<p>a<div>b", ["html", "body", "div"]),
    ("<ul><li>a<li>b", ["html", "body", "ul", "li"]),
    ("<ul><li>a<li>b</ul>", ["html", "body"]),
    ("<ul><li><ul><li>", ["html", "body", "ul", "li", "ul", "li"]),
    ("<table><tr><td>x<td>y", ["html", "body", "table", "tbody", "tr", "td"]),
    ("<table><tr><td>x<td>y</table>", ["html", "body"]),
    ("<table><td>", ["html", "body", "table", "tbody", "tr", "td"]),
    ("<table><thead><tr><th><tbody>", ["html", "body", "table", "tbody"]),
    ("<table><col><tr>", ["html", "body", "table", "tbody", "tr"]),
    ("<table><caption><p>x<tr>", ["html", "body", "table", "tbody", "tr"]),
    ("<div><p>a</div>", ["html", "body"]),
    ("<div><p>a</div><p>", ["html", "body", "p"]),
    ("<dl><dt>a<dd>b", ["html", "body", "dl", "dd"]),
    ("<dl><dt>a<dd>b</dl>", ["html", "body"]),
    ("<select><option>a<option>b", ["html", "body", "select", "option"]),
    ("<select><option>a<option>b</select>", ["html", "body"]),
    ("<select><optgroup><option>a<optgroup>", ["html", "body", "select", "optgroup"]),
    ("<select><div><option>", ["html", "body", "select", "div", "option"]),
    ("<select><select>", ["html", "body"]),
    ("<select><input>", ["html", "body"]),
    ("<select><keygen>", ["html", "body", "select"]),
    ("<div><select></div><option>", ["html", "body", "div", "select", "option"]),
    ("<h1>a<h2>b", ["html", "body", "h2"]),
    ("<h1><span></h2>", ["html", "body"]),
    ("<br><img><hr><input><wbr><p>", ["html", "body", "p"]),
    ("<image>", ["html", "body"]),
    ("<a><b><i>", ["html", "body", "a", "b", "i"]),
    ("<p><b>x</p>y", ["html", "body", "b"]),
    ("<a><div></a>", ["html", "body", "div"]),
    ("<b><p></b>x", ["html", "body", "p"]),
    ("<b><p>x</b>", ["html", "body", "p"]),
    ("<a>1<a>2", ["html", "body", "a"]),
    ("<div><span></div>", ["html", "body"]),
    ("<span></div>", ["html", "body", "span"]),
    ("</div></p>x", ["html", "body"]),
    ("<button><button>", ["html", "body", "button"]),
    ("<ruby><rb>a<rt>b<rp>", ["html", "body", "ruby", "rp"]),
    ("<form><form><div></form>", ["html", "body", "div"]),
    ("<head><title>x</title><meta></head><body>", ["html", "body"]),
    ("<title>x</title>y", ["html", "body"]),
    ("<html><head></head>  <script></script><p>", ["html", "body", "p"]),
    ("<template><tr><td>", ["html", "head", "template", "tr", "td"]),
    ("<body><template><p></template><p>", ["html", "body", "p"]),
    ("<my-element><x-y>", ["html", "body", "my-element", "x-y"]),
    ("<my-element><span></my-element>", ["html", "body"]),
    ("<my-element><p></my-element>", ["html", "body", "my-element", "p"]),
])
def test_stack(data: str, expected: list[str]) -> None:
    assert stack(data) == expected


def test_implied_and_cloned_elements_are_marked() -> None:
    detail = run("<table><td>").open_elements(detail=True)
    assert [(name, flags) for name, _, _, flags in detail] == [
        ("html", ("implied",)), ("body", ("implied",)), ("table", ()), ("tbody", ("implied",)),
        ("tr", ("implied",)), ("td", ())]
    assert detail[2][2] == 0 and detail[5][2] == len("<table>")
    detail = run("<p><b>x</p>y").open_elements(detail=True)
    assert detail[-1][0] == "b" and detail[-1][3] == ("clone",) and detail[-1][2] == 3


@pytest.mark.parametrize(
    "depth", [1, 21, 22, 45, 46, 63, 64, 65, 200, DEFAULT_MAX_DEPTH - 2, DEFAULT_MAX_DEPTH + 5])
def test_stack_and_formatting_list_grow_to_max_depth(depth: int) -> None:
    # The arrays start small (24 open elements, 16 formatting entries) and grow up to max_depth:
    # every depth reads the same as with all of it allocated at once.
    names = ["b", "i", "u", "s", "em", "strong", "small", "big", "tt", "code", "font"]
    tags = [names[k % len(names)] for k in range(depth)]
    sim = run("".join(f"<{t} id={k}>" for k, t in enumerate(tags)) + "<p>")
    recorded = min(depth, DEFAULT_MAX_DEPTH - 2)     # html and body come first
    assert sim.depth == min(depth + 3, DEFAULT_MAX_DEPTH)
    assert sim.overflow == depth + 3 - sim.depth
    assert [name for name, _ in sim.open_elements()][2:2 + recorded] == tags[:recorded]
    # (elements beyond max_depth are only counted: the list holds the recorded ones)
    assert sim.active_formatting_elements == tags[:recorded]
    # closed by </div>, reopened by the text in <p>: the list reconstructs what it kept
    sim = run("<div>" + "".join(f"<{t} id={k}>" for k, t in enumerate(tags)) + "</div><p>x<br>")
    kept = tags[:min(depth, DEFAULT_MAX_DEPTH - 3)]
    assert sim.active_formatting_elements == kept
    reopened = [name for name, _ in sim.open_elements()][3:]      # after html, body, p
    assert reopened == kept[:DEFAULT_MAX_DEPTH - 3]


def test_quirks_mode_decides_whether_table_closes_p() -> None:
    assert stack("<p><table>") == ["html", "body", "p", "table"]
    assert run("<p><table>").quirks
    assert stack("<!DOCTYPE html><p><table>") == ["html", "body", "table"]
    assert not run("<!DOCTYPE html><p>").quirks
    legacy = '<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN"><p><table>'
    assert stack(legacy) == ["html", "body", "p", "table"]
    strict = ('<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" '
              '"http://www.w3.org/TR/html4/loose.dtd"><p><table>')
    assert stack(strict) == ["html", "body", "table"]     # limited quirks: not quirks
    # A DOCTYPE after the first token changes nothing.
    assert run("<!-- x -->\n<!DOCTYPE html>").quirks is False
    assert run("<p><!DOCTYPE html>").quirks is True


@pytest.mark.parametrize(("doctype", "quirky"), [
    ("<!DOCTYPE html>", False), ("<!doctype HTML>", False), ("<!DOCTYPE\thTmL >", False),
    ('<!DOCTYPE html SYSTEM "about:legacy-compat">', False),
    ('<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 3.2 Final//EN">', True),
    ('<!DOCTYPE html SYSTEM "http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd">', True),
    ("<!DOCTYPE htm>", True), ("<!DOCTYPE htmlx>", True), ("<!DOCTYPE>", True),
    ("<!DOCTYPE html\x00>", True), ("<!DOCTYPE html x>", True),
])
def test_doctype_quirks_in_the_simulator(doctype: str, quirky: bool) -> None:
    # (<!DOCTYPE html> is told without building strings; every other DOCTYPE by the full test)
    assert run(doctype + "<p>").quirks is quirky
    assert (stack(doctype + "<p><table>")[2] == "p") is quirky


def test_byte_order_mark_is_not_text() -> None:
    data = b"\xef\xbb\xbf<!DOCTYPE html><html><head><title>x</title>"
    simulator = run(data)
    assert not simulator.quirks
    assert [n for n, _ in simulator.open_elements()] == ["html", "head"]
    assert stack("\ufeffx") == ["html", "body"]


@pytest.mark.parametrize(("args", "quirky"), [
    (("html", None, None, False), False),
    (("html", None, None, True), True),
    (("HTML", None, None, False), False),
    (("htm", None, None, False), True),
    ((None, None, None, False), True),
    (("html", "-//W3C//DTD HTML 4.01 Frameset//EN", None, False), True),
    (("html", "-//W3C//DTD HTML 4.01 Frameset//EN", "x", False), False),
    (("html", "-//IETF//DTD HTML 2.0//EN", "x", False), True),
    (("html", "html", None, False), True),
    (("html", None, "http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd", False), True),
    (("html", "-//W3C//DTD XHTML 1.0 Strict//EN", None, False), False),
])
def test_doctype_is_quirky(args: tuple[Any, ...], quirky: bool) -> None:
    assert doctype_is_quirky(*args) is quirky


def test_changed_from() -> None:
    simulator = run("<div><p><span>")
    assert simulator.depth == 5 and simulator.changed_from == 4
    tokenizer = hs.Tokenizer()
    tokenizer.feed(b"<div><p><span>")
    sim = tokenizer._lexer.feedback
    tokenizer.feed(b"</div>")
    assert sim.depth == 2 and sim.changed_from == 2
    tokenizer.feed(b"<b></b>")
    assert sim.depth == 2 and sim.changed_from == 2
    # Text that changes the stack (implied <body>) counts with the next tag.
    tokenizer = hs.Tokenizer()
    tokenizer.feed(b"<head><title>t</title>")
    sim = tokenizer._lexer.feedback
    assert [n for n, _ in sim.open_elements()] == ["html", "head"]
    tokenizer.feed(b"text")
    assert [n for n, _ in sim.open_elements()] == ["html", "body"]
    tokenizer.feed(b"<p>")
    assert sim.changed_from == 1


# ----------------------------------------------------------------------------- frameset

def test_frameset_ok_follows_text() -> None:
    # <frameset> is ignored after body text, so <style> is RAWTEXT...
    assert tokens("x<frameset><style><b>")[-1] == ["Character", "<b>"]
    # ... and honoured otherwise, so <style> is ignored and <b> is a tag (html5lib agrees).
    for data in ("<frameset><style><b>", " \n<frameset><style><b>", "&#32;<frameset><style><b>",
                 "<!DOCTYPE html><frameset></frameset></html><plaintext></plaintext>"):
        assert tokens(data) == expected_tokens(data)
    assert tokens("<frameset><style><b>")[-1] == ["StartTag", "b", {}]
    assert tokens("&#32;<frameset><style><b>")[-1] == ["StartTag", "b", {}]
    assert tokens("&amp;<frameset><style><b>")[-1] == ["Character", "<b>"]
    assert not run("<div>x").frameset_ok
    assert run("<div> \n").frameset_ok
    assert not run("<input>").frameset_ok
    assert run("<input type=hidden>").frameset_ok
    assert run("<input type=HIDDEN>").frameset_ok
    assert not run("<input type=text>").frameset_ok


def test_noframes_after_frameset_is_raw_text() -> None:
    data = "<frameset></frameset><noframes><b></noframes>"
    assert tokens(data) == expected_tokens(data)
    assert ["Character", "<b>"] in tokens(data)


# ----------------------------------------------------------------------------- strict mode

def _bailouts() -> list[Any]:
    root = conformance_data_dir()
    path = root / "lol-html" / "expected_bailouts.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    return [pytest.param(data, info, id=f"{i}-{data[:40]}")
            for i, (data, info) in enumerate(items.items())]


BAILOUTS = _bailouts()
TEXT_AMBIGUITIES = [p for p in BAILOUTS if "TextParsingAmbiguity" in p.values[1]["reason"]]
TEMPLATE_NESTING = [p for p in BAILOUTS if "MaxTemplateNesting" in p.values[1]["reason"]]


def lex(data: bytes, simulator: TreeBuilderSimulator) -> tuple[Lexer, TokenCollector]:
    collector = TokenCollector()
    lexer = Lexer(collector, simulator)
    lexer.feed_bytes(data)
    lexer.close()
    return lexer, collector


@pytest.mark.parametrize(("data", "info"), TEXT_AMBIGUITIES)
def test_strict_raises_before_the_ambiguous_tag(data: str, info: dict[str, str]) -> None:
    raw = data.encode()
    tag = info["reason"].split('"')[1]
    offset = len(info["parsedChunk"].encode())
    for chunks in chunkings(raw, random_splits=2, two_way=False):
        collector = TokenCollector()
        lexer = Lexer(collector, TreeBuilderSimulator(strict=True))
        with pytest.raises(hs.ParsingAmbiguityError) as excinfo:
            for chunk in chunks:
                lexer.feed_bytes(chunk)
            lexer.close()
        assert excinfo.value.tag_name == tag
        assert excinfo.value.offset == offset
        assert "<select>" in str(excinfo.value) or "<frameset>" in str(excinfo.value)
        # Nothing of the tag (or after it) was handed on.
        assert all(t.end <= offset for t in collector.tokens)
        assert not any(isinstance(t, hs.tokens.StartTag) and t.offset == offset
                       for t in collector.tokens)


def test_strict_through_the_tokenizer() -> None:
    with pytest.raises(hs.ParsingAmbiguityError) as excinfo:
        list(hs.tokenize(b"<select><xmp><script>1</script></select>", strict=True))
    assert (excinfo.value.tag_name, excinfo.value.offset) == ("xmp", 8)
    assert "xmp" in str(excinfo.value)
    # No ambiguity, no error.
    data = b"<select><option>a</option></select><style>x</style><script>1</script>"
    assert list(hs.tokenize(data, strict=True))


#: The recovery reading (strict=False): the current standard's, where <select> content is
#: parsed as anywhere else and <frameset> mode ignores text-content tags.
RECOVERY = {
    "<!doctype html><frameset></frameset></html><plaintext></plaintext>":
        ["DOCTYPE", "StartTag:frameset", "EndTag:frameset", "EndTag:html", "StartTag:plaintext",
         "EndTag:plaintext"],
    "<!doctype html><frameset></frameset><plaintext></plaintext>":
        ["DOCTYPE", "StartTag:frameset", "EndTag:frameset", "StartTag:plaintext",
         "EndTag:plaintext"],
    "<!doctype html><frameset><plaintext></plaintext>":
        ["DOCTYPE", "StartTag:frameset", "StartTag:plaintext", "EndTag:plaintext"],
    "<!doctype html><select><plaintext></plaintext>X":
        ["DOCTYPE", "StartTag:select", "StartTag:plaintext", "Character:</plaintext>X"],
    "<!doctype html><table><select><plaintext>a<caption>b":
        ["DOCTYPE", "StartTag:table", "StartTag:select", "StartTag:plaintext",
         "Character:a<caption>b"],
    "<select><noembed></select><script x='a@b'a>y='a@b'//a@b%0a\\u0061lert(1)</script x>":
        ["StartTag:select", "StartTag:noembed",
         "Character:</select><script x='a@b'a>y='a@b'//a@b%0a\\u0061lert(1)</script x>"],
    "<select><div><style><div></div></style></div></select>":
        ["StartTag:select", "StartTag:div", "StartTag:style", "Character:<div></div>",
         "EndTag:style", "EndTag:div", "EndTag:select"],
    "<select><template><select><style><div></div></style></select></template></select>":
        ["StartTag:select", "StartTag:template", "StartTag:select", "StartTag:style",
         "Character:<div></div>", "EndTag:style", "EndTag:select", "EndTag:template",
         "EndTag:select"],
    "<select><template><template></template><select><style><div></div></style></select>"
    "</template></select>":
        ["StartTag:select", "StartTag:template", "StartTag:template", "EndTag:template",
         "StartTag:select", "StartTag:style", "Character:<div></div>", "EndTag:style",
         "EndTag:select", "EndTag:template", "EndTag:select"],
    "<select><template><template></template><style><div></div></style></template></select>":
        ["StartTag:select", "StartTag:template", "StartTag:template", "EndTag:template",
         "StartTag:style", "Character:<div></div>", "EndTag:style", "EndTag:template",
         "EndTag:select"],
}


def _short_form(toks: list[list[Any]]) -> list[str]:
    out = []
    for t in toks:
        if t[0] == "DOCTYPE":
            out.append("DOCTYPE")
        elif t[0] == "Character":
            out.append(f"Character:{t[1]}")
        else:
            out.append(f"{t[0]}:{t[1]}")
    return out


@pytest.mark.parametrize(("data", "info"), TEXT_AMBIGUITIES)
def test_default_recovery_reading(data: str, info: dict[str, str]) -> None:
    assert _short_form(tokens(data)) == RECOVERY[data]


def test_recovery_list_covers_the_bailouts() -> None:
    assert {p.values[0] for p in TEXT_AMBIGUITIES} == set(RECOVERY)
    assert len(TEXT_AMBIGUITIES) == 10 and len(TEMPLATE_NESTING) == 1


@pytest.mark.parametrize(("data", "info"), TEMPLATE_NESTING)
def test_deep_template_nesting_in_select(data: str, info: dict[str, str]) -> None:
    # lol-html gives up at 256 nested templates in <select> (it cannot follow templates).  The
    # simulator follows them exactly up to max_depth, so by default there is no ambiguity...
    lex(data.encode(), TreeBuilderSimulator(strict=True))
    simulator = TreeBuilderSimulator(strict=True)
    lexer = Lexer(None, simulator)
    lexer.feed_bytes(data.encode())
    assert simulator.depth == 3 + data.count("<template>")
    # ... and with a stack limit it cannot follow (html, body, select and 255 templates), strict
    # mode stops at the same tag as lol-html.
    with pytest.raises(hs.ParsingAmbiguityError) as excinfo:
        lex(data.encode(), TreeBuilderSimulator(strict=True, max_depth=258))
    assert excinfo.value.tag_name == "template"
    assert excinfo.value.offset == len(info["parsedChunk"].encode())


@pytest.mark.parametrize("data", [
    "<select><svg><![CDATA[</select><img src=x>]]>",
    "<select><math>",
    "<select><option><svg>",
])
def test_strict_svg_math_in_select(data: str) -> None:
    # Browsers before the 2025 change ignore <svg>/<math> in <select>: CDATA and namespaces
    # differ, so strict mode stops; by default the current standard's reading is taken.
    with pytest.raises(hs.ParsingAmbiguityError):
        lex(data.encode(), TreeBuilderSimulator(strict=True))
    assert run(data).last_start_tag_namespace in (SVG, MATH)


@pytest.mark.parametrize("data", [
    "<select><script>x</script><textarea>y</textarea></select>",
    "<select></select><style>a</style><title>b</title>",
    "<svg><select><style>x</style></select></svg>",
    "<select><input><style>x</style>",
    "<!DOCTYPE html><noframes>x</noframes><frameset><noframes>y</noframes>",
    "<p><svg><title>x</title></svg></p>",
])
def test_strict_does_not_raise_without_ambiguity(data: str) -> None:
    lex(data.encode(), TreeBuilderSimulator(strict=True))


def test_strict_script_in_template_in_select_raises() -> None:
    with pytest.raises(hs.ParsingAmbiguityError) as excinfo:
        lex(b"<select><template><script>", TreeBuilderSimulator(strict=True))
    assert excinfo.value.tag_name == "script"


def test_strict_after_frameset() -> None:
    with pytest.raises(hs.ParsingAmbiguityError) as excinfo:
        lex(b"x<frameset><style>", TreeBuilderSimulator(strict=True))
    assert (excinfo.value.tag_name, excinfo.value.offset) == ("style", 11)


# ----------------------------------------------------------------------------- max_depth

def test_default_max_depth() -> None:
    assert DEFAULT_MAX_DEPTH == 1024
    assert TreeBuilderSimulator().max_depth == DEFAULT_MAX_DEPTH
    with pytest.raises(ValueError):
        TreeBuilderSimulator(max_depth=2)


def test_beyond_max_depth_elements_are_counted() -> None:
    simulator = TreeBuilderSimulator(max_depth=16)
    lexer = Lexer(None, simulator)
    lexer.feed_bytes(b"<div>" * 100)
    assert simulator.depth == 16 and simulator.overflow == 100 + 2 - 16
    # Text-content tags still switch states beyond the limit; void elements are not counted.
    collector = TokenCollector()
    lexer = Lexer(collector, TreeBuilderSimulator(max_depth=16))
    lexer.feed_bytes(b"<div>" * 100 + b"<br><img><textarea><b></textarea><script>a<b</script>")
    texts = [t for t in collector.tokens if isinstance(t, hs.tokens.Text)]
    assert [t.text for t in texts] == ["<b>", "a<b"]
    assert lexer.feedback.overflow == 100 + 2 - 16
    # Coming back within the limit, the structure is followed again.
    lexer.feed_bytes(b"</div>" * 100 + b"<p><svg><![CDATA[x]]>")
    sim = lexer.feedback
    assert sim.overflow == 0
    assert [n for n, _ in sim.open_elements()][:2] == ["html", "body"]
    assert [t for t in collector.tokens if isinstance(t, hs.tokens.Text)][-1].text == "x"


def test_deep_documents_do_not_crash() -> None:
    for data in (b"<b>" * 5000, b"<svg>" * 5000 + b"<![CDATA[x]]>", b"<table>" * 3000,
                 b"<div><p><a>" * 2000 + b"x" + b"</a></p></div>" * 2000,
                 b"<select><template>" * 3000, b"<font><p>" * 3000 + b"x" * 10):
        for max_depth in (8, 64, DEFAULT_MAX_DEPTH):
            simulator = TreeBuilderSimulator(max_depth=max_depth)
            lexer = Lexer(TokenCollector(), simulator)
            lexer.feed_bytes(data)
            lexer.close()
            assert simulator.depth <= max_depth


def test_strict_raises_beyond_max_depth() -> None:
    with pytest.raises(hs.ParsingAmbiguityError) as excinfo:
        lex(b"<div>" * 20, TreeBuilderSimulator(strict=True, max_depth=16))
    assert excinfo.value.tag_name == "div"
    assert excinfo.value.offset == 5 * 14      # html, body and 14 <div>s fit
    assert "max_depth" in str(excinfo.value)


# ----------------------------------------------------------------------------- misc

def test_lexer_without_sink() -> None:
    simulator = TreeBuilderSimulator()
    lexer = Lexer(None, simulator)
    for chunk in (b"<!DOCTYPE html><title>a<b", b"</title><p>x<textarea>", b"</p></textarea>"):
        lexer.feed_bytes(chunk)
    lexer.close()
    assert [n for n, _ in simulator.open_elements()] == ["html", "body", "p"]


def test_active_formatting_elements() -> None:
    simulator = run("<b><i><table><td><u>")
    assert simulator.active_formatting_elements == ["b", "i", None, "u"]
    # Noah's Ark: at most three equal entries after the last marker.
    simulator = run("<p>" + "<b class=x>" * 5)
    assert simulator.active_formatting_elements == ["b", "b", "b"]
    simulator = run("<p>" + "".join(f"<b class={i}>" for i in range(5)))
    assert simulator.active_formatting_elements == ["b"] * 5


def test_insertion_modes() -> None:
    assert run("").insertion_mode == "initial"
    assert run("<!DOCTYPE html>").insertion_mode == "before html"
    assert run("<html>").insertion_mode == "before head"
    assert run("<head>").insertion_mode == "in head"
    assert run("<head></head>").insertion_mode == "after head"
    assert run("<p>").insertion_mode == "in body"
    assert run("<title>").insertion_mode == "text"
    assert run("<table>").insertion_mode == "in table"
    assert run("<table><tr><td>").insertion_mode == "in cell"
    assert run("<template>").insertion_mode == "in template"
    assert run("<body></body>").insertion_mode == "after body"
    assert run("<frameset>").insertion_mode == "in frameset"
