"""Async streams: ``async def`` handlers, the Workers programming model (``Rewriter.astream()``).

Semantics (those of the Workers ``HTMLRewriter``, read from workerd's source; the guide's
"Async handlers" section puts them side by side):

- Handlers run one at a time, in document order; several on one unit in registration order,
  each awaited before the next starts.  The engine is paused at the unit while a handler
  waits: nothing after that unit is tokenised until the handler is done.
- The output decided before the pending unit leaves before the wait: :meth:`feed_iter` yields it
  before it waits (Workers holds it in a buffer until the handler is done).
- A unit is valid until its handler's coroutine finishes; afterwards, using it raises
  :class:`~htmlstream.UnitExpired` and changes nothing.
- A handler's exception, or its cancellation, fails the stream, as a sync handler's exception
  does; cancelling the consumer (the task awaiting ``feed``) cancels the pending handler.
- Handlers run in the :mod:`contextvars` context of the task that opened the stream (Workers:
  the async context captured at ``transform()``): a copy of it taken by ``astream()``, and each
  async handler's coroutine in a copy of that, as a task would.  (A rewriter with only sync
  handlers runs them inline, in the context of the task calling ``feed``, as a sync stream.)

Design: one engine, paused at a unit boundary.  The engine (lexer, simulator, sink, units) is
compiled code whose call stack runs from ``feed()`` down to the handler call; pausing it means
keeping that stack while the event loop runs other tasks.  Python's standard library has no
stackful coroutine but one: a thread used as a fiber.  An async stream of a rewriter with async
handlers runs each ``feed``/``close`` of its (ordinary, sync) :class:`RewriterStream` on a fiber
thread taken from a small pool, and the event loop's thread blocks until the fiber either
finishes the call or reaches a handler that waits.  The two threads never run at the same time
(each switch hands over control: ``_Fiber.switch_in``/``switch_out``), so for the handlers this
is one thread of control, as in workerd, which runs lol-html on a fiber the same way.

At a unit, the sink calls the handler; when the handler returns something other than None
(sync handlers return None: that check is all they pay), the sink hands it to the stream's
awaiter (``DocumentSink.awaiter``), which runs on the fiber:

1. The coroutine is started at once with ``send(None)``.  If it finishes without waiting (an
   ``async def`` that awaits nothing, or only things already done), the engine goes on with no
   switch at all: a never-suspending async handler costs a coroutine and a ``send``.
2. If it yields (it waits for a future), the awaiter takes the output decided before the unit
   (``RewriterStream._take_before``: the input up to the unit's first byte, through the output
   stages) and switches to the loop's thread with the coroutine, what it yielded and that
   output.  The fiber, and with it the engine, stays paused inside the handler call.
3. On the loop's thread, ``feed_iter`` yields the output, then drives the coroutine to its end
   as ``await`` would (``_Wait``: what it yields goes up to the task, what the task sends or
   throws goes down to it), and switches back to the fiber, with the exception if the coroutine
   raised one: the awaiter raises it inside the handler call, which fails the stream as a sync
   handler's exception does.  Otherwise the handler call returns and the engine goes on, to
   the next handler of the unit, the unit's output, the next token.

The first step of a coroutine runs on the fiber, with the event loop set as that thread's
running loop (the loop's thread is blocked inside the task's step meanwhile, so the loop is not
touched by two threads at once); the steps after its first wait run on the loop's thread.  Sync
handlers of such a stream run on the fiber too.  In asyncio's debug mode, which checks that the
loop is called from its own thread, every step of a coroutine runs on the loop's thread (one more
switch per async handler call).

Content from an async iterable (``el.append(source)`` on an async stream) goes the same way:
the content method keeps it as a pending part, and once the unit's handlers have run the sink
(``units.resolve_parts``) hands the awaiter a coroutine that reads it to its end; the awaiter
returns the coroutine's value (the chunks), which are joined and checked as any content.

``await feed()`` returns all of a chunk's output at once; ``feed_iter()`` (and
``rewrite_aiter``, and the integrations, through :class:`EngineRunner`) give the output before
each wait as soon as it is decided.  At the end of the input nothing is taken early: the end of
the output may still be rewritten where content is added there.

A rewriter with only sync handlers never takes a fiber: its async stream runs the engine inline,
on the loop's thread, and costs what the sync stream costs.  There, a handler that returns an
awaitable anyway (an async end-tag handler registered by a sync element handler) is started with
``send(None)``; if it must wait, the stream fails with a TypeError that says to declare an async
handler on the rewriter.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import AsyncGenerator, Callable, Generator, MutableMapping
from types import CoroutineType
from typing import Any, Final

from htmlstream._engine.stream import RewriterStream
from htmlstream.errors import HtmlStreamError

__all__ = ["AsyncRewriterStream", "EngineRunner"]

# (asyncio's own way to make a loop the running loop of a thread; public in asyncio.events)
_set_running_loop: Final = asyncio.events._set_running_loop

#: What a fiber's call ends with: (_DONE, output) or (_ERROR, exception); in between, each wait
#: is (_WAIT, output before the unit, the awaitable's iterator, what it yielded, its context).
_DONE: Final = "done"
_ERROR: Final = "error"
_WAIT: Final = "wait"
#: (the coroutine has not been started: in debug mode it is started on the loop's thread)
_NOT_STARTED: Final = object()


class _Fiber:
    """A thread used as a fiber: it runs only while the thread that switched to it waits."""

    __slots__ = ("_back", "_go", "_inbox", "_outbox")

    def __init__(self) -> None:
        self._go = threading.Lock()
        self._go.acquire()
        self._back = threading.Lock()
        self._back.acquire()
        self._inbox: Any = None
        self._outbox: Any = None
        threading.Thread(target=self._main, name="htmlstream-fiber", daemon=True).start()

    def switch_in(self, message: Any) -> Any:
        """(From the caller's thread) hand ``message`` to the fiber; wait for its answer."""
        self._inbox = message
        self._go.release()
        self._back.acquire()
        answer, self._outbox = self._outbox, None
        return answer

    def switch_out(self, message: Any) -> Any:
        """(On the fiber) hand ``message`` to the caller; wait for the next ``switch_in``."""
        self._outbox = message
        self._back.release()
        self._go.acquire()
        answer, self._inbox = self._inbox, None
        return answer

    def stop(self) -> None:
        """End the fiber's thread (it is idle)."""
        self._inbox = None
        self._go.release()

    def _main(self) -> None:
        while True:
            self._go.acquire()
            job, self._inbox = self._inbox, None
            if job is None:
                return
            self._outbox = job()
            del job
            self._back.release()


#: Idle fibers, for the next call (a pool: a fiber is held only during one feed/close call).
_idle: list[_Fiber] = []
_idle_lock = threading.Lock()
_MAX_IDLE: Final = 16


def _take_fiber() -> _Fiber:
    with _idle_lock:
        if _idle:
            return _idle.pop()
    return _Fiber()


def _give_back(fiber: _Fiber) -> None:
    with _idle_lock:
        if len(_idle) < _MAX_IDLE:
            _idle.append(fiber)
            return
    fiber.stop()


def _iterator(result: object) -> Any:
    """The iterator to drive an awaitable handler result with, or None if it is not one."""
    if type(result) is CoroutineType:
        return result
    await_ = getattr(type(result), "__await__", None)
    return None if await_ is None else await_(result)


def _name(fn: object) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


class _Wait:
    """Drive a handler's coroutine to its end as ``await`` would (``yield from`` semantics):
    what it yields goes up to the task, what the task sends or throws goes down to it."""

    __slots__ = ("_ctx", "_it", "_yielded")

    def __init__(self, it: Any, yielded: Any, ctx: contextvars.Context) -> None:
        self._it = it
        self._yielded = yielded
        self._ctx = ctx

    def __await__(self) -> Generator[Any, Any, Any]:
        it, yielded, ctx = self._it, self._yielded, self._ctx
        del self._it, self._yielded, self._ctx
        try:
            if yielded is _NOT_STARTED:
                yielded = ctx.run(it.send, None)
            while True:
                try:
                    sent = yield yielded
                except GeneratorExit:
                    it.close()
                    raise
                except BaseException as exc:
                    yielded = ctx.run(it.throw, exc)
                else:
                    yielded = ctx.run(it.send, sent)
        except StopIteration as stop:
            return stop.value


class EngineRunner:
    """Runs an async stream's engine calls: the awaiter of the sync streams it adopts, and
    the fiber their calls run on (see the module docstring).

    :class:`AsyncRewriterStream` has one; an adapter that wraps a stream's sync face in more
    sync code (the HTTP layer's ``ResponseRewrite``, with its content decoding and encoding)
    makes its own, adopts the stream (:meth:`adopt`) and runs that code with :meth:`run`.
    ``early``: applied, on the fiber, to the output taken before a waiting unit, before it is
    yielded (an encoder's step, say).  It holds no reference to an AsyncRewriterStream.
    """

    __slots__ = ("busy", "ctx", "debug", "early", "fiber", "fibered", "stream")

    def __init__(self, *, fibered: bool = True,
                 early: Callable[[bytes], bytes] | None = None) -> None:
        self.stream: RewriterStream | None = None
        self.fibered = fibered
        self.early = early
        self.ctx = contextvars.copy_context()
        self.fiber: _Fiber | None = None
        self.debug = False
        self.busy = False

    def adopt(self, stream: AsyncRewriterStream | RewriterStream) -> RewriterStream:
        """Run ``stream``'s handlers through this runner; return its sync face (to be fed only
        inside :meth:`run`)."""
        sync = stream._stream if isinstance(stream, AsyncRewriterStream) else stream
        self.stream = sync
        sync._awaiter = self.await_on_fiber if self.fibered else self.await_inline
        return sync

    def job(self, call: Callable[..., bytes], args: tuple[Any, ...],
            loop: asyncio.AbstractEventLoop) -> Callable[[], tuple[str, Any]]:
        """The fiber's work for one call."""
        ctx = self.ctx

        def run() -> tuple[str, Any]:
            _set_running_loop(loop)
            try:
                return (_DONE, ctx.run(call, *args))
            except BaseException as exc:
                return (_ERROR, exc)
            finally:
                _set_running_loop(None)
        return run

    def await_on_fiber(self, result: object, fn: object, unit: object) -> Any:
        """The sink's awaiter (on the fiber): wait for the handler's awaitable ``result``
        (or a unit's content from an async iterable); its value."""
        it = _iterator(result)
        if it is None:
            return              # (not awaitable: a return value, ignored)
        ctx = self.ctx.copy()
        yielded: Any = _NOT_STARTED
        if not self.debug:
            try:
                yielded = ctx.run(it.send, None)
            except StopIteration as stop:
                return stop.value   # done without waiting: no switch
        fiber = self.fiber
        if fiber is None:       # (a call outside run(): it cannot wait)
            it.close()
            raise RuntimeError(f"handler {_name(fn)} waits, but its stream was not fed by an "
                               f"async entry point")
        stream = self.stream
        out = b"" if stream is None else stream._take_before(unit)
        if out and self.early is not None:
            out = self.early(out)
        error, value = fiber.switch_out((_WAIT, out, it, yielded, ctx))
        if error is not None:
            raise error
        return value

    def await_inline(self, result: object, fn: object, unit: object) -> Any:
        """The sink's awaiter when the stream runs inline (no async handler registered): an
        awaitable that finishes without waiting is fine; one that waits cannot be waited for."""
        it = _iterator(result)
        if it is None:
            return
        try:
            it.send(None)
        except StopIteration as stop:
            return stop.value
        with contextlib.suppress(RuntimeError):     # (an async generator it was reading)
            it.close()
        what = fn if isinstance(fn, str) else f"handler {_name(fn)} returned an awaitable that"
        raise TypeError(
            f"{what} waits, but the rewriter has no async handler registered, so its async "
            f"streams run without pausing the engine: make the handler that registers it or "
            f"gives it (or any registered handler) an async def")

    async def run(
        self, call: Callable[..., bytes], *args: Any
    ) -> AsyncGenerator[bytes, None]:
        """Run ``call(*args)`` (sync code that feeds or closes the adopted stream) where the
        engine can pause; yield the output before each wait, then what ``call`` returns (no
        empty piece).  Close the generator if it is not run to its end."""
        if not self.fibered:
            out = call(*args)
            if out:
                yield out
            return
        if self.busy:
            raise RuntimeError(_OVERLAP)
        loop = asyncio.get_running_loop()
        self.busy = True
        self.debug = loop.get_debug()
        fiber = self.fiber = _take_fiber()
        reply: Any = None
        try:
            reply = fiber.switch_in(self.job(call, args, loop))
            while reply[0] is _WAIT:
                out, it, yielded, ctx = reply[1:]
                reply = None        # (paused: the engine waits at the unit)
                if out:
                    yield out
                try:
                    value = await _Wait(it, yielded, ctx)
                except BaseException as exc:
                    # (the handler raised, or was cancelled: its exception fails the engine;
                    # GeneratorExit and the like are raised here once the engine unwound)
                    reply = _unwind(fiber, _for_engine(exc))
                    if not isinstance(exc, Exception | asyncio.CancelledError):
                        raise
                else:
                    reply = fiber.switch_in((None, value))
                del it, yielded, ctx
        except BaseException as exc:
            if reply is None:
                # Left while the engine waits at a unit (the generator closed or thrown into
                # at its yield): fail the engine there, and let it unwind.
                reply = _unwind(fiber, _for_engine(exc))
            raise
        finally:
            self.fiber = None
            self.busy = False
            if reply is not None:       # (the call has ended: the fiber is idle)
                _give_back(fiber)
        if reply[0] is _ERROR:
            raise reply[1]
        if reply[1]:
            yield reply[1]


def _for_engine(exc: BaseException) -> BaseException:
    """What to raise inside the engine's handler call for ``exc``, raised on the loop's side:
    itself (a handler's exception, a cancellation), or for GeneratorExit and the like (the
    consumer went away) an HtmlStreamError, which fails the stream."""
    if isinstance(exc, Exception | asyncio.CancelledError):
        return exc
    return HtmlStreamError(f"the async stream's consumer stopped ({type(exc).__name__}) while "
                           f"a handler was pending")


def _unwind(fiber: _Fiber, error: BaseException) -> Any:
    """Raise ``error`` in the paused engine and let it unwind; its final reply."""
    reply = fiber.switch_in((error, None))
    while reply[0] is _WAIT:        # (not expected: the engine fails at the first)
        if hasattr(reply[2], "close"):
            reply[2].close()
        reply = fiber.switch_in((error, None))
    return reply


async def _collect(runner: EngineRunner, call: Callable[..., bytes], *args: Any) -> bytes:
    """``runner.run(call, *args)`` joined, as a coroutine (not an async generator, whose
    frame a closed or cancelled caller would leave paused for the garbage collector): the
    same steps, the pieces kept instead of yielded."""
    if runner.busy:
        raise RuntimeError(_OVERLAP)
    loop = asyncio.get_running_loop()
    runner.busy = True
    runner.debug = loop.get_debug()
    fiber = runner.fiber = _take_fiber()
    parts: list[bytes] = []
    reply: Any = None
    try:
        reply = fiber.switch_in(runner.job(call, args, loop))
        while reply[0] is _WAIT:
            out, it, yielded, ctx = reply[1:]
            reply = None
            parts.append(out)
            try:
                value = await _Wait(it, yielded, ctx)
            except BaseException as exc:
                reply = _unwind(fiber, _for_engine(exc))
                if not isinstance(exc, Exception | asyncio.CancelledError):
                    raise
            else:
                reply = fiber.switch_in((None, value))
            del it, yielded, ctx
    finally:
        runner.fiber = None
        runner.busy = False
        if reply is not None:
            _give_back(fiber)
    if reply[0] is _ERROR:
        raise reply[1]
    parts.append(reply[1])
    return b"".join(parts)


class AsyncRewriterStream:
    """One document being rewritten by handlers that may be async (``Rewriter.astream()``):
    ``await feed(chunk) -> bytes`` then ``await close() -> bytes``; or, to pass on the output
    decided before each wait as soon as it is, ``async for out in feed_iter(chunk)`` and
    ``close_iter()``.

    The same engine, sink and units as :class:`~htmlstream.RewriterStream` (which it drives;
    see the module docstring): sync handlers work unchanged, ``async def`` handlers are awaited
    one at a time in document order with the engine paused at their unit.  After an error (a
    handler's exception or cancellation, a limit) the stream is failed, as a sync stream is.
    Calls must not overlap: one ``feed``/``close`` at a time (RuntimeError otherwise).
    """

    __slots__ = ("_driver", "_stream")

    def __init__(self, stream: RewriterStream, *, fibered: bool) -> None:
        """(Made by :meth:`Rewriter.astream`.)  ``fibered``: the rewriter has async handlers,
        so the engine runs on a fiber that can pause; else inline."""
        self._stream = stream
        self._driver = EngineRunner(fibered=fibered)
        self._driver.adopt(stream)

    @property
    def context(self) -> MutableMapping[str, Any]:
        """The per-document context (``unit.context`` of every unit of this document)."""
        return self._stream.context

    @property
    def encoding(self) -> str:
        """The encoding the document is read in (see :class:`RewriterStream`)."""
        return self._stream.encoding

    @property
    def output_encoding(self) -> str:
        """The encoding of the output (see :class:`RewriterStream`)."""
        return self._stream.output_encoding

    @property
    def passthrough_reason(self) -> str | None:
        """Why the stream passes its input through unchanged, or None."""
        return self._stream.passthrough_reason

    @property
    def offset(self) -> int:
        """How many input bytes have been fed."""
        return self._stream.offset

    async def feed(self, chunk: bytes | bytearray | memoryview) -> bytes:
        """Rewrite the next chunk, waiting for the async handlers it reaches; return the output
        bytes that are then decided (:meth:`feed_iter` gives them in pieces, before each
        wait)."""
        if not self._driver.fibered:
            # (inline: the sync stream, in the caller's context; it refuses re-entry itself)
            return self._stream.feed(chunk)
        return await _collect(self._driver, self._stream.feed, chunk)

    async def close(self) -> bytes:
        """End of input: wait for the remaining handlers (document end handlers included) and
        return the rest of the output."""
        if not self._driver.fibered:
            return self._stream.close()
        return await _collect(self._driver, self._stream.close)

    def feed_iter(self, chunk: bytes | bytearray | memoryview) -> AsyncGenerator[bytes, None]:
        """Rewrite the next chunk; yield the output in pieces: before each wait for a handler,
        the output decided before its unit, and at the end the rest (no empty piece).
        Close the iterator (``contextlib.aclosing``) if it is not run to its end: the engine
        waits at the pending unit until then, and closing it fails the stream."""
        if not self._driver.fibered:
            return self._inline_iter(self._stream.feed, chunk)
        return self._driver.run(self._stream.feed, chunk)

    def close_iter(self) -> AsyncGenerator[bytes, None]:
        """End of input, as :meth:`close`, yielding the output in pieces as :meth:`feed_iter`
        does."""
        if not self._driver.fibered:
            return self._inline_iter(self._stream.close)
        return self._driver.run(self._stream.close)

    # ------------------------------------------------------------------ inline

    async def _inline_iter(
        self, call: Callable[..., bytes], *args: Any
    ) -> AsyncGenerator[bytes, None]:
        out = call(*args)
        if out:
            yield out


_OVERLAP: Final = ("another feed() or close() of this async stream is still running: await "
                   "each call before the next (a handler may not feed the stream it handles)")
