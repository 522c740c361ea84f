"""The WebSocket relay's key tests (test_proxy_websocket.py) again, with the proxy on uvloop's
event loop (``htmlstream proxy``'s default where uvloop is installed): messages both ways and
the closes passed on, a side dropping its connection, many sockets at once, the shutdown.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

uvloop = pytest.importorskip("uvloop")
pytest.importorskip("aiohttp")

import http_servers  # noqa: E402
from test_proxy_websocket import (  # noqa: E402
    origin,
    proxy,
    seen,
    test_client_drops_the_connection,
    test_close_from_the_origin,
    test_many_sockets_at_once,
    test_messages_both_ways_and_client_close,
    test_origin_drops_the_connection,
    test_shutdown_closes_open_sockets,
    test_upstream_refuses_the_upgrade,
)

__all__ = [
    "origin",
    "proxy",
    "seen",
    "test_client_drops_the_connection",
    "test_close_from_the_origin",
    "test_many_sockets_at_once",
    "test_messages_both_ways_and_client_close",
    "test_origin_drops_the_connection",
    "test_shutdown_closes_open_sockets",
    "test_upstream_refuses_the_upgrade",
]


@pytest.fixture(autouse=True)
def _on_uvloop() -> Iterator[None]:
    saved = http_servers.PROXY_LOOP["factory"]
    http_servers.PROXY_LOOP["factory"] = uvloop.new_event_loop
    try:
        yield
    finally:
        http_servers.PROXY_LOOP["factory"] = saved
