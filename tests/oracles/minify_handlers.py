"""The minifier as Python handlers: the oracle of the compiled one.

``recipes.minify`` runs as a compiled output stage (``htmlstream.rewriter.Minifier``) for the
options it compiles (``comments``, ``whitespace``, ``attributes``, ``optional_tags``,
``keep_comment``); its handler implementation (``recipes.minify._Handlers``, which still runs
``css`` and ``js``) is what the compiled stage must write byte for byte
(tests/test_recipes_minify.py).  This module gives a rewriter with those handlers.
"""

from __future__ import annotations

from typing import Any

from htmlstream import Rewriter
from htmlstream.recipes.minify import _Handlers

#: The options of the compiled stage, as handler options.
_DEFAULTS: dict[str, Any] = {
    "comments": True, "whitespace": True, "attributes": True, "optional_tags": False,
    "css": False, "js": False, "keep_comment": None,
}


def handlers_rewriter(*, scripting: bool = True, encoding: str = "utf-8",
                      **options: Any) -> Rewriter:
    """A rewriter that minifies with the recipe's handlers (``options``: ``minify()``'s)."""
    return Rewriter(scripting=scripting, encoding=encoding).use(
        _Handlers(**{**_DEFAULTS, **options}))
