"""What an integration written against ``htmlstream.http`` looks like to ``mypy --strict``:
checked by ``make lint`` (mypy), not run.  The header type given is the header type returned
(``bytes`` pairs for ASGI, ``str`` pairs for WSGI); ``# type: ignore[code]`` marks a mistake the
types must catch."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import htmlstream as hs
from htmlstream.http import (
    Decision,
    HttpOptions,
    MarkdownOptions,
    ResponseRewrite,
    decide,
    decide_headers,
    markdown_requested,
)


def asgi_like(rw: hs.Rewriter, headers: list[tuple[bytes, bytes]],
              body: Iterable[bytes]) -> Iterator[list[tuple[bytes, bytes]] | bytes]:
    t = ResponseRewrite(rw, "GET", 200, headers, request_headers=[(b"range", b"bytes=0-")],
                        options=HttpOptions(flush=False))
    sent = False
    for chunk in body:
        out = t.feed(chunk)
        if t.decided and not sent:
            sent = True
            yield t.headers
        yield out
    out = t.close()
    if not sent:
        yield t.headers
    yield out


def wsgi_like(rw: hs.Rewriter, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    t = ResponseRewrite(rw, "GET", 200, headers, context={"nonce": "abc"})
    t.close()
    names: list[str] = [name.lower() for name, _ in t.headers]
    wrong: list[tuple[bytes, bytes]] = t.headers  # type: ignore[assignment]
    del wrong
    return [(n, v) for n, v in t.headers if n in names]


def decisions(headers: list[tuple[bytes, bytes]]) -> str | None:
    early: Decision[bytes] | None = decide_headers("HEAD", 200, headers)
    late = decide("GET", 200, headers, b"<p>", transcode=True)
    mapped: Decision[str] | None = decide_headers("GET", 200, {"content-type": "text/html"},
                                                  request_headers={"range": "bytes=0-"})
    del mapped
    encoding: str | None = late.encoding
    return early.reason if early is not None else encoding


def markdown_like(rw: hs.Rewriter, headers: list[tuple[bytes, bytes]]) -> int | None:
    request = [(b"accept", b"text/markdown")]
    wanted: bool = markdown_requested(request)
    t = ResponseRewrite(rw, "GET", 200, headers, request_headers=request,
                        markdown=MarkdownOptions(content_signal="ai-train=no"))
    t.close()
    sent: list[tuple[bytes, bytes]] = t.headers
    del sent, wanted
    MarkdownOptions(hold_chars="1")  # type: ignore[arg-type]
    converted: bool = t.markdown
    return t.markdown_tokens if converted else None
