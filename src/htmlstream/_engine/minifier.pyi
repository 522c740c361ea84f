# Type stub for the compiled HTML minifier (minifier.pyx): recipes.minify's output stage.

from collections.abc import Callable
from typing import final

from htmlstream._engine.elements import OpenElements

__all__ = ["Minifier"]

# An HTML minifier over a stream of bytes (feed(bytes) -> bytes, close() -> bytes): the
# compiled form of recipes.minify (comments, whitespace, attributes, optional tags).
@final
class Minifier(OpenElements):
    def __init__(
        self,
        encoding: str = "utf-8",
        *,
        comments: bool = True,
        whitespace: bool = True,
        attributes: bool = True,
        optional_tags: bool = False,
        keep_comment: Callable[[str], bool] | None = None,
        collapse_only: bool = True,
        scripting: bool = True,
        max_buffer_size: int = ...,
        max_attributes: int = ...,
    ) -> None: ...
    # Minify the next bytes; the output that is now decided.
    def feed(self, data: bytes | bytearray | memoryview) -> bytes: ...
    # The end of the input: the rest of the output.
    def close(self) -> bytes: ...
