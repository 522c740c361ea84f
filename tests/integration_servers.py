"""Real servers on 127.0.0.1 for the integration tests, each in a thread of the test process on
an ephemeral port, started and stopped by a context manager that yields the base URL."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["hypercorn_server", "uvicorn_server", "wait_for", "waitress_server"]


def wait_for(condition: Callable[[], object], timeout: float = 5.0) -> bool:
    """Poll ``condition`` until it is true or ``timeout`` seconds passed; its last value."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return bool(condition())
        time.sleep(0.005)
    return True


@contextlib.contextmanager
def uvicorn_server(app: Any, lifespan: str = "off") -> Iterator[str]:
    """uvicorn (h11) serving the ASGI ``app``."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                            lifespan=lifespan, access_log=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: server.started or not thread.is_alive(), 10), "uvicorn start"
        assert server.started, "uvicorn did not start"
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextlib.contextmanager
def hypercorn_server(app: Any) -> Iterator[str]:
    """hypercorn (asyncio, h11) serving the ASGI ``app``."""
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{os.dup(sock.fileno())}"]     # hypercorn closes its own copy
    config.accesslog = None
    config.graceful_timeout = 2
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    started = threading.Event()

    async def main() -> None:
        started.set()
        await serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),),
                              name="hypercorn", daemon=True)
    thread.start()
    try:
        assert started.wait(10)
        assert wait_for(lambda: _accepts(port), 10), "hypercorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
        sock.close()


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def waitress_server(app: Any) -> Iterator[str]:
    """waitress serving the WSGI ``app``."""
    from waitress import wasyncore
    from waitress.server import create_server

    server = create_server(app, host="127.0.0.1", port=0, threads=4, asyncore_loop_timeout=0.05)
    port = server.effective_port  # type: ignore[union-attr]
    thread = threading.Thread(target=server.run, name="waitress", daemon=True)
    thread.start()
    trigger = server.trigger  # type: ignore[union-attr]

    def stop() -> None:
        # In the server's own thread (its select() would see closed descriptors): the listening
        # socket and the connections closed, the map emptied (the loop ends).  Not the trigger:
        # this runs as soon as the server thread reads the trigger, which a worker thread may
        # pull (at the end of a request) between the moment pull_trigger() below queues this
        # and the moment it writes to the trigger: closed here, that write got EBADF (or,
        # its descriptor reused, wrote into another file).  Closed once no thread pulls it.
        # (the server's own close() closes the trigger too: the dispatcher's closes the socket)
        for obj in list(server._map.values()):  # type: ignore[union-attr]
            with contextlib.suppress(OSError):
                if obj is server:
                    wasyncore.dispatcher.close(obj)
                elif obj is not trigger:
                    obj.close()
        server._map.clear()  # type: ignore[union-attr]

    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        trigger.pull_trigger(stop)
        thread.join(10)
        server.task_dispatcher.shutdown(timeout=5)  # type: ignore[union-attr]
        trigger.close()     # (no worker left to pull it; the server thread is done)


# ------------------------------------------------------------------------------ shared content

import htmlstream  # noqa: E402
from chunking import chunkings  # noqa: E402


def make_rewriter(**kwargs: Any) -> htmlstream.Rewriter:
    """A rewriter that upgrades ``http:`` links, and raises on ``<a id=boom>``."""
    rw = htmlstream.Rewriter(**kwargs)

    @rw.element("a[href]")
    def upgrade(el: htmlstream.Element) -> None:
        href = el.get_attribute("href") or ""
        el.set_attribute("href", href.replace("http://", "https://"))

    @rw.element("a#boom")
    def boom(el: htmlstream.Element) -> None:
        raise ValueError("a handler failed")

    return rw


RW = make_rewriter()
#: A page of 8 KB: the decision (1024 bytes) comes with its first chunks, rewrites all along.
PAGE = (b"<!doctype html><html><head><meta charset=utf-8><title>t</title></head><body>\n"
        + b"".join(b"<p>line %d <a href='http://example.com/%d'>link</a></p>\n" % (i, i)
                   for i in range(120))
        + b"</body></html>\n")
#: The page with a handler error in its second half.
BOOM_PAGE = PAGE.replace(b"<p>line 100 <a", b"<p>line 100 <a id=boom")
JSON_AS_HTML = b'{"html": "<p><a href=\'http://example.com/\'>not a page</a></p>"}' * 40


def app_chunkings(data: bytes) -> list[list[bytes]]:
    """How the test applications cut a body: several chunkings of tests/chunking.py (whole,
    two-way and random splits), and pieces of 7 bytes."""
    cuts = chunkings(data, single_bytes=False, split_samples=3, random_splits=3)
    cuts.append([data[i:i + 7] for i in range(0, len(data), 7)])
    return cuts
