"""The client limits' tests (test_proxy_limits.py) again, with the proxy on uvloop's event
loop (``htmlstream proxy``'s default where uvloop is installed): the header, keep-alive, body
and send timeouts, the body size, the connection cap, the TLS handshake.  The same functions,
collected here with this module's autouse fixture switching the loop.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

uvloop = pytest.importorskip("uvloop")
pytest.importorskip("aiohttp")
pytest.importorskip("httpx")

import http_servers  # noqa: E402
from test_proxy_limits import (  # noqa: E402
    origin,
    test_chunked_body_too_large_is_cut_before_its_end,
    test_connection_cap,
    test_declared_body_too_large_gets_413_and_never_reaches_upstream,
    test_header_timeout_answers_408_and_closes,
    test_idle_keepalive_closed,
    test_slow_reader_closed_after_send_timeout_with_its_upstream,
    test_slowloris_trickle_does_not_extend_the_header_timeout,
    test_stalled_upload_closed_after_body_timeout,
    test_tls_handshake_and_head_bounded_by_the_header_timeout,
)

__all__ = [
    "origin",
    "test_chunked_body_too_large_is_cut_before_its_end",
    "test_connection_cap",
    "test_declared_body_too_large_gets_413_and_never_reaches_upstream",
    "test_header_timeout_answers_408_and_closes",
    "test_idle_keepalive_closed",
    "test_slow_reader_closed_after_send_timeout_with_its_upstream",
    "test_slowloris_trickle_does_not_extend_the_header_timeout",
    "test_stalled_upload_closed_after_body_timeout",
    "test_tls_handshake_and_head_bounded_by_the_header_timeout",
]


@pytest.fixture(autouse=True)
def _on_uvloop() -> Iterator[None]:
    saved = http_servers.PROXY_LOOP["factory"]
    http_servers.PROXY_LOOP["factory"] = uvloop.new_event_loop
    try:
        yield
    finally:
        http_servers.PROXY_LOOP["factory"] = saved
