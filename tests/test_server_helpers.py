"""The test servers of tests/integration_servers.py stop cleanly whatever the threads do
(issue 38: the suite must give the same answer every run).

``waitress_server`` stopped waitress by closing everything, its trigger too, from a callback
that the trigger itself runs in the server thread.  A worker thread pulls that trigger at the
end of each request: when its pull reached the server thread between the moment the helper
queued the callback and the moment the helper wrote to the trigger, the callback had closed the
trigger before that write, which failed with ``OSError: [Errno 9] Bad file descriptor`` (about
one run in 10-15 of ``test_refusals_are_logged[wsgi]``, whose 502 is answered fast).  The test
below makes that interleaving happen every time.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("waitress")

from integration_servers import waitress_server  # noqa: E402


def _app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("502 Bad Gateway", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"no"]


def test_waitress_stops_while_its_trigger_is_pulled(monkeypatch: pytest.MonkeyPatch) -> None:
    from waitress import trigger

    original = trigger.trigger.pull_trigger
    ran: list[threading.Event] = []

    def pull_after_another(self: Any, thunk: Any = None) -> None:
        """A pull with a callback whose write comes after the server thread already ran the
        callback (as when a worker's pull got there first)."""
        if thunk is None:
            original(self)
            return
        done = threading.Event()
        ran.append(done)

        def run() -> None:
            try:
                thunk()
            finally:
                done.set()
        original(self, run)
        assert done.wait(10), "the server thread did not run the callback"
        self._physical_pull()       # (the write of the raced pull: the trigger is still open)

    monkeypatch.setattr(trigger.trigger, "pull_trigger", pull_after_another)
    for _ in range(3):
        with waitress_server(_app) as url, httpx.Client(timeout=10) as client:
            r = client.get(url + "/")
            assert r.status_code == 502 and r.content == b"no"
    assert len(ran) == 3 and all(e.is_set() for e in ran)
