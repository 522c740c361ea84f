# Type stub for the token sink that builds htmlstream.tokens objects (collector.pyx).

from typing_extensions import disjoint_base

from htmlstream._engine.lexer import TokenSink
from htmlstream.tokens import Token

# Appends a token object to ``tokens`` for every token the lexer finds.
@disjoint_base
class TokenCollector(TokenSink):
    tokens: list[Token]
    encoding: str
    def __init__(self, encoding: str = "utf-8") -> None: ...
    # The tokens collected so far (a new list is started).
    def take(self) -> list[Token]: ...
