"""Build script for the compiled engine (``htmlstream._engine``).

Everything else is declared in ``pyproject.toml``; this file only lists the Cython
extensions so that ``pip install .`` compiles them with the local C compiler.
Set ``HTMLSTREAM_DEBUG=1`` for a debug build (bounds checks on, no optimisation).
"""

import os
from glob import glob

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("HTMLSTREAM_DEBUG") == "1"

compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]
extra_link_args: list[str] = []
if os.environ.get("HTMLSTREAM_SANITIZE") == "1":
    compile_args += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    extra_link_args += ["-fsanitize=address,undefined"]

extensions = [
    Extension(
        "htmlstream._engine." + os.path.splitext(os.path.basename(path))[0],
        [path],
        extra_compile_args=compile_args,
        extra_link_args=extra_link_args,
    )
    for path in sorted(glob("src/htmlstream/_engine/*.pyx"))
]

directives = {
    "language_level": "3",
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        include_path=["src"],
        annotate=os.environ.get("HTMLSTREAM_ANNOTATE") == "1",
    ),
)
