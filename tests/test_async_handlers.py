"""Async handlers (issue 30): ``Rewriter.astream()``, ``arewrite()``, ``rewrite_aiter()``.

The semantics are those of the Workers HTMLRewriter (htmlstream.astream's docstring): one
handler at a time in document and registration order, the engine paused at the unit while its
handler waits, the output before the unit out first, the unit valid until the coroutine ends,
errors and cancellation failing the stream.  Every document here is fed in many chunkings, and
an async handler must give byte for byte what the same sync handler gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import random
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import htmlstream as hs
from chunking import chunkings, feed_bytes
from datapaths import corpus_dir
from html_strategies import chunked, html_documents

Unit = Any
Wrap = Callable[[Callable[[Unit], None]], Callable[[Unit], Any]]


# ---------------------------------------------------------------------- handler kits


def _sync(f: Callable[[Unit], None]) -> Callable[[Unit], None]:
    return f


def _sleep0(f: Callable[[Unit], None]) -> Callable[[Unit], Awaitable[None]]:
    async def handler(unit: Unit) -> None:
        await asyncio.sleep(0)
        f(unit)
    return handler


def _no_wait(f: Callable[[Unit], None]) -> Callable[[Unit], Awaitable[None]]:
    async def handler(unit: Unit) -> None:
        f(unit)
    return handler


def _future(f: Callable[[Unit], None]) -> Callable[[Unit], Awaitable[None]]:
    """Waits for a future the loop completes later (a real wait, not a bare yield)."""
    async def handler(unit: Unit) -> None:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        loop.call_soon(done.set_result, None)
        await done
        f(unit)
    return handler


def _half(f: Callable[[Unit], None]) -> Callable[[Unit], Awaitable[None]]:
    """Changes the unit, waits, changes it again."""
    async def handler(unit: Unit) -> None:
        f(unit)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    return handler


WRAPS: dict[str, Wrap] = {"sleep0": _sleep0, "no_wait": _no_wait, "future": _future,
                          "half": _half}


def _log(unit: Unit, what: str) -> None:
    unit.context.setdefault("log", []).append(what)


def kit(wrap: Wrap) -> hs.Rewriter:
    """A rewriter with a handler of every kind (element, end tag, text, comments, doctype,
    document end), each changing the output, each wrapped by ``wrap``."""
    rw = hs.Rewriter()

    def element(el: hs.Element) -> None:
        n = len(el.context.setdefault("log", []))
        _log(el, f"el:{el.tag_name}")
        el.set_attribute("data-n", str(n))
        if el.tag_name in ("p", "a", "li"):
            el.before("<!--b-->", html=True)
            el.prepend("[")
            el.append("]")
            el.after("~")
        else:
            el.before("in;")       # (letters after a seam: '&not' before it must stay '&not')
        if el.can_have_content:
            el.on_end_tag(wrap(end_tag))

    def end_tag(tag: hs.EndTag) -> None:
        _log(tag, f"end:{tag.name}")
        if tag.name in ("div", "b"):
            tag.before("<i>e</i>", html=True)
            tag.after("!")

    def text(chunk: hs.TextChunk) -> None:
        _log(chunk, "text")
        if chunk.text:
            chunk.replace(chunk.text.upper())
        if chunk.last_in_text_node:
            chunk.after("|")

    def comment(c: hs.Comment) -> None:
        _log(c, "comment")
        c.text = c.text.replace("-", "=") + "!"

    def doctype(d: hs.Doctype) -> None:
        _log(d, f"doctype:{d.name}")

    def end(e: hs.DocumentEnd) -> None:
        e.append(f"<!--{len(e.context.get('log', []))}-->", html=True)

    rw.on("*", element=wrap(element))
    rw.on("p, li, b, title", text=wrap(text))
    rw.on_document(comments=wrap(comment), doctype=wrap(doctype), end=wrap(end))
    return rw


async def afeed(rw: hs.Rewriter, chunks: Iterable[bytes],
                context: dict[str, Any] | None = None) -> bytes:
    s = rw.astream(context=context)
    out = [await s.feed(c) for c in chunks]
    out.append(await s.close())
    return b"".join(out)


DOC = (b"<!DOCTYPE html><title>T</title><div id=a><p>one <b>two</b> three</p><!-- c -->"
       b"<ul><li>x<li>y\xc3\xa9</ul><a href=/>link</a><img src=i.png><p>end</div><p>tail")


# ---------------------------------------------------------------------- async == sync


@pytest.mark.parametrize("mode", sorted(WRAPS))
def test_async_equals_sync_every_chunking(mode: str) -> None:
    sync_rw = kit(_sync)
    async_rw = kit(WRAPS[mode])

    async def run() -> None:
        for chunks in chunkings(DOC, random_splits=6):
            want_ctx: dict[str, Any] = {}
            got_ctx: dict[str, Any] = {}
            want = feed_bytes(lambda c=want_ctx: sync_rw.stream(context=c), chunks)
            got = await afeed(async_rw, chunks, got_ctx)
            assert got == want, chunks
            assert got_ctx["log"] == want_ctx["log"]
    asyncio.run(run())


@pytest.mark.parametrize("mode", ["sleep0", "future"])
def test_async_equals_sync_corpus(mode: str) -> None:
    data = (corpus_dir() / "cloudflare.com.html").read_bytes()
    sync_rw = kit(_sync)
    async_rw = kit(WRAPS[mode])

    async def run() -> None:
        for chunks in chunkings(data, single_bytes=False, random_splits=2, split_samples=2):
            assert await afeed(async_rw, chunks) == feed_bytes(sync_rw.stream, chunks)
    asyncio.run(run())


SLEEP0_KIT = kit(_sleep0)
NO_WAIT_KIT = kit(_no_wait)
SYNC_KIT = kit(_sync)


@settings(deadline=None)        # (threads switching on a loaded machine)
@given(html_documents(), st.data())
def test_async_equals_sync_hypothesis(doc: bytes, data: st.DataObject) -> None:
    chunks = data.draw(chunked(doc))
    want = feed_bytes(SYNC_KIT.stream, chunks)

    async def run() -> None:
        assert await afeed(SLEEP0_KIT, chunks) == want
        assert await afeed(NO_WAIT_KIT, chunks) == want
    asyncio.run(run())


def test_arewrite_and_rewrite_aiter_equal_sync() -> None:
    sync_rw = kit(_sync)
    async_rw = kit(_sleep0)
    text = DOC.decode("utf-8")

    async def chunks_of(chunks: list[bytes]) -> Any:
        for c in chunks:
            yield c

    async def run() -> None:
        assert await async_rw.arewrite(text) == sync_rw.rewrite(text)
        assert await async_rw.arewrite(DOC) == sync_rw.rewrite(DOC)
        for chunks in chunkings(DOC, random_splits=3):
            got = b"".join([out async for out in async_rw.rewrite_aiter(chunks_of(chunks))])
            assert got == feed_bytes(sync_rw.stream, chunks)
    asyncio.run(run())


# ---------------------------------------------------------------------- ordering


def test_order_on_element_end_tag_and_split_text() -> None:
    """Async and sync handlers on one element, on its end tag and on text cut across chunks run
    in document and registration order, each async one finished before the next starts."""
    running: list[str] = []

    def handler(name: str, wait: bool) -> Callable[[Unit], Any]:
        if not wait:
            def sync(unit: Unit) -> None:
                assert not running, (name, running)
                _log(unit, name)
            return sync

        async def coro(unit: Unit) -> None:
            assert not running, (name, running)
            running.append(name)
            await asyncio.sleep(0)
            await asyncio.sleep(0.001)
            running.remove(name)
            _log(unit, name)
        return coro

    def on_end(name: str, wait: bool) -> Callable[[hs.Element], Any]:
        inner = handler(name, wait)

        def register(el: hs.Element) -> None:
            el.on_end_tag(inner)
        if not wait:
            return register

        async def register_async(el: hs.Element) -> None:
            await asyncio.sleep(0)
            el.on_end_tag(inner)
        return register_async

    rw = hs.Rewriter()
    rw.on("p", element=handler("e1", True))
    rw.on("p", element=handler("e2", False))
    rw.on("p", element=handler("e3", True))
    rw.on("p", text=handler("t1", True))
    rw.on("p", text=handler("t2", False))
    rw.on("em", element=on_end("end-em", True))
    rw.on_document(end=handler("doc-end", True))
    doc = b"<p>some text here<em>x</em> more</p>"

    async def run() -> None:
        for chunks in chunkings(doc, random_splits=4):
            ctx: dict[str, Any] = {}
            await afeed(rw, chunks, ctx)
            log = ctx["log"]
            assert log[:3] == ["e1", "e2", "e3"]
            texts = [x for x in log if x.startswith("t")]
            assert texts == ["t1", "t2"] * (len(texts) // 2)
            assert log.index("end-em") > log.index("t1")
            assert log[-1] == "doc-end"
            assert not running
    asyncio.run(run())


def test_parser_paused_while_handler_waits() -> None:
    """Nothing after the pending unit is tokenised until its handler is done."""
    seen: list[str] = []

    async def slow(el: hs.Element) -> None:
        seen.append("slow-start")
        await asyncio.sleep(0.001)
        seen.append("slow-end")

    def fast(el: hs.Element) -> None:
        seen.append(el.tag_name)

    rw = hs.Rewriter().on("a", element=slow).on("b", element=fast)

    async def run() -> None:
        for chunks in chunkings(b"<a>1</a><b>2</b>", random_splits=3):
            seen.clear()
            await afeed(rw, chunks)
            assert seen == ["slow-start", "slow-end", "b"]
    asyncio.run(run())


# ---------------------------------------------------------------------- flushing


def test_output_before_the_pending_unit_comes_out_before_the_wait() -> None:
    """While a handler waits on an event the test controls, everything before its element has
    reached the consumer (through feed_iter), not held back until the handler is done."""
    doc = b"<p>before &amp; more</p><a href=x>link</a><p>after</p>"
    at = doc.index(b"<a")

    async def one(chunks: list[bytes]) -> None:
        waiting = asyncio.Event()
        gate = asyncio.Event()
        out = bytearray()

        async def wait_for_gate(el: hs.Element) -> None:
            waiting.set()
            await gate.wait()
            el.set_attribute("href", "y")

        async def watcher() -> None:
            await waiting.wait()
            if bytes(out) != doc[:at]:
                gate.set()      # (to fail below, not hang)
            assert bytes(out) == doc[:at], (bytes(out), chunks)  # (the handler waits)
            gate.set()

        rw = hs.Rewriter().on("a", element=wait_for_gate)
        watch = asyncio.create_task(watcher())
        s = rw.astream()
        for chunk in chunks:
            async for piece in s.feed_iter(chunk):
                out.extend(piece)
        out.extend(await s.close())
        await watch
        assert bytes(out) == doc.replace(b"href=x", b'href="y"')

    async def run() -> None:
        for chunks in chunkings(doc, random_splits=4):
            await one(chunks)
    asyncio.run(run())


def test_rewrite_aiter_yields_before_the_wait() -> None:
    gate = asyncio.Event()

    async def wait_for_gate(el: hs.Element) -> None:
        await gate.wait()
        el.append("!")

    rw = hs.Rewriter().on("b", element=wait_for_gate)
    doc = [b"<p>first</p>", b"<b>x</b>", b"<i>y</i>"]

    async def source() -> Any:
        for c in doc:
            yield c

    async def run() -> None:
        pieces = []
        async with contextlib.aclosing(rw.rewrite_aiter(source())) as outs:
            async for piece in outs:
                pieces.append(piece)
                if len(pieces) == 1:
                    assert piece == b"<p>first</p>"
                    assert not gate.is_set()
                    gate.set()
        assert b"".join(pieces) == b"<p>first</p><b>x!</b><i>y</i>"
    asyncio.run(run())


# ---------------------------------------------------------------------- lifetime


def test_unit_expires_when_its_coroutine_finishes() -> None:
    kept: list[hs.Element] = []
    later: list[asyncio.Task[None]] = []
    errors: list[BaseException] = []

    async def touch_later(el: hs.Element) -> None:
        await asyncio.sleep(0.001)
        try:
            el.set_attribute("late", "1")
        except hs.UnitExpired as exc:
            errors.append(exc)

    async def handler(el: hs.Element) -> None:
        kept.append(el)
        await asyncio.sleep(0)
        el.set_attribute("in", "1")       # (still live: its coroutine runs)
        later.append(asyncio.create_task(touch_later(el)))

    rw = hs.Rewriter().on("a", element=handler)

    async def run() -> None:
        for chunks in chunkings(b"<a>x</a><b>y</b>", random_splits=3):
            kept.clear()
            later.clear()
            errors.clear()
            out = await afeed(rw, chunks)
            await asyncio.gather(*later)
            assert out == b'<a in="1">x</a><b>y</b>'
            assert len(errors) == 1
            assert "async handler: finished" in str(errors[0])
            with pytest.raises(hs.UnitExpired):
                kept[0].append("z")
    asyncio.run(run())


# ---------------------------------------------------------------------- errors, cancellation


def test_handler_exception_fails_the_stream() -> None:
    async def boom(el: hs.Element) -> None:
        await asyncio.sleep(0)
        raise ValueError("bad element")

    rw = hs.Rewriter().on("b", element=boom)

    async def run() -> None:
        for chunks in chunkings(b"<a>1</a><b>2</b><c>", random_splits=3):
            s = rw.astream()
            with pytest.raises(ValueError, match="bad element"):
                for c in chunks:
                    await s.feed(c)
                await s.close()
            with pytest.raises(hs.HtmlStreamError, match="failed earlier"):
                await s.feed(b"<p>")
    asyncio.run(run())


def _fiber_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "htmlstream-fiber")


def test_cancelling_the_consumer_cancels_the_handler_and_leaves_no_task() -> None:
    async def run() -> None:
        started = asyncio.Event()
        cancelled: list[bool] = []

        async def forever(el: hs.Element) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        rw = hs.Rewriter().on("b", element=forever)
        streams = []
        for chunks in chunkings(b"<a>1</a><b>2</b>", random_splits=2, single_bytes=False):
            started.clear()
            s = rw.astream()
            streams.append(s)

            async def consume(s: hs.AsyncRewriterStream = s,
                              chunks: list[bytes] = chunks) -> None:
                for c in chunks:
                    await s.feed(c)
                await s.close()

            task = asyncio.create_task(consume())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            with pytest.raises(hs.HtmlStreamError):
                await s.feed(b"x")
        assert len(cancelled) == len(streams)
        assert asyncio.all_tasks() == {asyncio.current_task()}
        # every fiber is back in the pool, idle (at most 16 threads kept)
        assert _fiber_threads() <= 16

    asyncio.run(run())


def test_closing_the_iterator_at_a_wait_fails_the_stream_and_frees_the_engine() -> None:
    async def waits(el: hs.Element) -> None:
        await asyncio.Event().wait()

    rw = hs.Rewriter().on("b", element=waits)

    async def run() -> None:
        s = rw.astream()
        pieces = s.feed_iter(b"<a>1</a><b>2</b>")
        assert await pieces.__anext__() == b"<a>1</a>"
        await pieces.aclose()
        with pytest.raises(hs.HtmlStreamError):
            await s.close()
        assert asyncio.all_tasks() == {asyncio.current_task()}
    asyncio.run(run())


# ---------------------------------------------------------------------- concurrency


def test_one_hundred_streams_on_one_loop() -> None:
    docs = [b"<div>" + b"".join(b"<p>%d <b>%d</b></p>" % (i, j) for j in range(i % 7 + 1))
            + b"</div>" for i in range(100)]

    def make(wait: bool) -> hs.Rewriter:
        async def element(el: hs.Element) -> None:
            rng = el.context["rng"]
            await asyncio.sleep(rng.random() / 1000)
            el.set_attribute("n", str(el.context["i"]))

        async def text(t: hs.TextChunk) -> None:
            await asyncio.sleep(t.context["rng"].random() / 2000)
            t.replace(t.text[::-1])

        def el_sync(el: hs.Element) -> None:
            el.set_attribute("n", str(el.context["i"]))

        def text_sync(t: hs.TextChunk) -> None:
            t.replace(t.text[::-1])

        return hs.Rewriter().on("p, b", element=element if wait else el_sync,
                                text=text if wait else text_sync)

    async def one(rw: hs.Rewriter, i: int) -> bytes:
        chunks = chunkings(docs[i], random_splits=1, two_way=False, single_bytes=False)[-1]
        return await afeed(rw, chunks, {"i": i, "rng": random.Random(i)})

    async def run() -> list[bytes]:
        rw = make(True)
        return await asyncio.gather(*(one(rw, i) for i in range(100)))

    got = asyncio.run(run())
    sync_rw = make(False)
    for i in range(100):
        chunks = chunkings(docs[i], random_splits=1, two_way=False, single_bytes=False)[-1]
        assert got[i] == feed_bytes(lambda i=i: sync_rw.stream(context={"i": i}), chunks)


# ---------------------------------------------------------------------- entry points


def test_sync_entry_points_refuse_async_handlers(tmp_path: Any) -> None:
    async def lookup(el: hs.Element) -> None:
        await asyncio.sleep(0)

    rw = hs.Rewriter().on("a", element=lookup)
    calls: list[Callable[[], Any]] = [
        lambda: rw.rewrite("<a>"), lambda: rw.rewrite(b"<a>"), rw.stream,
        lambda: rw.rewrite_iter([b"<a>"]),
        lambda: rw.rewrite_file(tmp_path / "in", tmp_path / "out"),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=r"lookup \(on\('a'\)\) is async.*astream\(\)"):
            call()


def test_async_handler_objects_and_end_handlers_are_detected() -> None:
    class Handlers:
        async def element(self, el: hs.Element) -> None:
            el.set_attribute("k", "1")

    class CallMe:
        async def __call__(self, end: hs.DocumentEnd) -> None:
            await asyncio.sleep(0)
            end.append("!")

    rw = hs.Rewriter().on("a", Handlers()).on_document(end=CallMe())
    with pytest.raises(TypeError, match=r"element .*CallMe"):
        rw.rewrite("<a>")
    for chunks in chunkings(b"<a>x</a>"):
        assert asyncio.run(afeed(rw, chunks)) == b'<a k="1">x</a>!'


def test_sync_stream_refuses_an_awaitable_returned_at_run_time() -> None:
    """An async end-tag handler registered by a sync handler: the sync stream says so, and the
    coroutine is closed (no 'never awaited' warning)."""
    async def end(tag: hs.EndTag) -> None:
        tag.after("!")

    rw = hs.Rewriter().on("a", element=lambda el: el.on_end_tag(end))
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # (a coroutine never awaited would warn)
        for chunks in chunkings(b"<a>x</a>", random_splits=2):
            with pytest.raises(TypeError, match=r"handler .*end is async"):
                feed_bytes(rw.stream, chunks)


def test_sync_only_rewriter_on_astream_runs_inline() -> None:
    async def no_wait(tag: hs.EndTag) -> None:
        tag.after("!")

    async def waits(tag: hs.EndTag) -> None:
        await asyncio.sleep(0)

    ok = hs.Rewriter().on("a", element=lambda el: el.on_end_tag(no_wait))
    bad = hs.Rewriter().on("a", element=lambda el: el.on_end_tag(waits))

    async def run() -> None:
        for chunks in chunkings(b"<a>x</a><b>", random_splits=2):
            assert await afeed(ok, chunks) == b"<a>x</a>!<b>"
            with pytest.raises(TypeError, match="make the handler that registers it"):
                await afeed(bad, chunks)
    asyncio.run(run())
    assert asyncio.run(afeed(hs.Rewriter(), [DOC])) == DOC


def test_overlapping_calls_and_feeding_from_a_handler_are_refused() -> None:
    async def run() -> None:
        s: list[hs.AsyncRewriterStream] = []
        errors: list[BaseException] = []

        async def feeds_itself(el: hs.Element) -> None:
            await asyncio.sleep(0)
            try:
                await s[0].feed(b"<p>")
            except RuntimeError as exc:
                errors.append(exc)

        rw = hs.Rewriter().on("a", element=feeds_itself)
        s.append(rw.astream())
        assert await s[0].feed(b"<a>x</a>") + await s[0].close() == b"<a>x</a>"
        assert "still running" in str(errors[0])
    asyncio.run(run())


# ---------------------------------------------------------------------- context, stages, debug


def test_context_and_contextvars() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    async def handler(el: hs.Element) -> None:
        await asyncio.sleep(0)
        el.set_attribute("v", var.get())
        el.set_attribute("c", el.context["who"])

    def sync(el: hs.Element) -> None:
        el.set_attribute("s", var.get())

    rw = hs.Rewriter().on("a", element=handler).on("a", element=sync)

    async def run() -> None:
        var.set("request-1")
        for chunks in chunkings(b"<a>x</a>", random_splits=2):
            s = rw.astream(context={"who": "me"})
            out = b"".join([await s.feed(c) for c in chunks]) + await s.close()
            assert out == b'<a v="request-1" c="me" s="request-1">x</a>'
            assert s.context == {"who": "me"}
    asyncio.run(run())


def test_output_stages_see_the_output_before_the_wait() -> None:
    class Upper:
        def feed(self, data: bytes) -> bytes:
            return data.upper()

        def close(self) -> bytes:
            return b""

    async def waits(el: hs.Element) -> None:
        await asyncio.sleep(0.001)
        el.set_attribute("w", "1")

    rw = hs.Rewriter().on("b", element=waits).pipe(lambda codec, ctx: Upper())

    async def run() -> None:
        for chunks in chunkings(b"<a>1</a><b>2</b>", random_splits=3):
            assert await afeed(rw, chunks) == b'<A>1</A><B W="1">2</B>'
    asyncio.run(run())


def test_debug_mode_runs_coroutines_on_the_loop_thread() -> None:
    threads: set[int] = set()

    async def handler(el: hs.Element) -> None:
        threads.add(threading.get_ident())
        await asyncio.sleep(0.001)      # (call_later: checked against the loop's thread)
        el.set_attribute("d", "1")

    rw = hs.Rewriter().on("a", element=handler)

    async def run() -> None:
        for chunks in chunkings(b"<a>x</a>", random_splits=2):
            assert await afeed(rw, chunks) == b'<a d="1">x</a>'

    asyncio.run(run(), debug=True)
    assert threads == {threading.get_ident()}


def test_an_abandoned_stream_is_collected() -> None:
    async def run() -> None:
        rw = hs.Rewriter().on("a", element=_sleep0(lambda el: None))
        s = rw.astream()
        await s.feed(b"<a>")
        del s
        gc.collect()
    asyncio.run(run())


def test_a_feed_closed_mid_wait_fails_the_stream_and_frees_the_engine() -> None:
    """A feed() coroutine dropped while its handler waits (closed, as the garbage collector
    does): the handler is closed, the engine unwinds, the stream is failed."""
    closed: list[bool] = []

    async def waits(el: hs.Element) -> None:
        try:
            await asyncio.Event().wait()
        except GeneratorExit:
            closed.append(True)
            raise

    rw = hs.Rewriter().on("b", element=waits)

    async def run() -> None:
        s = rw.astream()
        feed = s.feed(b"<a>1</a><b>2</b>")
        assert feed.send(None) is not None      # (the handler's future: it waits)
        feed.close()
        assert closed == [True]
        with pytest.raises(hs.HtmlStreamError, match="consumer stopped"):
            await s.close()
        assert asyncio.all_tasks() == {asyncio.current_task()}
    asyncio.run(run())


# ---------------------------------------------------------------------- content from iterables


def test_content_from_bytes_and_iterables() -> None:
    """Every content method takes str, UTF-8 bytes, or an iterable of str and bytes chunks (a
    character may be split between chunks); the output is that of the joined str."""
    def handlers(content: Callable[[], Any]) -> hs.Rewriter:
        rw = hs.Rewriter()

        def element(el: hs.Element) -> None:
            el.before(content())
            el.after(content())
            el.prepend(content())
            el.append(content())
            el.on_end_tag(lambda t: (t.before(content()), t.after(content())))

        rw.on("p", element=element)
        rw.on("b", element=lambda el: el.set_inner_content(content()))
        rw.on("i", element=lambda el: el.replace(content()))
        rw.on("p", text=lambda t: t.after(content()) if t.last_in_text_node else None)
        rw.on_document(comments=lambda c: c.replace(content()),
                       end=lambda e: e.append(content()))
        return rw

    doc = b"<p>x<b>y</b><i>z</i><!--c--></p>"
    text = "é<&>"
    forms: list[Callable[[], Any]] = [
        lambda: text.encode(), lambda: bytearray(text.encode()),
        lambda: [b"\xc3", b"\xa9<", "&", b">"], lambda: iter(["é", "", b"<&>"]),
        lambda: (bytes([c]) for c in text.encode()),
    ]
    want_rw = handlers(lambda: text)
    for form in forms:
        rw = handlers(form)
        for chunks in chunkings(doc, random_splits=2):
            assert feed_bytes(rw.stream, chunks) == feed_bytes(want_rw.stream, chunks)
    empty = handlers(lambda: [])
    assert empty.rewrite(doc) == handlers(lambda: "").rewrite(doc)


def test_content_errors_name_the_method() -> None:
    cases: list[tuple[Callable[[hs.Element], Any], type[Exception], str]] = [
        (lambda el: el.append([b"ok", b"\xff"]), ValueError,
         r"Element\.append\(\): the content is not valid UTF-8"),
        (lambda el: el.before(b"\xc3"), ValueError,
         r"Element\.before\(\): the content ends inside a UTF-8 character"),
        (lambda el: el.prepend([b"\xc3", "x"]), ValueError,
         r"Element\.prepend\(\): a str chunk follows bytes"),
        (lambda el: el.set_inner_content([1]), TypeError,
         r"Element\.set_inner_content\(\): content chunks must be str or bytes"),
        (lambda el: el.replace(3), TypeError, r"Element\.replace\(\): content must be str"),
    ]
    for handler, error, message in cases:
        rw = hs.Rewriter().on("p", element=handler)
        for chunks in chunkings(b"<p>x</p>", random_splits=1):
            with pytest.raises(error, match=message):
                feed_bytes(rw.stream, chunks)
    # a closer split between two chunks is found as in one string
    rw = hs.Rewriter().on("script", element=lambda el: el.append(["</scr", "ipt>"]))
    with pytest.raises(ValueError, match="must not contain"):
        rw.rewrite(b"<script>x</script>")

    async def chunks() -> Any:
        yield "x"

    rw = hs.Rewriter().on("p", element=lambda el: el.append(chunks()))
    with pytest.raises(TypeError, match=r"Element\.append\(\): content from an async "
                                        r"iterable needs an async stream"):
        rw.rewrite(b"<p>")


def test_content_from_async_iterables() -> None:
    """On an async stream, content may be an async iterable of str and bytes chunks (a
    sub-request's body, another rewriter's output): the engine waits for it at the unit, and
    the output is that of the joined str, in every chunking."""
    text = "é<&>"

    async def source(wait: bool) -> Any:
        for chunk in (b"\xc3", b"\xa9<", "&", b">"):
            if wait:
                await asyncio.sleep(0)
            yield chunk

    def handlers(content: Callable[[], Any], wrap: Wrap) -> hs.Rewriter:
        rw = hs.Rewriter()

        def element(el: hs.Element) -> None:
            el.before(content())
            el.after(content())
            el.prepend(content())
            el.append(content(), html=True)
            el.on_end_tag(wrap(lambda t: (t.before(content()), t.after(content()))))

        rw.on("p", element=wrap(element))
        rw.on("b", element=wrap(lambda el: el.set_inner_content(content())))
        rw.on("i", element=wrap(lambda el: el.replace(content())))
        rw.on("p", text=wrap(lambda t: t.after(content()) if t.last_in_text_node else None))
        rw.on_document(comments=wrap(lambda c: c.replace(content())),
                       end=wrap(lambda e: e.append(content())))
        return rw

    doc = b"<p>x<b>y</b><i>z</i><!--c--></p>"
    want_rw = handlers(lambda: text, _sync)

    async def run() -> None:
        for wait, wrap in ((True, _sleep0), (False, _sleep0), (False, _sync)):
            rw = handlers(lambda w=wait: source(w), wrap)
            for chunks in chunkings(doc, random_splits=2):
                assert await afeed(rw, chunks) == feed_bytes(want_rw.stream, chunks)
        # content that waits, given by a rewriter with only sync handlers (its async streams
        # run inline): the handler must be async
        rw = handlers(lambda: source(True), _sync)
        with pytest.raises(TypeError, match=r"Element\.before\(\) content waits.*async def"):
            await afeed(rw, [doc])

        async def bad() -> Any:
            yield b"\xff"

        rw = hs.Rewriter().on("p", element=lambda el: el.append(bad()))
        with pytest.raises(ValueError, match=r"Element\.append\(\): the content is not valid"):
            await afeed(rw, [doc])

        async def broken() -> Any:
            yield "x"
            await asyncio.sleep(0)
            raise OSError("the sub-request broke off")

        rw = hs.Rewriter().on("p", element=_sleep0(lambda el: el.append(broken())))
        s = rw.astream()
        with pytest.raises(OSError, match="broke off"):
            await s.feed(doc)
        with pytest.raises(hs.HtmlStreamError):
            await s.close()
    asyncio.run(run())
