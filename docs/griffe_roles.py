"""A griffe extension for the API reference: docstrings written for Sphinx and Cython, in Markdown.

- htmlstream's docstrings name other objects the Sphinx way (``:class:`~htmlstream.Rewriter```),
  which Markdown would print as is: each role becomes inline code (``Rewriter``).
- The compiled engine's docstrings start with the signature Cython embeds
  (``Element.set_attribute(self, name, value)``, the ``embedsignature`` directive in setup.py);
  the reference shows the typed signature of the ``.pyi`` stub instead, so that line goes, and so
  does the "method descriptor" label inspection gives the methods of compiled classes.
- A constant of a compiled module (``DEFAULT_MAX_BUFFER_SIZE``) inspected at run time carries
  the docstring of its type (``int``'s); that is not its documentation, so it goes.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const|ref):`(~?)([^`]+)`")
_EMBEDDED_SIGNATURE = re.compile(r"^(?:\w+\.)*\w+\(.*\)(?:\s*->\s*.+)?\n*")
_INSPECTION_LABELS = {"method descriptor", "getset descriptor", "builtin"}
_BUILTIN_DOCSTRINGS = {
    (t.__doc__ or "").strip() for t in (int, float, str, bytes, bool, tuple, list, dict, frozenset)
}


def _replace(match: re.Match[str]) -> str:
    target = match.group(2)
    return "`" + (target.rsplit(".", 1)[-1] if match.group(1) else target) + "`"


class SphinxRoles(griffe.Extension):
    """Rewrite every docstring griffe loads (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        obj.labels -= _INSPECTION_LABELS
        if obj.docstring is not None and obj.docstring.value.strip() in _BUILTIN_DOCSTRINGS:
            obj.docstring = None
        if obj.docstring is not None:
            value = _EMBEDDED_SIGNATURE.sub("", obj.docstring.value, count=1)
            obj.docstring.value = _ROLE.sub(_replace, value)
