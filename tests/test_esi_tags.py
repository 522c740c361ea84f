"""``Rewriter(esi_tags=True)``: ``<esi:include>`` and ``<esi:comment>`` are void, as lol-html's
``enable_esi_tags`` makes them (issue 31), in every chunking of the input."""

from __future__ import annotations

from typing import Any

import pytest

from chunking import chunkings, feed_bytes
from htmlstream import Element, Rewriter


def run(html: str, *, esi_tags: bool = True) -> tuple[str, list[tuple[Any, ...]]]:
    """Rewrite ``html`` in every chunking; each must give the same output and the same
    element events; returns them."""
    results = []
    data = html.encode()
    for cut in chunkings(data):
        seen: list[tuple[Any, ...]] = []

        def element(el: Element, seen: list[tuple[Any, ...]] = seen) -> None:
            seen.append((el.tag_name, el.can_have_content, el.get_attribute("src")))

        def inside_include(el: Element, seen: list[tuple[Any, ...]] = seen) -> None:
            seen.append(("inside-include", el.tag_name))

        def end(el: Element, seen: list[tuple[Any, ...]] = seen) -> None:
            if el.can_have_content:
                el.on_end_tag(lambda t: seen.append(("end", t.name)))

        rw = Rewriter(esi_tags=esi_tags)
        rw.on("esi\\:include, esi\\:comment, esi\\:remove", element=element)
        rw.on("esi\\:include *", element=inside_include)
        rw.on("esi\\:remove", element=end)
        rw.on("p", element=lambda el: el.set_attribute("x", "1"))
        out = feed_bytes(rw.stream, cut).decode()
        results.append((out, seen))
    assert all(r == results[0] for r in results)
    return results[0]


def test_off_by_default() -> None:
    assert Rewriter().esi_tags is False


def test_include_without_slash_is_void() -> None:
    out, seen = run('<div><esi:include src="/a"><p>hi</p></div><p>x</p>')
    assert out == '<div><esi:include src="/a"><p x="1">hi</p></div><p x="1">x</p>'
    assert seen == [("esi:include", False, "/a")]


def test_off_include_swallows_the_page() -> None:
    """What a browser does, and the setting's reason: the rest is inside the include."""
    _, seen = run('<div><esi:include src="/a"><p>hi</p></div><p>x</p>', esi_tags=False)
    assert seen == [("esi:include", True, "/a"), ("inside-include", "p")]


@pytest.mark.parametrize("tag", ['<esi:include src="/a"/>', '<esi:include src="/a">',
                                 '<ESI:Include src="/a">', '<esi:comment text="c">',
                                 '<esi:comment text="c"/>'])
def test_void_forms(tag: str) -> None:
    _, seen = run(f"<body>{tag}<p>k</p>")
    name = "esi:include" if "nclude" in tag else "esi:comment"
    assert seen == [(name, False, "/a" if name == "esi:include" else None)]


def test_remove_is_a_normal_element() -> None:
    out, seen = run("<esi:remove><p>r</p></esi:remove><p>k</p>")
    assert seen == [("esi:remove", True, None), ("end", "esi:remove")]
    assert out == '<esi:remove><p x="1">r</p></esi:remove><p x="1">k</p>'


def test_remove_takes_its_content_only() -> None:
    rw = Rewriter(esi_tags=True)
    rw.on("esi\\:remove, esi\\:comment", element=lambda el: el.remove())
    rw.on("esi\\:include", element=lambda el: el.replace("[inc]"))
    html = ('<head><esi:include src="/h"></head><body><esi:remove><a href=x>link</a>'
            '</esi:remove><p>a<esi:comment text="c">b<esi:include src=/x>c</p>')
    for cut in chunkings(html.encode()):
        assert feed_bytes(rw.stream, cut).decode() == (
            "<head>[inc]</head><body><p>a" "b[inc]c</p>")


def test_end_tag_of_include_ends_nothing() -> None:
    out, seen = run("<div><esi:include src=a></esi:include><p>in div</p></div>")
    assert seen == [("esi:include", False, "a")]
    assert out == '<div><esi:include src=a></esi:include><p x="1">in div</p></div>'


def test_include_leaves_the_tree_state() -> None:
    """No implied <body>: the <title> after an include in <head> is still read as RCDATA,
    and a <meta> after it is still in <head>."""
    rw = Rewriter(esi_tags=True)
    rw.on("head > meta", element=lambda el: el.set_attribute("in-head", ""))
    rw.on("body meta", element=lambda el: el.set_attribute("in-body", ""))
    html = "<html><head><esi:include src=/h><meta charset=utf-8><title><p>t</title></head>"
    for cut in chunkings(html.encode()):
        out = feed_bytes(rw.stream, cut).decode()
        assert out == ("<html><head><esi:include src=/h><meta charset=utf-8 in-head=\"\">"
                       "<title><p>t</title></head>")


def test_foreign_content_and_raw_text() -> None:
    out, seen = run("<svg><esi:include src=a><rect/></svg><script><esi:include src=b>"
                    "</script><p>")
    assert seen == [("esi:include", False, "a")]     # (script text holds no tags)
    assert out.endswith('<p x="1">')


def test_simulator_setting() -> None:
    from htmlstream._engine.treebuilder import TreeBuilderSimulator
    assert TreeBuilderSimulator().esi_tags is False
    assert TreeBuilderSimulator(esi_tags=True).esi_tags is True
