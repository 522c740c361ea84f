"""``csp_nonce``: a Content-Security-Policy nonce on the document's scripts and styles.

The document's nonce lives in its context, ``context["csp_nonce"]``.  Where it comes from:

* an HTTP integration that must send the ``Content-Security-Policy`` header before the body
  calls :meth:`CspNonce.prepare` (or :func:`prepare`) to make the context with a fresh nonce,
  puts the nonce in the header, and hands the context to the stream
  (``rewriter.stream(context=ctx)``, ``ResponseRewrite(..., context=ctx)``): a recipe cannot
  run before the stream's first handler call, which may come after the headers have left;
* otherwise the recipe makes one (``secrets.token_urlsafe(18)``: 144 random bits, base64url)
  at the first of its handler calls for the document, and it is in the context from then on
  and after the stream closes.

Other recipes that insert scripts or styles (``inject``, the e-mail decoder) read the nonce with
:func:`nonce_of` and add it with :func:`with_nonce`; for the nonce to exist when they insert,
``use`` ``csp_nonce()`` before them or prepare the context (its handlers on ``head`` and
``body``, implied ones included, then run first at every point where they insert).

An existing ``<meta http-equiv="Content-Security-Policy">`` gets the nonce merged into its
``script-src`` and ``style-src`` (or ``default-src`` when those are absent) directives, by
:func:`merge_policy`.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, MutableMapping
from functools import lru_cache
from typing import Any

from htmlstream.errors import check_type
from htmlstream.units import DocumentEnd, Element

__all__ = ["CspNonce", "csp_nonce", "merge_policy", "new_nonce", "nonce_of", "prepare",
           "with_nonce"]

#: The context key of the document's nonce.
KEY = "csp_nonce"

_NONCE_OK = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")


def new_nonce() -> str:
    """A fresh nonce: 18 random bytes (``secrets``), base64url without padding (24 chars)."""
    return secrets.token_urlsafe(18)


def _check(nonce: str) -> str:
    if not isinstance(nonce, str) or not _NONCE_OK.fullmatch(nonce):
        raise ValueError(f"a CSP nonce is base64 (A-Z a-z 0-9 + / - _ and = at the end), "
                         f"not {nonce!r}")
    return nonce


def nonce_of(context: MutableMapping[str, Any]) -> str | None:
    """The document's CSP nonce (``context["csp_nonce"]``), or ``None`` when it has none.

    For recipes that insert scripts or styles: add it to what they insert
    (:func:`with_nonce`)."""
    check_type(context, Mapping, "nonce_of()", "context", "a mapping (the document's context)")
    nonce = context.get(KEY)
    return nonce if isinstance(nonce, str) else None


def prepare(context: MutableMapping[str, Any] | None = None,
            nonce: str | None = None) -> MutableMapping[str, Any]:
    """The context for a document with its nonce: ``context`` (default: a new dict) with
    ``context["csp_nonce"]`` set to ``nonce`` or a fresh one, unless it already has one.
    Returns the context, to pass as ``Rewriter.stream(context=...)``."""
    check_type(context, (MutableMapping, type(None)), "prepare()", "context",
               "a mutable mapping (the document's context) or None")
    check_type(nonce, (str, type(None)), "prepare()", "nonce", "a str or None")
    if context is None:
        context = {}
    if nonce_of(context) is None:
        context[KEY] = _check(nonce) if nonce is not None else new_nonce()
    return context


# A placeholder that no HTML holds, replaced by the nonce in the snippets given.
_PLACEHOLDER = "htmlstream-csp-nonce-7c1e0f9a"


@lru_cache(maxsize=256)
def _template(html: str) -> str:
    from htmlstream.rewriter import Rewriter

    def mark(el: Element) -> None:
        if not el.has_attribute("nonce"):
            el.set_attribute("nonce", _PLACEHOLDER)

    return Rewriter().on("script, style", element=mark).rewrite(html)


def with_nonce(html: str, nonce: str | None) -> str:
    """``html`` (a snippet a recipe inserts) with ``nonce="..."`` on each of its ``<script>``
    and ``<style>`` elements that has no nonce; ``html`` itself when ``nonce`` is None."""
    check_type(html, str, "with_nonce()", "html", "a str of HTML")
    check_type(nonce, (str, type(None)), "with_nonce()", "nonce", "a str or None")
    if nonce is None or ("<" not in html):
        return html
    template = _template(html)
    return template.replace(_PLACEHOLDER, nonce) if _PLACEHOLDER in template else html


_DIRECTIVES = {"script": ("script-src", "script-src-elem"),
               "style": ("style-src", "style-src-elem")}


def merge_policy(policy: str, nonce: str, kinds: tuple[str, ...] = ("script", "style")) -> str:
    """``policy`` (a CSP) with ``'nonce-NONCE'`` added to the directives that govern the
    ``kinds`` of elements (``"script"``, ``"style"``): ``script-src`` and ``script-src-elem``
    (``style-...``), or ``default-src`` when neither is there.  A directive is left alone when
    it allows every inline element anyway or none (``'unsafe-inline'``, ``'none'``: a nonce
    would disable ``'unsafe-inline'`` and lift ``'none'``), and so is a policy with no such
    directive (it does not restrict them)."""
    check_type(policy, str, "merge_policy()", "policy", "a str (a Content-Security-Policy)")
    check_type(nonce, str, "merge_policy()", "nonce", "a str")
    token = f"'nonce-{nonce}'"
    parts = policy.split(";")
    names = [p.strip().split(None, 1)[0].lower() if p.strip() else "" for p in parts]
    targets: set[int] = set()
    for kind in kinds:
        own = [i for i, name in enumerate(names) if name in _DIRECTIVES[kind]]
        if not own:
            own = [i for i, name in enumerate(names) if name == "default-src"][:1]
        targets.update(own)
    for i in sorted(targets):
        values = parts[i].split()
        lowered = [v.lower() for v in values[1:]]
        if "'unsafe-inline'" in lowered or "'none'" in lowered or token in values:
            continue
        stripped = parts[i].rstrip()
        parts[i] = stripped + " " + token + parts[i][len(stripped):]
    return ";".join(parts)


class CspNonce:
    """The ``csp_nonce`` recipe (made by :func:`csp_nonce`)."""

    def __init__(self, nonce: str | Callable[[], str] | None, select: str) -> None:
        self.nonce = nonce
        self.select = select
        from htmlstream.selectors import parse_selector
        parse_selector(select)   # a bad selector fails here, not at the first document
        lowered = select.lower()
        self.kinds = tuple(k for k in ("script", "style") if k in lowered) or ("script",)

    def _make(self) -> str:
        nonce = self.nonce
        if nonce is None:
            return new_nonce()
        return _check(nonce() if callable(nonce) else nonce)

    def prepare(self, context: MutableMapping[str, Any] | None = None
                ) -> MutableMapping[str, Any]:
        """The context for a document, with its nonce made now (see :func:`prepare`): for an
        integration that sends the nonce in a header before the body is rewritten."""
        if context is None:
            context = {}
        if nonce_of(context) is None:
            context[KEY] = self._make()
        return context

    def ensure(self, context: MutableMapping[str, Any]) -> str:
        """The document's nonce, made now if it has none yet."""
        nonce = context.get(KEY)
        if not isinstance(nonce, str):
            nonce = context[KEY] = self._make()
        return nonce

    def apply(self, rewriter: Any) -> None:
        """Register the handlers (``Rewriter.use`` calls this)."""
        # (the implied <head> and <body> too: where other recipes insert; tag names alone,
        # no combinator, which would make the engine follow every open element)
        rewriter.on("head, body", element=self.touch, implied=True)
        rewriter.on(self.select, element=self.element)
        rewriter.on("meta[http-equiv]", element=self.meta)
        rewriter.on_document(end=self.end)

    def touch(self, el: Element) -> None:
        """Make the nonce at the points where other recipes insert."""
        context = el.context
        if KEY not in context:
            self.ensure(context)

    def element(self, el: Element) -> None:
        """Put the nonce on a selected element (one with a nonce of its own keeps it)."""
        nonce = self.ensure(el.context)
        if not el.has_attribute("nonce"):
            el.set_attribute("nonce", nonce)

    def meta(self, el: Element) -> None:
        """Merge the nonce into a CSP ``<meta>``."""
        equiv = el.get_attribute("http-equiv")
        if equiv is None or equiv.strip().lower() != "content-security-policy":
            return
        content = el.get_attribute("content")
        nonce = self.ensure(el.context)
        if content:
            merged = merge_policy(content, nonce, self.kinds)
            if merged != content:
                el.set_attribute("content", merged)

    def end(self, end: DocumentEnd) -> None:
        """A document with no element still gets its nonce in the context."""
        self.ensure(end.context)


def csp_nonce(*, nonce: str | Callable[[], str] | None = None,
              select: str = "script, style") -> CspNonce:
    """A recipe that puts the document's CSP nonce on the elements ``select`` names (by
    default every ``<script>`` and ``<style>``) and merges it into a CSP ``<meta>``.

    Args:
        nonce: ``None`` (the default): a fresh random nonce per document, unless the context
            already has one (``context["csp_nonce"]``, put there by an integration: see
            :meth:`CspNonce.prepare`); a callable: called once per document for it (tests
            seed it); a str: that nonce for every document (tests only: a nonce that does not
            change protects nothing).
        select: the elements that get the nonce.  Every element it names is trusted by the
            browser: a ``<script>`` an attacker injected into the page (stored XSS) gets the
            nonce too, so narrow ``select`` to what the origin writes
            (``"script[src^='https://cdn.example/'], style.site"``, ``"head script"``).
    """
    if nonce is not None and not isinstance(nonce, str) and not callable(nonce):
        raise TypeError(f"csp_nonce(): nonce must be a str, a callable giving one, or None, not "
                        f"{type(nonce).__name__}")
    check_type(select, str, "csp_nonce()", "select", "a str (a CSS selector)")
    return CspNonce(nonce, select)
