"""htmlstream.compat.nh3 against the real nh3 (ammonia), in one process: the same keywords
give the same bytes, or the same tree (html5lib), or a difference listed with its reason
(tests/test_recipes_sanitize.NH3_DIFFERENCES, and the deliberate ones below); clean_text,
escape, is_html and the constants are nh3's; keyword sets built per call share one policy."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from htmlstream import Rewriter, recipes
from htmlstream.compat import nh3 as compat
from recipe_checks import rewrite_all
from sanitize_checks import check, tree
from test_recipes_sanitize import NH3_DIFFERENCES, VECTORS

nh3 = pytest.importorskip("nh3")

KEYWORDS: dict[str, dict[str, Any]] = {
    "default": {},
    "tags": {"tags": {"b", "a", "p"}, "attributes": {"a": {"href"}}},
    "classes": {"allowed_classes": {"p": {"a"}, "a": {"x"}, "span": {"foo"}}},
    "values": {"tag_attribute_values": {"div": {"role": {"alert"}}}},
    "prefixes": {"generic_attribute_prefixes": {"data-"}},
    "comments": {"strip_comments": False},
    "no_rel": {"link_rel": None},
    "set": {"set_tag_attribute_values": {"a": {"target": "_blank"}}},
    "schemes": {"url_schemes": {"https"}},
    "deny": {"url_relative": "deny"},
    "base": {"url_relative": ("rewrite_with_base", "https://e.test/d/")},
    "root": {"url_relative": ("rewrite_with_root", "https://e.test/r/", "s/x")},
    "ids": {"id_prefix": "u-", "attributes": {"*": {"id"}, "a": {"href"}}},
    "style": {"attributes": {"p": {"style"}, "span": {"style"}},
              "filter_style_properties": {"color"}},
    "clean_content": {"clean_content_tags": {"script", "style", "noscript"}},
}

_EMPTY_CLASS = "an allowed_classes filter that keeps no class removes the attribute (nh3 " \
    "writes class=\"\")"
_FRAGMENT = "id_prefix goes before the fragment of a same-page link too, so that it still " \
    "points at the prefixed id (nh3 leaves it)"
_EMPTY_STYLE = "a style attribute whose declarations all go is removed (nh3 writes style=\"\")"
DELIBERATE = {
    ("classes", "owasp-52"): _EMPTY_CLASS,
    ("classes", "dompurify_expect-140"): _EMPTY_CLASS,
    ("ids", "dompurify-10"): _FRAGMENT,
    ("style", "html5lib-58"): _EMPTY_STYLE,
}


@pytest.mark.parametrize("keywords", list(KEYWORDS), ids=list(KEYWORDS))
def test_vectors_like_nh3(keywords: str) -> None:
    kw = KEYWORDS[keywords]
    for name, source in VECTORS:
        ours, theirs = compat.clean(source, **kw), nh3.clean(source, **kw)
        if ours == theirs:
            continue
        if (keywords, name) in DELIBERATE or name in NH3_DIFFERENCES:
            continue
        assert tree(_styles(ours)) == tree(theirs), (name, source, ours, theirs)


CASES = [
    ("<b><i>bold italic</i></b>", {"tags": {"b"}}),
    ("<script>alert('xss')</script>safe", {"clean_content_tags": {"script"}}),
    ('<a href="/" id="link">click</a>', {"attributes": {"*": {"id"}, "a": {"href"}}}),
    ("<div role='alert'>w</div><div role='banner'>w</div>",
     {"tag_attribute_values": {"div": {"role": {"alert", "status"}}}}),
    ("<div>content</div>", {"set_tag_attribute_values": {"div": {"class": "safe"}}}),
    ('<span class="highlight bold">text</span>', {"allowed_classes": {"span": {"highlight"}}}),
    ("<a href='https://tag.example' rel='tag'>#tag</a>",
     {"link_rel": None, "attributes": {"a": {"href", "rel"}}}),
    ('<a href="/foo">x</a>', {"url_relative": "deny"}),
    ('<a href="/foo">x</a>', {"url_relative": ("rewrite_with_base", "https://example.com")}),
    ('<img src="/a.png">', {"url_relative": lambda url: f"https://cdn.example.com{url}"}),
    ('<b id="x">hi</b>', {"attributes": {"b": {"id"}}, "id_prefix": "user-content-"}),
    ('<b data-x=1 data-y=2 title=t>t</b>', {"generic_attribute_prefixes": {"data-"}}),
    ("<!-- c --><b>x</b>", {"strip_comments": False}),
    ('<b title=x lang=y class=c>t</b>', {"attributes": {"b": {"class"}}}),
    ('<b title=x lang=y class=c>t</b>', {"attributes": {"*": {"class"}}}),
    ('<span style="color: red; position: fixed">t</span>',
     {"attributes": {"span": {"style"}}, "filter_style_properties": {"color", "position"}}),
    ("<a class='mention unwanted'>@foo</a>",
     {"attributes": {"a": {"class", "href"}},
      "attribute_filter": lambda t, a, v: ("mention" if "mention" in v.split() else None)
      if a == "class" else v}),
]


def _styles(html: str) -> str:
    """``html`` with the white space after ``:`` and ``;`` in style attributes left out: a
    kept declaration is written ``color: red; x: y`` here, ``color:red;x:y`` by nh3."""
    return re.sub(r'style="[^"]*"', lambda m: m.group(0).replace(": ", ":").replace("; ", ";"),
                  html)


@pytest.mark.parametrize(("source", "keywords"), CASES)
def test_cases_like_nh3(source: str, keywords: dict[str, Any]) -> None:
    ours, theirs = compat.clean(source, **keywords), nh3.clean(source, **keywords)
    assert tree(_styles(ours)) == tree(theirs), (ours, theirs)
    policy = compat._policy(*compat._arguments(**keywords))
    if keywords.get("attribute_filter") is None and not callable(keywords.get("url_relative")):
        check(source, policy)
    out, _ = rewrite_all(Rewriter().use(recipes.sanitize(policy)), source, random_splits=3)
    assert out.decode("utf-8") == ours


@pytest.mark.parametrize("keywords", [
    {"tags": {"b"}, "clean_content_tags": {"b"}},
    {"attributes": {"a": {"rel"}}},
    {"attributes": {"*": {"rel"}}},
    {"attributes": {"div": {"role"}}, "tag_attribute_values": {"div": {"role": {"x"}}}},
    {"attributes": {"a": {"class"}}, "allowed_classes": {"a": {"x"}}},
    {"url_relative": "bogus"},
    {"url_relative": ("rewrite_with_base", "nonsense")},
])
def test_errors_like_nh3(keywords: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        compat.clean("x", **keywords)
    try:
        nh3.clean("x", **keywords)
    except BaseException as e:      # (nh3: ValueError, or a Rust panic)
        assert "Panic" in type(e).__name__ or isinstance(e, ValueError)
    else:
        pytest.fail("nh3 accepted it")
    with pytest.raises(ValueError):
        compat.Cleaner(**keywords)


def test_api() -> None:
    assert compat.ALLOWED_TAGS == nh3.ALLOWED_TAGS
    assert compat.ALLOWED_ATTRIBUTES == nh3.ALLOWED_ATTRIBUTES
    assert compat.ALLOWED_URL_SCHEMES == nh3.ALLOWED_URL_SCHEMES
    assert nh3.CLEAN_CONTENT_TAGS <= compat.CLEAN_CONTENT_TAGS
    cleaner = compat.Cleaner(tags={"b", "i"}, attributes={})
    assert cleaner.clean("<b><i>safe</i></b><script>xss</script>") == "<b><i>safe</i></b>"
    assert cleaner.clean("<b>another</b> <em>fragment</em>") == "<b>another</b> fragment"
    with pytest.raises(TypeError):
        compat.clean(b"<b>x</b>")  # type: ignore[arg-type]


@given(st.text(alphabet=st.sampled_from(list("<>&\"'`=/ \t\n\r\x0c\x00aé;b!-?p")), max_size=40))
def test_clean_text_and_is_html(text: str) -> None:
    assert compat.clean_text(text) == nh3.clean_text(text)
    assert compat.escape(text) == compat.clean_text(text)
    assert compat.is_html(text) == nh3.is_html(text)
    assert tree(compat.clean_text(text, tags={"b", "p"})) == \
        tree(nh3.clean_text(text, tags={"b", "p"}))


def test_keywords_share_one_policy() -> None:
    def call() -> Any:
        return compat._policy(*compat._arguments(
            tags={"a", "b"}, attributes={"a": {"href"}}, allowed_classes={"b": {"x"}},
            url_relative=("rewrite_with_base", "https://e.test/")))
    assert call() is call()
    other = compat._policy(*compat._arguments(tags={"a"}))
    assert other is not call() and other != call()
