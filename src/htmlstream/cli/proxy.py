"""``htmlstream proxy``: a rewriting reverse proxy in front of one origin
(:mod:`htmlstream.integrations.proxy`), with every option of ``htmlstream rewrite``."""

from __future__ import annotations

import argparse
import os
import socket
import ssl
import sys
from typing import TYPE_CHECKING

from htmlstream.cli._common import (
    PROG,
    CliError,
    non_negative_int,
    positive_float,
    positive_int,
)
from htmlstream.cli.recipe_options import email_recipes, recipes_from_args
from htmlstream.cli.rewrite import (
    DemoStats,
    RewriteGroup,
    add_rewrite_parser,
    build_rewriter,
    check_groups,
)

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from htmlstream import Rewriter


#: ``htmlstream rewrite`` options the proxy does not take (they are about files and chunking).
_PROXY_SKIPPED = frozenset({"-h", "--help", "-o", "--output", "--chunk-size", "--encoding"})


def listen_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6; port 0: any free port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def byte_size(value: str) -> int:
    """``argparse`` type: a size in bytes, with an optional ``k``, ``m`` or ``g`` suffix
    (binary multiples, as nginx's sizes; ``KiB``/``MiB``/``GiB`` too); 0 or more."""
    text = value.strip().lower().removesuffix("ib").removesuffix("b")
    number, unit = (text[:-1], text[-1]) if text[-1:] in ("k", "m", "g") else (text, "")
    if not number.isdigit():
        raise argparse.ArgumentTypeError(f"expected a size such as 1048576, 512k or 10m, not "
                                         f"{value!r}")
    return int(number) * _UNITS[unit]


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
            "in-flight requests finish (--grace seconds). --workers processes share the\n"
            "port; the client timeouts and limits default to nginx's. Needs htmlstream[proxy]."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--upstream", required=True, metavar="URL",
                        help="the origin, http://HOST:PORT (every request goes there)")
    parser.add_argument("--listen", type=listen_address, default=("127.0.0.1", 8080),
                        metavar="HOST:PORT", help="where to listen (default: 127.0.0.1:8080; "
                        "port 0: a free one, printed on standard output)")
    parser.add_argument("--tls-cert", metavar="FILE",
                        help="serve HTTPS with this certificate chain (PEM; with --tls-key)")
    parser.add_argument("--tls-key", metavar="FILE",
                        help="the private key of --tls-cert (PEM; default: in that file)")
    parser.add_argument("--preserve-host", action="store_true",
                        help="send the client's Host upstream (default: the upstream's)")
    parser.add_argument("--trust-forwarded", action="store_true",
                        help="append to the client's X-Forwarded-For and keep its "
                        "X-Forwarded-Proto/-Host (only behind a proxy you trust)")
    parser.add_argument("--connect-timeout", type=positive_float, default=10.0, metavar="S",
                        help="seconds to connect to the upstream (default: 10)")
    parser.add_argument("--read-timeout", type=positive_float, default=60.0, metavar="S",
                        help="seconds the upstream may stay silent (default: 60)")
    parser.add_argument("--websocket-idle-timeout", type=positive_float, default=300.0,
                        metavar="S", help="seconds a relayed WebSocket may carry no message "
                        "before both sides are closed (default: 300)")
    parser.add_argument("--grace", type=positive_float, default=10.0, metavar="S",
                        help="seconds in-flight requests get at shutdown (default: 10)")
    parser.add_argument("--workers", type=positive_int, default=None, metavar="N",
                        help="worker processes sharing the port, restarted if one dies "
                        "(default: the number of CPUs)")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default=None,
                        help="the event loop (default: uvloop when it is installed, as "
                        "htmlstream[proxy] installs it where it has wheels; else asyncio)")
    parser.add_argument("--metrics", type=listen_address, default=None, metavar="HOST:PORT",
                        help="serve Prometheus metrics at http://HOST:PORT/metrics (every "
                        "worker's summed; port 0: a free one, printed on standard output)")
    limits = parser.add_argument_group("client timeouts and limits (per worker)")
    limits.add_argument("--header-timeout", type=positive_float, default=60.0, metavar="S",
                        help="seconds a request head may take to arrive in full; then 408 "
                        "and the connection is closed (default: 60)")
    limits.add_argument("--body-timeout", type=positive_float, default=60.0, metavar="S",
                        help="seconds an upload may go without a byte; then 408 and the "
                        "connection is closed (default: 60)")
    limits.add_argument("--max-body-size", type=byte_size, default=10 << 20, metavar="SIZE",
                        help="the largest request body (512k, 10m...; 0: no limit); a larger "
                        "one gets 413 and never reaches the upstream whole (default: 10m)")
    limits.add_argument("--send-timeout", type=positive_float, default=60.0, metavar="S",
                        help="seconds a client may take no part of its response before it "
                        "and its upstream connection are closed (default: 60)")
    limits.add_argument("--keepalive-timeout", type=positive_float, default=75.0,
                        metavar="S", help="seconds an idle keep-alive connection is kept "
                        "(default: 75)")
    limits.add_argument("--max-connections", type=non_negative_int, default=1024,
                        metavar="N", help="client connections open at most per worker; at "
                        "the cap new ones wait in the backlog (0: no cap; default: 1024)")
    parser.add_argument("--markdown", action="store_true",
                        help="answer requests whose Accept prefers text/markdown to text/html "
                        "with the page as Markdown (and Vary: Accept on every rewritten page)")
    parser.add_argument("--content-signal", metavar="VALUE",
                        help="the Content-Signal header of Markdown responses (with "
                        "--markdown), e.g. 'ai-train=no, search=yes, ai-input=yes'")
    esi = parser.add_argument_group("Edge Side Includes (docs/guide/esi.md)")
    esi.add_argument("--esi", nargs="?", const="on", default="off", choices=["on", "always"],
                     help="assemble pages from their <esi:include> fragments, fetched "
                     "concurrently: responses with Surrogate-Control: content=\"ESI/1.0\" "
                     "(--esi), or every HTML response (--esi=always)")
    esi.add_argument("--esi-hosts", default="", metavar="HOST,...",
                     help="hosts fragments may come from besides the upstream (default: none)")
    parser.add_argument("--handlers", metavar="MODULE:NAME",
                        help="the rewriter to run: a Rewriter (or a function returning one) "
                             "named NAME in the importable module MODULE; its handlers may be "
                             "async def (instead of --on and the recipe options)")
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


def _tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """The server-side TLS context of ``--tls-cert``/``--tls-key`` (None: plain HTTP)."""
    if cert is None:
        if key is not None:
            raise CliError("--tls-key needs --tls-cert")
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise CliError(f"cannot load the TLS certificate {cert!r}: {exc}") from exc
    return context


def load_rewriter(spec: str) -> Rewriter:
    """The Rewriter ``--handlers MODULE:NAME`` names (NAME may be a function returning one)."""
    import importlib

    from htmlstream import Rewriter

    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise CliError(f"--handlers takes MODULE:NAME, not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"--handlers: cannot import {module_name!r}: {exc}") from exc
    obj = module
    for part in name.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise CliError(f"--handlers: {module_name!r} has no {name!r}") from exc
    if not isinstance(obj, Rewriter) and callable(obj):
        obj = obj()
    if not isinstance(obj, Rewriter):
        raise CliError(f"--handlers: {spec} is not a Rewriter (nor a function returning one): "
                       f"{obj!r}")
    return obj


def cmd_proxy(args: argparse.Namespace) -> int:
    """Run ``htmlstream proxy`` until SIGINT or SIGTERM."""
    import asyncio
    import logging
    import signal

    try:
        from htmlstream.integrations.proxy import MarkdownOptions, ReverseProxy, ServerLimits
        from htmlstream.integrations.proxy_limits import bind
        from htmlstream.integrations.proxy_metrics import ProxyMetrics
        from htmlstream.integrations.proxy_workers import cpu_count, listening_sockets, supervise
    except ImportError as exc:
        raise CliError(f"htmlstream proxy needs aiohttp: pip install 'htmlstream[proxy]' "
                       f"({exc})") from exc
    groups: list[RewriteGroup] = args.groups or []
    if args.demo and groups:
        raise CliError("--demo cannot be combined with --on")
    check_groups(groups)
    recipes = recipes_from_args(args) + email_recipes(args)
    if args.handlers is not None:
        if groups or recipes or args.demo:
            raise CliError("--handlers gives the whole rewriter: it cannot be combined with "
                           "--on, --demo or recipe options (register those in the module)")
        rewriter = load_rewriter(args.handlers)
    else:
        # The encoding is each response's (ResponseRewrite makes the stream in it).
        rewriter = build_rewriter(groups, DemoStats() if not groups and not recipes else None,
                                  "utf-8", recipes=recipes)
    if args.content_signal is not None and not args.markdown:
        raise CliError("--content-signal needs --markdown")
    try:
        markdown = (MarkdownOptions(content_signal=args.content_signal) if args.markdown
                    else None)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    workers = args.workers or cpu_count()
    loop_name, loop_factory = event_loop(args.loop)
    if workers > 1 and not hasattr(os, "fork"):
        raise CliError("--workers needs os.fork (POSIX): use --workers 1 here")
    limits = ServerLimits(header_timeout=args.header_timeout, body_timeout=args.body_timeout,
                          max_body_size=args.max_body_size, send_timeout=args.send_timeout,
                          keepalive_timeout=args.keepalive_timeout,
                          max_connections=args.max_connections)
    metrics = ProxyMetrics(workers) if args.metrics is not None else None
    try:
        proxy = ReverseProxy(rewriter, args.upstream, preserve_host=args.preserve_host,
                             trust_forwarded=args.trust_forwarded,
                             connect_timeout=args.connect_timeout,
                             read_timeout=args.read_timeout, shutdown_grace=args.grace,
                             websocket_idle_timeout=args.websocket_idle_timeout,
                             limits=limits, markdown=markdown, esi=args.esi,
                             esi_hosts=[h for h in args.esi_hosts.split(",") if h.strip()],
                             metrics=metrics)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    _raise_descriptor_limit(args.max_connections)
    tls = _tls_context(args.tls_cert, args.tls_key)
    log = logging.getLogger("htmlstream.proxy")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)

    metrics_sock: socket.socket | None = None
    if args.metrics is not None:
        # Bound once, here: with workers, every one serves the summed figures on it.
        try:
            mhost, mport = args.metrics
            metrics_sock = bind(mhost, mport, 128)
        except OSError as exc:
            raise CliError(f"cannot listen on {args.metrics[0]}:{args.metrics[1]} for "
                           f"--metrics: {exc.strerror or exc}") from exc
    index = 0

    def listening(host: str, port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        scheme = "https" if tls is not None else "http"
        print(f"{PROG} proxy: listening on {scheme}://{shown}:{port}/ -> {args.upstream} "
              f"({loop_name})", flush=True)
        if metrics_sock is not None:
            mhost, mport = metrics_sock.getsockname()[:2]
            mshown = f"[{mhost}]" if ":" in mhost else mhost
            print(f"{PROG} proxy: metrics on http://{mshown}:{mport}/metrics", flush=True)

    async def serve(sock: socket.socket | None) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            host, port = await proxy.start(*args.listen, ssl_context=tls, sock=sock)
        except OSError as exc:
            raise CliError(f"cannot listen on {args.listen[0]}:{args.listen[1]}: "
                           f"{exc.strerror or exc}") from exc
        if metrics is not None and metrics_sock is not None:
            metrics.attach(index)
            await metrics.serve(metrics_sock)
        if sock is None:
            listening(host, port)
        try:
            await stop.wait()
            if sock is None:
                print(f"{PROG} proxy: stopping (in-flight requests get {args.grace:g} s)",
                      file=sys.stderr, flush=True)
        finally:
            if metrics is not None:
                await metrics.close()
            await proxy.close()

    try:
        if workers == 1:
            with asyncio.Runner(loop_factory=loop_factory) as runner:
                runner.run(serve(None))
            return 0
        try:
            host, port = args.listen
            sockets = listening_sockets(host, port, workers, limits.backlog)
        except OSError as exc:
            raise CliError(f"cannot listen on {args.listen[0]}:{args.listen[1]}: "
                           f"{exc.strerror or exc}") from exc
        listening(*sockets[0].getsockname()[:2])

        def started(i: int) -> None:
            nonlocal index
            index = i

        def worker(sock: socket.socket) -> int:
            with asyncio.Runner(loop_factory=loop_factory) as runner:     # (made after the fork)
                runner.run(serve(sock))
            return 0

        return supervise(sockets, workers, args.grace, worker, on_start=started)
    finally:
        if metrics_sock is not None:
            metrics_sock.close()


def event_loop(name: str | None) -> tuple[str, Callable[[], asyncio.AbstractEventLoop] | None]:
    """``--loop``: the event loop's name and factory (None: asyncio's own).  Without a name,
    uvloop if it can be imported, else asyncio; ``uvloop`` when it is not installed is an
    error, not a quiet fallback."""
    if name == "asyncio":
        return "asyncio", None
    try:
        import uvloop
    except ImportError as exc:
        if name == "uvloop":
            raise CliError(f"--loop uvloop: uvloop is not installed (pip install uvloop; it "
                           f"has no Windows wheels) ({exc})") from exc
        return "asyncio", None
    return "uvloop", uvloop.new_event_loop


def _raise_descriptor_limit(max_connections: int) -> None:
    """Raise this process's soft descriptor limit to what ``max_connections`` clients, the
    upstream pool (256 connections) and a margin need (up to the hard limit); warn if it
    cannot."""
    try:
        import resource
    except ImportError:         # pragma: no cover (not POSIX)
        return
    needed = (max_connections or 4096) + 256 + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            target = soft
        if target < needed:
            print(f"{PROG} proxy: warning: the descriptor limit ({target}) is below what "
                  f"--max-connections {max_connections} needs ({needed}); raise it (ulimit "
                  f"-n) or lower --max-connections", file=sys.stderr, flush=True)
