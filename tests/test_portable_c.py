"""The engine's portable C layer (``_engine/hs_portable.h``) against byte-by-byte references.

``tests/c/test_portable.c`` is compiled with the C compiler Python was built with and run three
ways: with the fast paths this machine selects (builtins, SSE2, native word loads), with
``HTMLSTREAM_PORTABLE`` (the fallbacks MSVC-less and unknown machines get), and cross-compiled
for s390x, a big-endian machine, run under qemu when ``s390x-linux-gnu-gcc`` and
``qemu-s390x(-static)`` are installed (``apt-get install gcc-s390x-linux-gnu
libc6-dev-s390x-cross qemu-user-static``); that one case is skipped without them.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "c" / "test_portable.c"
INCLUDE = ROOT / "src" / "htmlstream" / "_engine"
FLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-std=c99", f"-I{INCLUDE}"]


def _run(compiler: list[str], extra: list[str], runner: list[str], tmp_path: Path) -> None:
    exe = tmp_path / "test_portable"
    subprocess.run([*compiler, *FLAGS, *extra, str(SOURCE), "-o", str(exe)], check=True)
    out = subprocess.run([*runner, str(exe)], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout) == (0, "ok\n"), out.stdout + out.stderr


def _cc() -> list[str]:
    return shlex.split(sysconfig.get_config_var("CC") or "cc")


def test_fast_paths(tmp_path: Path) -> None:
    _run(_cc(), [], [], tmp_path)


def test_portable_fallbacks(tmp_path: Path) -> None:
    _run(_cc(), ["-DHTMLSTREAM_PORTABLE"], [], tmp_path)


def test_big_endian_s390x(tmp_path: Path) -> None:
    cc = shutil.which("s390x-linux-gnu-gcc")
    qemu = shutil.which("qemu-s390x-static") or shutil.which("qemu-s390x")
    if cc is None or qemu is None:
        pytest.skip("no s390x cross compiler and qemu (see the module docstring)")
    _run([cc, "-static"], [], [qemu], tmp_path)
    _run([cc, "-static"], ["-DHTMLSTREAM_PORTABLE"], [qemu], tmp_path)
