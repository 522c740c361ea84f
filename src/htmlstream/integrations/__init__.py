"""Integrations: htmlstream in web frameworks and servers.

Each module is a thin adapter that owns the I/O, the backpressure and the errors of one framework
and drives :class:`htmlstream.http.ResponseRewrite`, which makes every decision (what is
rewritten, the encoding, the headers to send) and transforms the body:

* :mod:`htmlstream.integrations.asgi`: ASGI middleware (Starlette, FastAPI, Django's ASGI
  handler, any ASGI application); no dependency.
* :mod:`htmlstream.integrations.wsgi`: WSGI middleware (PEP 3333; Flask, Django's WSGI handler,
  any WSGI application); no dependency.
* :mod:`htmlstream.integrations.django`: Django middleware (``pip install htmlstream[django]``).

The middlewares share their arguments: the :class:`~htmlstream.Rewriter`, ``options``
(:class:`~htmlstream.http.HttpOptions`), ``context`` (a factory of the per-document context,
called once per response with the request) and ``headers_hook`` (called with that context and
the headers to send when a response is rewritten; by default
:func:`htmlstream.http.csp_nonce_hook`).  docs/guide/integrations.md is the guide.

This package imports no third-party library; each module imports only its framework's.
"""
