"""The parse errors of the WHATWG tokenizer, looked for only when an ``on_error`` callback is set.

The lexer (``_engine/lexer.pyx``) does not look for errors: its fast paths skip whole runs of
bytes.  When a :class:`ErrorChecker` is attached (``Lexer.errors``), the lexer hands it every
piece of text (with the tokenizer state it was read in) and every markup token (tag, comment,
DOCTYPE, or the token the input ended inside), in stream order: together they are the whole
input, each byte once.  The checker reads each piece again with the states of the tokenization
section that apply to it, and finds the errors they report, where they report them.  The token
boundaries are the lexer's, so the errors of a token do not depend on how the input was cut
into chunks; what could (a character reference or a ``<`` at the end of a text piece) is held
until the next piece or the end of input tells.

Positions: the error's stream offset in bytes, and its line and column as html5lib-tests count
them: lines from 1, ended by CR, LF or CRLF; columns from 1, in UTF-16 code units (in UTF-8,
one per character below U+10000 and two for any other; in other encodings, one per byte).
The input-stream errors (controls, noncharacters, surrogates) look at UTF-8 sequences only when
the document is UTF-8; in every encoding the ASCII controls are found.

Tree-construction errors are not the tokenizer's and are not reported.
"""

from __future__ import annotations

import re
from html.entities import html5 as _HTML5
from typing import Final

from htmlstream.errors import ParseError, ParseErrorCallback

__all__ = ["ErrorChecker"]

# What Lexer.report_segment hands over (lexer.pyx: SEG_*, EOF_*).
SEG_TEXT: Final = 0
EOF_IN_SCRIPT_COMMENT: Final = 1
EOF_IN_CDATA: Final = 2

# Text types (htmlstream.TextType).
_DATA, _RCDATA, _CDATA = 0, 1, 5

# What follows a piece of text: more text may (_MORE), a markup token does (_MARKUP), or
# nothing (_EOF).
_MORE, _MARKUP, _EOF = 0, 1, 2

# Held text is checked at once beyond this many bytes (a numeric reference of more digits
# than any real one; the lexer itself holds at most 1,024).
_MAX_HELD = 64 * 1024

_WS: Final = frozenset(b"\t\n\x0c\r ")
_ALNUM: Final = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ALPHA: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_DEC: Final = frozenset(b"0123456789")
_HEX: Final = frozenset(b"0123456789ABCDEFabcdef")
_UNQUOTED_BAD: Final = frozenset(b"\"'<=`")
_FFFD: Final = "\ufffd".encode()

# Named references: the names that end in ';' (without it) and the legacy ones without.
_TERMINATED: Final = frozenset(n[:-1].encode() for n in _HTML5 if n.endswith(";"))
_LEGACY: Final = frozenset(n.encode() for n in _HTML5 if not n.endswith(";"))
_LEGACY_MAX = max(map(len, _LEGACY))
_LEGACY_MIN = min(map(len, _LEGACY))

# The input stream's errors: ASCII controls (not white space, not NUL) in every encoding; in
# UTF-8 also the C1 controls, the noncharacters and (CESU-style) surrogates.  Each is looked
# for only where a quick test says it may be (a regular expression steps through every byte
# of a long run; bytes.translate and ``in`` do not): the ASCII controls are what a translation
# that deletes every other byte leaves, and the UTF-8 ones start with a given byte.
_ASCII_CONTROLS: Final = re.compile(rb"[\x01-\x08\x0b\x0e-\x1f\x7f]")
_NOT_ASCII_CONTROL: Final = bytes(
    b for b in range(256) if not (0x01 <= b <= 0x08 or b == 0x0B or 0x0E <= b <= 0x1F or b == 0x7F)
)
_UTF8_INPUT_ERRORS: Final = [
    (b"\xc2", re.compile(rb"\xc2[\x80-\x9f]"), "control-character-in-input-stream"),
    (b"\xef", re.compile(rb"\xef(?:\xb7[\x90-\xaf]|\xbf[\xbe\xbf])"),
     "noncharacter-in-input-stream"),
    (b"\xbf\xbe", re.compile(rb"(?:\xf0[\x9f\xaf\xbf]|[\xf1-\xf3][\x8f\x9f\xaf\xbf]|\xf4\x8f)"
                             rb"\xbf\xbe"), "noncharacter-in-input-stream"),
    (b"\xbf\xbf", re.compile(rb"(?:\xf0[\x9f\xaf\xbf]|[\xf1-\xf3][\x8f\x9f\xaf\xbf]|\xf4\x8f)"
                             rb"\xbf\xbf"), "noncharacter-in-input-stream"),
    (b"\xed", re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]"), "surrogate-in-input-stream"),
]


def _input_errors(raw: bytes, utf8: bool) -> list[tuple[int, str]]:
    """The input stream's errors in ``raw``: (index, code), in order."""
    found: list[tuple[int, str]] = []
    if raw.translate(None, _NOT_ASCII_CONTROL):
        found.extend((m.start(), "control-character-in-input-stream")
                     for m in _ASCII_CONTROLS.finditer(raw))
    if utf8 and not raw.isascii():
        for lead, pattern, code in _UTF8_INPUT_ERRORS:
            if lead in raw:
                found.extend((m.start(), code) for m in pattern.finditer(raw))
        found.sort()
    return found


# Columns count UTF-16 code units, as html5lib-tests do: UTF-8 continuation bytes count
# nothing, and the lead byte of a four-byte sequence (a character beyond U+FFFF) two.
_CONTINUATION: Final = bytes(range(0x80, 0xC0))
_BELOW_F0: Final = bytes(range(0xF0))

# What each text type looks at.
_TEXT_SPECIAL: Final = {
    _DATA: re.compile(rb"[\x00<&]"),
    _RCDATA: re.compile(rb"[\x00&]"),
    2: re.compile(rb"\x00"),
    3: re.compile(rb"\x00"),
    4: re.compile(rb"\x00"),
}

Errors = list[tuple[int, str]]

# Fast paths for the usual markup, which has no error (but duplicate attributes, looked for
# here): a start tag's name, then one attribute at a time (a name that does not start with
# '=', with no NUL or quote or '<' in it; a value quoted or not, with no NUL or '&' in it, and
# nothing an unquoted value must not hold), then its end; an end tag without attributes; a
# comment that is not abruptly closed and holds no NUL.  Anything else takes the full states.
_S = rb"[\t\n\x0c\r ]"
_CLEAN_TAG_NAME: Final = re.compile(rb"<[A-Za-z][^\t\n\x0c\r />\x00]*")
_CLEAN_ATTR: Final = re.compile(
    _S + rb"+([^\t\n\x0c\r />=\x00\"'<][^\t\n\x0c\r />=\x00\"'<]*)"
    + rb"(?:" + _S + rb"*=" + _S
    + rb"*(?:\"[^\"\x00&]*\"|'[^'\x00&]*'|[^\t\n\x0c\r >\x00\"'<=`&]+))?"
)
_CLEAN_START_TAG: Final = re.compile(
    _CLEAN_TAG_NAME.pattern + rb"(?:" + _CLEAN_ATTR.pattern + rb")*" + _S + rb"*/?>"
)
_CLEAN_END_TAG: Final = re.compile(rb"</[A-Za-z][^\t\n\x0c\r />\x00]*" + _S + rb"*>")
_CLEAN_COMMENT: Final = re.compile(rb"<!--(?!-?>)[^\x00]*-->", re.DOTALL)


def _clean_markup(raw: bytes) -> bool:
    """Whether ``raw`` is markup of the usual kinds with no error (the patterns above)."""
    second = raw[1] if len(raw) > 1 else 0
    if second == 0x2F:      # '</'
        return _CLEAN_END_TAG.fullmatch(raw) is not None
    if second == 0x21:      # '<!'
        return _CLEAN_COMMENT.fullmatch(raw) is not None and raw.find(b"<!--", 4) < 0
    if _CLEAN_START_TAG.fullmatch(raw) is None:
        return False
    # The attributes follow each other, so findall finds them in turn (and nothing else: a
    # match needs white space and a name, which the tag's end is not).
    name = _CLEAN_TAG_NAME.match(raw)
    assert name is not None
    names = _CLEAN_ATTR.findall(raw, name.end())
    return len(names) < 2 or len({name.lower() for name in names}) == len(names)


def _numeric_end(value: int) -> str | None:
    """The error of the numeric character reference end state for ``value``, if any."""
    if value == 0:
        return "null-character-reference"
    if value > 0x10FFFF:
        return "character-reference-outside-unicode-range"
    if 0xD800 <= value <= 0xDFFF:
        return "surrogate-character-reference"
    if 0xFDD0 <= value <= 0xFDEF or (value & 0xFFFE) == 0xFFFE:
        return "noncharacter-character-reference"
    if value == 0x0D or ((value < 0x20 or 0x7F <= value <= 0x9F) and value not in (9, 10, 12)):
        return "control-character-reference"
    return None


def _charref(raw: bytes, k: int, n: int, start: int, in_attr: bool, final: bool,
             errs: Errors) -> int | None:
    """Read the character reference at ``raw[k] == '&'`` (bytes up to ``n``): add its errors,
    return the index after what it consumed, or None if more bytes are needed to tell (only
    when not ``final``)."""
    j = k + 1
    if j >= n:
        return None if not final else j
    c = raw[j]
    if c == 0x23:                                   # '#': numeric
        q = j + 1
        hexa = q < n and raw[q] in (0x58, 0x78)
        if hexa:
            q += 1
        if q >= n and not final:
            return None
        d0 = q
        digits = _HEX if hexa else _DEC
        while q < n and raw[q] in digits:
            q += 1
        if q == d0:
            errs.append((start + q, "absence-of-digits-in-numeric-character-reference"))
            return q
        if q >= n and not final:
            return None
        significant = raw[d0:q].lstrip(b"0")
        value = 0x110000 if len(significant) > 8 else int(significant or b"0", 16 if hexa else 10)
        if q < n and raw[q] == 0x3B:
            q += 1
        else:
            errs.append((start + q, "missing-semicolon-after-character-reference"))
        code = _numeric_end(value)
        if code is not None:
            errs.append((start + q, code))
        return q
    if c not in _ALNUM:
        return j
    q = j
    while q < n and raw[q] in _ALNUM:
        q += 1
    if q >= n and not final:
        return None
    run = raw[j:q]
    if q < n and raw[q] == 0x3B and run in _TERMINATED:
        return q + 1
    for length in range(min(len(run), _LEGACY_MAX), _LEGACY_MIN - 1, -1):
        if run[:length] in _LEGACY:
            e = j + length
            if in_attr and e < n and (raw[e] == 0x3D or raw[e] in _ALNUM):
                return e        # not a reference in an attribute value
            errs.append((start + e, "missing-semicolon-after-character-reference"))
            return e
    # The ambiguous ampersand state: an unknown name is an error only when ';' ends it.
    if q < n and raw[q] == 0x3B:
        errs.append((start + q, "unknown-named-character-reference"))
    return q


def _text(raw: bytes, start: int, text_type: int, tail: int, errs: Errors) -> int:
    """Check a piece of text; return how much of it is decided (the rest, a possible reference
    or '<' at its end, waits for what follows when ``tail`` is _MORE)."""
    n = len(raw)
    # (quick tests first; CDATA sections have no tokenizer errors inside)
    if text_type == _DATA:
        if b"&" not in raw and b"<" not in raw and b"\x00" not in raw:
            return n
    elif text_type == _RCDATA:
        if b"&" not in raw and b"\x00" not in raw:
            return n
    elif text_type == _CDATA or b"\x00" not in raw:
        return n
    special = _TEXT_SPECIAL[text_type]
    i = 0
    while True:
        m = special.search(raw, i)
        if m is None:
            return n
        k = m.start()
        c = raw[k]
        if c == 0:
            errs.append((start + k, "unexpected-null-character"))
            i = k + 1
        elif c == 0x26:                              # '&'
            r = _charref(raw, k, n, start, False, tail != _MORE, errs)
            if r is None:
                return k
            i = r
        else:                                        # '<' in data that is not a tag: text
            q = k + 2 if k + 1 < n and raw[k + 1] == 0x2F else k + 1
            if q >= n:
                if tail == _MORE:
                    return k
                errs.append((start + n, "eof-before-tag-name" if tail == _EOF
                             else "invalid-first-character-of-tag-name"))
            else:
                errs.append((start + q, "invalid-first-character-of-tag-name"))
            i = q


def _match_ci(raw: bytes, i: int, word: bytes) -> bool:
    return raw[i:i + len(word)].lower() == word


def _markup(raw: bytes, start: int, errs: Errors) -> int:
    """Check a markup token (from its '<'): tag, comment, bogus comment or DOCTYPE, complete
    or ended by the end of input.  The states of the tokenization section, from the tag open
    state.  Returns where the token ends: the index of its '>', or ``len(raw)`` if the input
    ended inside it (the lexer's tokens end there: tests check it)."""
    n = len(raw)

    def err(i: int, code: str) -> None:
        errs.append((start + i, code))

    i = 1
    if i >= n:
        return i
    c = raw[i]
    if c == 0x21:                                   # '<!'
        i = 2
        if raw.startswith(b"--", i):
            return _comment(raw, i + 2, start, errs)
        if _match_ci(raw, i, b"doctype"):
            return _doctype(raw, i + 7, start, errs)
        if raw.startswith(b"[CDATA[", i):
            err(i + 6, "cdata-in-html-content")
            return _bogus_comment(raw, i + 7, start, errs)
        err(i, "incorrectly-opened-comment")
        return _bogus_comment(raw, i, start, errs)
    if c == 0x3F:                                   # '<?'
        err(i, "unexpected-question-mark-instead-of-tag-name")
        return _bogus_comment(raw, i, start, errs)
    is_end = c == 0x2F
    if is_end:
        i = 2
        if i >= n:
            err(n, "eof-before-tag-name")
            return n
        c = raw[i]
        if c == 0x3E:
            err(i, "missing-end-tag-name")
            return i
        if c not in _ALPHA:
            err(i, "invalid-first-character-of-tag-name")
            return _bogus_comment(raw, i, start, errs)
    return _tag(raw, i, start, is_end, errs)


def _tag(raw: bytes, i: int, start: int, is_end: bool,
         errs: Errors) -> int:
    """The tag name state onwards, from the name's first letter at ``raw[i]``."""
    n = len(raw)
    names: set[bytes] = set()
    n_attrs = 0
    self_closing = False

    def err(at: int, code: str) -> None:
        errs.append((start + at, code))

    def name_done(ns: int, ne: int, at: int) -> None:
        name = raw[ns:ne].lower().replace(b"\x00", _FFFD)
        if name in names:
            err(at, "duplicate-attribute")
        else:
            names.add(name)

    # tag name
    while True:
        if i >= n:
            err(n, "eof-in-tag")
            return n
        c = raw[i]
        if c in _WS:
            i += 1
            break
        if c == 0x2F:
            i += 1
            self_closing = True
            break
        if c == 0x3E:
            break
        if c == 0:
            err(i, "unexpected-null-character")
        i += 1
    state = "self" if self_closing else "before_name"
    self_closing = False
    ns = 0
    while True:
        if state == "before_name":
            while i < n and raw[i] in _WS:
                i += 1
            if i >= n or raw[i] == 0x2F or raw[i] == 0x3E:
                state = "after_name"
                continue
            n_attrs += 1
            ns = i
            if raw[i] == 0x3D:
                err(i, "unexpected-equals-sign-before-attribute-name")
                i += 1
            state = "name"
        elif state == "name":
            while i < n:
                c = raw[i]
                if c in _WS or c == 0x2F or c == 0x3E or c == 0x3D:
                    break
                if c == 0:
                    err(i, "unexpected-null-character")
                elif c == 0x22 or c == 0x27 or c == 0x3C:
                    err(i, "unexpected-character-in-attribute-name")
                i += 1
            name_done(ns, i, i)
            if i < n and raw[i] == 0x3D:
                i += 1
                state = "before_value"
            else:
                state = "after_name"
        elif state == "after_name":
            while i < n and raw[i] in _WS:
                i += 1
            if i >= n:
                err(n, "eof-in-tag")
                return n
            c = raw[i]
            if c == 0x2F:
                i += 1
                state = "self"
            elif c == 0x3D:
                i += 1
                state = "before_value"
            elif c == 0x3E:
                break
            else:
                n_attrs += 1
                ns = i
                state = "name"
        elif state == "before_value":
            while i < n and raw[i] in _WS:
                i += 1
            if i < n and (raw[i] == 0x22 or raw[i] == 0x27):
                q = raw[i]
                i += 1
                end = raw.find(q, i)
                vend = n if end < 0 else end
                _value(raw, i, vend, start, errs)
                if end < 0:
                    err(n, "eof-in-tag")
                    return n
                i = end + 1
                state = "after_quoted"
            elif i < n and raw[i] == 0x3E:
                err(i, "missing-attribute-value")
                break
            else:
                vend = i
                while vend < n and raw[vend] not in _WS and raw[vend] != 0x3E:
                    vend += 1
                k = i
                while k < vend:
                    c = raw[k]
                    if c in _UNQUOTED_BAD:
                        err(k, "unexpected-character-in-unquoted-attribute-value")
                    elif c == 0:
                        err(k, "unexpected-null-character")
                    elif c == 0x26:
                        r = _charref(raw, k, vend, start, True, True, errs)
                        assert r is not None
                        k = r
                        continue
                    k += 1
                i = vend
                if i >= n:
                    err(n, "eof-in-tag")
                    return n
                if raw[i] == 0x3E:
                    break
                i += 1
                state = "before_name"
        elif state == "after_quoted":
            if i >= n:
                err(n, "eof-in-tag")
                return n
            c = raw[i]
            if c in _WS:
                i += 1
                state = "before_name"
            elif c == 0x2F:
                i += 1
                state = "self"
            elif c == 0x3E:
                break
            else:
                err(i, "missing-whitespace-between-attributes")
                state = "before_name"
        else:   # "self": the self-closing start tag state
            if i >= n:
                err(n, "eof-in-tag")
                return n
            if raw[i] == 0x3E:
                self_closing = True
                break
            err(i, "unexpected-solidus-in-tag")
            state = "before_name"
    # raw[i] is the tag's '>'
    if is_end:
        if n_attrs:
            err(i, "end-tag-with-attributes")
        if self_closing:
            err(i, "end-tag-with-trailing-solidus")
    return i


def _value(raw: bytes, i: int, vend: int, start: int, errs: Errors) -> None:
    """A quoted attribute value ``raw[i:vend]``: NULs and character references."""
    while True:
        k = raw.find(b"\x00", i, vend)
        a = raw.find(b"&", i, vend)
        if k < 0 and a < 0:
            return
        if a < 0 or (0 <= k < a):
            errs.append((start + k, "unexpected-null-character"))
            i = k + 1
        else:
            r = _charref(raw, a, vend, start, True, True, errs)
            assert r is not None
            i = r


def _bogus_comment(raw: bytes, i: int, start: int, errs: Errors) -> int:
    """The bogus comment state (and bogus DOCTYPE's), from ``raw[i]``: up to the first '>'."""
    end = raw.find(b">", i)
    if end < 0:
        end = len(raw)
    k = raw.find(b"\x00", i, end)
    while k >= 0:
        errs.append((start + k, "unexpected-null-character"))
        k = raw.find(b"\x00", k + 1, end)
    return end


def _comment(raw: bytes, i: int, start: int, errs: Errors) -> int:
    """The comment start state onwards, after '<!--'."""
    n = len(raw)

    def err(at: int, code: str) -> None:
        errs.append((start + at, code))

    state = "start"
    while True:
        if state in ("start", "start_dash"):
            if i >= n:
                if state == "start_dash":
                    err(n, "eof-in-comment")
                    return n
                state = "comment"
                continue
            c = raw[i]
            if c == 0x2D:
                state = "start_dash" if state == "start" else "end"
                i += 1
            elif c == 0x3E:
                err(i, "abrupt-closing-of-empty-comment")
                return i
            else:
                state = "comment"
        elif state == "comment":
            if i >= n:
                err(n, "eof-in-comment")
                return n
            c = raw[i]
            if c == 0x3C:
                i += 1
                # the comment less-than sign states: '<!--' nested
                while i < n and raw[i] == 0x3C:
                    i += 1
                if raw.startswith(b"!", i):
                    i += 1
                    if raw.startswith(b"-", i):
                        i += 1
                        if raw.startswith(b"-", i):
                            i += 1
                            if i < n and raw[i] != 0x3E:
                                err(i, "nested-comment")
                            state = "end"
                        else:
                            state = "end_dash"
            elif c == 0x2D:
                i += 1
                state = "end_dash"
            else:
                if c == 0:
                    err(i, "unexpected-null-character")
                i += 1
        elif state == "end_dash":
            if i >= n:
                err(n, "eof-in-comment")
                return n
            if raw[i] == 0x2D:
                i += 1
                state = "end"
            else:
                state = "comment"
        elif state == "end":
            if i >= n:
                err(n, "eof-in-comment")
                return n
            c = raw[i]
            if c == 0x3E:
                return i
            if c == 0x21:
                i += 1
                state = "end_bang"
            elif c == 0x2D:
                i += 1
            else:
                state = "comment"
        else:   # "end_bang"
            if i >= n:
                err(n, "eof-in-comment")
                return n
            c = raw[i]
            if c == 0x2D:
                i += 1
                state = "end_dash"
            elif c == 0x3E:
                err(i, "incorrectly-closed-comment")
                return i
            else:
                state = "comment"


def _doctype(raw: bytes, i: int, start: int, errs: Errors) -> int:
    """The DOCTYPE state onwards, after '<!DOCTYPE'."""
    n = len(raw)

    def err(at: int, code: str) -> None:
        errs.append((start + at, code))

    def skip_ws(at: int) -> int:
        while at < n and raw[at] in _WS:
            at += 1
        return at

    def quoted(at: int, which: str) -> int:
        """A quoted identifier from its quote at ``raw[at]``: the index after the closing
        quote, or -1 - (where the token ended) when it ended inside it."""
        q = raw[at]
        at += 1
        while at < n:
            c = raw[at]
            if c == q:
                return at + 1
            if c == 0:
                err(at, "unexpected-null-character")
            elif c == 0x3E:
                err(at, f"abrupt-doctype-{which}-identifier")
                return -1 - at
            at += 1
        err(n, "eof-in-doctype")
        return -1 - n

    # DOCTYPE state
    if i >= n:
        err(n, "eof-in-doctype")
        return n
    if raw[i] in _WS:
        i += 1
    elif raw[i] != 0x3E:
        err(i, "missing-whitespace-before-doctype-name")
    # before DOCTYPE name
    i = skip_ws(i)
    if i >= n:
        err(n, "eof-in-doctype")
        return n
    if raw[i] == 0x3E:
        err(i, "missing-doctype-name")
        return i
    while i < n and raw[i] not in _WS and raw[i] != 0x3E:
        if raw[i] == 0:
            err(i, "unexpected-null-character")
        i += 1
    if i >= n:
        err(n, "eof-in-doctype")
        return n
    # after DOCTYPE name
    i = skip_ws(i)
    if i >= n:
        err(n, "eof-in-doctype")
        return n
    if raw[i] == 0x3E:
        return i
    if _match_ci(raw, i, b"public"):
        which = "public"
    elif _match_ci(raw, i, b"system"):
        which = "system"
    else:
        err(i, "invalid-character-sequence-after-doctype-name")
        return _bogus_comment(raw, i, start, errs)
    i += 6
    # after the keyword
    if i >= n:
        err(n, "eof-in-doctype")
        return n
    c = raw[i]
    if c in _WS:
        i = skip_ws(i)
        if i >= n:
            err(n, "eof-in-doctype")
            return n
        c = raw[i]
        if c != 0x22 and c != 0x27 and c != 0x3E:
            err(i, f"missing-quote-before-doctype-{which}-identifier")
            return _bogus_comment(raw, i, start, errs)
    elif c == 0x22 or c == 0x27:
        err(i, f"missing-whitespace-after-doctype-{which}-keyword")
    elif c != 0x3E:
        err(i, f"missing-quote-before-doctype-{which}-identifier")
        return _bogus_comment(raw, i, start, errs)
    if c == 0x3E:
        err(i, f"missing-doctype-{which}-identifier")
        return i
    r = quoted(i, which)
    if r < 0:
        return -1 - r
    i = r
    if which == "public":
        # after the public identifier, between the identifiers
        if i >= n:
            err(n, "eof-in-doctype")
            return n
        c = raw[i]
        if c in _WS:
            i = skip_ws(i)
            if i >= n:
                err(n, "eof-in-doctype")
                return n
            c = raw[i]
            if c == 0x3E:
                return i
            if c != 0x22 and c != 0x27:
                err(i, "missing-quote-before-doctype-system-identifier")
                return _bogus_comment(raw, i, start, errs)
        elif c == 0x3E:
            return i
        elif c == 0x22 or c == 0x27:
            err(i, "missing-whitespace-between-doctype-public-and-system-identifiers")
        else:
            err(i, "missing-quote-before-doctype-system-identifier")
            return _bogus_comment(raw, i, start, errs)
        r = quoted(i, "system")
        if r < 0:
            return -1 - r
        i = r
    # after the system identifier
    i = skip_ws(i)
    if i >= n:
        err(n, "eof-in-doctype")
        return n
    if raw[i] != 0x3E:
        err(i, "unexpected-character-after-doctype-system-identifier")
        return _bogus_comment(raw, i, start, errs)
    return i


class ErrorChecker:
    """Finds the parse errors of the pieces a lexer hands it (``Lexer.errors``) and calls
    ``callback`` with each, in input order.  ``utf8``: the document is UTF-8 (columns count
    characters; non-ASCII input-stream errors are looked for).

    The pieces checked are kept (joined) until :meth:`flush`, which the lexer calls at the end
    of each chunk: the input stream's errors and the positions are then worked out over the
    whole run at once, not piece by piece."""

    def __init__(self, callback: ParseErrorCallback, *, utf8: bool = True) -> None:
        self._callback = callback
        self._utf8 = utf8
        # the position the reports have reached: stream offset, line, characters into the
        # line, and whether the last byte was a CR (a following LF ends no other line)
        self._pos = 0
        self._line = 1
        self._col = 0
        self._prev_cr = False
        # checked pieces from _pos on, not yet reported, and the tokenizer errors found in them
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._errs: Errors = []
        # text not yet checked (what it is depends on what follows), its offset and type
        self._held = b""
        self._held_start = 0
        self._held_type = -1

    # -------------------------------------------------------------- called by the lexer

    def segment(self, kind: int, raw: bytes, start: int, arg: int) -> None:
        """A piece of text (``kind`` 0, ``arg`` its text type) or a markup token (1)."""
        if start == 0 and self._utf8 and raw.startswith(b"\xef\xbb\xbf"):
            self._col = -1      # (a byte order mark is no character of the document)
        if self._held:
            if kind == SEG_TEXT and arg == self._held_type \
                    and self._held_start + len(self._held) == start:
                raw = self._held + raw
                start = self._held_start
                self._held = b""
            else:
                self._flush_held(_MARKUP)
        if kind == SEG_TEXT:
            done = _text(raw, start, arg, _MORE, self._errs)
            if done < len(raw):
                self._held = raw[done:]
                self._held_start = start + done
                self._held_type = arg
                raw = raw[:done]
            self._pending.append(raw)
            self._pending_len += len(raw)
            if len(self._held) > _MAX_HELD:
                self._flush_held(_MARKUP)
        else:
            if not _clean_markup(raw):
                _markup(raw, start, self._errs)
            self._pending.append(raw)
            self._pending_len += len(raw)

    def flush(self) -> None:
        """Report the errors of the pieces checked so far (the end of a chunk)."""
        if not self._pending_len and not self._errs:
            return
        raw = b"".join(self._pending)
        start = self._pos
        errs = self._errs
        self._pending = []
        self._pending_len = 0
        self._errs = []
        self._report(raw, start, errs)

    def end(self, offset: int, what: int) -> None:
        """The end of the input, at stream offset ``offset``, inside ``what`` (EOF_*)."""
        if self._held:
            self._flush_held(_EOF)
        if what == EOF_IN_SCRIPT_COMMENT:
            self._errs.append((offset, "eof-in-script-html-comment-like-text"))
        elif what == EOF_IN_CDATA:
            self._errs.append((offset, "eof-in-cdata"))
        self.flush()

    # -------------------------------------------------------------- reporting

    def _flush_held(self, tail: int) -> None:
        raw, start = self._held, self._held_start
        self._held = b""
        _text(raw, start, self._held_type, tail, self._errs)
        self._pending.append(raw)
        self._pending_len += len(raw)

    def _report(self, raw: bytes, start: int, errs: Errors) -> None:
        """Report the errors found in ``raw`` (at stream offset ``start``) with its input-stream
        errors, in offset order, and move the position past it."""
        found = [(start + i, 0, code) for i, code in _input_errors(raw, self._utf8)]
        if not found and not errs:
            self._advance(raw, start, start + len(raw))
            return
        if errs:
            # (the input stream's errors first at the same offset; the others as found)
            found.extend((offset, 1 + seq, code) for seq, (offset, code) in enumerate(errs))
            found.sort()
        for offset, _, code in found:
            self._advance(raw, start, offset)
            self._callback(ParseError(code, offset, self._line, self._col + 1))
        self._advance(raw, start, start + len(raw))

    def _chars(self, raw: bytes, i: int, j: int) -> int:
        if not self._utf8:
            return j - i
        part = raw[i:j]
        if part.isascii():
            return len(part)
        leads = part.translate(None, _CONTINUATION)
        return len(leads) + len(leads.translate(None, _BELOW_F0))

    def _advance(self, raw: bytes, start: int, offset: int) -> None:
        """Move the position to ``offset`` (in ``raw``, which starts at ``start``)."""
        i, j = self._pos - start, offset - start
        if j <= i:
            return
        cr = raw.count(b"\r", i, j)
        lf = raw.count(b"\n", i, j)
        if cr == 0 and lf == 0:
            self._col += self._chars(raw, i, j)
            self._prev_cr = False
        else:
            lines = cr + lf - raw.count(b"\r\n", i, j)
            if self._prev_cr and raw[i] == 0x0A:
                lines -= 1
            self._line += lines
            last = max(raw.rfind(b"\r", i, j), raw.rfind(b"\n", i, j))
            self._col = self._chars(raw, last + 1, j)
            self._prev_cr = raw[j - 1] == 0x0D
        self._pos = offset
