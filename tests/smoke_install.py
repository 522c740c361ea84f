"""Smoke test of an installed htmlstream (a wheel in a fresh venv, cibuildwheel's test-command).

Run by that venv's Python from outside the source tree: imports the package and its compiled
engine, rewrites and tokenizes a small document, and runs the ``htmlstream --version`` script.
Prints one line per check; exits non-zero at the first failure.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path


def main() -> int:
    """Run the checks."""
    import htmlstream
    from htmlstream import Rewriter, tokenize
    from htmlstream._engine import lexer, rewriter

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    platsite = Path(sysconfig.get_paths()["platlib"]).resolve()
    for module in (htmlstream, lexer, rewriter):
        where = Path(module.__file__ or "").resolve()
        assert site in where.parents or platsite in where.parents, f"{module.__name__}: {where}"
    print(f"import: htmlstream {htmlstream.__version__} from {Path(htmlstream.__file__).parent}")

    doc = b'<!doctype html><p class=x>caf\xc3\xa9 <a href="/a">link</a></p><!-- c -->'
    # Cut in many places: the output must not depend on where the chunks end.
    for cut in (1, 7, len(doc)):
        stream = Rewriter().on("a[href]",
                               element=lambda el: el.set_attribute("href", "/b")).stream()
        out = b"".join(stream.feed(doc[i:i + cut]) for i in range(0, len(doc), cut))
        out += stream.close()
        assert out == doc.replace(b'href="/a"', b'href="/b"'), (cut, out)
    print("rewrite: ok")

    tokens = list(tokenize(doc))   # doctype, p, text, a, text, /a, /p, comment
    assert len(tokens) == 8, tokens
    print(f"tokenize: {len(tokens)} tokens")

    script = shutil.which("htmlstream", path=str(Path(sys.executable).parent))
    assert script is not None, "the htmlstream script is not installed next to python"
    version = subprocess.run([script, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"htmlstream {htmlstream.__version__}", version.stdout
    print(f"cli: {version.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
