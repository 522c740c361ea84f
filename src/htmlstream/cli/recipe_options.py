"""The recipe options (``htmlstream.recipes``) that ``rewrite`` and ``proxy`` share: what they add
to a parser, the recipes they ask for, and the report on standard error."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

import htmlstream
from htmlstream.cli._common import PROG, CliError

if TYPE_CHECKING:
    pass


def add_email_options(parser: argparse.ArgumentParser) -> None:
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


def email_recipes(args: argparse.Namespace) -> list[Any]:
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
