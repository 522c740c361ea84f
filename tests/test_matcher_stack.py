"""The compiled matcher's open-element stack, driven directly: ``push``/``pop`` and
``remove_at`` (the tree builder removing an element from the middle of the stack), with implied
elements (no tag, so no attributes), which is all the stack semantics need."""

from __future__ import annotations

import pytest

from htmlstream._engine.lexer import Lexer
from htmlstream._engine.matcher import Matcher, Program
from htmlstream.selectors import parse_selector


def tag_hash(name: str) -> int:
    """The engine's tag-name hash (DESIGN principle 5): letters and digits 1-6, 5 bits each."""
    h = 0
    for ch in name:
        h = (h << 5) | (ord(ch) - ord("a") + 6 if ch.isalpha() else ord(ch) - ord("1"))
    return h


class Stack:
    def __init__(self, *selectors: str) -> None:
        self.matcher = Matcher(Program([parse_selector(s) for s in selectors]))
        self.lexer = Lexer()

    def match(self, name: str) -> list[int]:
        return self.matcher.match_start_tag(self.lexer, 0, True, tag_hash(name), None) or []

    def open(self, name: str) -> list[int]:
        got = self.match(name)
        self.matcher.push()
        return got


def test_removed_element_stays_the_ancestor_of_what_is_open_inside_it() -> None:
    # <form><div></form><p>...</div><p>: a browser keeps the div (and the first p) inside the
    # form; the second p, after </div>, is the form's next sibling.
    s = Stack("form p", "div > p", "form + p", "form > div")
    assert s.open("form") == []
    assert s.open("div") == [3]
    s.matcher.remove_at(0)
    assert s.matcher.depth == 1
    assert s.match("p") == [0, 1]
    s.matcher.pop()                 # </div>: the form goes with it
    assert s.matcher.depth == 0
    assert s.match("p") == [2]


def test_remove_innermost_is_pop_and_bad_indexes_raise() -> None:
    s = Stack("section span", "section > b")
    s.open("section")
    s.open("b")
    s.matcher.remove_at(1)
    assert s.matcher.depth == 1
    assert s.match("span") == [0]
    assert s.match("b") == [1]
    with pytest.raises(IndexError):
        s.matcher.remove_at(1)
    with pytest.raises(IndexError):
        s.matcher.remove_at(-1)


def test_descendant_states_pushed_once_are_kept_for_the_whole_subtree() -> None:
    s = Stack("div p", "div div p")
    s.open("div")
    s.open("div")
    s.open("div")
    assert s.match("p") == [0, 1]
    s.matcher.pop()
    s.matcher.pop()
    assert s.match("p") == [0]      # only one div open now
    s.matcher.pop()
    assert s.match("p") == []
