"""Every Python example in README.md and docs/**/*.md runs, and type-checks under mypy --strict.

The examples are the ```` ```python ```` fenced blocks (indented ones inside lists too).  Each
block is a program of its own: it runs in a fresh namespace, in a temporary directory that holds
a small sample page as ``page.html`` and ``in.html``, with no network.  Blocks state what they
show with ``assert`` where they can, so that a wrong example fails here.

A block that cannot run (a signature, a synopsis with placeholders, a fragment) is marked, on the
last non-blank line before its fence, with an HTML comment that Markdown does not show:

    <!-- example: skip (why it cannot run) -->

The reason is required.  A skipped block is neither run nor type-checked; every other block is
both.  ```` ```pycon ```` and ```` ```sh ```` blocks are not examples and are left alone.

The type check is one mypy run (``--strict``) over all blocks, each written out as a module of its
own; errors are reported at their line in the Markdown file.  The library itself is read from
``src/`` (its own errors are not reported here).

Also here: the documentation site builds with ``mkdocs build --strict`` (what ``make docs`` does:
broken links and anchors fail it), and the relative links of the pages read outside the site
(README.md, benchmarks/README.md, CHANGELOG.md) point to files that exist.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*$")
_MARKER = re.compile(r"^\s*<!--\s*example:\s*(?P<directive>[\w-]+)\s*(?P<rest>.*?)\s*-->\s*$")

#: The sample page the examples read (as page.html and in.html).
SAMPLE_PAGE = """\
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>A sample page</title>
  <link rel="stylesheet" href="http://example.com/style.css">
</head>
<body>
  <h1>Fish &amp; chips</h1>
  <p class="note">Read the <a href="http://example.com/menu">menu</a> or
     <a href="https://example.com/map" rel="noopener">find us</a>.</p>
  <img src="fish.png" alt="a fish">
  <!-- a comment -->
  <script src="http://tracker.example/t.js"></script>
</body>
</html>
"""


@dataclass(frozen=True)
class Example:
    """One ```python block: where it is, its code, and why it is skipped (None: it is not)."""

    path: Path
    line: int  # 1-based line of the first line of code in the Markdown file
    code: str
    skip: str | None

    @property
    def name(self) -> str:
        """``docs/guide/rewriting.md:42``."""
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"

    @property
    def module(self) -> str:
        """A module name for the type check: ``docs_guide_rewriting_md_42``."""
        stem = re.sub(r"\W", "_", self.path.relative_to(ROOT).as_posix())
        return f"{stem}_{self.line}"


def extract(path: Path) -> list[Example]:
    """The ```python blocks of one Markdown file, with their markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    examples: list[Example] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, lang = opening.group("indent"), opening.group("lang")
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{path}:{i + 1}: unclosed code fence")
        if lang == "python":
            body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip()
                    for ln in lines[i + 1:end]]
            examples.append(Example(path, i + 2, "\n".join(body) + "\n", marker(path, lines, i)))
        i = end + 1
    return examples


def marker(path: Path, lines: list[str], fence: int) -> str | None:
    """The skip reason of the block whose fence is at ``lines[fence]`` (None: no marker)."""
    j = fence - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    found = _MARKER.match(lines[j]) if j >= 0 else None
    if found is None:
        return None
    where = f"{path.relative_to(ROOT)}:{j + 1}"
    if found.group("directive") != "skip":
        raise ValueError(f"{where}: unknown example directive {found.group('directive')!r}")
    reason = found.group("rest").strip()
    if not (reason.startswith("(") and reason.endswith(")") and reason[1:-1].strip()):
        raise ValueError(f"{where}: an example: skip marker needs a reason in parentheses")
    return reason[1:-1].strip()


EXAMPLES = [example for path in DOC_FILES for example in extract(path)]
RUNNABLE = [example for example in EXAMPLES if example.skip is None]


def test_the_examples_are_found() -> None:
    # The README's first rewrite and token loop at least, and every guide's examples.
    names = {e.path.relative_to(ROOT).as_posix() for e in RUNNABLE}
    assert "README.md" in names
    assert {"docs/guide/rewriting.md", "docs/guide/tokens.md", "docs/guide/encodings.md"} <= names
    assert len(RUNNABLE) >= 15


@pytest.mark.parametrize("example", RUNNABLE, ids=[e.name for e in RUNNABLE])
def test_example_runs(example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("page.html", "in.html"):
        (tmp_path / name).write_text(SAMPLE_PAGE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = compile(example.code, example.name, "exec")
    namespace = {"__name__": "__main__", "__file__": str(tmp_path / "example.py")}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, namespace)  # the documentation's own code


def test_examples_type_check_strict(tmp_path: Path) -> None:
    by_module = {}
    for example in RUNNABLE:
        (tmp_path / f"{example.module}.py").write_text(example.code, encoding="utf-8")
        by_module[example.module] = example
    cache = ROOT / "build" / "mypy-docs-examples"
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--no-error-summary", "--show-error-codes", "--cache-dir", str(cache),
         *sorted(str(p) for p in tmp_path.glob("*.py"))],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600,
    )
    errors = []
    for line in result.stdout.splitlines():
        found = re.match(r"^(?P<file>[^:]+)\.py:(?P<line>\d+): (?P<rest>.*)$", line)
        if found and Path(found.group("file")).name in by_module:
            example = by_module[Path(found.group("file")).name]
            md_line = example.line + int(found.group("line")) - 1
            errors.append(f"{example.path.relative_to(ROOT)}:{md_line}: {found.group('rest')}")
        elif line.strip():
            errors.append(line)
    assert result.returncode == 0 and not errors, (
        "the documentation's examples do not type-check under mypy --strict:\n"
        + "\n".join(errors or [result.stdout, result.stderr])
    )


@pytest.mark.parametrize("name", ["README.md", "benchmarks/README.md", "CHANGELOG.md"])
def test_relative_links_outside_the_site_resolve(name: str) -> None:
    # mkdocs --strict checks the links of docs/; these pages are read on the forge instead.
    page = ROOT / name
    targets = re.findall(r"\]\((?!https?:|#)([^)\s]+)\)", page.read_text(encoding="utf-8"))
    missing = [t for t in targets if not (page.parent / t.split("#")[0]).exists()]
    assert not missing, f"{name} links to missing files: {missing}"


def test_the_site_builds_strict(tmp_path: Path) -> None:
    # What `make docs` does: every link, anchor and API reference entry must resolve, and the
    # reference must be generated from the docstrings and the compiled engine's stubs.
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    reference = (tmp_path / "site" / "reference" / "htmlstream" / "index.html").read_text()
    # Classes of the compiled engine, documented from _engine/*.pyi, with their methods.
    for anchor in ("htmlstream.Element.set_attribute", "htmlstream.RewriterStream.feed",
                   "htmlstream.TextChunk.text", "htmlstream.Rewriter.on"):
        assert f'id="{anchor}"' in reference, anchor
