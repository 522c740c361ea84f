"""A mitmproxy addon that rewrites HTML responses as they stream
(``pip install htmlstream[mitmproxy]``).

::

    # rewrite_addon.py, run with: mitmdump -s rewrite_addon.py
    import htmlstream
    from htmlstream import recipes
    from htmlstream.integrations.mitmproxy import HtmlRewriteAddon

    rewriter = htmlstream.Rewriter().use(recipes.obfuscate_emails())
    addons = [HtmlRewriteAddon(rewriter)]

No way around the rewrite: in the ``requestheaders`` hook the request sent upstream gets
``Range`` and ``If-Range`` only for what cannot be a page and an ``Accept-Encoding`` naming only
codings htmlstream decodes (:func:`htmlstream.http.forwarded_request_headers`); a response that
would be rewritten and cannot be (:class:`htmlstream.http.ResponseRefused`: partial, in a coding
not decoded...) is answered 502, its body dropped (logged on ``htmlstream.mitmproxy``); one
refused after the headers went out (a corrupt compressed body before the decision) kills the
flow.  A ``HEAD`` of a page answers the headers of the ``GET``.

In mitmproxy's ``responseheaders`` hook, :class:`htmlstream.http.ResponseRewrite` looks at the
request method, the status and the headers:

* when they decide alone (``HEAD``, 304, an image, a ``Range`` request...: a pass-through),
  the flow is left as it is;
* otherwise the response is streamed: ``flow.response.stream`` becomes a callable that gives
  each upstream chunk to ``ResponseRewrite.feed`` (``b""``, mitmproxy's end of body, to
  ``close``) and returns the output as a list of pieces (an empty list while the decision is
  held back: an empty ``bytes`` would be sent as an empty chunk, which ends a chunked body).
  mitmproxy sends a streamed response's headers before its first body byte, so they cannot
  wait for the decision, which may need the first 1024 decoded body bytes
  (sniffing, the ``<meta charset>`` prescan): the addon sends
  :meth:`~htmlstream.http.ResponseRewrite.early_headers`, a rewrite's headers
  (``Content-Length`` and digests dropped, ``ETag`` weakened), which are right when the body
  then passes through untouched too (JSON served as ``text/html``...).  An HTTP/1.1 client gets
  the body chunked.  The headers hook (default :func:`htmlstream.http.csp_nonce_hook`) is
  called on those headers.

The body stays in its content coding on the wire: a gzip, deflate, br or zstd body is decoded,
rewritten and re-encoded by ``ResponseRewrite``, chunk by chunk, with its decoded-size limit.
An error after the headers went out (a corrupt compressed body, a handler's exception) kills
the flow: mitmproxy closes the client connection, so the client sees an incomplete response,
never a clean end.

mitmproxy's own whole-body features (``flow.response.text`` in a ``response`` hook, the
``modify_body`` option) do not see a streamed body; :attr:`HtmlRewriteAddon.only` (a predicate
of the flow) limits the addon to some flows.  mitmproxy 11.0.2 is the last release for Python
3.11 and pins ``Brotli<=1.1``: with it, ``br`` responses pass through untouched (htmlstream needs
brotli 1.2's bounded decoder); docs/guide/integrations.md says why this extra is not in ``all``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

try:
    from mitmproxy import http as mitmproxy_http
except ImportError as exc:     # pragma: no cover - the message is the point
    raise ImportError(
        f"htmlstream.integrations.mitmproxy needs mitmproxy: pip install "
        f"'htmlstream[mitmproxy]' ({exc})") from exc

from htmlstream import Rewriter
from htmlstream.http import (
    HttpOptions,
    ResponseRefused,
    ResponseRewrite,
    csp_nonce_hook,
    forwarded_request_headers,
)

__all__ = ["ContextFactory", "HeadersHook", "HtmlRewriteAddon", "logger"]

#: Errors of streamed flows (the flow is killed) and why responses were not rewritten (DEBUG).
logger: Final = logging.getLogger("htmlstream.mitmproxy")

#: A function of the flow giving the per-document context (``Rewriter.stream(context=...)``).
ContextFactory = Callable[[Any], Mapping[str, Any] | None]
#: Called with the context and the headers to send (pairs of ``str``); returns those to send.
HeadersHook = Callable[[Mapping[str, Any] | None, list[tuple[str, str]]], list[tuple[str, str]]]


class HtmlRewriteAddon:
    """Rewrite the HTML responses passing through mitmproxy, streaming.

    Args:
        rewriter: the rules (shared by every flow; each response gets its own stream).
        options: what :class:`~htmlstream.http.ResponseRewrite` rewrites, and how.
        context: called with each flow; its result is the per-document context.
        headers_hook: called with that context and the headers sent for a response that may
            be rewritten (default :func:`htmlstream.http.csp_nonce_hook`); None: none.
        only: called with each flow; False leaves it alone (default: every flow).
    """

    def __init__(
        self,
        rewriter: Rewriter,
        *,
        options: HttpOptions | None = None,
        context: ContextFactory | None = None,
        headers_hook: HeadersHook | None = csp_nonce_hook,
        only: Callable[[Any], bool] | None = None,
    ) -> None:
        if not isinstance(rewriter, Rewriter):
            raise TypeError(f"HtmlRewriteAddon(): rewriter must be a Rewriter, not "
                            f"{type(rewriter).__name__}")
        self.rewriter = rewriter
        self.options = options
        self.context = context
        self.headers_hook = headers_hook
        self.only = only

    def requestheaders(self, flow: mitmproxy_http.HTTPFlow) -> None:
        """mitmproxy's hook: the request headers arrived.  What goes upstream: ``Range`` and
        ``If-Range`` only for what cannot be a page, ``Accept-Encoding`` naming only codings
        htmlstream decodes (:func:`htmlstream.http.forwarded_request_headers`)."""
        if self.only is not None and not self.only(flow):
            return
        request = flow.request
        headers = forwarded_request_headers(request.method, request.path,
                                            list(request.headers.fields), self.options)
        request.headers.fields = tuple(headers)

    def responseheaders(self, flow: mitmproxy_http.HTTPFlow) -> None:
        """mitmproxy's hook: the response headers arrived, the body not yet."""
        response = flow.response
        if response is None or (self.only is not None and not self.only(flow)):
            return
        if self.rewriter.has_async_handlers:
            return      # (rewritten whole in response(): mitmproxy's stream callback is sync)
        request = flow.request
        ctx = self.context(flow) if self.context is not None else None
        try:
            transform: ResponseRewrite[str] = ResponseRewrite(
                self.rewriter, request.method, response.status_code,
                [(name, value) for name, value in _str_fields(response.headers.fields)],
                request_headers=_str_fields(request.headers.fields), options=self.options,
                context=ctx)
        except ResponseRefused as exc:
            _refuse(flow, exc)
            return
        if transform.decided:
            decision = transform.decision
            if decision is not None and decision.rewritten_headers:    # a HEAD of a page
                headers = transform.headers
                if self.headers_hook is not None:
                    headers = self.headers_hook(ctx, list(headers))
                response.headers.fields = tuple(
                    (name.encode("latin-1"), value.encode("latin-1")) for name, value in headers)
            logger.debug("%s %s: passed: %s", request.method, request.pretty_url,
                         transform.reason)
            return
        headers = transform.early_headers()
        if self.headers_hook is not None:
            headers = self.headers_hook(ctx, list(headers))
        names = {name.lower() for name, _ in headers}
        if (request.http_version == "HTTP/1.1" and response.http_version.startswith("HTTP/1")
                and "content-length" not in names and "transfer-encoding" not in names):
            headers.append(("Transfer-Encoding", "chunked"))
        response.headers.fields = tuple((name.encode("latin-1"), value.encode("latin-1"))
                                        for name, value in headers)
        response.stream = _Body(transform, flow)


    async def response(self, flow: mitmproxy_http.HTTPFlow) -> None:
        """mitmproxy's hook: the whole response arrived.  Only for a rewriter with async
        handlers (issue 30), which mitmproxy's synchronous stream callback cannot wait for:
        its responses are buffered by mitmproxy and rewritten whole here."""
        response = flow.response
        if (not self.rewriter.has_async_handlers or response is None or response.stream
                or (self.only is not None and not self.only(flow))):
            return
        request = flow.request
        ctx = self.context(flow) if self.context is not None else None
        try:
            transform: ResponseRewrite[str] = ResponseRewrite(
                self.rewriter, request.method, response.status_code,
                _str_fields(response.headers.fields),
                request_headers=_str_fields(request.headers.fields), options=self.options,
                context=ctx)
            out = [piece async for piece in transform.afeed_iter(response.raw_content or b"")]
            out += [piece async for piece in transform.aclose_iter()]
        except ResponseRefused as exc:      # (never the original bytes: a 502)
            _refuse(flow, exc)
            response.stream = False
            response.raw_content = _REFUSED_BODY
            return
        except Exception as exc:
            logger.warning("%s %s: rewrite failed, connection killed: %s", request.method,
                           request.pretty_url, exc)
            if flow.killable:
                flow.kill()
            return
        if not transform.rewriting:
            logger.debug("%s %s: passed: %s", request.method, request.pretty_url,
                         transform.reason)
            return
        body = b"".join(out)
        headers = transform.headers
        if self.headers_hook is not None:
            headers = self.headers_hook(ctx, list(headers))
        headers = [(name, value) for name, value in headers
                   if name.lower() not in ("content-length", "transfer-encoding")]
        headers.append(("Content-Length", str(len(body))))
        response.headers.fields = tuple((name.encode("latin-1"), value.encode("latin-1"))
                                        for name, value in headers)
        response.raw_content = body


_REFUSED_BODY: Final = b"the response cannot be rewritten\n"


def _refuse(flow: mitmproxy_http.HTTPFlow, exc: ResponseRefused) -> None:
    """A 502 instead of a response that would be rewritten and cannot be: the status and
    headers replaced, the upstream's body read and dropped."""
    response = flow.response
    assert response is not None
    logger.warning("%s %s: 502: %s", flow.request.method, flow.request.pretty_url, exc.reason)
    response.status_code = 502
    response.reason = "Bad Gateway"
    response.headers.fields = ((b"content-type", b"text/plain; charset=utf-8"),
                               (b"content-length", str(len(_REFUSED_BODY)).encode()))

    def dropped(chunk: bytes) -> list[bytes]:
        return [] if chunk else [_REFUSED_BODY]

    response.stream = dropped


def _str_fields(fields: tuple[tuple[bytes, bytes], ...]) -> list[tuple[str, str]]:
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in fields]


class _Body:
    """``flow.response.stream``: each chunk through the transform (``b""``: the end)."""

    def __init__(self, transform: ResponseRewrite[str], flow: mitmproxy_http.HTTPFlow) -> None:
        self._transform = transform
        self._flow = flow
        self._done = False

    def __call__(self, chunk: bytes) -> list[bytes]:
        # A list: no output is no piece, never b"", which mitmproxy would send as an empty
        # chunk, the end of a chunked body.
        if self._done:
            return []
        try:
            if chunk:
                out = self._transform.feed(chunk)
            else:
                self._done = True
                out = self._transform.close()
            return [out] if out else []
        except Exception as exc:
            # The headers are sent: an incomplete body must not end cleanly.
            self._done = True
            logger.warning("%s %s: rewrite failed, connection killed: %s",
                           self._flow.request.method, self._flow.request.pretty_url, exc)
            if self._flow.killable:
                self._flow.kill()
            return []
