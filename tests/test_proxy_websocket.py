"""WebSocket pass-through in ``htmlstream proxy``: a real aiohttp WebSocket origin on 127.0.0.1
behind the proxy, real clients (aiohttp's WebSocket client, raw sockets), every wait bounded.

The origin's handler answers pings itself (``autoping=False``) and records what it received,
so that the tests see that pings, pongs and closes went end to end, not answered by the proxy.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

aiohttp = pytest.importorskip("aiohttp")

from aiohttp import WSCloseCode, WSMsgType, web  # noqa: E402

from http_servers import Origin, Reply  # noqa: E402
from integration_servers import wait_for  # noqa: E402
from test_proxy import ProxyThread  # noqa: E402

TIMEOUT = aiohttp.ClientTimeout(total=10)


class Seen:
    """What the origin's WebSocket handler received (appended from its thread)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, Any]] = []
        self.closed = threading.Event()
        self.headers: dict[str, str] = {}

    def wait_closed(self) -> tuple[str, Any]:
        assert self.closed.wait(10), self.messages
        return self.messages[-1]


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
def origin(seen: Seen) -> Iterator[Origin]:
    async def ws(request: web.Request) -> web.WebSocketResponse:
        seen.headers = dict(request.headers)
        sock = web.WebSocketResponse(protocols=("chat.v2",), autoping=False, autoclose=False)
        await sock.prepare(request)
        try:
            while True:
                msg = await sock.receive()
                if msg.type is WSMsgType.TEXT:
                    seen.messages.append(("text", msg.data))
                    if msg.data == "headers":
                        await sock.send_str(json.dumps(seen.headers))
                    elif msg.data.startswith("close "):     # close from the origin's side
                        code, _, reason = msg.data[6:].partition(" ")
                        await sock.close(code=int(code), message=reason.encode())
                        seen.messages.append(("close-reply", sock.close_code))
                        break
                    elif msg.data == "ping me":
                        await sock.ping(b"from-origin")
                    elif msg.data == "drop":                 # gone without a close frame
                        assert request.transport is not None
                        request.transport.abort()
                        break
                    else:
                        await sock.send_str("echo " + msg.data)
                elif msg.type is WSMsgType.BINARY:
                    seen.messages.append(("binary", len(msg.data)))
                    await sock.send_bytes(msg.data[::-1])
                elif msg.type is WSMsgType.PING:
                    seen.messages.append(("ping", msg.data))
                    await sock.pong(msg.data)
                elif msg.type is WSMsgType.PONG:
                    seen.messages.append(("pong", msg.data))
                elif msg.type is WSMsgType.CLOSE:
                    seen.messages.append(("close", (msg.data, msg.extra)))
                    await sock.close(code=msg.data, message=b"ack")
                    break
                else:           # CLOSED, ERROR
                    seen.messages.append(("gone", msg.type.name))
                    break
        finally:
            seen.closed.set()
        return sock

    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=403, text="no sockets for you",
                            headers={"X-Why": "policy"})

    with Origin(routes=[("GET", "/ws", ws), ("GET", "/refuse", refuse)]) as o:
        yield o


@pytest.fixture
def proxy(origin: Origin) -> Iterator[ProxyThread]:
    with ProxyThread(origin.url(""), read_timeout=1.0, websocket_idle_timeout=5.0) as p:
        yield p


def ws_url(proxy: ProxyThread, path: str) -> str:
    return proxy.url(path).replace("http://", "ws://")


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_messages_both_ways_and_client_close(proxy: ProxyThread, seen: Seen,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", "htmlstream.proxy")
    payload = os.urandom(300_000)           # binary, byte for byte (reversed by the origin)
    texts = ["héllo", "", "x" * 70_000, "用户 ✓"]

    async def main() -> None:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as s, s.ws_connect(
                ws_url(proxy, "/ws"), protocols=("chat.v1", "chat.v2"), autoping=False,
                autoclose=False) as sock:
            assert sock.protocol == "chat.v2"       # the upstream's choice
            for text in texts:
                await sock.send_str(text)
                assert (await sock.receive()).data == "echo " + text
            await sock.send_bytes(payload)
            msg = await sock.receive()
            assert msg.type is WSMsgType.BINARY and msg.data == payload[::-1]
            await sock.send_str("headers")
            headers = json.loads((await sock.receive()).data)
            assert headers["X-Forwarded-For"] == "127.0.0.1"
            assert headers["Sec-WebSocket-Protocol"] == "chat.v1,chat.v2"
            assert "Sec-WebSocket-Extensions" not in headers      # no compression asked
            # A ping from the client reaches the origin, which answers it.
            await sock.ping(b"p1")
            msg = await sock.receive()
            assert msg.type is WSMsgType.PONG and msg.data == b"p1"
            # A ping from the origin reaches the client; its pong reaches the origin.
            await sock.send_str("ping me")
            msg = await sock.receive()
            assert msg.type is WSMsgType.PING and msg.data == b"from-origin"
            await sock.pong(b"from-origin")
            # The client closes with its code and reason; the origin's answer comes back.
            await sock.close(code=4000, message=b"done")
            assert sock.close_code == 4000

    run(main())
    assert seen.wait_closed() == ("close", (4000, "done"))
    assert ("ping", b"p1") in seen.messages and ("pong", b"from-origin") in seen.messages
    assert ("binary", len(payload)) in seen.messages
    assert [m for k, m in seen.messages if k == "text"][:4] == texts
    def logged() -> list[str]:
        return [r.getMessage() for r in caplog.records if "/ws" in r.getMessage()]

    assert wait_for(logged, 5), "no access-log line"     # (written when the handler ends)
    line = logged()[0]
    assert '"GET /ws HTTP/1.1" 101' in line and "closed by the client (4000)" in line, line


@pytest.mark.parametrize("code", [1000, 1008, 4001])
def test_close_from_the_origin(proxy: ProxyThread, seen: Seen, code: int) -> None:
    async def main() -> tuple[Any, Any, int | None]:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as s, s.ws_connect(
                ws_url(proxy, "/ws"), autoclose=False) as sock:
            await sock.send_str(f"close {code} bye now")
            msg = await sock.receive()
            await sock.close(code=msg.data)      # the client's answer
            return msg.type, (msg.data, msg.extra), sock.close_code

    kind, close, _ = run(main())
    assert kind is WSMsgType.CLOSE and close == (code, "bye now")
    seen.wait_closed()
    assert ("close-reply", code) in seen.messages   # the client's answer reached the origin


def test_upstream_refuses_the_upgrade(proxy: ProxyThread) -> None:
    async def main() -> aiohttp.WSServerHandshakeError:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as s:
            with pytest.raises(aiohttp.WSServerHandshakeError) as info:
                await s.ws_connect(ws_url(proxy, "/refuse"))
            return info.value

    exc = run(main())
    assert exc.status == 403 and exc.headers is not None and exc.headers["X-Why"] == "policy"
    # A raw request: the status line and the connection after it.
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(b"GET /refuse HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                     b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 403")


def test_invalid_upgrade_requests(proxy: ProxyThread) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                     b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n")   # no key
        assert sock.recv(100).startswith(b"HTTP/1.1 400")


def test_upstream_without_websockets(origin: Origin, proxy: ProxyThread) -> None:
    # A plain page asked for as a WebSocket: the upstream answers 200, passed on as refused.
    origin.serve("/page", Reply([b"<p>plain</p>"], headers=[("Content-Type", "text/html")]))

    async def main() -> int:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as s:
            with pytest.raises(aiohttp.WSServerHandshakeError) as info:
                await s.ws_connect(ws_url(proxy, "/page"))
            return info.value.status

    assert run(main()) == 200


def test_upstream_unreachable() -> None:
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with ProxyThread(f"http://127.0.0.1:{port}") as dead:
        async def main() -> int:
            async with aiohttp.ClientSession(timeout=TIMEOUT) as s:
                with pytest.raises(aiohttp.WSServerHandshakeError) as info:
                    await s.ws_connect(ws_url(dead, "/ws"))
                return info.value.status

        assert run(main()) == 502


def test_origin_drops_the_connection(proxy: ProxyThread, seen: Seen) -> None:
    async def main() -> tuple[Any, Any]:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as s, s.ws_connect(
                ws_url(proxy, "/ws")) as sock:
            await sock.send_str("drop")
            msg = await sock.receive()
            return msg.type, sock.close_code

    kind, code = run(main())
    assert kind is WSMsgType.CLOSE and code == WSCloseCode.GOING_AWAY


def test_client_drops_the_connection(proxy: ProxyThread, seen: Seen) -> None:
    # A raw client that upgrades, sends nothing and goes away: the origin is closed (1001).
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                     b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        assert sock.recv(200).startswith(b"HTTP/1.1 101")
    assert seen.wait_closed() == ("close", (WSCloseCode.GOING_AWAY, ""))


def test_idle_timeout_closes_both_sides(origin: Origin, seen: Seen) -> None:
    with ProxyThread(origin.url(""), websocket_idle_timeout=0.5) as p:
        async def main() -> tuple[Any, float]:
            async with aiohttp.ClientSession(timeout=TIMEOUT) as s, s.ws_connect(
                    ws_url(p, "/ws")) as sock:
                loop = asyncio.get_running_loop()
                started = loop.time()
                await sock.send_str("a")
                assert (await sock.receive()).data == "echo a"
                msg = await sock.receive()
                return (msg.type, msg.data), loop.time() - started

        (kind, code), waited = run(main())
        assert kind is WSMsgType.CLOSE and code == WSCloseCode.GOING_AWAY
        assert 0.4 < waited < 3
        assert seen.wait_closed() == ("close", (WSCloseCode.GOING_AWAY, "idle for 0.5 s"))


def test_message_over_the_limit(origin: Origin, seen: Seen) -> None:
    with ProxyThread(origin.url(""), websocket_max_message=1000) as p:
        async def main() -> tuple[Any, Any]:
            async with aiohttp.ClientSession(timeout=TIMEOUT) as s, s.ws_connect(
                    ws_url(p, "/ws")) as sock:
                await sock.send_bytes(b"x" * 999)
                assert (await sock.receive()).data == b"x" * 999
                await sock.send_bytes(b"x" * 1001)
                msg = await sock.receive()
                return msg.type, msg.data

        kind, code = run(main())
        assert kind is WSMsgType.CLOSE and code == WSCloseCode.MESSAGE_TOO_BIG
        assert seen.wait_closed() == ("close", (WSCloseCode.INTERNAL_ERROR, ""))


def test_many_sockets_at_once(proxy: ProxyThread) -> None:
    async def one(s: aiohttp.ClientSession, i: int) -> list[str]:
        async with s.ws_connect(ws_url(proxy, "/ws")) as sock:
            got = []
            for j in range(5):
                await sock.send_str(f"{i}.{j}")
                got.append((await sock.receive()).data)
            return got

    async def main() -> list[list[str]]:
        async with aiohttp.ClientSession(timeout=TIMEOUT,
                                         connector=aiohttp.TCPConnector(limit=0)) as s:
            return await asyncio.gather(*(one(s, i) for i in range(50)))

    results = run(main())
    assert results == [[f"echo {i}.{j}" for j in range(5)] for i in range(50)]


def test_shutdown_closes_open_sockets(origin: Origin, seen: Seen) -> None:
    with ProxyThread(origin.url(""), shutdown_grace=0.5) as p:
        async def main() -> tuple[Any, Any, float]:
            async with aiohttp.ClientSession(timeout=TIMEOUT) as s, s.ws_connect(
                    ws_url(p, "/ws")) as sock:
                await sock.send_str("a")
                assert (await sock.receive()).data == "echo a"
                loop = asyncio.get_running_loop()
                started = loop.time()
                closing = loop.run_in_executor(None, p.run, p.proxy.close())
                msg = await sock.receive()
                await closing
                return msg.type, msg.data, loop.time() - started

        kind, code, waited = run(main())
        assert kind is WSMsgType.CLOSE and code == WSCloseCode.GOING_AWAY
        assert waited < 5
        assert seen.wait_closed() == ("close", (WSCloseCode.GOING_AWAY, "the proxy stops"))


def test_close_frame_without_a_code(proxy: ProxyThread, seen: Seen) -> None:
    # A raw client's close frame with no payload (no code): the origin gets 1000, and the
    # client gets a close frame back.
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                     b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101")
        sock.sendall(b"\x88\x80\x00\x00\x00\x00")      # FIN + close, masked, empty
        reply = sock.recv(100)
        assert reply[:1] == b"\x88" and reply[2:4] == (1000).to_bytes(2, "big")
    assert seen.wait_closed() == ("close", (WSCloseCode.OK, ""))
