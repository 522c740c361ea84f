"""``htmlstream rewrite``: rewrite a document as a stream (``--on`` groups, ``--demo``, recipe
options); each output chunk is written as soon as the rewriter returns it."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import htmlstream
from htmlstream.cli._common import (
    DEFAULT_CHUNK_SIZE,
    PROG,
    URL_TIMEOUT,
    CliError,
    document_encoding,
    open_output,
    open_source,
    positive_int,
    pump,
    read_chunks_eagerly,
    rewriter_encoding,
)
from htmlstream.cli.recipe_options import (
    add_email_options,
    add_recipe_arguments,
    email_recipes,
    recipes_from_args,
    report_recipes,
)

if TYPE_CHECKING:
    from htmlstream.rewriter import Rewriter
    from htmlstream.units import Element


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
    add_group_arguments(parser)
    add_email_options(parser)
    add_recipe_arguments(parser)
    parser.set_defaults(func=cmd_rewrite, groups=None)


def add_group_arguments(parser: argparse.ArgumentParser) -> None:
    """``--on SELECTOR`` and the actions of its group (``args.groups``: :class:`RewriteGroup`
    list, None when there is none); shared by the commands that rewrite (rewrite, warc)."""
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


def build_rewriter(
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


def check_groups(groups: list[RewriteGroup]) -> None:
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


def cmd_rewrite(args: argparse.Namespace) -> int:
    """Run ``htmlstream rewrite``."""
    groups: list[RewriteGroup] = args.groups or []
    if args.demo and groups:
        raise CliError("--demo cannot be combined with --on")
    check_groups(groups)
    # (csp_nonce first: the others' scripts carry the document's nonce)
    recipes = recipes_from_args(args) + email_recipes(args)
    if args.demo and recipes:
        raise CliError("--demo cannot be combined with recipes (--https-upgrade, --inject-..., "
                       "--csp-nonce, --obfuscate-emails...)")
    demo = DemoStats() if not groups and not recipes else None
    context: dict[str, Any] = {}

    with open_source(args.input) as (name, source, charset):
        chunks = read_chunks_eagerly(source, args.chunk_size, name)
        encoding, adjust, chunks = document_encoding(args.encoding, args.input, chunks, charset)
        rewriter = build_rewriter(groups, demo, encoding, adjust, recipes)
        with open_output(args.output, args.input) as out:
            stream = rewriter.stream(context=context)
            moved = pump(stream, chunks, out)
        if stream.passthrough_reason is not None:
            print(f"{PROG}: note: {name}: {stream.passthrough_reason}", file=sys.stderr)

    if recipes:
        report_recipes(context, name)
    if demo is not None:
        rate = (f"{moved.bytes_in / moved.seconds / 1e6:.1f} MB/s" if moved.seconds > 0
                else "n/a MB/s")
        print(
            f"{PROG}: demo on {name}: {moved.bytes_in:,} bytes in, {moved.bytes_out:,} bytes out, "
            f"{demo.elements:,} elements changed ({demo.upgraded:,} http:// URLs upgraded to "
            f"https://, {demo.lazy:,} <img> given loading=lazy), {rate}",
            file=sys.stderr,
        )
    return 0
