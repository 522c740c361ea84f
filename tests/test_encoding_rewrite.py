"""Rewriting and tokenizing documents in legacy encodings, under chunkings that cut multi-byte
characters; UTF-16 and non-HTML passthrough; ``adjust_charset_on_meta_tag``; ``transcode``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from chunking import chunkings
from htmlstream import Tokenizer
from htmlstream.encoding import lookup
from htmlstream.errors import BufferLimitExceeded, EncodingError, HtmlStreamError
from htmlstream.rewriter import Rewriter
from htmlstream.tokens import Text

#: A document per encoding: (encoding, text of the <p>, a title, a class name).  Each text uses
#: characters outside ASCII that the encoding has (several bytes each in multi-byte encodings).
DOCUMENTS = [
    ("utf-8", "Grüße, 日本語 😀 & ü", "日本", "größe"),
    ("windows-1252", "Grüße — “quoted” €5 \x81", "café", "größe"),
    ("shift_jis", "日本語のテキスト、ｶﾀｶﾅ ①", "日本", "見出し"),
    ("gb18030", "中文文本 😀 €", "中国", "标题"),
    ("gbk", "简体中文，€", "中国", "标题"),
    ("euc-kr", "한국어 텍스트 똠", "한국", "제목"),
    ("big5", "繁體中文 Ê̄", "臺灣", "標題"),
    ("iso-8859-2", "Zażółć gęślą jaźń", "Łódź", "żółw"),
    ("koi8-r", "Съешь же ещё этих мягких булок", "Москва", "заголовок"),
    ("euc-jp", "日本語のテキスト", "日本", "見出し"),
    ("windows-1251", "Привет, мир", "Київ", "заголовок"),
]

TEMPLATE = (
    '<!DOCTYPE html><html><head><title>{title}</title></head><body>'
    '<p title="{title}" class="x {cls} y" data-v="{title}&amp;{cls}">{text}</p>'
    '<!-- {text} --><div title="other">{text}<b>{title}</b></div>'
    '<script>var s = "{title}";</script></body></html>'
)


def document(encoding: str, text: str, title: str, cls: str) -> bytes:
    return TEMPLATE.format(text=text, title=title, cls=cls).encode(lookup(encoding).codec)


def run(rewriter: Rewriter, cut: list[bytes], **stream_options: Any) -> tuple[bytes, Any]:
    stream = rewriter.stream(**stream_options)
    out = b"".join(stream.feed(chunk) for chunk in cut) + stream.close()
    return out, stream


def cuts(data: bytes) -> list[list[bytes]]:
    """Chunkings of ``data``: whole, byte by byte, sampled 2-way splits, random splits."""
    return chunkings(data, random_splits=6, split_samples=24)


@pytest.mark.parametrize(("encoding", "text", "title", "cls"), DOCUMENTS,
                         ids=[d[0] for d in DOCUMENTS])
def test_reading(encoding: str, text: str, title: str, cls: str) -> None:
    data = document(encoding, text, title, cls)
    seen: dict[str, Any] = {}

    def collect(key: str) -> Callable[[Any], None]:
        def handler(unit: Any) -> None:
            seen.setdefault(key, []).append(unit)
        return handler

    rewriter = Rewriter(encoding=encoding)
    rewriter.on(f'[title="{title}"]', element=lambda e: seen.setdefault("by_title", []).append(
        (e.tag_name, e.get_attribute("title"), e.get_attribute("data-v"))))
    rewriter.on(f".{cls}", element=lambda e: seen.setdefault("by_class", []).append(
        e.get_attribute("class")))
    rewriter.on(f'[data-v^="{title}&"]', element=lambda e: seen.setdefault("prefix", []).append(1))
    rewriter.on(f'[title*="{title[-1]}"]', element=lambda e: seen.setdefault("substr", []).append(
        e.tag_name))
    rewriter.on("p", text=lambda t: seen.setdefault("p_text", []).append(t.text))
    rewriter.on("script", text=lambda t: seen.setdefault("script", []).append(t.text))
    rewriter.on_document(comments=lambda c: seen.setdefault("comments", []).append(c.text))
    rewriter.on("title", text=lambda t: seen.setdefault("title", []).append(t.text))
    for cut in cuts(data):
        seen.clear()
        out, stream = run(rewriter, cut)
        assert out == data, "reading changes nothing"
        assert stream.encoding == lookup(encoding).name
        assert seen["by_title"] == [("p", title, f"{title}&{cls}")]
        assert seen["by_class"] == [f"x {cls} y"]
        assert seen["prefix"] == [1]
        assert seen["substr"] == ["p"]
        assert "".join(seen["p_text"]) == text
        assert "".join(seen["script"]) == f'var s = "{title}";'
        assert "".join(seen["title"]) == title
        assert seen["comments"] == [f" {text} "]


@pytest.mark.parametrize(("encoding", "text", "title", "cls"), DOCUMENTS,
                         ids=[d[0] for d in DOCUMENTS])
def test_writing(encoding: str, text: str, title: str, cls: str) -> None:
    codec = lookup(encoding).codec
    data = document(encoding, text, title, cls)
    # Characters the encoding has, and one it may not have.
    extra = "\u2603" if encoding not in ("utf-8", "gb18030", "gbk") else "\U0001fa90"

    def on_p(e: Any) -> None:
        e.set_attribute("title", title + extra)
        e.set_attribute("data-new", cls)
        e.prepend(text[:3] + extra)
        e.after(f"<{title}>", html=False)
        e.append(f"<i>{extra}</i>", html=True)

    pending: list[str] = []

    def on_b_text(t: Any) -> None:
        # Text comes in pieces (however the input was cut): replace the whole of it at its end.
        pending.append(t.text)
        if t.last_in_text_node:
            t.replace("".join(pending).upper() + extra)
            pending.clear()
        else:
            t.remove()

    rewriter = Rewriter(encoding=encoding)
    rewriter.on("p", element=on_p)
    rewriter.on("b", text=on_b_text)
    expected_text = TEMPLATE.format(text=text, title=title, cls=cls)
    expected_text = expected_text.replace(
        f'<p title="{title}" class="x {cls} y" data-v="{title}&amp;{cls}">{text}</p>',
        f'<p title="{title}{extra}" class="x {cls} y" data-v="{title}&amp;{cls}" '
        f'data-new="{cls}">{text[:3]}{extra}{text}<i>{extra}</i></p>&lt;{title}&gt;',
    ).replace(f"<b>{title}</b>", f"<b>{title.upper()}{extra}</b>")
    for cut in cuts(data):
        out, _ = run(rewriter, cut)
        # What the encoding cannot represent became a numeric character reference.
        assert _unref(out.decode(codec)) == expected_text
    if encoding not in ("utf-8", "gb18030", "gbk"):
        assert f"&#{ord(extra)};".encode() in out


def _unref(text: str) -> str:
    return re.sub(r"&#(\d+);", lambda m: chr(int(m.group(1))), text)


@pytest.mark.parametrize(("encoding", "char"), [
    ("windows-1252", "\u65e5"), ("shift_jis", "\u0e01"), ("koi8-r", "\u00e9"),
    ("iso-8859-2", "\u4e2d"), ("euc-kr", "\u0e01"),
])
def test_unencodable(encoding: str, char: str) -> None:
    data = b"<p>x</p>"

    def numeric(e: Any) -> None:
        e.set_attribute("t", char)
        e.append(char)

    out = Rewriter(encoding=encoding).on("p", element=numeric).rewrite(data)
    ref = f"&#{ord(char)};".encode()
    assert out == b'<p t="' + ref + b'">x' + ref + b"</p>"
    # Names cannot be written as references.
    for action in (lambda e: e.set_attribute("a" + char, "v"),
                   lambda e: setattr(e, "tag_name", "p" + char)):
        with pytest.raises(EncodingError):
            Rewriter(encoding=encoding).on("p", element=action).rewrite(data)
    # Nor can text inside <script>.
    rw = Rewriter(encoding=encoding).on("script", element=lambda e: e.append(char))
    with pytest.raises(EncodingError):
        rw.rewrite(b"<script></script>")


def test_selector_with_unencodable_literal_never_matches() -> None:
    calls: list[str] = []
    rw = Rewriter(encoding="windows-1252").on('[title="\u65e5"]', element=lambda e: calls.append(
        e.tag_name))
    assert rw.rewrite(b'<p title="&#26085;">x</p><p title="?">') == (
        b'<p title="&#26085;">x</p><p title="?">')


# --------------------------------------------------------------------------------------------
# The Tokenizer with encoding=
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("encoding", "text", "title", "cls"), DOCUMENTS,
                         ids=[d[0] for d in DOCUMENTS])
def test_tokenizer(encoding: str, text: str, title: str, cls: str) -> None:
    data = document(encoding, text, title, cls)
    for cut in cuts(data):
        tokenizer = Tokenizer(encoding=encoding)
        assert tokenizer.encoding == lookup(encoding).name
        tokens = [t for chunk in cut for t in tokenizer.feed(chunk)] + tokenizer.close()
        texts = "".join(t.text for t in tokens if isinstance(t, Text))
        assert texts == f'{title}{text}{text}{title}var s = "{title}";'
        starts = [t for t in tokens if type(t).__name__ == "StartTag" and t.name == "p"]
        assert starts[0].attributes["title"] == title
        assert starts[0].attributes["data-v"] == f"{title}&{cls}"


def test_tokenizer_labels() -> None:
    assert Tokenizer(encoding="latin1").encoding == "windows-1252"
    assert Tokenizer(encoding="SJIS").encoding == "shift_jis"
    tokens = Tokenizer(encoding="latin1").feed(b"<p t=\x80>\x81")
    assert tokens[0].attributes["t"] == "\u20ac"
    with pytest.raises(EncodingError, match="not ASCII-compatible"):
        Tokenizer(encoding="utf-16")
    with pytest.raises(EncodingError, match="unknown encoding"):
        Tokenizer(encoding="latin-1")
    # str chunks are encoded in the encoding, with references for what it cannot represent.
    tokenizer = Tokenizer(encoding="windows-1252")
    tokens = tokenizer.feed("<p>\u00e9\u65e5") + tokenizer.close()
    assert tokens[1].raw == b"\xe9&#26085;"


# --------------------------------------------------------------------------------------------
# Encodings the rewriter accepts
# --------------------------------------------------------------------------------------------


def test_rewriter_encoding_names() -> None:
    assert Rewriter().encoding == "utf-8"
    assert Rewriter(encoding="latin1").encoding == "windows-1252"
    assert Rewriter(encoding=" Shift_JIS ").encoding == "shift_jis"
    assert Rewriter(encoding="utf-16").encoding == "utf-16le"   # passes through (see below)
    with pytest.raises(EncodingError, match="unknown encoding"):
        Rewriter(encoding="latin-1")
    with pytest.raises(EncodingError, match="use Rewriter\\(transcode=True\\)"):
        Rewriter(encoding="iso-2022-jp")
    with pytest.raises(EncodingError, match="single U\\+FFFD"):
        Rewriter(encoding="iso-2022-kr", transcode=True)
    with pytest.raises(EncodingError):
        Rewriter().stream(encoding="csiso2022jp")
    assert Rewriter().stream(encoding="koi8").encoding == "koi8-r"


def test_windows_1252_every_byte_round_trips() -> None:
    high = bytes(range(0x80, 0x100))
    doc = b'<p title="' + high + b'">' + high + b"</p>"
    expected = lookup("windows-1252").decode(high, "strict")
    controls = "".join(ch for ch in expected if "\x80" < ch < "\xa0")
    assert controls == "\x81\x8d\x8f\x90\x9d"
    seen: list[str] = []
    rw = Rewriter(encoding="windows-1252")
    rw.on("p", element=lambda e: (seen.append(e.get_attribute("title") or ""),
                                  e.set_attribute("title", e.get_attribute("title") or "")),
          text=lambda t: seen.append(t.text))
    for cut in cuts(doc):
        seen.clear()
        out, _ = run(rw, cut)
        assert out == doc
        assert seen[0] == expected
        assert "".join(seen[1:]) == expected


# --------------------------------------------------------------------------------------------
# Byte order marks and UTF-16
# --------------------------------------------------------------------------------------------

UTF16_TEXT = "<!DOCTYPE html><p title=\"日本\">Grüße 😀 & 日本語</p>"


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("declared", ["utf-8", "windows-1252", "shift_jis"])
def test_utf16_bom_passes_through(codec: str, declared: str) -> None:
    data = ("\ufeff" + UTF16_TEXT).encode(codec)
    calls: list[Any] = []
    rw = Rewriter(encoding=declared).on("p", element=calls.append)
    rw.on_document(end=lambda end: end.append("x"))
    for cut in cuts(data):
        out, stream = run(rw, cut)
        assert out == data
        assert stream.passthrough_reason is not None
        assert "UTF-16" in stream.passthrough_reason and "transcode=True" in (
            stream.passthrough_reason)
    assert calls == []


@pytest.mark.parametrize("label", ["utf-16", "utf-16le", "utf-16be", "unicodefffe"])
def test_declared_utf16_passes_through(label: str) -> None:
    data = UTF16_TEXT.encode(lookup(label).codec)
    rw = Rewriter(encoding=label).on("p", element=lambda e: e.remove())
    for cut in cuts(data):
        out, stream = run(rw, cut)
        assert out == data
        assert f"encoding, {lookup(label).name}, is not ASCII-compatible" in (
            stream.passthrough_reason or "")
    assert rw.rewrite(b"") == b""


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("bom", [True, False])
def test_transcode_utf16(codec: str, bom: bool) -> None:
    data = (("\ufeff" if bom else "") + UTF16_TEXT + "<p>x").encode(codec)
    seen: list[str] = []

    def on_p(e: Any) -> None:
        seen.append(e.get_attribute("title") or "")
        e.set_attribute("title", "€")

    rw = Rewriter(encoding=codec.replace("-le", "le").replace("-be", "be"), transcode=True)
    rw.on("p", element=on_p, text=lambda t: seen.append(t.text))
    expected = ("\ufeff" + UTF16_TEXT.replace('"日本"', '"€"') + '<p title="€">x').encode()
    for cut in cuts(data):
        seen.clear()
        out, stream = run(rw, cut)
        assert out == expected
        assert stream.output_encoding == "utf-8"
        assert stream.encoding == lookup(codec.replace("-le", "le").replace("-be", "be")).name
        assert stream.passthrough_reason is None
        assert "".join(seen) == "日本Grüße 😀 & 日本語x"


def test_transcode_bom_overrides_declared() -> None:
    data = ("\ufeff" + UTF16_TEXT).encode("utf-16-be")
    out, stream = run(Rewriter(encoding="windows-1252", transcode=True), [data])
    assert out == ("\ufeff" + UTF16_TEXT).encode()
    assert stream.encoding == "utf-16be"


def test_transcode_iso_2022_jp() -> None:
    text = '<p title="日本">日本語 ｶﾅ</p>'
    data = text.encode("iso2022_jp_ext")
    seen: list[str] = []
    rw = Rewriter(encoding="iso-2022-jp", transcode=True)
    rw.on('[title="日本"]', element=lambda e: e.set_attribute("lang", "ja"),
          text=lambda t: seen.append(t.text))
    for cut in cuts(data):
        seen.clear()
        out, stream = run(rw, cut)
        assert out == '\ufeff<p title="日本" lang="ja">日本語 ｶﾅ</p>'.encode()
        assert "".join(seen) == "日本語 ｶﾅ"
        assert (stream.encoding, stream.output_encoding) == ("iso-2022-jp", "utf-8")


def test_transcode_limit_passthrough_keeps_transcoding() -> None:
    text = "<p>é</p><a " + "x" * 600 + "><p>日本</p>"
    data = ("\ufeff" + text).encode("utf-16-le")
    rw = Rewriter(transcode=True, max_buffer_size=256, on_limit="passthrough")
    rw.on("p", element=lambda e: e.set_attribute("k", "1"))
    # The limit is on bytes carried over between chunks: cut the long tag into small chunks.
    for size in (7, 50, 101):
        cut = [data[i:i + size] for i in range(0, len(data), size)]
        out, stream = run(rw, cut)
        assert stream.passthrough_reason is not None
        assert out.decode("utf-8") == "\ufeff<p k=\"1\">é</p>" + text[8:]


def test_utf8_bom_wins_over_declared_encoding() -> None:
    data = "\ufeff<p title=\"é\">日本</p>".encode()
    seen: list[str] = []
    rw = Rewriter(encoding="windows-1252", adjust_charset_on_meta_tag=True)
    rw.on("p", element=lambda e: seen.append(e.get_attribute("title") or ""),
          text=lambda t: seen.append(t.text))
    for cut in cuts(data):
        seen.clear()
        out, stream = run(rw, cut)
        assert out == data
        assert stream.encoding == "utf-8"
        assert "".join(seen) == "é日本"


def test_bom_prefix_is_held_back_at_most_two_bytes() -> None:
    stream = Rewriter().stream()
    assert stream.feed(b"\xef") == b""
    assert stream.feed(b"\xbb") == b""
    assert stream.feed(b"\xbf<p>") == b"\xef\xbb\xbf<p>"
    stream = Rewriter().stream()
    assert stream.feed(b"\xef") == b""
    assert stream.feed(b"x") == b"\xefx"
    stream = Rewriter().stream()
    assert stream.feed(b"\xff") == b""
    assert stream.close() == b"\xff"
    stream = Rewriter().stream()
    assert stream.feed(b"<") == b""  # an unfinished tag, as before
    assert stream.feed(b"p>") == b"<p>"
    assert stream.offset == 3


# --------------------------------------------------------------------------------------------
# Content sniffing in streams
# --------------------------------------------------------------------------------------------

NOT_HTML = [
    (b'{"items": [{"title": "<p>not html</p>"}]}', "JSON"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, "PNG image"),
    (b"\x1f\x8b\x08\x00" + bytes(range(255, -1, -1)) * 3, "gzip data"),
    (b"%PDF-1.4\n<p>" + b"x" * 3000, "PDF document"),
    (b'<?xml version="1.0"?>\n<rss version="2.0"><channel><title>&lt;p&gt;</title></channel>'
     b"</rss>", "RSS feed"),
    (b'<?xml version="1.0"?><catalog><p>x</p></catalog>', "XML (not XHTML)"),
    ("<html><p>x</p></html>".encode("utf-16-le"), "NUL bytes"),
    (b"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n",
     "PEM data (a key or certificate)"),
    (b"just text <p>with a tag</p>", "text that does not start with '<'"),
    (b"", "no content"),
]


@pytest.mark.parametrize(("data", "what"), NOT_HTML, ids=[w for _, w in NOT_HTML])
def test_sniff_passes_non_html_through(data: bytes, what: str) -> None:
    calls: list[Any] = []
    rw = Rewriter(sniff=True).on("p", element=calls.append, text=calls.append)
    rw.on_document(end=lambda end: end.append("<!-- end -->", html=True))
    for cut in cuts(data):
        out, stream = run(rw, cut)
        assert out == data
        assert stream.passthrough_reason == f"not HTML: {what}"
    assert calls == []


HTML_DOCS = [
    b"<!DOCTYPE html><p>a</p><p>b</p>",
    b"\n\n  <html><body><p>a</p>",
    b"\xef\xbb\xbf<p>a</p>",
    b'<?xml version="1.0"?><!DOCTYPE html><html><p>a</p></html>',
    b"<!--" + b"c" * 1500 + b"--><p>a</p>",
    b"<p>",
    b"<",
]


@pytest.mark.parametrize("data", HTML_DOCS)
def test_sniff_rewrites_html(data: bytes) -> None:
    plain = Rewriter().on("p", element=lambda e: e.set_attribute("k", "v"))
    sniffing = Rewriter(sniff=True).on("p", element=lambda e: e.set_attribute("k", "v"))
    expected = plain.rewrite(data)
    for cut in cuts(data):
        out, stream = run(sniffing, cut)
        assert out == expected
        assert stream.passthrough_reason is None


def test_sniff_latency() -> None:
    rw = Rewriter(sniff=True)
    stream = rw.stream()
    assert stream.feed(b"  ") == b""               # undecided: whitespace only
    assert stream.feed(b"<!DOC") == b""            # undecided: fewer than 16 bytes
    assert stream.feed(b"TYPE html><p>x") == b"  <!DOCTYPE html><p>x"
    stream = rw.stream()
    assert stream.feed(b'<?xml version="1.0"?>') == b""   # the root element decides
    assert stream.feed(b"<html>") == b'<?xml version="1.0"?><html>'
    stream = rw.stream()
    comments = b"<!-- x -->" * 110                       # no root element in 1024 bytes
    assert stream.feed(comments) == comments


def test_sniff_with_utf16_transcoding() -> None:
    rw = Rewriter(sniff=True, transcode=True).on("p", element=lambda e: e.remove())
    json_data = '\ufeff{"a": "<p>"}'.encode("utf-16-le")
    out, stream = run(rw, [json_data])
    assert out == json_data and stream.passthrough_reason == "not HTML: JSON"
    html = '<p>x</p><b>y</b>'.encode("utf-16-be")
    out, stream = run(Rewriter(sniff=True, transcode=True, encoding="utf-16be").on(
        "p", element=lambda e: e.remove()), [html])
    assert out == "\ufeff<b>y</b>".encode()


def test_sniff_with_limit_passthrough() -> None:
    data = b"<p>" + b"<a " + b"x" * 2000 + b"><p>z</p>"
    rw = Rewriter(sniff=True, max_buffer_size=64, on_limit="passthrough")
    rw.on("p", element=lambda e: e.set_attribute("k", "1"))
    # The limit is on bytes carried over between chunks: cut the long tag into small chunks.
    for size in (1, 10, 300):
        cut = [data[i:i + size] for i in range(0, len(data), size)]
        out, stream = run(rw, cut)
        assert out == b'<p k="1">' + data[3:]
        assert stream.passthrough_reason is not None and "max_buffer_size" in (
            stream.passthrough_reason)
    with pytest.raises(BufferLimitExceeded):
        list(Rewriter(sniff=True, max_buffer_size=64).rewrite_iter([data[:1500], data[1500:]]))


def test_sniff_str_input() -> None:
    rw = Rewriter(sniff=True).on("p", element=lambda e: e.remove())
    assert rw.rewrite('{"x": "<p>"}') == '{"x": "<p>"}'
    assert rw.rewrite("<p>x</p>y") == "y"


# --------------------------------------------------------------------------------------------
# adjust_charset_on_meta_tag
# --------------------------------------------------------------------------------------------


def meta_doc(meta: str, encoding: str, before: str = "café") -> bytes:
    head = f"<html><head><title>{before}</title>{meta}".encode("windows-1252")
    return head + "<p title=\"日本\">日本語のテキスト</p></html>".encode(lookup(encoding).codec)


@pytest.mark.parametrize("meta", [
    '<meta charset="shift_jis">',
    "<meta charset=SJIS>",
    '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">',
    "<meta content='text/html;charset=x-sjis' http-equiv=content-type>",
])
def test_meta_switches_encoding(meta: str) -> None:
    data = meta_doc(meta, "shift_jis")
    seen: list[str] = []
    rw = Rewriter(encoding="windows-1252", adjust_charset_on_meta_tag=True)
    rw.on("title", text=lambda t: seen.append(t.text))
    rw.on('p[title="日本"]', element=lambda e: (seen.append(e.get_attribute("title") or ""),
                                               e.append("①\u2603")),
          text=lambda t: seen.append(t.text))
    expected = data.replace(b"</p>", "①&#9731;</p>".encode("cp932"))
    for cut in cuts(data):
        seen.clear()
        out, stream = run(rw, cut)
        assert stream.encoding == "shift_jis"
        assert "".join(seen) == "café日本日本語のテキスト"
        assert out == expected


def test_meta_switch_only_once() -> None:
    data = (b'<meta charset="koi8-r"><meta charset="shift_jis"><p>' +
            "Москва".encode("koi8_r"))
    seen: list[str] = []
    rw = Rewriter(adjust_charset_on_meta_tag=True).on("p", text=lambda t: seen.append(t.text))
    for cut in cuts(data):
        seen.clear()
        _, stream = run(rw, cut)
        assert stream.encoding == "koi8-r"
        assert "".join(seen) == "Москва"


def test_meta_same_encoding_decides() -> None:
    # The first meta naming a known encoding decides, even if it is the current one.
    data = b'<meta charset="utf-8"><meta charset="koi8-r"><p>\xd0\xb9'
    _, stream = run(Rewriter(adjust_charset_on_meta_tag=True), [data])
    assert stream.encoding == "utf-8"


@pytest.mark.parametrize(("meta", "encoding"), [
    ('<meta charset="nope"><meta charset="euc-kr">', "euc-kr"),        # unknown: ignored
    ('<meta charset="iso-2022-jp"><meta charset="euc-kr">', "euc-kr"),  # not ASCII-compatible
    ('<meta charset="hz-gb-2312"><meta charset="euc-kr">', "euc-kr"),   # replacement
    ('<meta charset="utf-16">', "utf-8"),                               # UTF-16 means UTF-8
    ('<meta charset="x-user-defined">', "windows-1252"),
    ('<meta charset="  KOI8-R  ">', "koi8-r"),
    ('<meta http-equiv="Content-Type " content="charset=euc-kr">', "iso-8859-2"),
    ('<meta content="charset=euc-kr">', "iso-8859-2"),                  # no http-equiv
    ('<svg><meta charset="euc-kr"></svg>', "euc-kr"),  # <meta> breaks out of foreign content
    ('<!-- <meta charset="euc-kr"> -->', "iso-8859-2"),
    ('<textarea><meta charset="euc-kr"></textarea>', "iso-8859-2"),
    ('<meta charset="euc-kr" charset="big5">', "euc-kr"),
    ('<meta charset="" http-equiv=content-type content="charset=big5">', "big5"),
    ('<body><p><meta charset="big5">', "big5"),                        # in body too
])
def test_meta_cases(meta: str, encoding: str) -> None:
    data = meta.encode() + b"<p>x</p>"
    for cut in cuts(data):
        _, stream = run(Rewriter(encoding="iso-8859-2", adjust_charset_on_meta_tag=True), cut)
        assert stream.encoding == encoding


def test_meta_switch_to_utf8_from_single_byte() -> None:
    # The lexer was made for windows-1252 (no UTF-8 hold-back): text is decoded in stream order.
    data = '<meta charset="utf-8"><p>Grüße 日本語 😀</p>'.encode()
    seen: list[str] = []
    rw = Rewriter(encoding="windows-1252", adjust_charset_on_meta_tag=True)
    rw.on("p", text=lambda t: seen.append(t.text))
    for cut in cuts(data):
        seen.clear()
        out, stream = run(rw, cut)
        assert out == data
        assert stream.encoding == "utf-8"
        assert "".join(seen) == "Grüße 日本語 😀"


def test_meta_switch_from_utf8() -> None:
    data = '<meta charset="gbk"><p title="中国">中文</p>'.encode("gbk")
    seen: list[str] = []
    rw = Rewriter(adjust_charset_on_meta_tag=True)
    rw.on('[title="中国"]', text=lambda t: seen.append(t.text))
    for cut in cuts(data):
        seen.clear()
        _, stream = run(rw, cut)
        assert stream.encoding == "gbk"
        assert "".join(seen) == "中文"


def test_meta_handler_runs_before_user_handlers() -> None:
    order: list[str] = []
    rw = Rewriter(encoding="windows-1252", adjust_charset_on_meta_tag=True)
    streams: list[Any] = []
    rw.on("meta", element=lambda e: order.append(streams[0].encoding))
    stream = rw.stream()
    streams.append(stream)
    stream.feed(b'<meta charset="koi8-r">')
    stream.close()
    assert order == ["koi8-r"]


def test_meta_not_followed_without_the_option_or_for_str() -> None:
    data = '<meta charset="koi8-r"><p>é'
    _, stream = run(Rewriter(encoding="windows-1252"), [data.encode("cp1252")])
    assert stream.encoding == "windows-1252"
    seen: list[str] = []
    rw = Rewriter(adjust_charset_on_meta_tag=True).on("p", text=lambda t: seen.append(t.text))
    assert rw.rewrite(data) == data
    assert "".join(seen) == "é"


def test_meta_switch_with_rules_added_later() -> None:
    rw = Rewriter(encoding="windows-1252", adjust_charset_on_meta_tag=True)
    seen: list[str] = []
    rw.on('[title="日本"]', element=lambda e: seen.append("old"))
    stream = rw.stream()
    rw.on("p", element=lambda e: seen.append("new rule"))     # after the stream began
    data = '<meta charset="shift_jis"><p title="日本">'.encode("shift_jis")
    stream.feed(data)
    stream.close()
    assert seen == ["old"]


def test_meta_switch_many_streams_share_rules() -> None:
    rw = Rewriter(encoding="windows-1252", adjust_charset_on_meta_tag=True)
    found: list[str] = []
    rw.on('[title="日本"]', element=lambda e: found.append("ja"))
    rw.on('[title="Москва"]', element=lambda e: found.append("ru"))
    a, b = rw.stream(), rw.stream()
    a.feed(b'<meta charset="shift_jis">')
    b.feed(b'<meta charset="koi8-r">')
    a.feed('<p title="日本">'.encode("shift_jis"))
    b.feed('<p title="Москва">'.encode("koi8_r"))
    a.close()
    b.close()
    assert (a.encoding, b.encoding, found) == ("shift_jis", "koi8-r", ["ja", "ru"])


def test_failed_stream_after_held_input() -> None:
    def boom(e: Any) -> None:
        raise ValueError("boom")

    stream = Rewriter(sniff=True).on("p", element=boom).stream()
    assert stream.feed(b"<p>") == b""       # held back: too short to tell
    with pytest.raises(ValueError):
        stream.close()
    with pytest.raises(HtmlStreamError):
        stream.close()


def test_text_handlers_see_whole_characters_after_a_switch_to_utf8() -> None:
    """A <meta charset=utf-8> switch from windows-1252: from then on a UTF-8 character cut by a
    chunk boundary is held back whole, so each text chunk decodes to whole characters and the
    chunks join to the same text under every chunking."""
    doc = "<meta charset=utf-8><p>é 用户 ü</p><p>€</p>".encode()
    seen: list[str] = []
    rw = Rewriter(encoding="windows-1252", adjust_charset_on_meta_tag=True)
    rw.on("p", text=lambda chunk: seen.append(chunk.text))
    whole = rw.rewrite(doc)
    assert whole == doc
    for cut in chunkings(doc):
        seen.clear()
        stream = rw.stream()
        out = b"".join(stream.feed(c) for c in cut) + stream.close()
        assert out == doc
        assert "".join(seen) == "é 用户 ü€"
        assert "\ufffd" not in "".join(seen)
