"""Worker processes for ``htmlstream proxy --workers N``: one proxy per core, as nginx runs.

::

    sockets = listening_sockets("0.0.0.0", 8080, workers=4, backlog=511)
    status = supervise(sockets, workers=4, grace=10, serve=lambda sock: run_one_proxy(sock))

The supervisor (the process the command starts) binds the listening socket(s), then forks
``N`` workers; each serves on its socket until ``SIGTERM``.  The design:

* **Sharing the port.**  On Linux, each worker gets a socket of its own, all bound to the
  same address with ``SO_REUSEPORT``: the kernel spreads new connections over them (no
  thundering herd, no lock).  Elsewhere (macOS' ``SO_REUSEPORT`` does not balance), one
  socket is bound and every worker accepts from the inherited copy.  The supervisor keeps
  its copies open, so the connections queued on a dying worker's socket wait for its
  replacement instead of being reset.
* **Fork, not spawn.**  The workers are forked after the command's arguments were parsed and
  the rewriter built (no event loop or thread exists yet in the supervisor), so a worker
  starts in milliseconds and shares the imported code's pages with the others until it
  writes to them.  POSIX only: without ``os.fork`` there is one process (``--workers 1``).
* **Restarts.**  A worker that dies (a crash, the OOM killer, ``kill -9``) is replaced at
  once, on the same socket; one that dies within a second of its start is restarted after a
  delay that doubles up to 30 s, so a worker that cannot start does not spin.
* **Stopping.**  ``SIGTERM`` or ``SIGINT`` to the supervisor: it closes its copies of the
  listening sockets and sends ``SIGTERM`` to every worker, which stops accepting (its socket
  closed: once every copy is, the kernel refuses new connections, so a load balancer moves
  on) and lets its in-flight requests finish within ``grace``.  A worker still there
  ``grace + 5`` seconds later is killed.
* **Logs.**  Each worker writes its own access-log lines to the inherited standard error,
  each line with one ``write``: one line per request, whichever worker served it.
* **Orphans.**  Each worker watches a pipe whose only writing end the supervisor holds:
  when the supervisor dies (even by ``kill -9``), the pipe ends, and the worker stops as on
  ``SIGTERM`` instead of serving on with nobody to stop it.
* **Signals in the supervisor** are read from a self-pipe (``signal.set_wakeup_fd``) with
  ``select``, so its loop sleeps until something happens and has no event loop of its own.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Final

__all__ = ["REUSE_PORT", "cpu_count", "listening_sockets", "supervise"]

#: Whether each worker gets its own ``SO_REUSEPORT`` socket (Linux), else one is shared.
REUSE_PORT: Final = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")

#: Supervisor messages (worker started, died, replaced; stopping).
logger: Final = logging.getLogger("htmlstream.proxy")

_STOP_MARGIN: Final = 5.0
_QUICK_DEATH: Final = 1.0
_MAX_DELAY: Final = 30.0


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity where the platform tells), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def listening_sockets(host: str, port: int, workers: int, backlog: int
                      ) -> list[socket.socket]:
    """The listening sockets for ``workers`` workers: one each with ``SO_REUSEPORT`` (all on
    the port the first one got, for port 0), else one to share."""
    from htmlstream.integrations.proxy_limits import bind

    if not (REUSE_PORT and workers > 1):
        return [bind(host, port, backlog)]
    # A socket without SO_REUSEPORT first: it fails if anything holds the port, even another
    # process's SO_REUSEPORT sockets, which the workers' sockets would silently join.
    probe = bind(host, port, backlog)
    port = probe.getsockname()[1]
    probe.close()
    sockets = [bind(host, port, backlog, reuse_port=True)]
    try:
        sockets += [bind(host, port, backlog, reuse_port=True) for _ in range(workers - 1)]
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class _Worker:
    def __init__(self, index: int) -> None:
        self.index = index
        self.pid = 0
        self.started = 0.0
        self.delay = 0.0            # the next restart's delay after a quick death
        self.restart_at = 0.0       # 0: not waiting for a restart


def supervise(sockets: list[socket.socket], workers: int, grace: float,
              serve: Callable[[socket.socket], int],
              on_start: Callable[[int], None] | None = None) -> int:
    """Run ``workers`` forked processes, each ``serve(sock)`` with its listening socket
    (``sockets[i]``, or ``sockets[0]`` for all), until ``SIGTERM``/``SIGINT``; restart a
    worker that dies.  Returns 0 when every worker stopped by itself, 1 if one had to be
    killed.  Call it from the main thread, with no event loop running.  ``on_start(i)`` is
    called in each worker before ``serve``, with its index (0 to ``workers - 1``; a
    replacement gets the index of the worker it replaces: metrics' rows)."""
    rfd, wfd = os.pipe()
    os.set_blocking(rfd, False)
    os.set_blocking(wfd, False)
    alive_r, alive_w = os.pipe()    # ends (for the workers) when the supervisor does
    caught = (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)
    previous = {sig: signal.signal(sig, _noop) for sig in caught}
    old_wakeup = signal.set_wakeup_fd(wfd)
    pool = [_Worker(i) for i in range(workers)]
    by_pid: dict[int, _Worker] = {}
    stopping = False
    deadline = 0.0
    status = 0

    def sock_of(worker: _Worker) -> socket.socket:
        return sockets[worker.index] if len(sockets) > 1 else sockets[0]

    def start(worker: _Worker) -> None:
        worker.restart_at = 0.0
        sys.stdout.flush()      # (else the worker would write the buffered output again)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:            # the worker
            code = 1
            try:
                signal.set_wakeup_fd(-1)
                for sig in caught:
                    signal.signal(sig, signal.SIG_DFL)
                os.close(rfd)
                os.close(wfd)
                os.close(alive_w)
                threading.Thread(target=_orphaned, args=(alive_r,), daemon=True).start()
                mine = sock_of(worker)
                for other in sockets:
                    if other is not mine:
                        other.close()
                if on_start is not None:
                    on_start(worker.index)
                code = serve(mine)
            except BaseException:   # the worker ends here, whatever happened
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        worker.pid = pid
        worker.started = time.monotonic()
        by_pid[pid] = worker

    try:
        for worker in pool:
            start(worker)
        logger.info("- %d workers started (pids %s), %s", workers,
                    " ".join(str(w.pid) for w in pool),
                    "a SO_REUSEPORT socket each" if len(sockets) > 1 else "one shared socket")
        while by_pid or (not stopping and any(w.restart_at for w in pool)):
            now = time.monotonic()
            waits = [w.restart_at - now for w in pool if w.restart_at and not stopping]
            if stopping:
                waits.append(deadline - now)
            timeout = max(0.0, min(waits)) if waits else None
            try:
                ready, _, _ = select.select([rfd], [], [], timeout)
            except InterruptedError:
                ready = []
            signals: set[int] = set()
            if ready:
                with contextlib.suppress(BlockingIOError):
                    signals.update(os.read(rfd, 512))
            if not stopping and signals & {signal.SIGTERM, signal.SIGINT}:
                stopping = True
                deadline = time.monotonic() + grace + _STOP_MARGIN
                logger.info("- stopping: %d workers get %gs to finish their requests",
                            len(by_pid), grace)
                for sock in sockets:        # new connections are refused from now on
                    sock.close()
                for pid in by_pid:
                    _kill(pid, signal.SIGTERM)
            for pid, code in _reap():
                died = by_pid.pop(pid) if pid in by_pid else None
                if died is None or stopping:
                    continue
                lived = time.monotonic() - died.started
                died.delay = (min(max(died.delay * 2, 0.5), _MAX_DELAY)
                              if lived < _QUICK_DEATH else 0.0)
                logger.warning("- worker %d %s after %.1fs; %s", pid, _describe(code), lived,
                               f"restarting it in {died.delay:g}s" if died.delay
                               else "restarting it")
                died.restart_at = time.monotonic() + died.delay
            now = time.monotonic()
            if not stopping:
                for worker in pool:
                    if worker.restart_at and worker.restart_at <= now:
                        start(worker)
                        logger.info("- worker %d started in place of the one that died",
                                    worker.pid)
            elif now >= deadline and by_pid:
                logger.warning("- %d workers still running after %gs: killed", len(by_pid),
                               grace + _STOP_MARGIN)
                status = 1
                for pid in by_pid:
                    _kill(pid, signal.SIGKILL)
                deadline = now + _STOP_MARGIN
    finally:
        for pid in by_pid:
            _kill(pid, signal.SIGKILL)
        for pid in list(by_pid):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        signal.set_wakeup_fd(old_wakeup)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for fd in (rfd, wfd, alive_r, alive_w):
            os.close(fd)
        for sock in sockets:
            sock.close()
    return status


def _orphaned(fd: int) -> None:
    """In a worker: wait for the supervisor's end (the pipe's), then stop as on SIGTERM."""
    with contextlib.suppress(OSError):
        while os.read(fd, 1):
            pass
    os.kill(os.getpid(), signal.SIGTERM)


def _noop(signum: int, frame: object) -> None:
    """A handler, so that the signal reaches the wakeup pipe instead of its default action."""


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _reap() -> list[tuple[int, int]]:
    """The workers that ended since the last call: (pid, wait status)."""
    ended: list[tuple[int, int]] = []
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        except OSError as exc:      # pragma: no cover
            if exc.errno == errno.EINTR:
                continue
            raise
        if pid == 0:
            return ended
        ended.append((pid, code))


def _describe(code: int) -> str:
    if os.WIFSIGNALED(code):
        sig = os.WTERMSIG(code)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"was killed by {name}"
    return f"exited with status {os.waitstatus_to_exitcode(code)}"
