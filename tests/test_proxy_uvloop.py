"""The proxy's key tests again, with the proxy on uvloop's event loop (``htmlstream proxy``'s
default where uvloop is installed; the other test modules run the proxy on asyncio's): the
rewrite in every chunking, gzip, HEAD/304/Range, keep-alive, the refusals, the upstream's
faults, a client going away, many clients at once (the client limits':
test_proxy_limits_uvloop.py).  The tests are the same functions, collected
here with this module's autouse fixture switching the loop; the command's own tests
(subprocesses) run on uvloop by default and with ``--loop asyncio`` in test_proxy_metrics.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

uvloop = pytest.importorskip("uvloop")
pytest.importorskip("aiohttp")
pytest.importorskip("httpx")

import http_servers  # noqa: E402
from test_proxy import (  # noqa: E402
    origin,
    proxy,
    test_client_disconnect_closes_upstream,
    test_gzip_rewritten_and_reencoded,
    test_head_304_and_range,
    test_headers_hop_by_hop_and_forwarded,
    test_keep_alive_both_sides,
    test_many_concurrent_clients,
    test_never_an_open_proxy,
    test_request_body_streamed,
    test_rewrites_whatever_the_chunking,
    test_upstream_breaks_off,
    test_upstream_unreachable_and_stalled,
)

__all__ = [
    "origin", "proxy", "test_client_disconnect_closes_upstream",
    "test_gzip_rewritten_and_reencoded", "test_head_304_and_range",
    "test_headers_hop_by_hop_and_forwarded", "test_keep_alive_both_sides",
    "test_many_concurrent_clients", "test_never_an_open_proxy", "test_request_body_streamed",
    "test_rewrites_whatever_the_chunking", "test_upstream_breaks_off",
    "test_upstream_unreachable_and_stalled",
]


@pytest.fixture(autouse=True)
def _on_uvloop() -> Iterator[None]:
    saved = http_servers.PROXY_LOOP["factory"]
    http_servers.PROXY_LOOP["factory"] = uvloop.new_event_loop
    try:
        yield
    finally:
        http_servers.PROXY_LOOP["factory"] = saved


def test_the_proxy_runs_on_uvloop(proxy: object) -> None:
    """(The switch works: the proxy's loop here is uvloop's.)"""
    assert isinstance(proxy._loop, uvloop.Loop)     # type: ignore[attr-defined]
