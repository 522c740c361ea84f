# Type stub for the open elements of a rewriting sink (elements.pyx): the mirror of the tree
# builder's stack and its replay; rewriter.RewriteSink subclasses OpenElements.

from typing_extensions import disjoint_base

from htmlstream._engine.sink import DocumentSink

# Rewriter state of an open element that has work left for its end (C fields only).
@disjoint_base
class OpenElement: ...

# A document sink that keeps the open-element mirror (C methods only).
@disjoint_base
class OpenElements(DocumentSink): ...
