# Type stub for the compiled rewriter sink (rewriter.pyx): handler dispatch (the open elements:
# elements.pyi, its base class; the output and its seams: output.pyi).

from collections.abc import Iterable
from typing import Any, final

from htmlstream._engine.elements import OpenElements
from htmlstream._engine.lexer import AttributePolicy, Lexer
from htmlstream._engine.matcher import Program
from htmlstream._engine.rules import Rules
from htmlstream._engine.treebuilder import TreeBuilderSimulator

# The lexer's attribute policy for rules whose selectors may read the attributes of ``tags``
# (Rules.attribute_tags) and the simulator's.
def attribute_policy_for(tags: Iterable[str]) -> AttributePolicy: ...

# Runs the handlers on the lexer's tokens; writes the output through an output.Output.
@final
class RewriteSink(OpenElements):
    def __init__(self, rules: Rules, encoding: str) -> None: ...
    # ``scanner``: scan past the attributes nobody reads (False: lex every tag in full).
    def attach(
        self, lx: Lexer, sim: TreeBuilderSimulator, scanner: bool = True, lazy: bool = True
    ) -> None: ...
    def set_encoding(self, encoding: str, program: Program, decoder: Any = None) -> None: ...
    # Stream offset up to which the input has been written to the output (or skipped).
    @property
    def consumed(self) -> int: ...
    # The output assembled so far (and forget it).
    def take(self) -> bytes: ...
    # After the lexer is closed: close what is still open, at the end of the input.
    def finish(self) -> None: ...
    def run_end_handlers(self) -> None: ...
