"""``sanitize``: an allowlist HTML sanitizer for untrusted HTML, streaming.

The class of ammonia (Rust; ``nh3`` in Python) and of Selma (Ruby, on lol-html): what a
:class:`Policy` allows is kept, everything else goes, while the document streams past.  The
default policy is ammonia's (its tags, attributes, URL schemes, ``rel="noopener noreferrer"`` on
links, comments dropped); presets for a comment box, a rich-text editor and plain text
(:meth:`Policy.comment`, :meth:`Policy.rich_text`, :meth:`Policy.text_only`).

Safe by construction: **every byte of the output is written by the recipe**, from what the
tokenizer and the tree-builder simulator say the input is (input is copied only where it is
byte for byte what the recipe would write: plain text; and an allowed doctype, the delimiters
of a CDATA section in allowed SVG):

* an allowed element is written as a new start tag, ``<name a="v">``, with the allowed attributes
  only (values decoded, then escaped: ``&``, ``"``, ``<``, ``>``, CR; a ``style`` attribute's
  CSS filtered by :func:`safe_style`), and a new end tag ``</name>``
  where a browser ends it (its end tag, or where the tree builder closes it implicitly: a ``<p>``
  closed by a ``<div>``, anything open at the end of input); a void element gets no end tag, a
  foreign (SVG, MathML) element that closed itself ``/>``;
* any other element loses its tags and keeps its content, except the elements of
  ``drop_content`` (``script``, ``style``, ``template``, ``noscript``, ``iframe``, ``object``,
  ``embed``, ``svg`` and ``math`` unless allowed, ...), which go with everything in them, and
  SVG and MathML elements (when ``svg`` or ``math`` is allowed): their content without them
  would be read in another namespace, so they go with it too;
* text is decoded and escaped again (``&``, ``<``, ``>``, CR), whatever it was in the input (the
  raw text of a removed ``<title>``, ``<xmp>``, ``<noembed>`` is markup-looking text: it stays
  text); the content of an allowed ``<style>`` is kept as CSS with ``<`` written ``\\3c `` (no
  tag can start in it, however it is parsed); CDATA sections lose their text;
* comments are dropped (or, with ``allow_comments``, rewritten so that nothing ends them early);
  the doctype is dropped unless ``allow_doctype``;
* tags that a browser ignores (a stray ``</p>``, a ``<td>`` outside a table, a second
  ``<head>``) and bytes the tokenizer drops (a tag left unfinished at the end of input) are left
  out: the rewriter runs with ``ignored_tags="remove"``.

So whatever the simulator's reading of the input, the output is only allowed tags, escaped text
and, in allowed ``<style>`` elements, CSS without ``<``: parsed again, in any context, it gives
no element, attribute or URL scheme outside the policy.  Attributes named ``on*`` are never kept
(whatever the policy says), nor URL attributes (``href``, ``src``, ``action``, ``srcset``
candidates...) whose scheme, read as the URL Standard reads it (entities decoded, leading and
trailing spaces and control characters stripped, tabs and newlines removed, case folded), is not
in ``url_schemes``.  The output is well formed: every element it opens, it closes.  Elements
deeper than the simulator follows (1024 open elements) lose their tags (content kept).

ammonia's (and nh3's) other options are :class:`Policy` fields too: ``allowed_classes``,
``tag_attribute_values``, ``attribute_filter``, ``id_prefix`` and ``url_relative`` (relative
URLs denied, or resolved against a base as the URL Standard does: :func:`join_url`); they act
on the values of the attributes the allowlist keeps, in :meth:`Sanitize._start_tag_ext`, which
replaces the plain :meth:`Sanitize._start_tag` only for policies that set one of them.  Names
are namespace-aware: an SVG or MathML name counts only in its namespace (an ``<mglyph>`` outside
``<math>`` is an unknown HTML element).  A ``<selectedcontent>`` inside a ``<select>`` (the
customizable select browsers now parse) loses what the input put in it: a browser replaces it
with a clone of the selected option.  :mod:`htmlstream.compat.nh3` is nh3's API over this
recipe.  Policies compare by value; :func:`sanitize_html` keeps the compiled sanitizers of the
last 64 (least recently used out, thread-safe).

A rewriter using the recipe has its settings set for it: ``ignored_tags="remove"`` and
``transcode=True`` (UTF-16 input is rewritten as UTF-8 rather than passed through);
``on_limit="passthrough"`` and ``sniff=True``, which pass input through unsanitized, are refused
(``ValueError``); do not change them afterwards.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import lru_cache
from operator import methodcaller
from typing import Any, overload

from htmlstream.errors import check_type
from htmlstream.rewriter import Rewriter, TextFilter
from htmlstream.tokens import TextType
from htmlstream.units import HTML_NS, SVG_NS, Comment, Doctype, Element, EndTag, TextChunk

__all__ = [
    "CSS_FUNCTIONS",
    "DEFAULT_ATTRIBUTES",
    "DEFAULT_DROP_CONTENT",
    "DEFAULT_TAGS",
    "DEFAULT_URL_SCHEMES",
    "MATHML_ELEMENTS",
    "SVG_ELEMENTS",
    "URL_ATTRIBUTES",
    "AttributeFilter",
    "Policy",
    "Sanitize",
    "UrlRelative",
    "join_url",
    "safe_style",
    "sanitize",
    "sanitize_html",
]

# --------------------------------------------------------------------------- the policy

#: ammonia's default tags (``ammonia::Builder::default``, as nh3 gives them).
DEFAULT_TAGS: frozenset[str] = frozenset({
    "a", "abbr", "acronym", "area", "article", "aside", "b", "bdi", "bdo", "blockquote", "br",
    "caption", "center", "cite", "code", "col", "colgroup", "data", "dd", "del", "details",
    "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4",
    "h5", "h6", "header", "hgroup", "hr", "i", "img", "ins", "kbd", "li", "map", "mark", "nav",
    "ol", "p", "pre", "q", "rp", "rt", "rtc", "ruby", "s", "samp", "small", "span", "strike",
    "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "time", "tr",
    "tt", "u", "ul", "var", "wbr",
})

_TABLE_CELL_ALIGN = frozenset({"align", "char", "charoff"})

#: ammonia's default attributes: per tag, and under ``"*"`` those allowed on every tag.
DEFAULT_ATTRIBUTES: Mapping[str, frozenset[str]] = {
    "*": frozenset({"lang", "title"}),
    "a": frozenset({"href", "hreflang"}),
    "bdo": frozenset({"dir"}),
    "blockquote": frozenset({"cite"}),
    "col": _TABLE_CELL_ALIGN | {"span"},
    "colgroup": _TABLE_CELL_ALIGN | {"span"},
    "del": frozenset({"cite", "datetime"}),
    "hr": frozenset({"align", "size", "width"}),
    "img": frozenset({"align", "alt", "height", "src", "width"}),
    "ins": frozenset({"cite", "datetime"}),
    "ol": frozenset({"start"}),
    "q": frozenset({"cite"}),
    "table": _TABLE_CELL_ALIGN | {"summary"},
    "tbody": _TABLE_CELL_ALIGN,
    "td": _TABLE_CELL_ALIGN | {"colspan", "headers", "rowspan"},
    "tfoot": _TABLE_CELL_ALIGN,
    "th": _TABLE_CELL_ALIGN | {"colspan", "headers", "rowspan", "scope"},
    "thead": _TABLE_CELL_ALIGN,
    "tr": _TABLE_CELL_ALIGN,
}

#: ammonia's default URL schemes.
DEFAULT_URL_SCHEMES: frozenset[str] = frozenset({
    "bitcoin", "ftp", "ftps", "geo", "http", "https", "im", "irc", "ircs", "magnet", "mailto",
    "mms", "mx", "news", "nntp", "openpgp4fpr", "sip", "sms", "smsto", "ssh", "tel", "url",
    "webcal", "wtai", "xmpp",
})

#: Elements removed with their content unless allowed: ammonia's ``script`` and ``style``, and
#: what a page never shows as such (inert templates, fallbacks and embedded documents, foreign
#: content, frames), whose text would read as junk once their tags are gone.
DEFAULT_DROP_CONTENT: frozenset[str] = frozenset({
    "script", "style", "template", "noscript", "iframe", "object", "embed", "applet", "svg",
    "math", "noembed", "noframes", "frameset", "frame", "head", "title", "datalist",
})

#: Attributes whose value is a URL (checked against ``url_schemes``), on any element.
URL_ATTRIBUTES: frozenset[str] = frozenset({
    "href", "src", "cite", "action", "formaction", "background", "poster", "longdesc",
    "data", "codebase", "classid", "archive", "profile", "manifest", "icon", "dynsrc",
    "lowsrc", "usemap", "xlink:href", "itemtype", "itemid", "attributionsrc",
})
#: Attributes whose value is a list of URLs: image candidates (``srcset``), or separated by
#: white space (``ping``).
_SRCSET_ATTRIBUTES = frozenset({"srcset", "imagesrcset"})
_SPACED_URL_ATTRIBUTES = frozenset({"ping"})

#: Elements a policy cannot allow: scripts, ``<plaintext>`` (everything after it would be its
#: text) and the document's own structure (the sanitizer writes fragments), and the SVG
#: animation elements, which can set any attribute (``href`` to a ``javascript:`` URL).
FORBIDDEN_TAGS: frozenset[str] = frozenset({
    "script", "plaintext", "html", "head", "body", "frameset", "frame", "animate", "set",
    "animatemotion", "animatetransform", "discard", "handler", "listener",
})

#: HTML elements whose content is raw text in a browser: an allowed ``style`` keeps its CSS
#: (with ``<`` escaped); the others, if allowed, lose their content.
_RAW_TEXT_TAGS = frozenset({"style", "xmp", "iframe", "noembed", "noframes", "noscript"})

#: HTML void elements (no end tag).
_VOID = frozenset({
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
})

_ATTRIBUTE_NAME = re.compile(r"[a-zA-Z_:][-a-zA-Z0-9_:.]*\Z")
_CSS_PROPERTY = re.compile(r"-?-?[a-z][a-z0-9-]*\Z")
#: A tag or attribute name a selector can hold as it is.
_SIMPLE_NAME = re.compile(r"[a-z][-a-z0-9_]*\Z")


#: SVG element names (lower-cased): an allowed one counts only in the SVG namespace, inside an
#: allowed ``<svg>`` (those that are HTML names too, ``a``, ``style``, ``title``, ``font``...,
#: count in both).
SVG_ELEMENTS: frozenset[str] = frozenset({
    "a", "altglyph", "altglyphdef", "altglyphitem", "circle", "clippath", "color-profile",
    "cursor", "defs", "desc", "ellipse", "feblend", "fecolormatrix", "fecomponenttransfer",
    "fecomposite", "feconvolvematrix", "fediffuselighting", "fedisplacementmap",
    "fedistantlight", "fedropshadow", "feflood", "fefunca", "fefuncb", "fefuncg", "fefuncr",
    "fegaussianblur", "feimage", "femerge", "femergenode", "femorphology", "feoffset",
    "fepointlight", "fespecularlighting", "fespotlight", "fetile", "feturbulence", "filter",
    "font", "font-face", "font-face-format", "font-face-name", "font-face-src",
    "font-face-uri", "foreignobject", "g", "glyph", "glyphref", "hatch", "hatchpath", "hkern",
    "image", "line", "lineargradient", "marker", "mask", "mesh", "meshgradient", "meshpatch",
    "meshrow", "metadata", "missing-glyph", "mpath", "path", "pattern", "polygon", "polyline",
    "radialgradient", "rect", "script", "solidcolor", "stop", "style", "svg", "switch",
    "symbol", "text", "textpath", "title", "tref", "tspan", "unknown", "use", "view", "vkern",
})
#: MathML element names: an allowed one counts only in the MathML namespace, inside an allowed
#: ``<math>``.
MATHML_ELEMENTS: frozenset[str] = frozenset({
    "annotation", "annotation-xml", "maction", "maligngroup", "malignmark", "math", "menclose",
    "merror", "mfenced", "mfrac", "mglyph", "mi", "mlabeledtr", "mlongdiv", "mmultiscripts",
    "mn", "mo", "mover", "mpadded", "mphantom", "mprescripts", "mroot", "mrow", "ms",
    "mscarries", "mscarry", "msgroup", "msline", "mspace", "msqrt", "msrow", "mstack",
    "mstyle", "msub", "msubsup", "msup", "mtable", "mtd", "mtext", "mtr", "munder",
    "munderover", "none", "semantics",
})
#: The names of elements that exist in HTML too (an allowed one counts in HTML and in its
#: foreign namespace).
_SHARED_NAMES = frozenset({"a", "font", "image", "script", "style", "title"})
_FOREIGN_ONLY = (SVG_ELEMENTS | MATHML_ELEMENTS) - _SHARED_NAMES

#: Attributes whose value names elements by ``id`` (one, or a list separated by white space):
#: ``id_prefix`` is prefixed to each, as to ``id`` and to the fragment of a same-page link.
_IDREF_ATTRIBUTES = frozenset({
    "for", "headers", "list", "form", "aria-activedescendant", "aria-controls",
    "aria-describedby", "aria-details", "aria-errormessage", "aria-flowto", "aria-labelledby",
    "aria-owns",
})
_FRAGMENT_ATTRIBUTES = frozenset({"href", "xlink:href"})

#: How relative URLs are treated (``Policy.url_relative``): ``"pass_through"``, ``"deny"``,
#: ``("rewrite_with_base", base)``, ``("rewrite_with_root", root, path)``, or a callable.
UrlRelative = (str | tuple[str, str] | tuple[str, str, str] | Callable[[str], "str | None"])

#: ``attribute_filter(tag, attribute, value) -> str | None``.
AttributeFilter = Callable[[str, str, str], "str | None"]


#: Name sets as given -> lower-cased (and, for attribute names, checked): a policy built per
#: call with the same sets normalizes them with one lookup each (and holds the same frozensets,
#: which compare by identity first).
_NAMES: dict[frozenset[str], frozenset[str]] = {}
_ATTRIBUTE_NAMES: dict[frozenset[str], frozenset[str]] = {}


def _names(values: Iterable[str], what: str) -> frozenset[str]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise TypeError(f"Policy(): {what} must be a collection of names (a set of str), not "
                        f"{type(values).__name__}")
    key = values if type(values) is frozenset else frozenset(values)
    names = _NAMES.get(key)
    if names is None:
        names = frozenset(v.lower() for v in key)
        names = _NAMES.get(names, names)      # (the lower-cased set is its own)
        if len(_NAMES) >= 4096:
            _NAMES.clear()
        _NAMES[key] = _NAMES[names] = names
    return names


def _attribute_names(values: Iterable[str]) -> frozenset[str]:
    """Attribute names (``data-*``: a prefix), lower-cased and checked."""
    names = _names(values, "attributes")
    if names not in _ATTRIBUTE_NAMES:
        for name in names:
            if not _ATTRIBUTE_NAME.match(name.removesuffix("*")):
                raise ValueError(f"not an attribute name: {name!r}")
        if len(_ATTRIBUTE_NAMES) >= 4096:
            _ATTRIBUTE_NAMES.clear()
        _ATTRIBUTE_NAMES[names] = names
    return names


def _tag_map(values: Mapping[str, Iterable[str]], what: str) -> dict[str, frozenset[str]]:
    if not isinstance(values, Mapping):
        raise TypeError(f"{what} must be a mapping of tag names to collections")
    return {tag.lower(): _names(names, what) for tag, names in values.items()}


def _merge_sets(base: Mapping[str, AbstractSet[str]],
                more: Mapping[str, Iterable[str]] | None, *, lower: bool = True,
                subtract: bool = False) -> dict[str, frozenset[str]]:
    out = {tag: frozenset(names) for tag, names in base.items()}
    for tag, names in (more or {}).items():
        tag = tag.lower()
        if isinstance(names, str):
            raise TypeError("a collection of names, not a string")
        given = frozenset(n.lower() if lower else n for n in names)
        out[tag] = out.get(tag, frozenset()) - given if subtract else \
            out.get(tag, frozenset()) | given
    return out


def _merge_values(base: Mapping[str, Mapping[str, AbstractSet[str]]],
                  more: Mapping[str, Mapping[str, Iterable[str]]] | None, *,
                  subtract: bool = False) -> dict[str, dict[str, frozenset[str]]]:
    out: dict[str, dict[str, frozenset[str]]] = {
        tag: {attr: frozenset(v) for attr, v in values.items()} for tag, values in base.items()}
    for tag, per_attr in (more or {}).items():
        entry = out.setdefault(tag.lower(), {})
        for attr, values in per_attr.items():
            attr = attr.lower()
            given = _names(values, "tag_attribute_values")
            kept = entry.get(attr, frozenset()) - given if subtract else \
                entry.get(attr, frozenset()) | given
            if kept:
                entry[attr] = kept
            else:
                entry.pop(attr, None)
    return {tag: values for tag, values in out.items() if values}


class _Normalized(dict[str, Any]):
    """A policy's mapping once checked and normalized (read-only: a policy is immutable); a
    policy made from another one's (``dataclasses.replace``, per-call policies with the default
    attributes) takes it as it is."""

    def _read_only(self, *args: object, **kwargs: object) -> None:
        raise TypeError("a Policy's mappings are read-only: derive a new policy "
                        "(Policy.add, Policy.remove, dataclasses.replace)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]
    __ior__ = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Normalized, (dict(self),))


def _default_attributes() -> Mapping[str, AbstractSet[str]]:
    return _DEFAULT_ATTRIBUTES


def _empty() -> Any:
    return _EMPTY


#: The class names of ``allowed_classes`` (any but white space).
_CLASS_NAME = re.compile(r"[^ \t\n\x0c\r]+\Z")


@dataclass(frozen=True)
class Policy:
    """What :func:`sanitize` keeps.  ``Policy()`` is ammonia's default policy; the presets are
    :meth:`comment`, :meth:`rich_text` and :meth:`text_only`; :meth:`add` and :meth:`remove`
    derive a policy from another one by adding to or removing from its sets (ammonia's
    ``add_*``/``rm_*``), and :func:`dataclasses.replace` by replacing fields.

    Policies are compared by value: two equal policies share one compiled sanitizer (a bounded
    cache), so a policy built per call costs a dictionary lookup.  Every field is validated
    when the policy is made (``ValueError`` or ``TypeError``), contradictions included, as
    ammonia panics and nh3 raises.

    Args:
        tags: the elements kept (names, ASCII case-insensitive).  The others lose their tags
            and keep their content, except those of ``drop_content``.  An SVG or MathML name
            (:data:`SVG_ELEMENTS`, :data:`MATHML_ELEMENTS`) counts only in its own namespace,
            where the tree builder puts it (inside an allowed ``<svg>`` or ``<math>``): an
            ``<mglyph>`` outside ``<math>`` is an unknown HTML element, not allowed by
            ``"mglyph"``.  ``script``, ``plaintext``, ``html``, ``head``, ``body``,
            ``frameset``, ``frame`` and the SVG animation elements cannot be allowed.
        attributes: per tag, the attributes kept; under ``"*"``, those kept on every allowed
            tag.  A name ending in ``*`` allows a prefix (``"data-*"``: nh3's
            ``generic_attribute_prefixes``).  ``on*`` attributes are never kept.
        url_schemes: the schemes a URL attribute may have (``http``, ``mailto``...).
        relative_urls: whether URLs without a scheme (``/path``, ``page.html``, ``//host/``)
            are kept (``False``: ``url_relative="deny"``).
        drop_content: the elements removed with their content.  Left at its default, the
            allowed tags are taken out of it; given, it must not share a tag with ``tags``.
        allow_comments: keep comments (their text made safe: no ``--``, nothing that ends
            or opens one early).  nh3's ``strip_comments`` is its negation.
        allow_doctype: keep a doctype (as it was written).
        link_rel: the ``rel`` every allowed ``<a>`` gets (replacing its own), or ``None``;
            not with ``rel`` allowed on ``<a>`` by ``attributes``.
        set_attributes: per tag, attributes set on every allowed element of that tag
            (``{"a": {"target": "_blank"}}``), replacing its own (nh3's
            ``set_tag_attribute_values``).
        style_properties: the CSS properties a ``style`` attribute may keep (``{"color",
            "text-align"}``).  Given, ``style`` is allowed on every allowed element, unless
            ``attributes`` allows it somewhere: then there only (nh3's
            ``filter_style_properties``).  However allowed, a ``style`` attribute is never
            kept as written: only its declarations that :func:`safe_style` keeps (``None``: of
            any property).
        allowed_classes: per tag, the classes kept in its ``class`` attribute (the others are
            dropped, and the attribute with them once it is empty).  Not with ``class`` allowed
            on the tag (or on every tag) by ``attributes``.
        tag_attribute_values: per tag, attributes allowed only with one of the listed values
            (ASCII case-insensitive): ``{"div": {"role": {"alert", "status"}}}``.  Not with the
            attribute allowed on the tag by ``attributes``.
        attribute_filter: ``f(tag, attribute, value) -> str | None``, called for every
            attribute the rest of the policy keeps (with its value decoded): ``None`` removes
            the attribute, a string replaces its value.  The result is checked again as a URL
            (scheme, ``url_relative``) where the attribute is one, and escaped.  An exception
            it raises stops the sanitizing (it propagates).
        id_prefix: a string prefixed to every kept ``id`` (unless it starts with it already,
            so sanitizing twice prefixes once), to the fragment of same-page links
            (``href="#x"``) and to the ids named by ``for``, ``headers``, ``list``, ``form`` and
            the ``aria-*`` references.
        url_relative: what becomes of relative URLs in URL attributes: ``"pass_through"``
            (kept), ``"deny"`` (the attribute goes), ``("rewrite_with_base", base)`` (resolved
            against the absolute URL ``base`` as the URL Standard resolves them),
            ``("rewrite_with_root", root, path)`` (``/x`` resolved against ``root``, any other
            relative URL against ``root`` + ``path``), or a callable ``f(url) -> str | None``
            (``None`` removes the attribute; a string is checked again against
            ``url_schemes``).  ``None`` (the default): ``relative_urls`` decides.
    """

    tags: AbstractSet[str] = DEFAULT_TAGS
    attributes: Mapping[str, AbstractSet[str]] = field(
        default_factory=_default_attributes, hash=False)
    url_schemes: AbstractSet[str] = DEFAULT_URL_SCHEMES
    relative_urls: bool = True
    drop_content: AbstractSet[str] = DEFAULT_DROP_CONTENT
    allow_comments: bool = False
    allow_doctype: bool = False
    link_rel: str | None = "noopener noreferrer"
    set_attributes: Mapping[str, Mapping[str, str]] = field(default_factory=_empty, hash=False)
    style_properties: AbstractSet[str] | None = None
    allowed_classes: Mapping[str, AbstractSet[str]] = field(default_factory=_empty, hash=False)
    tag_attribute_values: Mapping[str, Mapping[str, AbstractSet[str]]] = field(
        default_factory=_empty, hash=False)
    attribute_filter: AttributeFilter | None = None
    id_prefix: str | None = None
    url_relative: UrlRelative | None = None

    def __post_init__(self) -> None:
        if self.style_properties is not None:
            props = _names(self.style_properties, "style_properties")
            for prop in props:
                if not _CSS_PROPERTY.match(prop):
                    raise ValueError(f"not a CSS property name: {prop!r}")
            object.__setattr__(self, "style_properties", props)
        tags = _names(self.tags, "tags")
        bad = sorted(tags & FORBIDDEN_TAGS)
        if bad:
            raise ValueError(f"a sanitizer policy cannot allow {', '.join(bad)}")
        attributes = self.attributes
        if type(attributes) is not _Normalized:
            if not isinstance(attributes, Mapping):
                raise TypeError(f"Policy(): attributes must be a mapping of tag names to sets of "
                                f"attribute names, not {type(attributes).__name__}")
            attributes = _Normalized({tag if tag.islower() else tag.lower():
                                      _attribute_names(names)
                                      for tag, names in attributes.items()})
        # (a _Normalized mapping is one a policy made: checked already)
        set_attributes = self.set_attributes
        if type(set_attributes) is not _Normalized:
            if not isinstance(set_attributes, Mapping):
                raise TypeError(f"Policy(): set_attributes must be a mapping of tag names to "
                                f"mappings, not {type(set_attributes).__name__}")
            set_attributes = _Normalized({
                tag.lower(): _Normalized({n.lower(): str(v) for n, v in values.items()})
                for tag, values in set_attributes.items()})
            for values in set_attributes.values():
                for name in values:
                    if not _ATTRIBUTE_NAME.match(name) or name.startswith("on"):
                        raise ValueError(f"set_attributes cannot set {name!r}")
        generic = attributes.get("*", frozenset())
        if self.link_rel is not None:
            if not isinstance(self.link_rel, str):
                raise TypeError("link_rel must be a string or None")
            if "rel" in generic or "rel" in attributes.get("a", ()) \
                    or "rel" in set_attributes.get("a", {}):
                raise ValueError("'rel' is allowed on <a> (or set on it) while link_rel sets "
                                 "it: give link_rel=None to keep or set <a rel> yourself")
        drop = self.drop_content
        if drop is not DEFAULT_DROP_CONTENT:      # (the default: less the allowed tags)
            drop = _names(drop, "drop_content")
            both = sorted(drop & tags)
            if both:
                raise ValueError(f"{', '.join(both)}: both allowed (tags) and removed with "
                                 "their content (drop_content)")
        classes = self.allowed_classes
        if type(classes) is not _Normalized:
            for names in _tag_map(classes, "allowed_classes").values():
                for name in names:
                    if not _CLASS_NAME.match(name):
                        raise ValueError(f"not a class name: {name!r}")
            # (class names are case-sensitive: kept as given)
            classes = _Normalized({tag.lower(): frozenset(names)
                                   for tag, names in classes.items()})
        for tag in classes:
            if "class" in generic or "class" in attributes.get(tag, ()):
                raise ValueError(f"allowed_classes for <{tag}> while attributes allows every "
                                 "class on it: leave 'class' out of attributes")
        if not isinstance(self.tag_attribute_values, Mapping):
            raise TypeError("tag_attribute_values must be a mapping of tag names to mappings")
        values_map: dict[str, dict[str, frozenset[str]]] = {}
        for tag, per_attr in self.tag_attribute_values.items():
            tag = tag.lower()
            if not isinstance(per_attr, Mapping):
                raise TypeError("tag_attribute_values maps a tag to {attribute: values}")
            entry = values_map[tag] = dict(values_map.get(tag, {}))
            for attr, allowed in per_attr.items():
                attr = attr.lower()
                if not _ATTRIBUTE_NAME.match(attr) or attr.startswith("on"):
                    raise ValueError(f"tag_attribute_values cannot allow {attr!r}")
                if attr in generic or attr in attributes.get(tag, ()):
                    raise ValueError(f"{attr!r} on <{tag}> is allowed with any value by "
                                     "attributes and with some by tag_attribute_values: "
                                     "leave it out of attributes")
                if tag == "a" and attr == "rel" and self.link_rel is not None:
                    raise ValueError("tag_attribute_values allows <a rel> while link_rel sets "
                                     "it: give link_rel=None")
                entry[attr] = _names(allowed, "tag_attribute_values")
        if type(self.tag_attribute_values) is _Normalized:
            values_map = self.tag_attribute_values
        else:
            values_map = _Normalized(values_map)
        if self.attribute_filter is not None and not callable(self.attribute_filter):
            raise TypeError("attribute_filter must be callable: f(tag, attribute, value)")
        if self.id_prefix is not None and (not isinstance(self.id_prefix, str)
                                           or not self.id_prefix):
            raise ValueError("id_prefix must be a non-empty string (or None)")
        schemes = _names(self.url_schemes, "url_schemes")
        url_relative = _check_url_relative(self.url_relative, schemes)
        if url_relative is not None and not self.relative_urls and url_relative != "deny":
            raise ValueError("relative_urls=False denies relative URLs, and url_relative says "
                             f"otherwise ({url_relative!r})")
        object.__setattr__(self, "tags", tags)
        object.__setattr__(self, "attributes", attributes)
        object.__setattr__(self, "url_schemes", schemes)
        object.__setattr__(self, "drop_content", drop)
        object.__setattr__(self, "set_attributes", set_attributes)
        object.__setattr__(self, "allowed_classes", classes)
        object.__setattr__(self, "tag_attribute_values", values_map)
        object.__setattr__(self, "url_relative", url_relative)

    @property
    def dropped(self) -> frozenset[str]:
        """The elements removed with their content: ``drop_content``, less the allowed tags
        when it is the default."""
        return frozenset(self.drop_content - self.tags)

    @property
    def relative(self) -> UrlRelative:
        """How relative URLs are treated, ``url_relative`` and ``relative_urls`` read together:
        ``"pass_through"``, ``"deny"``, a rewriting tuple or a callable."""
        if self.url_relative is not None:
            return self.url_relative
        return "pass_through" if self.relative_urls else "deny"

    def add(self, *, tags: Iterable[str] = (), attributes: Mapping[str, Iterable[str]] | None
            = None, url_schemes: Iterable[str] = (), drop_content: Iterable[str] = (),
            allowed_classes: Mapping[str, Iterable[str]] | None = None,
            tag_attribute_values: Mapping[str, Mapping[str, Iterable[str]]] | None = None,
            set_attributes: Mapping[str, Mapping[str, str]] | None = None) -> Policy:
        """A policy with these names added to this one's sets (ammonia's ``add_tags``,
        ``add_generic_attributes`` (``attributes={"*": ...}``), ``add_tag_attributes``,
        ``add_url_schemes``, ``add_clean_content_tags``, ``add_allowed_classes``,
        ``add_tag_attribute_values``, ``set_tag_attribute_value``).  Adding a tag takes it out
        of a default ``drop_content``; adding to ``drop_content`` takes it out of ``tags``."""
        new_tags = set(self.tags) | _names(tags, "tags")
        drop = _names(drop_content, "drop_content")
        new_tags -= drop
        drop_all: AbstractSet[str] = (
            DEFAULT_DROP_CONTENT if self.drop_content is DEFAULT_DROP_CONTENT and not drop
            else frozenset((self.dropped | drop) - new_tags))
        return replace(
            self, tags=frozenset(new_tags), drop_content=drop_all,
            url_schemes=self.url_schemes | _names(url_schemes, "url_schemes"),
            attributes=_merge_sets(self.attributes, attributes),
            allowed_classes=_merge_sets(self.allowed_classes, allowed_classes, lower=False),
            tag_attribute_values=_merge_values(self.tag_attribute_values,
                                               tag_attribute_values),
            set_attributes={**{t: dict(v) for t, v in self.set_attributes.items()},
                            **{t.lower(): {**self.set_attributes.get(t.lower(), {}), **v}
                               for t, v in (set_attributes or {}).items()}})

    def remove(self, *, tags: Iterable[str] = (), attributes: Mapping[str, Iterable[str]]
               | None = None, url_schemes: Iterable[str] = (),
               drop_content: Iterable[str] = (),
               allowed_classes: Mapping[str, Iterable[str]] | None = None,
               tag_attribute_values: Mapping[str, Mapping[str, Iterable[str]]] | None = None,
               set_attributes: Mapping[str, Iterable[str]] | None = None) -> Policy:
        """A policy with these names taken out of this one's sets (ammonia's ``rm_tags``,
        ``rm_generic_attributes`` (``attributes={"*": ...}``), ``rm_tag_attributes``,
        ``rm_url_schemes``, ``rm_clean_content_tags``, ``rm_allowed_classes``,
        ``rm_tag_attribute_values``, ``rm_set_tag_attribute_value``).  A tag taken out of
        ``tags`` that a default ``drop_content`` holds is dropped with its content again."""
        gone = _names(tags, "tags")
        drop: AbstractSet[str] = (
            DEFAULT_DROP_CONTENT if self.drop_content is DEFAULT_DROP_CONTENT
            else self.drop_content - _names(drop_content, "drop_content"))
        sets = {t: {n: v for n, v in values.items()
                    if n not in _names((set_attributes or {}).get(t, ()), "set_attributes")}
                for t, values in self.set_attributes.items()}
        return replace(
            self, tags=self.tags - gone, drop_content=drop,
            url_schemes=self.url_schemes - _names(url_schemes, "url_schemes"),
            attributes=_merge_sets(self.attributes, attributes, subtract=True),
            allowed_classes=_merge_sets(self.allowed_classes, allowed_classes, lower=False,
                                        subtract=True),
            tag_attribute_values=_merge_values(self.tag_attribute_values,
                                               tag_attribute_values, subtract=True),
            set_attributes={t: v for t, v in sets.items() if v})

    @classmethod
    def comment(cls) -> Policy:
        """A comment box: paragraphs, emphasis, code, quotes, lists and links (``http``,
        ``https``, ``mailto``), marked ``rel="nofollow noopener noreferrer ugc"``."""
        return cls(
            tags=frozenset({"a", "b", "strong", "i", "em", "u", "s", "del", "code", "pre",
                            "blockquote", "p", "br", "ul", "ol", "li", "sub", "sup"}),
            attributes={"a": frozenset({"href", "title"})},
            url_schemes=frozenset({"http", "https", "mailto"}),
            link_rel="nofollow noopener noreferrer ugc",
        )

    @classmethod
    def rich_text(cls) -> Policy:
        """A rich-text editor (a CMS): ammonia's default, plus ``class`` and ``dir`` on every
        element, ``tfoot``, ``picture`` and ``source``, responsive images (``srcset``,
        ``sizes``, ``loading``), ``<a target>`` and ``<a download>``."""
        attributes = dict(DEFAULT_ATTRIBUTES)
        attributes["*"] = attributes["*"] | {"class", "dir"}
        attributes["img"] = attributes["img"] | {"srcset", "sizes", "loading", "decoding"}
        attributes["a"] = attributes["a"] | {"target", "download"}
        attributes["source"] = frozenset({"srcset", "sizes", "media", "type", "width",
                                          "height"})
        attributes["td"] = attributes["td"] | {"valign"}
        attributes["th"] = attributes["th"] | {"valign"}
        return cls(tags=DEFAULT_TAGS | {"tfoot", "picture", "source"}, attributes=attributes)

    @classmethod
    def text_only(cls) -> Policy:
        """Plain text: no element is kept (their text is, but not that of ``drop_content``
        elements), no comment, no doctype."""
        return cls(tags=frozenset(), attributes={})




# --------------------------------------------------------------------------- escaping

# (escape_text, escape_attribute: a CR, which only a character reference can put in text or a
# value, as one: written raw, a browser's input stream makes it a LF)
#: Raw bytes after which a text chunk's raw form may differ from its text escaped again.
_TEXT_SPECIAL = re.compile(rb"[&<>\x00\r]")


def escape_text(text: str) -> str:
    """``text`` as HTML text: ``&``, ``<``, ``>`` and CR as references; NUL, which a browser
    drops from text, dropped."""
    # (str.replace, one pass per character, '&' first: str.translate with a mapping looks up
    # every character in Python, 20 times slower on a page's text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace("\0", "").replace("\r", "&#13;")


def escape_attribute(value: str) -> str:
    """``value`` for a double-quoted attribute value (``&``, ``"``, ``<``, ``>`` and CR as
    references)."""
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;") \
        .replace(">", "&gt;").replace("\r", "&#13;")


def safe_comment(text: str) -> str:
    """A comment's text that nothing ends or opens early, and that stays as it is when made
    safe again: no ``--`` (so no ``-->``, ``--!>`` or ``<!--``), no ``>`` or ``-`` at the start,
    no ``-`` at the end."""
    while "--" in text:
        text = text.replace("--", "-")
    return text.lstrip(">-").rstrip("-")


# --------------------------------------------------------------------------- style

#: The CSS functions a ``style`` value may call (colours and arithmetic): no ``url()``,
#: ``image()``, ``image-set()``, ``element()``, ``attr()``, ``expression()``...
CSS_FUNCTIONS: frozenset[str] = frozenset({
    "rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color", "color-mix",
    "calc", "min", "max", "clamp", "var",
})
# (a value: ASCII letters, digits, white space, quotes and #%.,+-!/*() only: no escape, no
# ':', ';', '<', '&', '@', braces or control characters)
_CSS_VALUE = re.compile(r"[A-Za-z0-9 \t\n\x0c\r#%.,+\-!/*()'\"]+\Z")
_CSS_CALL = re.compile(r"([A-Za-z0-9_-]*)[ \t\n\x0c\r]*\(")
_CSS_DANGER = re.compile(r"\b(?:javascript|vbscript|expression|behavior|binding|url)\b|/\*|\*/",
                         re.IGNORECASE)
_CSS_SPACE = re.compile(r"[ \t\n\x0c\r]+")
_WHITESPACE = " \t\n\x0c\r"


def safe_style(value: str, properties: AbstractSet[str] | None = None) -> str:
    """The declarations of a ``style`` attribute's (decoded) value that are kept, written
    ``name: value; name: value`` (empty: none).  A declaration is kept when its property (ASCII
    case-insensitive) is in ``properties`` (``None``: any) and its value is plain: ASCII
    letters, digits, spaces, quotes (balanced) and ``#%.,+-!/*()``, calling only the functions
    of :data:`CSS_FUNCTIONS`, with no word ``url``, ``expression``, ``javascript``,
    ``vbscript``, ``behavior`` or ``binding`` and no comment in it.  So no escape, ``url()``,
    ``expression()``, ``javascript:`` or ``@import`` gets through, however it is written; a
    value that needs one of them goes.  ``safe_style(safe_style(v)) == safe_style(v)``."""
    check_type(value, str, "safe_style()", "value", "a str (a style attribute's value)")
    kept = []
    for declaration in value.split(";"):
        name, colon, val = declaration.partition(":")
        if not colon:
            continue
        name = name.strip(_WHITESPACE).lower()
        val = _CSS_SPACE.sub(" ", val).strip(" ")
        if not val or not _CSS_PROPERTY.match(name) or \
                (properties is not None and name not in properties):
            continue
        if not _CSS_VALUE.match(val) or _CSS_DANGER.search(val) or \
                val.count('"') % 2 or val.count("'") % 2:
            continue
        if any(f.lower() not in CSS_FUNCTIONS for f in _CSS_CALL.findall(val) if f):
            continue
        kept.append(f"{name}: {val}")
    return "; ".join(kept)


# --------------------------------------------------------------------------- URLs

_STRIP = "".join(chr(c) for c in range(0x21))
_TAB_NL = re.compile(r"[\t\n\r]")
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.\-]*):")


def url_scheme(value: str) -> str | None:
    """The scheme of the URL ``value`` (ASCII lower-cased) as a browser reads it: leading and
    trailing C0 controls and spaces stripped, ASCII tabs and newlines removed; ``None`` for a
    URL with no scheme (relative)."""
    first = value[:1]
    if first > " " and not (first.isascii() and first.isalpha()):
        return None     # (no scheme starts with it, and it is not stripped: "#x", "/x")
    colon = value.find(":")
    if colon < 0:
        return None     # (no scheme without a colon)
    if first > " ":
        name = value[:colon]
        if name.isascii() and name.isalnum():
            # (letters and digits from the very start: what the full reading gives too)
            return name.lower()
    return _url_scheme(value)


@lru_cache(maxsize=1024)
def _url_scheme(value: str) -> str | None:
    value = _TAB_NL.sub("", value.strip(_STRIP))
    match = _SCHEME.match(value)
    return None if match is None else match.group(1).lower()


def _srcset_urls(value: str) -> list[str]:
    """The URLs of an image candidate list (``srcset``): each candidate's first word (a
    candidate's URL may contain commas: it ends at white space)."""
    return [url for url, _ in _srcset_candidates(value)]


def _srcset_candidates(value: str) -> list[tuple[str, str]]:
    """The candidates of an image candidate list (``srcset``): (URL, descriptors), as the
    HTML Standard's algorithm splits them."""
    candidates: list[tuple[str, str]] = []
    rest = value
    while True:
        rest = rest.lstrip(" \t\n\r\f,")
        if not rest:
            return candidates
        end = 0
        while end < len(rest) and rest[end] not in " \t\n\r\f":
            end += 1
        url = rest[:end]
        rest = rest[end:]
        descriptors = ""
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            # the descriptors, up to the next comma outside parentheses
            depth = 0
            i = 0
            while i < len(rest):
                c = rest[i]
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth = max(0, depth - 1)
                elif c == "," and depth == 0:
                    break
                i += 1
            descriptors = " ".join(rest[:i].split())
            rest = rest[i:]
        candidates.append((url, descriptors))


# --------------------------------------------------------------------------- relative URLs

#: The special schemes of the URL Standard and their default ports.
_SPECIAL_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21",
                  "file": ""}
_C0_SET = frozenset(chr(c) for c in range(0x20)) | {"\x7f"}
_FRAGMENT_SET = _C0_SET | set(' "<>`')
_QUERY_SET = _C0_SET | set(' "#<>')
_SPECIAL_QUERY_SET = _QUERY_SET | {"'"}
_PATH_SET = _QUERY_SET | set("?`{}")
_USERINFO_SET = _PATH_SET | set("/:;=@[\\]|")
_FORBIDDEN_HOST = frozenset(" #%/:<>?@[\\]^|\t\n\r\0")


def _percent_encode(text: str, unsafe: AbstractSet[str]) -> str:
    """``text`` with the characters of ``unsafe`` and every non-ASCII one written as
    percent-encoded UTF-8 (the URL Standard's percent-encode sets)."""
    if text.isascii() and not any(c in unsafe for c in text):
        return text
    return "".join(c if c.isascii() and c not in unsafe else
                   "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
                   for c in text)


@dataclass(frozen=True)
class _Base:
    """An absolute, hierarchical URL that relative URLs are resolved against."""
    scheme: str
    authority: str
    path: str
    query: str | None
    fragment: str | None = None

    @property
    def special(self) -> bool:
        return self.scheme in _SPECIAL_PORTS

    def __str__(self) -> str:
        return f"{self.scheme}://{self.authority}{self.path}" + (
            "" if self.query is None else f"?{self.query}") + (
            "" if self.fragment is None else f"#{self.fragment}")


def _authority(text: str, scheme: str) -> str | None:
    """The authority ``text`` as the URL Standard writes it (host ASCII-lower-cased or made
    IDNA, default port left out), or None where its parser fails."""
    userinfo, at, hostport = text.rpartition("@")
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            return None
        host, port = hostport[:close + 1].lower(), hostport[close + 1:]
        if port and not port.startswith(":"):
            return None
        port = port[1:]
    else:
        host, _, port = hostport.partition(":")
        if not host.isascii():
            try:
                host = host.encode("idna").decode("ascii")
            except UnicodeError:
                return None
        host = host.lower()
        if any(c in _FORBIDDEN_HOST for c in host):
            return None
    if not host and scheme in _SPECIAL_PORTS and scheme != "file":
        return None
    if port:
        if not (port.isascii() and port.isdigit()) or int(port) > 65535:
            return None
        port = str(int(port))
        if port == _SPECIAL_PORTS.get(scheme):
            port = ""
    user, colon, password = userinfo.partition(":")
    user = _percent_encode(user, _USERINFO_SET) + (
        ":" + _percent_encode(password, _USERINFO_SET) if colon and password else "") + "@" \
        if at and (user or password) else ""
    return user + host + (f":{port}" if port else "")


def _split_rest(text: str) -> tuple[str, str | None, str | None]:
    fragment = query = None
    hash_at = text.find("#")
    if hash_at >= 0:
        text, fragment = text[:hash_at], text[hash_at + 1:]
    mark = text.find("?")
    if mark >= 0:
        text, query = text[:mark], text[mark + 1:]
    return text, query, fragment


def _normalize_path(path: str) -> str:
    """An absolute path with its dot segments (``.``, ``..``, ``%2e``...) resolved and its
    characters percent-encoded, as the URL Standard's path state leaves it."""
    out: list[str] = []
    segments = path[1:].split("/")
    last = len(segments) - 1
    for i, segment in enumerate(segments):
        low = segment.lower()
        if low in ("..", ".%2e", "%2e.", "%2e%2e"):
            if out:
                out.pop()
            if i == last:
                out.append("")
        elif low in (".", "%2e"):
            if i == last:
                out.append("")
        else:
            out.append(_percent_encode(segment, _PATH_SET))
    return "/" + "/".join(out)


@lru_cache(maxsize=64)
def _parse_base(url: str) -> _Base:
    """``url`` as a base for relative URLs (``ValueError`` unless it is absolute and
    hierarchical, ``scheme://host/...``)."""
    text = _TAB_NL.sub("", url.strip(_STRIP))
    match = _SCHEME.match(text)
    if match is None:
        raise ValueError(f"not an absolute URL: {url!r}")
    scheme = match.group(1).lower()
    rest = text[match.end():]
    if scheme in _SPECIAL_PORTS:
        rest = _backslashes(rest)
    if not rest.startswith("//"):
        raise ValueError(f"not a hierarchical URL (scheme://host/path): {url!r}")
    joined = _resolve(_Base(scheme, "", "/", None), rest)
    if joined is None:
        raise ValueError(f"not a valid URL: {url!r}")
    return replace(joined, fragment=None)


def _backslashes(text: str) -> str:
    """A special URL's ``\\`` before its query or fragment read as ``/``."""
    cut = len(text)
    for mark in "?#":
        at = text.find(mark)
        if 0 <= at < cut:
            cut = at
    return text[:cut].replace("\\", "/") + text[cut:]


def _resolve(base: _Base, relative: str) -> _Base | None:
    """The relative URL ``relative`` (stripped, ``\\`` read) resolved against ``base``."""
    special = base.special
    if relative.startswith("//"):
        rest = relative[2:].lstrip("/") if special else relative[2:]
        end = len(rest)
        for mark in "/?#":
            at = rest.find(mark)
            if 0 <= at < end:
                end = at
        authority = _authority(rest[:end], base.scheme)
        if authority is None:
            return None
        path, query, fragment = _split_rest(rest[end:])
        path = _normalize_path(path) if path else ("/" if special else "")
    else:
        authority = base.authority
        path, query, fragment = _split_rest(relative)
        if path.startswith("/"):
            path = _normalize_path(path)
        elif path:
            path = _normalize_path(base.path[:base.path.rfind("/") + 1] + path)
        else:
            path = base.path
            if query is None:
                query = base.query
    if query is not None:
        query = _percent_encode(query, _SPECIAL_QUERY_SET if special else _QUERY_SET)
    if fragment is not None:
        fragment = _percent_encode(fragment, _FRAGMENT_SET)
    return _Base(base.scheme, authority, path, query, fragment)


def join_url(base: str, relative: str) -> str | None:
    """The relative URL ``relative`` resolved against the absolute URL ``base`` as the URL
    Standard's basic URL parser resolves it (the base's scheme and host for ``//`` URLs' lack
    of one; dot segments resolved; ``\\`` read as ``/`` in special URLs; characters
    percent-encoded as the URL Standard's sets say), serialized; ``None`` where that parser
    fails (a bad port or host)."""
    check_type(base, str, "join_url()", "base", "a str (an absolute URL)")
    check_type(relative, str, "join_url()", "relative", "a str (a URL)")
    text = _TAB_NL.sub("", relative.strip(_STRIP))
    parsed = _parse_base(base)
    if parsed.special:
        text = _backslashes(text)
    joined = _resolve(parsed, text)
    return None if joined is None else str(joined)


def _check_url_relative(value: object, schemes: AbstractSet[str]) -> UrlRelative | None:
    """``Policy.url_relative`` checked (``ValueError``/``TypeError``) and normalized."""
    if value is None or callable(value):
        return value
    if isinstance(value, str):
        if value not in ("pass_through", "deny"):
            raise ValueError(f"url_relative: {value!r} is neither 'pass_through' nor 'deny'")
        return value
    if isinstance(value, (tuple, list)) and value and value[0] in (
            "rewrite_with_base", "rewrite_with_root"):
        kind = value[0]
        size = 2 if kind == "rewrite_with_base" else 3
        if len(value) != size or not all(isinstance(v, str) for v in value):
            raise ValueError(f"url_relative: ({kind!r}, ...) takes {size - 1} strings")
        base = _parse_base(value[1])
        if base.scheme not in schemes:
            raise ValueError(f"url_relative: the base {value[1]!r} has a scheme "
                             f"({base.scheme}) that url_schemes does not allow")
        return tuple(value)
    raise TypeError("url_relative: 'pass_through', 'deny', ('rewrite_with_base', base), "
                    "('rewrite_with_root', root, path) or a callable")


_EMPTY = _Normalized()
_DEFAULT_ATTRIBUTES = _Normalized({tag: frozenset(names)
                                   for tag, names in DEFAULT_ATTRIBUTES.items()})

#: The default policy (ammonia's).
DEFAULT_POLICY = Policy()


# --------------------------------------------------------------------------- the recipe

_RAW_KEY = "sanitize.raw"
# (plain ints: compared once per text chunk)
_RCDATA = int(TextType.RCDATA)          # (DATA is 0, RCDATA 1: "<= _RCDATA" is either)
_CDATA_SECTION = int(TextType.CDATA_SECTION)


class Sanitize:
    """The sanitizer recipe (made by :func:`sanitize`): ``Rewriter().use(recipes.sanitize())``.

    Its per-document state (whether the raw text being read is that of an allowed ``<style>``)
    is the context key ``"sanitize.raw"``."""

    def __init__(self, policy: Policy | None = None) -> None:
        policy = DEFAULT_POLICY if policy is None else policy
        if not isinstance(policy, Policy):
            raise TypeError(f"policy must be a Policy, not {type(policy).__name__}")
        #: The policy it applies.
        self.policy = policy
        self._tags = policy.tags
        # the allowed names per namespace: an SVG or MathML name counts only in its own
        self._html_tags = policy.tags - _FOREIGN_ONLY
        self._svg_tags = policy.tags & SVG_ELEMENTS
        self._math_tags = policy.tags & MATHML_ELEMENTS
        self._drop = policy.dropped
        self._generic = policy.attributes.get("*", frozenset())
        self._schemes = policy.url_schemes
        self._relative_mode = policy.relative
        self._relative = self._relative_mode != "deny"
        self._raw_tags = policy.tags & _RAW_TEXT_TAGS
        self._foreign = bool(policy.tags & {"svg", "math"})
        # per allowed HTML tag that gets no attribute of the policy's own: its start tag with
        # no attribute, as text and bytes (not <selectedcontent>, which loses its content in
        # a <select>)
        self._plain = {
            key: f"<{key}>".encode("ascii") for key in self._html_tags
            if key.isascii() and key not in policy.set_attributes and key != "selectedcontent"
            and not (key == "a" and policy.link_rel is not None)}
        # style allowed on every element by style_properties, unless attributes allows it
        # somewhere (then there only)
        self._style_everywhere = policy.style_properties is not None and not any(
            "style" in names for names in policy.attributes.values())
        self._values = policy.tag_attribute_values
        self._classes = policy.allowed_classes
        self._filter = policy.attribute_filter
        self._id_prefix = policy.id_prefix
        self._rewrites = self._relative_mode not in ("pass_through", "deny")
        if self._values or self._classes or self._filter is not None or \
                self._id_prefix is not None or self._rewrites:
            self._start_tag = self._start_tag_ext  # type: ignore[method-assign]
        # per tag: (exact names, prefixes), generic included; filled on first use
        self._allowed: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}
        # per tag: an expression finding the name of an attribute (or prefix) it may keep in
        # its lower-cased start tag (None: none can be kept); filled on first use
        self._needles: dict[str, re.Pattern[bytes] | None] = {}
        # per tag: _start_tag's reading of the policy (the exact names it may keep as they
        # are, not on* nor set by the policy; prefixes; the names the policy sets itself; its
        # own attributes as written); filled on first use
        self._specs: dict[str, tuple[frozenset[str], tuple[str, ...], frozenset[str], str]] = {}
        # per DOM name of the common elements (allowed, HTML, not raw text): their plain start
        # tag (or None), their end tag and their _needles; filled on first use
        self._plans: dict[str, tuple[bytes | None, str | bytes, re.Pattern[bytes] | None]] = {}
        self._set = policy.set_attributes
        self._link_rel = policy.link_rel
        self._rel_part = "" if policy.link_rel is None else \
            f' rel="{escape_attribute(policy.link_rel)}"'
        self._comments = policy.allow_comments
        self._doctype = policy.allow_doctype
        self._style_props = policy.style_properties

    def apply(self, rewriter: Rewriter, /) -> None:
        """Register the sanitizer on ``rewriter`` (and set the settings it needs)."""
        if rewriter.on_limit != "raise":
            raise ValueError("the sanitizer needs on_limit='raise': 'passthrough' would pass "
                             "the rest of a document through unsanitized")
        if rewriter.sniff:
            raise ValueError("the sanitizer needs sniff=False: input that does not look like "
                             "HTML would pass through unsanitized")
        rewriter.ignored_tags = "remove"
        rewriter.transcode = True
        for selector, handler in self._element_rules():
            rewriter.on(selector, element=handler)
        rewriter.on_document(text=self._text, comments=self._comment, doctype=self._doctype_,
                             text_filter=self._text_filter())

    # ------------------------------------------------------------------ elements

    def _element_rules(self) -> list[tuple[str, Callable[[Element], object]]]:
        """The element rules: :meth:`_fast_rules`, and :meth:`_element` for the others (or,
        when every name of the policy can be written in a selector and no foreign element
        reaches a handler, :meth:`_removal_rules` and :meth:`_element` for what is left)."""
        fast = self._fast_rules()
        removal = self._removal_rules(fast)
        if removal is None:
            return [*fast, (f"*:not({', '.join(sel for sel, _ in fast)})" if fast else "*",
                            self._element)]
        return [*fast, *removal]

    def _removal_rules(self, fast: list[tuple[str, Callable[[Element], object]]]
                       ) -> list[tuple[str, Callable[[Element], object]]] | None:
        """The elements removed without a Python call: those of ``drop_content`` (a rule
        whose handler is ``methodcaller("remove")``) and those neither allowed nor dropped
        (``methodcaller("remove_and_keep_content")``), as :meth:`_element` would remove them;
        and the rule of :meth:`_element` for the rest (allowed elements the fast rules leave,
        ``<html>`` and ``<body>``, which may be merged tags, and ``<image>``, an ``<img>``).
        ``None`` unless SVG and MathML are dropped (a type selector matches a foreign element
        only in its own case: ``clippath`` is no ``<clipPath>``) and every name is simple."""
        special = {"html", "body", "image", "selectedcontent"}
        tags = self._html_tags
        if self._foreign or not {"svg", "math"} <= self._drop or not all(
                _SIMPLE_NAME.match(n) for n in tags | self._drop):
            return None
        element: list[str] = sorted(special)
        fast_keys = {sel.split(":", 1)[0] for sel, _ in fast}
        for key in sorted(tags - special):
            if key in fast_keys:
                # (the complement of its fast rule: the attributes it may keep)
                element.extend(f"{key}[{n}]" for n in sorted(self._attributes_for(key)[0]))
            else:
                element.append(key)
        rules: list[tuple[str, Callable[[Element], object]]] = []
        drop = sorted(self._drop - special)
        if drop:
            rules.append((", ".join(drop), methodcaller("remove")))
        rules.append((f"*:not({', '.join(sorted(tags | self._drop | special))})",
                      methodcaller("remove_and_keep_content")))
        rules.append((", ".join(element), self._element))
        return rules

    def _fast_rules(self) -> list[tuple[str, Callable[[Element], object]]]:
        """The elements written plain, without a Python call: per allowed HTML tag that gets
        no attribute of the policy's own and is not raw text, a rule for its elements with
        none of the attributes it may keep (``p:not([lang], [title])``), whose handler writes
        ``<p>``...``</p>`` in place of its tags (``Element.replace_tags``, as
        :meth:`_element` would).  Not with SVG or MathML allowed (a type selector matches in
        every namespace), nor for tags allowing attribute prefixes."""
        if self._foreign:
            return []
        rules: list[tuple[str, Callable[[Element], object]]] = []
        for key, plain in sorted(self._plain.items()):
            exact, prefixes = self._attributes_for(key)
            if prefixes or key in self._raw_tags or key == "image" or \
                    not _SIMPLE_NAME.match(key) or not all(_SIMPLE_NAME.match(n) for n in exact):
                continue        # (<image>: the tree builder makes it an <img>)
            selector = f"{key}:not({', '.join(f'[{n}]' for n in sorted(exact))})" if exact \
                else key
            end = _end_tag(key)
            handler = methodcaller("replace_tags", plain) if key in _VOID else \
                methodcaller("replace_tags", plain, end)
            rules.append((selector, handler))
        return rules

    def _attributes_for(self, key: str) -> tuple[frozenset[str], tuple[str, ...]]:
        allowed = self._allowed.get(key)
        if allowed is None:
            names = self._generic | self.policy.attributes.get(key, frozenset()) | \
                frozenset(self._values.get(key, ()))
            if key in self._classes:
                names = names | {"class"}
            if self._style_everywhere:
                names = names | {"style"}
            exact = frozenset(n for n in names if not n.endswith("*"))
            prefixes = tuple(sorted(n[:-1] for n in names if n.endswith("*")))
            allowed = self._allowed[key] = (exact, prefixes)
        return allowed

    def _element(self, el: Element) -> None:
        name = el.tag_name
        plan = self._plans.get(name)
        if plan is not None and el.can_have_content:
            # an allowed HTML element (the general path below, in short)
            plain, end, needles = plan
            if plain is not None and (needles is None or len(el.raw) == len(plain)
                                      or needles.search(el.raw.lower()) is None):
                el.replace_tags(plain, end)
            else:
                el.replace_tags(self._start_tag(el, name, name, True, True), end)
            return
        key = name if name.islower() else name.lower()
        namespace = el.namespace_uri
        html = namespace == HTML_NS
        if key == "image" and html:
            name = key = "img"              # (the tree builder makes it an <img>)
        if key in self._drop:
            el.remove()
            return
        # (an allowed name counts only in the namespace it belongs to: an <mglyph> outside
        # <math> is an unknown HTML element, a <b> in <svg> is no SVG element)
        if key not in (self._html_tags if html else self._svg_tags if namespace == SVG_NS
                       else self._math_tags):
            if key == "selectedcontent" and html and el.inside("select"):
                el.remove()                 # (see _selected_content)
                return
            if html:
                el.remove_and_keep_content()
                if el.merged:
                    # (a <body> or <html> tag merged into the open element: the removal takes
                    # the tag alone, and its end tag would stay)
                    el.on_end_tag(_remove_end_tag)
            else:
                # (its content, without it, would be read in another namespace)
                el.remove()
            return
        content = el.can_have_content
        if key == "selectedcontent" and html and el.inside("select"):
            # customizable <select>: a browser replaces its content with a clone of the
            # selected <option>'s (already sanitized); what the input puts there goes
            el.set_inner_content("")
        if not content and (key not in _VOID if html else not el.is_self_closing):
            # beyond the depth the tree builder is followed: its end is not known
            el.remove_and_keep_content()
            return
        plain = self._plain.get(key) if html else None
        tag: str | bytes
        needles = self._needles_for(key)
        if plain is not None and (needles is None or len(el.raw) == len(plain)
                                  or needles.search(el.raw.lower()) is None):
            tag = plain                     # (no attribute in the tag it could keep)
        else:
            tag = self._start_tag(el, name, key, html, content)
        if content:
            if html and key in self._raw_tags:
                el.replace_tags(tag)
                el.context[_RAW_KEY] = key
                el.on_end_tag(_write_end_tag)
            else:
                # (written where the element ends, its end tag or not: no call there)
                end = _end_tag(name)
                el.replace_tags(tag, end)
                if html and key == name and not self._foreign and key != "image" \
                        and key != "selectedcontent":
                    self._plans[name] = (plain, end, needles)
        else:
            el.replace_tags(tag)

    def _text_filter(self) -> TextFilter:
        """The text :meth:`_text` can change, for the engine to spare it the rest: text with
        ``&``, ``<``, ``>``, NUL, CR or bytes its encoding cannot read (what
        :func:`_escape_chunk` looks for), and all the text of CDATA sections (removed) and,
        with raw-text elements allowed, raw text (whose fate depends on its element)."""
        types = set(TextType) - {TextType.CDATA_SECTION}
        if self._raw_tags:
            types.discard(TextType.RAWTEXT)
        return TextFilter("&<>\0\r", undecodable=True, text_types=types)

    def _needles_for(self, key: str) -> re.Pattern[bytes] | None:
        """An expression that finds, in a lower-cased start tag of ``key``, the name of an
        attribute (or prefix) the policy lets it keep (for ``class`` with ``allowed_classes``,
        an allowed class name, or ``&``); None when it keeps none: a tag where it finds
        nothing has no attribute to keep."""
        if key not in self._needles:
            exact, prefixes = self._attributes_for(key)
            found = {*exact, *prefixes}
            classes = self._classes.get(key)
            if classes is not None and found & {"class"} == {"class"} and \
                    "class" not in self._generic | self.policy.attributes.get(key, set()):
                # (a class attribute keeps something only if the tag holds one of the allowed
                # class names, or a character reference that could write one)
                found = (found - {"class"}) | {c.lower() for c in classes} | {"&"}
            names = sorted(found)
            self._needles[key] = re.compile(b"|".join(
                re.escape(n.lower().encode("utf-8")) for n in names)) if names else None
        return self._needles[key]

    def _spec(self, key: str) -> tuple[frozenset[str], tuple[str, ...], frozenset[str], str]:
        spec = self._specs.get(key)
        if spec is None:
            exact, prefixes = self._attributes_for(key)
            sets = self._set.get(key, {})
            rel = key == "a" and self._link_rel is not None
            # the policy's own attributes (set_attributes, rel), written after the kept ones
            own = "".join(f' {attr}="{escape_attribute(value)}"' for attr, value in sets.items())
            replaced = frozenset(sets) | ({"rel"} if rel else set())
            spec = self._specs[key] = (
                frozenset(n for n in exact if not n.startswith("on")) - replaced, prefixes,
                replaced, own + (self._rel_part if rel else ""))
        return spec

    def _start_tag(self, el: Element, name: str, key: str, html: bool, content: bool) -> str:
        spec = self._specs.get(key)
        if spec is None:
            spec = self._spec(key)
        keep, prefixes, replaced, own = spec
        parts = ["<", name]
        for attr, value in el.attributes:
            lname = attr if attr.islower() else attr.lower()
            if lname not in keep and not (
                    prefixes and lname.startswith(prefixes) and _ATTRIBUTE_NAME.match(lname)
                    and not lname.startswith("on") and lname not in replaced):
                continue
            if lname in URL_ATTRIBUTES:     # (the common URL check, as _url_ok makes it)
                if ":" in value:
                    scheme = url_scheme(value)
                    if not (self._relative if scheme is None else scheme in self._schemes):
                        continue
                elif not self._relative:    # (no colon: no scheme, relative)
                    continue
            elif not self._url_ok(lname, value):
                continue
            if lname == "style":
                value = safe_style(value, self._style_props)
                if not value:
                    continue
            # (escape_attribute, inline)
            parts.append(f' {attr}="' + value.replace("&", "&amp;").replace('"', "&quot;")
                         .replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;") + '"')
        parts.append(own)
        parts.append(">" if content or html else "/>")
        return "".join(parts)

    def _start_tag_ext(self, el: Element, name: str, key: str, html: bool,
                       content: bool) -> str:
        """:meth:`_start_tag` with the options that look at values: ``tag_attribute_values``,
        ``allowed_classes``, ``id_prefix``, ``attribute_filter`` and relative URLs
        rewritten, in that order (each on what the one before leaves)."""
        keep, prefixes, replaced, own = self._spec(key)
        values = self._values.get(key)
        classes = self._classes.get(key)
        relative, schemes = self._relative, self._schemes
        filter_, id_prefix, rewrites = self._filter, self._id_prefix, self._rewrites
        parts = ["<", name]
        for attr, value in el.attributes:
            lname = attr if attr.islower() else attr.lower()
            if values is not None and lname in values:
                if value.lower() not in values[lname]:
                    continue
            elif lname == "class" and classes is not None:
                value = " ".join([c for c in value.split() if c in classes])
                if not value:
                    continue
            elif lname not in keep and not (
                    prefixes and lname.startswith(prefixes) and _ATTRIBUTE_NAME.match(lname)
                    and not lname.startswith("on") and lname not in replaced):
                continue
            if lname in URL_ATTRIBUTES:     # (the common URL check, as _url_ok makes it)
                if ":" in value:
                    scheme = url_scheme(value)
                    if not (relative if scheme is None else scheme in schemes):
                        continue
                elif not relative:          # (no colon: no scheme, relative)
                    continue
            elif not self._url_ok(lname, value):
                continue
            if lname == "style":
                value = safe_style(value, self._style_props)
                if not value:
                    continue
            if id_prefix is not None:
                value = self._prefixed(lname, value)
            if filter_ is not None:
                new = filter_(name, lname, value)
                if new is None:
                    continue
                if new is not value and new != value:
                    if not isinstance(new, str):
                        raise TypeError(f"attribute_filter returned {type(new).__name__}, "
                                        "not a string or None")
                    value = new
                    if not self._url_ok(lname, value):
                        continue
                    if lname == "class" and classes is not None:
                        # (as ammonia: the classes are filtered after the filter too)
                        value = " ".join([c for c in value.split() if c in classes])
                        if not value:
                            continue
                    if lname == "style":
                        value = safe_style(value, self._style_props)
                        if not value:
                            continue
            if rewrites:
                rewritten = self._rewrite_urls(lname, value)
                if rewritten is None:
                    continue
                value = rewritten
            # (escape_attribute, inline)
            parts.append(f' {attr}="' + value.replace("&", "&amp;").replace('"', "&quot;")
                         .replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;") + '"')
        parts.append(own)
        parts.append(">" if content or html else "/>")
        return "".join(parts)

    def _prefixed(self, name: str, value: str) -> str:
        """``value`` of attribute ``name`` with ``id_prefix`` before the ids it holds (an
        ``id``, a same-page link's fragment, the ids an ``aria-*`` reference names...)."""
        prefix = self._id_prefix
        assert prefix is not None
        if name == "id":
            return value if value.startswith(prefix) else prefix + value
        if name in _FRAGMENT_ATTRIBUTES:
            url = value.strip(_STRIP)
            if url.startswith("#") and len(url) > 1 and not url.startswith(prefix, 1):
                return "#" + prefix + url[1:]
            return value
        if name in _IDREF_ATTRIBUTES:
            return " ".join(v if v.startswith(prefix) else prefix + v for v in value.split())
        return value

    def _rewrite_urls(self, name: str, value: str) -> str | None:
        """``value`` of attribute ``name`` with its relative URLs rewritten as ``url_relative``
        says (``None``: the attribute goes)."""
        if name in URL_ATTRIBUTES:
            return self._rewrite_url(value) if url_scheme(value) is None else value
        if name in _SRCSET_ATTRIBUTES:
            candidates = []
            for url, descriptors in _srcset_candidates(value):
                if url_scheme(url) is None:
                    new = self._rewrite_url(url)
                    if new is None:
                        return None
                    # (a URL in a srcset cannot hold white space, nor start or end with a comma)
                    url = _percent_encode(new, frozenset(" \t\n\x0c\r,"))
                candidates.append(f"{url} {descriptors}" if descriptors else url)
            return ", ".join(candidates)
        if name in _SPACED_URL_ATTRIBUTES:
            urls = []
            for url in value.split():
                new = self._rewrite_url(url) if url_scheme(url) is None else url
                if new is None:
                    return None
                urls.append(_percent_encode(new, frozenset(" \t\n\x0c\r")))
            return " ".join(urls)
        return value

    def _rewrite_url(self, url: str) -> str | None:
        """The relative URL ``url`` rewritten as ``url_relative`` says, or None."""
        mode = self._relative_mode
        new: str | None
        if callable(mode):
            new = mode(url)
            if new is not None and not isinstance(new, str):
                raise TypeError(f"url_relative returned {type(new).__name__}, not a string "
                                "or None")
        elif mode[0] == "rewrite_with_base":
            new = join_url(mode[1], url)
        else:
            # ("rewrite_with_root", root, path): /x under the root, the rest under root + path
            root, path = mode[1], mode[-1]
            text = _TAB_NL.sub("", url.strip(_STRIP))
            if text.startswith("/") and not text.startswith("//"):
                new = join_url(root, text[1:])
            else:
                base = join_url(root, path)
                new = None if base is None else join_url(base, text)
        if new is None:
            return None
        scheme = url_scheme(new)
        if scheme is not None and scheme not in self._schemes:
            return None
        return new

    def _url_ok(self, name: str, value: str) -> bool:
        """Whether the value of attribute ``name`` is no URL, or URLs the policy allows."""
        if name in URL_ATTRIBUTES:
            return self._scheme_ok(value)
        if name in _SRCSET_ATTRIBUTES:
            return all(self._scheme_ok(url) for url in _srcset_urls(value))
        if name in _SPACED_URL_ATTRIBUTES:
            return all(self._scheme_ok(url) for url in value.split())
        return True

    def _scheme_ok(self, url: str) -> bool:
        scheme = url_scheme(url)
        return self._relative if scheme is None else scheme in self._schemes

    # ------------------------------------------------------------------ text, comments

    def _text(self, chunk: TextChunk) -> None:
        text_type = chunk.text_type
        if text_type <= _RCDATA:
            raw = chunk.raw
            if raw.isascii():
                if _TEXT_SPECIAL.search(raw) is not None:
                    chunk.replace(escape_text(chunk.text), html=True)
            else:
                _escape_chunk(chunk)
            return
        if text_type == _CDATA_SECTION:
            chunk.remove()              # (its markers stay: an empty section)
            return
        if text_type == TextType.RAWTEXT and self._raw_tags:
            raw_tag = chunk.context.get(_RAW_KEY)
            if raw_tag == "style":
                text = chunk.text
                if "<" in text or "\0" in text:
                    chunk.replace(text.replace("<", "\\3c ").replace("\0", "\ufffd"), html=True)
                return
            if raw_tag is not None:
                chunk.remove()
                return
        # raw text of a removed element (<xmp>, <plaintext>...): text from now on
        _escape_chunk(chunk)

    def _comment(self, comment: Comment) -> None:
        if self._comments:
            comment.replace(f"<!--{safe_comment(comment.text)}-->", html=True)
        else:
            comment.remove()

    def _doctype_(self, doctype: Doctype) -> None:
        if not (self._doctype and doctype.raw.endswith(b">")):
            doctype.remove()


def _escape_chunk(chunk: TextChunk) -> None:
    """Write the chunk's text escaped, unless its raw bytes are that already (no ``&``, ``<``,
    ``>``, NUL or CR, and no byte its encoding cannot read: those are written as the U+FFFD
    they read as, whatever the chunking)."""
    raw = chunk.raw
    if raw.isascii():
        if _TEXT_SPECIAL.search(raw) is not None:
            chunk.replace(escape_text(chunk.text), html=True)
        return
    text = chunk.text
    if _TEXT_SPECIAL.search(raw) is not None or "\ufffd" in text:
        chunk.replace(escape_text(text), html=True)


_END_TAGS: dict[str, str | bytes] = {}


def _end_tag(name: str) -> str | bytes:
    """The end tag of an element of the DOM name ``name`` (as bytes when ASCII: the same in
    every encoding the rewriter writes)."""
    end = _END_TAGS.get(name)
    if end is None:
        end = f"</{name}>"
        end = _END_TAGS[name] = end.encode("ascii") if end.isascii() else end
    return end


def _remove_end_tag(end: EndTag) -> None:
    """A removed element's end tag goes too."""
    end.remove()


def _write_end_tag(end: EndTag) -> None:
    """An allowed raw-text element (``<style>``) ends: write its end tag (the source's, if any,
    goes with the start tag), and its text is over."""
    end.before(f"</{end.name}>", html=True)
    if end.context.get(_RAW_KEY) is not None:
        end.context[_RAW_KEY] = None


def sanitize(policy: Policy | None = None) -> Sanitize:
    """The sanitizer recipe, for ``Rewriter().use(...)``: keep what ``policy`` allows
    (default: ammonia's default policy, :class:`Policy`).  See the module's documentation."""
    return Sanitize(policy)


# --------------------------------------------------------------------------- one call

#: The compiled sanitizers of the policies used last (a policy is compared by value: one built
#: per call finds the rewriter of an equal one built before), least recently used first.
_REWRITERS: OrderedDict[Policy, Rewriter] = OrderedDict()
_CACHE_SIZE = 64
_REWRITERS_LOCK = threading.Lock()


def _rewriter(policy: Policy) -> Rewriter:
    # (the default policy first, without the lock: the common call)
    if policy is DEFAULT_POLICY and _DEFAULT_REWRITER:
        return _DEFAULT_REWRITER[0]
    with _REWRITERS_LOCK:
        rw = _REWRITERS.get(policy)
        if rw is not None:
            _REWRITERS.move_to_end(policy)
            return rw
    rw = Rewriter().use(Sanitize(policy))   # (made outside the lock: two threads may both)
    with _REWRITERS_LOCK:
        rw = _REWRITERS.setdefault(policy, rw)
        while len(_REWRITERS) > _CACHE_SIZE:
            _REWRITERS.popitem(last=False)
    if policy is DEFAULT_POLICY:
        _DEFAULT_REWRITER.append(rw)
    return rw


_DEFAULT_REWRITER: list[Rewriter] = []


@overload
def sanitize_html(html: str, policy: Policy | None = None) -> str: ...
@overload
def sanitize_html(html: bytes | bytearray | memoryview, policy: Policy | None = None) -> bytes: ...


def sanitize_html(html: Any, policy: Policy | None = None) -> Any:
    """Sanitize a whole document or fragment: ``str`` gives ``str``, ``bytes`` (UTF-8) give
    ``bytes``.  ``htmlstream.sanitize`` is this function."""
    check_type(html, (str, bytes, bytearray, memoryview), "sanitize_html()", "html",
               "str or bytes-like (bytes, bytearray, memoryview)")
    return _rewriter(DEFAULT_POLICY if policy is None else policy).rewrite(html)
