"""Build script for the compiled engine (``htmlstream._engine``).

Everything else is declared in ``pyproject.toml``; this file only lists the Cython
extensions so that ``pip install .`` compiles them with the local C compiler.  The ``.pyx``
sources are turned into C when the extensions are built (never at ``sdist`` time: the sdist
ships the ``.pyx``/``.pxd``/``.h`` sources, no generated C).

Environment switches:

- ``HTMLSTREAM_DEBUG=1``: a debug build (bounds checks on, no optimisation);
- ``HTMLSTREAM_SANITIZE=1``: AddressSanitizer and UBSan (GCC/Clang);
- ``HTMLSTREAM_PORTABLE=1``: the portable C fallbacks of ``_engine/hs_portable.h`` instead of
  compiler builtins, SSE2 and native word loads (``make check-portable`` tests them);
- ``HTMLSTREAM_ANNOTATE=1``: Cython's HTML annotation next to each ``.pyx``.
"""

import os
from glob import glob

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("HTMLSTREAM_DEBUG") == "1"
SANITIZE = os.environ.get("HTMLSTREAM_SANITIZE") == "1"
PORTABLE = os.environ.get("HTMLSTREAM_PORTABLE") == "1"
ENGINE = "src/htmlstream/_engine"

DIRECTIVES = {
    "language_level": "3",
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}


def _flags(compiler_type: str) -> tuple[list[str], list[str]]:
    """Compile and link flags for the compiler setuptools picked (MSVC spells them its way)."""
    if compiler_type == "msvc":
        return (["/Od", "/Zi"] if DEBUG else ["/O2"]), []
    compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]
    link_args: list[str] = []
    if SANITIZE:
        compile_args += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
        link_args += ["-fsanitize=address,undefined"]
    return compile_args, link_args


class BuildExt(build_ext):
    """Cythonizes the extensions when they are built, with flags for the compiler in use."""

    def build_extensions(self) -> None:
        from Cython.Build import cythonize

        compiled = cythonize(
            self.extensions,
            compiler_directives=DIRECTIVES,
            include_path=["src"],
            annotate=os.environ.get("HTMLSTREAM_ANNOTATE") == "1",
            quiet=True,
        )
        # (the C sources go into the Extension objects setuptools finalized, not new ones)
        sources = {ext.name: ext.sources for ext in compiled}
        compile_args, link_args = _flags(self.compiler.compiler_type)
        for ext in self.extensions:
            ext.sources = sources[ext.name]
            ext.extra_compile_args = compile_args
            ext.extra_link_args = link_args
        super().build_extensions()


extensions = [
    Extension(
        "htmlstream._engine." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[ENGINE],
        depends=[f"{ENGINE}/hs_portable.h"],
        define_macros=[("HTMLSTREAM_PORTABLE", "1")] if PORTABLE else [],
    )
    for path in sorted(glob(f"{ENGINE}/*.pyx"))
]

setup(ext_modules=extensions, cmdclass={"build_ext": BuildExt})
