"""A Starlette (or FastAPI: the same middleware) app whose HTML is rewritten as it streams out:
http:// links of known hosts upgraded to https://, a fresh CSP nonce on every inline script and
in the Content-Security-Policy header (htmlstream.integrations.asgi.HtmlRewriteMiddleware).

    python examples/starlette_app.py [--port 8000]   # then open http://127.0.0.1:8000/
"""

from __future__ import annotations

import argparse
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, StreamingResponse
from starlette.routing import Route

from htmlstream import Rewriter, recipes
from htmlstream.http import HttpOptions
from htmlstream.integrations.asgi import HtmlRewriteMiddleware

PAGE = """<!doctype html>
<html><head><title>Shop</title>
<script>console.log("inline scripts need the nonce")</script></head>
<body><h1>Shop</h1>
<img src="http://cdn.example.com/logo.png" alt="logo">
<a href="http://docs.example.com/start">Docs</a>
<a href="http://elsewhere.example.org/">Elsewhere</a>
</body></html>"""

#: The recipes: made once, shared by every request (per-response state lives in its context).
CSP = recipes.csp_nonce()
REWRITER = Rewriter().use(
    recipes.https_upgrade(["*.example.com"], hsts_preload=False, links=True), CSP)


async def home(request: Request) -> HTMLResponse:
    # The app's own policy: the middleware adds the response's nonce to script-src.
    return HTMLResponse(PAGE, headers={"Content-Security-Policy": "script-src 'self'"})


async def stream(request: Request) -> StreamingResponse:
    async def chunks() -> Any:       # a streamed page is rewritten chunk by chunk
        for part in (PAGE[:70], PAGE[70:200], PAGE[200:]):
            yield part.encode()
    return StreamingResponse(chunks(), media_type="text/html; charset=utf-8")


async def api(request: Request) -> JSONResponse:
    return JSONResponse({"html": "<a href='http://docs.example.com/'>untouched: not HTML</a>"})


def context(scope: dict[str, Any]) -> dict[str, Any]:
    # The nonce is made per response, before its headers go out (csp_nonce_hook reads it).
    return dict(CSP.prepare())


app = HtmlRewriteMiddleware(
    Starlette(routes=[Route("/", home), Route("/stream", stream), Route("/api", api)]),
    REWRITER, context=context, options=HttpOptions(drop_etag=True))


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
