"""Encodings as browsers know them: the WHATWG Encoding Standard's labels, encoding sniffing,
and content sniffing.

The engine reads HTML as bytes (DESIGN principle 3); what a handler reads is decoded, and what it
writes encoded, with a Python codec.  This module maps every label of the Encoding Standard to
its encoding and that encoding to a Python codec, fixing the places where Python's codecs differ
from what browsers do:

* ``windows-874`` and ``windows-1250`` ... ``windows-1258``: bytes 0x80-0x9F that Microsoft's
  tables leave undefined decode to the C1 control of the same value (``windows-1252``'s 0x81,
  0x8D, 0x8F, 0x90 and 0x9D among them); ``windows-1255`` also maps 0xCA to U+05BA.
* ``koi8-u`` is KOI8-RU: 0xAE is ``ў`` and 0xBE is ``Ў``.
* ``gbk`` and ``gb18030`` both decode with the gb18030 decoder, and a lone byte 0x80 is ``€``.
* ``euc-kr`` is Windows code page 949, ``shift_jis`` is code page 932 and ``big5`` includes the
  Hong Kong Supplementary Character Set.
* ``x-user-defined`` maps bytes 0x80-0xFF to U+F780-U+F7FF.
* ``replacement`` (the labels of ISO-2022-KR, ISO-2022-CN and HZ-GB-2312) decodes any input to
  a single U+FFFD.

The fixed tables are registered as Python codecs named ``htmlstream-<name>``, so that
``bytes.decode`` and ``str.encode`` (and the compiled engine) can use them like any codec.

Encoding sniffing follows the HTML Standard (:func:`sniff_encoding`): byte order mark, then the
transport charset (the ``Content-Type`` header), then the prescan of the first 1024 bytes for
``<meta charset>``, ``<meta http-equiv="Content-Type">`` and an XML declaration, then a default.
Content sniffing (:func:`looks_like_html`, :func:`sniff_content`) tells HTML from the JSON,
images, archives, binary data and XML that servers also label ``text/html``.
"""

from __future__ import annotations

import codecs
import dataclasses
import types
from collections.abc import Callable, Mapping
from typing import Final, Literal, NamedTuple, TypeAlias

from htmlstream._ascii import ascii_lower as _ascii_lower
from htmlstream.errors import BYTES_LIKE, EncodingError, check_type

__all__ = [
    "DEFAULT_ENCODING",
    "LABELS",
    "PRESCAN_BYTES",
    "Encoding",
    "SniffResult",
    "SniffSource",
    "content_type_charset",
    "get_encoding",
    "looks_like_html",
    "lookup",
    "meta_content_charset",
    "prescan",
    "sniff",
    "sniff_content",
    "sniff_encoding",
]

_BYTES = "bytes-like (bytes, bytearray, memoryview)"   # (in TypeErrors)

#: What :func:`sniff_encoding` returns when nothing declares an encoding.
DEFAULT_ENCODING: Final = "windows-1252"
#: How many bytes the prescan for ``<meta charset>`` reads, as the HTML Standard advises.
PRESCAN_BYTES: Final = 1024

# --------------------------------------------------------------------------------------------
# The Encoding Standard's names and labels
# --------------------------------------------------------------------------------------------

#: Each encoding (by its name, in lower case) with its labels, as in the Encoding Standard's
#: "Names and labels" table.
_NAMES_AND_LABELS: Final[dict[str, tuple[str, ...]]] = {
    "utf-8": ("unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8",
              "x-unicode20utf8"),
    # Legacy single-byte encodings
    "ibm866": ("866", "cp866", "csibm866", "ibm866"),
    "iso-8859-2": ("csisolatin2", "iso-8859-2", "iso-ir-101", "iso8859-2", "iso88592",
                   "iso_8859-2", "iso_8859-2:1987", "l2", "latin2"),
    "iso-8859-3": ("csisolatin3", "iso-8859-3", "iso-ir-109", "iso8859-3", "iso88593",
                   "iso_8859-3", "iso_8859-3:1988", "l3", "latin3"),
    "iso-8859-4": ("csisolatin4", "iso-8859-4", "iso-ir-110", "iso8859-4", "iso88594",
                   "iso_8859-4", "iso_8859-4:1988", "l4", "latin4"),
    "iso-8859-5": ("csisolatincyrillic", "cyrillic", "iso-8859-5", "iso-ir-144", "iso8859-5",
                   "iso88595", "iso_8859-5", "iso_8859-5:1988"),
    "iso-8859-6": ("arabic", "asmo-708", "csiso88596e", "csiso88596i", "csisolatinarabic",
                   "ecma-114", "iso-8859-6", "iso-8859-6-e", "iso-8859-6-i", "iso-ir-127",
                   "iso8859-6", "iso88596", "iso_8859-6", "iso_8859-6:1987"),
    "iso-8859-7": ("csisolatingreek", "ecma-118", "elot_928", "greek", "greek8", "iso-8859-7",
                   "iso-ir-126", "iso8859-7", "iso88597", "iso_8859-7", "iso_8859-7:1987",
                   "sun_eu_greek"),
    "iso-8859-8": ("csiso88598e", "csisolatinhebrew", "hebrew", "iso-8859-8", "iso-8859-8-e",
                   "iso-ir-138", "iso8859-8", "iso88598", "iso_8859-8", "iso_8859-8:1988",
                   "visual"),
    "iso-8859-8-i": ("csiso88598i", "iso-8859-8-i", "logical"),
    "iso-8859-10": ("csisolatin6", "iso-8859-10", "iso-ir-157", "iso8859-10", "iso885910",
                    "l6", "latin6"),
    "iso-8859-13": ("iso-8859-13", "iso8859-13", "iso885913"),
    "iso-8859-14": ("iso-8859-14", "iso8859-14", "iso885914"),
    "iso-8859-15": ("csisolatin9", "iso-8859-15", "iso8859-15", "iso885915", "iso_8859-15",
                    "l9"),
    "iso-8859-16": ("iso-8859-16",),
    "koi8-r": ("cskoi8r", "koi", "koi8", "koi8-r", "koi8_r"),
    "koi8-u": ("koi8-ru", "koi8-u"),
    "macintosh": ("csmacintosh", "mac", "macintosh", "x-mac-roman"),
    "windows-874": ("dos-874", "iso-8859-11", "iso8859-11", "iso885911", "tis-620",
                    "windows-874"),
    "windows-1250": ("cp1250", "windows-1250", "x-cp1250"),
    "windows-1251": ("cp1251", "windows-1251", "x-cp1251"),
    "windows-1252": ("ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819",
                     "iso-8859-1", "iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1",
                     "iso_8859-1:1987", "l1", "latin1", "us-ascii", "windows-1252",
                     "x-cp1252"),
    "windows-1253": ("cp1253", "windows-1253", "x-cp1253"),
    "windows-1254": ("cp1254", "csisolatin5", "iso-8859-9", "iso-ir-148", "iso8859-9",
                     "iso88599", "iso_8859-9", "iso_8859-9:1989", "l5", "latin5",
                     "windows-1254", "x-cp1254"),
    "windows-1255": ("cp1255", "windows-1255", "x-cp1255"),
    "windows-1256": ("cp1256", "windows-1256", "x-cp1256"),
    "windows-1257": ("cp1257", "windows-1257", "x-cp1257"),
    "windows-1258": ("cp1258", "windows-1258", "x-cp1258"),
    "x-mac-cyrillic": ("x-mac-cyrillic", "x-mac-ukrainian"),
    # Legacy multi-byte Chinese (simplified) encodings
    "gbk": ("chinese", "csgb2312", "csiso58gb231280", "gb2312", "gb_2312", "gb_2312-80", "gbk",
            "iso-ir-58", "x-gbk"),
    "gb18030": ("gb18030",),
    # Legacy multi-byte Chinese (traditional) encodings
    "big5": ("big5", "big5-hkscs", "cn-big5", "csbig5", "x-x-big5"),
    # Legacy multi-byte Japanese encodings
    "euc-jp": ("cseucpkdfmtjapanese", "euc-jp", "x-euc-jp"),
    "iso-2022-jp": ("csiso2022jp", "iso-2022-jp"),
    "shift_jis": ("csshiftjis", "ms932", "ms_kanji", "shift-jis", "shift_jis", "sjis",
                  "windows-31j", "x-sjis"),
    # Legacy multi-byte Korean encodings
    "euc-kr": ("cseuckr", "csksc56011987", "euc-kr", "iso-ir-149", "korean", "ks_c_5601-1987",
               "ks_c_5601-1989", "ksc5601", "ksc_5601", "windows-949"),
    # Legacy miscellaneous encodings
    "replacement": ("csiso2022kr", "hz-gb-2312", "iso-2022-cn", "iso-2022-cn-ext",
                    "iso-2022-kr"),
    "utf-16be": ("unicodefffe", "utf-16be"),
    "utf-16le": ("csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16",
                 "utf-16le"),
    "x-user-defined": ("x-user-defined",),
}

#: Every label of the Encoding Standard -> the name of its encoding.
LABELS: Final[Mapping[str, str]] = types.MappingProxyType(
    {label: name for name, labels in _NAMES_AND_LABELS.items() for label in labels}
)

# --------------------------------------------------------------------------------------------
# Codecs: Python's, and the fixed ones registered under htmlstream-<name>
# --------------------------------------------------------------------------------------------

_CODEC_PREFIX: Final = "htmlstream-"

#: Single-byte encodings whose Python codec needs fixing: base codec, whether undefined bytes
#: 0x80-0x9F become C1 controls, and further byte -> code point overrides.
_SINGLE_BYTE_FIXES: Final[dict[str, tuple[str, bool, dict[int, int]]]] = {
    "windows-874": ("cp874", True, {}),
    "windows-1250": ("cp1250", True, {}),
    "windows-1251": ("cp1251", True, {}),
    "windows-1252": ("cp1252", True, {}),
    "windows-1253": ("cp1253", True, {}),
    "windows-1254": ("cp1254", True, {}),
    "windows-1255": ("cp1255", True, {0xCA: 0x05BA}),
    "windows-1257": ("cp1257", True, {}),
    "windows-1258": ("cp1258", True, {}),
    "koi8-u": ("koi8_u", False, {0xAE: 0x045E, 0xBE: 0x040E}),
}

#: Encoding name -> Python codec, for the encodings Python's codecs get right.
_PYTHON_CODECS: Final[dict[str, str]] = {
    "utf-8": "utf-8",
    "ibm866": "cp866",
    "iso-8859-2": "iso8859_2",
    "iso-8859-3": "iso8859_3",
    "iso-8859-4": "iso8859_4",
    "iso-8859-5": "iso8859_5",
    "iso-8859-6": "iso8859_6",
    "iso-8859-7": "iso8859_7",
    "iso-8859-8": "iso8859_8",
    "iso-8859-8-i": "iso8859_8",
    "iso-8859-10": "iso8859_10",
    "iso-8859-13": "iso8859_13",
    "iso-8859-14": "iso8859_14",
    "iso-8859-15": "iso8859_15",
    "iso-8859-16": "iso8859_16",
    "koi8-r": "koi8_r",
    "macintosh": "mac_roman",
    "windows-1256": "cp1256",
    "x-mac-cyrillic": "mac_cyrillic",
    "big5": "big5hkscs",
    "euc-jp": "euc_jp",
    # ISO-2022-JP with JIS X 0201 katakana (ESC ( I), which the Encoding Standard decodes too.
    "iso-2022-jp": "iso2022_jp_ext",
    "shift_jis": "cp932",
    "euc-kr": "cp949",
    "utf-16be": "utf-16-be",
    "utf-16le": "utf-16-le",
}

#: Legacy multi-byte encodings (UTF-8 aside): a character may be cut between two chunks, so
#: text is decoded with an incremental decoder, in stream order.
_MULTIBYTE: Final = frozenset({"gbk", "gb18030", "big5", "euc-jp", "shift_jis", "euc-kr"})
_NOT_ASCII_COMPATIBLE: Final = frozenset({"utf-16be", "utf-16le", "iso-2022-jp", "replacement"})


def _codec_of(name: str) -> str:
    if name in _PYTHON_CODECS:
        return _PYTHON_CODECS[name]
    if name == "gbk":
        return _CODEC_PREFIX + "gb18030"
    return _CODEC_PREFIX + name


def _charmap_codec(name: str, table: str) -> codecs.CodecInfo:
    """A codec for a 256-entry decoding table (U+FFFE marks an undefined byte)."""
    encoding_map = codecs.charmap_build(table)

    def encode(text: str, errors: str = "strict") -> tuple[bytes, int]:
        return codecs.charmap_encode(text, errors, encoding_map)

    def decode(data: bytes, errors: str = "strict") -> tuple[str, int]:
        return codecs.charmap_decode(data, errors, table)

    class IncrementalEncoder(codecs.IncrementalEncoder):
        def encode(self, text: str, final: bool = False) -> bytes:
            return codecs.charmap_encode(text, self.errors, encoding_map)[0]

    class IncrementalDecoder(codecs.IncrementalDecoder):
        def decode(self, data: bytes, final: bool = False) -> str:  # type: ignore[override]
            return codecs.charmap_decode(data, self.errors, table)[0]

    class StreamWriter(codecs.StreamWriter):
        def encode(self, text: str, errors: str = "strict") -> tuple[bytes, int]:
            return codecs.charmap_encode(text, errors, encoding_map)

    class StreamReader(codecs.StreamReader):
        def decode(self, data: bytes, errors: str = "strict") -> tuple[str, int]:
            return codecs.charmap_decode(data, errors, table)

    # (typeshed's decoder takes any buffer: codecs hand these bytes)
    return codecs.CodecInfo(
        encode, decode,  # type: ignore[arg-type]
        StreamReader, StreamWriter, IncrementalEncoder, IncrementalDecoder,
        name=name,
    )


def _single_byte_table(base: str, c1_controls: bool, overrides: dict[int, int]) -> str:
    chars = []
    for byte in range(256):
        if byte in overrides:
            chars.append(chr(overrides[byte]))
            continue
        try:
            chars.append(bytes([byte]).decode(base))
        except UnicodeDecodeError:
            chars.append(chr(byte) if c1_controls and 0x80 <= byte <= 0x9F else "\ufffe")
    return "".join(chars)


# gb18030 (and gbk): Python's gb18030 codec, except that a lone byte 0x80 is U+20AC (as in the
# Encoding Standard's gb18030 decoder).  An error handler does it: 0x80 is never valid in
# gb18030 where a character starts, so the decoder reports it as an error of its own.
_GB_ERRORS: Final = {"strict": "htmlstream-gb18030-strict",
                     "replace": "htmlstream-gb18030-replace",
                     "ignore": "htmlstream-gb18030-ignore"}


def _gb_error_handler(fallback: str) -> Callable[[UnicodeError], tuple[str, int]]:
    def handle(exc: UnicodeError) -> tuple[str, int]:
        if isinstance(exc, UnicodeDecodeError) and exc.object[exc.start] == 0x80:
            return "\u20ac", exc.start + 1
        if fallback == "replace":
            return "\ufffd", exc.end  # type: ignore[attr-defined]
        if fallback == "ignore":
            return "", exc.end  # type: ignore[attr-defined]
        raise exc

    return handle


def _gb18030_codec() -> codecs.CodecInfo:
    base = codecs.lookup("gb18030")

    def decode(data: bytes, errors: str = "strict") -> tuple[str, int]:
        return base.decode(data, _GB_ERRORS.get(errors, errors))

    class IncrementalDecoder(codecs.IncrementalDecoder):
        def __init__(self, errors: str = "strict") -> None:
            super().__init__(errors)
            self._inner = base.incrementaldecoder(_GB_ERRORS.get(errors, errors))

        def decode(self, data: bytes, final: bool = False) -> str:  # type: ignore[override]
            return self._inner.decode(data, final)

        def reset(self) -> None:
            self._inner.reset()

        def getstate(self) -> tuple[bytes, int]:
            return self._inner.getstate()

        def setstate(self, state: tuple[bytes, int]) -> None:
            self._inner.setstate(state)

    class StreamReader(codecs.StreamReader):
        def decode(self, data: bytes, errors: str = "strict") -> tuple[str, int]:
            return decode(data, errors)

    # (typeshed's decoder takes any buffer: codecs hand these bytes)
    return codecs.CodecInfo(
        base.encode, decode,  # type: ignore[arg-type]
        StreamReader, base.streamwriter, base.incrementalencoder,
        IncrementalDecoder, name=_CODEC_PREFIX + "gb18030",
    )


def _replacement_codec() -> codecs.CodecInfo:
    """The replacement encoding: any input decodes to one U+FFFD; output is UTF-8."""
    utf8 = codecs.lookup("utf-8")

    def decode(data: bytes, errors: str = "strict") -> tuple[str, int]:
        if data and errors == "strict":
            raise UnicodeDecodeError("replacement", bytes(data), 0, len(data),
                                     "the replacement encoding decodes nothing")
        return ("\ufffd" if data else ""), len(data)

    class IncrementalDecoder(codecs.IncrementalDecoder):
        def __init__(self, errors: str = "strict") -> None:
            super().__init__(errors)
            self._done = False

        def decode(self, data: bytes, final: bool = False) -> str:  # type: ignore[override]
            if not data or self._done:
                return ""
            self._done = True
            return decode(data, self.errors)[0]

        def reset(self) -> None:
            self._done = False

    class StreamReader(codecs.StreamReader):
        def decode(self, data: bytes, errors: str = "strict") -> tuple[str, int]:
            return decode(data, errors)

    # (typeshed's decoder takes any buffer: codecs hand these bytes)
    return codecs.CodecInfo(
        utf8.encode, decode,  # type: ignore[arg-type]
        StreamReader, utf8.streamwriter, utf8.incrementalencoder,
        IncrementalDecoder, name=_CODEC_PREFIX + "replacement",
    )


#: The codecs made so far, by key (a handful: only the names above).  Safe to share between
#: threads without the GIL too: only setdefault adds to it, so every thread gets one codec per
#: key (a racing thread's equal codec is dropped) and no entry is ever replaced or removed.
_codec_cache: dict[str, codecs.CodecInfo] = {}


def _search(normalized: str) -> codecs.CodecInfo | None:
    """The codec search function: ``htmlstream-<name>`` (normalised by Python to
    ``htmlstream_<name>`` with ``-`` and spaces as ``_``)."""
    prefix = _CODEC_PREFIX.replace("-", "_")
    if not normalized.startswith(prefix):
        return None
    key = normalized[len(prefix):]
    info = _codec_cache.get(key)
    if info is not None:
        return info
    for name, (base, c1_controls, overrides) in _SINGLE_BYTE_FIXES.items():
        if name.replace("-", "_") == key:
            info = _charmap_codec(_CODEC_PREFIX + name,
                                  _single_byte_table(base, c1_controls, overrides))
            break
    else:
        if key == "x_user_defined":
            table = "".join(chr(b) if b < 0x80 else chr(0xF780 + b - 0x80) for b in range(256))
            info = _charmap_codec(_CODEC_PREFIX + "x-user-defined", table)
        elif key == "gb18030":
            info = _gb18030_codec()
        elif key == "replacement":
            info = _replacement_codec()
        else:
            return None
    return _codec_cache.setdefault(key, info)


codecs.register(_search)
for _fallback, _handler_name in _GB_ERRORS.items():
    codecs.register_error(_handler_name, _gb_error_handler(_fallback))
del _fallback, _handler_name

# --------------------------------------------------------------------------------------------
# Encoding objects and label look-up
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Encoding:
    """An encoding of the Encoding Standard.

    Attributes:
        name: its name in lower case (``"windows-1252"``, ``"shift_jis"``, ``"utf-8"``).
        codec: the Python codec that decodes and encodes it as browsers do (for some
            encodings a codec this module registers, such as ``"htmlstream-windows-1252"``).
        ascii_compatible: whether every byte below 0x80 means its ASCII character wherever
            it appears, which the byte-level engine needs (false for UTF-16LE, UTF-16BE,
            ISO-2022-JP and replacement).
        multibyte: a legacy multi-byte encoding (Shift_JIS, EUC-JP, EUC-KR, GBK, gb18030,
            Big5), whose text must be decoded in stream order.
    """

    name: str
    codec: str
    ascii_compatible: bool
    multibyte: bool

    def __str__(self) -> str:
        return self.name

    def decode(self, data: bytes | bytearray | memoryview, errors: str = "replace") -> str:
        """Decode ``data`` (a byte order mark, if any, is kept as U+FEFF)."""
        return bytes(data).decode(self.codec, errors)

    def encode(self, text: str, errors: str = "strict") -> bytes:
        """Encode ``text`` (``errors="xmlcharrefreplace"`` gives numeric character
        references for what the encoding cannot represent)."""
        return text.encode(self.codec, errors)

    def incremental_decoder(self, errors: str = "replace") -> codecs.IncrementalDecoder:
        """A new incremental decoder: ``decode(chunk, final=False) -> str``."""
        return codecs.getincrementaldecoder(self.codec)(errors)


_ENCODINGS: Final[dict[str, Encoding]] = {
    name: Encoding(name, _codec_of(name), name not in _NOT_ASCII_COMPATIBLE, name in _MULTIBYTE)
    for name in _NAMES_AND_LABELS
}
UTF_8: Final = _ENCODINGS["utf-8"]
WINDOWS_1252: Final = _ENCODINGS["windows-1252"]
UTF_16LE: Final = _ENCODINGS["utf-16le"]
UTF_16BE: Final = _ENCODINGS["utf-16be"]

_ASCII_WHITESPACE: Final = "\t\n\x0c\r "


def get_encoding(label: str | bytes) -> Encoding | None:
    """The Encoding Standard's "get an encoding": the encoding ``label`` names (ASCII
    whitespace around it and ASCII case ignored), or ``None``."""
    check_type(label, (str, bytes), "get_encoding()", "label", "a str or bytes")
    if isinstance(label, (bytes, bytearray)):
        label = bytes(label).decode("latin-1")
    key = label.strip(_ASCII_WHITESPACE)
    if not key.isascii():
        return None
    name = LABELS.get(_ascii_lower(key))
    return None if name is None else _ENCODINGS[name]


def _suggestion(label: str) -> str:
    """A hint for a label that is not the Encoding Standard's but that Python knows."""
    try:
        python_name = codecs.lookup(label).name
    except (LookupError, ValueError):
        return ""
    bases = {**_PYTHON_CODECS, **{name: fix[0] for name, fix in _SINGLE_BYTE_FIXES.items()}}
    for name, codec in bases.items():
        if codecs.lookup(codec).name == python_name:
            return f" (Python's {python_name!r} is the encoding {name!r})"
    if python_name in ("latin-1", "iso8859-1"):
        return " (browsers read ISO-8859-1 as 'windows-1252', whose labels include 'latin1')"
    return ""


def lookup(label: str | Encoding) -> Encoding:
    """The encoding ``label`` names, one of the labels of the WHATWG Encoding Standard
    (``"utf-8"``, ``"latin1"``, ``"Shift_JIS"``, ``"gb2312"``...; case and surrounding
    whitespace do not matter).

    Raises:
        EncodingError: ``label`` is not a label of the Encoding Standard.
    """
    if isinstance(label, Encoding):
        return label
    if not isinstance(label, str):
        raise TypeError(f"an encoding label must be str, not {type(label).__name__}")
    encoding = get_encoding(label)
    if encoding is None:
        raise EncodingError(
            f"unknown encoding {label!r}: not a label of the WHATWG Encoding Standard"
            f"{_suggestion(label)}"
        )
    return encoding


def not_ascii_compatible_message(label: str, encoding: Encoding) -> str:
    """Why the byte-level engine cannot read ``encoding``, and what to do instead."""
    shown = repr(label) if label.strip(_ASCII_WHITESPACE).lower() == encoding.name \
        else f"{label!r} ({encoding.name})"
    if encoding.name == "replacement":
        return (
            f"encoding {shown} is not ASCII-compatible: it is the replacement encoding, which "
            f"browsers use for ISO-2022-KR, ISO-2022-CN and HZ-GB-2312 and which decodes a "
            f"whole document to a single U+FFFD; there is nothing to rewrite"
        )
    return (
        f"encoding {shown} is not ASCII-compatible, so markup cannot be found in its bytes; "
        f"decode the input yourself and feed it as UTF-8, or use Rewriter(transcode=True), "
        f"which does that and writes UTF-8"
    )


def _resolve_encoding(label: str | Encoding) -> str:
    """The Python codec for the encoding ``label`` names, if the byte-level engine can read it.

    The engine finds markup in raw bytes, so the encoding must be ASCII-compatible.

    Raises:
        EncodingError: ``label`` is unknown, or names UTF-16LE, UTF-16BE, ISO-2022-JP or
            replacement (the message says what to do instead).
    """
    encoding = lookup(label)
    if not encoding.ascii_compatible:
        raise EncodingError(not_ascii_compatible_message(str(label), encoding))
    return encoding.codec


# --------------------------------------------------------------------------------------------
# Encoding sniffing (HTML Standard, "determining the character encoding")
# --------------------------------------------------------------------------------------------


#: Where :func:`sniff` found the encoding (``SniffResult.source``).
SniffSource: TypeAlias = Literal["bom", "transport", "meta", "xml", "default"]


class SniffResult(NamedTuple):
    """What :func:`sniff` found.

    Attributes:
        encoding: the encoding's name (lower case).
        source: where it came from: ``"bom"``, ``"transport"`` (the ``Content-Type``),
            ``"meta"`` (a ``<meta>`` found by the prescan), ``"xml"`` (an XML declaration) or
            ``"default"``.
        certain: the HTML Standard's confidence: true for a byte order mark or a transport
            charset, which a later ``<meta charset>`` cannot change; false ("tentative") for the
            others, which the first ``<meta charset>`` the parser meets may change (see
            ``Rewriter(adjust_charset_on_meta_tag=True)``).
    """

    encoding: str
    source: SniffSource
    certain: bool


def sniff_bom(data: bytes | bytearray | memoryview) -> tuple[Encoding | None, int]:
    """The Encoding Standard's BOM sniff: ``(encoding, length of the byte order mark)``, or
    ``(None, 0)`` when ``data`` does not start with one."""
    head = bytes(data[:3])
    if head == b"\xef\xbb\xbf":
        return UTF_8, 3
    if head[:2] == b"\xfe\xff":
        return UTF_16BE, 2
    if head[:2] == b"\xff\xfe":
        return UTF_16LE, 2
    return None, 0


def sniff(
    prefix: bytes | bytearray | memoryview,
    content_type: str | None = None,
    *,
    default: str = DEFAULT_ENCODING,
) -> SniffResult:
    """The HTML Standard's encoding sniffing algorithm, with its confidence.

    Args:
        prefix: the first bytes of the document: at least :data:`PRESCAN_BYTES` (1024) of them
            when there are that many (more are ignored).
        content_type: the ``Content-Type`` header's value, whose ``charset`` parameter (the
            transport charset) wins over what the document declares.
        default: the encoding when nothing declares one (the HTML Standard suggests
            ``windows-1252`` for most locales; see its table for others).
    """
    check_type(prefix, BYTES_LIKE, "sniff()", "prefix", _BYTES)
    bom, _ = sniff_bom(prefix)
    if bom is not None:
        return SniffResult(bom.name, "bom", True)
    if content_type is not None:
        label = content_type_charset(content_type)
        encoding = None if label is None else get_encoding(label)
        if encoding is not None:
            return SniffResult(encoding.name, "transport", True)
    data = bytes(prefix[:PRESCAN_BYTES])
    found = _prescan(data)
    if found is not None:
        return SniffResult(found[0].name, found[1], False)
    return SniffResult(lookup(default).name, "default", False)


def sniff_encoding(
    prefix: bytes | bytearray | memoryview,
    content_type: str | None = None,
    *,
    default: str = DEFAULT_ENCODING,
) -> str:
    """The encoding a browser would decode a document with (its name, in lower case).

    In the HTML Standard's order: a byte order mark; the ``charset`` of ``content_type`` (the
    ``Content-Type`` header's value); the prescan of the first 1024 bytes of ``prefix`` for
    ``<meta charset=...>``, ``<meta http-equiv="Content-Type" content="...; charset=...">`` or
    an XML declaration's ``encoding``; ``default`` (``windows-1252``).

    >>> sniff_encoding(b'<!doctype html><meta charset="Shift_JIS"><title>...')
    'shift_jis'
    >>> sniff_encoding(b'<p>hi', 'text/html; charset=ISO-8859-1')
    'windows-1252'
    """
    check_type(prefix, BYTES_LIKE, "sniff_encoding()", "prefix", _BYTES)
    return sniff(prefix, content_type, default=default).encoding


def prescan(prefix: bytes | bytearray | memoryview) -> str | None:
    """The HTML Standard's "prescan a byte stream to determine its encoding" over the first
    1024 bytes of ``prefix``: the encoding a ``<meta>`` (or, failing that, an XML declaration)
    declares, or ``None``."""
    check_type(prefix, BYTES_LIKE, "prescan()", "prefix", _BYTES)
    found = _prescan(bytes(prefix[:PRESCAN_BYTES]))
    return None if found is None else found[0].name


class _OutOfBytes(Exception):
    """The prescan ran past the end of the bytes it was given."""


_WS_BYTES: Final = frozenset(b"\t\n\x0c\r ")
_NULL: Final = object()     # "charset is null" (as opposed to failure, None)


def _prescan(data: bytes) -> tuple[Encoding, Literal["meta", "xml"]] | None:
    """``(encoding, "meta" | "xml")`` or None."""
    try:
        encoding = _prescan_meta(data)
    except _OutOfBytes:
        declared = _xml_encoding(data)
        return None if declared is None else (declared, "xml")
    return encoding, "meta"


def _lower(byte: int) -> int:
    return byte + 0x20 if 0x41 <= byte <= 0x5A else byte


def _prescan_meta(data: bytes) -> Encoding:
    n = len(data)
    # Prescan for UTF-16 XML declarations.
    if data.startswith(b"<\x00?\x00x\x00"):
        return UTF_16LE
    if data.startswith(b"\x00<\x00?\x00x"):
        return UTF_16BE
    pos = 0
    while True:
        if pos >= n:
            raise _OutOfBytes
        if data.startswith(b"<!--", pos):
            end = data.find(b"-->", pos + 2)
            if end < 0:
                raise _OutOfBytes
            pos = end + 2
        elif (data[pos] == 0x3C and data[pos + 1:pos + 5].lower() == b"meta"
              and pos + 5 < n and data[pos + 5] in b"\t\n\x0c\r /"):
            pos += 5
            encoding, pos = _prescan_meta_attributes(data, pos)
            if encoding is not None:
                return encoding
        elif data[pos] == 0x3C and (
            (pos + 1 < n and _is_alpha(data[pos + 1]))
            or (pos + 2 < n and data[pos + 1] == 0x2F and _is_alpha(data[pos + 2]))
        ):
            while True:
                pos += 1
                if pos >= n:
                    raise _OutOfBytes
                if data[pos] in _WS_BYTES or data[pos] == 0x3E:
                    break
            while True:
                attribute, pos = _get_attribute(data, pos)
                if attribute is None:
                    break
        elif data[pos] == 0x3C and pos + 1 < n and data[pos + 1] in b"!/?":
            end = data.find(b">", pos + 1)
            if end < 0:
                raise _OutOfBytes
            pos = end
        pos += 1    # next byte


def _is_alpha(byte: int) -> bool:
    return 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


def _prescan_meta_attributes(data: bytes, pos: int) -> tuple[Encoding | None, int]:
    """The attributes of a ``<meta`` the prescan found: the encoding it declares (or None) and
    the position where the attributes ended."""
    seen: set[str] = set()
    got_pragma = False
    need_pragma: bool | None = None
    charset: object = _NULL
    while True:
        attribute, pos = _get_attribute(data, pos)
        if attribute is None:
            break
        name, value = attribute
        if name in seen:
            continue
        seen.add(name)
        if name == "http-equiv":
            if value == "content-type":
                got_pragma = True
        elif name == "content":
            encoding = meta_content_charset(value)
            if encoding is not None and charset is _NULL:
                charset = encoding
                need_pragma = True
        elif name == "charset":
            charset = get_encoding(value)
            need_pragma = False
    if need_pragma is None or (need_pragma and not got_pragma):
        return None, pos
    if not isinstance(charset, Encoding):
        return None, pos
    return _meta_fixup(charset), pos


def _meta_fixup(encoding: Encoding) -> Encoding:
    """A ``<meta>`` cannot declare UTF-16 (the bytes being read are ASCII-compatible): it means
    UTF-8; x-user-defined means windows-1252."""
    if encoding.name in ("utf-16le", "utf-16be"):
        return UTF_8
    if encoding.name == "x-user-defined":
        return WINDOWS_1252
    return encoding


def _get_attribute(data: bytes, pos: int) -> tuple[tuple[str, str] | None, int]:
    """The HTML Standard's "get an attribute" (for the prescan): ``((name, value), position)``,
    or ``(None, position)`` at the ``>`` that ends the tag.  Names and values are lower-cased
    (ASCII only) and decoded as Latin-1."""
    n = len(data)
    while True:
        if pos >= n:
            raise _OutOfBytes
        byte = data[pos]
        if byte in _WS_BYTES or byte == 0x2F:
            pos += 1
            continue
        break
    if byte == 0x3E:
        return None, pos
    name = bytearray()
    value = bytearray()
    while True:     # the name
        if pos >= n:
            raise _OutOfBytes
        byte = data[pos]
        if byte == 0x3D and name:
            pos += 1
            break   # to the value
        if byte in _WS_BYTES:
            while True:     # spaces
                if pos >= n:
                    raise _OutOfBytes
                if data[pos] not in _WS_BYTES:
                    break
                pos += 1
            if data[pos] != 0x3D:
                return (name.decode("latin-1"), ""), pos
            pos += 1
            break   # to the value
        if byte == 0x2F or byte == 0x3E:
            return (name.decode("latin-1"), ""), pos
        name.append(_lower(byte))
        pos += 1
    while True:     # the value
        if pos >= n:
            raise _OutOfBytes
        if data[pos] not in _WS_BYTES:
            break
        pos += 1
    byte = data[pos]
    if byte == 0x22 or byte == 0x27:
        quote = byte
        while True:
            pos += 1
            if pos >= n:
                raise _OutOfBytes
            byte = data[pos]
            if byte == quote:
                return (name.decode("latin-1"), value.decode("latin-1")), pos + 1
            value.append(_lower(byte))
    if byte == 0x3E:
        return (name.decode("latin-1"), ""), pos
    value.append(_lower(byte))
    pos += 1
    while True:
        if pos >= n:
            raise _OutOfBytes
        byte = data[pos]
        if byte in _WS_BYTES or byte == 0x3E:
            return (name.decode("latin-1"), value.decode("latin-1")), pos
        value.append(_lower(byte))
        pos += 1


def _xml_encoding(data: bytes) -> Encoding | None:
    """The HTML Standard's "get an XML encoding" (when sniffing)."""
    if not data.startswith(b"<?xml"):
        return None
    end = data.find(b">")
    if end < 0:
        return None
    pos = data.find(b"encoding", 0, end)
    if pos < 0:
        return None
    pos += len(b"encoding")
    n = len(data)
    while pos < n and data[pos] <= 0x20:
        pos += 1
    if pos >= n or data[pos] != 0x3D:
        return None
    pos += 1
    while pos < n and data[pos] <= 0x20:
        pos += 1
    if pos >= n or data[pos] not in b"\"'":
        return None
    quote = data[pos:pos + 1]
    pos += 1
    stop = data.find(quote, pos)
    if stop < 0:
        return None
    potential = data[pos:stop]
    if any(byte <= 0x20 for byte in potential):
        return None
    encoding = get_encoding(potential.decode("latin-1"))
    if encoding is not None and encoding.name in ("utf-16le", "utf-16be"):
        return UTF_8
    return encoding




def meta_content_charset(content: str) -> Encoding | None:
    """The HTML Standard's "algorithm for extracting a character encoding from a meta
    element", applied to a ``content`` attribute's value (``"text/html; charset=utf-8"``)."""
    check_type(content, str, "meta_content_charset()", "content", "a str")
    position = 0
    lower = _ascii_lower(content)
    n = len(content)
    while True:
        found = lower.find("charset", position)
        if found < 0:
            return None
        position = found + 7
        while position < n and content[position] in _ASCII_WHITESPACE:
            position += 1
        if position >= n or content[position] != "=":
            continue    # look for "charset" again from here
        position += 1
        while position < n and content[position] in _ASCII_WHITESPACE:
            position += 1
        if position >= n:
            return None
        char = content[position]
        if char in "\"'":
            end = content.find(char, position + 1)
            if end < 0:
                return None
            return get_encoding(content[position + 1:end])
        end = position
        while end < n and content[end] not in _ASCII_WHITESPACE and content[end] != ";":
            end += 1
        return get_encoding(content[position:end])


def meta_element_encoding(get_attribute: Callable[[str], str | None]) -> Encoding | None:
    """The encoding a ``<meta>`` element declares, as the tree builder reads it: its
    ``charset`` attribute, else (``http-equiv="Content-Type"``) the charset in its ``content``;
    UTF-16 means UTF-8 and x-user-defined means windows-1252.  ``get_attribute(name)`` gives
    an attribute's value or None."""
    charset = get_attribute("charset")
    if charset is not None:
        encoding = get_encoding(charset)
        if encoding is not None:
            return _meta_fixup(encoding)
    http_equiv = get_attribute("http-equiv")
    if http_equiv is not None and _ascii_lower(http_equiv) == "content-type":
        content = get_attribute("content")
        if content is not None:
            encoding = meta_content_charset(content)
            if encoding is not None:
                return _meta_fixup(encoding)
    return None


# --- the transport charset: the charset parameter of a Content-Type header -------------------

_HTTP_WHITESPACE: Final = "\t\n\r "
_HTTP_TAB_OR_SPACE: Final = "\t "
_TOKEN_CHARS: Final = frozenset(
    "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _is_token(text: str) -> bool:
    return bool(text) and all(ch in _TOKEN_CHARS for ch in text)


def _is_quoted_string_text(text: str) -> bool:
    return all(ch == "\t" or " " <= ch <= "~" or "\x80" <= ch <= "\xff" for ch in text)


def _collect_quoted_string(value: str, pos: int, extract: bool) -> tuple[str, int]:
    """Fetch's "collect an HTTP quoted string" from the ``"`` at ``pos``."""
    start = pos
    out: list[str] = []
    pos += 1
    n = len(value)
    while True:
        while pos < n and value[pos] not in '"\\':
            out.append(value[pos])
            pos += 1
        if pos >= n:
            break
        char = value[pos]
        pos += 1
        if char == "\\":
            if pos >= n:
                out.append("\\")
                break
            out.append(value[pos])
            pos += 1
        else:
            break
    return ("".join(out) if extract else value[start:pos]), pos


def _parse_mime_type(text: str) -> tuple[str, dict[str, str]] | None:
    """MIME Sniffing's "parse a MIME type": ``(essence, parameters)`` or None."""
    text = text.strip(_HTTP_WHITESPACE)
    slash = text.find("/")
    if slash < 0:
        return None
    mime_type = text[:slash]
    if not _is_token(mime_type):
        return None
    semicolon = text.find(";", slash + 1)
    end = len(text) if semicolon < 0 else semicolon
    subtype = text[slash + 1:end].rstrip(_HTTP_WHITESPACE)
    if not _is_token(subtype):
        return None
    params: dict[str, str] = {}
    pos = end
    n = len(text)
    while pos < n:
        pos += 1    # past ";"
        while pos < n and text[pos] in _HTTP_WHITESPACE:
            pos += 1
        start = pos
        while pos < n and text[pos] not in ";=":
            pos += 1
        name = text[start:pos].lower()
        if pos < n:
            if text[pos] == ";":
                continue
            pos += 1    # past "="
        if pos >= n:
            break
        if text[pos] == '"':
            value, pos = _collect_quoted_string(text, pos, True)
            while pos < n and text[pos] != ";":
                pos += 1
        else:
            start = pos
            while pos < n and text[pos] != ";":
                pos += 1
            value = text[start:pos].rstrip(_HTTP_WHITESPACE)
            if not value:
                continue
        if _is_token(name) and _is_quoted_string_text(value) and name not in params:
            params[name] = value
    return f"{mime_type.lower()}/{subtype.lower()}", params


def _split_header_values(value: str) -> list[str]:
    """Fetch's "get, decode, and split" of a header value: split at commas outside quotes."""
    values: list[str] = []
    pos = 0
    n = len(value)
    temporary = ""
    while True:
        start = pos
        while pos < n and value[pos] not in '",':
            pos += 1
        temporary += value[start:pos]
        if pos < n:
            if value[pos] == '"':
                quoted, pos = _collect_quoted_string(value, pos, False)
                temporary += quoted
                if pos < n:
                    continue
            else:
                pos += 1    # past ","
        values.append(temporary.strip(_HTTP_TAB_OR_SPACE))
        temporary = ""
        if pos >= n:
            return values


def content_type_charset(content_type: str) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` header value (Fetch's "extract a MIME
    type"), or None: ``'text/html; charset="Shift_JIS"'`` -> ``'Shift_JIS'``."""
    check_type(content_type, str, "content_type_charset()", "content_type", "a str")
    essence: str | None = None
    charset: str | None = None
    result: str | None = None
    for part in _split_header_values(content_type):
        parsed = _parse_mime_type(part)
        if parsed is None or parsed[0] == "*/*":
            continue
        part_essence, params = parsed
        if part_essence != essence:
            charset = params.get("charset")
            essence = part_essence
        elif "charset" not in params and charset is not None:
            params["charset"] = charset
        result = params.get("charset")
    return result


# --------------------------------------------------------------------------------------------
# Content sniffing: is it HTML at all?
# --------------------------------------------------------------------------------------------

#: How many bytes content sniffing reads at most.
SNIFF_BYTES: Final = 1024
#: Bytes read before naming what a non-HTML input is (its signature).
_SIGNATURE_BYTES: Final = 16

_SIGNATURES: Final[tuple[tuple[bytes, str], ...]] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"%PDF-", "PDF document"),
    (b"\x1f\x8b", "gzip data"),
    (b"PK\x03\x04", "zip archive"),
    (b"PK\x05\x06", "zip archive"),
    (b"PK\x07\x08", "zip archive"),
    (b"BZh", "bzip2 data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"\x28\xb5\x2f\xfd", "zstd data"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive"),
    (b"\x00\x00\x01\x00", "ICO image"),
    (b"wOFF", "WOFF font"),
    (b"wOF2", "WOFF2 font"),
    (b"\x00asm", "WebAssembly module"),
    (b"\x7fELF", "ELF executable"),
    (b"OggS", "Ogg media"),
    (b"ID3", "MP3 audio"),
    (b"\x1a\x45\xdf\xa3", "WebM/Matroska media"),
    (b"-----BEGIN ", "PEM data (a key or certificate)"),
    (b"%!PS", "PostScript document"),
)
_BINARY_BYTES: Final = frozenset(
    [*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_HTML_WS: Final = b"\t\n\x0c\r "
#: Root elements that make a document something other than HTML.
_XML_ROOTS: Final = {
    "rss": "RSS feed",
    "rdf:rdf": "RSS feed",
    "feed": "Atom feed",
    "svg": "SVG image",
}
_XML: Final = "XML (not XHTML)"
_NEED_MORE: Final = "need more"


def sniff_content(prefix: bytes | bytearray | memoryview) -> str | None:
    """Why ``prefix`` (the first bytes of a response, ideally 1024 or more) is not HTML, or
    None when it looks like HTML.

    LazyHTML's rule, and more: after a byte order mark and whitespace the first byte must be
    ``<``; JSON (``{``, ``[``, an anti-XSSI ``)]}'``), common binary signatures (``"PNG image"``,
    ``"GIF image"``, ``"JPEG image"``, ``"WebP image"``, ``"PDF document"``, ``"gzip data"``,
    ``"zip archive"``, PEM keys...), ``"NUL bytes"`` (binary data, UTF-16 without a byte order
    mark) and XML that is not XHTML (``"XML (not XHTML)"``, ``"RSS feed"``, ``"Atom feed"``,
    ``"SVG image"``) are recognised.  An empty (or all-whitespace) input is ``"no content"``.
    """
    check_type(prefix, BYTES_LIKE, "sniff_content()", "prefix", _BYTES)
    result = _classify(bytes(prefix[:SNIFF_BYTES]), final=True)
    assert result is not _NEED_MORE
    return result


def looks_like_html(prefix: bytes | bytearray | memoryview) -> bool:
    """Whether ``prefix`` (the first bytes of a response) looks like HTML: see
    :func:`sniff_content`, which says why not."""
    check_type(prefix, BYTES_LIKE, "looks_like_html()", "prefix", _BYTES)
    return sniff_content(prefix) is None


def classify_content(data: bytes, final: bool) -> str | None:
    """Content sniffing for streams: like :func:`sniff_content`, but returns
    :data:`NEED_MORE` when ``data`` is too short to decide and more may come (``final``
    false)."""
    return _classify(data, final)


NEED_MORE: Final = _NEED_MORE


def _classify(data: bytes, final: bool) -> str | None:
    bom, bom_length = sniff_bom(data)
    if bom is not None and bom.name != "utf-8":
        # UTF-16 with a byte order mark: look at its characters.
        if len(data) < bom_length + 2 * _SIGNATURE_BYTES and not final:
            return _NEED_MORE
        even = len(data) - (len(data) - bom_length) % 2
        text = data[bom_length:even].decode(bom.codec, "replace")
        return _classify(text.encode("utf-8"), final)
    body = data[bom_length:]
    end = len(body)
    pos = 0
    while pos < end and body[pos] in _HTML_WS:
        pos += 1
    if pos == end:
        return "no content" if final else _NEED_MORE
    if body[pos] != 0x3C:     # not "<"
        if len(body) < _SIGNATURE_BYTES and not final:
            return _NEED_MORE
        return _not_html_reason(body, pos)
    sample = body[pos:pos + _SIGNATURE_BYTES]
    if len(sample) < _SIGNATURE_BYTES and not final:
        return _NEED_MORE
    nuls = sample.count(b"\x00")
    if nuls and (nuls * 4 >= len(sample) or body.count(b"\x00") * 8 >= len(body)):
        return "NUL bytes"
    return _classify_markup(body, pos, final)


def _not_html_reason(body: bytes, pos: int) -> str:
    for signature, what in _SIGNATURES:
        if body.startswith(signature):
            return what
    if body[:4] == b"RIFF" and body[8:12] == b"WEBP":
        return "WebP image"
    if body[4:8] == b"ftyp":
        return "MP4/HEIF media"
    first = body[pos]
    if first in b"{[":
        return "JSON"
    if body.startswith(b")]}'", pos) or body.startswith(b")]}", pos):
        return "JSON (with an anti-XSSI prefix)"
    head = body[:SNIFF_BYTES]
    if b"\x00" in head:
        return "NUL bytes"
    if any(byte in _BINARY_BYTES for byte in head):
        return "binary data"
    return "text that does not start with '<'"


def _classify_markup(body: bytes, pos: int, final: bool) -> str | None:
    """The input starts with ``<`` at ``pos``: HTML, unless it is XML with a root that is not
    ``html``.  Skips an XML declaration, processing instructions, comments and a doctype to
    find the root element."""
    end = len(body)
    xml_declaration = False
    while True:
        while pos < end and body[pos] in _HTML_WS:
            pos += 1
        if pos >= end:
            break
        if body[pos] != 0x3C:
            return _XML if xml_declaration else None    # text before any element
        rest = body[pos:pos + 9].upper()
        if (len(rest) < 4 and b"<!--".startswith(rest)) or (
                len(rest) < 9 and b"<!DOCTYPE".startswith(rest)):
            break   # cut short: a comment or a doctype?
        if body.startswith(b"<?", pos):
            close = body.find(b">", pos + 2)
            if close < 0:
                break
            if body[pos + 2:pos + 5].lower() == b"xml" and (
                    pos + 5 < end and body[pos + 5] in b" \t\r\n?"):
                xml_declaration = True
            pos = close + 1
        elif body.startswith(b"<!--", pos):
            close = body.find(b"-->", pos + 4)
            if close < 0:
                break
            pos = close + 3
        elif body[pos + 1:pos + 9].upper() == b"!DOCTYPE":
            name_start = pos + 9
            while name_start < end and body[name_start] in _HTML_WS:
                name_start += 1
            name_end = name_start
            while name_end < end and body[name_end] not in b"\t\n\x0c\r >[":
                name_end += 1
            if name_end >= end:
                break
            name = body[name_start:name_end].decode("latin-1").lower()
            if name == "html":
                return None
            if name in _XML_ROOTS:
                return _XML_ROOTS[name]
            if xml_declaration:
                return _XML
            return None     # an unusual doctype: browsers read it as HTML all the same
        elif pos + 1 < end and _is_alpha(body[pos + 1]):
            name_end = pos + 1
            while name_end < end and body[name_end] not in b"\t\n\x0c\r />":
                name_end += 1
            if name_end >= end:
                break
            name = body[pos + 1:name_end].decode("latin-1").lower()
            if name == "html":
                return None
            if name in _XML_ROOTS:
                return _XML_ROOTS[name]
            return _XML if xml_declaration else None
        elif pos + 1 >= end:
            break
        else:
            return _XML if xml_declaration else None
    # Out of bytes before the root element.
    if final or end >= SNIFF_BYTES:
        return _XML if xml_declaration else None
    return _NEED_MORE
