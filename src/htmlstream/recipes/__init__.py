"""Recipes: reusable sets of handlers for the jobs Cloudflare built its streaming rewriter for.

A recipe is made by a factory here and added to a rewriter with :meth:`htmlstream.Rewriter.use`,
which calls its ``apply(rewriter)`` method: the recipe registers ordinary handlers, so recipes
combine with each other and with the user's own handlers in one pass.  A recipe object holds
only its configuration; what it must remember while a document streams (a carry buffer, whether
a script was already inserted, the document's CSP nonce) lives in the document's context
(``unit.context``, the mapping given as ``Rewriter.stream(context=...)``), under keys named
after the recipe.  So one recipe serves many rewriters, documents and threads at once.

Recipes are a layer on the public API: they import only public names of htmlstream, and the
core never imports them.
"""

from __future__ import annotations

from htmlstream.recipes.csp import CspNonce, csp_nonce, nonce_of
from htmlstream.recipes.emails import decode_emails, obfuscate_emails
from htmlstream.recipes.esi import Esi, EsiError, esi
from htmlstream.recipes.https import HttpsUpgrade, UpgradeReport, https_upgrade
from htmlstream.recipes.inject import Inject, inject
from htmlstream.recipes.markdown import Markdown, markdown
from htmlstream.recipes.minify import Minify, minify
from htmlstream.recipes.sanitize import Policy, Sanitize, sanitize, sanitize_html
from htmlstream.rewriter import Recipe

__all__ = [
    "CspNonce",
    "Esi",
    "EsiError",
    "HttpsUpgrade",
    "Inject",
    "Markdown",
    "Minify",
    "Policy",
    "Recipe",
    "Sanitize",
    "UpgradeReport",
    "csp_nonce",
    "decode_emails",
    "esi",
    "https_upgrade",
    "inject",
    "markdown",
    "minify",
    "nonce_of",
    "obfuscate_emails",
    "sanitize",
    "sanitize_html",
]
