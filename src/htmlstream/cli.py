"""The ``htmlstream`` command line.

Subcommands (one ``cmd_*`` function each, registered in :func:`build_parser`):

``htmlstream tokens [INPUT|-] [--encoding ENC] [--chunk-size N] [--no-feedback]
                  [--summary | --list]``
    Tokenize a document as a stream (INPUT defaults to the bundled sample page) and print either a
    summary (token counts, tag names, text bytes by text type, time and throughput) or one line per
    token.

``htmlstream rewrite [INPUT|-] [-o OUT] [--encoding ENC] [--chunk-size N]
                   (--on SELECTOR ACTION... [--on SELECTOR ACTION...] | --demo)``
    Rewrite a document as a stream: INPUT (a file, ``-`` for standard input, an ``http://`` or
    ``https://`` URL, or by default the bundled sample page) is read in chunks, and each output
    chunk goes to standard output (or ``-o OUT``) as soon as the rewriter returns it.  Each
    ``--on SELECTOR`` starts a group of actions applied, in the order given, to the elements the
    selector matches: ``--set-attr NAME=VALUE``, ``--remove-attr NAME``, ``--remove``,
    ``--unwrap``, ``--before/--after/--prepend/--append/--replace/--inner CONTENT`` (text,
    escaped; ``--html`` in the group inserts it as markup) and ``--rename TAG``.  Groups run in
    order.  ``--demo`` (the default when no ``--on`` is given, and what ``make run`` runs) is the
    Cloudflare showcase: ``http://`` URLs in ``a[href]``, ``img[src]``, ``script[src]``,
    ``link[href]`` and ``form[action]`` become ``https://``, ``<img>`` without a ``loading``
    attribute gets ``loading="lazy"``, and a one-line summary (bytes in and out, elements
    changed, MB/s) goes to standard error.

``htmlstream proxy --upstream URL [--listen HOST:PORT] [--preserve-host] [--trust-forwarded]
                 [--connect-timeout S] [--read-timeout S] [--grace S] [rewrite options]``
    A rewriting reverse proxy in front of one origin (:mod:`htmlstream.integrations.proxy`):
    the rewrite options are ``htmlstream rewrite``'s; it prints where it listens, logs one line
    per request to standard error, and stops gracefully on SIGINT/SIGTERM.

To add a subcommand: write ``add_<name>_parser(subparsers)`` that sets
``func=cmd_<name>``, write ``cmd_<name>(args) -> int``, and call the former in
:func:`build_parser`. Commands raise :class:`CliError` for user errors; :func:`main` prints them.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.resources
import os
import stat
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO, cast

import htmlstream
from htmlstream.encoding import PRESCAN_BYTES, _resolve_encoding, sniff

if TYPE_CHECKING:
    from htmlstream.rewriter import Rewriter
    from htmlstream.units import Element

__all__ = ["build_parser", "main"]

PROG = "htmlstream"
DEFAULT_CHUNK_SIZE = 65536
SAMPLE_RESOURCE = "data/sample.html"
#: How many characters of text (or raw bytes) a ``--list`` line shows.
LIST_TEXT_WIDTH = 60


class CliError(Exception):
    """A user-facing error: printed as ``htmlstream: error: MESSAGE``; ends with ``status``."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------------------------
# Input helpers shared by the subcommands
# --------------------------------------------------------------------------------------------


def positive_int(value: str) -> int:
    """``argparse`` type: an integer greater than zero."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer: {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0: {value!r}")
    return number


def encoding_name(value: str) -> str:
    """``argparse`` type: a label of the WHATWG Encoding Standard naming an ASCII-compatible
    encoding, returned as given."""
    try:
        _resolve_encoding(value)
    except htmlstream.EncodingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


@contextlib.contextmanager
def open_input(path: str | None) -> Iterator[tuple[str, BinaryIO]]:
    """Open INPUT for binary reading; yields ``(display_name, stream)``.

    ``None`` is the sample page bundled with the package, ``"-"`` is standard input.
    """
    if path is None:
        resource = importlib.resources.files("htmlstream").joinpath(SAMPLE_RESOURCE)
        with resource.open("rb") as stream:
            yield f"<bundled {SAMPLE_RESOURCE}>", cast(BinaryIO, stream)
    elif path == "-":
        yield "<stdin>", sys.stdin.buffer
    else:
        try:
            stream = open(path, "rb")  # noqa: SIM115 - closed below, errors mapped to CliError
        except OSError as exc:
            raise CliError(f"cannot read {path!r}: {exc.strerror or exc}") from exc
        with stream:
            yield path, stream


def read_chunks(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Yield the stream's bytes in chunks of at most ``chunk_size`` bytes."""
    while chunk := stream.read(chunk_size):
        yield chunk


# --------------------------------------------------------------------------------------------
# tokens
# --------------------------------------------------------------------------------------------


def add_tokens_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``htmlstream tokens``."""
    parser = subparsers.add_parser(
        "tokens",
        help="tokenize a document and print a summary or the token list",
        description=(
            "Tokenize INPUT as a stream (fed in chunks) and print a summary of the tokens "
            "(the default) or one line per token."
        ),
    )
    parser.add_argument(
        "input",
        nargs="?",
        metavar="INPUT",
        help="HTML file to read, '-' for standard input (default: the bundled sample page)",
    )
    parser.add_argument(
        "--encoding",
        type=encoding_name,
        default="utf-8",
        metavar="ENC",
        help="document encoding used to decode names, attributes and text: a label of the "
        "WHATWG Encoding Standard (default: utf-8)",
    )
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        default=DEFAULT_CHUNK_SIZE,
        metavar="N",
        help=f"bytes per feed() call (default: {DEFAULT_CHUNK_SIZE})",
    )
    parser.add_argument(
        "--no-feedback",
        dest="feedback",
        action="store_false",
        help="bare WHATWG tokenizer: no tree-builder feedback (<script>, <textarea>, <svg>... "
        "do not switch the tokenizer state)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--summary",
        dest="mode",
        action="store_const",
        const="summary",
        help="print counts, tag names, text bytes and throughput (the default)",
    )
    mode.add_argument(
        "--list",
        dest="mode",
        action="store_const",
        const="list",
        help="print one line per token: kind, offset, short description",
    )
    parser.set_defaults(mode="summary", func=cmd_tokens)


class TokenStats:
    """Counters a ``--summary`` keeps while tokens stream past (no token is kept)."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.start_tags: Counter[str] = Counter()
        self.tag_names: set[str] = set()
        self.text_bytes: Counter[str] = Counter()

    def add(self, tokens: list[htmlstream.tokens.Token]) -> None:
        """Count a batch of tokens."""
        for token in tokens:
            self.kinds[type(token).__name__] += 1
            if isinstance(token, htmlstream.tokens.StartTag):
                self.start_tags[token.name] += 1
                self.tag_names.add(token.name)
            elif isinstance(token, htmlstream.tokens.EndTag):
                self.tag_names.add(token.name)
            elif isinstance(token, htmlstream.tokens.Text):
                self.text_bytes[_text_type_name(token.text_type)] += len(token.raw)


def cmd_tokens(args: argparse.Namespace) -> int:
    """Run ``htmlstream tokens``."""
    out: TextIO = sys.stdout
    stats = TokenStats()
    sink: Callable[[list[htmlstream.tokens.Token]], None]
    sink = stats.add if args.mode == "summary" else lambda tokens: _print_tokens(tokens, out)

    total = 0
    elapsed = 0.0
    with open_input(args.input) as (name, stream):
        tokenizer = htmlstream.Tokenizer(encoding=args.encoding, feedback=args.feedback)
        for chunk in read_chunks(stream, args.chunk_size):
            total += len(chunk)
            started = time.perf_counter()
            tokens = tokenizer.feed(chunk)
            elapsed += time.perf_counter() - started
            sink(tokens)
        started = time.perf_counter()
        tokens = tokenizer.close()
        elapsed += time.perf_counter() - started
        sink(tokens)

    if args.mode == "summary":
        _print_summary(out, name, total, args.chunk_size, elapsed, stats)
    return 0


def _text_type_name(text_type: object) -> str:
    """``TextType.SCRIPT_DATA`` -> ``"SCRIPT_DATA"`` (whatever enum flavour the engine uses)."""
    name = getattr(text_type, "name", None)
    return name if isinstance(name, str) else str(text_type)


def _shorten(text: str, width: int = LIST_TEXT_WIDTH) -> str:
    """The first ``width`` characters of ``text`` as a Python literal, marked when cut."""
    return repr(text[:width]) + ("…" if len(text) > width else "")


def describe_token(token: htmlstream.tokens.Token) -> str:
    """A one-line description of a token for ``--list``."""
    if isinstance(token, htmlstream.tokens.StartTag):
        attrs = "".join(f" {key}={_shorten(value, 40)}" for key, value in token.attributes.items())
        return f"<{token.name}{attrs}{' /' if token.self_closing else ''}>"
    if isinstance(token, htmlstream.tokens.EndTag):
        return f"</{token.name}>"
    if isinstance(token, htmlstream.tokens.Text):
        return f"{_text_type_name(token.text_type)} {_shorten(token.text)}"
    if isinstance(token, htmlstream.tokens.Comment):
        return _shorten(token.text)
    if isinstance(token, htmlstream.tokens.Doctype):
        parts = [f"name={token.name!r}"]
        if token.public_id is not None:
            parts.append(f"public={token.public_id!r}")
        if token.system_id is not None:
            parts.append(f"system={token.system_id!r}")
        if token.force_quirks:
            parts.append("force_quirks")
        return " ".join(parts)
    raw = token.raw
    return repr(raw[:LIST_TEXT_WIDTH]) + ("…" if len(raw) > LIST_TEXT_WIDTH else "")


def _print_tokens(tokens: list[htmlstream.tokens.Token], out: TextIO) -> None:
    """Print one ``--list`` line per token."""
    for token in tokens:
        out.write(f"{type(token).__name__:<9} {token.offset:>9}  {describe_token(token)}\n")


def _print_summary(
    out: TextIO, name: str, total: int, chunk_size: int, elapsed: float, stats: TokenStats
) -> None:
    """Print the ``--summary`` report."""
    write = out.write
    write(f"input:        {name}\n")
    write(f"bytes:        {total:,}\n")
    write(f"chunk size:   {chunk_size:,}\n")
    write(f"tokens:       {sum(stats.kinds.values()):,}\n")
    for kind, count in sorted(stats.kinds.items(), key=lambda item: (-item[1], item[0])):
        write(f"  {kind:<12}{count:>10,}\n")
    write(f"tag names:    {len(stats.tag_names)} distinct\n")
    if stats.start_tags:
        write("top start tags:\n")
        for tag, count in stats.start_tags.most_common(10):
            write(f"  {tag:<12}{count:>10,}\n")
    if stats.text_bytes:
        write("text bytes by text type:\n")
        for text_type, count in stats.text_bytes.most_common():
            write(f"  {text_type:<14}{count:>8,}\n")
    rate = f"{total / elapsed / 1e6:.1f} MB/s" if elapsed > 0 else "n/a"
    write(f"time:         {elapsed * 1e3:.2f} ms ({rate}, tokenizer calls only)\n")


# --------------------------------------------------------------------------------------------
# rewrite
# --------------------------------------------------------------------------------------------

#: Seconds ``rewrite`` waits for a URL to connect or to send more bytes.
URL_TIMEOUT = 30
_URL_PREFIXES = ("http://", "https://")

#: The ``--demo`` rules: the attribute holding a URL, by tag name, and the selector list that
#: finds them (with every ``<img>``, for ``loading="lazy"``).
DEMO_URL_ATTRIBUTES = {
    "a": "href",
    "img": "src",
    "script": "src",
    "link": "href",
    "form": "action",
}
DEMO_SELECTOR = "a[href], img, script[src], link[href], form[action]"


def is_url(value: str | None) -> bool:
    """Whether INPUT names an ``http://`` or ``https://`` URL rather than a file."""
    return value is not None and value[:8].lower().startswith(_URL_PREFIXES)


class _UrlStream:
    """An HTTP response read ``read1``-style; read errors become :class:`CliError`."""

    def __init__(self, url: str, response: Any, errors: tuple[type[BaseException], ...]) -> None:
        self.url = url
        self.response = response
        self.errors = errors

    def read1(self, size: int) -> bytes:
        """Up to ``size`` bytes, as soon as some are there; ``b""`` at the end."""
        try:
            data: bytes = self.response.read1(size)
        except TimeoutError as exc:
            raise CliError(f"reading {self.url}: no data for {URL_TIMEOUT} s (timed out)") from exc
        except self.errors as exc:
            raise CliError(f"reading {self.url}: {type(exc).__name__}: {exc}") from exc
        # ``read1`` (unlike ``read``) ends quietly when the server closes the connection early.
        missing = self.response.length
        if not data and size and missing:
            raise CliError(
                f"reading {self.url}: the connection was closed with {missing:,} bytes of the "
                f"declared Content-Length still to come (IncompleteRead)"
            )
        return data

    read = read1


@contextlib.contextmanager
def open_source(path: str | None) -> Iterator[tuple[str, BinaryIO, str | None]]:
    """Like :func:`open_input`, and URLs too; yields ``(display_name, stream, charset)``.

    ``charset`` is the one an HTTP response declares in its ``Content-Type``, else ``None``.
    A URL is fetched with a timeout of :data:`URL_TIMEOUT` seconds (to connect, and for each
    read) and its connection is closed when the block ends, however it ends.
    """
    if not is_url(path):
        with open_input(path) as (name, stream):
            yield name, stream, None
        return
    assert path is not None
    # Imported here: they cost more start-up time than the rest of the command line.
    import http.client
    import urllib.error
    import urllib.request

    agent = f"{PROG}/{htmlstream.__version__}"
    request = urllib.request.Request(path, headers={"User-Agent": agent})
    try:
        response = urllib.request.urlopen(request, timeout=URL_TIMEOUT)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise CliError(f"cannot fetch {path}: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            reason = f"timed out after {URL_TIMEOUT} s"
        raise CliError(f"cannot fetch {path}: {reason}") from exc
    except TimeoutError as exc:
        raise CliError(f"cannot fetch {path}: timed out after {URL_TIMEOUT} s") from exc
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise CliError(f"cannot fetch {path}: {type(exc).__name__}: {exc}") from exc
    with response:
        url_stream = _UrlStream(path, response, (OSError, http.client.HTTPException))
        yield path, cast(BinaryIO, url_stream), response.headers.get_content_charset()


def read_chunks_eagerly(stream: BinaryIO, chunk_size: int, name: str) -> Iterator[bytes]:
    """Yield the stream's bytes in chunks of at most ``chunk_size`` bytes, each as soon as it
    is there (``read1``: a pipe or a slow server is not waited on to fill a whole chunk).

    A read error is a :class:`CliError`.
    """
    read = getattr(stream, "read1", None) or stream.read
    while True:
        try:
            chunk = read(chunk_size)
        except OSError as exc:
            raise CliError(f"reading {name}: {exc.strerror or exc}") from exc
        if not chunk:
            return
        yield chunk


def rewriter_encoding(value: str) -> str:
    """``argparse`` type: an encoding the rewriter can read (a label of the WHATWG Encoding
    Standard naming an ASCII-compatible encoding), returned as given."""
    try:
        _resolve_encoding(value)
    except htmlstream.EncodingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def peek_chunks(chunks: Iterator[bytes], size: int) -> tuple[bytes, Iterator[bytes]]:
    """Read chunks until ``size`` bytes (or the end); return them and an iterator over every
    chunk, those included."""
    head: list[bytes] = []
    total = 0
    for chunk in chunks:
        head.append(chunk)
        total += len(chunk)
        if total >= size:
            break
    def replay() -> Iterator[bytes]:
        yield from head
        yield from chunks

    return b"".join(head), replay()


def _content_type(charset: str | None) -> str | None:
    """A ``Content-Type`` value carrying a server's ``charset`` (for :func:`sniff`)."""
    if charset is None:
        return None
    escaped = charset.replace("\\", "\\\\").replace('"', '\\"')
    return f'text/html; charset="{escaped}"'


def attribute_assignment(value: str) -> tuple[str, str]:
    """``argparse`` type of ``--set-attr``: ``NAME=VALUE`` (VALUE may be empty or hold ``=``)."""
    from htmlstream._engine.units import validate_attribute_name

    name, sep, attr_value = value.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {value!r}")
    try:
        validate_attribute_name(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (in {value!r})") from None
    return name, attr_value


def attribute_name(value: str) -> str:
    """``argparse`` type: a valid attribute name."""
    from htmlstream._engine.units import validate_attribute_name

    try:
        return validate_attribute_name(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def tag_name(value: str) -> str:
    """``argparse`` type: a valid tag name."""
    from htmlstream._engine.units import validate_tag_name

    try:
        return validate_tag_name(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@dataclasses.dataclass
class RewriteGroup:
    """One ``--on SELECTOR`` and the actions that follow it, in command-line order.

    ``actions`` holds ``(option, kind, value)``: ``("--set-attr", "set_attr", ("id", "x"))``.
    """

    selector: str
    actions: list[tuple[str, str, Any]] = dataclasses.field(default_factory=list)
    html: bool = False


class _OnAction(argparse.Action):
    """``--on SELECTOR``: start a new group in ``namespace.groups``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        groups = getattr(namespace, self.dest, None) or []
        groups.append(RewriteGroup(values))
        setattr(namespace, self.dest, groups)


class _GroupAction(argparse.Action):
    """An action option: add ``(option, kind, value)`` to the group of the latest ``--on``."""

    def __init__(self, option_strings: list[str], dest: str, *, kind: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.kind = kind

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        groups = getattr(namespace, self.dest, None)
        if not groups:
            parser.error(
                f"{option_string} must come after --on SELECTOR (it applies to the elements "
                f"of the preceding --on)"
            )
        if self.kind == "html":
            groups[-1].html = True
        else:
            groups[-1].actions.append((option_string, self.kind, values))


_REWRITE_EPILOG = """\
Each --on SELECTOR starts a group: the actions after it (up to the next --on) apply, in the
order given, to every element SELECTOR matches. Groups apply in order. CONTENT is inserted as
text (escaped for where it lands) unless --html is given in its group; CONTENT that starts
with '-' is written --append=-CONTENT.

Without --on or a recipe, --demo runs: the Cloudflare showcase. http:// URLs in a[href], img[src],
script[src], link[href] and form[action] become https://, every <img> without a loading
attribute gets loading="lazy", and a one-line summary (bytes in, bytes out, elements changed,
MB/s) goes to standard error.

exit status: 0 success, 1 the document could not be rewritten (nothing more is written; an
-o FILE is removed), 2 usage or input error (bad option or selector, unreadable input).

examples:
  htmlstream rewrite page.html --on 'a[href^="http:"]' --set-attr rel=noopener -o out.html
  curl -s https://example.org/ | htmlstream rewrite - --on script --remove \\
      --on 'img:not([alt])' --set-attr alt= --on main --prepend '<p>Hi</p>' --html
  htmlstream rewrite https://example.org/ --demo > /dev/null
  htmlstream rewrite page.html --https-upgrade --https-hosts '*.example.com' \\
      --inject-head-end analytics.html --csp-nonce -o out.html
"""


def add_rewrite_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``htmlstream rewrite``."""
    parser = subparsers.add_parser(
        "rewrite",
        help="rewrite a document as it streams: --on SELECTOR ACTION... (or --demo)",
        usage=(
            "%(prog)s [-h] [INPUT|-|URL] [-o OUT] [--encoding ENC] [--chunk-size N]\n"
            "                          (--on SELECTOR ACTION... [--on SELECTOR ACTION...] | --demo)"
            "\n                          [--https-upgrade ...] [--inject-head-end FILE ...] "
            "[--csp-nonce ...]"
        ),
        description=(
            "Rewrite INPUT as a stream: read it in chunks, apply the actions of each --on\n"
            "group to the elements its selector matches, and write every output chunk as soon\n"
            "as it is decided."
        ),
        epilog=_REWRITE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "input",
        nargs="?",
        metavar="INPUT",
        help="HTML file to read, '-' for standard input, or an http:// or https:// URL "
        f"(fetched with a {URL_TIMEOUT} s timeout) (default: the bundled sample page)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="file to write (default: standard output)",
    )
    parser.add_argument(
        "--encoding",
        type=rewriter_encoding,
        metavar="ENC",
        help="document encoding, a label of the WHATWG Encoding Standard naming an "
        "ASCII-compatible encoding (default: for a file or URL, what a browser would use: a "
        "byte order mark, the charset the server declares, a <meta charset> in the first 1024 "
        "bytes, else windows-1252; utf-8 for standard input)",
    )
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        default=DEFAULT_CHUNK_SIZE,
        metavar="N",
        help=f"read and feed at most N bytes at a time (default: {DEFAULT_CHUNK_SIZE})",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="the Cloudflare showcase: upgrade http:// links to https://, lazy-load images, "
        "print a summary to standard error (the default without --on)",
    )
    parser.add_argument(
        "--on",
        action=_OnAction,
        dest="groups",
        metavar="SELECTOR",
        help="start a group: the actions that follow apply to the elements SELECTOR matches",
    )
    actions = parser.add_argument_group(
        "actions", "each applies to the elements of the preceding --on, in the order given"
    )

    def action(option: str, kind: str, text: str, **kwargs: Any) -> None:
        actions.add_argument(
            option, action=_GroupAction, dest="groups", kind=kind, help=text, **kwargs
        )

    action(
        "--set-attr",
        "set_attr",
        "set (or add) an attribute; repeatable",
        metavar="NAME=VALUE",
        type=attribute_assignment,
    )
    action(
        "--remove-attr",
        "remove_attr",
        "remove an attribute; repeatable",
        metavar="NAME",
        type=attribute_name,
    )
    action("--remove", "remove", "remove the element and its content", nargs=0)
    action("--unwrap", "unwrap", "remove the element's tags, keep its content", nargs=0)
    action("--before", "before", "insert CONTENT before the element", metavar="CONTENT")
    action("--after", "after", "insert CONTENT after the element", metavar="CONTENT")
    action(
        "--prepend",
        "prepend",
        "insert CONTENT at the start of the element's content",
        metavar="CONTENT",
    )
    action(
        "--append",
        "append",
        "insert CONTENT at the end of the element's content",
        metavar="CONTENT",
    )
    action("--replace", "replace", "replace the whole element with CONTENT", metavar="CONTENT")
    action("--inner", "inner", "replace the element's content with CONTENT", metavar="CONTENT")
    action("--html", "html", "insert this group's CONTENT as HTML, not as text", nargs=0)
    action(
        "--rename",
        "rename",
        "change the tag name (start and end tags)",
        metavar="TAG",
        type=tag_name,
    )
    _add_email_options(parser)
    add_recipe_arguments(parser)
    parser.set_defaults(func=cmd_rewrite, groups=None)


def _action(kind: str, value: Any, html: bool) -> Callable[[Element], None]:
    """One action of a group as a function of the element."""
    if kind == "set_attr":
        return lambda el: el.set_attribute(*value)
    if kind == "remove_attr":
        return lambda el: el.remove_attribute(value)
    if kind == "remove":
        return lambda el: el.remove()
    if kind == "unwrap":
        return lambda el: el.remove_and_keep_content()
    if kind == "rename":
        return lambda el: setattr(el, "tag_name", value)
    method = {"inner": "set_inner_content"}.get(kind, kind)
    return lambda el: getattr(el, method)(value, html=html)


# -- rewrite: the e-mail recipes (htmlstream.recipes.emails) ---------------------------------


def _add_email_options(parser: argparse.ArgumentParser) -> None:
    """``--obfuscate-emails`` and ``--decode-emails`` (with ``--email-path``)."""
    group = parser.add_argument_group("e-mail recipes")
    mode = group.add_mutually_exclusive_group()
    mode.add_argument(
        "--obfuscate-emails",
        action="store_true",
        help="Cloudflare's e-mail address obfuscation: addresses in text and mailto: links "
        "become data-cfemail elements and /cdn-cgi/l/email-protection#HEX links, with a "
        "decoder script before </body>",
    )
    mode.add_argument(
        "--decode-emails",
        action="store_true",
        help="the inverse, for scraping: data-cfemail elements and email-protection links back "
        "to the addresses; the decoder script removed",
    )
    group.add_argument(
        "--email-path",
        metavar="PATH",
        default=None,
        help="the fallback path of the obfuscated links (default: /cdn-cgi/l/email-protection)",
    )


def _email_recipes(args: argparse.Namespace) -> list[Any]:
    """The e-mail recipes the options ask for."""
    from htmlstream.recipes import emails

    path = args.email_path or emails.DEFAULT_PATH
    if args.obfuscate_emails:
        try:
            return [emails.obfuscate_emails(path=path)]
        except ValueError as exc:
            raise CliError(f"--email-path: {exc}") from exc
    if args.decode_emails:
        return [emails.decode_emails(path=path)]
    return []


# -- end of the e-mail recipes ----------------------------------------------------------------


def _group_handler(group: RewriteGroup) -> Callable[[Element], None]:
    """The element handler that applies a group's actions in order."""
    steps = [(option, _action(kind, value, group.html)) for option, kind, value in group.actions]

    def handler(element: Element) -> None:
        for option, step in steps:
            try:
                step(element)
            except (ValueError, TypeError, htmlstream.HtmlStreamError) as exc:
                raise CliError(
                    f"--on {group.selector!r}: {option} failed on <{element.tag_name}> at byte "
                    f"offset {element.offset}: {exc}",
                    status=1,
                ) from exc

    return handler


class DemoStats:
    """What ``--demo`` changed."""

    def __init__(self) -> None:
        self.elements = 0
        self.upgraded = 0
        self.lazy = 0

    def element(self, element: Element) -> None:
        """The ``--demo`` element handler."""
        changed = False
        name = element.tag_name
        attr = DEMO_URL_ATTRIBUTES.get(name)
        if attr is not None:
            value = element.get_attribute(attr)
            # Browsers strip leading and trailing ASCII whitespace from URL attributes.
            url = value.strip(" \t\n\f\r") if value is not None else ""
            if url[:7].lower() == "http://":
                element.set_attribute(attr, "https://" + url[7:])
                self.upgraded += 1
                changed = True
        if name == "img" and not element.has_attribute("loading"):
            element.set_attribute("loading", "lazy")
            self.lazy += 1
            changed = True
        self.elements += changed


def _build_rewriter(
    groups: list[RewriteGroup], demo: DemoStats | None, encoding: str, adjust: bool = False,
    recipes: list[Any] | None = None,
) -> Rewriter:
    """A :class:`~htmlstream.rewriter.Rewriter` with the groups (or the demo) as rules;
    ``adjust``: follow the first ``<meta charset>`` (the encoding was only a guess)."""
    # The rewriter engine is loaded only when needed: ``tokens`` does not depend on it.
    from htmlstream.rewriter import Rewriter

    rewriter = Rewriter(encoding=encoding, adjust_charset_on_meta_tag=adjust)
    if recipes:
        rewriter.use(*recipes)
    if demo is not None:
        rewriter.on(DEMO_SELECTOR, element=demo.element)
    for group in groups:
        rewriter.on(group.selector, element=_group_handler(group))
    return rewriter


def _check_groups(groups: list[RewriteGroup]) -> None:
    """Usage errors the parser cannot see: a group without action, a bad selector."""
    from htmlstream.selectors import parse_selector

    for group in groups:
        if not group.actions:
            raise CliError(
                f"--on {group.selector!r} has no action (--set-attr, --remove-attr, --remove, "
                f"--unwrap, --before, --after, --prepend, --append, --replace, --inner, --rename)"
            )
        try:
            parse_selector(group.selector)
        except htmlstream.SelectorError as exc:
            raise CliError(f"invalid selector {group.selector!r}: {exc}") from exc


@contextlib.contextmanager
def open_output(path: str | None, input_path: str | None) -> Iterator[BinaryIO]:
    """Open OUT (``None``: standard output) for binary writing.

    A regular file is removed again if the block fails, so that a failed rewrite leaves no
    truncated document behind.
    """
    if path is None or path == "-":
        sys.stdout.flush()
        yield sys.stdout.buffer
        return
    if input_path is not None and input_path != "-" and not is_url(input_path):
        with contextlib.suppress(OSError):
            if os.path.samefile(path, input_path):
                raise CliError(f"-o {path!r} is the input file: it would be overwritten")
    try:
        stream = open(path, "wb")  # noqa: SIM115 - closed below, errors mapped to CliError
    except OSError as exc:
        raise CliError(f"cannot write {path!r}: {exc.strerror or exc}") from exc
    try:
        with stream:
            yield stream
    except BaseException:
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.stat(path).st_mode):
                os.unlink(path)
        raise


def cmd_rewrite(args: argparse.Namespace) -> int:
    """Run ``htmlstream rewrite``."""
    groups: list[RewriteGroup] = args.groups or []
    if args.demo and groups:
        raise CliError("--demo cannot be combined with --on")
    _check_groups(groups)
    # (csp_nonce first: the others' scripts carry the document's nonce)
    recipes = recipes_from_args(args) + _email_recipes(args)
    if args.demo and recipes:
        raise CliError("--demo cannot be combined with recipes (--https-upgrade, --inject-..., "
                       "--csp-nonce, --obfuscate-emails...)")
    demo = DemoStats() if not groups and not recipes else None
    context: dict[str, Any] = {}

    total_in = total_out = 0
    elapsed = 0.0
    with open_source(args.input) as (name, source, charset):
        chunks = read_chunks_eagerly(source, args.chunk_size, name)
        encoding = args.encoding
        adjust = False
        if encoding is None:
            if args.input == "-":
                encoding = "utf-8"
            else:
                # What a browser would decode the document with; a guess (no byte order mark,
                # no server charset) gives way to the first <meta charset>, as in a browser.
                prefix, chunks = peek_chunks(chunks, PRESCAN_BYTES)
                found = sniff(prefix, _content_type(charset))
                encoding = found.encoding
                adjust = not found.certain
        rewriter = _build_rewriter(groups, demo, encoding, adjust, recipes)
        with open_output(args.output, args.input) as out:
            started = time.perf_counter()
            stream = rewriter.stream(context=context)
            elapsed += time.perf_counter() - started
            for chunk in chunks:
                total_in += len(chunk)
                started = time.perf_counter()
                data = stream.feed(chunk)
                elapsed += time.perf_counter() - started
                if data:
                    out.write(data)
                    out.flush()
                    total_out += len(data)
            started = time.perf_counter()
            data = stream.close()
            elapsed += time.perf_counter() - started
            out.write(data)
            out.flush()
            total_out += len(data)
        if stream.passthrough_reason is not None:
            print(f"{PROG}: note: {name}: {stream.passthrough_reason}", file=sys.stderr)

    if recipes:
        report_recipes(context, name)
    if demo is not None:
        rate = f"{total_in / elapsed / 1e6:.1f} MB/s" if elapsed > 0 else "n/a MB/s"
        print(
            f"{PROG}: demo on {name}: {total_in:,} bytes in, {total_out:,} bytes out, "
            f"{demo.elements:,} elements changed ({demo.upgraded:,} http:// URLs upgraded to "
            f"https://, {demo.lazy:,} <img> given loading=lazy), {rate}",
            file=sys.stderr,
        )
    return 0


# --------------------------------------------------------------------------------------------
# htmlstream proxy
# --------------------------------------------------------------------------------------------

#: ``htmlstream rewrite`` options the proxy does not take (they are about files and chunking).
_PROXY_SKIPPED = frozenset({"-h", "--help", "-o", "--output", "--chunk-size", "--encoding"})


def listen_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6; port 0: any free port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def positive_float(value: str) -> float:
    """A number of seconds greater than 0."""
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {value!r}")
    return number


def add_proxy_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``htmlstream proxy``: its own options, then every rewrite option of
    ``htmlstream rewrite`` (--on/--set-attr/..., --demo and whatever else it has)."""
    parser = subparsers.add_parser(
        "proxy",
        help="a rewriting reverse proxy in front of one origin",
        description=(
            "Serve UPSTREAM's responses on LISTEN, rewriting its HTML as it streams (the rewrite\n"
            "options are those of 'htmlstream rewrite'; without --on, --demo). One access-log\n"
            "line per request goes to standard error. SIGINT/SIGTERM stop accepting and let\n"
            "in-flight requests finish (--grace seconds). Needs htmlstream[proxy]."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--upstream", required=True, metavar="URL",
                        help="the origin, http://HOST:PORT (every request goes there)")
    parser.add_argument("--listen", type=listen_address, default=("127.0.0.1", 8080),
                        metavar="HOST:PORT", help="where to listen (default: 127.0.0.1:8080; "
                        "port 0: a free one, printed on standard output)")
    parser.add_argument("--preserve-host", action="store_true",
                        help="send the client's Host upstream (default: the upstream's)")
    parser.add_argument("--trust-forwarded", action="store_true",
                        help="append to the client's X-Forwarded-For and keep its "
                        "X-Forwarded-Proto/-Host (only behind a proxy you trust)")
    parser.add_argument("--connect-timeout", type=positive_float, default=10.0, metavar="S",
                        help="seconds to connect to the upstream (default: 10)")
    parser.add_argument("--read-timeout", type=positive_float, default=60.0, metavar="S",
                        help="seconds the upstream may stay silent (default: 60)")
    parser.add_argument("--grace", type=positive_float, default=10.0, metavar="S",
                        help="seconds in-flight requests get at shutdown (default: 10)")
    # The rewrite options, taken from the rewrite command itself so that every option it has
    # (recipes included) builds the proxy's Rewriter too.
    scratch = argparse.ArgumentParser(add_help=False)
    add_rewrite_parser(scratch.add_subparsers())
    rewrite = next(a for a in scratch._actions
                   if isinstance(a, argparse._SubParsersAction)).choices["rewrite"]
    for action in rewrite._actions:
        if action.option_strings and not _PROXY_SKIPPED.intersection(action.option_strings):
            parser._add_action(action)
    parser.set_defaults(**{**rewrite._defaults, "func": cmd_proxy, "input": None})


def cmd_proxy(args: argparse.Namespace) -> int:
    """Run ``htmlstream proxy`` until SIGINT or SIGTERM."""
    import asyncio
    import logging
    import signal

    try:
        from htmlstream.integrations.proxy import ReverseProxy
    except ImportError as exc:
        raise CliError(f"htmlstream proxy needs aiohttp: pip install 'htmlstream[proxy]' "
                       f"({exc})") from exc
    groups: list[RewriteGroup] = args.groups or []
    if args.demo and groups:
        raise CliError("--demo cannot be combined with --on")
    _check_groups(groups)
    recipes = recipes_from_args(args) + _email_recipes(args)
    # The encoding is each response's (ResponseRewrite makes the stream in it).
    rewriter = _build_rewriter(groups, DemoStats() if not groups and not recipes else None,
                               "utf-8", recipes=recipes)
    try:
        proxy = ReverseProxy(rewriter, args.upstream, preserve_host=args.preserve_host,
                             trust_forwarded=args.trust_forwarded,
                             connect_timeout=args.connect_timeout,
                             read_timeout=args.read_timeout, shutdown_grace=args.grace)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    log = logging.getLogger("htmlstream.proxy")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            host, port = await proxy.start(*args.listen)
        except OSError as exc:
            raise CliError(f"cannot listen on {args.listen[0]}:{args.listen[1]}: "
                           f"{exc.strerror or exc}") from exc
        shown = f"[{host}]" if ":" in host else host
        print(f"{PROG} proxy: listening on http://{shown}:{port}/ -> {args.upstream}",
              flush=True)
        try:
            await stop.wait()
            print(f"{PROG} proxy: stopping (in-flight requests get {args.grace:g} s)",
                  file=sys.stderr, flush=True)
        finally:
            await proxy.close()

    asyncio.run(serve())
    return 0


# Recipes (htmlstream.recipes): --https-upgrade, --inject-*, --csp-nonce
# --------------------------------------------------------------------------------------------


def add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``htmlstream rewrite`` that add recipes (``htmlstream.recipes``)."""
    group = parser.add_argument_group(
        "recipes", "ready-made rewrites, combined with each other and with --on groups"
    )
    group.add_argument("--https-upgrade", action="store_true",
                       help="rewrite http:// subresource URLs to https:// where the host is "
                       "known to serve HTTPS (--https-hosts, and Chromium's HSTS preload list "
                       "when the hstspreload package is installed)")
    group.add_argument("--https-hosts", action="append", metavar="PATTERNS",
                       help="hosts known to serve HTTPS: example.com, *.example.com or *, "
                       "comma-separated; repeatable (implies --https-upgrade)")
    group.add_argument("--https-links", action="store_true",
                       help="also upgrade links (a, area) (implies --https-upgrade)")
    group.add_argument("--no-hsts-preload", action="store_true",
                       help="do not count the hosts of the HSTS preload list as known")
    group.add_argument("--upgrade-insecure-requests", action="store_true",
                       help="add the upgrade-insecure-requests CSP <meta> to <head>")
    for point in ("head-start", "head-end", "body-start", "body-end"):
        group.add_argument(f"--inject-{point}", metavar="FILE",
                           help=f"insert the HTML of FILE at the {point.replace('-', ' ')} "
                           "(once per document, tags or no tags)")
    group.add_argument("--csp-nonce", action="store_true",
                       help="put a fresh CSP nonce on <script> and <style> and merge it into a "
                       "CSP <meta>; the nonce is printed to standard error")
    group.add_argument("--csp-select", metavar="SELECTOR",
                       help="the elements that get the nonce (default: 'script, style'; "
                       "implies --csp-nonce)")


def recipes_from_args(args: argparse.Namespace) -> list[Any]:
    """The recipes the options ask for, in the order they run: the CSP nonce first (what the
    others insert gets it), then the injections, then the HTTPS upgrade."""
    from htmlstream import recipes

    made: list[Any] = []
    if args.csp_nonce or args.csp_select:
        try:
            made.append(recipes.csp_nonce(select=args.csp_select or "script, style"))
        except htmlstream.SelectorError as exc:
            raise CliError(f"invalid selector {args.csp_select!r}: {exc}") from exc
    snippets: dict[str, str] = {}
    for point in ("head_start", "head_end", "body_start", "body_end"):
        path = getattr(args, f"inject_{point}")
        if path is not None:
            try:
                with open(path, encoding="utf-8") as file:
                    snippets[point] = file.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise CliError(f"cannot read --inject-{point.replace('_', '-')} {path!r}: "
                               f"{exc}") from exc
    if snippets:
        made.append(recipes.inject(**snippets))
    upgrade = (args.https_upgrade or args.https_hosts or args.https_links
               or args.upgrade_insecure_requests)
    if upgrade:
        hosts = [h.strip() for value in args.https_hosts or [] for h in value.split(",")
                 if h.strip()]
        preload = not args.no_hsts_preload
        if preload:
            try:
                import hstspreload  # noqa: F401
            except ImportError:
                preload = False     # the hosts given only (pip install 'htmlstream[hsts]')
        try:
            made.append(recipes.https_upgrade(
                hosts or None, hsts_preload=preload, links=args.https_links,
                upgrade_insecure_requests=args.upgrade_insecure_requests))
        except ValueError as exc:
            raise CliError(str(exc)) from exc
    return made


def report_recipes(context: dict[str, Any], name: str) -> None:
    """What the recipes did, on standard error."""
    report = context.get("https_upgrade")
    if report is not None:
        top = ", ".join(f"{host} {n}" for host, n in sorted(
            report.upgraded.items(), key=lambda kv: (-kv[1], kv[0]))[:5])
        print(f"{PROG}: https-upgrade on {name}: {report.total_upgraded:,} URLs upgraded"
              f"{' (' + top + ')' if top else ''}, {report.total_left:,} http:// URLs left",
              file=sys.stderr)
    nonce = context.get("csp_nonce")
    if isinstance(nonce, str):
        print(f"{PROG}: csp-nonce on {name}: {nonce}", file=sys.stderr)


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``htmlstream`` argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Streaming HTML tokenizer and rewriter."
    )
    parser.add_argument("--version", action="version",
                        version=f"{PROG} {htmlstream.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_tokens_parser(subparsers)
    add_rewrite_parser(subparsers)
    add_proxy_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    0 on success, 1 when htmlstream reports an error on the document
    (:class:`htmlstream.HtmlStreamError`), 2 on a usage or input error (bad option, missing file).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed by argparse
        return exc.code if isinstance(exc.code, int) else 2
    try:
        status: int = args.func(args)
        return status
    except CliError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.status
    except htmlstream.HtmlStreamError as exc:
        print(f"{PROG}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, and keep Python's own flush at exit
        # from raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
