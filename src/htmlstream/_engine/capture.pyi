# Type stub for the captures of element content (capture.pyx); Captured is documented in
# htmlstream.units.

from typing import NamedTuple, final

KIND_NAMES: tuple[str, str, str]

class Captured(NamedTuple):
    kind: str
    value: str
    truncated: bool
    implicit: bool

# One capture in progress (C methods only: the rewriter's sink drives it).
@final
class Capture: ...
