"""The matcher's filters in front of its entry index and pending states, driven to their edges.

Before an attribute is hashed, the matcher looks at the length of its name (only lengths some
indexed name has), at the first byte of its value ([a=v], [a^=v], [a|=v] keys, ids) and splits
class values sixteen bytes at a time; a candidate state is rejected on its :not() flag, on the
position its :nth-child()/:nth-of-type() needs and on a 64-bit Bloom filter of the element's
classes; states already staged or pending for the parent's later children are found by a stamp
and by their last position.  Each test here crosses one of those filters from both sides:
what it lets through must still be tested exactly (Bloom and hash collisions), what it stops
must be what cannot match (character references, CR, case, non-ASCII first bytes, chunk and
window edges).  Every document is fed in many chunkings and must give the same result.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from chunking import chunkings
from htmlstream.rewriter import Rewriter

M64 = (1 << 64) - 1


def matched(doc: bytes | str, *selectors: str, key: str = "id",
            **options: Any) -> list[list[str]]:
    """Per selector, the ``key`` attribute of each element it matches (in document order); the
    same in every chunking of ``doc``; all selectors registered on one rewriter."""
    data = doc.encode() if isinstance(doc, str) else doc
    got: list[list[str]] = [[] for _ in selectors]
    rw = Rewriter(**options)
    for i, selector in enumerate(selectors):
        rw.on(selector, element=lambda el, i=i: got[i].append(el.get_attribute(key) or "?"))
    first: list[list[str]] | None = None
    for chunks in chunkings(data):
        for g in got:
            g.clear()
        stream = rw.stream()
        for chunk in chunks:
            stream.feed(chunk)
        stream.close()
        if first is None:
            first = [list(g) for g in got]
        else:
            assert got == first, f"{[len(c) for c in chunks]} chunks: {got} != {first}"
    assert first is not None
    return first


def one(doc: bytes | str, selector: str, **options: Any) -> list[str]:
    return matched(doc, selector, **options)[0]


# ----------------------------------------------------------------------- the engine's hashes


def fnv1a(data: bytes) -> int:
    h = 14695981039346656037
    for c in data:
        h = ((h ^ c) * 1099511628211) & M64
    return h


def mix(h: int) -> int:
    h ^= h >> 29
    h = (h * 0xBF58476D1CE4E5B9) & M64
    return h ^ (h >> 32)


def class_bits(name: str) -> int:
    """The two bits a class sets in an element's 64-bit class Bloom filter (matcher.pyx's
    ``bits_of(fnv1a(...))``)."""
    h = mix(fnv1a(name.encode()))
    return (1 << (h & 63)) | (1 << ((h >> 6) & 63))


def _colliding_classes() -> tuple[str, str]:
    """Two class names of one length whose Bloom bits are the same."""
    seen: dict[int, str] = {}
    for i in itertools.count():
        name = f"k{i:05d}"
        bits = class_bits(name)
        if bits in seen:
            return seen[bits], name
        seen[bits] = name
    raise AssertionError  # pragma: no cover


def test_class_bloom_collisions_are_tested_exactly() -> None:
    x, y = _colliding_classes()
    assert class_bits(x) == class_bits(y)
    doc = f"<ul><li id=a class={x}><li id=b class={y}><li id=c class='{x} {y}'><li id=d></ul>"
    # pending child states (ul > li.c) are filtered by the element's class Bloom filter first
    assert matched(doc, f"ul > li.{x}", f"ul > li.{y}", f"ul > .{x}.{y}") == [
        ["a", "c"], ["b", "c"], ["c"]]
    # entries indexed by the class, and pending descendant states, alike
    assert matched(doc, f".{x}", f"ul .{y}", f"li:not(.{y})") == [
        ["a", "c"], ["b", "c"], ["a", "d"]]


def test_class_index_bloom_saturated_by_many_keys() -> None:
    # 300 indexed classes fill the 256-bit Bloom filter of the class index: most other classes
    # pass it, and the hash table must tell them apart
    keys = [f"key{i}" for i in range(300)]
    doc = "".join(f"<p id=p{i} class='other{i} key{i * 7}'></p>" for i in range(60))
    got = matched(doc, *[f".{k}" for k in keys])
    want = [[f"p{i}" for i in range(60) if i * 7 == k] for k in range(300)]
    assert got == want


# ----------------------------------------------------------------------- class values


CLASS_WS = " \t\n\x0c\r"


def _class_tokens(value: str) -> list[str]:
    for ch in CLASS_WS[1:]:
        value = value.replace(ch, " ")
    return [t for t in value.split(" ") if t]


@pytest.mark.parametrize("pad", [0, 1, 5, 6, 7, 8, 9, 14, 15, 16, 17, 23, 31, 32, 33, 47])
def test_class_values_split_at_every_offset(pad: int) -> None:
    # the key token before, across and after each 16-byte boundary of the value, with every
    # kind of HTML whitespace around it, and a control byte that is not whitespace inside a
    # token (it belongs to the token)
    key = "target-key"
    values = []
    for ws in CLASS_WS:
        values += [
            "x" * pad + ws + key,
            key + ws + "x" * pad,
            "x" * pad + ws + key + ws + "y" * pad,
            ws * pad + key + ws * 3,
            "x" * pad + "\x01" + key,
            "x" * pad + ws + key + "\x0b",
            "x" * pad + key,
        ]
    doc = "".join(f"<p id=v{i} class=\"{v}\"></p>" for i, v in enumerate(values))
    want = [f"v{i}" for i, v in enumerate(values) if key in _class_tokens(v)]
    got = matched(doc, f".{key}", f"body > .{key}", f"[class~={key}]")
    assert got == [want, want, want]


@pytest.mark.parametrize("value, found", [
    ("&#116;arget", True), ("t&#97;rget", True), ("targe&#x74;", True), ("a&#32;target", True),
    ("a&#x9;target&#10;b", True), ("x&amp;target", False), ("&amp;target", False),
    ("target&amp;", False), ("target &amp;", True), ("&#116;arge", False),
    ("x&nbsp;target", False), ("&lt;target&gt;", False),
])  # fmt: skip
def test_class_values_with_character_references(value: str, found: bool) -> None:
    # a '&' anywhere sends the value to the decoded path; the raw tokens are not enough
    for pad in ("", "z" * 13, "z" * 29):
        doc = f"<div><p id=e class='{pad} {value}'></p><span id=f class=target></span></div>"
        want = ["e", "f"] if found else ["f"]
        assert matched(doc, ".target", "div > .target", "p.target, span.target") == [
            want, want, want], (pad, value)


def test_short_class_values_at_the_start_of_the_input() -> None:
    # (values too close to the tag's start for a sixteen-byte read that ends at the value's end)
    assert one("<p class=ab id=x>", ".ab") == ["x"]
    assert one("<p class=a id=x><p class=' b ' id=y>", ".a, .b") == ["x", "y"]
    assert one("<b class=\"\tc\n\" id=x><i class=&#99; id=y>", ".c") == ["x", "y"]
    assert one("<p class id=x><p class='' id=y><p class='  ' id=z>", "p:not(.a)") == [
        "x", "y", "z"]


# ----------------------------------------------------------------------- attribute values


@pytest.mark.parametrize("selector, want", [
    ("[href^=x]", ["a", "b", "g"]),
    ("[href^=X]", ["c", "d"]),
    ("[href^=x i]", ["a", "b", "c", "d", "g"]),
    ("[href=xyz]", ["a", "b"]),
    ("[href|=xyz]", ["a", "b", "g"]),
    ("[href^='&']", ["e"]),
    ("[href^='\\a x']", ["f"]),
    ("[href^=é]", ["h", "i"]),
])  # fmt: skip
def test_attribute_values_indexed_by_their_first_byte(selector: str, want: list[str]) -> None:
    # [a=v], [a^=v], [a|=v] are indexed by the name and v's first character; a value that
    # starts with '&' or CR is looked up under every first character
    doc = ("<a id=a href=xyz><a id=b href='&#120;yz'><a id=c href=Xyz><a id=d href='&#x58;yz'>"
           "<a id=e href='&amp;q'><a id=f href='\rx'><a id=g href=xyz-1><a id=h href=été>"
           "<a id=i href='&eacute;t'><a id=j href=yx>")  # fmt: skip
    # the same selector twice, once alone and once among keys of other first bytes
    others = ["[href^=q]", "[href^=y]", "[href=z]", "[hreg^=x]", "[HREF|=w]"]
    assert matched(doc, selector, *others)[0] == want
    assert one(doc, selector) == want


def test_attribute_values_of_html_case_insensitive_attributes() -> None:
    # [lang|=en] compares ASCII case-insensitively on HTML elements: both first bytes
    doc = "<p id=a lang=EN-us><p id=b lang=en><p id=c lang=fr><svg><g id=d lang=EN></g></svg>"
    assert one(doc, "[lang|=en]") == ["a", "b"]
    assert one(doc, "[lang|=En s]") == []
    assert one(doc, "[lang=EN s]") == ["d"]


def test_attribute_values_in_a_one_byte_encoding() -> None:
    doc = b"<a id=a href='\xe9t'><a id=b href='&eacute;t'><a id=c href='et'>"
    assert one(doc, "[href^=\u00e9]", encoding="windows-1252") == ["a", "b"]


# ----------------------------------------------------------------------- ids


@pytest.mark.parametrize("selector, want", [
    ("#x", ["a", "b"]),
    ("#\\a x", ["c", "d"]),
    ("#été", ["e", "f"]),
    ("#\\FFFD x", ["g"]),
    ("#nomatch", []),
])  # fmt: skip
def test_ids_by_first_byte(selector: str, want: list[str]) -> None:
    # an id is hashed only when some indexed id can start with its first byte; '&', CR, NUL
    # and non-ASCII first bytes always go on
    doc = ("<p id=x class=a><p id='&#120;' class=b><p id='\rx' class=c><p id='&#10;x' class=d>"
           "<p id=été class=e><p id='&eacute;t&eacute;' class=f><p id='\0x' class=g>"
           "<p id=y class=h><p id='' class=i>")  # fmt: skip
    # (#yy, #zz: other first bytes in the index)
    assert matched(doc, selector, "#yy, #zz", key="class")[0] == want


def test_ids_in_a_one_byte_encoding() -> None:
    doc = b"<p id='\xe9t\xe9' class=a><p id='&eacute;t&eacute;' class=b><p id=ete class=c>"
    assert matched(doc, "#été", key="class", encoding="windows-1252")[0] == ["a", "b"]


# ----------------------------------------------------------------------- attribute names


def test_attribute_names_by_length() -> None:
    long_name = "a" * 70
    doc = (f"<p id=a abc><p id=b ABC><p id=c abd><p id=d {long_name}><p id=e {'a' * 64}>"
           f"<p id=f data-abc=1><p id=g ab>")  # fmt: skip
    assert matched(doc, "[abc]", f"[{long_name}]", "[ab]", "[data-abc]") == [
        ["a", "b"], ["d"], ["g"], ["f"]]



def test_tag_with_attribute_names_indexed_by_the_tag() -> None:
    # a[href] is looked up by its tag (an attribute name index would hash every tag's names):
    # every <a> is still tested for the attribute, in any case, with or without a value, next
    # to tags whose attributes the simulator lexes (<b>, <code>...) and names of its length
    doc = ("<a id=a href=x><a id=b><a id=c HREF><b id=d href=y><a id=e data-href=z>"
           "<code id=f href=1><a id=g hreff=1 href=''><svg><a id=h href=2></svg>"
           "<area id=i href=3><A id=j hReF=4>")  # fmt: skip
    assert matched(doc, "a[href]", "[href]", "b[href]", "a[href=x]") == [
        ["a", "c", "g", "h", "j"], ["a", "c", "d", "f", "g", "h", "i", "j"], ["d"], ["a"]]


# ----------------------------------------------------------------------- candidate rejection


@pytest.mark.parametrize("selector, want", [
    ("li:nth-child(n+3)", ["c", "d", "e"]),
    ("li:nth-child(3)", ["c"]),
    ("li:nth-child(-n+2)", ["a", "b"]),
    ("li:nth-child(0n+1)", ["a"]),
    ("li:nth-child(2n-1)", ["a", "c", "e"]),
    ("li:nth-child(n+6)", []),
    ("li:nth-child(n+2):nth-child(n+4)", ["d", "e"]),
    ("li:nth-of-type(n+2)", ["d", "e"]),
    ("li:nth-of-type(2):nth-child(4)", ["d"]),
    ("li:not(:nth-child(n+3))", ["a", "b"]),
    (":nth-child(n+4 of li)", []),
])  # fmt: skip
def test_nth_positions(selector: str, want: list[str]) -> None:
    # (a position lower than An+B's least value rejects the candidate before its test)
    doc = "<div><li id=a></li><p id=b></p><p id=c></p><li id=d></li><li id=e></li></div>"
    if "of-type" not in selector and "of li" not in selector:
        doc = "<ul><li id=a><li id=b><li id=c><li id=d><li id=e></ul>"
    assert one(doc, selector) == want


def test_not_and_is_flags() -> None:
    doc = "<p id=a class=x><p id=b class=y><p id=c class='x y'><div id=d class=x></div>"
    # (the implied html, head and body have no start tag: no handler runs for them)
    assert matched(doc, "p:not(p)", "p:not(.x)", ":not(p)", "p:is(.x):is(.y)",
                   "p:not(.x):not(.y)", "p:is(.x):not(.y)", ":where(p) + p") == [
        [], ["b"], ["d"], ["c"], [], ["a"], ["b", "c"]]


def test_sibling_states_are_not_taken_from_another_parent() -> None:
    # (a state's last position on the sibling stacks may lie in a range that was dropped)
    doc = ("<div><p></p><span id=a></span></div><div><span id=b></span><p></p><p></p>"
           "<span id=c></span></div><section><h2></h2><span id=d></span></section>"
           "<section><span id=e></span></section>")  # fmt: skip
    assert matched(doc, "p ~ span", "h2 + span", "p + span", "p ~ p ~ span") == [
        ["a", "c"], ["d"], ["a", "c"], ["c"]]


def test_states_staged_twice_for_one_element() -> None:
    # two rules make the same element stage states for its children and descendants
    doc = "<ul id=u class='a b'><li id=l><p id=p></p></li></ul>"
    assert matched(doc, ".a > li", ".a li p", ".b > li", "ul.a.b p", ".a > *") == [
        ["l"], ["p"], ["l"], ["p"], ["l"]]
