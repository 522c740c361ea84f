"""Issue 30: what async handlers cost (``Rewriter.astream()``).

    .venv/bin/python benchmarks/bench_async.py [--repeat N] [--chunk-size BYTES]

Three figures, each the least CPU time of N runs, in one process (ratios and differences of
runs made side by side; absolute times move with the machine's load):

1. A rewriter with only sync handlers (links rewritten, text read) on ``astream()`` next to the
   same on ``stream()``, both fed from a coroutine on the same event loop (as an ASGI app
   feeds them), over the corpus in chunks: the overhead in %.  Target: <= 3 %.
2. A never-suspending ``async def`` element handler on every element next to the same sync
   handler, both on ``astream()``: the extra µs per call.  Target: <= 2 µs.
3. Handlers that do suspend (``await asyncio.sleep(0)``; a future completed by the loop at its
   next turn): the extra µs per call over the sync handler (a fiber switch there and back, the
   output before the unit taken, the event loop's turn).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from htmlstream import Element, Rewriter, TextChunk

ROOT = Path(__file__).resolve().parents[1]


def corpus() -> list[bytes]:
    env = os.environ.get("HTMLSTREAM_CORPUS")
    root = Path(env) if env else ROOT / "tests" / "data" / "corpus"
    return [p.read_bytes() for p in sorted(root.glob("*.html"))]


def chunked(doc: bytes, size: int) -> list[bytes]:
    return [doc[i:i + size] for i in range(0, len(doc), size)]


def best(fn: Callable[[], object], repeat: int) -> float:
    """The least CPU time of ``repeat`` runs (CPU time of the process, all threads: what a busy
    machine's other processes disturb least)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def best_pair(a: Callable[[], object], b: Callable[[], object],
              repeat: int) -> tuple[float, float]:
    """``best`` of ``a`` and of ``b``, run in turns (so that changes of load hit both)."""
    ta = []
    tb = []
    for _ in range(repeat):
        ta.append(best(a, 1))
        tb.append(best(b, 1))
    return min(ta), min(tb)


def sync_rewriter() -> Rewriter:
    rw = Rewriter()

    @rw.element("a[href]")
    def link(el: Element) -> None:
        href = el.get_attribute("href")
        if href and href.startswith("http:"):
            el.set_attribute("href", "https:" + href[5:])

    @rw.text("title")
    def title(t: TextChunk) -> None:
        t.context["title"] = t.context.get("title", "") + t.text

    return rw


def run_sync(rw: Rewriter, docs: list[list[bytes]]) -> int:
    n = 0
    for chunks in docs:
        s = rw.stream()
        n += sum(len(s.feed(c)) for c in chunks) + len(s.close())
    return n


async def run_async(rw: Rewriter, docs: list[list[bytes]]) -> int:
    n = 0
    for chunks in docs:
        s = rw.astream()
        for c in chunks:
            n += len(await s.feed(c))
        n += len(await s.close())
    return n


def per_call(make: Callable[[], Callable[[Element], object]], docs: list[list[bytes]],
             repeat: int, loop: asyncio.AbstractEventLoop) -> tuple[float, int]:
    """Seconds for the docs with ``make()`` on every element, and the number of calls."""
    calls = [0]
    handler = make()

    def counted(el: Element) -> object:
        calls[0] += 1
        return handler(el)

    if asyncio.iscoroutinefunction(handler):
        async def acounted(el: Element) -> None:
            calls[0] += 1
            await handler(el)     # type: ignore[misc]
        rw = Rewriter().on("*", element=acounted)
    else:
        rw = Rewriter().on("*", element=counted)
    t = best(lambda: loop.run_until_complete(run_async(rw, docs)), repeat)
    return t, calls[0] // repeat


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chunk-size", type=int, default=16384)
    args = ap.parse_args(argv)
    docs = [chunked(d, args.chunk_size) for d in corpus()]
    size = sum(len(c) for d in docs for c in d)
    loop = asyncio.new_event_loop()
    try:
        # 1. sync-only rewriter, stream() vs astream()
        rw = sync_rewriter()
        async def sync_in_loop() -> int:
            return run_sync(rw, docs)

        t_sync, t_async = best_pair(lambda: loop.run_until_complete(sync_in_loop()),
                                    lambda: loop.run_until_complete(run_async(rw, docs)),
                                    args.repeat * 3)
        print(f"corpus: {size / 1e6:.2f} MB in {args.chunk_size}-byte chunks, best of "
              f"{args.repeat}")
        print(f"1. sync-only rewriter: stream() {size / t_sync / 1e6:7.1f} MB/s, astream() "
              f"{size / t_async / 1e6:7.1f} MB/s: overhead {100 * (t_async / t_sync - 1):+.1f} %"
              f" (target <= 3 %)")

        # 2., 3. per call on every element
        def sync_h() -> Callable[[Element], object]:
            def h(el: Element) -> None:
                el.tag_name  # noqa: B018 (the work: a read)
            return h

        def no_wait() -> Callable[[Element], Awaitable[None]]:
            async def h(el: Element) -> None:
                el.tag_name  # noqa: B018
            return h

        def sleep0() -> Callable[[Element], Awaitable[None]]:
            async def h(el: Element) -> None:
                await asyncio.sleep(0)
                el.tag_name  # noqa: B018
            return h

        def future() -> Callable[[Element], Awaitable[None]]:
            async def h(el: Element) -> None:
                lp = asyncio.get_running_loop()
                f = lp.create_future()
                lp.call_soon(f.set_result, None)
                await f
                el.tag_name  # noqa: B018
            return h

        results = {}
        for name, make in (("sync", sync_h), ("async, never suspends", no_wait),
                           ("async, await sleep(0)", sleep0),
                           ("async, await a future", future)):
            results[name] = per_call(make, docs, args.repeat, loop)
        base, calls = results["sync"]
        print(f"2./3. a handler on every element ({calls} calls per run), on astream(), "
              f"extra µs per call over the sync handler:")
        for name, (t, _) in results.items():
            extra = (t - base) / calls * 1e6
            target = "  (target <= 2 µs)" if name == "async, never suspends" else ""
            print(f"   {name:24} {t * 1e3:8.1f} ms  {extra:+7.2f} µs/call{target}")
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
