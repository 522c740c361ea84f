"""Edge Side Includes: a page assembled from fragments fetched concurrently, in document order.

``recipes.esi(fetch)`` makes an :class:`Esi` whose :meth:`Esi.rewrite_aiter` takes a page (bytes,
str or an async iterable of chunks) and its URL, and yields the assembled page as it streams:

- ``<esi:include src alt onerror>`` is replaced by the fragment ``fetch`` gives for ``src``
  (resolved against the URL of the document it is in); if that fails, by the fragment of ``alt``;
  if that fails too, the tag is removed when it says ``onerror="continue"``, otherwise the
  ``on_error`` policy decides: ``"continue"`` (remove it, Varnish's default), ``"fail"`` (the
  stream raises :class:`EsiError`) or a callable given the :class:`EsiError` that returns the
  replacement (inserted as it is, not processed).
- ``<esi:remove>…</esi:remove>`` is removed with its content; ``<esi:comment …/>`` is removed;
  ``<!--esi …-->`` is unwrapped: its content is processed as markup (includes in it are fetched).
- Fragments are processed the same way, up to ``max_depth`` levels; past that, and past
  ``max_includes`` includes in one assembled page (the page and all its fragments), an include
  fails (its ``alt`` is not tried).

Design.  The tags are read by an ordinary :class:`~htmlstream.Rewriter` with ``esi_tags=True``
(so ``<esi:include>`` never opens an element) and sync handlers only: the engine never waits.
An include's handler starts the fragment's task at once (a fetch waits for one of the page's
``concurrency`` slots) and replaces the tag by a marker made of a random 128-bit nonce, unique to
the page and never in the output.  The producer of each document (the page, a fragment, the
content of an ``<!--esi-->``) feeds its input to a stream of that rewriter and cuts the output at
the markers into a queue: bytes, then the include's task, then bytes...  The consumer reads the
page's queue in order: bytes leave at once, and at an include it reads that fragment's queue (in
the same way, recursively) before going on.  So every fetch starts when its tag streams past,
fetches run side by side, the output keeps document order, and everything before the first
pending include leaves at once.

Memory.  Each queue holds at most ``buffer_size`` bytes of output ahead of the consumer (then its
producer waits, and the page's input is read no further: backpressure).  A fragment's body is
read whole (up to ``max_fragment_size``, else it fails) before it is processed: a fragment
that fails after some of its bytes had been sent could no longer fall back to ``alt``.  The
concurrency slot is held for the fetch and the body's reading only, never while a queue is full,
so nested includes cannot wait on a slot their ancestors hold.  ``timeout`` bounds each fetch,
its body included.

Fragments are bytes in the page's ``encoding`` (``str`` is encoded to it).  ``fetch`` decides
what a failure is: any exception it raises (a non-2xx status should raise), a timeout or an
oversized body fails the fragment.  Closing the output iterator early cancels every task of the
page.  Not done: ``esi:try``, ``esi:choose``, ``esi:vars`` and variables, ``esi:inline``
(docs/guide/esi.md says why).
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
)
from typing import Any, Literal, TypeAlias
from urllib.parse import urljoin

from htmlstream import Comment, Element, Rewriter
from htmlstream.errors import check_callable, check_type

__all__ = ["Esi", "EsiError", "Fetch", "FragmentBody", "esi"]

#: What ``fetch`` gives for a URL: the fragment's body.
FragmentBody: TypeAlias = bytes | str | AsyncIterable[bytes | str]
#: ``fetch``: an async callable from an absolute URL to the fragment's body.
Fetch: TypeAlias = Callable[[str], Awaitable[FragmentBody]]
#: The ``on_error`` policy.
OnError: TypeAlias = Literal["continue", "fail"] | Callable[["EsiError"], bytes | str]

_WS = " \t\n\r\f"


class EsiError(Exception):
    """An include that failed: ``src`` (as written), ``url`` (resolved, or None), ``reason``
    (a short text) and the exception that caused it, if any (``__cause__``)."""

    def __init__(self, src: str | None, url: str | None, reason: str) -> None:
        super().__init__(f"ESI include {src!r} failed: {reason}")
        self.src = src
        self.url = url
        self.reason = reason


class _Queue:
    """A document's output ahead of the consumer: bytes and include jobs, in order, holding at
    most ``limit`` bytes (then ``put`` waits)."""

    def __init__(self, limit: int) -> None:
        self.items: deque[bytes | _Job] = deque()
        self.size = 0
        self.limit = limit
        self.done = False
        self.error: BaseException | None = None
        self.ready = asyncio.Event()
        self.space = asyncio.Event()

    async def put(self, item: bytes | _Job) -> None:
        while self.size >= self.limit:
            self.space.clear()
            await self.space.wait()
        self.items.append(item)
        if isinstance(item, bytes):
            self.size += len(item)
        self.ready.set()

    def finish(self, error: BaseException | None = None) -> None:
        self.done = True
        self.error = error
        self.ready.set()

    async def get(self) -> bytes | _Job | None:
        while not self.items:
            if self.done:
                if self.error is not None:
                    raise self.error
                return None
            self.ready.clear()
            await self.ready.wait()
        item = self.items.popleft()
        if isinstance(item, bytes):
            self.size -= len(item)
            self.space.set()
        return item


class _Job:
    """One include (or ``<!--esi-->``): its task fills ``queue`` with the processed fragment."""

    __slots__ = ("queue", "task")

    def __init__(self, queue: _Queue) -> None:
        self.queue = queue
        self.task: asyncio.Task[None] | None = None


class _Page:
    """The state of one assembled page: its slots, include count, marker and tasks."""

    def __init__(self, esi: Esi) -> None:
        self.esi = esi
        self.slots = asyncio.Semaphore(esi.concurrency)
        self.includes = 0
        self.marker = b"<esi-" + secrets.token_hex(16).encode() + b">"
        self.tasks: set[asyncio.Task[None]] = set()

    def start(self, job: _Job, coro: Any) -> _Job:
        task = asyncio.get_running_loop().create_task(coro)
        job.task = task
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return job

    def include(self, el: Element, base: str, depth: int) -> _Job:
        job = _Job(_Queue(self.esi.buffer_size))
        self.includes += 1
        src = el.get_attribute("src")
        alt = el.get_attribute("alt")
        onerror = (el.get_attribute("onerror") or "").strip().lower()
        reason = None
        if src is None:
            reason = "no src attribute"
        elif depth + 1 > self.esi.max_depth:
            reason = f"deeper than max_depth={self.esi.max_depth}"
        elif self.includes > self.esi.max_includes:
            reason = f"more than max_includes={self.esi.max_includes} in the page"
        return self.start(job, self._include(job, src, alt, onerror, base, depth, reason))

    def inline(self, content: bytes, base: str, depth: int) -> _Job:
        job = _Job(_Queue(self.esi.buffer_size))
        return self.start(job, self._produce(_once(content), base, depth, job.queue))

    async def _include(self, job: _Job, src: str | None, alt: str | None, onerror: str,
                       base: str, depth: int, reason: str | None) -> None:
        try:
            error: EsiError | None = None
            body: bytes | None = None
            url = None
            if reason is not None:
                error = EsiError(src, None, reason)
            else:
                for candidate in (src, alt):
                    if candidate is None:
                        continue
                    url = urljoin(base, candidate.strip())
                    try:
                        async with self.slots:
                            body = await asyncio.wait_for(self._read(url),
                                                          self.esi.timeout)
                        break
                    except Exception as exc:
                        if error is None:
                            error = EsiError(src, url, _describe(exc))
                            error.__cause__ = exc
            if body is not None:
                await self._produce(_once(body), url or base, depth + 1, job.queue)
                return
            assert error is not None
            replacement = b""
            policy = self.esi.on_error
            if onerror == "continue" or policy == "continue":
                pass
            elif policy == "fail":
                job.queue.finish(error)
                return
            elif callable(policy):
                content = policy(error)
                replacement = (content.encode(self.esi.encoding) if isinstance(content, str)
                               else bytes(content))
            if replacement:
                await job.queue.put(replacement)
            job.queue.finish()
        except BaseException as exc:
            job.queue.finish(exc)
            if not isinstance(exc, Exception):
                raise

    async def _read(self, url: str) -> bytes:
        body = await self.esi.fetch(url)
        limit = self.esi.max_fragment_size
        if isinstance(body, (bytes, bytearray, memoryview, str)):
            data = _encode(body, self.esi.encoding)
            if len(data) > limit:
                raise EsiError(None, url, f"larger than max_fragment_size={limit}")
            return data
        parts: list[bytes] = []
        size = 0
        try:
            async for chunk in body:
                data = _encode(chunk, self.esi.encoding)
                size += len(data)
                if size > limit:
                    raise EsiError(None, url, f"larger than max_fragment_size={limit}")
                parts.append(data)
        finally:
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                await aclose()      # (a timeout or an oversized body: its connection freed now)
        return b"".join(parts)

    async def _produce(self, chunks: AsyncIterator[bytes], base: str, depth: int,
                       out: _Queue) -> None:
        """Feed one document to the ESI rewriter and cut its output at the markers into
        ``out``."""
        jobs: deque[_Job] = deque()
        context: dict[str, Any] = {"esi": (self, base, depth, jobs)}
        stream = self.esi.rewriter.stream(context=context)
        carry = b""
        try:
            async for chunk in chunks:
                carry = await self._cut(carry + stream.feed(chunk), jobs, out, False)
            await self._cut(carry + stream.close(), jobs, out, True)
            out.finish()
        except BaseException as exc:
            out.finish(exc)
            if not isinstance(exc, Exception):
                raise

    async def _cut(self, data: bytes, jobs: deque[_Job], out: _Queue, final: bool) -> bytes:
        marker = self.marker
        while True:
            i = data.find(marker)
            if i < 0:
                break
            if i:
                await out.put(data[:i])
            await out.put(jobs.popleft())
            data = data[i + len(marker):]
        keep = 0
        if not final:
            # (a marker cut between two outputs: hold back what may be its start)
            for k in range(min(len(marker) - 1, len(data)), 0, -1):
                if data.endswith(marker[:k]):
                    keep = k
                    break
        if len(data) > keep:
            await out.put(data[:len(data) - keep])
        return data[len(data) - keep:] if keep else b""


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, EsiError):
        return exc.reason
    return f"{type(exc).__name__}: {exc}"


def _encode(chunk: bytes | bytearray | memoryview | str, encoding: str) -> bytes:
    if isinstance(chunk, str):
        return chunk.encode(encoding, "xmlcharrefreplace")
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        return bytes(chunk)
    raise TypeError(f"a fragment's chunks must be bytes or str, not {type(chunk).__name__}")


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _chunks(source: bytes | str | Iterable[bytes] | AsyncIterable[bytes | str],
                  encoding: str) -> AsyncIterator[bytes]:
    if isinstance(source, (bytes, bytearray, memoryview, str)):
        yield _encode(source, encoding)
    elif isinstance(source, AsyncIterable):
        async for chunk in source:
            yield _encode(chunk, encoding)
    else:
        for chunk in source:
            yield _encode(chunk, encoding)


def _state(unit: Element | Comment) -> tuple[_Page, str, int, deque[_Job]]:
    state: tuple[_Page, str, int, deque[_Job]] = unit.context["esi"]
    return state


def _on_include(el: Element) -> None:
    if el.context.get("esi.removing"):
        return      # (inside <esi:remove>: removed with it, never fetched)
    page, base, depth, jobs = _state(el)
    jobs.append(page.include(el, base, depth))
    el.replace(page.marker.decode("ascii"), html=True)


def _on_remove(el: Element) -> None:
    ctx = el.context
    ctx["esi.removing"] = ctx.get("esi.removing", 0) + 1
    el.remove()

    def end(_tag: Any) -> None:
        ctx["esi.removing"] -= 1

    el.on_end_tag(end)


def _on_comment_tag(el: Element) -> None:
    el.remove()


def _on_comment(c: Comment) -> None:
    text = c.text
    if not (text.startswith("esi") and (len(text) == 3 or text[3] in _WS)):
        return
    if c.context.get("esi.removing"):
        return
    page, base, depth, jobs = _state(c)
    jobs.append(page.inline(text[3:].encode(page.esi.encoding, "xmlcharrefreplace"),
                            base, depth))
    c.replace(page.marker.decode("ascii"), html=True)


class Esi:
    """Edge Side Includes processing (see the module docstring); made by :func:`esi`."""

    def __init__(self, fetch: Fetch, *, max_depth: int = 5, max_includes: int = 256,
                 concurrency: int = 16, timeout: float = 10.0, on_error: OnError = "continue",
                 encoding: str = "utf-8", buffer_size: int = 1 << 20,
                 max_fragment_size: int = 8 << 20) -> None:
        where = "recipes.esi()"
        check_callable(fetch, where, "fetch", "an async callable from a URL to a body")
        for name, value in (("max_depth", max_depth), ("max_includes", max_includes),
                            ("concurrency", concurrency), ("buffer_size", buffer_size),
                            ("max_fragment_size", max_fragment_size)):
            check_type(None if isinstance(value, bool) else value, int, where, name, "int")
        check_type(None if isinstance(timeout, bool) else timeout, (int, float), where,
                   "timeout", "a number of seconds")
        if not callable(on_error):
            check_type(on_error, str, where, "on_error", "'continue', 'fail' or a callable")
        check_type(encoding, str, where, "encoding", "str")
        if on_error not in ("continue", "fail") and not callable(on_error):
            raise ValueError(f"on_error must be 'continue', 'fail' or a callable, "
                             f"not {on_error!r}")
        if concurrency < 1 or max_depth < 0 or max_includes < 0 or buffer_size < 1:
            raise ValueError("concurrency and buffer_size must be at least 1, max_depth and "
                             "max_includes at least 0")
        self.fetch = fetch
        self.max_depth = max_depth
        self.max_includes = max_includes
        self.concurrency = concurrency
        self.timeout = timeout
        self.on_error = on_error
        self.encoding = encoding
        self.buffer_size = buffer_size
        self.max_fragment_size = max_fragment_size
        #: The rewriter that reads the ESI tags (sync handlers only; shared by all pages).
        self.rewriter = Rewriter(encoding=encoding, esi_tags=True)
        self.rewriter.on("esi\\:include", element=_on_include)
        self.rewriter.on("esi\\:remove", element=_on_remove)
        self.rewriter.on("esi\\:comment", element=_on_comment_tag)
        self.rewriter.on_document(comments=_on_comment)

    async def rewrite_aiter(
        self, source: bytes | str | Iterable[bytes] | AsyncIterable[bytes | str], url: str
    ) -> AsyncGenerator[bytes, None]:
        """The page ``source``, found at ``url`` (the base of relative ``src``), assembled:
        its bytes as they are decided.  Raises :class:`EsiError` with ``on_error="fail"``."""
        check_type(source, (bytes, bytearray, memoryview, str, AsyncIterable, Iterable),
                   "Esi.rewrite_aiter()", "source",
                   "bytes-like, str, or an (async) iterable of chunks")
        check_type(url, str, "Esi.rewrite_aiter()", "url", "str")
        page = _Page(self)
        root = _Queue(self.buffer_size)
        producer = _Job(root)
        page.start(producer, page._produce(_chunks(source, self.encoding), url, 0, root))
        try:
            async for data in _drain(root):
                yield data
        finally:
            tasks = list(page.tasks)
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

    async def rewrite(
        self, source: bytes | str | Iterable[bytes] | AsyncIterable[bytes | str], url: str
    ) -> bytes:
        """:meth:`rewrite_aiter`'s output joined."""
        return b"".join([data async for data in self.rewrite_aiter(source, url)])


async def _drain(queue: _Queue) -> AsyncIterator[bytes]:
    while (item := await queue.get()) is not None:
        if isinstance(item, bytes):
            yield item
        else:
            async for data in _drain(item.queue):
                yield data


def esi(fetch: Fetch, *, max_depth: int = 5, max_includes: int = 256, concurrency: int = 16,
        timeout: float = 10.0, on_error: OnError = "continue", encoding: str = "utf-8",
        buffer_size: int = 1 << 20, max_fragment_size: int = 8 << 20) -> Esi:
    """Edge Side Includes with concurrent fetches (see the module docstring and
    docs/guide/esi.md): ``await recipes.esi(fetch).rewrite(page, url)``, or
    ``rewrite_aiter`` to stream.

    ``fetch(url)``: an async callable giving a fragment's body (bytes, str or an async iterable
    of them) for an absolute URL; it raises for a failed fetch (a non-2xx status too).
    ``max_depth``: levels of fragments in fragments; ``max_includes``: includes per assembled
    page; ``concurrency``: fetches at a time per page; ``timeout``: seconds per fetch, body
    included; ``on_error``: ``"continue"``, ``"fail"`` or a callable from the
    :class:`EsiError` to replacement content.  ``buffer_size``: output held ahead of the
    consumer per document; ``max_fragment_size``: the largest fragment body."""
    return Esi(fetch, max_depth=max_depth, max_includes=max_includes, concurrency=concurrency,
               timeout=timeout, on_error=on_error, encoding=encoding, buffer_size=buffer_size,
               max_fragment_size=max_fragment_size)
