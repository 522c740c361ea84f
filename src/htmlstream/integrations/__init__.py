"""Integrations: htmlstream in web frameworks, servers and HTTP clients.

Each module is a thin adapter that owns the I/O, the backpressure and the errors of one library
and drives :class:`htmlstream.http.ResponseRewrite`, which makes every decision (what is
rewritten, the encoding, the headers to send) and transforms the body:

* :mod:`htmlstream.integrations.asgi`: ASGI middleware (Starlette, FastAPI, Django's ASGI
  handler, any ASGI application); no dependency.
* :mod:`htmlstream.integrations.wsgi`: WSGI middleware (PEP 3333; Flask, Django's WSGI handler,
  any WSGI application); no dependency.
* :mod:`htmlstream.integrations.django`: Django middleware (``pip install htmlstream[django]``).
* :mod:`htmlstream.integrations.aiohttp`: aiohttp server middleware
  (``pip install htmlstream[aiohttp]``).
* :mod:`htmlstream.integrations.httpx`: rewriting httpx responses as they stream, and transports
  that rewrite every response of a client (``pip install htmlstream[httpx]``).
* :mod:`htmlstream.integrations.mitmproxy`: a mitmproxy addon that rewrites streamed responses
  (``pip install htmlstream[mitmproxy]``, in mitmproxy's own environment).
* :mod:`htmlstream.integrations.proxy`: ``htmlstream proxy``, a rewriting reverse proxy (HTTP
  and WebSockets) in front of one origin (``pip install htmlstream[proxy]``).

The middlewares share their arguments: the :class:`~htmlstream.Rewriter`, ``options``
(:class:`~htmlstream.http.HttpOptions`), ``context`` (a factory of the per-document context,
called once per response with the request) and ``headers_hook`` (called with that context and
the headers to send when a response is rewritten; by default
:func:`htmlstream.http.csp_nonce_hook` for the ASGI, WSGI and Django middlewares).
docs/guide/integrations.md is the guide.

This package imports no third-party library; each module imports only its library.
"""
