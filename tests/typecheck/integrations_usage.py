"""What a ``mypy --strict`` user of htmlstream.integrations writes: checked by ``make lint``
(mypy), not run.  The middlewares fit the frameworks' own types (Starlette's middleware factory,
httpx's transports, wsgiref's server); ``# type: ignore[code]`` marks a mistake the types must
catch."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any
from wsgiref.simple_server import make_server
from wsgiref.types import StartResponse, WSGIEnvironment

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware

import htmlstream as hs
from htmlstream.http import HttpOptions, csp_nonce_hook
from htmlstream.integrations import asgi, wsgi

rw = hs.Rewriter()


def nonce(scope: asgi.Scope) -> dict[str, Any]:
    return {"csp_nonce": secrets.token_urlsafe(16)}


def tag(context: Any, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [*headers, (b"x-rewritten", b"1")]


starlette = Starlette(middleware=[Middleware(asgi.HtmlRewriteMiddleware, rewriter=rw)])
starlette.add_middleware(asgi.HtmlRewriteMiddleware, rewriter=rw, context=nonce,
                         options=HttpOptions(drop_etag=True))
asgi_app = asgi.HtmlRewriteMiddleware(starlette, rw, headers_hook=tag)
asgi_plain = asgi.HtmlRewriteMiddleware(starlette, rw, headers_hook=csp_nonce_hook)
asgi_client = httpx.AsyncClient(transport=httpx.ASGITransport(app=asgi_app))
asgi.HtmlRewriteMiddleware(starlette, rw, headers_hook=lambda c, h: h)
asgi.HtmlRewriteMiddleware(starlette, "rw")  # type: ignore[arg-type]


def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/html")])
    return [b"<p>hello</p>"]


wsgi_app = wsgi.HtmlRewriteMiddleware(app, rw, headers_hook=csp_nonce_hook)
server = make_server("127.0.0.1", 0, wsgi_app)
wsgi_client = httpx.Client(transport=httpx.WSGITransport(app=wsgi_app))
wsgi.HtmlRewriteMiddleware(app, rw, headers_hook=tag)  # type: ignore[arg-type]
