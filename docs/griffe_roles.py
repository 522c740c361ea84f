"""A griffe extension for the API reference: Sphinx roles in docstrings become code spans.

htmlstream's docstrings name other objects the Sphinx way (``:class:`~htmlstream.Rewriter```),
which Markdown would print as is; this turns each role into inline code (``Rewriter``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const|ref):`(~?)([^`]+)`")


def _replace(match: re.Match[str]) -> str:
    target = match.group(2)
    return "`" + (target.rsplit(".", 1)[-1] if match.group(1) else target) + "`"


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_replace, obj.docstring.value)
