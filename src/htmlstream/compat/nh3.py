"""``htmlstream.compat.nh3``: nh3's API (``clean``, ``Cleaner``, ``clean_text``, ``escape``,
``is_html`` and its constants) over :func:`htmlstream.sanitize`, so that an nh3 user changes one
import::

    from htmlstream.compat import nh3
    nh3.clean(html, tags={"b", "a"}, attributes={"a": {"href"}})

Every keyword of ``nh3.clean`` (nh3 0.3) is taken, with nh3's defaults, and mapped onto a
:class:`~htmlstream.Policy`: ``tags``, ``attributes`` (``"*"``: on every tag; without it, nh3's
generic ``lang`` and ``title`` stay), ``generic_attribute_prefixes`` (``"data-"`` is
``"data-*"`` in ``attributes["*"]``), ``clean_content_tags`` (``drop_content``),
``strip_comments`` (``allow_comments`` negated), ``link_rel``, ``tag_attribute_values``,
``set_tag_attribute_values`` (``set_attributes``), ``url_schemes``, ``allowed_classes``,
``filter_style_properties`` (``style_properties``, where ``attributes`` allows ``style``),
``url_relative`` and ``id_prefix``.  Contradictory keywords raise ``ValueError`` where nh3
raises (or panics).

The keywords of a call are compared by value with those of calls before: equal keywords (sets
and dicts built anew for every call included) reuse one policy and one compiled sanitizer,
from bounded caches.  Where the output differs from nh3's, see docs/guide/sanitize.md ("From
nh3"): mostly bytes that parse to the same tree, and a few deliberate differences (content of
``<noscript>``, ``<iframe>``, ``<svg>``... removed by default; URLs an ``attribute_filter`` or
``url_relative`` callable returns checked against ``url_schemes``; an emptied ``class``
attribute removed).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Literal, TypeAlias

from htmlstream.recipes.sanitize import (
    DEFAULT_ATTRIBUTES,
    DEFAULT_DROP_CONTENT,
    DEFAULT_TAGS,
    DEFAULT_URL_SCHEMES,
    Policy,
    sanitize_html,
)
from htmlstream.tokenizer import tokenize
from htmlstream.tokens import Text, Unparsed

__all__ = [
    "ALLOWED_ATTRIBUTES",
    "ALLOWED_TAGS",
    "ALLOWED_URL_SCHEMES",
    "CLEAN_CONTENT_TAGS",
    "Cleaner",
    "UrlRelative",
    "clean",
    "clean_text",
    "escape",
    "is_html",
]

#: nh3's default tags (ammonia's).
ALLOWED_TAGS: set[str] = set(DEFAULT_TAGS)
#: nh3's default attributes per tag (ammonia's; the generic ``lang`` and ``title`` apart).
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {
    tag: set(names) for tag, names in DEFAULT_ATTRIBUTES.items() if tag != "*"}
#: nh3's default URL schemes (ammonia's).
ALLOWED_URL_SCHEMES: set[str] = set(DEFAULT_URL_SCHEMES)
#: The tags removed with their content by default: htmlstream's (nh3: ``script`` and
#: ``style``; here also what a page never shows as such: ``noscript``, ``iframe``, ``svg``...).
CLEAN_CONTENT_TAGS: set[str] = set(DEFAULT_DROP_CONTENT)

_GENERIC = frozenset(DEFAULT_ATTRIBUTES["*"])

#: nh3's ``url_relative``.
UrlRelative: TypeAlias = (
    Literal["pass_through", "deny"]
    | tuple[Literal["rewrite_with_base"], str]
    | tuple[Literal["rewrite_with_root"], str, str]
    | Callable[[str], str | None]
)

_CACHE_SIZE = 256
_policies: OrderedDict[Hashable, Policy] = OrderedDict()
_lock = threading.Lock()


def _freeze(value: Any) -> Hashable:
    """A hashable value equal for equal keyword values (sets and dicts compared by value)."""
    if isinstance(value, Mapping):
        return ("map", frozenset((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset, AbstractSet, list)):
        return ("set", frozenset(value))
    if isinstance(value, tuple):
        return ("tuple", tuple(_freeze(v) for v in value))
    hashable: Hashable = value
    return hashable


def _policy(tags: AbstractSet[str] | None, clean_content_tags: AbstractSet[str] | None,
            attributes: Mapping[str, AbstractSet[str]] | None,
            attribute_filter: Callable[[str, str, str], str | None] | None,
            strip_comments: bool, link_rel: str | None,
            generic_attribute_prefixes: AbstractSet[str] | None,
            tag_attribute_values: Mapping[str, Mapping[str, AbstractSet[str]]] | None,
            set_tag_attribute_values: Mapping[str, Mapping[str, str]] | None,
            url_schemes: AbstractSet[str] | None,
            allowed_classes: Mapping[str, AbstractSet[str]] | None,
            filter_style_properties: AbstractSet[str] | None,
            url_relative: UrlRelative | None, id_prefix: str | None) -> Policy:
    """The :class:`Policy` of nh3's keywords (cached by their values)."""
    args = (tags, clean_content_tags, attributes, attribute_filter, strip_comments, link_rel,
            generic_attribute_prefixes, tag_attribute_values, set_tag_attribute_values,
            url_schemes, allowed_classes, filter_style_properties, url_relative, id_prefix)
    try:
        key: Hashable = tuple(_freeze(a) for a in args)
        hash(key)
    except TypeError:
        key = None          # (an unhashable value somewhere: no caching)
    if key is not None:
        with _lock:
            policy = _policies.get(key)
            if policy is not None:
                _policies.move_to_end(key)
                return policy
    policy = _make_policy(*args)
    if key is not None:
        with _lock:
            _policies[key] = policy
            if len(_policies) > _CACHE_SIZE:
                _policies.popitem(last=False)
    return policy


def _make_policy(tags: AbstractSet[str] | None, clean_content_tags: AbstractSet[str] | None,
                 attributes: Mapping[str, AbstractSet[str]] | None,
                 attribute_filter: Callable[[str, str, str], str | None] | None,
                 strip_comments: bool, link_rel: str | None,
                 generic_attribute_prefixes: AbstractSet[str] | None,
                 tag_attribute_values: Mapping[str, Mapping[str, AbstractSet[str]]] | None,
                 set_tag_attribute_values: Mapping[str, Mapping[str, str]] | None,
                 url_schemes: AbstractSet[str] | None,
                 allowed_classes: Mapping[str, AbstractSet[str]] | None,
                 filter_style_properties: AbstractSet[str] | None,
                 url_relative: UrlRelative | None, id_prefix: str | None) -> Policy:
    for name, value in (("tags", tags), ("clean_content_tags", clean_content_tags),
                        ("generic_attribute_prefixes", generic_attribute_prefixes),
                        ("url_schemes", url_schemes),
                        ("filter_style_properties", filter_style_properties)):
        if value is not None and (isinstance(value, str) or not isinstance(value, Iterable)):
            raise TypeError(f"{name} must be a set of str or None, not {type(value).__name__}")
    per_tag: dict[str, frozenset[str]] = {
        tag: frozenset(names) for tag, names in (
            DEFAULT_ATTRIBUTES if attributes is None else attributes).items()}
    if attributes is None or "*" not in attributes:
        per_tag["*"] = _GENERIC
    if generic_attribute_prefixes:
        if isinstance(generic_attribute_prefixes, str):
            raise TypeError("generic_attribute_prefixes must be a set of prefixes")
        per_tag["*"] = per_tag["*"] | {f"{p}*" for p in generic_attribute_prefixes}
    allowed = DEFAULT_TAGS if tags is None else frozenset(tags)
    drop = DEFAULT_DROP_CONTENT
    if clean_content_tags is not None:
        if isinstance(clean_content_tags, str):
            raise TypeError("clean_content_tags must be a set of tag names")
        # (a <template>'s content goes too, as in nh3, whose tree keeps it apart)
        drop = frozenset(clean_content_tags) | ({"template"} - allowed)
    style_allowed = any("style" in {n.lower() for n in names} for names in per_tag.values())
    return Policy(
        tags=allowed,
        attributes=per_tag,
        url_schemes=DEFAULT_URL_SCHEMES if url_schemes is None else frozenset(url_schemes),
        drop_content=drop,
        allow_comments=not strip_comments,
        link_rel=link_rel,
        set_attributes=set_tag_attribute_values or {},
        style_properties=frozenset(filter_style_properties)
        if filter_style_properties is not None and style_allowed else None,
        allowed_classes=allowed_classes or {},
        tag_attribute_values=tag_attribute_values or {},
        attribute_filter=attribute_filter,
        id_prefix=id_prefix,
        url_relative=url_relative,
    )


def _arguments(
    tags: AbstractSet[str] | None = None,
    clean_content_tags: AbstractSet[str] | None = None,
    attributes: Mapping[str, AbstractSet[str]] | None = None,
    attribute_filter: Callable[[str, str, str], str | None] | None = None,
    strip_comments: bool = True,
    link_rel: str | None = "noopener noreferrer",
    generic_attribute_prefixes: AbstractSet[str] | None = None,
    tag_attribute_values: Mapping[str, Mapping[str, AbstractSet[str]]] | None = None,
    set_tag_attribute_values: Mapping[str, Mapping[str, str]] | None = None,
    url_schemes: AbstractSet[str] | None = None,
    allowed_classes: Mapping[str, AbstractSet[str]] | None = None,
    filter_style_properties: AbstractSet[str] | None = None,
    url_relative: UrlRelative | None = None,
    id_prefix: str | None = None,
) -> tuple[Any, ...]:
    """The keywords of :func:`clean` as the positional arguments of :func:`_policy`."""
    return (tags, clean_content_tags, attributes, attribute_filter, strip_comments, link_rel,
            generic_attribute_prefixes, tag_attribute_values, set_tag_attribute_values,
            url_schemes, allowed_classes, filter_style_properties, url_relative, id_prefix)


def clean(
    html: str,
    tags: AbstractSet[str] | None = None,
    clean_content_tags: AbstractSet[str] | None = None,
    attributes: Mapping[str, AbstractSet[str]] | None = None,
    attribute_filter: Callable[[str, str, str], str | None] | None = None,
    strip_comments: bool = True,
    link_rel: str | None = "noopener noreferrer",
    generic_attribute_prefixes: AbstractSet[str] | None = None,
    tag_attribute_values: Mapping[str, Mapping[str, AbstractSet[str]]] | None = None,
    set_tag_attribute_values: Mapping[str, Mapping[str, str]] | None = None,
    url_schemes: AbstractSet[str] | None = None,
    allowed_classes: Mapping[str, AbstractSet[str]] | None = None,
    filter_style_properties: AbstractSet[str] | None = None,
    url_relative: UrlRelative | None = None,
    id_prefix: str | None = None,
) -> str:
    """Sanitize an HTML fragment, as ``nh3.clean`` (same keywords, same defaults)."""
    if not isinstance(html, str):
        raise TypeError(f"html must be a str, not {type(html).__name__}")
    policy = _policy(tags, clean_content_tags, attributes, attribute_filter, strip_comments,
                     link_rel, generic_attribute_prefixes, tag_attribute_values,
                     set_tag_attribute_values, url_schemes, allowed_classes,
                     filter_style_properties, url_relative, id_prefix)
    return sanitize_html(html, policy)


class Cleaner:
    """A reusable sanitizer, as ``nh3.Cleaner``: the keywords of :func:`clean`, checked once;
    ``Cleaner(...).clean(html)``."""

    def __init__(
        self,
        tags: AbstractSet[str] | None = None,
        clean_content_tags: AbstractSet[str] | None = None,
        attributes: Mapping[str, AbstractSet[str]] | None = None,
        attribute_filter: Callable[[str, str, str], str | None] | None = None,
        strip_comments: bool = True,
        link_rel: str | None = "noopener noreferrer",
        generic_attribute_prefixes: AbstractSet[str] | None = None,
        tag_attribute_values: Mapping[str, Mapping[str, AbstractSet[str]]] | None = None,
        set_tag_attribute_values: Mapping[str, Mapping[str, str]] | None = None,
        url_schemes: AbstractSet[str] | None = None,
        allowed_classes: Mapping[str, AbstractSet[str]] | None = None,
        filter_style_properties: AbstractSet[str] | None = None,
        url_relative: UrlRelative | None = None,
        id_prefix: str | None = None,
    ) -> None:
        #: The policy the keywords make.
        self.policy = _make_policy(
            tags, clean_content_tags, attributes, attribute_filter, strip_comments, link_rel,
            generic_attribute_prefixes, tag_attribute_values, set_tag_attribute_values,
            url_schemes, allowed_classes, filter_style_properties, url_relative, id_prefix)

    def clean(self, html: str) -> str:
        """Sanitize an HTML fragment with this cleaner's policy."""
        if not isinstance(html, str):
            raise TypeError(f"html must be a str, not {type(html).__name__}")
        return sanitize_html(html, self.policy)


#: What ``clean_text`` writes for each character it escapes (ammonia's ``clean_text``).
_TEXT_ESCAPES = str.maketrans({
    "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;", "`": "&grave;", "/": "&#47;",
    "&": "&amp;", "=": "&#61;", " ": "&#32;", "\t": "&#9;", "\n": "&#10;", "\x0c": "&#12;",
    "\r": "&#13;", "\0": "&#65533;",
})


def clean_text(html: str, tags: AbstractSet[str] | None = None) -> str:
    """``html`` as text, every character that means something to an HTML parser (and white
    space) written as a reference, as ``nh3.clean_text``; with ``tags``, ``html`` sanitized
    keeping those tags alone, without attributes (nor ``rel``)."""
    if not isinstance(html, str):
        raise TypeError(f"html must be a str, not {type(html).__name__}")
    if tags is None:
        return html.translate(_TEXT_ESCAPES)
    return sanitize_html(html, _policy(
        tags, None, {"*": frozenset()}, None, True, None, None, None, None, None, None, None,
        None, None))


def escape(html: str, tags: AbstractSet[str] | None = None) -> str:
    """:func:`clean_text` (nh3's preferred name for it)."""
    return clean_text(html, tags)


def is_html(html: str) -> bool:
    """Whether ``html`` holds any markup (a tag, comment or doctype, however broken: ``<g>``
    and ``Vec::<u8>::new()`` do; or a NUL), as ``nh3.is_html``."""
    if not isinstance(html, str):
        raise TypeError(f"html must be a str, not {type(html).__name__}")
    # (a tag the input leaves unfinished is no tag: the tokenizer drops it at the end; a NUL in
    # text counts, as in nh3, whose tokenizer gives it a token of its own)
    for token in tokenize(html):
        if isinstance(token, Text):
            if b"\0" in token.raw:
                return True
        elif not isinstance(token, Unparsed):
            return True
    return False
