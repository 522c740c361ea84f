"""The ASCII lower-case rule of the HTML, CSS and Encoding standards, for Python strings.

Tag names, attribute names, CSS keywords and encoding labels are compared ASCII
case-insensitively: only A-Z change, so a Kelvin sign (U+212A) is not a ``k`` as ``str.lower``
would make it.  The compiled engine has the same rule for ``str`` in ``_engine/ascii.pxd``.
"""

from __future__ import annotations

from typing import Final

#: ``str.translate`` table: A-Z to a-z, nothing else.
ASCII_LOWER: Final = {c: c + 0x20 for c in range(0x41, 0x5B)}


def ascii_lower(text: str) -> str:
    """``text`` with ASCII upper-case letters lowered, every other character as it is."""
    return text.translate(ASCII_LOWER)
