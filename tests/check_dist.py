"""The packaging check of ``make check-dist`` (``make test`` runs it).

1. ``python -m build --no-isolation``: the sdist, then a wheel built *from that sdist* (what
   ``python -m build`` does without ``--sdist``/``--wheel``), with this Python's setuptools and
   Cython (no network).
2. The archives hold what they must: the sdist the engine's ``.pyx``/``.pxd``/``.h`` sources,
   LICENSE and no generated C; the wheel is a platform wheel with every compiled engine module,
   the stubs and LICENSE, and no ``.pyx`` or ``.c``.
3. A fresh venv, ``pip install --no-index --no-deps`` of the wheel, then ``tests/smoke_install.py``
   run by that venv from outside the source tree (import, rewrite, tokenize, ``--version``).

    python tests/check_dist.py [OUTDIR]        # default build/dist-check
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE_MODULES = ("collector", "lexer", "matcher", "rewriter", "treebuilder", "units")


def run(*args: str | Path, cwd: Path = ROOT) -> None:
    """Run a command, failing loudly."""
    subprocess.run([str(a) for a in args], cwd=cwd, check=True)


def check_sdist(path: Path) -> None:
    """The sdist has the engine's sources and no generated C."""
    with tarfile.open(path) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    engine = "src/htmlstream/_engine/"
    for module in ENGINE_MODULES:
        assert f"{engine}{module}.pyx" in names, f"sdist lacks {module}.pyx"
    for required in ("LICENSE", "pyproject.toml", "setup.py", "README.md", f"{engine}lexer.pxd",
                     f"{engine}portable.pxd", f"{engine}hs_portable.h", "src/htmlstream/py.typed"):
        assert required in names, f"sdist lacks {required}"
    unwanted = [n for n in names if n.endswith((".c", ".so", ".pyd"))]
    assert not unwanted, f"sdist has generated or compiled files: {unwanted}"


def check_wheel(path: Path) -> None:
    """A platform wheel with every engine module compiled in."""
    assert not path.name.endswith("-none-any.whl"), f"not a platform wheel: {path.name}"
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
    for module in ENGINE_MODULES:
        assert any(n.startswith(f"htmlstream/_engine/{module}.") and n.endswith((".so", ".pyd"))
                   for n in names), f"wheel lacks the compiled {module}"
        assert f"htmlstream/_engine/{module}.pyi" in names, f"wheel lacks {module}.pyi"
    assert "htmlstream/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "wheel lacks LICENSE"
    unwanted = [n for n in names if n.endswith((".pyx", ".c"))]
    assert not unwanted, f"wheel has sources it should not: {unwanted}"


def main(argv: list[str]) -> int:
    """Build, inspect, install, smoke-test; print the time each step took."""
    out = (ROOT / (argv[0] if argv else "build/dist-check")).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.perf_counter()

    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out / "dist", ".")
    sdists = list((out / "dist").glob("htmlstream-*.tar.gz"))
    wheels = list((out / "dist").glob("htmlstream-*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, (sdists, wheels)
    check_sdist(sdists[0])
    check_wheel(wheels[0])
    built = time.perf_counter()
    print(f"check-dist: {sdists[0].name} and {wheels[0].name} built "
          f"({built - started:.0f} s)")

    run(sys.executable, "-m", "venv", out / "venv")
    python = out / "venv" / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    run(python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", wheels[0])
    # (from outside the tree, so that nothing can be imported from src/)
    run(python, ROOT / "tests" / "smoke_install.py", cwd=out)
    print(f"check-dist: installed and smoke-tested ({time.perf_counter() - built:.0f} s; "
          f"{time.perf_counter() - started:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
