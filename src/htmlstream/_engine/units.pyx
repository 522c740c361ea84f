# cython: language_level=3
"""Rewritable units: what handlers receive, read and change while the document streams past.

(Compiled because one is made for every matched element and every handled text chunk; the public
names and their documentation are in :mod:`htmlstream.units`.)

A unit is valid only while its handler runs (an element's end-tag handlers and ``after`` and
``append`` content are kept until its end).  Changes are recorded, not applied: the engine writes
the unit once every handler has returned, from its raw bytes if nothing changed, rebuilt
otherwise, with the inserted content around it.
"""

cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF
from cpython.unicode cimport PyUnicode_DecodeASCII
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, realloc

from htmlstream._engine.ascii cimport (
    ascii_lower,
    ascii_lower_equals,
    low_bytes,
    lower,
    name_word,
)
from htmlstream._engine.taghash cimport INVALID_HASH, hash_bytes
from htmlstream._engine.treebuilder cimport fnv_name
from htmlstream._engine.constants cimport HTML_HASH
from htmlstream._engine.constants cimport DATA, RAWTEXT, RCDATA, SCRIPT_DATA, CDATA_SECTION
from htmlstream._engine.portable cimport FREE_THREADED, load_le64, plain_copy


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object)                 # O(1): the string's ASCII flag
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    Py_ssize_t PyBytes_GET_SIZE(object)
    char* PyBytes_AS_STRING(object)
    unsigned char* PyUnicode_1BYTE_DATA(object)
    str PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)

# A reused Element keeps the list of its last changes, emptied, for the next set_attribute (one
# list allocated and freed less per changed element): the list is the Element's own, never handed
# out, so emptying it in place and filling it again cannot be seen.
cdef extern from *:
    """
    static CYTHON_INLINE void hs_list_empty(PyObject* l) {
        PyListObject* o = (PyListObject*)l;
        Py_ssize_t i, n = Py_SIZE(o);
        Py_SET_SIZE(o, 0);      /* first: what an item's release runs finds the list empty */
        for (i = 0; i < n; i++)
            Py_DECREF(o->ob_item[i]);
    }
    static CYTHON_INLINE int hs_list_fill3(PyObject* l, PyObject* a, PyObject* b, PyObject* c) {
        PyListObject* o = (PyListObject*)l;
        if (Py_SIZE(o) != 0 || o->allocated < 3)
            return 0;
        Py_INCREF(a); Py_INCREF(b); Py_INCREF(c);
        o->ob_item[0] = a; o->ob_item[1] = b; o->ob_item[2] = c;
        Py_SET_SIZE(o, 3);
        return 1;
    }
    """
    void list_empty "hs_list_empty"(list l) noexcept
    bint list_fill3 "hs_list_fill3"(list l, object a, object b, object c) noexcept

# A reused Element's raw bytes are refilled in place when nothing else holds them (``el.raw``
# not kept by a handler) and their allocation is large enough: a new Element's tag gets a bytes
# object with room to spare (``raw_cap``).  Its cached hash is reset: the object is as new.
cdef extern from *:
    """
    #include "hs_portable.h"
    static CYTHON_INLINE PyObject* hs_bytes_room(const char* p, Py_ssize_t n, Py_ssize_t cap) {
        PyObject* b = PyBytes_FromStringAndSize(NULL, cap);
        if (b == NULL)
            return NULL;
        memcpy(PyBytes_AS_STRING(b), p, (size_t)n);
        PyBytes_AS_STRING(b)[n] = 0;
        Py_SET_SIZE(b, n);
        return b;
    }
    static CYTHON_INLINE int hs_bytes_refill(PyObject* b, Py_ssize_t cap, const char* p,
                                             Py_ssize_t n) {
    #if HS_FREE_THREADED
        return 0;
    #else
        if (Py_REFCNT(b) != 1 || cap < n || !PyBytes_CheckExact(b))
            return 0;
        memcpy(PyBytes_AS_STRING(b), p, (size_t)n);
        PyBytes_AS_STRING(b)[n] = 0;
        Py_SET_SIZE(b, n);
        _Py_COMP_DIAG_PUSH
        _Py_COMP_DIAG_IGNORE_DEPR_DECLS
        ((PyBytesObject*)b)->ob_shash = -1;
        _Py_COMP_DIAG_POP
        return 1;
    #endif
    }
    """
    bytes bytes_room "hs_bytes_room"(const char* p, Py_ssize_t n, Py_ssize_t cap)
    bint bytes_refill "hs_bytes_refill"(PyObject* b, Py_ssize_t cap, const char* p,
                                        Py_ssize_t n) noexcept

# An attribute value or a text chunk whose bytes are all "plain" (ASCII but '&', CR and NUL) is
# its characters: decode_value and _plain_text copy it without decoding (portable.plain_copy).

from htmlstream._engine import matcher as _matcher
from htmlstream.charrefs import decode_charrefs
from htmlstream.errors import EncodingError, HtmlStreamError
from htmlstream.tokens import TextType

import re
from codecs import getincrementaldecoder as _getincrementaldecoder
from typing import NamedTuple

HTML_NS = "http://www.w3.org/1999/xhtml"
SVG_NS = "http://www.w3.org/2000/svg"
MATHML_NS = "http://www.w3.org/1998/Math/MathML"
NAMESPACE_URIS = (HTML_NS, SVG_NS, MATHML_NS)

_TEXT_TYPES = tuple(TextType)
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_ATTR_ESCAPES = str.maketrans({"&": "&amp;", '"': "&quot;"})

#: The elements whose content is RAWTEXT, and RCDATA: only their own end tag ends it (the
#: output's seam checks, output.pyx, compare an end tag's name with the element's).
RAW_TEXT_ELEMENTS = (b"style", b"xmp", b"iframe", b"noembed", b"noframes", b"noscript")
RCDATA_ELEMENTS = (b"title", b"textarea")

# Sequences that text inserted into raw-text content must not contain (they would end it).
_RAW_CLOSERS = {
    SCRIPT_DATA: re.compile(r"</script[\t\n\f\r />]|</script$|<!--", re.IGNORECASE),
    # (the end tag of any raw-text element: the output checks the element's own with the
    # text next to it)
    RAWTEXT: re.compile(r"</(?:" + b"|".join(RAW_TEXT_ELEMENTS).decode() +
                        r")(?:[\t\n\f\r />]|$)", re.IGNORECASE),
    CDATA_SECTION: re.compile(r"]]>"),
}


# encoding -> {attribute name -> validated lower-case name bytes}, for set_attribute.  Shared by
# every thread: entries are only ever added with setdefault (an entry, once there, is never
# replaced or removed, so a value read from it stays alive; two threads racing on one name
# compute the same bytes), and the inner dicts stop growing at about 4096 names.
cdef dict _NAME_CACHE = {}
# The names the HTML parser gives SVG elements and SVG/MathML attributes in mixed case
# (lower-case name -> the DOM's); typed, so that a look-up is one dict probe.
cdef dict _SVG_TAG_NAMES = _matcher.SVG_TAG_NAMES
cdef dict _SVG_ATTRIBUTE_NAMES = _matcher.SVG_ATTRIBUTE_NAMES
cdef dict _MATHML_ATTRIBUTE_NAMES = _matcher.MATHML_ATTRIBUTE_NAMES
# The last lookup in it and the last value encoded by _attr_value_bytes: a handler that sets
# the same attribute to the same value on every element (same str objects, compared by
# identity: a str cannot change) skips the dict probes and the encoding.  Three globals that
# must agree: safe only under the GIL (nothing in between can run another thread's code), so
# a free-threaded build (FREE_THREADED, a compile-time constant) never reads or writes them.
cdef str _last_name = None
cdef str _last_name_encoding = None
cdef bytes _last_lname = None
cdef str _last_value = None
cdef str _last_value_encoding = None
cdef bytes _last_value_bytes = None
cdef str _last_quoted = None
cdef str _word_name = None            # (ascii_span: the last name compared as a word)
cdef unsigned long long _word = 0
cdef unsigned long long _word_mask = 0
cdef str _last_quoted_encoding = None
cdef bytes _last_quoted_bytes = None


#: The bytes of input Element.capture holds at most unless told otherwise (1 MiB).
DEFAULT_MAX_CAPTURE_BYTES = 1 << 20
# Interned names, so that reading a name makes no object: tag names by their hash (and whether
# the element is SVG's, whose names the parser adjusts), attribute names by their ASCII-lower-cased
# bytes (ASCII names without NUL only).  Open addressing in C arrays; a string, once in, stays
# (owned by _kept_names) and is never replaced; each table stops growing half full.  Written under
# the GIL only (nothing between a probe and its insert runs other Python code); a free-threaded
# build (FREE_THREADED) does not use them.
cdef struct NameSlot:
    uint64_t key                # tag: the name's hash; attribute: a hash of its lower-case bytes
    Py_ssize_t extra            # tag: 1 for an SVG element's name, else 0; attribute: its length
    PyObject* name              # NULL: free


cdef enum:
    TAG_BITS = 10
    ATTR_BITS = 9
    NAME_MAX = 64               # longer attribute names are not kept


cdef NameSlot _tag_slots[1 << TAG_BITS]
cdef NameSlot _attr_slots[1 << ATTR_BITS]
cdef Py_ssize_t _tag_count = 0
cdef Py_ssize_t _attr_count = 0
cdef list _kept_names = []


cdef inline size_t _slot(uint64_t key, int bits) noexcept nogil:
    return <size_t>((key * <uint64_t>0x9E3779B97F4A7C15ULL) >> (64 - bits))


cdef str _interned_tag_name(uint64_t h, Py_ssize_t svg):
    """The tag name of hash ``h`` kept by _keep_tag_name, or None."""
    cdef size_t i = _slot(h + <uint64_t>svg, TAG_BITS)
    cdef NameSlot* slot
    while True:
        slot = &_tag_slots[i]
        if slot.name == NULL:
            return None
        if slot.key == h and slot.extra == svg:
            return <str>slot.name
        i = (i + 1) & ((1 << TAG_BITS) - 1)


cdef void _keep_tag_name(uint64_t h, Py_ssize_t svg, str name):
    global _tag_count
    cdef size_t i = _slot(h + <uint64_t>svg, TAG_BITS)
    if _tag_count >= (1 << (TAG_BITS - 1)):
        return
    while _tag_slots[i].name != NULL:
        if _tag_slots[i].key == h and _tag_slots[i].extra == svg:
            return
        i = (i + 1) & ((1 << TAG_BITS) - 1)
    _kept_names.append(name)
    _tag_slots[i].key = h
    _tag_slots[i].extra = svg
    _tag_slots[i].name = <PyObject*>name
    _tag_count += 1


cdef inline bint _same_name(const unsigned char* p, const unsigned char* q,
                            Py_ssize_t n) noexcept nogil:
    """Whether p[:n] and q[:n] are equal ASCII-case-insensitively."""
    cdef Py_ssize_t i
    for i in range(n):
        if lower(p[i]) != lower(q[i]):
            return False
    return True


cdef str _attribute_name(const unsigned char* p, Py_ssize_t n):
    """The ASCII-lower-cased str of the attribute name p[:n] (interned), or None if it has a
    byte that is not ASCII, or NUL (the general path decodes those).  A name of up to eight
    bytes is its own key (its lower-cased bytes packed in an integer, so a hit needs no
    comparison of strings); a longer one is found by a hash and compared."""
    global _attr_count
    cdef uint64_t h = 0
    cdef Py_ssize_t j
    cdef unsigned char c
    cdef size_t i
    cdef NameSlot* slot
    cdef str name
    if n <= 8:
        for j in range(n):
            c = p[j]
            if c >= 0x80 or c == 0:
                return None
            h |= (<uint64_t>lower(c)) << (8 * j)
    else:
        h = 14695981039346656037ULL         # FNV-1a
        for j in range(n):
            c = p[j]
            if c >= 0x80 or c == 0:
                return None
            h = (h ^ lower(c)) * 1099511628211ULL
    if FREE_THREADED or n > NAME_MAX:
        return PyUnicode_DecodeASCII(<const char*>p, n, NULL).lower()
    i = _slot(h + <uint64_t>n, ATTR_BITS)
    while True:
        slot = &_attr_slots[i]
        if slot.name == NULL:
            break
        if slot.key == h and slot.extra == n and (n <= 8 or ascii_lower_equals(
                p, PyUnicode_1BYTE_DATA(<object>slot.name), n)):
            return <str>slot.name
        i = (i + 1) & ((1 << ATTR_BITS) - 1)
    name = PyUnicode_DecodeASCII(<const char*>p, n, NULL).lower()
    if _attr_count < (1 << (ATTR_BITS - 1)):
        _kept_names.append(name)
        slot.key = h
        slot.extra = n
        slot.name = <PyObject*>name
        _attr_count += 1
    return name


class UnitExpired(HtmlStreamError):
    """A unit was used after its handler returned."""


cdef str _escape_text(str text):
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    if "\r" in text:                   # a raw CR would read as LF
        text = text.replace("\r", "&#13;")
    return text


cdef inline bytes _slice(bytes b, Py_ssize_t start, Py_ssize_t end):
    """``b[start:end]`` for 0 <= start <= end <= len(b), without a slice object."""
    return PyBytes_FromStringAndSize(<const char*>b + start, end - start)


cdef bytes _attr_value_bytes(str value, str encoding):
    """An attribute value as written: escaped, in the document's encoding (the last one
    is remembered)."""
    global _last_value, _last_value_encoding, _last_value_bytes
    if not FREE_THREADED and value is _last_value and encoding is _last_value_encoding:
        return _last_value_bytes
    cdef bytes b = _encode_attr_value(value, encoding)
    if not FREE_THREADED and type(value) is str:    # (identity = equality only for a plain str)
        _last_value = value
        _last_value_encoding = encoding
        _last_value_bytes = b
    return b


cdef bytes _attr_value_quoted(str value, str encoding):
    """``="value"`` as written (_attr_value_bytes in quotes: one piece for the output; the last
    one is remembered)."""
    global _last_quoted, _last_quoted_encoding, _last_quoted_bytes
    if not FREE_THREADED and value is _last_quoted and encoding is _last_quoted_encoding:
        return _last_quoted_bytes
    cdef bytes b = b'="' + _attr_value_bytes(value, encoding) + b'"'
    if not FREE_THREADED and type(value) is str:
        _last_quoted = value
        _last_quoted_encoding = encoding
        _last_quoted_bytes = b
    return b


cdef inline bytes _encode_attr_value(str value, str encoding):
    cdef const unsigned char* p
    cdef Py_ssize_t i
    cdef unsigned char c
    if PyUnicode_IS_ASCII(value):  # the same bytes in every ASCII-compatible encoding
        p = PyUnicode_1BYTE_DATA(value)
        for i in range(len(value)):
            c = p[i]
            if c == 0x26 or c == 0x22 or c == 0x0D:
                return _escape_attr(value).encode("ascii")
        return value.encode("ascii")
    value = _escape_attr(value)
    return value.encode(encoding, "xmlcharrefreplace")


cdef str _escape_attr(str text):
    if "&" in text:
        text = text.replace("&", "&amp;")
    if '"' in text:
        text = text.replace('"', "&quot;")
    if "\r" in text:
        text = text.replace("\r", "&#13;")
    return text


cdef str _plain_text(bytes raw):
    """``raw`` as a str if its bytes are its characters in every encoding the engine reads and
    in every text type (ASCII without '&', CR or NUL: nothing to decode, normalise or
    replace), else None.  Copied as it is checked."""
    cdef Py_ssize_t j, n = len(raw)
    cdef const unsigned char* p = <const unsigned char*><const char*>raw
    cdef str text = PyUnicode_New(n, 127)
    if plain_copy(p, n, PyUnicode_1BYTE_DATA(text)) < n:
        return None
    return text


cdef str _newlines(str text):
    if "\r" in text:
        return text.replace("\r\n", "\n").replace("\r", "\n")
    return text


cpdef bytes encode_content(content, bint html, int text_type, str encoding):
    """Encode inserted content for a place whose text is read as ``text_type``."""
    if not isinstance(content, str):
        raise TypeError(f"content must be str, not {type(content).__name__}")
    if html:
        return (<str>content).encode(encoding, "xmlcharrefreplace")
    if text_type == DATA or text_type == RCDATA:    # character references work
        return _escape_text(content).encode(encoding, "xmlcharrefreplace")
    closer = _RAW_CLOSERS.get(text_type)
    if closer is not None:
        found = closer.search(content)
        if found is not None:
            raise ValueError(
                f"text inserted into {_TEXT_TYPES[text_type].name} content must not contain "
                f"{found.group()!r}, which would end it; pass html=True to insert markup "
                f"deliberately")
    try:
        return (<str>content).encode(encoding)
    except UnicodeEncodeError as exc:
        raise EncodingError(
            f"{content[exc.start:exc.end]!r} cannot be written in {encoding} inside "
            f"{_TEXT_TYPES[text_type].name} content, where character references are not decoded"
        ) from None


_utf8_decoder = _getincrementaldecoder("utf-8")


cdef class _AsyncContent:
    """Content from an async iterable, kept where its part goes until the unit's handlers
    have run: resolve_parts then waits for all of it (an async stream's awaiter)."""
    cdef object source
    cdef bint html
    cdef int ctx
    cdef str method


cdef object _part(BaseUnit unit, content, bint html, int ctx, str encoding, str method):
    """A content method's part (see text_part): a str at once; bytes and iterables of chunks
    joined first (_joined); an async iterable kept for resolve_parts."""
    cdef _AsyncContent pending
    if type(content) is str:
        return text_part(content, html, ctx, encoding)
    if hasattr(content, "__aiter__"):
        pending = _AsyncContent.__new__(_AsyncContent)
        pending.source = content
        pending.html = html
        pending.ctx = ctx
        pending.method = method
        unit.async_parts = True
        return pending
    return text_part(_joined(unit, content, method), html, ctx, encoding)


async def _gather(source):
    return [chunk async for chunk in source]


cdef object _resolved(BaseUnit unit, part, awaiter, str encoding):
    cdef _AsyncContent pending
    if type(part) is not _AsyncContent:
        return part
    pending = <_AsyncContent>part
    name = f"{type(unit).__name__}.{pending.method}()"
    if awaiter is None:
        raise TypeError(f"{name}: content from an async iterable needs an async stream "
                        f"(Rewriter.astream(), arewrite() or rewrite_aiter())")
    chunks = awaiter(_gather(pending.source), f"{name} content", unit)
    return text_part(_joined(unit, chunks, pending.method), pending.html, pending.ctx,
                     encoding)


cdef list _resolved_list(BaseUnit unit, list parts, awaiter, str encoding):
    if parts is None:
        return None
    return [_resolved(unit, part, awaiter, encoding) for part in parts]


cdef int resolve_parts(BaseUnit unit, awaiter) except -1:
    """After a unit's handlers: wait for the content they gave as async iterables (the
    awaiter of an async stream pauses the engine meanwhile), in the order the unit writes its
    parts, and keep it as the other content is kept."""
    cdef Unit u
    cdef Element el
    cdef DocumentEnd end
    unit.async_parts = False
    if isinstance(unit, Unit):
        u = <Unit>unit
        u.before_parts = _resolved_list(unit, u.before_parts, awaiter, u.encoding)
        u.replacement = _resolved(unit, u.replacement, awaiter, u.encoding)
        if isinstance(unit, Element):
            el = <Element>unit
            el.prepend_parts = _resolved_list(unit, el.prepend_parts, awaiter, el.encoding)
            el.inner = _resolved(unit, el.inner, awaiter, el.encoding)
            el.append_parts = _resolved_list(unit, el.append_parts, awaiter, el.encoding)
        u.after_parts = _resolved_list(unit, u.after_parts, awaiter, u.encoding)
    elif isinstance(unit, DocumentEnd):
        end = <DocumentEnd>unit
        end.parts = _resolved_list(unit, end.parts, awaiter, end.encoding)
    return 0


cdef object _joined(unit, content, str method):
    """Content given as bytes (UTF-8) or as an iterable of str and bytes chunks, as one str:
    a chunk may end inside a UTF-8 character that the next one completes; invalid UTF-8 is a
    ValueError naming the method.  (The chunks are joined before the content is checked and
    written: a closer split between two chunks is found as in one string.)"""
    name = f"{type(unit).__name__}.{method}()"
    if isinstance(content, str):
        return str(content)
    if isinstance(content, (bytes, bytearray, memoryview)):
        content = (bytes(content),)
    else:
        try:
            content = iter(content)
        except TypeError:
            raise TypeError(f"{name}: content must be str, bytes or an iterable of them, not "
                            f"{type(content).__name__}") from None
    decoder = _utf8_decoder()
    parts = []
    for chunk in content:
        if isinstance(chunk, str):
            if decoder.getstate()[0]:
                raise ValueError(f"{name}: a str chunk follows bytes that end inside a UTF-8 "
                                 f"character")
            parts.append(str(chunk))
        elif isinstance(chunk, (bytes, bytearray, memoryview)):
            try:
                parts.append(decoder.decode(bytes(chunk)))
            except UnicodeDecodeError as exc:
                raise ValueError(f"{name}: the content is not valid UTF-8 ({exc.reason})") \
                    from None
        else:
            raise TypeError(f"{name}: content chunks must be str or bytes, not "
                            f"{type(chunk).__name__}")
    try:
        parts.append(decoder.decode(b"", True))
    except UnicodeDecodeError:
        raise ValueError(f"{name}: the content ends inside a UTF-8 character") from None
    return "".join(parts)


cdef object text_part(content, bint html, int text_type, str encoding):
    """Inserted content as the units keep it: ``html`` content as bytes; text as
    ``(bytes for text_type, the str, text_type)``, so that the sink can tell it from markup
    (raw text it checks together with the bytes next to it) and encode it again if it lands
    in another text type than expected (content written where an element ends, or at the
    end of the document, can be inside an unclosed ``<script>``)."""
    cdef bytes b = encode_content(content, html, text_type, encoding)
    if html:
        return b
    return (b, content, text_type)


cdef bytes _markup_bytes(markup, str encoding):
    """Markup a handler writes as a tag: ``str`` encoded as ``html=True`` content is, bytes as
    they are."""
    if type(markup) is bytes:
        return <bytes>markup
    if isinstance(markup, str):
        return (<str>markup).encode(encoding, "xmlcharrefreplace")
    if isinstance(markup, (bytes, bytearray, memoryview)):
        return bytes(markup)
    raise TypeError(f"a tag must be str or bytes, not {type(markup).__name__}")


cdef bytes _encode_name(str name, str encoding, str what):
    try:
        return name.encode(encoding)
    except UnicodeEncodeError:
        raise EncodingError(f"{what} {name!r} cannot be written in {encoding}") from None


cpdef str validate_tag_name(name):
    """Check a tag name given by a handler; return it."""
    cdef Py_UCS4 ch
    if not isinstance(name, str):
        raise TypeError(f"a tag name must be a str, not {type(name).__name__}")
    if not name:
        raise ValueError("a tag name must be a non-empty str")
    ch = (<str>name)[0]
    if not (("a" <= ch <= "z") or ("A" <= ch <= "Z")):
        raise ValueError(f"a tag name must start with an ASCII letter: {name!r}")
    for ch in <str>name:
        if ch in "\t\n\f\r />\0":
            raise ValueError(f"a tag name must not contain {ch!r}: {name!r}")
    return name


cpdef str validate_attribute_name(name):
    """Check an attribute name given by a handler; return it."""
    cdef Py_UCS4 ch
    if not isinstance(name, str):
        raise TypeError(f"an attribute name must be a str, not {type(name).__name__}")
    if not name:
        raise ValueError("an attribute name must be a non-empty str")
    for ch in <str>name:
        if ch in "\t\n\f\r />=\"'<\0":
            raise ValueError(f"an attribute name must not contain {ch!r}: {name!r}")
    return name


cpdef str process_text(str text, int text_type):
    """Decode text read as ``text_type`` the way the tokenizer does: newlines normalised,
    character references resolved where the text type has them, NUL replaced where the
    specification replaces it."""
    text = _newlines(text)
    if text_type == 0 or text_type == 1:
        text = decode_charrefs(text)
    if text_type != 0 and text_type != 5 and "\0" in text:
        text = text.replace("\0", "\ufffd")
    return text


class AttributeDetails(NamedTuple):
    """An attribute as written in the input (see :meth:`Element.attribute_details`); ``name``
    is the DOM's name (lower-cased; ``viewBox`` and the like on SVG and MathML elements)."""

    name: str
    value: str
    raw_value: bytes | None
    name_span: tuple[int, int]
    value_span: tuple[int, int] | None


cdef class BaseUnit:
    """What every unit a handler gets has: the context of the document it belongs to."""

    @property
    def context(self):
        """The per-document context of the stream this unit belongs to (the mapping given as
        ``Rewriter.stream(context=...)`` or ``rewrite(..., context=...)``, by default a new
        dict per document): handlers keep per-document state there."""
        return self.doc_context


# inside(): tag name -> (taghash, fnv_name) as the simulator's stack holds names (bounded)
cdef dict _NAME_KEYS = {}
# The open elements around an implied <head> or <body>: <html>
cdef OpenElement_ _HTML_ENTRY
_HTML_ENTRY.name = HTML_HASH


cdef tuple _name_key(name):
    """The key of a tag name in the simulator's stack (its name hash, and for a name the hash
    cannot hold, fnv_name of it): ASCII-lower-cased, as the tokenizer makes names."""
    cdef bytes b
    cdef uint64_t h
    key = _NAME_KEYS.get(name)
    if key is not None:
        return <tuple>key
    if type(name) is not str:
        raise TypeError(f"a tag name must be a str, not {type(name).__name__}")
    if not name:
        raise ValueError("a tag name must not be empty")
    b = (<str>name).encode("utf-8").lower()
    h = hash_bytes(b, len(b))
    key = (h, fnv_name(b, len(b)) if h == INVALID_HASH else 0)
    if len(_NAME_KEYS) < 1024:
        _NAME_KEYS[name] = key
    return <tuple>key


cdef inline bint _has_name(const OpenElement_* s, Py_ssize_t n, uint64_t h,
                           uint64_t x) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        if s[i].name == h and (h != INVALID_HASH or s[i].xname == x):
            return True
    return False


cdef class Unit(BaseUnit):
    """What every unit has: content before and after it, replacement and removal."""

    def __init__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} objects are made by the rewriter")

    cdef int check(self) except -1:
        if not self.live:
            raise UnitExpired(
                f"this {type(self).__name__} can no longer be changed: its handler has returned "
                f"(an async handler: finished)")
        return 0

    cdef int text_ctx(self):
        return 0

    cdef int text_ctx_after(self):
        return self.text_ctx()

    cdef bint inside_any(self, tuple names) except -1:
        """Whether an open element around the unit has one of the tag ``names``."""
        cdef uint64_t h, x
        if not self.live:
            raise UnitExpired(f"this {type(self).__name__} no longer knows the elements around "
                              "it: its handler has returned (an async handler: finished)")
        for name in names:
            key = _name_key(name)
            h = <uint64_t>(<tuple>key)[0]
            x = <uint64_t>(<tuple>key)[1]
            if _has_name(self.open_stack, self.open_n, h, x) or _has_name(
                    self.open_extra, self.open_extra_n, h, x):
                return True
        return False

    cdef bint is_modified(self) noexcept:
        return self.before_parts is not None or self.after_parts is not None or self.removed_

    @property
    def offset(self):
        """Stream offset of the unit's first byte in the input (for an implicit end tag: where
        the element ends)."""
        return self.offset_

    @property
    def source_location(self):
        """``(start, end)``: stream offsets of the unit's bytes in the input."""
        return (self.offset_, self.offset_ + len(self.raw_))

    @property
    def modified(self):
        """Whether a handler changed or added anything."""
        return self.is_modified()

    @property
    def removed(self):
        """Whether the unit was removed or replaced."""
        return self.removed_

    def before(self, content, *, bint html=False):
        """Insert ``content`` just before the unit."""
        self.check()
        if self.before_parts is None:
            self.before_parts = []
        self.before_parts.append(_part(self, content, html, self.text_ctx(), self.encoding,
                                       "before"))

    def after(self, content, *, bint html=False):
        """Insert ``content`` just after the unit (successive calls: the last comes first)."""
        self.check()
        if self.after_parts is None:
            self.after_parts = []
        self.after_parts.insert(0, _part(self, content, html, self.text_ctx_after(),
                                         self.encoding, "after"))

    def replace(self, content, *, bint html=False):
        """Replace the unit with ``content``."""
        self.check()
        self.replacement = _part(self, content, html, self.text_ctx(), self.encoding,
                                 "replace")
        self.removed_ = True

    def remove(self):
        """Remove the unit."""
        self.check()
        self.replacement = None
        self.removed_ = True


cdef class TextChunk(Unit):
    """A piece of a text node (text arrives in pieces as the input does).

    ``text`` is decoded (character references resolved where the text type has them); ``raw``
    is the undecoded source.  A handler that only reads never changes the bytes.
    """

    cdef int text_ctx(self):
        return self.text_type_

    @property
    def raw(self):
        """The undecoded bytes of this piece."""
        return self.raw_

    @property
    def text_type(self):
        """How the text is read (a :class:`htmlstream.TextType`)."""
        return _TEXT_TYPES[self.text_type_]

    @property
    def last_in_text_node(self):
        """Whether this is the text node's last piece (it may be empty)."""
        return self.last

    def inside(self, *names):
        """Whether the text is inside an element with one of these tag names (ASCII
        case-insensitive, in any namespace, as a type selector matches): an element of the
        tree builder's stack of open elements where the text is, as a browser has it (implied,
        re-opened and unclosed elements too).  Answered by the engine in C from the
        tree-builder simulator's stack: no element rule, no state kept per element.  Only
        while the handler runs (else :class:`UnitExpired`).

        Elements beyond ``max_depth`` (which the simulator only counts) are not seen, and the
        stack is not the tree in two places: an element the "after head" rule puts into
        ``<head>`` after ``</head>`` (``<script>``, ``<style>``, ``<template>``...) is open
        without its ``<head>``, and foster-parented text (in a ``<table>``) has the table
        among its open elements.
        """
        return self.inside_any(names)

    @property
    def text(self):
        """The decoded text of this piece."""
        if self.text_ is None:
            self.text_ = _plain_text(self.raw_)
            if self.text_ is None:
                self.text_ = process_text(self.raw_.decode(self.encoding, "replace"),
                                          self.text_type_)
        return self.text_

    def __repr__(self):
        return f"<TextChunk {self.text[:40]!r} last={self.last}>"


cdef TextChunk make_text_chunk(bytes raw, int text_type, bint last, Py_ssize_t offset,
                               str encoding):
    cdef TextChunk c = TextChunk.__new__(TextChunk)
    c.encoding = encoding
    c.live = True
    c.raw_ = raw
    c.text_type_ = text_type
    c.last = last
    c.offset_ = offset
    return c


cdef class Comment(Unit):
    """A comment.  ``text`` can be read and set."""

    cdef bint is_modified(self) noexcept:
        return Unit.is_modified(self) or self.new_text is not None

    @property
    def raw(self):
        """The comment as written."""
        return self.raw_

    @property
    def text(self):
        """The comment's text."""
        if self.text_ is None:
            self.text_ = _newlines(self.content.decode(self.encoding, "replace")).replace(
                "\0", "\ufffd")
        return self.text_

    @text.setter
    def text(self, value):
        self.check()
        if not isinstance(value, str):
            raise TypeError("comment text must be str")
        if ("-->" in value or "--!>" in value or value.startswith((">", "->"))
                or value.endswith(("-", "<!-"))):
            raise ValueError(f"comment text {value!r} would end the comment early or late")
        self.new_text = _encode_name(value, self.encoding, "comment text")
        self.text_ = value

    cdef bytes serialize(self):
        if self.new_text is None:
            return self.raw_
        return b"<!--" + self.new_text + b"-->"

    def __repr__(self):
        return f"<Comment {self.text[:40]!r}>"


cdef Comment make_comment(bytes raw, bytes content, Py_ssize_t offset, str encoding):
    cdef Comment c = Comment.__new__(Comment)
    c.encoding = encoding
    c.live = True
    c.raw_ = raw
    c.content = content
    c.offset_ = offset
    return c


cdef class Doctype(BaseUnit):
    """The DOCTYPE.  It can be read and removed, not changed."""

    def __init__(self, raw, name, public_id, system_id, force_quirks, offset):
        self.raw = raw
        self.name = name
        self.public_id = public_id
        self.system_id = system_id
        self.force_quirks = force_quirks
        self.offset = offset
        self.removed = False
        self.live = True

    def remove(self):
        """Remove the DOCTYPE from the output."""
        if not self.live:
            raise UnitExpired("this Doctype can no longer be changed: its handler has returned "
                              "(an async handler: finished)")
        self.removed = True

    def __repr__(self):
        return f"<Doctype {self.name!r}>"


cdef class DocumentEnd(BaseUnit):
    """The end of the document: content can be appended after everything else."""

    def __init__(self, str encoding):
        self.encoding = encoding
        self.live = True
        self.parts = []

    def append(self, content, *, bint html=False):
        """Write ``content`` at the very end of the output."""
        if not self.live:
            raise UnitExpired("this DocumentEnd can no longer be changed")
        self.parts.append(_part(self, content, html, 0, self.encoding, "append"))


cdef class EndTag(Unit):
    """An element's end tag, as seen by the handlers given to ``Element.on_end_tag``.

    For an element closed implicitly (``<p>`` closed by ``<div>``, or by the end of input)
    ``implicit`` is true and ``raw`` is empty: ``before``/``after`` still insert content where
    the element ends; renaming or removing it does nothing.
    """

    cdef int text_ctx(self):
        return self.ctx_before

    cdef int text_ctx_after(self):
        return self.ctx_after

    @property
    def raw(self):
        """The end tag as written (empty when implicit)."""
        return self.raw_

    @property
    def implicit(self):
        """Whether the element was closed without an end tag of its own."""
        return self.implicit_

    @property
    def name(self):
        """The element's name: its ``tag_name`` (the DOM's: ASCII-lower-cased, ``clipPath``
        for an SVG clipPath), or what a handler set."""
        return self.name_

    @name.setter
    def name(self, value):
        self.check()
        validate_tag_name(value)
        self.new_name = _encode_name(value, self.encoding, "tag name")
        self.name_ = value

    cdef bint is_modified(self) noexcept:
        return Unit.is_modified(self) or self.new_name is not None

    cdef bytes serialize(self):
        if self.new_name is None or self.implicit_:
            return self.raw_
        return b"</" + self.new_name + b">"

    def __repr__(self):
        return f"<EndTag {self.name_!r}{' implicit' if self.implicit_ else ''}>"


cdef EndTag make_end_tag(bytes raw, str name, bint implicit, Py_ssize_t offset, str encoding,
                         int ctx_before, int ctx_after):
    cdef EndTag t = EndTag.__new__(EndTag)
    t.ctx_before = ctx_before
    t.ctx_after = ctx_after
    t.encoding = encoding
    t.live = True
    t.raw_ = raw
    t.name_ = name
    t.implicit_ = implicit
    t.offset_ = offset
    return t


cdef class Element(Unit):
    """An element, seen at its start tag.  Its content is still to come.

    Changes to the start tag (name, attributes) rebuild it; ``before``/``after`` insert around
    the whole element, ``prepend``/``append`` inside it, and ``set_inner_content``, ``replace``,
    ``remove`` and ``remove_and_keep_content`` drop parts of the markup as it streams past.

    A *merged* start tag (``merged`` is true) is an ``<html>`` or ``<body>`` tag that comes
    after the tree builder has already made that element (implied it, or met an earlier tag of
    that name): a browser adds the tag's new attributes to the open element and makes no new
    one.  Its Element shows the tag (its own attributes) and the open element's content from the
    tag on: ``prepend`` and ``set_inner_content`` act right after the tag, ``append``, ``after``
    and ``on_end_tag`` where the element ends (its end tag, or where a browser ends it), and
    ``can_have_content`` is true.  What came before the tag is the element's too, and is already
    written: ``remove``, ``replace`` and ``remove_and_keep_content`` act on the tag alone (the
    element, its content and its end tag stay), and a new ``tag_name`` renames the tag alone.

    An *implied* element (``implied`` is true; only for rules registered with
    ``Rewriter.on(..., implied=True)``) is an ``<html>``, ``<head>`` or ``<body>`` the tree
    builder made with no start tag of its own.  It has no tag: ``raw`` is empty, it has no
    attributes, and what would change its tag (attributes, ``tag_name``) or drop it
    (``remove``, ``replace``, ``remove_and_keep_content``, ``set_inner_content``), and
    ``capture``, raise ``ValueError``.  ``before`` and ``prepend`` insert where it begins
    (before the tag or the text that made the tree builder create it), ``append``, ``after``
    and ``on_end_tag`` where it ends (at its end tag if the source has one, else an implicit
    EndTag there).
    """

    def __dealloc__(self):
        if self.spans != NULL:
            free(self.spans)

    # ------------------------------------------------------------------ reading

    @property
    def raw(self):
        """The start tag as written."""
        return self.raw_

    @property
    def offset(self):
        """Stream offset of the start tag's ``<``."""
        return self.offset_

    @property
    def namespace_uri(self):
        """The element's namespace: HTML, SVG or MathML."""
        return NAMESPACE_URIS[self.ns]

    @property
    def is_self_closing(self):
        """Whether the start tag ended with ``/>`` (meaningful only in SVG and MathML)."""
        return self.self_closing

    @property
    def implied(self):
        """Whether the element has no start tag of its own: an ``<html>``, ``<head>`` or
        ``<body>`` the tree builder implied (handlers registered with ``implied=True`` only);
        see the class docstring."""
        return self.implied_

    cdef int check_tag(self, str what) except -1:
        """ValueError for what an implied element, which has no tag, cannot do."""
        self.check()
        if self.implied_:
            raise ValueError(f"the <{self.tag_name}> element is implied (it has no tag in the "
                             f"source): it cannot {what}")
        return 0

    @property
    def merged(self):
        """Whether this start tag is merged into an element the tree builder already made
        (a second ``<html>`` or ``<body>``, or the first after the element was implied): see
        the class docstring."""
        return self.merged_

    @property
    def can_have_content(self):
        """False for void elements (``<img>``, ``<br>``...) and self-closing foreign elements."""
        return self.can_have_content_

    def inside(self, *names):
        """Whether the element is inside an element with one of these tag names (ASCII
        case-insensitive, in any namespace, as a type selector matches): one of the elements
        open around it in the tree builder's stack of open elements (implied and re-opened ones
        too; not the element itself).  See :meth:`TextChunk.inside`, which answers the same
        way; an implied ``<head>`` or ``<body>`` is inside ``<html>``.  Only while the handler
        runs (else :class:`UnitExpired`).
        """
        return self.inside_any(names)

    @property
    def tag_name(self):
        """The element's name as the DOM gives it: ASCII-lower-cased, except the SVG names the
        HTML parser gives mixed case (``clipPath``, ``foreignObject``, ``linearGradient``...).
        Setting it renames the start and end tags to what is given (a merged tag's: the tag
        alone)."""
        if self.name_ is None:
            self.name_ = self.read_tag_name()
        return self.name_

    cdef str read_tag_name(self):
        """The tag name as written, as the DOM gives it (the same str for every element of a
        name whose hash is valid: a hash is the name's ASCII letters and digits, case-folded)."""
        cdef Py_ssize_t svg = self.ns == 1
        cdef str name
        cdef bint keep = not FREE_THREADED and self.name_hash != INVALID_HASH
        if keep:
            name = _interned_tag_name(self.name_hash, svg)
            if name is not None:
                return name
        name = ascii_lower(self.raw_[self.name_start:self.name_end].decode(
            self.encoding, "replace"))
        if svg:
            name = _SVG_TAG_NAMES.get(name, name)
        if keep:
            _keep_tag_name(self.name_hash, svg, name)
        return name

    @tag_name.setter
    def tag_name(self, value):
        self.check_tag("be renamed")
        validate_tag_name(value)
        self.new_name = _encode_name(value, self.encoding, "tag name")
        self.name_ = value
        self.tag_modified = True

    cdef bint span_named(self, Py_ssize_t i, bytes lname):
        """Whether attribute span i is called ``lname`` (lower-case bytes), ASCII-insensitively."""
        cdef AttrSpan* a = &self.spans[i]
        cdef Py_ssize_t n = a.name_end - a.name_start
        cdef unsigned char c
        cdef bint ascii = True
        for c in lname:
            if c >= 0x80:
                ascii = False
                break
        if not ascii:
            # NUL reads as U+FFFD, invalid bytes as replacement characters: compare decoded
            return self.attr_name(i).encode(self.encoding, "replace") == lname
        if n != len(lname):
            return False
        return ascii_lower_equals((<const unsigned char*><const char*>self.raw_) + a.name_start,
                                  <const unsigned char*><const char*>lname, n)

    cdef Py_ssize_t span_index(self, bytes lname) except -2:
        """The first attribute span called ``lname``, or -1."""
        cdef Py_ssize_t i, n = PyBytes_GET_SIZE(lname)
        cdef const unsigned char* r = <const unsigned char*>PyBytes_AS_STRING(self.raw_)
        cdef const unsigned char* ln = <const unsigned char*>PyBytes_AS_STRING(lname)
        for i in range(n):
            if ln[i] >= 0x80:
                for i in range(self.n_spans):
                    if self.span_named(i, lname):
                        return i
                return -1
        for i in range(self.n_spans):   # (an ASCII name: span_named's test, inlined)
            if self.spans[i].name_end - self.spans[i].name_start == n and ascii_lower_equals(
                    r + self.spans[i].name_start, ln, n):
                return i
        return -1

    cdef Py_ssize_t ascii_span(self, str name) noexcept:
        """span_index for an ASCII ``name`` (any case), with no bytes made."""
        global _word_name, _word, _word_mask
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(name)
        cdef const unsigned char* r = <const unsigned char*>PyBytes_AS_STRING(self.raw_)
        cdef const unsigned char* q = PyUnicode_1BYTE_DATA(name)
        cdef const AttrSpan* a = self.spans
        cdef const AttrSpan* end = a + self.n_spans
        cdef Py_ssize_t readable = PyBytes_GET_SIZE(self.raw_) + 1 - 8    # (the NUL after it)
        cdef unsigned long long word, mask, low
        if 0 < n <= 8:
            # a name of up to eight bytes is compared as one word (the last name's word is
            # remembered: handlers read the same names over and over)
            if not FREE_THREADED and name is _word_name:
                word = _word
                mask = _word_mask
            else:
                name_word(q, n, &word, &mask)
                if not FREE_THREADED and type(name) is str:
                    _word_name = name
                    _word = word
                    _word_mask = mask
            low = low_bytes(n)
            while a < end:
                if a.name_end - a.name_start == n:
                    if a.name_start <= readable:
                        if (load_le64(r + a.name_start) & low) | mask == word:
                            return a - self.spans
                    elif _same_name(r + a.name_start, q, n):
                        return a - self.spans
                a += 1
            return -1
        while a < end:
            if a.name_end - a.name_start == n and _same_name(r + a.name_start, q, n):
                return a - self.spans
            a += 1
        return -1

    cdef Py_ssize_t ascii_override(self, str name) noexcept:
        """override() for an ASCII ``name`` (any case), with no bytes made."""
        cdef Py_ssize_t k, j, n = PyUnicode_GET_LENGTH(name)
        cdef const unsigned char* q = PyUnicode_1BYTE_DATA(name)
        cdef const unsigned char* o
        cdef PyObject* item
        cdef list ov = self.overrides
        for k in range(0, PyList_GET_SIZE(ov), 3):
            item = PyList_GET_ITEM(ov, k)
            if PyBytes_GET_SIZE(<object>item) != n:
                continue
            o = <const unsigned char*>PyBytes_AS_STRING(<object>item)
            for j in range(n):
                if lower(q[j]) != o[j]:
                    break
            else:
                return k
        return -1

    cdef Py_ssize_t override(self, bytes lname) except -2:
        """Where ``lname``'s override (name, value or None, at end) starts in ``overrides``,
        or -1."""
        cdef Py_ssize_t k
        cdef list ov = self.overrides
        if ov is not None:
            for k in range(0, PyList_GET_SIZE(ov), 3):
                if <bytes>PyList_GET_ITEM(ov, k) == lname:
                    return k
        return -1

    cdef bytes lname(self, str name):
        try:
            return ascii_lower(name).encode(self.encoding)
        except UnicodeEncodeError:
            return None

    cdef str decode_value(self, Py_ssize_t i):
        cdef AttrSpan* a = &self.spans[i]
        cdef str value
        cdef const unsigned char* p
        cdef unsigned char* d
        cdef Py_ssize_t j, n
        cdef unsigned char c
        if a.value_start < 0:
            return ""
        # ASCII with nothing to decode (no character reference, CR or NUL): the same characters
        # in every encoding the engine reads, copied as they are checked
        p = (<const unsigned char*>PyBytes_AS_STRING(self.raw_)) + a.value_start
        n = a.value_end - a.value_start
        value = PyUnicode_New(n, 127)
        if plain_copy(p, n, PyUnicode_1BYTE_DATA(value)) == n:
            return value
        value = _newlines(self.raw_[a.value_start:a.value_end].decode(self.encoding, "replace"))
        if "&" in value:
            value = decode_charrefs(value, in_attribute=True)
        if "\0" in value:
            value = value.replace("\0", "\ufffd")
        return value

    cdef str attr_name(self, Py_ssize_t i):
        """Attribute span i's name as written, ASCII-lower-cased (how HTML markup names it)."""
        cdef AttrSpan* a = &self.spans[i]
        return ascii_lower(self.raw_[a.name_start:a.name_end].decode(
            self.encoding, "replace")).replace("\0", "\ufffd")

    cdef str dom_name(self, str lower):
        """The DOM's name of the attribute whose lower-cased name is ``lower``: the same on
        HTML elements; on SVG and MathML elements the case the parser adjusts it to
        (``viewBox``, ``definitionURL``)."""
        if self.ns == 0:
            return lower
        if self.ns == 1:
            return _SVG_ATTRIBUTE_NAMES.get(lower, lower)
        return _MATHML_ATTRIBUTE_NAMES.get(lower, lower)


    @property
    def attributes(self):
        """``(name, decoded value)`` pairs in document order (duplicates dropped).  Names are
        the DOM's: ASCII-lower-cased, except on SVG and MathML elements the few the parser
        gives mixed case (``viewBox``, ``definitionURL``)."""
        cdef list result
        cdef Py_ssize_t i, k
        cdef bint foreign = self.ns != 0
        if self.overrides is None and self.n_spans <= 32:
            result = self.plain_attributes()
            if result is not None:
                return result
        result = []
        seen = set()
        for i in range(self.n_spans):
            name = self.attr_name(i)
            if name in seen:
                continue
            seen.add(name)
            k = self.override(name.encode(self.encoding, "replace"))
            if foreign:
                name = self.dom_name(name)
            if k < 0:
                result.append((name, self.decode_value(i)))
            elif self.overrides[k + 1] is not None:
                result.append((name, self.overrides[k + 1]))
        if self.overrides is not None:
            for k in range(0, len(self.overrides), 3):
                lname = self.overrides[k]
                value = self.overrides[k + 1]
                if value is not None and self.span_index(lname) < 0:
                    result.append((self.dom_name((<bytes>lname).decode(self.encoding)), value))
        return result

    cdef list plain_attributes(self):
        """``attributes`` of an element no handler changed, if its names are ASCII without NUL
        (else None): duplicates found by comparing bytes, names interned."""
        cdef list result = PyList_New(self.n_spans)
        cdef const unsigned char* r = <const unsigned char*><const char*>self.raw_
        cdef Py_ssize_t i, j, n, count = 0
        cdef AttrSpan* a
        cdef str name
        for i in range(self.n_spans):
            a = &self.spans[i]
            n = a.name_end - a.name_start
            for j in range(i):
                if (self.spans[j].name_end - self.spans[j].name_start == n
                        and _same_name(r + a.name_start, r + self.spans[j].name_start, n)):
                    break
            else:
                name = _attribute_name(r + a.name_start, n)
                if name is None:
                    return None
                if self.ns != 0:
                    name = self.dom_name(name)
                item = (name, self.decode_value(i))
                Py_INCREF(item)
                PyList_SET_ITEM(result, count, item)
                count += 1
        if count < self.n_spans:
            del result[count:]
        return result

    def __iter__(self):
        return iter(self.attributes)

    @property
    def source_location(self):
        """``(start, end)``: stream offsets of the start tag in the input."""
        return (self.offset_, self.offset_ + len(self.raw_))

    def attribute_details(self):
        """Every attribute as written, duplicates included, as :class:`AttributeDetails`:
        decoded name (the DOM's) and value, the raw (undecoded) value, and the stream offsets
        of the name and the value (``None`` for an attribute without a value).  Changes made
        by handlers are not reflected: this describes the input."""
        cdef list result = []
        cdef Py_ssize_t i
        cdef AttrSpan* a
        cdef Py_ssize_t base = self.offset_
        for i in range(self.n_spans):
            a = &self.spans[i]
            raw_value = None if a.value_start < 0 else self.raw_[a.value_start:a.value_end]
            result.append(AttributeDetails(
                self.dom_name(self.attr_name(i)), self.decode_value(i), raw_value,
                (base + a.name_start, base + a.name_end),
                None if a.value_start < 0 else (base + a.value_start, base + a.value_end)))
        return result

    def get_raw_attribute(self, str name):
        """The undecoded bytes of attribute ``name``'s value as written (``name`` ASCII
        case-insensitive), or None."""
        cdef bytes lname = self.lname(name)
        cdef Py_ssize_t i
        cdef AttrSpan* a
        if lname is None:
            return None
        i = self.span_index(lname)
        if i < 0:
            return None
        a = &self.spans[i]
        return b"" if a.value_start < 0 else self.raw_[a.value_start:a.value_end]

    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def get_attribute(self, str name):
        """The decoded value of attribute ``name`` (ASCII case-insensitive), or None.

        On every element, as on HTML elements in the DOM: the DOM's name (``viewBox`` on an
        SVG element) finds the attribute, and so does any other case of it.  (The DOM's
        getAttribute() is case-sensitive on SVG and MathML elements; parsed markup never gives
        an element two attributes whose names differ only in case, so ignoring case never
        finds another attribute than the DOM's name does.)"""
        cdef bytes lname
        cdef Py_ssize_t i
        if name is not None and PyUnicode_IS_ASCII(name):
            if self.overrides is not None:
                i = self.ascii_override(name)
                if i >= 0:
                    return <object>PyList_GET_ITEM(self.overrides, i + 1)
            i = self.ascii_span(name)
            self.looked_name = name         # (write_start_tag needs no search if it is set)
            self.looked_span = i
            return None if i < 0 else self.decode_value(i)
        lname = self.lname(name)
        if lname is None:
            return None
        i = self.override(lname)
        if i >= 0:
            return self.overrides[i + 1]
        i = self.span_index(lname)
        return None if i < 0 else self.decode_value(i)

    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def has_attribute(self, str name):
        """Whether the element has attribute ``name`` (ASCII case-insensitive)."""
        cdef Py_ssize_t i
        if name is not None and PyUnicode_IS_ASCII(name):
            if self.overrides is not None:
                i = self.ascii_override(name)
                if i >= 0:
                    return <object>PyList_GET_ITEM(self.overrides, i + 1) is not None
            i = self.ascii_span(name)
            self.looked_name = name
            self.looked_span = i
            return i >= 0
        return self.get_attribute(name) is not None

    # ------------------------------------------------------------------ the start tag

    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def set_attribute(self, name, value):
        """Set (or add) an attribute; the value is escaped so that it reads back unchanged.

        ``name`` names the attribute as markup does, ASCII case-insensitively on every element
        (``viewbox`` and ``viewBox`` set the same attribute of an SVG element: the parser gives
        both the DOM name ``viewBox``)."""
        global _last_name, _last_name_encoding, _last_lname
        cdef bytes lname
        cdef Py_ssize_t k
        self.check_tag("have attributes set")
        if not isinstance(value, str):
            raise TypeError(f"set_attribute(): value must be a str, not {type(value).__name__}")
        if not FREE_THREADED and name is _last_name and self.encoding is _last_name_encoding:
            lname = _last_lname
        else:
            names = _NAME_CACHE.get(self.encoding)    # (no key tuple to build per call)
            if names is None:
                names = _NAME_CACHE.setdefault(self.encoding, {})
            lname = (<dict>names).get(name)
            if lname is None:
                validate_attribute_name(name)
                lname = _encode_name(ascii_lower(name), self.encoding, "attribute name")
                if len(<dict>names) < 4096:
                    lname = (<dict>names).setdefault(name, lname)
            if not FREE_THREADED and type(name) is str:     # (identity = equality, plain str)
                _last_name = name
                _last_name_encoding = self.encoding
                _last_lname = lname
        k = -1 if self.overrides is None else self.override(lname)
        if k >= 0:
            if self.overrides[k + 1] is None:
                self.overrides[k + 2] = True    # removed, then set again: it moves to the end
            self.overrides[k + 1] = value
        elif self.overrides is None:
            # (the span of the name, when a read of the same str object just found it: the
            # tag is then written with no search; ASCII names find the same span both ways)
            self.set_span = self.looked_span if (name is self.looked_name
                                                 and name is not None) else -2
            if self.spare_overrides is not None and list_fill3(self.spare_overrides, lname,
                                                                value, False):
                self.overrides = self.spare_overrides
                self.spare_overrides = None
            else:
                self.overrides = [lname, value, False]
        else:
            self.overrides += (lname, value, False)
        self.tag_modified = True

    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def remove_attribute(self, str name):
        """Remove attribute ``name`` if present (ASCII case-insensitive, as for
        :meth:`set_attribute`)."""
        self.check_tag("have attributes removed")
        cdef Py_ssize_t k
        lname = self.lname(name)
        if lname is None:
            return
        k = self.override(lname)
        if k >= 0:
            self.overrides[k + 1] = None
        elif self.span_index(lname) >= 0:
            if self.overrides is None:
                self.overrides = []
                self.set_span = -2
            self.overrides += (lname, None, False)
        else:
            return
        self.tag_modified = True

    cdef Py_ssize_t span_end(self, Py_ssize_t i) noexcept:
        """End of attribute span i, with the '=' of an attribute that has no value after it
        (``<p a=>``: the lexer ends the span at the name)."""
        cdef AttrSpan* a = &self.spans[i]
        return a.value_end if a.value_end > a.end else a.end

    cdef Py_ssize_t prev_end(self, Py_ssize_t i):
        return self.span_end(i - 1) if i > 0 else self.name_end

    cdef int write_start_tag(self, WriteFn write, object sink) except -1:
        """Write the start tag as serialize_start_tag() makes it; the common change, one
        attribute set, in pieces rather than built first."""
        cdef bytes raw = self.raw_
        cdef const unsigned char* r = <const unsigned char*><const char*>raw
        cdef Py_ssize_t i, p, q
        cdef bytes lname, v
        if self.start_tag_markup is not None:
            v = self.start_tag_markup
            return write(sink, <const unsigned char*><const char*>v, len(v))
        if self.tag_modified and self.new_name is None and self.overrides is not None and \
                PyList_GET_SIZE(self.overrides) == 3:
            lname = <bytes>PyList_GET_ITEM(self.overrides, 0)
            value = <object>PyList_GET_ITEM(self.overrides, 1)
            if value is not None and not <object>PyList_GET_ITEM(self.overrides, 2):
                i = self.set_span if self.set_span != -2 else self.span_index(lname)
                if i >= 0:      # where it first stood, name as written
                    p = self.spans[i].name_end
                    q = self.span_end(i)
                    write(sink, r, p)
                elif self.n_spans == 0 or not (self.spans[self.n_spans - 1].value_end
                                               > self.spans[self.n_spans - 1].end):
                    # added (after a valueless 'a=' the general path writes '""' first)
                    p = self.span_end(self.n_spans - 1) if self.n_spans else self.name_end
                    q = p
                    write(sink, r, p)
                    write(sink, <const unsigned char*>b" ", 1)
                    write(sink, <const unsigned char*><const char*>lname, len(lname))
                else:
                    p = -1
                if p >= 0:
                    v = _attr_value_quoted(value, self.encoding)
                    write(sink, <const unsigned char*><const char*>v, len(v))
                    return write(sink, r + q, len(raw) - q)
        v = self.serialize_start_tag()
        return write(sink, <const unsigned char*><const char*>v, len(v))

    cdef bytes serialize_start_tag(self):
        """The start tag as it will be written: the raw bytes with only the changed parts
        spliced in (quoting, spacing and case of everything else stay as written).  A splice
        never joins what is left: an attribute glued to a removed one (``<p a="x"b>``) gets a
        space (as does a '/' after it), and one whose '=' has no value (``<p a=>``) gets ``""``
        before an addition."""
        cdef list edits
        cdef list additions = None
        cdef Py_ssize_t i, k, first, p, start, end
        cdef AttrSpan* a
        cdef bytes raw = self.raw_
        cdef bytes lname
        cdef bint last_edited = False
        cdef unsigned char c
        if not self.tag_modified:
            return raw
        edits = []
        if self.new_name is not None:
            edits.append((self.name_start, self.name_end, self.new_name))
        if self.overrides is not None:
            for k in range(0, len(self.overrides), 3):
                lname = self.overrides[k]
                value = self.overrides[k + 1]
                first = -1
                at_end = self.overrides[k + 2]
                for i in range(self.n_spans):
                    if not self.span_named(i, lname):
                        continue
                    a = &self.spans[i]
                    end = self.span_end(i)
                    if value is None or at_end:     # removed: every duplicate goes too
                        glue = b""
                        if end < len(raw):
                            c = raw[end]
                            if not (c == 0x20 or c == 0x09 or c == 0x0A or c == 0x0C
                                    or c == 0x0D or c == 0x3E):
                                # keep what follows apart from what precedes: an attribute
                                # glued to this one, or a '/' an unquoted value would take
                                glue = b" "
                        edits.append((self.prev_end(i), end, glue))
                        last_edited |= i == self.n_spans - 1
                    elif first < 0:             # set: where it first stood, name as written
                        edits.append((a.name_start, end, b"".join((
                            _slice(raw, a.name_start, a.name_end), b'="',
                            _attr_value_bytes(value, self.encoding), b'"'))))
                        last_edited |= i == self.n_spans - 1
                    first = i
                if (first < 0 or at_end) and value is not None:
                    if additions is None:
                        additions = []
                    additions.append(b"".join((b" ", lname, b'="',
                                               _attr_value_bytes(value, self.encoding), b'"')))
        if additions is not None:
            if self.n_spans:
                p = self.span_end(self.n_spans - 1)
                a = &self.spans[self.n_spans - 1]
                if a.value_end > a.end and not last_edited:
                    additions.insert(0, b'""')  # 'a=' would take the addition as its value
            else:
                p = self.name_end
            edits.append((p, p, b"".join(additions)))
        if not edits:
            return raw
        if len(edits) > 1:
            edits.sort()
        parts = []
        p = 0
        for edit in edits:
            start = (<tuple>edit)[0]
            parts.append(_slice(raw, p, start))
            parts.append((<tuple>edit)[2])
            p = (<tuple>edit)[1]
        parts.append(_slice(raw, p, len(raw)))
        return b"".join(parts)

    # ------------------------------------------------------------------ content

    def prepend(self, content, *, bint html=False):
        """Insert ``content`` at the start of the element's content (no-op on void elements)."""
        self.check()
        if self.can_have_content_:
            if self.prepend_parts is None:
                self.prepend_parts = []
            self.prepend_parts.insert(
                0, _part(self, content, html, self.content_text_type, self.encoding,
                         "prepend"))

    def append(self, content, *, bint html=False):
        """Insert ``content`` at the end of the element's content (no-op on void elements)."""
        self.check()
        if self.can_have_content_:
            if self.append_parts is None:
                self.append_parts = []
            self.append_parts.append(
                _part(self, content, html, self.content_text_type, self.encoding, "append"))

    def set_inner_content(self, content, *, bint html=False):
        """Replace the element's content (no-op on void elements)."""
        self.check_tag("have its content replaced")
        if self.can_have_content_:
            self.inner = _part(self, content, html, self.content_text_type,
                               self.encoding, "set_inner_content")
            self.prepend_parts = None
            self.append_parts = None
            self.remove_content = True

    def replace(self, content, *, bint html=False):
        """Replace the whole element (tags and content) with ``content``.  Content inserted
        into it afterwards (prepend, append, set_inner_content) is still written, as in
        lol-html; what was inserted before is dropped.  A merged tag: the tag alone is
        replaced (the element and its content stay)."""
        self.check_tag("be replaced")
        Unit.replace(self, content, html=html)
        if not self.merged_:
            self.drop_everything()

    def remove(self):
        """Remove the whole element (tags and content).  Content inserted into it afterwards
        is still written, as in lol-html; what was inserted before is dropped.  A merged tag:
        the tag alone is removed (the element, its content and its end tag stay)."""
        self.check_tag("be removed")
        Unit.remove(self)
        if not self.merged_:
            self.drop_everything()

    cdef void drop_everything(self):
        self.whole = True
        self.remove_content = True
        self.inner = None
        self.prepend_parts = None
        self.append_parts = None

    def remove_and_keep_content(self):
        """Remove the start and end tags, keeping the content (or what set_inner_content
        put in its place).  A merged tag: the tag alone is removed."""
        self.check_tag("have its tags removed")
        self.removed_ = True
        self.replacement = None
        self.whole = False

    def replace_tags(self, start_tag, end_tag=None):
        """Write ``start_tag`` in place of the start tag and ``end_tag`` (if given) where the
        element ends, in place of its end tag or where a browser closes it: the content stays.
        The same as ``remove_and_keep_content()``, ``before(start_tag, html=True)`` and
        ``append(end_tag, html=True)``, in one call, for a handler that writes every tag itself
        (a sanitizer).  Both are markup: a ``str`` is encoded in the document's encoding,
        ``bytes`` are written as they are.  With no ``end_tag`` (a void element) the start tag
        alone is written.  The pair never comes out unbalanced: given an ``end_tag`` for an
        element whose end is not followed (``can_have_content`` false: a void element, or
        one deeper than the tree builder is followed), neither is written (the tags are
        removed, the content kept).  A handler given as
        ``operator.methodcaller("replace_tags", start, end)`` runs with no Python frame."""
        self.check()
        start = _markup_bytes(start_tag, self.encoding)
        self.removed_ = True
        self.replacement = None
        self.whole = False
        if end_tag is not None and not self.can_have_content_:
            return
        if self.before_parts is None:
            self.before_parts = [start]
        else:
            self.before_parts.append(start)
        if end_tag is not None and self.can_have_content_:
            end = _markup_bytes(end_tag, self.encoding)
            if self.append_parts is None:
                self.append_parts = [end]
            else:
                self.append_parts.append(end)

    def set_start_tag(self, markup):
        """Write ``markup`` (markup, not text: a ``str`` is encoded in the document's encoding,
        ``bytes`` are written as they are) in place of the start tag, and nothing else: the
        element, its content and its end tag stay as they are (``remove_and_keep_content()``
        with ``before(markup, html=True)`` would also take the end tag).  For a handler that
        writes the tag itself (a minifier): the markup is written as given, so the handler
        answers for it being this element's start tag (the stream is parsed from the input,
        not from what is written).  Name and attribute changes, before or after, are not
        written into it (a new ``tag_name`` still renames the end tag); ``remove`` and the
        like still apply.  A merged tag (``merged``): the tag alone is replaced."""
        self.check()
        self.start_tag_markup = _markup_bytes(markup, self.encoding)

    def on_end_tag(self, handler):
        """Call ``handler(end_tag)`` where the element ends (also when closed implicitly)."""
        self.check()
        if not self.can_have_content_:
            raise ValueError(f"<{self.tag_name}> cannot have content, so it has no end tag")
        if not callable(handler):
            raise TypeError(f"on_end_tag(): handler must be callable (called with the EndTag), "
                            f"not {type(handler).__name__}")
        if self.end_handlers is None:
            self.end_handlers = []
        self.end_handlers.append(handler)

    def capture(self, callback, str kind="text", *, max_bytes=DEFAULT_MAX_CAPTURE_BYTES,
                str on_limit="truncate"):
        """Call ``callback(captured)`` where the element ends (its end tag, or where it is
        closed implicitly, or the end of input) with its content: a :class:`Captured` whose
        ``value`` is the element's text content (``kind="text"``: decoded, as the DOM's
        ``textContent``: the text of its descendants too, comments left out), its inner HTML
        (``"inner_html"``) or its outer HTML (``"outer_html"``), read from the input (what
        handlers change or remove in the output does not change it).

        At most ``max_bytes`` bytes of the input are held for it: beyond them ``on_limit``
        decides: ``"truncate"`` (the value is what the first ``max_bytes`` bytes give, and
        ``truncated`` is true) or ``"error"`` (:class:`BufferLimitExceeded`, which stops the
        stream).  A void element delivers at once, after its handlers (text and inner HTML
        empty, outer HTML its tag).  Callbacks run in the order asked for, before the
        element's end-tag handlers (:meth:`on_end_tag`), as a handler does: an exception stops
        the stream."""
        cdef int k
        self.check_tag("be captured")
        if not callable(callback):
            raise TypeError("the capture callback must be callable")
        if kind == "text":
            k = 0
        elif kind == "inner_html":
            k = 1
        elif kind == "outer_html":
            k = 2
        else:
            raise ValueError(
                f"kind must be 'text', 'inner_html' or 'outer_html', not {kind!r}")
        if type(max_bytes) is not int or max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, not {max_bytes!r}")
        if on_limit != "truncate" and on_limit != "error":
            raise ValueError(f"on_limit must be 'truncate' or 'error', not {on_limit!r}")
        if self.captures is None:
            self.captures = []
        self.captures.append((callback, k, max_bytes, on_limit == "error"))

    cdef bint is_modified(self) noexcept:
        return (Unit.is_modified(self) or self.tag_modified or self.prepend_parts is not None
                or self.append_parts is not None or self.remove_content
                or self.end_handlers is not None or self.start_tag_markup is not None)

    def __repr__(self):
        return f"<Element {self.tag_name!r} at {self.offset_}>"


cdef Element make_element(const unsigned char* p, TagRec* tag, int ns, bint can_have_content,
                          int content_text_type, str encoding, Element reuse):
    """A live Element for ``tag``, whose bytes are at ``p``: ``reuse`` (released, see
    release_element) if given, else a new one."""
    cdef Element el = reuse
    cdef Py_ssize_t s = tag.start
    cdef Py_ssize_t n = tag.end - tag.start
    cdef Py_ssize_t i
    cdef AttrSpan* spans
    if el is None:
        el = Element.__new__(Element)
    if el.encoding is not encoding:
        el.encoding = encoding
    el.live = True
    # (a PyObject*: no reference taken for the call, the count is the holders')
    if el.raw_ is None or not bytes_refill(<PyObject*>el.raw_, el.raw_cap, <const char*>p, n):
        # (room for the next tags of about this length; a long tag gets what it needs)
        el.raw_cap = (n + 63) & ~63 if n <= 512 else n
        el.raw_ = bytes_room(<const char*>p, n, el.raw_cap)
    el.offset_ = s
    el.name_start = tag.name_start - s
    el.name_end = tag.name_end - s
    el.name_hash = tag.name_hash
    el.self_closing = tag.self_closing
    el.can_have_content_ = can_have_content
    el.ns = ns
    el.content_text_type = content_text_type
    el.implied_ = False
    el.n_spans = tag.n_attrs
    if tag.n_attrs > el.spans_cap:
        spans = <AttrSpan*>realloc(el.spans, tag.n_attrs * sizeof(AttrSpan))
        if spans == NULL:
            el.n_spans = 0
            raise MemoryError()
        el.spans = spans
        el.spans_cap = tag.n_attrs
    for i in range(tag.n_attrs):
        el.spans[i].name_start = tag.attrs[i].name_start - s
        el.spans[i].name_end = tag.attrs[i].name_end - s
        if tag.attrs[i].value_start < 0:
            el.spans[i].value_start = -1
            el.spans[i].value_end = -1
        else:
            el.spans[i].value_start = tag.attrs[i].value_start - s
            el.spans[i].value_end = tag.attrs[i].value_end - s
        el.spans[i].end = tag.attrs[i].end - s
    return el


cdef Element make_implied_element(uint64_t name_hash, str name, int ns, Py_ssize_t offset,
                                  int content_text_type, str encoding):
    """A live Element for an element the tree builder implied (no tag), beginning at
    ``offset``."""
    cdef Element el = Element.__new__(Element)
    el.encoding = encoding
    el.live = True
    el.raw_ = b""
    el.offset_ = offset
    el.name_start = 0
    el.name_end = 0
    el.name_hash = name_hash
    el.name_ = name
    el.self_closing = False
    el.can_have_content_ = True
    el.ns = ns
    el.content_text_type = content_text_type
    el.n_spans = 0
    el.implied_ = True
    el.open_stack = &_HTML_ENTRY
    el.open_n = 0 if name_hash == HTML_HASH else 1
    return el


cdef void release_element(Element el) noexcept:
    """Make a finished Element that nothing else references ready to be reused by
    make_element: everything a handler set goes (its spans buffer stays).  Only for an element
    no user code can reach any more (the rewriter checks that it holds the only reference),
    so that reuse cannot be seen."""
    # (tested first: most are None already, and a test is cheaper than a reassignment)
    if el.before_parts is not None:
        el.before_parts = None
    if el.after_parts is not None:
        el.after_parts = None
    if el.replacement is not None:
        el.replacement = None
    if el.name_ is not None:
        el.name_ = None
    if el.new_name is not None:
        el.new_name = None
    if el.looked_name is not None:
        el.looked_name = None
    if el.overrides is not None:
        if el.spare_overrides is None:
            list_empty(el.overrides)
            el.spare_overrides = el.overrides
        el.overrides = None
    if el.prepend_parts is not None:
        el.prepend_parts = None
    if el.append_parts is not None:
        el.append_parts = None
    if el.inner is not None:
        el.inner = None
    if el.end_handlers is not None:
        el.end_handlers = None
    if el.start_tag_markup is not None:
        el.start_tag_markup = None
    el.removed_ = False
    el.merged_ = False
    el.tag_modified = False
    el.remove_content = False
    el.whole = False
