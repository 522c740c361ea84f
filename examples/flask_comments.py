"""A Flask comment box: what visitors post is sanitized with htmlstream.sanitize and a Policy
(links and basic formatting kept; scripts, handlers, styles and javascript: URLs dropped).

    pip install flask; python examples/flask_comments.py   # then open http://127.0.0.1:5000/
"""

from __future__ import annotations

import argparse
import threading
from html import escape

from flask import Flask, redirect, request

import htmlstream as hs

#: What a comment may hold: ammonia's defaults narrowed to inline formatting and links.
POLICY = hs.Policy(
    tags={"a", "b", "strong", "i", "em", "code", "p", "br", "ul", "ol", "li", "blockquote"},
    attributes={"a": {"href", "title"}},
    url_schemes={"http", "https", "mailto"},
)

app = Flask(__name__)
_comments: list[tuple[str, str]] = []     # (name, sanitized HTML), newest first
_lock = threading.Lock()


@app.get("/")
def index() -> str:
    with _lock:
        items = "".join(f"<li><b>{escape(name)}</b>: {body}</li>" for name, body in _comments)
    return ("<!doctype html><title>Comments</title><h1>Comments</h1>"
            "<form method=post action=/comments><input name=name placeholder=Name>"
            "<textarea name=body></textarea><button>Post</button></form>"
            f"<ul id=comments>{items}</ul>")


@app.post("/comments")
def post_comment() -> object:
    name = request.form.get("name", "").strip() or "anonymous"
    body = hs.sanitize(request.form.get("body", ""), POLICY)   # sanitized once, when stored
    with _lock:
        _comments.insert(0, (name[:80], body))
        del _comments[100:]
    return redirect("/", code=303)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)
    app.run(host=args.host, port=args.port)


if __name__ == "__main__":
    main()
