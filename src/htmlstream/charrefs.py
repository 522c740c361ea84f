"""Resolve HTML character references in already-decoded text.

This implements the WHATWG HTML tokenizer's *character reference state* and its
sub-states (named, ambiguous ampersand, numeric, hexadecimal and decimal character
reference states, and the numeric character reference end state) as a pure function
over a ``str``, so that the tokenizer can hand out raw text and resolve references
lazily, after the fact.

The result is exactly the text the tokenizer would have produced for the same input
in the data state (``in_attribute=False``) or in an attribute value state
(``in_attribute=True``); parse errors are not reported.

Named references use the full WHATWG table, :data:`html.entities.html5`.  Every name
in it is an ASCII letter followed by ASCII alphanumerics, optionally terminated by
``;``, and the names without ``;`` (the legacy ones, such as ``amp`` or ``not``) are
all short.  The longest table name that is a prefix of the text after ``&`` is
therefore either the whole alphanumeric run followed by ``;`` or a legacy name that
is a prefix of that run, and can be found with at most a handful of dictionary
look-ups per reference.
"""

from __future__ import annotations

import re
from html.entities import html5 as _HTML5

__all__ = ["decode_charrefs"]

# Full replacements for the common, well-formed spelling ``&name;``.  Such a
# reference ends in ``;``, so it is resolved the same way in text and in attributes.
_TERMINATED: dict[str, str] = {
    "&" + name: value for name, value in _HTML5.items() if name.endswith(";")
}

# Legacy names, matched without a ``;`` (``amp``, ``lt``, ``not``, ``frac12`` ...).
_LEGACY: dict[str, str] = {name: value for name, value in _HTML5.items() if not name.endswith(";")}
_LEGACY_MAX_LEN = max(map(len, _LEGACY))
_LEGACY_MIN_LEN = min(map(len, _LEGACY))

# The numeric character reference end state's replacement table: code points
# 0x80-0x9F that browsers map as windows-1252 (0x81, 0x8D, 0x8F, 0x90 and 0x9D are
# not in it and are kept as they are).
_C1_REPLACEMENTS: dict[int, str] = {
    0x80: "\u20ac",  # EURO SIGN
    0x82: "\u201a",  # SINGLE LOW-9 QUOTATION MARK
    0x83: "\u0192",  # LATIN SMALL LETTER F WITH HOOK
    0x84: "\u201e",  # DOUBLE LOW-9 QUOTATION MARK
    0x85: "\u2026",  # HORIZONTAL ELLIPSIS
    0x86: "\u2020",  # DAGGER
    0x87: "\u2021",  # DOUBLE DAGGER
    0x88: "\u02c6",  # MODIFIER LETTER CIRCUMFLEX ACCENT
    0x89: "\u2030",  # PER MILLE SIGN
    0x8A: "\u0160",  # LATIN CAPITAL LETTER S WITH CARON
    0x8B: "\u2039",  # SINGLE LEFT-POINTING ANGLE QUOTATION MARK
    0x8C: "\u0152",  # LATIN CAPITAL LIGATURE OE
    0x8E: "\u017d",  # LATIN CAPITAL LETTER Z WITH CARON
    0x91: "\u2018",  # LEFT SINGLE QUOTATION MARK
    0x92: "\u2019",  # RIGHT SINGLE QUOTATION MARK
    0x93: "\u201c",  # LEFT DOUBLE QUOTATION MARK
    0x94: "\u201d",  # RIGHT DOUBLE QUOTATION MARK
    0x95: "\u2022",  # BULLET
    0x96: "\u2013",  # EN DASH
    0x97: "\u2014",  # EM DASH
    0x98: "\u02dc",  # SMALL TILDE
    0x99: "\u2122",  # TRADE MARK SIGN
    0x9A: "\u0161",  # LATIN SMALL LETTER S WITH CARON
    0x9B: "\u203a",  # SINGLE RIGHT-POINTING ANGLE QUOTATION MARK
    0x9C: "\u0153",  # LATIN SMALL LIGATURE OE
    0x9E: "\u017e",  # LATIN SMALL LETTER Z WITH CARON
    0x9F: "\u0178",  # LATIN CAPITAL LETTER Y WITH DIAERESIS
}

_MAX_CODE_POINT = 0x10FFFF
# Digit counts (leading zeros stripped) above which a value is certainly > 0x10FFFF.
_MAX_DEC_DIGITS = len(str(_MAX_CODE_POINT))  # 7
_MAX_HEX_DIGITS = len(f"{_MAX_CODE_POINT:x}")  # 6

# One match per reference candidate: ``&#x`` + hex digits, ``&#`` + decimal digits
# (each with an optional ``;``), or ``&`` + a run that could start a named reference.
# Anything else after ``&`` (including ``&#`` / ``&#x`` without digits) is not a
# reference and is left alone.
_CHARREF_RE = re.compile(
    r"&(?:"
    r"#(?:[xX](?P<hex>[0-9A-Fa-f]+)|(?P<dec>[0-9]+));?"
    r"|(?P<name>[A-Za-z][A-Za-z0-9]*)(?P<semi>;?)"
    r")"
)


def _code_point_to_str(digits: str, radix: int) -> str:
    """Return the text for a numeric reference with the given (non-empty) *digits*.

    Implements the numeric character reference end state; values too large to be a
    code point are detected from the digit count, so huge digit strings are cheap.
    """
    significant = digits.lstrip("0")
    if not significant:
        return "\ufffd"  # 0x00
    max_digits = _MAX_HEX_DIGITS if radix == 16 else _MAX_DEC_DIGITS
    if len(significant) > max_digits:
        return "\ufffd"
    value = int(significant, radix)
    if value > _MAX_CODE_POINT or 0xD800 <= value <= 0xDFFF:
        return "\ufffd"
    if 0x80 <= value <= 0x9F:
        return _C1_REPLACEMENTS.get(value) or chr(value)
    # Noncharacters and other controls are parse errors only; they are kept.
    return chr(value)


def _longest_legacy(run: str) -> str | None:
    """Return the longest legacy (``;``-less) entity name that is a prefix of *run*."""
    for length in range(min(len(run), _LEGACY_MAX_LEN), _LEGACY_MIN_LEN - 1, -1):
        prefix = run[:length]
        if prefix in _LEGACY:
            return prefix
    return None


def _replace(match: re.Match[str], in_attribute: bool) -> str:
    """Return the replacement text for one :data:`_CHARREF_RE` match."""
    whole = match.group()
    value = _TERMINATED.get(whole)
    if value is not None:
        return value

    hex_digits = match.group("hex")
    if hex_digits is not None:
        return _code_point_to_str(hex_digits, 16)
    dec_digits = match.group("dec")
    if dec_digits is not None:
        return _code_point_to_str(dec_digits, 10)

    # A named reference whose longest match is not ``run;`` (handled above), so it
    # can only be a legacy name that is a prefix of the run.
    run: str = match.group("name")
    legacy = _longest_legacy(run)
    if legacy is None:
        return whole
    rest = whole[1 + len(legacy) :]
    if in_attribute:
        # The character after the name: the rest of the run / the ``;`` if any,
        # otherwise the first character after the match.
        if rest:
            following = rest[0]
        else:
            end = match.end()
            following = match.string[end : end + 1]
        if following == "=" or (following.isascii() and following.isalnum()):
            return whole
    return _LEGACY[legacy] + rest


def _replace_in_text(match: re.Match[str]) -> str:
    return _replace(match, False)


def _replace_in_attribute(match: re.Match[str]) -> str:
    return _replace(match, True)


def decode_charrefs(text: str, *, in_attribute: bool = False) -> str:
    """Resolve every character reference in *text* the way an HTML tokenizer does.

    *text* is already-decoded character data as it appeared in the source, e.g. the
    raw content of a text token or of an attribute value.  With *in_attribute* true,
    the attribute value rules apply: a named reference that does not end in ``;`` and
    is followed by ``=`` or an ASCII alphanumeric is left as it is.

    Named references use the longest matching name of :data:`html.entities.html5`
    (so ``&notit;`` is ``¬it;``); numeric references are mapped as in the numeric
    character reference end state (0, surrogates and values above U+10FFFF become
    U+FFFD, 0x80-0x9F follow the windows-1252 table).  Anything that is not a
    reference, such as a lone ``&`` or ``&#x`` without digits, is kept verbatim.

    >>> decode_charrefs("a &lt; b &amp c &#x41;&#66 &bogus;")
    'a < b & c AB &bogus;'
    >>> decode_charrefs("?a=1&ampb=2", in_attribute=True)
    '?a=1&ampb=2'
    """
    if not isinstance(text, str):
        raise TypeError(f"decode_charrefs(): text must be a str, not {type(text).__name__}")
    if "&" not in text:
        return text
    replace = _replace_in_attribute if in_attribute else _replace_in_text
    return _CHARREF_RE.sub(replace, text)
