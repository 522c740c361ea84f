# Type stub for the compiled selector matcher (matcher.pyx).

from typing import final

from typing_extensions import disjoint_base

from htmlstream._engine.lexer import Lexer
from htmlstream.selectors import SelectorList

# Attributes whose values HTML compares ASCII case-insensitively in selectors.
HTML_CASE_INSENSITIVE_ATTRIBUTES: frozenset[str]
# SVG element names the HTML parser gives mixed case, by their lower-case form.
SVG_TAG_NAMES: dict[str, str]
# Attribute names the HTML parser gives mixed case on SVG / MathML elements, by lower-case form.
SVG_ATTRIBUTE_NAMES: dict[str, str]
MATHML_ATTRIBUTE_NAMES: dict[str, str]
# Attributes the HTML parser puts in a namespace on SVG/MathML elements: source name ->
# (namespace URI, local name).
FOREIGN_ATTRIBUTES: dict[str, tuple[str, str]]

# Selectors compiled for matching; built once per Rewriter (and encoding), shared by streams.
# The per-element data is C (struct arrays, hash tables, Bloom filters); these Python views
# of the entry index are kept for inspection.
@disjoint_base
class Program:
    states: list[tuple[int, int, int, int, int]]  # (compound, next, combinator, target, level)
    levels: list[int]
    next_extra: dict[int, list[int]]  # shared first states: their further next states
    entry_by_hash: dict[int, list[int]]
    entry_by_name: dict[bytes, list[int]]
    entry_any: list[int]
    entry_by_id: dict[bytes, list[int]]
    entry_by_class: dict[bytes, list[int]]
    entry_by_attr: dict[bytes, list[int]]
    entry_by_attrv: dict[bytes, list[int]]  # lower name + NUL + first value byte
    entry_by_attrv_all: dict[bytes, list[int]]
    attr_index: bool
    n_states: int
    n_flags: int
    n_rules: int
    max_level: int
    nested: bool
    needs_frames: bool
    uses_nth_of_type: bool
    nth_of_type_all: bool
    encoding: str
    utf8: bool
    raw_values: bool  # raw bytes compare as characters (UTF-8 and one-byte encodings)
    names: list[bytes | str]
    attr_py: list[tuple[str, str | None, str | None]]
    @property
    def compounds(self) -> list[dict[str, object]]: ...
    def __init__(self, rules: list[SelectorList], encoding: str = "utf-8",
                 index_compounds: bool = True) -> None: ...

# An open frame taken out of the stack with its pending states (Matcher.detach_frame); opaque.
@final
class SavedFrame: ...

# Per-document matching state: a frame per open element.
@final
class Matcher:
    program: Program
    def __init__(self, program: Program) -> None: ...
    @property
    def depth(self) -> int: ...
    # Match the element of the lexer's current tag (``implied``: an element with no tag);
    # returns the matching rule ids in order, or None.  Call push() next if the element opens.
    def match_start_tag(
        self, lx: Lexer, ns: int, implied: bool, name_hash: int, name: bytes | None
    ) -> list[int] | None: ...
    def push(self) -> int: ...
    def pop(self) -> None: ...
    # The tree builder removes open element ``index`` (0: outermost) while elements above it stay
    # open: it stays their ancestor and is closed with the last of them.  IndexError if none.
    def remove_at(self, index: int) -> None: ...
    # C level only (the rewriter's stack replay, matcher.pyx "stack surgery"): detach_frame(i),
    # attach_frame(frame), insert_frame(i, name_hash, ns), push_unknown(), sibling_state(i),
    # match_uncounted().

