"""What selectors tell the engine about the attributes it must read
(:meth:`SelectorList.attribute_tags`, :func:`htmlstream.selectors.attribute_tags`): the start
tags whose attributes a rule may read; every other tag's attributes are scanned past.
"""

from __future__ import annotations

import pytest

import htmlstream as hs
from chunking import chunkings, feed_bytes
from htmlstream.selectors import attribute_tags, parse_selector


@pytest.mark.parametrize(("selectors", "expected"), [
    (["p"], ("p",)),                                    # a subject: its handler gets it
    (["div > p"], ("p",)),                              # an ancestor with no test: name only
    (["div.a > p"], ("div", "p")),
    (["DIV#x p", "a[href]"], ("a", "div", "p")),
    (["img"], ("image", "img")),                        # the tree builder's <image> is an img
    (["p:not(span[title])"], ("p", "span")),            # pseudo-class arguments count
    (["li:nth-child(2 of a.b)"], ("a", "li")),
    (["p:is(:not(q[x]))"], ("p", "q")),
    (["*"], None),                                      # a subject with no type: any tag
    (["p:not([title])"], None),                         # an argument's test with no type
    (["div .a"], None),
    (["p", ".a"], None),
])
def test_attribute_tags(selectors: list[str], expected: tuple[str, ...] | None) -> None:
    assert attribute_tags([parse_selector(s) for s in selectors]) == expected


def test_attribute_tags_of_a_selector_list() -> None:
    sel = parse_selector("div.a > p, IMG[src]")
    assert sel.attribute_tags() == {"div", "p", "img", "image"}
    assert sel.attribute_tags(subjects=False) == {"div", "img", "image"}
    assert parse_selector("p:not(.a)").attribute_tags(subjects=False) is None


def test_non_ascii_tag_names_are_lower_cased_as_ascii() -> None:
    # "lin\u212a" (a Kelvin sign, which str.lower() makes "k") is not "link": the attributes of
    # the element of that name are read, and it matches; <link> does not.
    seen: list[str] = []
    rw = hs.Rewriter().on("lin\u212a[href]", element=lambda el: seen.append(el.tag_name))
    data = "<lin\u212a href=x>a</lin\u212a><link href=y>".encode()
    for chunks in chunkings(data, random_splits=4):
        seen.clear()
        assert feed_bytes(rw.stream, chunks) == data
        assert seen == ["lin\u212a"]
