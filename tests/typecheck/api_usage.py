"""What a ``mypy --strict`` user of htmlstream writes: checked by ``make lint`` (mypy), not run.

Each ``# type: ignore[code]`` marks a mistake the public types must catch: mypy's strict mode
reports an ignore that is not needed, so if a type grows too loose, the check fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import htmlstream as hs
from htmlstream import handlers, tokens


# Handlers: functions, lambdas and methods, whatever they call their parameter and return.
def upgrade(el: hs.Element) -> None:
    href = el.get_attribute("href")
    if href is not None:
        el.set_attribute("href", href.replace("http:", "https:", 1))


def count_text(chunk: hs.TextChunk) -> int:
    return len(chunk.text)


def on_end(end: hs.DocumentEnd) -> None:
    end.append("<!-- end -->", html=True)


def wrong(chunk: hs.TextChunk) -> None:
    chunk.remove()


class Links:
    """A handler object with two of the three methods."""

    def element(self, element: hs.Element) -> None:
        element.on_end_tag(self.end_tag)

    def text(self, chunk: hs.TextChunk) -> None:
        chunk.before("")

    def end_tag(self, end: hs.EndTag) -> None:
        end.after("!")


class Page:
    def doctype(self, doctype: hs.Doctype) -> None: ...
    def end(self, end: hs.DocumentEnd) -> None: ...


class NoHandlers:
    def elements(self, element: hs.Element) -> None: ...


element_handler: handlers.ElementHandler = upgrade
text_handler: handlers.TextHandler = count_text
end_tag_handler: handlers.EndTagHandler = Links().end_tag
content_handlers: handlers.ElementContentHandlers = Links()
document_handlers: handlers.DocumentContentHandlers = Page()

on_limit: hs.OnLimit = "passthrough"
rw = hs.Rewriter(encoding="utf-8", on_limit=on_limit, sniff=True)
rw.on("a[href]", element=upgrade, text=count_text).on("p", Links())
rw.on("img", element=lambda el: el.set_attribute("loading", "lazy"))
rw.on_document(Page(), end=on_end)
rw.on_document(doctype=lambda d: d.remove(), comments=lambda c: c.remove())


@rw.element("script")
def drop(el: hs.Element) -> None:
    el.remove()


@rw.text("title")
def title(chunk: hs.TextChunk) -> None:
    chunk.replace(chunk.text.upper())


same: Callable[[hs.Element], None] = drop     # the decorators return the function as it was

as_bytes: bytes = rw.rewrite(b"<p>")
as_str: str = rw.rewrite("<p>")
stream: hs.RewriterStream = rw.stream(encoding="windows-1252")
out: bytes = stream.feed(b"<p>") + stream.close()
parsed: hs.SelectorList = hs.parse_selector("a[href] > b")

rw.on("p", element=wrong)       # type: ignore[arg-type]
rw.on("p", NoHandlers())        # type: ignore[arg-type]
rw.on_document(end=upgrade)     # type: ignore[arg-type]
hs.Rewriter(on_limit="ignore")  # type: ignore[arg-type]


@rw.element("p")                # type: ignore[type-var]
def not_an_element_handler(chunk: hs.TextChunk) -> None: ...


# Tokens: the classes of the htmlstream.tokens namespace.
def links(html: bytes) -> Iterator[str]:
    for token in hs.tokenize(html, feedback=True, initial_state="data", max_attributes=64):
        if isinstance(token, tokens.StartTag) and token.name == "a":
            yield token.attributes.get("href", "")
        elif isinstance(token, tokens.Text) and token.text_type is hs.TextType.DATA:
            yield token.text


state: hs.InitialState = "rcdata"
tokenizer = hs.Tokenizer(initial_state=state, last_start_tag="title")
found: list[tokens.Token] = tokenizer.feed(b"a</title>") + tokenizer.close()
hs.tokenize(b"", initial_state="script")  # type: ignore[arg-type]
hs.tokenize(b"", feedbak=False)           # type: ignore[call-arg]
