"""Repository hygiene the packaging relies on (docs/guide/packaging.md).

* The tests, benchmarks and fuzz scripts read their data from ``tests/data`` (a clone alone must
  pass ``make test``): none of them names the ``shared`` folder next to the repository.
* Generated C is never tracked: the sdist and the wheels are built from the ``.pyx`` sources.
* No two modules of the package import each other (DESIGN.md), at any level: module top,
  ``TYPE_CHECKING`` blocks and imports inside functions alike.
"""

from __future__ import annotations

import ast
import itertools
import shutil
import subprocess
from pathlib import Path

import pytest

from datapaths import conformance_data_dir, corpus_dir

ROOT = Path(__file__).resolve().parents[1]
SHARED = ".." + "/shared"           # (spelt in two parts so that this file passes its own test)
QUOTED = '"sha' + 'red"'


def test_nothing_reads_the_shared_folder() -> None:
    offenders = []
    for folder in ("tests", "benchmarks", "fuzz"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if SHARED in text or QUOTED in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


@pytest.mark.parametrize(
    ("folder", "pattern", "at_least"),
    [
        ("html5lib-tests/tokenizer", "*.test", 14),
        ("html5lib-tests/tree-construction", "*.dat", 50),
        ("html5lib-tests/encoding", "**/*.dat", 4),
        ("lol-html/regression", "*.dat", 3),
        ("lol-html/element_content_replacement", "*-info.json", 100),
    ],
)
def test_conformance_data_is_there(folder: str, pattern: str, at_least: int) -> None:
    # (The data-driven suites would otherwise collect nothing and pass.)
    root = conformance_data_dir() / folder
    assert len(list(root.glob(pattern))) >= at_least, root
    for licence in ("html5lib-tests/LICENSE", "lol-html/LICENSE"):
        assert (conformance_data_dir() / licence).is_file()


def test_corpus_is_there() -> None:
    names = {p.name for p in corpus_dir().glob("*.html")}
    assert {"cloudflare.com.html", "ecma402-spec.html", "html-parsing-spec.html"} <= names


def test_no_generated_c_is_tracked() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "*.c", "*.so", "*.pyd"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    assert tracked == ["tests/c/test_portable.c"]


def _imports_of_package() -> dict[str, set[str]]:
    """Every module of src/htmlstream and the modules of the package it imports, wherever the
    import statement is."""
    src = ROOT / "src"
    paths = {}
    for path in (src / "htmlstream").rglob("*.py"):
        name = ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
        paths[name] = path
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    deps.add(full if full in paths else base)
        graph[name] = {d for d in deps if d in paths and d != name}
    return graph


def test_no_two_modules_import_each_other() -> None:
    graph = _imports_of_package()
    assert "htmlstream.scrape.transport" in graph["htmlstream.scrape.robots"]
    # The package itself is the facade of the public names: layers import those names from it,
    # and its one-call functions (sanitize, minify) import their layer when called.
    pairs = [
        (a, b) for a, b in itertools.combinations(sorted(graph), 2)
        if b in graph[a] and a in graph[b] and "htmlstream" not in (a, b)
    ]
    assert pairs == []
