"""Filtered text handlers: ``Rewriter.on(selector, text=h, text_filter="@")`` and
``on_document(text=h, text_filter=...)``.

The rule (Rewriter.on's docstring): a text node that comes in one piece goes to a filtered handler
only if its raw bytes hold one of the filter's characters; every piece of a text node that comes in
several pieces goes to it, whatever the pieces hold.  Each test runs its input under many
chunkings (``chunking.chunkings``) and checks what a filtered handler saw against what an
unfiltered handler on the same text saw, by that rule.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import htmlstream as hs
from chunking import chunkings, feed_bytes

Piece = tuple[bytes, bool]      # (raw, last_in_text_node)

DOCS = [
    b"<p>no address here</p><p>write to a@b.co</p>",
    b"<p>hello</p>plain @ text<div>x</div>tail@",
    b"<title>t@t</title><p>a@b</p><script>x='@'</script><style>/*@*/</style>",
    b"<textarea>q@q</textarea><p>&#64; is not @ raw, &commat; neither</p>",
    b"<table><tr><td>a@b</td>x@y</tr></table>after",       # text moved out of the table
    b"   <html>  <head> </head>  w@w <body>b@b</body>",     # text that implies <body>
    b"<svg><![CDATA[c@d]]></svg>no at sign",
    b"<ul><li>one<li>two@2<li>three</ul>",
    b"",
    b"@",
]


def record(rw_for: Callable[[Callable[[hs.TextChunk], None], Callable[[hs.TextChunk], None]],
                            hs.Rewriter], data: bytes, chunks: list[bytes]
           ) -> tuple[list[Piece], list[Piece], bytes]:
    """The pieces an unfiltered and a filtered handler saw (same rules otherwise), and the
    output."""
    plain: list[Piece] = []
    filtered: list[Piece] = []
    rw = rw_for(lambda c: plain.append((c.raw, c.last_in_text_node)),
                lambda c: filtered.append((c.raw, c.last_in_text_node)))
    out = feed_bytes(rw.stream, chunks)
    return plain, filtered, out


def expected_pieces(plain: list[Piece], chars: bytes) -> list[Piece]:
    """What the rule lets through of ``plain`` (every piece, in order)."""
    out: list[Piece] = []
    node: list[Piece] = []
    for piece in plain:
        node.append(piece)
        if piece[1]:                    # the node's last piece
            if len(node) > 1 or any(c in node[0][0] for c in chars):
                out.extend(node)
            node = []
    out.extend(node)                    # (a node left unfinished: never the case)
    return out


def document_rules(chars: str) -> Callable[..., hs.Rewriter]:
    def make(plain: Callable[[hs.TextChunk], None],
             filtered: Callable[[hs.TextChunk], None]) -> hs.Rewriter:
        return (hs.Rewriter().on_document(text=plain)
                .on_document(text=filtered, text_filter=chars))
    return make


@pytest.mark.parametrize("data", DOCS)
@pytest.mark.parametrize("chars", ["@", "@x", "@#;&", "z"])
def test_document_handler_sees_what_the_rule_says(data: bytes, chars: str) -> None:
    for cut in chunkings(data):
        plain, filtered, out = record(document_rules(chars), data, cut)
        assert out == data
        assert filtered == expected_pieces(plain, chars.encode()), [len(c) for c in cut]


def test_one_piece_nodes_are_skipped_without_the_character() -> None:
    plain, filtered, _ = record(document_rules("@"), DOCS[0], [DOCS[0]])
    assert plain == [(b"no address here", True), (b"write to a@b.co", True)]
    assert filtered == [(b"write to a@b.co", True)]


def test_a_node_in_several_pieces_is_seen_whole() -> None:
    # "hello there" is cut by the chunk boundary: both pieces go to the handler (and the empty
    # last piece of the trailing text, at the end of the input).
    cut = [b"<p>hello th", b"ere</p><p>x</p>tail"]
    plain, filtered, _ = record(document_rules("@"), b"".join(cut), cut)
    assert filtered == [(b"hello th", False), (b"ere", True), (b"tail", False), (b"", True)]
    assert (b"x", True) in plain


def test_character_references_are_not_decoded() -> None:
    data = b"<p>a&#64;b.co</p><p>a&commat;b.co</p><p>a@b.co</p>"
    plain, filtered, _ = record(document_rules("@"), data, [data])
    assert filtered == [(b"a@b.co", True)]
    _, with_amp, _ = record(document_rules("@&"), data, [data])
    assert with_amp == plain


def test_scoped_rule_with_filter() -> None:
    def make(plain: Callable[[hs.TextChunk], None],
             filtered: Callable[[hs.TextChunk], None]) -> hs.Rewriter:
        return hs.Rewriter().on("b", text=plain).on("b", text=filtered, text_filter="@")

    data = b"<p>out@side <b>in <i>x@y</i> and</b> z@z</p><b>none</b>"
    for cut in chunkings(data):
        plain, filtered, out = record(make, data, cut)
        assert out == data
        assert filtered == expected_pieces(plain, b"@")
        assert all(b"out" not in raw and b"z@z" not in raw for raw, _ in filtered)
    _, filtered, _ = record(make, data, [data])
    assert filtered == [(b"x@y", True)]


def test_decorator_takes_the_filter() -> None:
    seen: list[bytes] = []
    rw = hs.Rewriter()

    @rw.text("p", text_filter="@")
    def grab(chunk: hs.TextChunk) -> None:
        seen.append(chunk.raw)

    rw.rewrite(b"<p>a</p><p>b@c</p>")
    assert seen == [b"b@c"]


# --------------------------------------------------------------------------- changing chunks


def at_to_word() -> hs.Rewriter:
    """A filtered handler that writes " at " for "@", carrying nothing (each piece alone)."""
    def text(chunk: hs.TextChunk) -> None:
        if b"@" in chunk.raw:
            chunk.replace(chunk.text.replace("@", " at "))
    return hs.Rewriter().on_document(text=text, text_filter="@")


def test_replacing_filtered_chunks() -> None:
    data = b"<p>mail a@b now</p><p>nothing</p><div>c@d &amp; e</div>"
    expected = b"<p>mail a at b now</p><p>nothing</p><div>c at d &amp; e</div>"
    for cut in chunkings(data):
        assert feed_bytes(at_to_word().stream, cut) == expected


def joiner(collected: list[str]) -> hs.Rewriter:
    """A filtered handler that holds every piece back until its node's last piece, then
    writes the node as one piece (upper-cased when it holds an "@"): it carries state from
    piece to piece, which the rule keeps correct."""
    held: list[str] = []

    def text(chunk: hs.TextChunk) -> None:
        held.append(chunk.text)
        if not chunk.last_in_text_node:
            chunk.remove()
            return
        whole = "".join(held)
        held.clear()
        collected.append(whole)
        chunk.replace(whole.upper() if "@" in whole else whole)
    return hs.Rewriter().on_document(text=text, text_filter="@")


def test_carry_across_pieces_is_never_lost() -> None:
    data = b"<p>x a@b y</p><p>plain text</p><p>ab@</p>end"
    expected = b"<p>X A@B Y</p><p>plain text</p><p>AB@</p>end"
    for cut in chunkings(data):
        collected: list[str] = []
        assert feed_bytes(joiner(collected).stream, cut) == expected, [len(c) for c in cut]
        assert [s for s in collected if "@" in s] == ["x a@b y", "ab@"]


def test_filtered_handler_after_one_that_removes() -> None:
    # The filter looks at the input's bytes, not at what an earlier handler made of them.
    plain: list[Piece] = []
    seen: list[Piece] = []

    def remove(chunk: hs.TextChunk) -> None:
        plain.append((chunk.raw, chunk.last_in_text_node))
        chunk.remove()

    rw = (hs.Rewriter().on_document(text=remove)
          .on_document(text=lambda c: seen.append((c.raw, c.last_in_text_node)),
                       text_filter="@"))
    for cut in chunkings(b"<p>a@b</p><p>c</p>"):
        plain.clear()
        seen.clear()
        assert feed_bytes(rw.stream, cut) == b"<p></p><p></p>"
        assert seen == expected_pieces(plain, b"@")
        assert b"a@b" in b"".join(raw for raw, _ in seen)
        if len(cut) == 1:
            assert seen == [(b"a@b", True)]


def test_unfiltered_handlers_keep_their_order() -> None:
    calls: list[str] = []
    rw = (hs.Rewriter()
          .on_document(text=lambda c: calls.append("first"), text_filter="@")
          .on_document(text=lambda c: calls.append("plain"))
          .on_document(text=lambda c: calls.append("third"), text_filter="!"))
    rw.rewrite(b"<p>@</p><p>!</p><p>.</p><p>@!</p>")
    assert calls == ["first", "plain", "plain", "third", "plain",
                     "first", "plain", "third"]


def test_legacy_encodings() -> None:
    for encoding, data in (
            ("windows-1252", "<p>caf\xe9</p><p>m\xe9l a@b</p>".encode("windows-1252")),
            ("shift_jis", "<p>日本</p><p>メール a@b</p>".encode("shift_jis"))):
        def make(plain: Callable[[hs.TextChunk], None],
                 filtered: Callable[[hs.TextChunk], None]) -> hs.Rewriter:
            return (hs.Rewriter(encoding=encoding).on_document(text=plain)  # noqa: B023
                    .on_document(text=filtered, text_filter="@"))
        for cut in chunkings(data):
            plain, filtered, out = record(make, data, cut)
            assert out == data
            assert filtered == expected_pieces(plain, b"@")
        seen: list[str] = []
        hs.Rewriter(encoding=encoding).on_document(
            text=lambda c: seen.append(c.text), text_filter="@").rewrite(data)  # noqa: B023
        assert seen == [data.decode(encoding)[-len("xxx a@b") - 4:-4].lstrip(">")]


@pytest.mark.parametrize("bad", ["", "é", "@\u2028"])
def test_filter_must_be_ascii(bad: str) -> None:
    with pytest.raises(ValueError, match="ASCII"):
        hs.Rewriter().on_document(text=lambda c: None, text_filter=bad)
    with pytest.raises(ValueError, match="ASCII"):
        hs.Rewriter().on("p", text=lambda c: None, text_filter=bad)


def test_filter_must_be_str() -> None:
    with pytest.raises(TypeError, match="str"):
        hs.Rewriter().on_document(text=lambda c: None,
                                  text_filter=b"@")  # type: ignore[arg-type]


def test_the_engine_filter_object() -> None:
    # (what Rewriter keeps per filtered handler: each character once; equal by its characters;
    # picklable)
    import pickle

    from htmlstream._engine.rules import TextFilter

    f = TextFilter("@x@")
    assert f.chars == b"@x" and f == TextFilter("x@") and hash(f) == hash(TextFilter("x@"))
    assert pickle.loads(pickle.dumps(f)) == f


# ----------------------------------------------------------------------------- TextFilter options

TypedPiece = tuple[bytes, bool, hs.TextType]    # (raw, last_in_text_node, text_type)

TYPED_DOCS = [
    "<p>café &amp; crème</p><p>plain</p>".encode(),
    b"<p>bad \xff byte</p><p>cut \xe2\x82</p><p>ok \xe2\x82\xac</p>",
    b"<p>overlong \xc0\xaf</p><p>surrogate \xed\xa0\x80</p><p>too high \xf4\x90\x80\x80</p>",
    b"<p>four \xf0\x9f\x98\x80</p><p>lone \x80</p><p>\xf0\x90\x80</p>",
    b"<textarea>t \xff</textarea><title>no</title><style>css \xfe</style><style>x</style>",
    b"<svg><![CDATA[c]]><![CDATA[\xff]]></svg><xmp>raw</xmp><script>s</script>",
    b"<p>" + b"a" * 17 + b"\xff" + b"b" * 9 + b"</p><p>" + b"a" * 16 + b"</p>",
    b"<p>x\x00y</p><p>cr\rlf</p><p>&lt;</p>",
]


def record_typed(make: Callable[[Callable[[hs.TextChunk], None],
                                 Callable[[hs.TextChunk], None]], hs.Rewriter],
                 chunks: list[bytes]) -> tuple[list[TypedPiece], list[TypedPiece], bytes]:
    plain: list[TypedPiece] = []
    filtered: list[TypedPiece] = []
    rw = make(lambda c: plain.append((c.raw, c.last_in_text_node, c.text_type)),
              lambda c: filtered.append((c.raw, c.last_in_text_node, c.text_type)))
    return plain, filtered, feed_bytes(rw.stream, chunks)


def expected_typed(plain: list[TypedPiece], passes: Callable[[bytes, hs.TextType], bool]
                   ) -> list[TypedPiece]:
    """The pieces a filter lets through of ``plain``: all those of a node in several pieces,
    a node in one piece if it ``passes``."""
    out: list[TypedPiece] = []
    node: list[TypedPiece] = []
    for piece in plain:
        node.append(piece)
        if piece[1]:
            if len(node) > 1 or passes(node[0][0], node[0][2]):
                out.extend(node)
            node = []
    out.extend(node)
    return out


def _undecodable_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


FILTERS = [
    (hs.TextFilter("&", undecodable=True), None),
    (hs.TextFilter("", undecodable=True), None),
    (hs.TextFilter("&<>\0\r", undecodable=True,
                   text_types={hs.TextType.DATA, hs.TextType.RCDATA}), None),
    (hs.TextFilter("x", text_types=[hs.TextType.RAWTEXT]), None),
    (hs.TextFilter("q", text_types=()), None),
]


@pytest.mark.parametrize("data", TYPED_DOCS)
@pytest.mark.parametrize("index", range(len(FILTERS)))
def test_filter_options_see_what_the_rule_says(data: bytes, index: int) -> None:
    f = FILTERS[index][0]

    def passes(raw: bytes, text_type: hs.TextType) -> bool:
        if text_type not in f.text_types:
            return True
        return any(c in raw for c in f.chars) or (f.undecodable and _undecodable_utf8(raw))

    def make(plain: Callable[[hs.TextChunk], None],
             filtered: Callable[[hs.TextChunk], None]) -> hs.Rewriter:
        return hs.Rewriter().on_document(text=plain).on_document(text=filtered, text_filter=f)

    for cut in chunkings(data):
        plain, filtered, out = record_typed(make, cut)
        assert out == data
        assert filtered == expected_typed(plain, passes), [len(c) for c in cut]


def test_undecodable_bytes_at_every_position() -> None:
    # (the UTF-8 check reads eight bytes at once: every offset of a bad byte, a good character)
    seen: list[bytes] = []
    rw = hs.Rewriter().on_document(text=lambda c: seen.append(c.raw),
                                   text_filter=hs.TextFilter("", undecodable=True))
    for n in range(20):
        for tail in range(10):
            for bad, expect in ((b"\xff", True), (b"\xc3\xa9", False), (b"\xe2\x82", True),
                                (b"\xf0\x9f\x98\x80", False)):
                seen.clear()
                text = b"a" * n + bad + b"b" * tail
                rw.rewrite(b"<p>" + text + b"</p>")
                assert seen == ([text] if expect else []), (n, bad, tail)


def test_undecodable_in_legacy_encodings() -> None:
    # (outside UTF-8, any byte outside ASCII is handed over)
    data = "<p>caf\xe9</p><p>plain</p><p>\x81</p>".encode("windows-1252", "ignore") + \
        b"<p>\x81</p>"
    seen: list[str] = []
    rw = hs.Rewriter(encoding="windows-1252").on_document(
        text=lambda c: seen.append(c.text), text_filter=hs.TextFilter("", undecodable=True))
    for cut in chunkings(data):
        seen.clear()
        assert feed_bytes(rw.stream, cut) == data
        assert "caf\xe9" in "".join(seen)
    seen.clear()
    rw.rewrite(data)
    assert seen == ["caf\xe9", "\x81"]


def test_a_filter_after_a_meta_charset_switch() -> None:
    # (the encoding a piece is read in decides what "undecodable" means)
    data = b'<meta charset="windows-1252"><p>caf\xe9</p><p>ok</p>'
    seen: list[bytes] = []
    rw = hs.Rewriter(adjust_charset_on_meta_tag=True).on_document(
        text=lambda c: seen.append(c.raw), text_filter=hs.TextFilter("", undecodable=True))
    for cut in chunkings(data):
        seen.clear()
        assert feed_bytes(rw.stream, cut) == data
        assert b"caf\xe9" in b"".join(seen)
    seen.clear()
    rw.rewrite(data)
    assert seen == [b"caf\xe9"]


def test_text_filter_object_api() -> None:
    import pickle

    from htmlstream._engine.rules import TextFilter

    assert hs.TextFilter is TextFilter
    f = hs.TextFilter("<&<", undecodable=True, text_types=[hs.TextType.DATA])
    assert f.chars == b"&<" and f.undecodable and f.text_types == {hs.TextType.DATA}
    assert f == hs.TextFilter("&<", undecodable=True, text_types={hs.TextType.DATA})
    assert f != hs.TextFilter("&<", text_types={hs.TextType.DATA})
    assert f != hs.TextFilter("&<", undecodable=True)
    assert hash(f) == hash(hs.TextFilter("<&", undecodable=True, text_types=(0,)))
    assert pickle.loads(pickle.dumps(f)) == f
    assert repr(f) == "TextFilter('&<', undecodable=True, text_types={TextType.DATA})"
    assert repr(hs.TextFilter("@")) == "TextFilter('@')"
    assert hs.TextFilter("@").text_types == set(hs.TextType)
    assert not hs.TextFilter("@").undecodable
    assert pickle.loads(pickle.dumps(hs.TextFilter("@"))) == hs.TextFilter("@")
    with pytest.raises(ValueError, match="ASCII"):
        hs.TextFilter("")
    with pytest.raises(ValueError, match="TextType"):
        hs.TextFilter("@", text_types=[6])
    with pytest.raises(TypeError, match="collection"):
        hs.TextFilter("@", text_types=hs.TextType.DATA)
    # (a str and the filter it makes are the same to the Rewriter)
    seen: list[str] = []
    rw = hs.Rewriter().on("p", text=lambda c: seen.append(c.text), text_filter=f)
    assert rw.rewrite("<p>a<p>b&amp;<p>c</p>") == "<p>a<p>b&amp;<p>c</p>"
    assert seen == ["b&"]
