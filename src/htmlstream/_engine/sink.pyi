# Type stub for the stream's sink interface (sink.pyx; RewriteSink implements it).

from htmlstream._engine.lexer import TokenSink

class DocumentSink(TokenSink): ...
