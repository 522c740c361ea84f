"""The addon script the tests give ``mitmdump -s``: htmlstream's addon with the tests' rewriter.
Runs inside mitmproxy's venv (.venv-mitmproxy), never in the test process."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rewriter import make_rewriter

from htmlstream.integrations.mitmproxy import HtmlRewriteAddon

addons = [HtmlRewriteAddon(make_rewriter())]
