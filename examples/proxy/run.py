"""The rewriting proxy in front of a static site: the files of site/ served on loopback, and
`htmlstream proxy` in front with the flags of htmlstream-proxy.service (HTTPS upgrade, CSP nonce,
a banner, lazy images). Ctrl-C stops both.

    python examples/proxy/run.py [--listen 127.0.0.1:8080]   # then open http://127.0.0.1:8080/
"""

from __future__ import annotations

import argparse
import functools
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from htmlstream.cli import main as htmlstream

HERE = Path(__file__).resolve().parent
#: The rewrite flags (the systemd unit's ExecStart has the same after --upstream and --listen).
FLAGS = ["--https-hosts", "*.example.com", "--https-links", "--no-hsts-preload", "--csp-nonce",
         "--inject-body-end", str(HERE / "banner.html"), "--on", "img", "--set-attr",
         "loading=lazy", "--grace", "10"]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:   # (the proxy logs requests)
        pass


def serve_site(directory: Path) -> ThreadingHTTPServer:
    """The static site on 127.0.0.1, a free port, in a daemon thread."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:8080", help="HOST:PORT (port 0: any)")
    parser.add_argument("--site", type=Path, default=HERE / "site", help="the files to serve")
    args = parser.parse_args(argv)
    site = serve_site(args.site)
    try:
        upstream = f"http://127.0.0.1:{site.server_address[1]}"
        # Runs until SIGINT or SIGTERM (in-flight requests get --grace seconds).
        return htmlstream(["proxy", "--upstream", upstream, "--listen", args.listen, *FLAGS])
    finally:
        site.shutdown()
        site.server_close()


if __name__ == "__main__":
    sys.exit(main())
