"""The per-document context: ``Rewriter.stream(context=...)``, ``rewrite(..., context=...)`` and
the adapters take a mapping (a new dict per document by default), exposed as ``stream.context``
and as ``unit.context`` on every unit a handler gets for that document.

Handlers of one Rewriter keep per-document state there; many streams of one Rewriter run
interleaved (in one thread, in 8 threads, in asyncio tasks) and each handler call sees only the
context of the document it is called for.  Every test that feeds input runs it under many
chunkings (``chunking.chunkings``).
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import htmlstream as hs
from chunking import chunkings, feed_bytes

DOC = (b"<!DOCTYPE html><html><head><title>t</title></head><body>"
       b"<!-- c1 --><p id=a>one <b>two</b></p><img src=x><image src=y>"
       b"<script>s()</script><p id=b>three<!-- c2 --></p></body></html>")


def recording_rewriter() -> hs.Rewriter:
    """A rewriter whose handlers record, in the document's context, what they saw: every kind
    of unit, and the context each unit carries."""
    rw = hs.Rewriter()

    def note(kind: str) -> Callable[[Any], None]:
        def handler(unit: Any) -> None:
            ctx = unit.context
            ctx.setdefault("seen", []).append(kind)
            assert ctx is unit.context
        return handler

    def element(el: hs.Element) -> None:
        note("element")(el)
        if el.can_have_content:
            el.on_end_tag(note("end_tag"))
        # per-document state: a counter, written back into the output
        el.context["n"] = el.context.get("n", 0) + 1
        el.set_attribute("data-n", str(el.context["n"]))

    rw.on("p, img, b", element=element, text=note("text"), comments=note("comment"))
    rw.on_document(doctype=note("doctype"), comments=note("doc_comment"), end=note("end"))
    return rw


def expected_output(start: int = 0) -> bytes:
    out = DOC
    for i, tag in enumerate((b"<p id=a>", b"<b>", b"<img src=x>", b"<image src=y>",
                             b"<p id=b>")):
        out = out.replace(tag, tag[:-1] + b' data-n="' + str(start + i + 1).encode() + b'">', 1)
    return out


def test_default_context_is_a_new_dict_per_document() -> None:
    rw = recording_rewriter()
    a, b = rw.stream(), rw.stream()
    assert a.context == {} and type(a.context) is dict
    assert a.context is not b.context
    assert a.feed(DOC) + a.close() == expected_output()
    assert b.feed(DOC) + b.close() == expected_output()     # (its own counter)
    assert a.context["n"] == b.context["n"] == 5
    assert a.context["seen"] == b.context["seen"]
    assert set(a.context["seen"]) == {"doctype", "doc_comment", "comment", "element", "text",
                                      "end_tag", "end"}


def test_given_context_is_the_one_handlers_see() -> None:
    rw = recording_rewriter()
    for chunks in chunkings(DOC, random_splits=4):
        ctx: dict[str, Any] = {"n": 10}
        out = feed_bytes(lambda ctx=ctx, rw=rw: rw.stream(context=ctx), chunks)
        assert out == expected_output(10)
        assert ctx["n"] == 15
        assert ctx["seen"].count("end") == 1


def test_context_any_mutable_mapping() -> None:
    class Store(dict[str, Any]):
        pass

    rw = recording_rewriter()
    store = Store()
    stream = rw.stream(context=store)
    assert stream.context is store
    stream.feed(DOC)
    stream.close()
    assert store["n"] == 5


def test_context_on_every_adapter(tmp_path: Path) -> None:
    rw = recording_rewriter()
    ctx: dict[str, Any] = {}
    assert rw.rewrite(DOC, context=ctx) == expected_output()
    assert ctx["n"] == 5
    ctx = {}
    assert rw.rewrite(DOC.decode(), context=ctx) == expected_output().decode()
    assert ctx["n"] == 5
    ctx = {}
    assert b"".join(rw.rewrite_iter(iter([DOC[:50], DOC[50:]]), context=ctx)) == \
        expected_output()
    assert ctx["n"] == 5

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(DOC), 7):
            yield DOC[i:i + 7]

    async def collect(ctx: dict[str, Any]) -> bytes:
        return b"".join([out async for out in rw.rewrite_aiter(chunks(), context=ctx)])

    ctx = {}
    assert asyncio.run(collect(ctx)) == expected_output()
    assert ctx["n"] == 5
    src = tmp_path / "in.html"
    src.write_bytes(DOC)
    ctx = {}
    rw.rewrite_file(src, tmp_path / "new" / "out.html", chunk_size=16, context=ctx)
    assert (tmp_path / "new" / "out.html").read_bytes() == expected_output()   # (folder made)
    assert ctx["n"] == 5
    ctx = {}
    dst = io.BytesIO()
    rw.rewrite_file(io.BytesIO(DOC), dst, context=ctx)
    assert dst.getvalue() == expected_output() and ctx["n"] == 5


def test_context_with_every_start_of_a_stream() -> None:
    # The engine starts on the fast path, after a byte order mark, after sniffing, on a
    # <meta charset> switch and when transcoding: the handlers see the context every time.
    doc = b"<meta charset=windows-1252><p>caf\xe9</p>"
    for kwargs, data in (({}, doc), ({}, b"\xef\xbb\xbf" + doc), ({"sniff": True}, doc),
                         ({"adjust_charset_on_meta_tag": True}, doc),
                         ({"transcode": True}, b"\xff\xfe" + "<p>x</p>".encode("utf-16-le"))):
        rw = hs.Rewriter(**kwargs)
        rw.on("p", text=lambda t: t.context.setdefault("text", []).append(t.text))
        for chunks in chunkings(data, random_splits=2, two_way=False):
            ctx: dict[str, Any] = {}
            feed_bytes(lambda ctx=ctx, rw=rw: rw.stream(context=ctx), chunks)
            assert "".join(ctx["text"]) in ("caf\xe9", "caf\ufffd", "x"), kwargs


def test_kept_units_keep_their_document_context() -> None:
    # A handler that keeps a unit keeps it with its document's context (the sink reuses only
    # the elements nobody kept).
    rw = hs.Rewriter()
    kept: list[Any] = []
    rw.on("p", element=kept.append)
    rw.on("b", element=lambda el: None)
    contexts = [{"doc": i} for i in range(3)]
    for ctx in contexts:
        rw.rewrite(b"<b></b><p></p><b></b><p></p><b></b>", context=ctx)
    assert [el.context["doc"] for el in kept] == [0, 0, 1, 1, 2, 2]


def test_streams_interleaved_in_one_thread() -> None:
    rw = recording_rewriter()
    streams = [rw.stream(context={"id": i}) for i in range(5)]
    outs: list[list[bytes]] = [[] for _ in streams]
    step = 9
    for pos in range(0, len(DOC), step):
        for i, stream in enumerate(streams):
            outs[i].append(stream.feed(DOC[pos:pos + step]))
    for i, stream in enumerate(streams):
        outs[i].append(stream.close())
        assert b"".join(outs[i]) == expected_output()
        assert stream.context["id"] == i and stream.context["n"] == 5


def own_document(i: int) -> bytes:
    """A document whose every element and text names its number: handlers check they are
    called with the context of the same document."""
    tag = f"d{i}".encode()
    return b"".join(b'<p class=%s title="%s">%s<!--%s--><b>%s</b></p>' % (tag, tag, tag, tag, tag)
                    for _ in range(20))


def checking_rewriter() -> hs.Rewriter:
    rw = hs.Rewriter()

    def element(el: hs.Element) -> None:
        assert el.get_attribute("title") == el.context["tag"]
        el.context["elements"] += 1
        el.on_end_tag(lambda end: end.context.__setitem__("ends", end.context["ends"] + 1))

    def text(chunk: hs.TextChunk) -> None:
        chunk.context["text"].append(chunk.text)

    def comment(c: hs.Comment) -> None:
        assert c.text == c.context["tag"]
        c.context["comments"] += 1

    rw.on("p", element=element, text=text, comments=comment)
    rw.on_document(end=lambda end: end.append(end.context["tag"]))
    return rw


def new_context(i: int) -> dict[str, Any]:
    return {"tag": f"d{i}", "elements": 0, "ends": 0, "comments": 0, "text": []}


def check_context(i: int, ctx: dict[str, Any], out: bytes) -> None:
    assert ctx["elements"] == ctx["ends"] == ctx["comments"] == 20
    assert "".join(ctx["text"]) == f"d{i}" * 40
    assert out == own_document(i) + f"d{i}".encode()


def chunk_plan(data: bytes, i: int) -> Iterator[bytes]:
    """Chunks of ``data`` cut differently for each document (sizes 1 to 17)."""
    size = 1 + (i * 5) % 17
    for pos in range(0, len(data), size):
        yield data[pos:pos + size]


def test_streams_in_8_threads_see_only_their_own_context() -> None:
    rw = checking_rewriter()
    n_threads = 8
    barrier = threading.Barrier(n_threads)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            barrier.wait()
            for k in range(6):
                i = t * 10 + k
                ctx = new_context(i)
                stream = rw.stream(context=ctx)
                out = [stream.feed(c) for c in chunk_plan(own_document(i), i)]
                out.append(stream.close())
                check_context(i, ctx, b"".join(out))
        except BaseException as exc:    # (reported by the main thread)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]


def test_streams_in_8_threads_interleaved_chunk_by_chunk() -> None:
    # Every thread feeds one chunk, then waits for the others: the documents' chunks are fed
    # strictly interleaved, with the same handlers.
    rw = checking_rewriter()
    n_threads = 8
    barrier = threading.Barrier(n_threads)
    docs = [own_document(i) for i in range(n_threads)]
    rounds = max(len(list(chunk_plan(d, i))) for i, d in enumerate(docs))
    errors: list[BaseException] = []

    def work(i: int) -> None:
        ctx = new_context(i)
        stream = rw.stream(context=ctx)
        chunks = list(chunk_plan(docs[i], i))
        out: list[bytes] = []
        try:
            for r in range(rounds):
                barrier.wait()
                if r < len(chunks):
                    out.append(stream.feed(chunks[r]))
            out.append(stream.close())
            check_context(i, ctx, b"".join(out))
        except BaseException as exc:    # (reported by the main thread)
            barrier.abort()
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]


def test_streams_in_asyncio_tasks_interleaved() -> None:
    rw = checking_rewriter()

    async def one(i: int) -> tuple[dict[str, Any], bytes]:
        ctx = new_context(i)
        stream = rw.stream(context=ctx)
        out: list[bytes] = []
        for chunk in chunk_plan(own_document(i), i):
            out.append(stream.feed(chunk))
            await asyncio.sleep(0)          # let the other documents' tasks feed
        out.append(stream.close())
        return ctx, b"".join(out)

    async def adapter(i: int) -> tuple[dict[str, Any], bytes]:
        async def chunks() -> AsyncIterator[bytes]:
            for chunk in chunk_plan(own_document(i), i):
                await asyncio.sleep(0)
                yield chunk

        ctx = new_context(i)
        out = b"".join([o async for o in rw.rewrite_aiter(chunks(), context=ctx)])
        return ctx, out

    async def main() -> list[tuple[dict[str, Any], bytes]]:
        return await asyncio.gather(*(one(i) if i % 2 else adapter(i) for i in range(16)))

    for i, (ctx, out) in enumerate(asyncio.run(main())):
        check_context(i, ctx, out)


@pytest.mark.parametrize("i", range(3))
def test_own_document_every_chunking(i: int) -> None:
    # Cut anywhere (in a tag, a comment, a text), the handlers see the same state.
    rw = checking_rewriter()
    data = own_document(i)[:300]
    whole = new_context(i)
    expected = rw.rewrite(data, context=whole)
    for chunks in chunkings(data, random_splits=6, split_samples=8):
        ctx = new_context(i)
        assert feed_bytes(lambda ctx=ctx: rw.stream(context=ctx), chunks) == expected
        assert "".join(ctx.pop("text")) == "".join(whole["text"])
        assert ctx == {k: v for k, v in whole.items() if k != "text"}
