"""``https_upgrade``: fix mixed content by rewriting ``http://`` URLs to ``https://``.

Only URLs whose host is known to serve HTTPS change: the hosts the recipe is given (patterns or
a predicate) and, with ``hsts_preload=True``, the hosts on Chromium's HSTS preload list (the
``hstspreload`` package, the ``htmlstream[hsts]`` extra).  Where URLs are looked for:

* the URL attributes of subresources and forms (the HTML standard's index of attributes):
  ``src``, ``srcset`` and ``imagesrcset`` (each candidate), ``poster``, ``data``, ``codebase``,
  ``action``, ``formaction``, ``background``, ``manifest``, ``ping`` (each URL), ``longdesc``,
  ``href`` of ``<link>`` and ``<base>``, ``href``/``xlink:href`` of SVG elements other than
  ``<a>``, the URL of ``<meta http-equiv=refresh content="N; url=...">``;
* ``url(...)`` and ``@import "..."`` in ``style`` attributes and ``<style>`` text (text arrives
  in chunks: the end of a chunk that may hold the start of a URL is carried, at most
  :data:`STYLE_CARRY` characters, in the document's context);
* with ``links=True``, navigations: ``href`` of ``<a>`` and ``<area>`` (HTML, SVG and MathML).

URLs are read as the WHATWG URL Standard reads them where it matters here: leading and
trailing C0 controls and spaces are ignored, ASCII tabs and newlines anywhere are ignored, the
scheme is ASCII case-insensitive, and ``http:`` must be followed by at least one ``/`` or ``\\``
(``http:foo`` is relative to a page served over ``http:``, so its host is unknown).  The host is
what comes after the slashes, up to ``/``, ``\\``, ``?`` or ``#``, less any ``user:pass@`` and
``:port``, ASCII-lower-cased, percent-decoded, converted to ASCII (IDNA) and without a final dot.
Only the scheme changes (``http`` becomes ``https``); every other character of the value stays.
Protocol-relative (``//host/``), relative and other-scheme URLs are left alone and not counted.

The report: ``context["https_upgrade"]`` is an :class:`UpgradeReport` (made when the document
ends if not before): per host, how many URLs were upgraded and how many ``http:`` URLs were
left as they were because the host is not known to serve HTTPS.  A stream that passes its input
through unread (UTF-16, not HTML, a limit with ``on_limit="passthrough"``) has one too, with
``passthrough_reason`` saying why (``Rewriter.on_document(passthrough=...)``).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from htmlstream.errors import check_type
from htmlstream.recipes.inject import Inject
from htmlstream.selectors import HTML_NAMESPACE, SVG_NAMESPACE, XLINK_NAMESPACE
from htmlstream.units import DocumentEnd, Element, TextChunk

__all__ = ["STYLE_CARRY", "HttpsUpgrade", "UpgradeReport", "https_upgrade", "upgrade_url"]

#: The context key of the report (and the prefix of the recipe's private keys).
KEY = "https_upgrade"
_CARRY_KEY = "https_upgrade.style_carry"

#: The most characters of ``<style>`` text carried from one text chunk to the next.
STYLE_CARRY = 2 * (7 + 64 + 1 + 64 + 5 + 8 + 300 + 2)

#: The CSP ``<meta>`` that ``upgrade_insecure_requests=True`` adds.
UIR_META = '<meta http-equiv="Content-Security-Policy" content="upgrade-insecure-requests">'

HostPredicate = Callable[[str], bool]


@dataclass
class UpgradeReport:
    """What one document's ``https_upgrade`` did: per host, how many ``http:`` URLs became
    ``https:`` (``upgraded``) and how many were left because the host is not known to serve
    HTTPS (``left``)."""

    upgraded: dict[str, int] = field(default_factory=dict)
    left: dict[str, int] = field(default_factory=dict)
    #: Why the document (or its rest, after a limit) was passed through without a look at its
    #: URLs (the stream's ``passthrough_reason``: UTF-16 input, content that is not HTML, a
    #: limit with ``on_limit="passthrough"``), or None when it was read to its end.
    passthrough_reason: str | None = None

    @property
    def total_upgraded(self) -> int:
        """All the URLs upgraded."""
        return sum(self.upgraded.values())

    @property
    def total_left(self) -> int:
        """All the ``http:`` URLs left as they were."""
        return sum(self.left.values())


def report_of(context: MutableMapping[str, Any]) -> UpgradeReport:
    """The document's report, made on first use."""
    report = context.get(KEY)
    if report is None:
        report = context[KEY] = UpgradeReport()
    return report


# --------------------------------------------------------------------------- URLs

_TAB_NL = re.compile(r"[\t\n\r]")
#: ``http:`` and its slashes at the start of a value, after C0 controls and spaces; ASCII tab
#: and newline may sit anywhere in it (the URL parser removes them first).  Two slashes (``/``
#: or ``\``) at least: ``http:/host/x`` (one) is an absolute URL on an HTTPS page but a path on
#: the page's own host on an HTTP page, and ``https:/host/x`` is a path on an HTTPS page, so
#: such a value is left as it is.
_HTTP_START = re.compile(
    r"[\x00-\x20]*(?P<scheme>[hH][\t\n\r]*[tT][\t\n\r]*[tT][\t\n\r]*[pP])[\t\n\r]*:"
    r"(?=[\t\n\r]*[/\\][\t\n\r]*[/\\])"
)
#: After the scheme's colon: the slashes, and the authority (tabs and newlines in it too).
_AUTHORITY = re.compile(r"[\t\n\r/\\]*([^/\\?#]*)")
#: An authority whose port is written out: what comes before the port, and the port.
_PORT = re.compile(r"((?:[^@]*@)?(?:\[[^\]]*\]|[^:]*)):([0-9]+)")
_AUTHORITY_END = re.compile(r"[/\\?#]")


def _normalize_host(raw: str) -> str | None:
    """The host of an authority (tabs and newlines already removed), as compared with the
    patterns; ``None`` when there is none."""
    end = _AUTHORITY_END.search(raw)
    authority = raw if end is None else raw[: end.start()]
    authority = authority.rstrip("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10"
                                 "\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e"
                                 "\x1f ")
    at = authority.rfind("@")
    host = authority[at + 1:]
    if host.startswith("["):
        close = host.find("]")
        host = host if close < 0 else host[: close + 1]
    else:
        colon = host.find(":")
        if colon >= 0:
            host = host[:colon]
    if "%" in host:
        host = unquote(host, errors="strict") if _valid_percent(host) else host
    return _ascii_host(host)


def _valid_percent(host: str) -> bool:
    try:
        unquote(host, errors="strict")
    except UnicodeDecodeError:
        return False
    return True


@lru_cache(maxsize=4096)
def _ascii_host(host: str) -> str | None:
    host = host.lower() if host.isascii() else host
    if host.endswith("."):
        host = host[:-1]
    if not host:
        return None
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def http_host(value: str) -> tuple[int, str | None] | None:
    """Where the scheme of an ``http:`` URL with an authority starts in ``value``, and its host
    (``None`` when it has none); ``None`` when ``value`` is no such URL."""
    match = _HTTP_START.match(value)
    if match is None:
        return None
    rest = _TAB_NL.sub("", value[match.end():]).lstrip("/\\")
    return match.start("scheme"), _normalize_host(rest)


def upgrade_url(value: str, known: HostPredicate, report: UpgradeReport | None = None) -> str:
    """``value`` with its scheme made ``https`` when it is an ``http:`` URL whose host ``known``
    accepts; otherwise ``value`` itself.  ``report`` (optional) counts the decision."""
    check_type(value, str, "upgrade_url()", "value", "a str (a URL)")
    if not callable(known):
        raise TypeError(f"upgrade_url(): known must be a callable known(host) -> bool, not "
                        f"{type(known).__name__}")
    found = http_host(value)
    if found is None:
        return value
    start, host = found
    if host is not None and known(host):
        if report is not None:
            report.upgraded[host] = report.upgraded.get(host, 0) + 1
        colon = value.index(":", start)
        return value[:start] + "https:" + _without_port_80(value, colon + 1)
    if report is not None:
        key = host or ""
        report.left[key] = report.left.get(key, 0) + 1
    return value


def _without_port_80(value: str, start: int) -> str:
    """``value[start:]`` (what follows ``http:``) with the port left out when it is 80: HTTP's
    default port is not HTTPS's, and a browser upgrading a URL by HSTS makes port 80 the
    default 443 (RFC 6797, 8.3); any other port stays as it is."""
    authority = _AUTHORITY.match(value, start)
    assert authority is not None  # (the pattern matches the empty string)
    raw = authority.group(1)
    end = authority.end(1)
    if end == len(value):   # (the URL parser strips C0 controls and spaces at the end)
        raw = raw.rstrip("".join(map(chr, range(0x21))))
        end = authority.start(1) + len(raw)
    port = _PORT.fullmatch(_TAB_NL.sub("", raw))
    if port is None or int(port.group(2)) != 80:
        return value[start:]
    return value[start:authority.start(1)] + port.group(1) + value[end:]


_SRCSET_URL = re.compile(r"[\t\n\x0c\r ,]*([^\t\n\x0c\r ,][^\t\n\x0c\r ]*)")


def upgrade_srcset(value: str, known: HostPredicate, report: UpgradeReport | None) -> str:
    """Each candidate's URL of a ``srcset`` (the HTML standard's parsing: a URL runs to the
    next whitespace, less trailing commas; descriptors run to a comma outside parentheses)."""
    out: list[str] = []
    pos = 0
    n = len(value)
    while pos < n:
        match = _SRCSET_URL.match(value, pos)
        if match is None or not match.group(1):
            break
        url = match.group(1)
        url_end = match.end(1)
        stripped = url.rstrip(",")
        if not stripped:        # only commas left
            break
        out.append(value[pos:match.start(1)])
        out.append(upgrade_url(stripped, known, report))
        pos = match.start(1) + len(stripped)
        if len(stripped) != len(url):
            continue
        # Descriptors: up to a comma outside parentheses.
        depth = 0
        i = url_end
        while i < n:
            c = value[i]
            if c == "(":
                depth += 1
            elif c == ")" and depth:
                depth -= 1
            elif c == "," and not depth:
                break
            i += 1
        out.append(value[pos:i])
        pos = i
    out.append(value[pos:])
    return "".join(out)


def upgrade_list(value: str, known: HostPredicate, report: UpgradeReport | None) -> str:
    """Each URL of a space-separated list (``ping``)."""
    parts = re.split(r"([\t\n\x0c\r ]+)", value)
    return "".join(p if i % 2 else upgrade_url(p, known, report) for i, p in enumerate(parts))


_WS = "\t\n\x0c\r "


def _skip_ws(value: str, pos: int) -> int:
    while pos < len(value) and value[pos] in _WS:
        pos += 1
    return pos


def refresh_url_span(value: str) -> tuple[int, int] | None:
    """Where the URL of a ``<meta http-equiv=refresh>`` content is (the HTML standard's
    shared declarative refresh steps: a time, ``;`` or ``,`` or whitespace, an optional
    ``url=``, and a URL that may be quoted); ``None`` when it has none."""
    n = len(value)
    pos = _skip_ws(value, 0)
    start = pos
    while pos < n and value[pos].isascii() and value[pos].isdigit():
        pos += 1
    if pos == start and (pos >= n or value[pos] != "."):
        return None
    while pos < n and (value[pos] == "." or (value[pos].isascii() and value[pos].isdigit())):
        pos += 1
    if pos >= n:
        return None
    if value[pos] not in ";," and value[pos] not in _WS:
        return None
    pos = _skip_ws(value, pos)
    if pos < n and value[pos] in ";,":
        pos = _skip_ws(value, pos + 1)
    if pos >= n:
        return None
    if value[pos:pos + 3].lower() == "url":
        after = _skip_ws(value, pos + 3)
        if after < n and value[after] == "=":
            pos = _skip_ws(value, after + 1)
    quote = value[pos] if pos < n and value[pos] in "'\"" else ""
    if quote:
        pos += 1
    end = value.find(quote, pos) if quote else n
    return pos, (n if end < 0 else end)


def upgrade_refresh(value: str, known: HostPredicate, report: UpgradeReport | None) -> str:
    """The URL of a ``<meta http-equiv=refresh>`` content upgraded."""
    span = refresh_url_span(value)
    if span is None:
        return value
    start, end = span
    url = value[start:end]
    new = upgrade_url(url, known, report)
    return value if new is url else value[:start] + new + value[end:]


# CSS: url(...) and @import "..." (the authority may not run past _CSS_HOST characters; a
# longer one is left alone, which keeps the carry between chunks bounded).
_CSS_HOST = 300
_CSS_URL = re.compile(
    r"(?:(?P<fn>[uU][rR][lL]\()[\t\n\x0c\r ]{0,64}(?P<q1>['\"]?)"
    r"|(?P<imp>@[iI][mM][pP][oO][rR][tT])[\t\n\x0c\r ]{0,64}(?P<q2>['\"]))"
    r"[\t\n\x0c\r ]{0,64}(?P<scheme>[hH][tT][tT][pP]):(?P<slashes>[/\\]{1,8})"
    r"(?P<auth>[^/\\?#\t\n\x0c\r \"')<]{0," + str(_CSS_HOST) + r"})"
)
#: Longer than any match (and the character after it), so a match that starts before
#: ``len(text) - _CSS_SAFE`` is complete.
_CSS_SAFE = 7 + 64 + 1 + 64 + 5 + 8 + _CSS_HOST + 2


def upgrade_css(text: str, known: HostPredicate, report: UpgradeReport | None,
                end: int | None = None) -> tuple[str, int]:
    """``text`` with the ``http:`` URLs of its ``url(...)`` and ``@import`` upgraded.

    With ``end``, only the matches that start before ``end`` and end by it are decided, and
    the result stops where the undecided text starts; returns the new text and that point of
    ``text``.  An authority of ``_CSS_HOST`` characters or more is left alone."""
    limit = len(text) if end is None else end
    matches = []
    for match in _CSS_URL.finditer(text):
        if match.start() >= limit:
            break
        if match.end() > limit:
            limit = match.start()
            break
        matches.append(match)
    out: list[str] = []
    pos = 0
    for match in matches:
        auth = match.group("auth")
        if len(auth) == _CSS_HOST:
            continue
        host = _normalize_host(auth)
        if host is not None and known(host):
            if report is not None:
                report.upgraded[host] = report.upgraded.get(host, 0) + 1
            out.append(text[pos:match.start("scheme")])
            out.append("https")
            pos = match.end("scheme")
        elif report is not None:
            key = host or ""
            report.left[key] = report.left.get(key, 0) + 1
    out.append(text[pos:limit])
    return "".join(out), limit


# --------------------------------------------------------------------------- hosts


def _host_predicate(hosts: Iterable[str] | HostPredicate | None,
                    preload: HostPredicate | None) -> HostPredicate:
    if callable(hosts):
        given: HostPredicate | None = hosts
    elif hosts is None:
        given = None
    else:
        exact: set[str] = set()
        suffixes: list[str] = []
        everything = False
        for pattern in hosts:
            if not isinstance(pattern, str):
                raise TypeError(f"a host pattern must be a str, not {pattern!r}")
            p = pattern.strip()
            if p == "*":
                everything = True
            elif p.startswith("*."):
                suffix = _ascii_host(p[2:])
                if suffix is None:
                    raise ValueError(f"bad host pattern {pattern!r}")
                suffixes.append("." + suffix)
            else:
                host = _ascii_host(p)
                if host is None or "*" in host:
                    raise ValueError(f"bad host pattern {pattern!r} (use 'example.com', "
                                     f"'*.example.com' or '*')")
                exact.add(host)
        if everything:
            given = _everything
        else:
            tails = tuple(suffixes)

            def given(host: str) -> bool:
                return host in exact or (bool(tails) and host.endswith(tails))

    if preload is None:
        return given or _nothing
    if given is None:
        return preload
    first = given
    return lambda host: first(host) or preload(host)


def _everything(host: str) -> bool:
    return True


def _nothing(host: str) -> bool:
    return False


def _load_preload(hosts_given: bool) -> HostPredicate | None:
    try:
        import hstspreload
    except ImportError:
        message = ("hsts_preload=True needs the hstspreload package: "
                   "pip install 'htmlstream[hsts]'")
        if not hosts_given:
            raise ImportError(message + " (or give hosts=..., or hsts_preload=False)") from None
        warnings.warn(message + "; only the hosts given are upgraded", RuntimeWarning,
                      stacklevel=3)
        return None
    check = hstspreload.in_hsts_preload

    @lru_cache(maxsize=4096)
    def preloaded(host: str) -> bool:
        # (hstspreload reads its data with a deprecated importlib call: not our users' noise)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                return bool(check(host))
            except (UnicodeError, ValueError):
                return False
    return preloaded


# --------------------------------------------------------------------------- the recipe

#: Attributes holding one URL, upgraded on any element that has them.
#: The namespace prefixes of the recipe's selector.
_NAMESPACES = {"xlink": XLINK_NAMESPACE, "svg": SVG_NAMESPACE}
_URL_ATTRS = ("src", "poster", "data", "codebase", "action", "formaction", "background",
              "manifest", "longdesc")
_SRCSET_ATTRS = ("srcset", "imagesrcset")
_SVG = "http://www.w3.org/2000/svg"
_HTML = "http://www.w3.org/1999/xhtml"
_NAV_TAGS = ("a", "area")
#: The SVG elements with an ``href`` (SVG 2's and the obsolete ones browsers still read),
#: ``<a>`` aside (a navigation: ``links``); named, not ``svg *``: a name is looked up once per
#: tag, a combinator follows every open element.
_SVG_HREF_TAGS = ("image", "use", "feImage", "script", "pattern", "linearGradient",
                  "radialGradient", "textPath", "mpath", "filter", "cursor", "tref", "animate",
                  "animateMotion", "animateTransform", "animateColor", "set", "discard")


class HttpsUpgrade:
    """The ``https_upgrade`` recipe (made by :func:`https_upgrade`)."""

    def __init__(self, known: HostPredicate, *, links: bool,
                 upgrade_insecure_requests: bool) -> None:
        self.known = known
        self.links = links
        self.upgrade_insecure_requests = upgrade_insecure_requests

    def selector(self) -> str:
        """The elements whose attributes the recipe reads: only those with an attribute value
        it may change (a URL it can upgrade has a ``:``; CSS needs ``url``/``@import``), so
        that the matcher, not a handler call, passes over the rest.  No combinator: SVG's
        ``href`` is named by namespace (a combinator would make the engine follow every
        open element)."""
        parts = [f'[{name}*=":"]' for name in (*_URL_ATTRS, *_SRCSET_ATTRS, "ping")]
        parts += ['[style*="url" i]', '[style*="@import" i]']
        # (xlink:href is in the XLink namespace on SVG elements, as the tree builder puts it)
        parts += ['link[href*=":"]', 'base[href*=":"]', 'meta[http-equiv][content*=":"]',
                  '[xlink|href*=":"]']
        parts += [f'svg|{name}[href*=":"]' for name in _SVG_HREF_TAGS]
        if self.links:
            parts += ['a[href*=":"]', 'area[href*=":"]']
        return ", ".join(parts)

    def apply(self, rewriter: Any) -> None:
        """Register the handlers (``Rewriter.use`` calls this)."""
        rewriter.on(self.selector(), element=self.element, namespaces=_NAMESPACES)
        # (CSS is in HTML's and SVG's <style>; MathML's is an element like any other)
        rewriter.on("html|style, svg|style", text=self.style_text,
                    namespaces={"html": HTML_NAMESPACE, "svg": SVG_NAMESPACE})
        if self.upgrade_insecure_requests:
            # The start of <head>, tag or no tag: inject's points, with a state of its own.
            Inject(UIR_META, None, None, None, key=KEY + ".inject").apply(rewriter)
        rewriter.on_document(end=self.end, passthrough=self.passthrough)

    # handlers

    def element(self, el: Element) -> None:
        """Upgrade the URLs of one element's attributes."""
        known = self.known
        report = report_of(el.context)
        for name, value in el.attributes:
            if ":" not in value:    # every URL this can change has one
                continue
            new = self._attribute(el, name, value, known, report)
            if new is not value and new != value:
                el.set_attribute(name, new)

    def _attribute(self, el: Element, name: str, value: str, known: HostPredicate,
                   report: UpgradeReport) -> str:
        if name in _URL_ATTRS:
            return upgrade_url(value, known, report)
        if name in _SRCSET_ATTRS:
            return upgrade_srcset(value, known, report)
        if name == "style":
            if "url" not in value.lower() and "@import" not in value.lower():
                return value
            return upgrade_css(value, known, report)[0]
        if name == "ping":
            return upgrade_list(value, known, report)
        tag = el.tag_name
        if name == "href" or name == "xlink:href":
            if tag in _NAV_TAGS:
                return upgrade_url(value, known, report) if self.links else value
            if el.namespace_uri == _HTML and tag not in ("link", "base"):
                return value
            return upgrade_url(value, known, report)
        if name == "content" and tag == "meta":
            equiv = el.get_attribute("http-equiv")
            if equiv is not None and equiv.strip().lower() == "refresh":
                return upgrade_refresh(value, known, report)
        return value

    def style_text(self, chunk: TextChunk) -> None:
        """Upgrade ``url(...)``/``@import`` in ``<style>`` text, carrying a chunk's end that
        may hold an unfinished URL into the next chunk (bounded)."""
        context = chunk.context
        carry: str = context.pop(_CARRY_KEY, "")
        text = _source_text(chunk)
        if text is None:
            if carry:
                chunk.before(carry)
            return
        whole = carry + text
        last = chunk.last_in_text_node
        if not carry and not _css_candidate(text, last):
            return
        report = report_of(context)
        if last:
            new, _ = upgrade_css(whole, self.known, report)
            rest = ""
        else:
            new, cut = upgrade_css(whole, self.known, report, _css_tail_start(whole))
            rest = whole[cut:]
        if new != text:
            try:
                chunk.replace(new)
            except ValueError:
                # Raw text the engine will not write back (what would end the element):
                # this chunk stays as it was, after the carried text as it was.
                if carry:
                    chunk.before(carry)
                rest = ""
        if rest:
            context[_CARRY_KEY] = rest

    def end(self, end: DocumentEnd) -> None:
        """Make sure the report exists, and drop a carry left by a broken document."""
        context = end.context
        report_of(context)
        context.pop(_CARRY_KEY, None)

    def passthrough(self, context: MutableMapping[str, Any], reason: str) -> None:
        """The stream passes its input (or its rest) through: the report says so."""
        report_of(context).passthrough_reason = reason
        context.pop(_CARRY_KEY, None)


def _source_text(chunk: TextChunk) -> str | None:
    """The chunk's text as written (CR and NUL kept), so that writing it back changes no
    byte; ``None`` when it could not be written back as it was (bytes the encoding cannot
    read, CRs in a document that is not UTF-8)."""
    text = chunk.text
    raw = chunk.raw
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        source = None
    if source is not None:
        if source == text:
            return text
        if source.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd") == text:
            return source
    if "\ufffd" in text or b"\r" in raw or b"\x00" in raw:
        return None
    return text     # another encoding: written back in it


_CSS_START = re.compile(r"[uU](?:[rR](?:[lL]\(?)?)?$|@(?:[iI](?:[mM](?:[pP](?:[oO](?:[rR]"
                        r"(?:[tT])?)?)?)?)?)?$")


def _css_candidate(text: str, last: bool) -> bool:
    """Whether a chunk (with no carry) needs looking at: it has ``url(``/``@import``, or ends
    with what may begin one."""
    lower = text.lower()
    if "url(" in lower or "@import" in lower:
        return True
    return not last and _CSS_START.search(text[-8:]) is not None


def _css_tail_start(text: str) -> int:
    """Where the text's last possible URL start is (``url(`` or ``@import`` or a prefix of
    them at the very end); ``len(text)`` when none is near the end."""
    lower = text.lower()
    start = max(lower.rfind("url("), lower.rfind("@import"))
    tail = text[-8:]
    partial = _CSS_START.search(tail)
    if partial is not None:
        start = max(start, len(text) - len(tail) + partial.start())
    if start < 0 or start < len(text) - _CSS_SAFE or "<" in text[start:]:
        return len(text)     # (no URL is pending: none runs into a '<')
    return start


def https_upgrade(
    hosts: Iterable[str] | HostPredicate | None = None,
    *,
    hsts_preload: bool = True,
    links: bool = False,
    upgrade_insecure_requests: bool = False,
) -> HttpsUpgrade:
    """A recipe that rewrites ``http://`` URLs to ``https://`` where the host is known to
    serve HTTPS (see the module documentation for where URLs are looked for).

    Args:
        hosts: host patterns (``"example.com"``, ``"*.example.com"`` for its subdomains,
            ``"*"`` for every host) or a predicate ``known(host) -> bool`` given the host
            ASCII-lower-cased (IDNA), without port or final dot.
        hsts_preload: count the hosts on Chromium's HSTS preload list as known (needs the
            ``hstspreload`` package, ``pip install 'htmlstream[hsts]'``; without it this
            raises ``ImportError`` when no ``hosts`` are given, and otherwise warns
            (``RuntimeWarning``) and uses the hosts given only).
        links: also upgrade navigations (``href`` of ``<a>`` and ``<area>``).
        upgrade_insecure_requests: add ``<meta http-equiv="Content-Security-Policy"
            content="upgrade-insecure-requests">`` at the start of ``<head>`` (the head the
            tree builder makes when the document has no ``<head>`` tag).

    After the document, ``context["https_upgrade"]`` is its :class:`UpgradeReport`.
    """
    if hosts is not None and not callable(hosts) and (
            isinstance(hosts, str) or not isinstance(hosts, Iterable)):
        raise TypeError(f"https_upgrade(): hosts must be an iterable of host patterns (str), a "
                        f"predicate known(host) -> bool, or None, not {type(hosts).__name__}")
    preload = _load_preload(hosts is not None) if hsts_preload else None
    return HttpsUpgrade(_host_predicate(hosts, preload), links=links,
                        upgrade_insecure_requests=upgrade_insecure_requests)
