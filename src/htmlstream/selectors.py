"""CSS selector parsing: selector text to the small AST the compiled matcher runs.

A selector given to htmlstream must be decided the moment a start tag arrives, from the open
elements and from what came *before* in the document, never from what comes after.  This module
parses selector text (CSS Syntax Level 3 tokenisation, Selectors Level 4 grammar, by recursive
descent) into frozen, hashable dataclasses and refuses, with a :class:`SelectorError` that names
the construct, says why and gives its position, everything a stream cannot decide or htmlstream
does not support.

The entry point is :func:`parse_selector`::

    >>> sel = parse_selector("ul > li.item:nth-child(2n+1)")
    >>> str(sel)
    'ul > li.item:nth-child(2n+1)'

The AST, left to right as written:

* :class:`SelectorList` -- ``A, B``: a tuple of :class:`ComplexSelector`.
* :class:`ComplexSelector` -- compounds joined by :class:`Combinator` s.
* :class:`Compound` -- an optional type selector (``tag``), ids, classes,
  :class:`AttributeSelector` s and pseudo-classes (:data:`Pseudo`).
* Pseudo-classes: :class:`NthChild` (also ``:first-child``), :class:`NthOfType` (also
  ``:first-of-type``), :class:`Root`, :class:`Not`, :class:`Is`, :class:`Where`.

``str()`` of any node serialises it back to a canonical selector that parses to an equal node
(given the same ``namespaces``).

Namespaces (CSS Namespaces, Selectors Level 4): ``*|p`` (any namespace), ``|p`` (no namespace),
``svg|rect`` with ``namespaces={"svg": SVG_NAMESPACE}``, a default namespace ``{"": uri}`` for
type selectors, and the same prefixes on attribute names (``[*|href]``, ``[|title]``,
``[xlink|href]``).  The AST holds the namespace URIs the prefixes resolve to
(:attr:`Compound.namespace`, :attr:`AttributeSelector.namespace`) and the prefixes as written.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from htmlstream._ascii import ascii_lower as _ascii_lower
from htmlstream.caching import CompileCache
from htmlstream.errors import SelectorError

__all__ = [
    "HTML_CASE_INSENSITIVE_ATTRIBUTE_VALUES",
    "HTML_NAMESPACE",
    "MATHML_NAMESPACE",
    "MAX_NESTING_DEPTH",
    "SVG_NAMESPACE",
    "TAG_ALIASES",
    "XLINK_NAMESPACE",
    "XMLNS_NAMESPACE",
    "XML_NAMESPACE",
    "AttrOp",
    "AttributeSelector",
    "CaseFlag",
    "Combinator",
    "ComplexSelector",
    "Compound",
    "Is",
    "Not",
    "NthChild",
    "NthOfType",
    "Pseudo",
    "Root",
    "SelectorError",
    "SelectorList",
    "Where",
    "attribute_tags",
    "parse_selector",
    "serialize_identifier",
    "serialize_string",
]


def _words(text: str) -> list[str]:
    """Split a whitespace-separated word list."""
    return text.split()


#: How deeply selector arguments may nest (``:not(:is(:where(...)))``, ``:nth-child(n of ...)``).
MAX_NESTING_DEPTH = 32

#: A and B of ``An+B`` are clamped to this range (CSS clamps out-of-range integers), so the
#: compiled matcher can hold them in a C ``int32``.
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1

#: Attributes whose values are compared ASCII case-insensitively on HTML elements when the
#: selector has no ``s`` flag (HTML Standard, "Case-sensitivity of selectors"; Selectors 4).
HTML_CASE_INSENSITIVE_ATTRIBUTE_VALUES: frozenset[str] = frozenset(
    _words(
        """accept accept-charset align alink axis bgcolor charset checked clear codetype color
    compact declare defer dir direction disabled enctype face frame hreflang http-equiv lang
    language link media method multiple nohref noresize noshade nowrap readonly rel rev rules
    scope scrolling selected shape target text type valign valuetype vlink"""
    )
)

#: The namespaces an HTML document's elements are in (every element is in one of them).
HTML_NAMESPACE = "http://www.w3.org/1999/xhtml"
SVG_NAMESPACE = "http://www.w3.org/2000/svg"
MATHML_NAMESPACE = "http://www.w3.org/1998/Math/MathML"
#: The namespaces of the attributes the HTML parser adjusts on SVG and MathML elements
#: ("adjust foreign attributes": ``xlink:href``, ``xml:lang``, ``xmlns``, ``xmlns:xlink``...);
#: every other attribute of an HTML document is in no namespace.
XLINK_NAMESPACE = "http://www.w3.org/1999/xlink"
XML_NAMESPACE = "http://www.w3.org/XML/1998/namespace"
XMLNS_NAMESPACE = "http://www.w3.org/2000/xmlns/"



# =========================================================================== AST


class Combinator(enum.Enum):
    """How two compounds of a complex selector relate (the value is the CSS spelling)."""

    DESCENDANT = " "
    CHILD = ">"
    ADJACENT = "+"
    GENERAL_SIBLING = "~"

    def __str__(self) -> str:
        return " " if self is Combinator.DESCENDANT else f" {self.value} "


class AttrOp(enum.Enum):
    """The operator of an attribute selector (the value is the CSS spelling)."""

    EXISTS = ""
    EQUALS = "="
    INCLUDES = "~="
    DASH_MATCH = "|="
    PREFIX = "^="
    SUFFIX = "$="
    SUBSTRING = "*="


class CaseFlag(enum.Enum):
    """The case flag of an attribute selector: none, ``i`` or ``s``."""

    DEFAULT = ""
    INSENSITIVE = "i"
    SENSITIVE = "s"


_HTML_WHITESPACE = " \t\n\f\r"


@dataclass(frozen=True, slots=True)
class AttributeSelector:
    """``[name]``, ``[name op value]``, ``[name op value i]`` or ``[name op value s]``.

    Attributes:
        name: the attribute name as written (escapes resolved, case kept).  Attribute names are
            matched ASCII case-insensitively on HTML elements, case-sensitively on foreign ones.
        op: the operator; :attr:`AttrOp.EXISTS` for ``[name]``.
        value: the value (escapes resolved), ``None`` exactly when ``op`` is ``EXISTS``.  It is
            compared with the attribute's *decoded* value (character references resolved).
        case: the ``i``/``s`` flag; see :meth:`value_case_insensitive`.
        namespace: the namespace the attribute must be in: ``""`` (no namespace: ``[name]``
            and ``[|name]``, as CSS says; a default namespace does not apply to attributes),
            ``None`` for any namespace (``[*|name]``) or the URI a prefix resolved to
            (``[xlink|href]``).  In an HTML document only the attributes the parser adjusts on
            SVG and MathML elements (``xlink:href``, ``xml:lang``, ``xmlns``...) have one.
        namespace_prefix: the namespace component as written, for serialising: ``None`` (none),
            ``""`` (``[|name]``), ``"*"`` or the prefix.
    """

    name: str
    op: AttrOp = AttrOp.EXISTS
    value: str | None = None
    case: CaseFlag = CaseFlag.DEFAULT
    namespace: str | None = ""
    namespace_prefix: str | None = None

    def __post_init__(self) -> None:
        if (self.op is AttrOp.EXISTS) != (self.value is None):
            raise ValueError("an attribute selector has a value exactly when it has an operator")
        if self.op is AttrOp.EXISTS and self.case is not CaseFlag.DEFAULT:
            raise ValueError("[name] cannot have a case flag")

    def value_case_insensitive(self, html_element: bool) -> bool:
        """Whether the value is compared ASCII case-insensitively on an element.

        ``i`` always, ``s`` never; without a flag only for the attributes of
        :data:`HTML_CASE_INSENSITIVE_ATTRIBUTE_VALUES` on an element in the HTML namespace.
        """
        if self.case is CaseFlag.INSENSITIVE:
            return True
        if self.case is CaseFlag.SENSITIVE:
            return False
        return html_element and _ascii_lower(self.name) in HTML_CASE_INSENSITIVE_ATTRIBUTE_VALUES

    @property
    def never_matches(self) -> bool:
        """True if no attribute value can match (CSS: an empty operand of ``^= $= *=`` and an
        empty or whitespace-containing operand of ``~=`` match nothing)."""
        value = self.value
        if value is None:
            return False
        if self.op in (AttrOp.PREFIX, AttrOp.SUFFIX, AttrOp.SUBSTRING):
            return value == ""
        if self.op is AttrOp.INCLUDES:
            return value == "" or any(c in _HTML_WHITESPACE for c in value)
        return False

    def __str__(self) -> str:
        name = _prefixed(self.namespace_prefix, serialize_identifier(self.name))
        if self.op is AttrOp.EXISTS:
            return f"[{name}]"
        assert self.value is not None
        flag = f" {self.case.value}" if self.case is not CaseFlag.DEFAULT else ""
        return f"[{name}{self.op.value}{serialize_string(self.value)}{flag}]"


def _prefixed(prefix: str | None, name: str) -> str:
    """``name`` with its namespace component as written (``svg|rect``, ``*|a``, ``|a``)."""
    if prefix is None:
        return name
    if prefix == "*":
        return f"*|{name}"
    return f"{serialize_identifier(prefix) if prefix else ''}|{name}"


def _clamp(value: int) -> int:
    return max(INT_MIN, min(INT_MAX, value))


def _an_plus_b(a: int, b: int) -> str:
    """Serialise An+B canonically (CSSOM): ``2n+1``, ``-n+3``, ``n``, ``5``, ``0``."""
    if a == 0:
        return str(b)
    text = "n" if a == 1 else "-n" if a == -1 else f"{a}n"
    if b > 0:
        text += f"+{b}"
    elif b < 0:
        text += str(b)
    return text


def _nth_matches(a: int, b: int, index: int) -> bool:
    """Whether ``index`` (1-based) equals ``a*n + b`` for some integer ``n >= 0``."""
    if a == 0:
        return index == b
    n, rest = divmod(index - b, a)
    return rest == 0 and n >= 0


@dataclass(frozen=True, slots=True)
class NthChild:
    """``:nth-child(An+B)``, ``:nth-child(An+B of S)`` and ``:first-child`` (``a=0, b=1``).

    The element matches if its 1-based index among its parent's element children -- counting
    only the siblings that match ``of`` when given -- is ``a*n + b`` for some ``n >= 0``.  The
    root element (no parent element) is child 1 of the document.  ``a`` and ``b`` fit an int32.
    """

    a: int
    b: int
    of: SelectorList | None = None

    def matches_index(self, index: int) -> bool:
        """Whether a 1-based sibling index satisfies An+B (the reference semantics)."""
        return _nth_matches(self.a, self.b, index)

    def __str__(self) -> str:
        if self.of is None:
            if (self.a, self.b) == (0, 1):
                return ":first-child"
            return f":nth-child({_an_plus_b(self.a, self.b)})"
        return f":nth-child({_an_plus_b(self.a, self.b)} of {self.of})"


@dataclass(frozen=True, slots=True)
class NthOfType:
    """``:nth-of-type(An+B)`` and ``:first-of-type`` (``a=0, b=1``): like :class:`NthChild`
    counting only the siblings with the same element name (and namespace)."""

    a: int
    b: int

    def matches_index(self, index: int) -> bool:
        """Whether a 1-based index among same-type siblings satisfies An+B."""
        return _nth_matches(self.a, self.b, index)

    def __str__(self) -> str:
        if (self.a, self.b) == (0, 1):
            return ":first-of-type"
        return f":nth-of-type({_an_plus_b(self.a, self.b)})"


@dataclass(frozen=True, slots=True)
class Root:
    """``:root``: the document's root element (an element with no parent element)."""

    def __str__(self) -> str:
        return ":root"


@dataclass(frozen=True, slots=True)
class Not:
    """``:not(S)``: the element matches none of the complex selectors of ``arg``."""

    arg: SelectorList

    def __str__(self) -> str:
        return f":not({self.arg})"


@dataclass(frozen=True, slots=True)
class Is:
    """``:is(S)``: the element matches at least one of the complex selectors of ``arg``."""

    arg: SelectorList

    def __str__(self) -> str:
        return f":is({self.arg})"


@dataclass(frozen=True, slots=True)
class Where:
    """``:where(S)``: matches like :class:`Is` (only its specificity, zero, differs)."""

    arg: SelectorList

    def __str__(self) -> str:
        return f":where({self.arg})"


#: A pseudo-class of a compound.
Pseudo = NthChild | NthOfType | Root | Not | Is | Where


@dataclass(frozen=True, slots=True)
class Compound:
    """A compound selector: everything between combinators, e.g. ``a.b#c[d]:first-child``.

    Attributes:
        tag: the type selector as written (escapes resolved, case kept), ``None`` for ``*`` or
            none.  The matcher compares it ASCII case-insensitively with HTML elements and
            case-sensitively with SVG/MathML ones (``foreignObject``, ``linearGradient``).
        ids: the ``#id`` selectors, in source order (compared case-sensitively).
        classes: the ``.class`` selectors, in source order (compared case-sensitively).
        attributes: the attribute selectors, in source order.
        pseudos: the pseudo-classes, in source order.
        namespace: the namespace the element must be in: ``None`` for any (no namespace
            component and no default namespace, or ``*|``), ``""`` for none (``|p``: no element
            of an HTML document), or a URI (a prefix's, or the default namespace's, which
            applies to type selectors and to compounds without one -- except the subject of a
            selector inside ``:is()``, ``:where()``, ``:not()``, as Selectors 4 says, and
            ``:nth-child(An+B of S)``).
        namespace_prefix: the namespace component as written, for serialising: ``None`` (none),
            ``""`` (``|p``), ``"*"`` (``*|p``) or the prefix (``svg|rect``).

    A compound with nothing in it is ``*``.
    """

    tag: str | None = None
    ids: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    attributes: tuple[AttributeSelector, ...] = ()
    pseudos: tuple[Pseudo, ...] = ()
    namespace: str | None = None
    namespace_prefix: str | None = None

    @property
    def is_universal(self) -> bool:
        """True for ``*`` (a compound that matches every element)."""
        return (
            self.tag is None
            and self.namespace is None
            and not self.ids
            and not self.classes
            and not self.attributes
            and not self.pseudos
        )

    def __str__(self) -> str:
        parts: list[str] = []
        if self.namespace_prefix is not None:
            tag = "*" if self.tag is None else serialize_identifier(self.tag)
            parts.append(_prefixed(self.namespace_prefix, tag))
        elif self.tag is not None:
            parts.append(serialize_identifier(self.tag))
        parts.extend("#" + serialize_identifier(i) for i in self.ids)
        parts.extend("." + serialize_identifier(c) for c in self.classes)
        parts.extend(str(a) for a in self.attributes)
        parts.extend(str(p) for p in self.pseudos)
        return "".join(parts) or "*"


@dataclass(frozen=True, slots=True)
class ComplexSelector:
    """Compounds joined by combinators, left to right: ``compounds[i]`` and
    ``compounds[i + 1]`` are joined by ``combinators[i]``; the last compound is the subject."""

    compounds: tuple[Compound, ...]
    combinators: tuple[Combinator, ...] = ()

    def __post_init__(self) -> None:
        if not self.compounds or len(self.combinators) != len(self.compounds) - 1:
            raise ValueError("a complex selector needs one combinator between two compounds")

    @property
    def subject(self) -> Compound:
        """The compound the selected element itself must match (the rightmost)."""
        return self.compounds[-1]

    def __str__(self) -> str:
        parts = [str(self.compounds[0])]
        for combinator, compound in zip(self.combinators, self.compounds[1:], strict=True):
            parts.append(str(combinator))
            parts.append(str(compound))
        return "".join(parts)


@dataclass(frozen=True, slots=True)
class SelectorList:
    """A selector list ``A, B, ...``: an element matches if it matches any of them."""

    selectors: tuple[ComplexSelector, ...]

    def __post_init__(self) -> None:
        if not self.selectors:
            raise ValueError("a selector list cannot be empty")

    def __iter__(self) -> Iterator[ComplexSelector]:
        return iter(self.selectors)

    def __len__(self) -> int:
        return len(self.selectors)

    @property
    def max_depth(self) -> int:
        """How deeply selector arguments nest: 0 without any ``:not()``, ``:is()``,
        ``:where()`` or ``:nth-child(of)``, 1 for ``:not(a)``, 2 for ``:not(:is(a))``..."""
        depth = 0
        for selector in self.selectors:
            for compound in selector.compounds:
                for pseudo in compound.pseudos:
                    inner = _pseudo_argument(pseudo)
                    if inner is not None:
                        depth = max(depth, 1 + inner.max_depth)
        return depth

    def attribute_tags(self, *, subjects: bool = True) -> set[str] | None:
        """The names (ASCII lower-case) of the start tags whose attributes matching this list
        may read: those named by a compound with an id, class or attribute test, in
        pseudo-class arguments too, and with ``subjects`` those of the subjects (a handler
        gets the element).  None when that can be any tag (such a compound has no type
        selector).  A name stands for the start tags the tree builder gives it too
        (``img`` for ``<image>``, see :data:`TAG_ALIASES`)."""
        names: set[str] = set()
        for complex_sel in self.selectors:
            last = len(complex_sel.compounds) - 1
            for i, compound in enumerate(complex_sel.compounds):
                for pseudo in compound.pseudos:
                    inner = _pseudo_argument(pseudo)
                    if inner is not None:
                        inner_names = inner.attribute_tags(subjects=False)
                        if inner_names is None:
                            return None
                        names |= inner_names
                if compound.ids or compound.classes or compound.attributes or (
                        subjects and i == last):
                    if compound.tag is None:
                        return None
                    name = _ascii_lower(compound.tag)
                    names.add(name)
                    names.update(TAG_ALIASES.get(name, ()))
        return names

    def __str__(self) -> str:
        return ", ".join(str(s) for s in self.selectors)


#: Start tag names an HTML type selector matches besides its own: the tree builder makes an
#: ``<image>`` start tag an ``<img>`` element.
TAG_ALIASES: dict[str, tuple[str, ...]] = {"img": ("image",)}


def attribute_tags(selector_lists: Iterable[SelectorList]) -> tuple[str, ...] | None:
    """The start tags whose attributes rules with these selectors may read (see
    :meth:`SelectorList.attribute_tags`), sorted; None when that can be any tag.  Every other
    tag's attributes can be scanned past."""
    if not isinstance(selector_lists, Iterable):
        raise TypeError(f"attribute_tags(): selector_lists must be an iterable of SelectorLists,"
                        f" not {type(selector_lists).__name__}")
    names: set[str] = set()
    for selector_list in selector_lists:
        tags = selector_list.attribute_tags()
        if tags is None:
            return None
        names |= tags
    return tuple(sorted(names))


def _pseudo_argument(pseudo: Pseudo) -> SelectorList | None:
    if isinstance(pseudo, Not | Is | Where):
        return pseudo.arg
    if isinstance(pseudo, NthChild):
        return pseudo.of
    return None


def _needs_attributes(compound: Compound) -> bool:
    """Whether matching ``compound`` needs the element's attributes (not only its name and
    position): ids, classes, attribute selectors, or a pseudo-class whose argument has them."""
    if compound.ids or compound.classes or compound.attributes:
        return True
    for pseudo in compound.pseudos:
        inner = _pseudo_argument(pseudo)
        if inner is not None and any(
            _needs_attributes(c) for s in inner.selectors for c in s.compounds
        ):
            return True
    return False


# ----------------------------------------------------------------- serialisation


def serialize_identifier(name: str) -> str:
    """Serialise ``name`` as a CSS identifier (CSSOM "serialize an identifier")."""
    if not isinstance(name, str):
        raise TypeError(f"serialize_identifier(): name must be a str, not {type(name).__name__}")
    out: list[str] = []
    for index, char in enumerate(name):
        code = ord(char)
        if code == 0:
            out.append("\ufffd")
        elif (
            0x01 <= code <= 0x1F
            or code == 0x7F
            or ("0" <= char <= "9" and (index == 0 or (index == 1 and name[0] == "-")))
        ):
            out.append(f"\\{code:x} ")
        elif index == 0 and char == "-" and len(name) == 1:
            out.append("\\-")
        elif code >= 0x80 or char in "-_" or (char.isascii() and char.isalnum()):
            out.append(char)
        else:
            out.append("\\" + char)
    return "".join(out)


def serialize_string(value: str) -> str:
    """Serialise ``value`` as a double-quoted CSS string (CSSOM "serialize a string")."""
    if not isinstance(value, str):
        raise TypeError(f"serialize_string(): value must be a str, not {type(value).__name__}")
    out = ['"']
    for char in value:
        code = ord(char)
        if code == 0:
            out.append("\ufffd")
        elif 0x01 <= code <= 0x1F or code == 0x7F:
            out.append(f"\\{code:x} ")
        elif char in '"\\':
            out.append("\\" + char)
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


# =========================================================================== tokenizer

# Token kinds.
_IDENT = "ident"
_FUNCTION = "function"
_AT = "at-keyword"
_HASH = "hash"
_STRING = "string"
_NUMBER = "number"
_PERCENTAGE = "percentage"
_DIMENSION = "dimension"
_WS = "whitespace"
_DELIM = "delim"
_COLON = ":"
_SEMICOLON = ";"
_COMMA = ","
_LBRACKET = "["
_RBRACKET = "]"
_LPAREN = "("
_RPAREN = ")"
_LBRACE = "{"
_RBRACE = "}"
_CDO = "<!--"
_CDC = "-->"
_EOF = "eof"
_BAD = "bad"  # a tokenisation error, raised when the parser reaches it


class _Token:
    """One CSS token.  ``pos``/``end`` index the original selector text."""

    __slots__ = ("end", "has_sign", "integer", "is_id", "kind", "number", "pos", "unit", "value")

    def __init__(self, kind: str, value: str, pos: int, end: int) -> None:
        self.kind = kind
        self.value = value  # name, string value, delimiter, numeric source, or error message
        self.pos = pos
        self.end = end
        self.number: int | float = 0
        self.integer = False
        self.has_sign = False
        self.unit = ""
        self.is_id = False

    def is_delim(self, chars: str) -> bool:
        return self.kind == _DELIM and self.value in chars

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"<{self.kind} {self.value!r} @{self.pos}>"


_NEWLINES = "\n\r\f"
_WHITESPACE = " \t\n\r\f"
_HEX = frozenset("0123456789abcdefABCDEF")
_NUMBER_RE = re.compile(r"[+-]?(\d*)(\.\d+)?([eE][+-]?\d+)?")


def _is_ident_start(char: str) -> bool:
    if not char:
        return False
    return (char.isascii() and (char.isalpha() or char == "_")) or ord(char) >= 0x80


def _is_ident_char(char: str) -> bool:
    return _is_ident_start(char) or char == "-" or "0" <= char <= "9"


class _Tokenizer:
    """CSS Syntax Level 3 tokenisation, enough for selectors.

    The input is not preprocessed (so positions stay those of the original text): NUL is
    replaced by U+FFFD up front (same length), CR LF, CR and FF are treated as newlines where
    it matters.  Errors become ``_BAD`` tokens so the parser reports them in source order.
    """

    def __init__(self, text: str) -> None:
        self.text = text.replace("\0", "\ufffd")
        self.n = len(text)
        self.i = 0

    def _at(self, index: int) -> str:
        return self.text[index] if index < self.n else ""

    def _valid_escape(self, index: int) -> bool:
        # A backslash followed by anything but a newline (EOF included) starts an escape.
        return self._at(index) == "\\" and self._at(index + 1) not in ("\n", "\r", "\f")

    def _starts_ident(self, index: int) -> bool:
        c0 = self._at(index)
        if c0 == "-":
            c1 = self._at(index + 1)
            if _is_ident_start(c1) or c1 == "-":
                return True
            return self._valid_escape(index + 1)
        if c0 and _is_ident_start(c0):
            return True
        return c0 == "\\" and self._valid_escape(index)

    def _starts_number(self, index: int) -> bool:
        c0, c1, c2 = self._at(index), self._at(index + 1), self._at(index + 2)
        if c0 in ("+", "-") and c0:
            return (c1.isdigit() and c1.isascii()) or (c1 == "." and c2.isascii() and c2.isdigit())
        if c0 == ".":
            return c1.isascii() and c1.isdigit()
        return c0.isascii() and c0.isdigit()

    def _escape(self) -> str:
        """Consume an escaped code point; ``self.i`` is just after the backslash."""
        if self.i >= self.n:
            return "\ufffd"
        char = self.text[self.i]
        if char in _HEX:
            start = self.i
            while self.i < self.n and self.i - start < 6 and self.text[self.i] in _HEX:
                self.i += 1
            code = int(self.text[start : self.i], 16)
            if self.text.startswith("\r\n", self.i):
                self.i += 2
            elif self.i < self.n and self.text[self.i] in _WHITESPACE:
                self.i += 1
            if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                return "\ufffd"
            return chr(code)
        self.i += 1
        return char

    def _name(self) -> str:
        """Consume an ident sequence."""
        out: list[str] = []
        while self.i < self.n:
            char = self.text[self.i]
            if _is_ident_char(char):
                out.append(char)
                self.i += 1
            elif self._valid_escape(self.i):
                self.i += 1
                out.append(self._escape())
            else:
                break
        return "".join(out)

    def _string(self, start: int) -> _Token:
        quote = self.text[start]
        self.i = start + 1
        out: list[str] = []
        while True:
            if self.i >= self.n:
                return _Token(_BAD, f"unclosed string: expected a closing {quote}", start, self.n)
            char = self.text[self.i]
            if char == quote:
                self.i += 1
                return _Token(_STRING, "".join(out), start, self.i)
            if char in _NEWLINES:
                return _Token(
                    _BAD, "a newline in a string must be escaped (as \\a )", self.i, self.i + 1
                )
            if char == "\\":
                self.i += 1
                if self.i >= self.n:
                    continue
                if self.text.startswith("\r\n", self.i):
                    self.i += 2
                elif self.text[self.i] in _NEWLINES:
                    self.i += 1
                else:
                    out.append(self._escape())
                continue
            out.append(char)
            self.i += 1

    def _numeric(self, start: int) -> _Token:
        match = _NUMBER_RE.match(self.text, start)
        assert match is not None and match.end() > start
        source = match.group()
        self.i = match.end()
        integer = match.group(2) is None and match.group(3) is None
        number: int | float
        if integer:
            digits = match.group(1).lstrip("0")
            # Beyond int32 everything clamps: avoid int()'s limit on very long digit strings.
            number = int(digits[:12] or "0") if len(digits) <= 12 else 10**12
            if source[0] == "-":
                number = -number
        else:
            number = float(source)
        if self._starts_ident(self.i):
            unit = self._name()
            token = _Token(_DIMENSION, self.text[start : self.i], start, self.i)
            token.unit = unit
        elif self._at(self.i) == "%":
            self.i += 1
            token = _Token(_PERCENTAGE, self.text[start : self.i], start, self.i)
        else:
            token = _Token(_NUMBER, source, start, self.i)
        token.number = number
        token.integer = integer
        token.has_sign = source[0] in "+-"
        return token

    def _identlike(self, start: int) -> _Token:
        name = self._name()
        if self._at(self.i) == "(":
            self.i += 1
            return _Token(_FUNCTION, name, start, self.i)
        return _Token(_IDENT, name, start, self.i)

    def tokens(self) -> list[_Token]:
        """Tokenise the whole text; the list ends with an ``_EOF`` token."""
        result: list[_Token] = []
        text = self.text
        while True:
            # Comments produce no token.
            while text.startswith("/*", self.i):
                close = text.find("*/", self.i + 2)
                if close < 0:
                    result.append(_Token(_BAD, "unclosed comment: expected '*/'", self.i, self.n))
                    self.i = self.n
                    break
                self.i = close + 2
            start = self.i
            if start >= self.n:
                result.append(_Token(_EOF, "", self.n, self.n))
                return result
            char = text[start]
            token: _Token
            if char in _WHITESPACE:
                while self.i < self.n and text[self.i] in _WHITESPACE:
                    self.i += 1
                token = _Token(_WS, " ", start, self.i)
            elif char in "\"'":
                token = self._string(start)
            elif char == "#":
                if (self._at(start + 1) and _is_ident_char(self._at(start + 1))) or (
                    self._valid_escape(start + 1)
                ):
                    is_id = self._starts_ident(start + 1)
                    self.i = start + 1
                    token = _Token(_HASH, self._name(), start, 0)
                    token.is_id = is_id
                    token.end = self.i
                else:
                    self.i += 1
                    token = _Token(_DELIM, "#", start, self.i)
            elif char in "()[]{},:;":
                self.i += 1
                token = _Token(char, char, start, self.i)
            elif char in "+.":
                if self._starts_number(start):
                    token = self._numeric(start)
                else:
                    self.i += 1
                    token = _Token(_DELIM, char, start, self.i)
            elif char == "-":
                if self._starts_number(start):
                    token = self._numeric(start)
                elif text.startswith("-->", start):
                    self.i += 3
                    token = _Token(_CDC, "-->", start, self.i)
                elif self._starts_ident(start):
                    token = self._identlike(start)
                else:
                    self.i += 1
                    token = _Token(_DELIM, char, start, self.i)
            elif char == "<" and text.startswith("<!--", start):
                self.i += 4
                token = _Token(_CDO, "<!--", start, self.i)
            elif char == "@" and self._starts_ident(start + 1):
                self.i += 1
                token = _Token(_AT, self._name(), start, 0)
                token.end = self.i
            elif char == "\\":
                if self._valid_escape(start):
                    token = self._identlike(start)
                else:
                    self.i += 1
                    token = _Token(_DELIM, char, start, self.i)
            elif char.isascii() and char.isdigit():
                token = self._numeric(start)
            elif _is_ident_start(char):
                token = self._identlike(start)
            else:
                self.i += 1
                token = _Token(_DELIM, char, start, self.i)
            result.append(token)
            if token.kind == _BAD:
                result.append(_Token(_EOF, "", self.n, self.n))
                return result


# =========================================================================== parser

_LOOKAHEAD_SIBLINGS = "needs to see the element's following siblings, which a stream cannot"
_LOOKAHEAD_CONTENT = (
    "needs to see the element's content, which comes after its start tag in a stream"
)

#: Refused pseudo-classes: lowercase name -> (functional, reason).  ``functional`` only decides
#: how the name is spelled in the message (``:has()`` versus ``:hover``).
_REFUSED: dict[str, tuple[bool, str]] = {
    "has": (
        True,
        "needs to see the element's descendants or following siblings, which come after its "
        "start tag in a stream",
    ),
    "last-child": (False, _LOOKAHEAD_SIBLINGS),
    "only-child": (False, _LOOKAHEAD_SIBLINGS),
    "nth-last-child": (True, _LOOKAHEAD_SIBLINGS),
    "last-of-type": (False, _LOOKAHEAD_SIBLINGS),
    "only-of-type": (False, _LOOKAHEAD_SIBLINGS),
    "nth-last-of-type": (True, _LOOKAHEAD_SIBLINGS),
    "empty": (False, _LOOKAHEAD_CONTENT),
    "blank": (False, _LOOKAHEAD_CONTENT),
    "dir": (
        True,
        "needs the element's directionality, which for dir=auto depends on text that comes "
        "later in the stream",
    ),
    "matches": (True, "is not supported: use :is(), its standard name"),
    "any": (True, "is not supported: use :is(), its standard name"),
    "-webkit-any": (True, "is not supported: use :is(), its standard name"),
    "-moz-any": (True, "is not supported: use :is(), its standard name"),
    "scope": (False, "is not supported: a rewriter has no scoping element (use :root)"),
    "lang": (True, 'is not supported: use an attribute selector such as [lang|="en"]'),
    "host": (False, "only has a meaning in a shadow tree's style sheet"),
    "host-context": (True, "only has a meaning in a shadow tree's style sheet"),
}

_STATE = "depends on the browser's state, not the markup"
for _name in _words(
    """hover focus focus-within focus-visible active visited link any-link local-link
    target target-within current past future playing paused seeking buffering stalled muted
    volume-locked checked indeterminate default enabled disabled valid invalid in-range
    out-of-range required optional read-only read-write placeholder-shown autofill
    user-valid user-invalid fullscreen modal picture-in-picture popover-open open closed
    defined state"""
):
    _REFUSED[_name] = (_name == "state", _STATE)
del _name

_LEGACY_PSEUDO_ELEMENTS = frozenset(("before", "after", "first-line", "first-letter"))

_SELECTOR_ARGUMENT: dict[str, type[Not | Is | Where]] = {"not": Not, "is": Is, "where": Where}


def _not_identifier_reason(text: str) -> str:
    """Why ``text`` (the source of a hash or number token) is not a CSS identifier."""
    if text[:1].isdigit():
        return "an identifier cannot start with a digit"
    if text[:1] in "+-" and text[1:2].isdigit():
        return f"an identifier cannot start with '{text[0]}' and a digit"
    if text == "-":
        return "'-' alone is not an identifier"
    return "an identifier cannot start that way"


def _describe(token: _Token) -> str:
    """Name a token for an error message."""
    kind = token.kind
    if kind == _EOF:
        return "the end of the selector"
    if kind == _WS:
        return "whitespace"
    if kind == _IDENT:
        return f"identifier {token.value!r}"
    if kind == _FUNCTION:
        return f"'{token.value}('"
    if kind == _STRING:
        return f"string {serialize_string(token.value)}"
    if kind in (_NUMBER, _PERCENTAGE, _DIMENSION):
        return f"number {token.value!r}"
    if kind == _HASH:
        return f"'#{token.value}'"
    if kind == _AT:
        return f"'@{token.value}'"
    return f"'{token.value}'"


class _Parser:
    """Recursive descent over the token list.  Nesting depth is bounded by
    :data:`MAX_NESTING_DEPTH`, so the Python stack is never at risk."""

    def __init__(self, text: str, namespaces: Mapping[str, str]) -> None:
        self.text = text
        self.tokens = _Tokenizer(text).tokens()
        self.index = 0
        self.namespaces = namespaces
        self.default_namespace = namespaces.get("")
        self.has_type = False       # whether the last compound read had a type selector

    # -------------------------------------------------------------- token access

    def error(self, message: str, position: int) -> SelectorError:
        return SelectorError(message, self.text, position)

    def peek(self, offset: int = 0) -> _Token:
        index = min(self.index + offset, len(self.tokens) - 1)
        token = self.tokens[index]
        if token.kind == _BAD:
            raise self.error(token.value, token.pos)
        return token

    def next(self) -> _Token:
        token = self.peek()
        if token.kind != _EOF:
            self.index += 1
        return token

    def skip_ws(self) -> bool:
        skipped = False
        while self.peek().kind == _WS:
            self.index += 1
            skipped = True
        return skipped

    def unexpected(self, token: _Token, expected: str, after: str) -> SelectorError:
        """``expected X after Y, found Z`` at Z's position (the text's length at its end)."""
        return self.error(f"expected {expected} after {after}, found {_describe(token)}", token.pos)

    # -------------------------------------------------------------- grammar

    def parse(self) -> SelectorList:
        self.skip_ws()
        if self.peek().kind == _EOF:
            raise self.error("empty selector", 0)
        result = self.selector_list(0, None)
        token = self.peek()
        assert token.kind == _EOF, token
        return result

    def selector_list(self, depth: int, function: str | None) -> SelectorList:
        """``<complex-selector> [, <complex-selector>]*``, up to EOF (top level) or ``)``
        (argument of ``function``, whose ``)`` this consumes)."""
        selectors: list[ComplexSelector] = []
        while True:
            self.skip_ws()
            token = self.peek()
            if token.kind == _COMMA:
                raise self.error("empty item in the selector list", token.pos)
            if token.kind == _EOF and selectors:
                raise self.error("unexpected end of selector after ','", token.pos)
            if token.kind == _RPAREN and function is not None:
                if selectors:
                    raise self.error(f"expected a selector after ',' in :{function}()", token.pos)
                raise self.error(f":{function}() needs a selector argument", token.pos)
            if token.kind == _EOF and function is not None:
                raise self.error(f"unclosed ':{function}(': expected ')'", token.pos)
            selectors.append(self.complex_selector(depth, function is not None))
            token = self.peek()
            if token.kind == _COMMA:
                self.next()
                continue
            if function is None and token.kind == _EOF:
                break
            if function is not None and token.kind == _RPAREN:
                self.next()
                break
            if function is not None and token.kind == _EOF:
                raise self.error(f"unclosed ':{function}(': expected ')'", token.pos)
            raise self.error(f"unexpected {_describe(token)}", token.pos)
        return SelectorList(tuple(selectors))

    def complex_selector(self, depth: int, in_argument: bool = False) -> ComplexSelector:
        """A complex selector; ``in_argument``: an argument of :is(), :where(), :not() or
        :nth-child(... of S), where a default namespace does not apply to a subject without a
        type selector."""
        token = self.peek()
        if token.is_delim(">+~"):
            raise self.error(
                f"a selector cannot start with the combinator '{token.value}' "
                "(relative selectors are not supported)",
                token.pos,
            )
        compounds = [self.compound(depth, None)]
        typed = [self.has_type]
        combinators: list[Combinator] = []
        while True:
            had_ws = self.skip_ws()
            token = self.peek()
            if token.kind in (_COMMA, _RPAREN, _EOF):
                break
            if token.is_delim(">+~"):
                self.next()
                combinator = Combinator(token.value)
                after = f"'{token.value}'"
                self.skip_ws()
            elif token.is_delim("|") and self.peek(1).is_delim("|"):
                raise self.error("the column combinator '||' is not supported", token.pos)
            elif had_ws:
                combinator = Combinator.DESCENDANT
                after = "whitespace"
            else:
                raise self.error(f"unexpected {_describe(token)}", token.pos)
            combinators.append(combinator)
            compounds.append(self.compound(depth, after))
            typed.append(self.has_type)
        default = self.default_namespace
        if default is not None:
            # (CSS Namespaces: a type selector or *, written or implied, without a namespace
            # component is in the default namespace; Selectors 4 exempts the subject of a
            # selector inside :is(), :where() and :not() when it has no type selector, and so
            # do we, as soupsieve, in :nth-child(of S), on which the standard says nothing)
            last = len(compounds) - 1
            for i, compound in enumerate(compounds):
                if compound.namespace_prefix is None and (
                    typed[i] or not (in_argument and i == last)
                ):
                    compounds[i] = replace(compound, namespace=default)
        return ComplexSelector(tuple(compounds), tuple(combinators))

    def namespace_of(self, prefix: _Token) -> str | None:
        """The namespace URI ``prefix|`` stands for (``*|``: None, any namespace)."""
        if prefix.is_delim("*"):
            return None
        uri = self.namespaces.get(prefix.value)
        if uri is None:
            raise self.error(
                f"unknown namespace prefix {prefix.value!r}: declare it with "
                f"namespaces={{{prefix.value!r}: <namespace URI>}}",
                prefix.pos,
            )
        return uri

    def qualified_name(self, what: str) -> tuple[str | None, str | None, _Token] | None:
        """A namespace component and the name after it, if the next tokens are one:
        ``prefix|``, ``*|`` or ``|`` directly followed by the name (``what`` says what may
        follow: ``"a name or '*'"`` for type selectors, ``"an attribute name"``).  Returns
        (the prefix as written, its namespace URI, the name token) with the tokens consumed;
        None (nothing consumed) when there is no namespace component."""
        first = self.peek()
        if first.is_delim("|"):
            prefix_token = None
            bar = first
            at = 1
        elif first.kind == _IDENT or first.is_delim("*"):
            bar = self.peek(1)
            if not bar.is_delim("|") or bar.pos != first.end:
                return None
            prefix_token = first
            at = 2
        else:
            return None
        name = self.peek(at)
        if name.is_delim("|"):
            raise self.error("the column combinator '||' is not supported", bar.pos)
        if name.is_delim("=") and what == "an attribute name":
            return None         # [a|=b]: the dash-match operator
        if name.pos != bar.end or not (
            name.kind == _IDENT or (name.is_delim("*") and what != "an attribute name")
        ):
            written = "" if prefix_token is None else (
                "*" if prefix_token.is_delim("*") else prefix_token.value)
            raise self.error(
                f"expected {what} right after the namespace prefix '{written}|', found "
                f"{_describe(name)}",
                name.pos,
            )
        if prefix_token is None:
            prefix: str | None = ""
            namespace: str | None = ""
        else:
            namespace = self.namespace_of(prefix_token)
            prefix = "*" if prefix_token.is_delim("*") else prefix_token.value
        for _ in range(at + 1):
            self.next()
        return prefix, namespace, name

    def compound(self, depth: int, after: str | None) -> Compound:
        """A compound selector; ``after`` names the combinator before it (for messages)."""
        start = self.peek()
        tag: str | None = None
        has_type = False
        ids: list[str] = []
        classes: list[str] = []
        attributes: list[AttributeSelector] = []
        pseudos: list[Pseudo] = []
        prefix: str | None = None
        namespace: str | None = None

        if start.is_delim("|") and self.peek(1).is_delim("|"):
            raise self.error("the column combinator '||' is not supported", start.pos)
        qualified = self.qualified_name("a name or '*'")
        if qualified is not None:
            prefix, namespace, name = qualified
            tag = name.value if name.kind == _IDENT else None
            has_type = True
        elif start.kind == _IDENT or start.is_delim("*"):
            self.next()
            self.check_namespace(start)
            tag = start.value if start.kind == _IDENT else None
            has_type = True

        while True:
            token = self.peek()
            kind = token.kind
            if kind == _HASH:
                self.next()
                if not token.is_id:
                    raise self.error(
                        f"an id selector must be an identifier, and {token.value!r} is not one: "
                        f"{_not_identifier_reason(token.value)} (escape it: "
                        f"'#{serialize_identifier(token.value)}')",
                        token.pos,
                    )
                ids.append(token.value)
            elif token.is_delim("."):
                self.next()
                name = self.peek()
                if name.kind != _IDENT:
                    if name.kind in (_NUMBER, _DIMENSION, _PERCENTAGE) and name.pos == token.end:
                        raise self.error(
                            "expected a class name after '.': a class name must be an "
                            f"identifier, and {name.value!r} is not one: "
                            f"{_not_identifier_reason(name.value)}",
                            name.pos,
                        )
                    raise self.unexpected(name, "a class name", "'.'")
                self.next()
                classes.append(name.value)
            elif kind in (_NUMBER, _DIMENSION, _PERCENTAGE) and token.value.startswith("."):
                # ".5" / ".5a" tokenise as numbers: a class name starting with a digit.
                raise self.error(
                    "expected a class name after '.': a class name cannot start with a digit "
                    f"(escape it: '.{serialize_identifier(token.value[1:])}')",
                    token.pos + 1,
                )
            elif kind == _LBRACKET:
                self.next()
                attributes.append(self.attribute(token))
            elif kind == _COLON:
                self.next()
                pseudos.append(self.pseudo(token, depth))
            elif token.is_delim("#"):
                raise self.unexpected(self.peek(1), "an id", "'#'")
            elif token.is_delim("&"):
                raise self.error(
                    "the nesting selector '&' is not supported: it only has a meaning inside a "
                    "nested CSS rule",
                    token.pos,
                )
            elif kind == _IDENT or token.is_delim("*"):
                # (A type selector at the start was consumed above.)
                raise self.error(
                    f"a type selector must come first in a compound selector, found "
                    f"{_describe(token)} after {self.text[start.pos : token.pos]!r}",
                    token.pos,
                )
            else:
                break
        if not (has_type or ids or classes or attributes or pseudos):
            token = self.peek()
            if after is not None and after != "whitespace":
                if token.kind == _EOF:
                    raise self.error(f"unexpected end of selector after {after}", token.pos)
                raise self.unexpected(token, "a selector", after)
            raise self.error(f"expected a selector, found {_describe(token)}", token.pos)
        self.has_type = has_type
        return Compound(
            tag, tuple(ids), tuple(classes), tuple(attributes), tuple(pseudos), namespace, prefix
        )

    def check_namespace(self, prefix: _Token) -> None:
        """Refuse ``a||b`` (``a|b`` was read as a qualified name before)."""
        bar = self.peek()
        if bar.is_delim("|") and self.peek(1).is_delim("|"):
            raise self.error("the column combinator '||' is not supported", bar.pos)

    def attribute(self, bracket: _Token) -> AttributeSelector:
        """``[...]`` after its ``[``."""
        self.skip_ws()
        prefix: str | None = None
        namespace: str | None = ""
        qualified = self.qualified_name("an attribute name")
        if qualified is not None:
            prefix, namespace, token = qualified
        else:
            token = self.peek()
            if token.kind != _IDENT:
                raise self.unexpected(token, "an attribute name", "'['")
            self.next()
        name = token.value
        self.skip_ws()
        token = self.peek()
        if token.kind == _RBRACKET:
            self.next()
            return AttributeSelector(name, namespace=namespace, namespace_prefix=prefix)
        op: AttrOp
        if token.is_delim("="):
            self.next()
            op = AttrOp.EQUALS
        elif token.is_delim("~|^$*!") and self.peek(1).is_delim("="):
            if token.value == "!":
                raise self.error(
                    "'!=' is not a CSS attribute operator (use :not([name=value]))", token.pos
                )
            self.next()
            self.next()
            op = AttrOp(token.value + "=")
        elif token.kind == _EOF:
            raise self.error("unclosed '[': expected ']'", token.pos)
        else:
            raise self.error(
                f"expected ']' or an operator (=, ~=, |=, ^=, $=, *=) after attribute name "
                f"{name!r}, found {_describe(token)}",
                token.pos,
            )
        after = f"'{op.value}'"
        self.skip_ws()
        token = self.peek()
        if token.kind not in (_IDENT, _STRING):
            if token.kind in (_EOF, _RBRACKET):
                raise self.unexpected(token, "an attribute value", after)
            raise self.error(
                f"an attribute value must be an identifier or a quoted string, found "
                f"{_describe(token)} (quote it)",
                token.pos,
            )
        self.next()
        value = token.value
        self.skip_ws()
        token = self.peek()
        case = CaseFlag.DEFAULT
        if token.kind == _IDENT:
            flag = _ascii_lower(token.value)
            if flag not in ("i", "s"):
                raise self.error(
                    f"unknown attribute selector flag {token.value!r}: expected 'i' or 's'",
                    token.pos,
                )
            self.next()
            case = CaseFlag(flag)
            self.skip_ws()
            token = self.peek()
        if token.kind == _EOF:
            raise self.error("unclosed '[': expected ']'", token.pos)
        if token.kind != _RBRACKET:
            raise self.error(
                f"expected ']' after the attribute value, found {_describe(token)}", token.pos
            )
        self.next()
        return AttributeSelector(name, op, value, case, namespace, prefix)

    def pseudo(self, colon: _Token, depth: int) -> Pseudo:
        """A pseudo-class after its ``:``."""
        token = self.peek()
        if token.kind == _COLON:
            self.next()
            element = self.peek()
            if element.kind not in (_IDENT, _FUNCTION):
                raise self.unexpected(element, "a pseudo-element name", "'::'")
            suffix = "()" if element.kind == _FUNCTION else ""
            raise self.error(
                f"::{element.value}{suffix} is a pseudo-element; pseudo-elements are not elements "
                "of the markup",
                colon.pos,
            )
        if token.kind not in (_IDENT, _FUNCTION):
            raise self.unexpected(token, "a pseudo-class name", "':'")
        self.next()
        functional = token.kind == _FUNCTION
        name = _ascii_lower(token.value)
        spelled = f":{name}()" if functional else f":{name}"
        if name in _REFUSED:
            is_function, reason = _REFUSED[name]
            shown = f":{name}()" if is_function or functional else f":{name}"
            raise self.error(f"{shown} {reason}", colon.pos)
        if name in _LEGACY_PSEUDO_ELEMENTS:
            raise self.error(
                f":{name} is a pseudo-element (::{name}); pseudo-elements are not elements of "
                "the markup",
                colon.pos,
            )
        if not functional:
            if name == "first-child":
                return NthChild(0, 1, None)
            if name == "first-of-type":
                return NthOfType(0, 1)
            if name == "root":
                return Root()
            if name in _SELECTOR_ARGUMENT or name in ("nth-child", "nth-of-type"):
                example = "(2n+1)" if name.startswith("nth") else "(.a)"
                raise self.error(
                    f":{name} needs an argument in parentheses, e.g. :{name}{example}", colon.pos
                )
            raise self.error(f"{spelled} is an unknown pseudo-class", colon.pos)
        if name in ("first-child", "first-of-type", "root"):
            raise self.error(f":{name} takes no arguments", colon.pos)
        if name in _SELECTOR_ARGUMENT:
            self.check_depth(depth, colon)
            return _SELECTOR_ARGUMENT[name](self.selector_list(depth + 1, name))
        if name == "nth-child":
            a, b = self.an_plus_b(name)
            self.skip_ws()
            token = self.peek()
            if token.kind == _IDENT and _ascii_lower(token.value) == "of":
                self.check_depth(depth, colon)
                self.next()
                self.skip_ws()
                if self.peek().kind in (_RPAREN, _EOF):
                    raise self.unexpected(self.peek(), "a selector", "'of'")
                return NthChild(a, b, self.selector_list(depth + 1, name))
            self.close_paren(name, "'of' or ')'")
            return NthChild(a, b, None)
        if name == "nth-of-type":
            a, b = self.an_plus_b(name)
            self.skip_ws()
            token = self.peek()
            if token.kind == _IDENT and _ascii_lower(token.value) == "of":
                raise self.error(
                    "'of S' is only allowed in :nth-child(), not in :nth-of-type()", token.pos
                )
            self.close_paren(name, "')'")
            return NthOfType(a, b)
        raise self.error(f"{spelled} is an unknown pseudo-class", colon.pos)

    def check_depth(self, depth: int, colon: _Token) -> None:
        """Refuse a selector argument nested more than :data:`MAX_NESTING_DEPTH` deep."""
        if depth + 1 > MAX_NESTING_DEPTH:
            raise self.error(
                f"selector nested too deeply: more than {MAX_NESTING_DEPTH} levels of "
                ":not(), :is(), :where() and :nth-child(... of ...)",
                colon.pos,
            )

    def close_paren(self, name: str, expected: str) -> None:
        token = self.peek()
        if token.kind == _RPAREN:
            self.next()
            return
        if token.kind == _EOF:
            raise self.error(f"unclosed ':{name}(': expected ')'", token.pos)
        raise self.error(
            f"expected {expected} after the An+B argument of :{name}(), found {_describe(token)}",
            token.pos,
        )

    def an_plus_b(self, name: str) -> tuple[int, int]:
        """The An+B microsyntax (CSS Syntax Level 3, section 6) up to, not including, what
        follows it; returns ``(a, b)`` clamped to int32."""
        self.skip_ws()
        token = self.peek()
        where = f":{name}()"
        hint = "expected An+B such as 'odd', 'even', '3', '2n+1' or '-n+3'"
        if token.kind in (_RPAREN, _EOF):
            if token.kind == _EOF:
                raise self.error(f"unclosed ':{name}(': expected ')'", token.pos)
            raise self.error(f"{where} needs an argument: {hint}", token.pos)

        def bad(tok: _Token, why: str = "") -> SelectorError:
            found = _describe(tok)
            return self.error(f"invalid argument to {where}: {why or hint}, found {found}", tok.pos)

        if token.kind in (_NUMBER, _DIMENSION) and not token.integer:
            raise bad(token, "A and B must be integers")

        if token.kind == _NUMBER:
            self.next()
            return 0, _clamp(int(token.number))

        # Find A and what of the token follows 'n': "", "-", or "-<digits>".
        a: int
        rest: str
        if token.kind == _DIMENSION:
            unit = _ascii_lower(token.unit)
            if not unit.startswith("n"):
                raise bad(token)
            a = int(token.number)
            rest = unit[1:]
            self.next()
        elif token.kind == _IDENT:
            value = _ascii_lower(token.value)
            if value in ("odd", "even"):
                self.next()
                return (2, 1) if value == "odd" else (2, 0)
            if value.startswith("-n"):
                a, rest = -1, value[2:]
            elif value.startswith("n"):
                a, rest = 1, value[1:]
            else:
                raise bad(token)
            self.next()
        elif token.is_delim("+"):
            following = self.peek(1)
            if following.kind != _IDENT or not _ascii_lower(following.value).startswith("n"):
                raise bad(following, "'+' must be followed directly by 'n'")
            self.next()
            self.next()
            a, rest = 1, _ascii_lower(following.value)[1:]
            token = following
        else:
            raise bad(token)

        if rest == "":
            # Optional B: <signed-integer> or ['+' | '-'] <signless-integer>.
            self.skip_ws()
            token = self.peek()
            if token.kind == _NUMBER and token.integer and token.has_sign:
                self.next()
                return _clamp(a), _clamp(int(token.number))
            if token.is_delim("+-"):
                sign = -1 if token.value == "-" else 1
                self.next()
                self.skip_ws()
                number = self.peek()
                if number.kind != _NUMBER or not number.integer or number.has_sign:
                    raise bad(number, f"expected an unsigned integer after '{token.value}'")
                self.next()
                return _clamp(a), _clamp(sign * int(number.number))
            if token.kind == _NUMBER:
                raise bad(token, "B needs a sign, as in 2n+1")
            return _clamp(a), 0
        if rest == "-":
            # 'n-' then <signless-integer>.
            self.skip_ws()
            number = self.peek()
            if number.kind != _NUMBER or not number.integer or number.has_sign:
                raise bad(number, "expected an unsigned integer after 'n-'")
            self.next()
            return _clamp(a), _clamp(-int(number.number))
        if rest[0] == "-" and rest[1:].isascii() and rest[1:].isdigit():
            return _clamp(a), _clamp(-int(rest[1:]))
        raise bad(token)


def parse_selector(text: str, namespaces: Mapping[str, str] | None = None) -> SelectorList:
    """Parse a CSS selector list into a :class:`SelectorList`.

    Args:
        text: the selector list.
        namespaces: namespace prefixes and the URIs they stand for, as soupsieve takes them
            (``{"svg": SVG_NAMESPACE}`` for ``svg|rect``); the key ``""`` declares a default
            namespace for type selectors (CSS Namespaces).  ``*|p`` and ``|p`` need none.

    Raises:
        SelectorError: the selector is invalid, uses a namespace prefix ``namespaces`` does not
            declare, or uses something a stream cannot decide (``:has()``, ``:last-child``,
            ``:empty``...) or htmlstream does not support (pseudo-elements, state
            pseudo-classes...).  Its message names the construct and says why; ``position``
            is the character index in ``text``.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_selector(): text must be a str (a CSS selector), not "
                        f"{type(text).__name__}")
    return _PARSED.get(selector_key(text, namespaces))


def selector_key(text: str, namespaces: Mapping[str, str] | None = None) -> SelectorKey:
    """What a parsed selector depends on, as a hashable value: ``text`` alone without
    ``namespaces`` (or with none), else ``text`` and the namespaces' items (checked: a
    ``TypeError`` for what is not a mapping of str to str).  Equal keys parse to equal
    selector lists; the caches of parsed and compiled selectors are keyed by it."""
    if not namespaces:
        if namespaces is not None:
            _check_namespaces(namespaces)
        return text
    return (text, frozenset(_check_namespaces(namespaces).items()))


#: See :func:`selector_key`: the text, or the text and the namespaces' (prefix, URI) items.
SelectorKey = str | tuple[str, frozenset[tuple[str, str]]]


def parse_selector_key(key: SelectorKey) -> SelectorList:
    """The selector list a :func:`selector_key` stands for: :func:`parse_selector` of its
    text and namespaces, from the cache of parsed selectors (one dictionary look-up for a
    selector parsed before)."""
    return _PARSED.get(key)


def _parse_key(key: SelectorKey) -> SelectorList:
    if isinstance(key, str):
        return _Parser(key, _NO_NAMESPACES).parse()
    return _Parser(key[0], dict(key[1])).parse()


#: Parsed selectors by :func:`selector_key` (a SelectorList is immutable: shared by every
#: rewriter that uses the same selector; a selector that fails to parse is not cached).
_PARSED: CompileCache[SelectorKey, SelectorList] = CompileCache(_parse_key, maxsize=1024)


_NO_NAMESPACES: dict[str, str] = {}


def _check_namespaces(namespaces: Mapping[str, str] | None) -> Mapping[str, str]:
    """``namespaces``, checked: a mapping of str prefixes to str URIs."""
    if namespaces is None:
        return _NO_NAMESPACES
    if not isinstance(namespaces, Mapping):
        raise TypeError(
            f"namespaces must be a mapping of prefixes to URIs, not {type(namespaces).__name__}"
        )
    for prefix, uri in namespaces.items():
        if not isinstance(prefix, str) or not isinstance(uri, str):
            raise TypeError(
                f"namespaces must map str prefixes to str URIs, not {prefix!r}: {uri!r}"
            )
    return namespaces
