# Type stub for the compiled tree-builder simulator (treebuilder.pyx); see
# docs/design/tree-builder-feedback.md.  The C-level surface (the OpenElement array, depth,
# changed_from, last_namespace) is declared in treebuilder.pxd for Cython users.

import enum

from typing_extensions import disjoint_base

from htmlstream._engine.lexer import Feedback

# Default bound of the recorded stack of open elements.
DEFAULT_MAX_DEPTH: int
# The start tags whose attributes the simulator reads.
ATTRIBUTE_TAGS: tuple[str, ...]
# Namespace URIs, indexed by Namespace.
NAMESPACE_URIS: tuple[str, str, str]

class Namespace(enum.IntEnum):
    NS_HTML = 0
    NS_SVG = 1
    NS_MATHML = 2

class ElementFlag(enum.IntEnum):
    E_SPECIAL = 1
    E_SCOPE = 2
    E_HTML_IP = 4
    E_MATHML_TEXT_IP = 8
    E_IMPLIED = 16
    E_CLONE = 32

# Whether a DOCTYPE puts the document in quirks mode.
def doctype_is_quirky(
    name: str | None, public_id: str | None, system_id: str | None, force_quirks: bool
) -> bool: ...

# Turn the simulator's fast paths (body_fast) on or off; for tests, which compare the two.
def _set_fast_paths(on: bool) -> None: ...

# Tree-builder feedback for a Lexer: Lexer(sink, TreeBuilderSimulator()).
@disjoint_base
class TreeBuilderSimulator(Feedback):
    def __init__(
        self,
        *,
        scripting: bool = True,
        strict: bool = False,
        max_depth: int = ...,
        esi_tags: bool = False,
    ) -> None: ...
    @property
    def scripting(self) -> bool: ...
    @property
    def strict(self) -> bool: ...
    @property
    def max_depth(self) -> int: ...
    esi_tags: bool
    # (depth, overflow, changed_from: inherited from Feedback)
    @property
    def frameset_ok(self) -> bool: ...
    @property
    def quirks(self) -> bool: ...
    # Namespace of the element the last start tag created, and whether it was pushed.
    @property
    def last_namespace(self) -> int: ...
    @property
    def last_pushed(self) -> bool: ...
    # Whether the last start tag created an element at all (ignored and merged tags do not),
    # and whether that element went into <head> after </head> (the "after head" rule).
    @property
    def last_inserted(self) -> bool: ...
    @property
    def last_in_head(self) -> bool: ...
    # Elements created and closed again since changed_from last started afresh (the implied
    # <head> before <body>, the <p> of a stray </p>, the <br> of </br>); their details are
    # C-level (transients).
    @property
    def n_transients(self) -> int: ...
    # Elements removed from the middle of the stack that stay ancestors in the tree (</form>).
    @property
    def n_kept_ancestors(self) -> int: ...
    # Stream offset of the character at which the last text changed the stack.
    @property
    def text_change_at(self) -> int: ...
    # Whether the last text changed the stack (then at text_change_at).
    @property
    def text_changed(self) -> bool: ...
    # Beyond max_depth: whether the last start tag's element is certainly a child of the
    # element the previous start tag opened there.
    @property
    def overflow_parent_known(self) -> bool: ...
    # The same as a namespace URI / bool.
    @property
    def last_start_tag_namespace(self) -> str: ...
    @property
    def last_start_tag_pushed(self) -> bool: ...
    # The current insertion mode, as the HTML standard names it.
    @property
    def insertion_mode(self) -> str: ...
    # Whether the lexer tells the simulator of the text that follows (it may change the stack).
    @property
    def reads_text(self) -> bool: ...
    # Names in the list of active formatting elements (None for a marker).
    @property
    def active_formatting_elements(self) -> list[str | None]: ...
    # The recorded stack of open elements, outermost first: (name, namespace) with namespace
    # "html", "svg" or "math"; with detail=True also the start tag's offset (-1 when implied)
    # and flags ("implied", "clone").
    def open_elements(
        self, *, detail: bool = False
    ) -> list[tuple[str, str]] | list[tuple[str, str, int, tuple[str, ...]]]: ...
