"""Element.set_start_tag and Element.replace_tags (issue 17: handlers that write tags
themselves, the minifier and the sanitizer): what is written in place of the tags, what stays,
how they combine with the other changes, in every chunking."""

from __future__ import annotations

from collections.abc import Callable
from operator import methodcaller
from typing import Any

import pytest

from chunking import chunkings, feed_bytes
from htmlstream import Element, EndTag, Rewriter, UnitExpired


def rewrite(doc: str, *rules: tuple[str, Callable[[Any], Any]], encoding: str = "utf-8") -> str:
    """``doc`` rewritten with the element handlers ``rules``, the same in every chunking."""
    data = doc.encode(encoding)
    outs = set()
    for chunks in chunkings(data, random_splits=4, single_bytes=len(data) < 400):
        rw = Rewriter(encoding=encoding)
        for selector, handler in rules:
            rw.on(selector, element=handler)
        outs.add(feed_bytes(rw.stream, chunks))
    assert len(outs) == 1, outs
    return outs.pop().decode(encoding)


def test_set_start_tag() -> None:
    # the start tag alone: the content and the end tag stay as written
    assert rewrite('<p><a  href="x" >t</A><a>u</a>', ("a", lambda el: el.set_start_tag(
        "<a href=x>"))) == "<p><a href=x>t</A><a href=x>u</a>"
    # bytes as they are; a void element; a self-closing foreign one
    assert rewrite('<br class="x"><svg><rect  width="1"/></svg>',
                   ("br", lambda el: el.set_start_tag(b"<br class=x>")),
                   ("rect", lambda el: el.set_start_tag(b"<rect width=1 />"))) == (
        "<br class=x><svg><rect width=1 /></svg>")
    # with the other changes: before/after/append stay, the new name renames the end tag,
    # attribute changes are not written into the markup, removal wins
    def many(el: Element) -> None:
        el.set_attribute("x", "1")
        el.set_start_tag("<b>")
        el.tag_name = "b"
        el.before("[")
        el.append("|")
        el.after("]")
    assert rewrite("<i class=a>t</i><i>u", ("i", many)) == "[<b>t|</b>][<b>u|]"
    assert rewrite("<i>t</i>", ("i", lambda el: (el.set_start_tag("<i>"), el.remove()))) == ""
    # a handler after it sees the element as it was, and may write it again
    assert rewrite("<p class=x>t</p>",
                   ("p", lambda el: el.set_start_tag("<p>")),
                   ("p", lambda el: el.set_start_tag(f"<p title={el.get_attribute('class')}>")),
                   ) == "<p title=x>t</p>"
    # str encoded in the document's encoding
    assert rewrite("<p>t</p>", ("p", lambda el: el.set_start_tag('<p title="é">')),
                   encoding="windows-1252") == '<p title="é">t</p>'
    # the leading newline of <pre> content stays protected by the engine's own rule
    assert rewrite("<pre class=x>\n\nt</pre>", ("pre", lambda el: el.set_start_tag("<pre>"))) \
        == "<pre>\n\nt</pre>"


def test_replace_tags() -> None:
    # both tags, also where the element ends implicitly or at the end of input
    assert rewrite("<div><p class=x>a<p>b</div><p>c",
                   ("p", lambda el: el.replace_tags("<p>", "</p>"))) == (
        "<div><p>a</p><p>b</p></div><p>c</p>")
    # bytes; a void element (no end tag); what a handler called through methodcaller does
    assert rewrite("<ul><li>a<li>b</ul><br/>",
                   ("li", methodcaller("replace_tags", b"<li>", b"</li>")),
                   ("br", methodcaller("replace_tags", b"<br>"))) == (
        "<ul><li>a</li><li>b</li></ul><br>")
    # the same as remove_and_keep_content + before + append
    def three(el: Element) -> None:
        el.remove_and_keep_content()
        el.before("<q>", html=True)
        el.append("</q>", html=True)
    doc = "<b>x<i>y</b>z</i><b>w"
    assert rewrite(doc, ("b", lambda el: el.replace_tags("<q>", "</q>"))) == \
        rewrite(doc, ("b", three))
    # an end tag for an element whose end is not followed: neither is written
    assert rewrite("<img src=x>t", ("img", lambda el: el.replace_tags("<x>", "</x>"))) == "t"
    # in order with the other content around it
    def around(el: Element) -> None:
        el.before("[")
        el.replace_tags("<s>", "</s>")
        el.append("|")
        el.after("]")
    assert rewrite("<u>t</u>", ("u", around)) == "[<s>t</s>|]"


def test_end_handlers_still_run() -> None:
    ends: list[str] = []

    def handler(el: Element) -> None:
        el.set_start_tag("<p>")
        el.on_end_tag(lambda end: ends.append(end.name))
    assert rewrite("<p class=x>a</p>", ("p", handler)) == "<p>a</p>"
    assert set(ends) == {"p"}


@pytest.mark.parametrize("method", ["set_start_tag", "replace_tags"])
def test_errors(method: str) -> None:
    kept: list[Element] = []

    def bad(el: Element) -> None:
        with pytest.raises(TypeError):
            getattr(el, method)(1)
        kept.append(el)
    Rewriter().on("p", element=bad).rewrite("<p>x")
    with pytest.raises(UnitExpired):
        getattr(kept[0], method)("<p>")


def test_end_tag_type_unchanged() -> None:
    # (an EndTag still has no such methods: the element's tags are the element's)
    assert not hasattr(EndTag, "set_start_tag") and not hasattr(EndTag, "replace_tags")


END_WORK_DOCS = [
    "<div><p>a<b>b</p>c</div><ul><li>1<li>2</ul>tail",
    "<table><tr><td>x<td>y</table><p>open at the end",
    "<textarea>t</textarea><title>x</title><style>s</style><script>1</script><pre>\npre</pre>",
    "<svg><g>x</g><rect/></svg><math><mi>y</mi></math><p>z",
    "<a href=1><p>adopted</a>b</p><form><div></form>d</div>",
    "<html><body><p>x</body></html><body class=x>y",
]

END_WORK_CHANGES: list[Callable[[Element], None]] = [
    lambda el: el.replace_tags(b"<x>", b"</x>"),
    lambda el: el.replace_tags(f"<{el.tag_name}>", f"</{el.tag_name}>"),
    lambda el: el.remove_and_keep_content(),
    lambda el: el.append("!"),
    lambda el: (el.append("<i>", html=True), el.append("</i>", html=True), None)[-1],
    lambda el: el.remove(),
]


@pytest.mark.parametrize("doc", END_WORK_DOCS)
@pytest.mark.parametrize("index", range(len(END_WORK_CHANGES)))
def test_end_work_without_an_end_tag_unit(doc: str, index: int) -> None:
    # (an element whose end no handler sees is ended without an EndTag: the same output as
    # with an end-tag handler that changes nothing, which takes the general way)
    change = END_WORK_CHANGES[index]

    def watched(el: Element) -> None:
        change(el)
        if el.can_have_content:
            el.on_end_tag(lambda end: None)

    for selector in ("*", "p, b, td, li, g, mi, textarea, style, a, div", "body"):
        assert rewrite(doc, (selector, change)) == rewrite(doc, (selector, watched)), selector
