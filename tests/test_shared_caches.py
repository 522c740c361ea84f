"""The module-level caches shared by every thread (docs/guide/packaging.md, "Free-threaded
CPython").

Threads open streams with many encoding labels (``_stream_encodings``, ``_lookups``) and set
many attribute names and values (``_NAME_CACHE`` and ``set_attribute``'s memos) at once, each
with its own rewriter; every output must be what the same work gives alone, in every chunking.
With the GIL this checks that the caches return what they were given; on a free-threaded build
it is the race the caches are written for.
"""

from __future__ import annotations

import threading

from chunking import chunkings, feed_bytes
from htmlstream import Element, Rewriter

LABELS = ["utf-8", "UTF8", "latin1", "iso-8859-2", "windows-1251", "koi8-r", "ascii",
          "us-ascii", "cp1252", "iso-8859-15", "macintosh", "windows-874"]
DOC = b'<p id=a>x<a href="/k">y</a><img src=z>'


def _work(k: int) -> tuple[bytes, list[bytes]]:
    """Thread k's document, rewritten under every chunking, and what it must give."""
    name, value = f"data-t{k % 5}", f"v{k}"

    def set_attr(el: Element) -> None:
        el.set_attribute(name, value)

    rw = Rewriter().on("a, img", element=set_attr)
    label = LABELS[k % len(LABELS)]
    want = (DOC.replace(b'href="/k">', f'href="/k" {name}="{value}">'.encode())
            .replace(b"src=z>", f'src=z {name}="{value}">'.encode()))
    outs = [feed_bytes(lambda: rw.stream(encoding=label), cut) for cut in chunkings(DOC)]
    return want, outs


def test_caches_under_threads() -> None:
    results: dict[int, tuple[bytes, list[bytes]]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def run(t: int) -> None:
        try:
            start.wait()
            for i in range(6):
                k = t * 6 + i
                results[k] = _work(k)
        except BaseException as exc:    # (reported below, with the thread's work)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(results) == 48
    for k, (want, outs) in sorted(results.items()):
        assert all(out == want for out in outs), (k, want, outs[:3])
