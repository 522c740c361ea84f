# Type stub for the compiled selector matcher (matcher.pyx).

from htmlstream._engine.lexer import Lexer
from htmlstream.selectors import SelectorList

# Attributes whose values HTML compares ASCII case-insensitively in selectors.
HTML_CASE_INSENSITIVE_ATTRIBUTES: frozenset[str]
# SVG element names the HTML parser gives mixed case, by their lower-case form.
SVG_TAG_NAMES: dict[str, str]

# Selectors compiled for matching; built once per Rewriter (and encoding), shared by streams.
class Program:
    states: list[object]
    compounds: list[object]
    levels: list[int]
    entry_by_hash: dict[int, list[int]]
    entry_by_name: list[tuple[bytes, int]]
    entry_any: list[int]
    n_states: int
    n_flags: int
    n_rules: int
    nested: bool
    needs_frames: bool
    uses_nth_of_type: bool
    encoding: str
    def __init__(self, rules: list[SelectorList], encoding: str = "utf-8") -> None: ...

# Per-document matching state: a frame per open element.
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
    def push(self, name_hash: int, ns: int) -> None: ...
    def pop(self) -> None: ...
    # C level only (the rewriter's stack replay, matcher.pyx "stack surgery"): detach_frame(i),
    # attach_frame(frame), insert_frame(i, name_hash, ns), push_unknown(), match_uncounted().
