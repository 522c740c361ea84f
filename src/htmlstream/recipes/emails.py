"""E-mail address obfuscation in Cloudflare's format: obfuscate_emails and decode_emails.

The format (what Cloudflare's Scrape Shield writes, and what its ``email-decode.min.js`` and every
scraper's decoder read):

* an address in text becomes ``<a href="/cdn-cgi/l/email-protection" class="__cf_email__"
  data-cfemail="HEX">[email&#160;protected]</a>``, or a ``<span>`` with the same class and
  attribute when the text is already inside a link;
* a ``mailto:`` link's ``href`` becomes ``/cdn-cgi/l/email-protection#HEX`` (HEX of everything
  after ``mailto:``, query included);
* HEX is a key byte followed by the UTF-8 bytes of the address, each XORed with the key, as two
  lower-case hex digits each.  The key is random, a new one per occurrence.

What counts as an address (practical, in the spirit of RFC 5321/6531, as Cloudflare's): text is
read in *runs* of address characters (letters and digits of any script, ``_ . % + -`` and
``@``); a run, less its leading and trailing dots, is an address when it is
``local@domain`` with

* ``local``: dot-separated atoms of letters, digits, ``_ % + -`` (at most 64 UTF-8 bytes);
* ``domain``: two or more dot-separated labels of letters and digits with inner hyphens (at most
  63 characters each), the last one (the TLD) two or more letters or a punycode ``xn--`` label;
* the whole at most 254 UTF-8 bytes;
* the TLD is not a common file name extension (``logo@2x.png`` is a file name).

So an address must stand apart from other address characters: ``a@b.com`` in
``mail a@b.com.`` or ``(a@b.com)`` or ``&lt;a@b.com&gt;`` is one, ``x@a@b.com`` and
``a@b.com_x`` are not; a character reference is never part of an address (``&`` ends a run),
and runs longer than :data:`MAX_RUN` characters are not searched.  Because addresses are whole
runs, a stream carries at most the open run (:data:`MAX_RUN` characters) from one text chunk to
the next, and the output does not depend on how the input was cut.

Text that is not an address is written back from its raw bytes (``&amp;`` stays ``&amp;``).
"""

from __future__ import annotations

import codecs
import json
import random as _random
import re
from collections.abc import Callable, MutableMapping
from html import escape
from typing import Any

from htmlstream import Element, EndTag, Rewriter, TextChunk, TextType, lookup_encoding
from htmlstream.errors import check_type
from htmlstream.units import HTML_NS, Comment, DocumentEnd

__all__ = [
    "DEFAULT_PATH",
    "MAX_RUN",
    "DecodeEmails",
    "ObfuscateEmails",
    "decode_emails",
    "decode_hex",
    "decoder_script",
    "encode_hex",
    "find_addresses",
    "obfuscate_emails",
]

#: Where Cloudflare's obfuscated links point (its "e-mail protection" page for visitors without
#: JavaScript).
DEFAULT_PATH = "/cdn-cgi/l/email-protection"
#: The longest run of address characters that is searched for an address (an address is at most
#: 254 bytes; the rest is room for surrounding dots); also the most a stream carries.
MAX_RUN = 320

_CONTEXT_KEY = "obfuscate_emails"
_SYSTEM_RANDOM = _random.SystemRandom()
_PROTECTED = "[email&#160;protected]"
#: Elements whose content is never touched (raw-text elements are skipped by their text type).
#: (<select>: the parser drops the elements an <a> inserted there would be.)  The engine
#: answers whether text or a link is inside one (TextChunk.inside, Element.inside).
_SKIP_NAMES = ("head", "noscript", "template", "select", "svg", "math")
#: Elements only their end tag or the end of the input closes, inside which a script does not
#: run; and <plaintext>, which nothing closes.
_EOF_SELECTOR = ("script, style, textarea, title, xmp, iframe, noembed, noframes, noscript, "
                 "template, plaintext")

#: File name extensions that are no top-level domain: ``logo@2x.png`` is a file name.
_FILE_EXTENSIONS = frozenset((
    "png", "jpg", "jpeg", "gif", "webp", "avif", "svg", "ico", "bmp", "tif", "tiff", "css", "js",
    "mjs", "json", "pdf", "txt", "html", "htm", "xml", "zip"))
# A run: address characters (\w is Unicode letters, digits and "_").
_RUN = re.compile(r"[\w.%+\-@]+")
_ATOM = r"[\w%+\-]+"
_LABEL = r"[^\W_](?:[\w\-]{0,61}[^\W_])?"
_ADDRESS = re.compile(
    rf"(?P<local>{_ATOM}(?:\.{_ATOM})*)@(?P<domain>(?:{_LABEL}\.)+(?:[^\W\d_]{{2,}}|xn--[a-z0-9\-]+))",
    re.IGNORECASE,
)


def is_address(candidate: str) -> bool:
    """Whether ``candidate`` (a whole run, dots stripped) is an address by the rules above."""
    m = _ADDRESS.fullmatch(candidate)
    if m is None or "_" in m["domain"]:
        return False
    if m["domain"].rpartition(".")[2].lower() in _FILE_EXTENSIONS:
        return False
    return len(m["local"].encode("utf-8")) <= 64 and len(candidate.encode("utf-8")) <= 254


def find_addresses(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of the addresses in ``text`` (a whole text: its first and last
    runs are taken as complete)."""
    check_type(text, str, "find_addresses()", "text", "a str")
    if "@" not in text:
        return []
    spans = []
    for m in _RUN.finditer(text):
        start, end = m.span()
        if end - start > MAX_RUN or "@" not in m[0]:
            continue
        if start and (text[start - 1] == "&" or text[start - 2: start] == "&#"):
            continue        # the run starts with a character reference's name or number
        run = m[0]
        stripped = run.strip(".")
        if is_address(stripped):
            lead = len(run) - len(run.lstrip("."))
            spans.append((start + lead, start + lead + len(stripped)))
    return spans


def encode_hex(address: str, key: int) -> str:
    """``address`` in Cloudflare's format: ``key`` (0-255), then each UTF-8 byte XOR ``key``."""
    check_type(address, str, "encode_hex()", "address", "a str")
    check_type(key, int, "encode_hex()", "key", "an int (0-255)")
    if not 0 <= key <= 255:
        raise ValueError(f"key {key!r} is not in range(256)")
    table = _XOR_TABLES[key]
    if table is None:
        table = _XOR_TABLES[key] = bytes(b ^ key for b in range(256))
    return f"{key:02x}{address.encode('utf-8').translate(table).hex()}"


#: Per key, the byte translation table that XORs with it (made at first use).
_XOR_TABLES: list[bytes | None] = [None] * 256


def decode_hex(encoded: str) -> str | None:
    """The address ``encoded`` holds (Cloudflare's format), or None if it is not valid hex of
    UTF-8 text."""
    check_type(encoded, str, "decode_hex()", "encoded", "a str of hex digits")
    try:
        data = bytes.fromhex(encoded)
    except ValueError:
        return None
    if not data:
        return None
    key = data[0]
    try:
        return bytes(b ^ key for b in data[1:]).decode("utf-8")
    except UnicodeDecodeError:
        return None


# The decoder: our own, small.  It runs where it is inserted (before </body>) and once more at
# DOMContentLoaded (for what comes after it), decodes the hex as UTF-8 (percent-escapes through
# decodeURIComponent), rewrites the links (getAttribute: the path as written, not resolved) and
# replaces every .__cf_email__ element by the address as text; then removes itself.  It has no
# "<" and no "&": where the body ends inside <svg> (its end tag there, or the end of the input),
# it is an SVG <script>, whose text the tokenizer reads as markup, not raw text, and it must read
# as the same code there.
_DECODER_JS = (
    "(function(){var P=%s+\"#\",D=document,S=D.currentScript;"
    "function d(h){var k=parseInt(h.substr(0,2),16),s=\"\",i,b;"
    "if(4>h.length||h.length%%2||/[^0-9a-f]/i.test(h))throw h;"
    "for(i=2;h.length>i;i+=2){b=parseInt(h.substr(i,2),16)^k;s+=\"%%\"+(16>b?\"0\":\"\")"
    "+b.toString(16)}return decodeURIComponent(s)}"
    "function r(){var l=D.querySelectorAll(\"a[href],area[href]\"),i,e,h,j;"
    "for(i=0;l.length>i;i++){e=l[i];h=e.getAttribute(\"href\");j=h.indexOf(P);"
    "if(j>-1)try{e.setAttribute(\"href\",\"mailto:\"+d(h.slice(j+P.length)))}catch(x){}}"
    "l=D.querySelectorAll(\".__cf_email__[data-cfemail]\");"
    "for(i=0;l.length>i;i++){e=l[i];"
    "try{e.parentNode.replaceChild(D.createTextNode(d(e.getAttribute(\"data-cfemail\"))),e)}"
    "catch(x){}}}"
    "r();if(D.readyState==\"loading\")D.addEventListener(\"DOMContentLoaded\",r);"
    "if(S?S.parentNode:0)S.parentNode.removeChild(S)})();"
)
#: The attribute that marks our decoder script (``decode_emails`` finds it by it).
SCRIPT_MARK = 'data-htmlstream="email-decode"'


def decoder_script(path: str = DEFAULT_PATH, nonce: str | None = None) -> str:
    """The ``<script>`` element that decodes the obfuscated addresses in a browser (HTML)."""
    check_type(path, str, "decoder_script()", "path", "a str (a URL path)")
    check_type(nonce, (str, type(None)), "decoder_script()", "nonce", "a str or None")
    # JSON is a JS string literal; "<" and "&" escaped so that it reads the same as raw text
    # and as an SVG script's text (no "</script", no tag, no character reference).
    literal = json.dumps(path).replace("<", "\\u003c").replace("&", "\\u0026")
    attrs = f' nonce="{escape(nonce)}"' if nonce else ""
    return (f'<script data-cfasync="false" {SCRIPT_MARK}{attrs}>'
            f"{_DECODER_JS % literal}</script>")


class _State:
    """What obfuscate_emails remembers while one document streams (in its context)."""

    __slots__ = ("carry", "codec", "count", "eof_open", "inserted", "long_run", "off",
                 "pending", "rng")

    def __init__(self, codec: str, rng: _random.Random) -> None:
        self.carry = ""          # the open run at the end of the last chunk, held back
        self.pending = b""       # the bytes of a character the last chunk ended in the middle of
        self.long_run = False    # inside a run longer than MAX_RUN: passed on, not searched
        self.off = False         # inside <!--email_off--> ... <!--/email_off-->
        self.count = 0           # addresses and links obfuscated
        self.inserted = False    # the decoder script is in the output
        self.eof_open: list[str] = []   # raw-text elements and templates the input left open
        self.codec = codec
        self.rng = rng              # where this document's keys come from


def _is_run_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_.%+-@"


class ObfuscateEmails:
    """The recipe :func:`obfuscate_emails` makes (its configuration only; see there)."""

    def __init__(self, *, path: str = DEFAULT_PATH, links: bool = True, text: bool = True,
                 script: bool = True, random: _random.Random | int | None = None) -> None:
        if not path or any(c in path for c in "#\"'<> \t\n"):
            raise ValueError(f"path {path!r} must be a non-empty URL path without '#', quotes, "
                             "'<', '>' or spaces")
        self.path = path
        self.links = links
        self.text = text
        self.script = script
        self._random = random
        self._href = escape(path)

    def _rng(self) -> _random.Random:
        """The key source of a new document."""
        if self._random is None:
            return _SYSTEM_RANDOM
        if isinstance(self._random, int):
            return _random.Random(self._random)
        return self._random

    def _obfuscated(self, address: str, in_link: bool, rng: _random.Random) -> str:
        code = encode_hex(address, rng.randrange(256))
        if in_link:
            return f'<span class="__cf_email__" data-cfemail="{code}">{_PROTECTED}</span>'
        return (f'<a href="{self._href}" class="__cf_email__" data-cfemail="{code}">'
                f"{_PROTECTED}</a>")

    def apply(self, rewriter: Rewriter, /) -> None:
        """Register the handlers on ``rewriter``."""
        codec = lookup_encoding(rewriter.encoding).codec

        def state_of(ctx: MutableMapping[str, Any]) -> _State:
            st = ctx.get(_CONTEXT_KEY)
            if st is None:
                st = ctx[_CONTEXT_KEY] = _State(codec, self._rng())
            return st

        # (whether text or a link is in a link or in an element whose content is not touched:
        # the handlers ask the engine, which reads the tree builder's stack of open elements,
        # implied and re-opened elements too)
        rewriter.on_document(comments=self._comment(state_of))
        if self.text:
            # (the engine hands the text handler only text that may hold an address: a text
            # node in one piece with an "@"; a node in several pieces, piece by piece, so that
            # the carry goes on to its end)
            rewriter.on_document(text=self._text(state_of), text_filter="@")
        if self.links:
            rewriter.on('a[href*="mailto:" i], area[href*="mailto:" i]',
                        element=self._mailto(state_of))
        if self.script:
            # (an implied <body> too: the script goes before </body> when the body has no
            # start tag)
            rewriter.on("body", element=self._body(state_of), implied=True)
            # (<noscript> is raw text only with scripting on; off, it is an ordinary element
            # that other tags may close)
            eof = _EOF_SELECTOR if rewriter.scripting else _EOF_SELECTOR.replace("noscript, ", "")
            rewriter.on(eof, element=self._unclosed(state_of))
            rewriter.on_document(end=self._end(state_of))

    # ---------------------------------------------------------------- handlers

    def _comment(self, state_of: Callable[..., _State]) -> Callable[[Comment], None]:
        def comment(c: Comment) -> None:
            text = c.text.strip()
            if text == "email_off":
                state_of(c.context).off = True
            elif text == "/email_off":
                state_of(c.context).off = False
        return comment

    def _mailto(self, state_of: Callable[..., _State]) -> Callable[[Element], None]:
        def mailto(el: Element) -> None:
            st = state_of(el.context)
            if st.off or el.inside(*_SKIP_NAMES):
                return
            href = (el.get_attribute("href") or "").strip(" \t\n\f\r")
            if href[:7].lower() != "mailto:" or "@" not in href:
                return
            el.set_attribute("href", f"{self.path}#{encode_hex(href[7:], st.rng.randrange(256))}")
            st.count += 1
        return mailto

    def _body(self, state_of: Callable[..., _State]) -> Callable[[Element], None]:
        def body(el: Element) -> None:
            if not el.can_have_content:
                return
            st = state_of(el.context)

            def end(tag: EndTag) -> None:
                # (the input ended in raw text or a template left open: _end closes them
                # first)
                if st.count and not st.inserted and not st.eof_open:
                    st.inserted = True
                    tag.before(decoder_script(self.path, tag.context.get("csp_nonce")),
                               html=True)
            el.on_end_tag(end)
        return body

    def _unclosed(self, state_of: Callable[..., _State]) -> Callable[[Element], None]:
        """Where the script would not run if it came at the end: in raw text or a <template>
        left open (only their end tag or the end of the input closes them), after
        <plaintext> (nothing closes it: the script goes before it)."""
        def unclosed(el: Element) -> None:
            st = state_of(el.context)
            if el.tag_name == "plaintext" and el.namespace_uri == HTML_NS:
                if st.count and not st.inserted:
                    st.inserted = True
                    el.before(decoder_script(self.path, el.context.get("csp_nonce")), html=True)
                st.inserted = True      # nothing after it is obfuscated, nor can be decoded
                return
            if not el.can_have_content or el.namespace_uri != HTML_NS:
                return          # (in SVG and MathML these names are ordinary elements)
            name = el.tag_name

            def end(tag: EndTag) -> None:
                if tag.implicit:        # the end of the input
                    st.eof_open.append(name)
            el.on_end_tag(end)
        return unclosed

    def _end(self, state_of: Callable[..., _State]) -> Callable[[DocumentEnd], None]:
        def end(doc: DocumentEnd) -> None:
            st = state_of(doc.context)
            if st.count and not st.inserted:
                st.inserted = True
                # Close what the input left open and would keep the script from running.
                # (a script may end in its "double escaped" state, after "<!--<script>",
                # where one "</script>" only goes back to the "escaped" state: a second one
                # ends it, or is a stray end tag the parser ignores)
                closers = "".join("</script></script>" if name == "script" else f"</{name}>"
                                  for name in st.eof_open)
                doc.append(closers + decoder_script(self.path, doc.context.get("csp_nonce")),
                           html=True)
        return end

    def _text(self, state_of: Callable[..., _State]) -> Callable[[TextChunk], None]:
        data = TextType.DATA
        obfuscated = self._obfuscated

        def text(chunk: TextChunk) -> None:
            raw = chunk.raw
            ctx = chunk.context
            st = ctx.get(_CONTEXT_KEY)
            # The common case first: no "@", nothing held back before, nothing to hold back.
            if b"@" not in raw and (st is None or not (st.carry or st.pending or st.long_run)) \
                    and (not raw or raw[-1] in _BOUNDARY_BYTES or chunk.last_in_text_node):
                return
            last = chunk.last_in_text_node
            if st is None:
                st = state_of(ctx)
            if st.off or chunk.text_type is not data or chunk.inside(*_SKIP_NAMES):
                return
            split = bool(st.pending)    # the chunk starts with the rest of a character
            s = _decode(chunk, raw, st, last)
            if s is None:               # not text we can write back: pass it on as it is
                if st.carry:
                    chunk.before(st.carry, html=True)
                    st.carry = ""
                st.long_run = False
                return
            carry = st.carry
            begin = 0
            if st.long_run:
                # The rest of a run too long to be searched: pass it on up to its end.
                m = _RUN.match(s)
                begin = m.end() if m else 0
                if begin < len(s) or last:
                    st.long_run = False
            elif carry:
                s = carry + s
            hold = len(s)
            if not last and not st.long_run:
                hold = _open_run_start(s)
                if hold < 0:            # the open run is too long: pass it on, unsearched
                    hold = len(s)
                    st.long_run = True
                # Also held: what reads differently depending on what follows (a "<", a
                # character reference's "&" or "&#", a CR): the engine would rewrite it if
                # what follows it were not the input that followed it.
                hold = _safe_end(s, hold, begin)
            spans = find_addresses(s[begin:hold]) if begin < hold else []
            if not spans and not carry and hold == len(s) and not st.pending and not split:
                return
            out = [s[:begin]] if begin else []
            pos = begin
            in_link = bool(spans) and chunk.inside("a")
            for start, end in spans:
                start += begin
                end += begin
                out.append(s[pos:start])
                out.append(obfuscated(s[start:end], in_link, st.rng))
                pos = end
            out.append(s[pos:hold])
            st.count += len(spans)
            st.carry = s[hold:]
            chunk.replace("".join(out), html=True)
        return text


#: The ASCII bytes a chunk can end with and have nothing held back: no part of a run, and
#: nothing whose reading depends on what follows ("<", "&", "#", CR).
_BOUNDARY_BYTES = frozenset(
    b for b in range(128) if not _is_run_char(chr(b)) and chr(b) not in "<&#\r"
)


def _safe_end(s: str, hold: int, floor: int) -> int:
    """Where to cut ``s`` (at most at ``hold``, not before ``floor``) so that what is written
    reads the same whatever follows: not after a "<", a CR, or a character reference that may
    not be finished ("&", "&#", "&am", "&#x4")."""
    low = max(floor, hold - 8)
    while hold > low and s[hold - 1] in "<&#\r":
        hold -= 1
    low = max(floor, hold - 40)
    while True:             # ("&not&not": each may go on, within the 40 characters looked at)
        amp = s.rfind("&", low, hold)
        if amp < 0 or not _REFERENCE_START.fullmatch(s, amp + 1, hold):
            return hold
        hold = amp
        while hold > low and s[hold - 1] in "<#\r":
            hold -= 1


_REFERENCE_START = re.compile(r"#?[0-9A-Za-z]*")


def _open_run_start(s: str) -> int:
    """Where the run that reaches the end of ``s`` starts (``len(s)`` if none), or -1 if it is
    longer than MAX_RUN."""
    n = len(s)
    m = _RUN_TAIL.search(s, n - MAX_RUN - 1 if n > MAX_RUN else 0)
    if m is None:
        return n
    start = m.start()
    return -1 if n - start > MAX_RUN else start


_RUN_TAIL = re.compile(r"[\w.%+\-@]+\Z")


def _decode(chunk: TextChunk, raw: bytes, st: _State, last: bool) -> str | None:
    """The chunk's raw bytes as text, character for character (no character references
    resolved; a byte that is invalid in the encoding as U+FFFD, as a browser reads it), or None
    when the encoding is not known.  A character the chunk ends in the middle of waits in
    ``st.pending`` for the next chunk (the engine cuts characters of multi-byte encodings other
    than UTF-8 at chunk boundaries)."""
    pending = st.pending
    if pending:
        raw = pending + raw
        st.pending = b""
    if raw.isascii():
        return raw.decode("ascii")
    # The document's codec is the rewriter's unless the stream was opened in another encoding
    # or switched at a <meta charset>: check it against the engine's own reading of the chunk.
    text = chunk.text
    for codec in (st.codec, "utf-8"):
        try:
            decoder = codecs.getincrementaldecoder(codec)("replace")
        except LookupError:
            continue
        s = decoder.decode(raw, final=last)
        if _consistent(s, text):
            st.codec = codec
            if not last:
                st.pending = decoder.getstate()[0]
            return s
    if pending:
        st.carry += pending.decode(st.codec, "replace")
    return None


def _consistent(s: str, text: str) -> bool:
    """Whether ``s`` (raw text, decoded by us) and ``text`` (the engine's reading, character
    references resolved) come from the same codec: the non-ASCII characters of one are in the
    other (a character cut by a chunk boundary is U+FFFD in the engine's reading)."""
    return (all(w in text for w in _NON_ASCII.findall(s))
            or all(w in s for w in _NON_ASCII.findall(text.replace("\ufffd", "\0"))))


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def obfuscate_emails(
    *,
    path: str = DEFAULT_PATH,
    links: bool = True,
    text: bool = True,
    script: bool = True,
    random: _random.Random | int | None = None,
) -> ObfuscateEmails:
    """Cloudflare's E-mail Address Obfuscation, in its format (see the module docstring).

    Args:
        path: the fallback path links point to (``/cdn-cgi/l/email-protection``): what a
            visitor without JavaScript reaches; serve a page there.
        links: obfuscate ``mailto:`` links (``<a>`` and ``<area>`` ``href``).
        text: obfuscate addresses in text.
        script: insert the decoder script, once, before ``</body>`` (at the end of the document
            when there is none) when something was obfuscated; it carries the document's CSP
            nonce (``context["csp_nonce"]``, set by :func:`htmlstream.recipes.csp_nonce` or by an
            integration).  Set it to False when the page loads a decoder of its own.
        random: where the keys come from: by default the system's random source; an ``int``
            seeds a new ``random.Random`` for every document (each document's output is then
            reproducible, whatever its chunking); a ``random.Random`` is used as it is (shared
            by all documents).

    Not touched: ``<head>``, ``<script>``, ``<style>``, ``<textarea>``, ``<title>``,
    ``<noscript>``, ``<template>``, ``<xmp>`` and other raw text, ``<select>``, SVG and MathML,
    attributes other than ``href``, and what lies between ``<!--email_off-->`` and
    ``<!--/email_off-->``.
    """
    check_type(path, str, "obfuscate_emails()", "path", "a str (a URL path)")
    return ObfuscateEmails(path=path, links=links, text=text, script=script, random=random)


class DecodeEmails:
    """The recipe :func:`decode_emails` makes (see there)."""

    def __init__(self, *, path: str = DEFAULT_PATH, keep_script: bool = False) -> None:
        self.marker = path + "#"
        self.keep_script = keep_script

    def apply(self, rewriter: Rewriter, /) -> None:
        """Register the handlers on ``rewriter``."""
        marker = self.marker

        def element(el: Element) -> None:
            address = decode_hex(el.get_attribute("data-cfemail") or "")
            if address is not None:
                el.replace(address)

        def link(el: Element) -> None:
            if el.removed:
                return
            href = el.get_attribute("href") or ""
            i = href.find(marker)
            if i < 0:
                return
            address = decode_hex(href[i + len(marker):])
            if address is not None:
                el.set_attribute("href", "mailto:" + address)

        def script(el: Element) -> None:
            el.remove()

        rewriter.on("[data-cfemail]", element=element)
        rewriter.on(f"a[href*={json.dumps(marker)}], area[href*={json.dumps(marker)}]",
                    element=link)
        if not self.keep_script:
            rewriter.on(f'script[src*="email-decode"], script[{SCRIPT_MARK}]', element=script)


def decode_emails(*, path: str = DEFAULT_PATH, keep_script: bool = False) -> DecodeEmails:
    """The inverse of :func:`obfuscate_emails`, for scraping pages obfuscated this way (by
    Cloudflare or by us): every element with a valid ``data-cfemail`` is replaced by the address
    as text, every link whose ``href`` contains ``path + "#"`` followed by valid hex gets its
    ``mailto:`` back, and the decoder script (Cloudflare's ``email-decode.min.js`` or ours) is
    removed unless ``keep_script``.  Invalid hex is left as it is.
    """
    check_type(path, str, "decode_emails()", "path", "a str (a URL path)")
    return DecodeEmails(path=path, keep_script=keep_script)
