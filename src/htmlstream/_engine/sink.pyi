# Type stub for the stream's sink interface (sink.pyx; RewriteSink implements it).

from typing_extensions import disjoint_base

from htmlstream._engine.lexer import TokenSink

@disjoint_base
class DocumentSink(TokenSink): ...
