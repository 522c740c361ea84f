"""The simulator's fast paths (``quick_tag`` and ``body_fast`` in treebuilder.pyx) against its
general rules.

In body, with an HTML current node, the common tags (ordinary, formatting, li/dd/dt, ``a``,
the elements that close a ``p``, headings, end tags that pop the current node, the void
elements that only insert) skip the insertion-mode dispatch.  With the fast paths turned off
every tag takes the general rules; the two must leave the simulator in the same state after
every tag (stack with ids' traces, the list of active formatting elements, mode, the change
report the rewriter replays, the last start tag's fields, whether text is read, whether CDATA
is allowed), on every html5lib tree-construction input, with a small ``max_depth`` too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from datapaths import conformance_data_dir
from htmlstream._engine.collector import TokenCollector
from htmlstream._engine.lexer import Lexer
from htmlstream._engine.treebuilder import TreeBuilderSimulator, _set_fast_paths
from oracles.html5lib_feedback import all_tree_construction_tests


def _testdata_dir() -> Path:
    return conformance_data_dir()


TREE_DIR = _testdata_dir() / "html5lib-tests" / "tree-construction"

#: Where the fast paths must hand over to the general rules (or agree with them).
EDGE_CASES = [
    "<b>1<p>2</b>3</p>",                        # </b> with b in the list but not current
    "<a>1<a>2</a>3",                            # a second <a> runs the adoption agency
    "<code><code><code><code>x</code></code>",  # Noah's Ark
    "<ul><li>1<li>2<p>3<li>4</ul><dl><dt>a<dd>b<dt>c</dl>",
    "<div><li>1<address><li>2</div>",
    "<p>1<h1>2<h2>3</h1>4</h2>5</p>",
    "<span><x-y>1</x-y></span></x-z></span>",
    "<x-long-custom-element><x-long-custom-elemenT>t</X-LONG-CUSTOM-ELEMENT>",
    "<svg><foreignObject><div><span>x</span></div></foreignObject></svg><p>",
    "<math><mi><b>x</b></mi><annotation-xml encoding=text/html><i>y</i></annotation-xml></math>",
    "<table><tr><td><b>1</td><p>2</table><i>3",
    "<template><li><b>x</b></template><li>",
    "<button><p>1</button><select><option>2</select>",
    "<nobr>1<nobr>2</nobr>",
    "<pre>1</pre><listing>2</listing><form><div></form></div>",
    "<frameset><div>",
    "<p><b>1</p><img>2<br><meta><link><source><wbr>3<area><embed><image><param><track>",
    "<b><i><u>1</b><keygen>2<basefont><bgsound><base>",
    "<svg><foreignObject><p><img></p></foreignObject><desc><br></desc></svg>",
    "<table><tr><td><img><br></td></tr><meta><link><img></table><input><hr>",
    "<select><img><br></select><div><img>",
    "<a>1</a><b><a>2</a>3</b><p><a>4<i>5</a>6</i>7<a>8<a>9</a></a><table><td><a>x</a></table>",
    "<b>0<a>1</b>2</a><u><a>3</a></u><a><x-y>4</x-y></a>",
    "<p>1<p>2<div>3<p>4<ul><li><p>5<p><b>6<p>7</b><p><button><p>8<div>9</button><p><table>",
    "<table><td><x-a><b>1</x-a></td><caption><x-b>2<img></X-B></caption><td><p>3</table>",
    "<x-a><annotation-xml><x-b></annotation-xml></x-b></x-a><emu-xref></emu-xrefs></emu-xref>",
    "<b><b><b><b><b><b><b><b><b><b>" "<i><u><s>deep</s></u></i>" + "</b>" * 10,
]


def _snapshot(sim: TreeBuilderSimulator) -> tuple[Any, ...]:
    return (sim.open_elements(detail=True), sim.active_formatting_elements,
            sim.insertion_mode, sim.depth, sim.overflow, sim.changed_from, sim.n_transients,
            sim.n_kept_ancestors, sim.overflow_parent_known, sim.text_change_at,
            sim.frameset_ok, sim.quirks, sim.last_start_tag_namespace,
            sim.last_start_tag_pushed, sim.last_inserted, sim.last_in_head)


def _states(data: bytes, fast: bool, **options: Any) -> Iterator[tuple[Any, ...]]:
    """The simulator's state after every piece, the input cut after every '>' (and what it
    told the lexer)."""
    _set_fast_paths(fast)
    try:
        sim = TreeBuilderSimulator(**options)
        lexer = Lexer(TokenCollector(), sim)
        cuts = [i + 1 for i, byte in enumerate(data) if byte == 0x3E]
        for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
            lexer.feed_bytes(data[start:end])
            yield _snapshot(sim), sim.reads_text, lexer.cdata_allowed
        lexer.close()
        yield _snapshot(sim), sim.reads_text, lexer.cdata_allowed
    finally:
        _set_fast_paths(True)


def check(data: bytes, **options: Any) -> None:
    general = list(_states(data, False, **options))
    assert list(_states(data, True, **options)) == general, data


@pytest.mark.parametrize("data", EDGE_CASES)
@pytest.mark.parametrize("max_depth", [1024, 4])
def test_fast_paths_edge_cases(data: str, max_depth: int) -> None:
    check(data.encode(), max_depth=max_depth)


def test_fast_paths_tree_construction() -> None:
    tests = all_tree_construction_tests(TREE_DIR)
    assert len(tests) > 1000
    for test in tests:
        data = test.data.encode("utf-8", "surrogatepass")
        for scripting in (True, False):
            check(data, scripting=scripting)
        check(data, max_depth=6)


#: Names around the 12 codes the tag-name hash always holds (the lexer checks the length only
#: at the end of a name): 12, 13 that fit ('f' starts low enough) or not, 14, other bytes late.
LONG_NAMES = ["abcdefghijkl", "foreignobjecT", "zzzzzzzzzzzzz", "abcdefghijklmn",
              "a1b2c3d4e5f6g", "abcdefghijklm-", "x-abcdefghijklm", "abcdefghijkl7"]


@pytest.mark.parametrize("name", LONG_NAMES)
def test_long_tag_names_in_every_chunking(name: str) -> None:
    data = f"<body><{name} a=1><{name.upper()}>t</{name}>".encode()
    expected = [("html", "html"), ("body", "html"), (name.lower(), "html"),
                (name.lower(), "html")]
    for cut in range(1, len(data)):
        sim = TreeBuilderSimulator()
        lexer = Lexer(TokenCollector(), sim)
        lexer.feed_bytes(data[:cut])
        lexer.feed_bytes(data[cut:])
        assert sim.open_elements() == expected[:3], (name, cut)
        lexer.close()


def test_custom_element_names_through_the_name_cache() -> None:
    """Names the tag-name hash cannot hold get their 64-bit hash through a small cache keyed by
    raw bytes: names that differ in one byte, in case, in length, past 16 bytes, at a chunk end."""
    names = ["x-a", "x-b", "X-A", "x-ab", "emu-xref", "emu-xreF", "emu-xrefs", "a-bcdefghijklmno",
             "a-bcdefghijklmnp", "a-bcdefghijklmnop", "a-bcdefghijklmnoq", "x-\u00e9", "x-a\x00"]
    data = "<body>" + "".join(f"<{name}>" for name in names * 2)
    expected = [name.lower().replace("\x00", "\ufffd") for name in names * 2]
    raw = data.encode()
    for cut in range(1, len(raw), 7):
        sim = TreeBuilderSimulator()
        lexer = Lexer(TokenCollector(), sim)
        lexer.feed_bytes(raw[:cut])
        lexer.feed_bytes(raw[cut:])
        assert [name for name, _ in sim.open_elements()][2:] == expected, cut
        lexer.close()
