"""Tests of ``htmlstream.encoding``: the WHATWG label table, the codecs' fixes, encoding sniffing
(with every test of html5lib-tests' ``encoding`` directory) and content sniffing.

The html5lib data is read from ``tests/data`` (see its README.md), or from the
directory named by the environment variable ``HTMLSTREAM_TESTDATA`` (the directory that holds
``html5lib-tests``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import htmlstream
from chunking import chunkings
from datapaths import conformance_data_dir
from htmlstream.encoding import (
    LABELS,
    _resolve_encoding,
    content_type_charset,
    get_encoding,
    looks_like_html,
    lookup,
    meta_content_charset,
    prescan,
    sniff,
    sniff_bom,
    sniff_content,
    sniff_encoding,
)
from htmlstream.errors import EncodingError
from htmlstream.rewriter import Rewriter

# --------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------

#: Some labels of each encoding of the Encoding Standard, and what they name.
LABEL_SAMPLES = {
    "unicode-1-1-utf-8": "utf-8", "utf8": "utf-8", "x-unicode20utf8": "utf-8",
    "866": "ibm866", "csisolatin2": "iso-8859-2", "iso_8859-3:1988": "iso-8859-3",
    "l4": "iso-8859-4", "cyrillic": "iso-8859-5", "asmo-708": "iso-8859-6",
    "sun_eu_greek": "iso-8859-7", "visual": "iso-8859-8", "logical": "iso-8859-8-i",
    "latin6": "iso-8859-10", "iso885913": "iso-8859-13", "iso8859-14": "iso-8859-14",
    "l9": "iso-8859-15", "iso-8859-16": "iso-8859-16", "koi": "koi8-r", "koi8-ru": "koi8-u",
    "x-mac-roman": "macintosh", "tis-620": "windows-874", "iso-8859-11": "windows-874",
    "x-cp1250": "windows-1250", "cp1251": "windows-1251",
    "ascii": "windows-1252", "us-ascii": "windows-1252", "iso-8859-1": "windows-1252",
    "latin1": "windows-1252", "ansi_x3.4-1968": "windows-1252", "cp819": "windows-1252",
    "windows-1253": "windows-1253", "iso-8859-9": "windows-1254", "latin5": "windows-1254",
    "cp1255": "windows-1255", "x-cp1256": "windows-1256", "windows-1257": "windows-1257",
    "cp1258": "windows-1258", "x-mac-ukrainian": "x-mac-cyrillic",
    "gb2312": "gbk", "chinese": "gbk", "x-gbk": "gbk", "gb18030": "gb18030",
    "big5-hkscs": "big5", "x-x-big5": "big5", "cseucpkdfmtjapanese": "euc-jp",
    "csiso2022jp": "iso-2022-jp", "ms932": "shift_jis", "sjis": "shift_jis",
    "windows-31j": "shift_jis", "ks_c_5601-1987": "euc-kr", "windows-949": "euc-kr",
    "hz-gb-2312": "replacement", "iso-2022-kr": "replacement", "iso-2022-cn-ext": "replacement",
    "unicodefffe": "utf-16be", "utf-16be": "utf-16be", "utf-16": "utf-16le", "ucs-2": "utf-16le",
    "csunicode": "utf-16le", "x-user-defined": "x-user-defined",
}


@pytest.mark.parametrize(("label", "name"), sorted(LABEL_SAMPLES.items()))
def test_label_samples(label: str, name: str) -> None:
    assert LABELS[label] == name
    assert lookup(label).name == name
    # ASCII case and surrounding ASCII whitespace do not matter.
    assert lookup(f" \t{label.upper()}\n\x0c").name == name


def test_label_table_is_complete() -> None:
    names = set(LABELS.values())
    assert len(names) == 40    # every encoding of the Encoding Standard
    for name in names - {"replacement"}:
        assert LABELS[name] == name, "an encoding's name is one of its labels"
    assert "replacement" not in LABELS, "'replacement' is a name, not a label"
    assert len(LABELS) == 227
    for label in LABELS:
        assert label == label.strip().lower()


@pytest.mark.parametrize("label", ["latin-1", "utf_8", "cp437", "utf-7", "utf-32", "", "ＵＴＦ-8",
                                   "utf-8\x00", "windows-1252 x"])
def test_unknown_labels(label: str) -> None:
    assert get_encoding(label) is None
    with pytest.raises(EncodingError, match="unknown encoding"):
        lookup(label)


def test_unknown_label_suggests() -> None:
    with pytest.raises(EncodingError, match="'latin1'"):
        lookup("latin-1")


def test_lookup_type_error() -> None:
    with pytest.raises(TypeError):
        lookup(1252)  # type: ignore[arg-type]


def test_lookup_encoding_is_exported() -> None:
    assert htmlstream.lookup_encoding("SJIS").name == "shift_jis"
    assert htmlstream.sniff_encoding is sniff_encoding
    assert htmlstream.looks_like_html is looks_like_html
    assert htmlstream.sniff_content is sniff_content


@pytest.mark.parametrize(("label", "compatible"), [
    ("utf-8", True), ("windows-1252", True), ("shift_jis", True), ("x-user-defined", True),
    ("utf-16le", False), ("utf-16be", False), ("iso-2022-jp", False), ("iso-2022-kr", False),
])
def test_ascii_compatibility(label: str, compatible: bool) -> None:
    enc = lookup(label)
    assert enc.ascii_compatible is compatible
    if compatible:
        assert _resolve_encoding(label) == enc.codec
        ascii_bytes = bytes(range(0x80))
        assert enc.decode(ascii_bytes) == ascii_bytes.decode("ascii")
    else:
        with pytest.raises(EncodingError, match="is not ASCII-compatible"):
            _resolve_encoding(label)


def test_not_ascii_compatible_messages() -> None:
    with pytest.raises(EncodingError, match=r"as UTF-8, or use Rewriter\(transcode=True\)"):
        _resolve_encoding("utf-16")
    with pytest.raises(EncodingError, match=r"ISO-2022-KR.*single U\+FFFD"):
        _resolve_encoding("iso-2022-kr")
    with pytest.raises(EncodingError, match="unknown encoding"):
        _resolve_encoding("nope")


# --------------------------------------------------------------------------------------------
# Codecs
# --------------------------------------------------------------------------------------------

WINDOWS_1252_HIGH = (
    "\u20ac\x81\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\x8d\u017d\x8f"
    "\x90\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\x9d\u017e\u0178"
)


def test_windows_1252_c1_controls() -> None:
    enc = lookup("windows-1252")
    assert enc.codec == "htmlstream-windows-1252"
    assert enc.decode(bytes(range(0x80, 0xA0))) == WINDOWS_1252_HIGH
    assert enc.decode(bytes(range(0xA0, 0x100))) == bytes(range(0xA0, 0x100)).decode("latin-1")
    # Every byte decodes, and encodes back.
    every = bytes(range(256))
    assert enc.encode(enc.decode(every, "strict")) == every
    assert enc.encode("\u65e5", "xmlcharrefreplace") == b"&#26085;"


@pytest.mark.parametrize("name", ["windows-874", "windows-1250", "windows-1251", "windows-1253",
                                  "windows-1254", "windows-1255", "windows-1256", "windows-1257",
                                  "windows-1258"])
def test_windows_code_pages_fill_c1(name: str) -> None:
    enc = lookup(name)
    # Bytes 0x80-0x9F all decode (those Microsoft leaves undefined to C1 controls).
    assert "\ufffd" not in enc.decode(bytes(range(0x80, 0xA0)), "strict")
    # Round trip of whatever decodes.
    for byte in range(256):
        char = enc.decode(bytes([byte]))
        if char != "\ufffd":
            assert enc.encode(char) == bytes([byte])


def test_single_byte_overrides() -> None:
    assert lookup("windows-1255").decode(b"\xca") == "\u05ba"
    assert lookup("koi8-u").decode(b"\xae\xbe\xa4") == "\u045e\u040e\u0454"
    assert lookup("koi8-u").encode("\u045e") == b"\xae"
    assert lookup("windows-1253").decode(b"\xaa\xd2\xff") == "\ufffd" * 3  # still undefined
    assert lookup("iso-8859-8-i").decode(b"\xe0\xdf") == "\u05d0\u2017"


def test_x_user_defined() -> None:
    enc = lookup("x-user-defined")
    assert enc.decode(bytes([0x41, 0x7F, 0x80, 0xFF])) == "A\x7f\uf780\uf7ff"
    assert enc.encode("A\uf780\uf7ff") == b"A\x80\xff"
    every = bytes(range(256))
    assert enc.encode(enc.decode(every)) == every
    assert enc.encode("\u00e9", "xmlcharrefreplace") == b"&#233;"


def test_gbk_and_gb18030() -> None:
    for label in ("gbk", "gb2312", "gb18030"):
        enc = lookup(label)
        assert enc.codec == "htmlstream-gb18030"
        assert enc.multibyte
        # A lone 0x80 is the euro sign; four-byte sequences decode (gbk decodes as gb18030).
        assert enc.decode(b"a\x80b") == "a\u20acb"
        assert enc.decode("\U0001f600\u4e2d".encode("gb18030")) == "\U0001f600\u4e2d"
        assert enc.decode(b"\x81") == "\ufffd"
        assert enc.decode(b"\xff") == "\ufffd"
        with pytest.raises(UnicodeDecodeError):
            enc.decode(b"\xff", "strict")
        assert enc.decode(b"\xff\x80", "ignore") == "\u20ac"
    text = "a\U0001f600\u20ac\u4e2db"
    data = text.encode("gb18030") + b"\x80"
    for cut in chunkings(data, random_splits=4):
        decoder = lookup("gbk").incremental_decoder()
        out = "".join(decoder.decode(piece) for piece in cut) + decoder.decode(b"", True)
        assert out == text + "\u20ac"


def test_cjk_supersets() -> None:
    assert lookup("euc-kr").decode(b"\x8c\x63") == "\ub620"          # UHC (code page 949)
    assert lookup("shift_jis").decode(b"\x87\x40") == "\u2460"       # NEC row 13 (cp932)
    assert lookup("big5").decode(b"\x88\x62") == "\u00ca\u0304"      # HKSCS
    assert lookup("euc-jp").decode("\u65e5\u672c".encode("euc_jp")) == "\u65e5\u672c"


def test_replacement_encoding() -> None:
    enc = lookup("iso-2022-kr")
    assert enc.name == "replacement"
    assert enc.decode(b"") == ""
    assert enc.decode(b"anything") == "\ufffd"
    decoder = enc.incremental_decoder()
    assert decoder.decode(b"a") + decoder.decode(b"b") + decoder.decode(b"", True) == "\ufffd"
    with pytest.raises(UnicodeDecodeError):
        enc.decode(b"x", "strict")
    assert enc.encode("\u00e9") == "\u00e9".encode()


def test_utf16_codecs() -> None:
    assert lookup("utf-16").decode("\u00e9x".encode("utf-16-le")) == "\u00e9x"
    assert lookup("utf-16be").decode("\u00e9x".encode("utf-16-be")) == "\u00e9x"


# --------------------------------------------------------------------------------------------
# Encoding sniffing
# --------------------------------------------------------------------------------------------


def test_sniff_bom() -> None:
    assert sniff_bom(b"\xef\xbb\xbf<p>")[0].name == "utf-8"
    assert sniff_bom(b"\xef\xbb\xbf")[1] == 3
    assert sniff_bom(b"\xfe\xff\x00<")[0].name == "utf-16be"
    assert sniff_bom(b"\xff\xfe<\x00") == (lookup("utf-16le"), 2)
    assert sniff_bom(b"\xef\xbb") == (None, 0)
    assert sniff_bom(b"") == (None, 0)


@pytest.mark.parametrize(("content_type", "charset"), [
    ("text/html; charset=utf-8", "utf-8"),
    ("text/html;charset=Shift_JIS", "Shift_JIS"),
    ('text/html; charset="ISO-8859-1"', "ISO-8859-1"),
    ('text/html; charset="a\\"b"', 'a"b'),
    ("text/html; charset=utf-8; charset=koi8-r", "utf-8"),   # the first one
    ("TEXT/HTML ; CHARSET = utf-8", None),                    # spaces around '=' are not OK
    ("text/html ; CHARSET=euc-kr ", "euc-kr"),
    ("text/html", None),
    ("charset=utf-8", None),                                  # not a MIME type
    ("text/html; charset=", None),
    ("", None),
    ("text/html; charset=gbk, text/html", "gbk"),             # same essence: charset kept
    ("text/html; charset=gbk, text/plain", None),             # another type: forgotten
    ("text/plain; charset=gbk, */*", "gbk"),                  # */* is skipped
    ('text/html; x="a,b"; charset=big5', "big5"),             # comma inside quotes
])
def test_content_type_charset(content_type: str, charset: str | None) -> None:
    assert content_type_charset(content_type) == charset


@pytest.mark.parametrize(("content", "name"), [
    ("text/html; charset=utf-8", "utf-8"),
    ("text/html;charset=  'koi8-r' ", "koi8-r"),
    ('charset="EUC-JP"', "euc-jp"),
    ("charset=utf-8;foo", "utf-8"),
    ("charset utf-8", None),
    ("charset='utf-8", None),                 # unmatched quote
    ("charset=", None),
    ("xcharset=big5", "big5"),                # any occurrence of "charset"
    ("charsetcharset=sjis", "shift_jis"),
    ("text/html", None),
    ("charset=nope", None),
])
def test_meta_content_charset(content: str, name: str | None) -> None:
    found = meta_content_charset(content)
    assert (None if found is None else found.name) == name


@pytest.mark.parametrize(("prefix", "name"), [
    (b'<meta charset="koi8-r">', "koi8-r"),
    (b"<META CHARSET=SJIS>", "shift_jis"),
    (b"<meta/charset=gbk>", "gbk"),
    (b'<meta http-equiv="Content-Type" content="text/html; charset=big5">', "big5"),
    (b'<meta content="text/html; charset=big5" http-equiv="content-type">', "big5"),
    (b'<meta content="text/html; charset=big5">', None),          # no pragma
    (b'<meta http-equiv=content-type content="charset=big5" charset=euc-kr>', "euc-kr"),
    (b'<meta charset="nope"><meta charset="euc-kr">', "euc-kr"),
    (b'<meta charset="x-user-defined">', "windows-1252"),
    (b'<meta charset="utf-16be">', "utf-8"),
    (b'<!-- <meta charset="koi8-r"> --><meta charset="big5">', "big5"),
    (b'<!--><meta charset="big5">', "big5"),                       # "<!-->" is a whole comment
    (b'<p title="<meta charset=koi8-r>">', None),                  # inside an attribute value
    (b'<?php echo "<meta charset=koi8-r>" ?>', None),              # skipped up to the first >
    (b'<script>x = "<meta charset=koi8-r>"</script>', "koi8-r"),  # the prescan sees it
    (b'<?xml version="1.0" encoding="ISO-8859-2"?><html>', "iso-8859-2"),
    (b"<?xml version='1.0' encoding = 'utf-16'?>", "utf-8"),
    (b'<?xml version="1.0"?><meta charset="big5">', "big5"),
    (b'<?xml version="1.0" encoding="koi8-r"?><meta charset="big5">', "big5"),
    (b' <?xml version="1.0" encoding="koi8-r"?>', None),            # not at the start
    (b'<?xml version="1.0" encoding="koi8-r"', None),               # no ">"
    ("<?xml encoding='x'?>".encode("utf-16-le"), "utf-16le"),
    ("<?xml encoding='x'?>".encode("utf-16-be"), "utf-16be"),
    (b"<meta charset=euc-jp", None),                                # ran out of bytes
    (b"", None),
])
def test_prescan(prefix: bytes, name: str | None) -> None:
    assert prescan(prefix) == name


def test_prescan_reads_1024_bytes() -> None:
    meta = b'<meta charset="koi8-r">'
    assert prescan(b" " * (1024 - len(meta)) + meta) == "koi8-r"
    assert prescan(b" " * (1025 - len(meta)) + meta) is None


def test_sniff_order() -> None:
    doc = b'<meta charset="koi8-r"><p>'
    assert sniff(b"\xef\xbb\xbf" + doc, "text/html; charset=big5") == ("utf-8", "bom", True)
    assert sniff(doc, "text/html; charset=big5") == ("big5", "transport", True)
    assert sniff(doc, "text/html; charset=nope") == ("koi8-r", "meta", False)
    assert sniff(doc) == ("koi8-r", "meta", False)
    assert sniff(b'<?xml version="1.0" encoding="big5"?>') == ("big5", "xml", False)
    assert sniff(b"<p>") == ("windows-1252", "default", False)
    assert sniff(b"<p>", default="UTF8") == ("utf-8", "default", False)
    assert sniff_encoding(b"\xff\xfe<\x00") == "utf-16le"
    assert sniff_encoding(b"<p>", "text/html; charset=utf-16") == "utf-16le"   # transport: as is
    assert sniff_encoding(b"<p>", "text/html; charset=latin1") == "windows-1252"
    assert sniff_encoding(bytearray(b"<meta charset=sjis>")) == "shift_jis"
    assert sniff_encoding(memoryview(b"<meta charset=sjis>")) == "shift_jis"


# --- html5lib-tests/encoding ------------------------------------------------------------------


def html5lib_encoding_dir() -> Path:
    """The html5lib encoding test directory."""
    root = conformance_data_dir()
    return root / "html5lib-tests" / "encoding"


def load_html5lib_encoding_tests() -> list[tuple[str, bytes, str]]:
    """``(id, data, encoding)`` for every test in ``encoding/**/*.dat`` (``#data`` then
    ``#encoding``; the data keeps its final newline, as html5lib reads it)."""
    root = html5lib_encoding_dir()
    cases = []
    for path in sorted(root.rglob("*.dat")):
        text = path.read_bytes()
        tests = re.findall(rb"#data\n(.*?)#encoding\n([^\n]*)\n", text, re.S)
        assert tests, path
        rel = path.relative_to(root).as_posix()
        for i, (data, encoding) in enumerate(tests):
            cases.append((f"{rel}:{i}", data, encoding.decode("ascii").strip()))
    return cases


HTML5LIB_CASES = load_html5lib_encoding_tests()


def test_html5lib_encoding_tests_found() -> None:
    assert len(HTML5LIB_CASES) == 83, (html5lib_encoding_dir(), len(HTML5LIB_CASES))
    assert sum(case[0].startswith("scripted/") for case in HTML5LIB_CASES) == 1


def _xfail_scripted(case_id: str) -> list[pytest.MarkDecorator]:
    if case_id.startswith("scripted/"):
        return [pytest.mark.xfail(strict=True, reason="needs script execution: the <meta> is "
                                  "written by document.write()")]
    return []


@pytest.mark.parametrize(
    ("data", "expected"),
    [pytest.param(d, e, id=i, marks=_xfail_scripted(i)) for i, d, e in HTML5LIB_CASES
     if len(d) <= 1024],
)
def test_html5lib_prescan(data: bytes, expected: str) -> None:
    """html5lib's prescan tests (those whose data fits the 1024 bytes the prescan reads)."""
    assert sniff_encoding(data) == lookup(expected).name


@pytest.mark.parametrize(
    ("data", "expected"),
    [pytest.param(d, e, id=i, marks=_xfail_scripted(i)) for i, d, e in HTML5LIB_CASES],
)
def test_html5lib_document_encoding(data: bytes, expected: str) -> None:
    """html5lib's parser tests: the encoding the document ends up in, after sniffing and then
    the first ``<meta charset>`` the parser meets (``adjust_charset_on_meta_tag``), whatever
    the chunking."""
    found = sniff(data)
    rewriter = Rewriter(encoding=found.encoding,
                        adjust_charset_on_meta_tag=not found.certain)
    for cut in chunkings(data, random_splits=2, single_bytes=len(data) < 200, split_samples=4):
        stream = rewriter.stream()
        out = b"".join(stream.feed(chunk) for chunk in cut) + stream.close()
        assert out == data
        assert stream.encoding == lookup(expected).name


# --------------------------------------------------------------------------------------------
# Content sniffing
# --------------------------------------------------------------------------------------------

HTML_PREFIXES = [
    b"<!DOCTYPE html><p>",
    b"<!doctype HTML>",
    b"  \r\n\t<html lang=en>",
    b"\xef\xbb\xbf<!DOCTYPE html>",
    b"<p>hello",
    b"<div",                          # a fragment, cut short
    b"<!-- a comment --><html>",
    b"<!--x-->",
    b"<",
    b"<?xml version='1.0'?><html xmlns='http://www.w3.org/1999/xhtml'>",
    b'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 '
    b'Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n<html>',
    b"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\">",
    b"<!DOCTYPE foo><foo>",
    b"<?php echo 1 ?><p>",
    b"<b>\x00</b>" + b"<p>text</p>" * 20,   # one NUL is not NUL-heavy
    "\ufeff<!DOCTYPE html>".encode("utf-16-le"),
    "\ufeff<!DOCTYPE html>".encode("utf-16-be"),
]

NOT_HTML = [
    (b'{"a": 1}', "JSON"),
    (b'  \n[1, 2, 3]', "JSON"),
    (b")]}'\n{\"a\": 1}", "JSON (with an anti-XSSI prefix)"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "PNG image"),
    (b"GIF89a\x01\x00\x01\x00", "GIF image"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF", "JPEG image"),
    (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "WebP image"),
    (b"%PDF-1.7\n%\xe2\xe3", "PDF document"),
    (b"\x1f\x8b\x08\x00\x00\x00\x00\x00", "gzip data"),
    (b"PK\x03\x04\x14\x00\x00\x00", "zip archive"),
    (b"-----BEGIN PRIVATE KEY-----\nMIIE", "PEM data (a key or certificate)"),
    (b"\x00\x00\x00\x1cftypavif", "MP4/HEIF media"),
    ("<html><body>".encode("utf-16-le"), "NUL bytes"),     # UTF-16 without a BOM
    ("<html><body>".encode("utf-16-be"), "NUL bytes"),
    (b"<\x00\x00\x00\x00\x00\x00\x00\x00\x00", "NUL bytes"),
    (b"\x01\x02\x03binary", "binary data"),
    (b"hello world", "text that does not start with '<'"),
    (b'<?xml version="1.0"?><note><to>x</to></note>', "XML (not XHTML)"),
    (b'<?xml version="1.0"?>\n<!-- c -->\n<?xml-stylesheet href="a"?>\n<data/>', "XML (not XHTML)"),
    (b'<?xml version="1.0"?>', "XML (not XHTML)"),
    (b'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>', "RSS feed"),
    (b'<rss version="2.0">', "RSS feed"),
    (b'<?xml version="1.0"?><rdf:RDF xmlns:rdf="x">', "RSS feed"),
    (b'<feed xmlns="http://www.w3.org/2005/Atom">', "Atom feed"),
    (b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg">', "SVG image"),
    (b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1">', "SVG image"),
    (b'<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x">', "SVG image"),
    (b"", "no content"),
    (b" \n\t ", "no content"),
    ("\ufeff{}".encode("utf-16-le"), "JSON"),
]


@pytest.mark.parametrize("prefix", HTML_PREFIXES)
def test_looks_like_html(prefix: bytes) -> None:
    assert sniff_content(prefix) is None
    assert looks_like_html(prefix)


@pytest.mark.parametrize(("prefix", "reason"), NOT_HTML)
def test_not_html(prefix: bytes, reason: str) -> None:
    assert sniff_content(prefix) == reason
    assert not looks_like_html(prefix)


def test_content_sniffing_reads_1024_bytes() -> None:
    # Past 1024 bytes without a root element: decided by what was seen.
    assert looks_like_html(b"<!--" + b"x" * 2000 + b"--><rss>")
    assert sniff_content(b'<?xml version="1.0"?><!--' + b"x" * 2000 + b"--><html>") == (
        "XML (not XHTML)")
