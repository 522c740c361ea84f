#!/usr/bin/env python3
"""Instructions per document, by case and engine, counted with valgrind (callgrind).

Wall-clock figures on a shared machine move by tens of percent with the load; instruction counts
do not.  For every (case, engine, file, chunk size) this runs ``bench.py``'s runner for the case
under ``valgrind --tool=callgrind`` twice, with 0 and with ``--runs`` documents after one warm-up
document, and reports the difference divided by ``--runs``: the instructions one document costs,
without the interpreter start-up, imports and set-up.  (Instructions are not time: native code
with fewer branch mispredictions and cache misses does more per cycle; use ``bench.py`` for
throughput, this for changes too small for the noise.)  With ``--exact`` callgrind counts only
inside the documents' runs (see EXACT_RUNS): one count per figure, the same in every run.

    python benchmarks/bench_instructions.py --case passthrough --case rewrite-href \\
        --files 'ecma*' --chunk-size 65536

Needs ``valgrind`` on the PATH.  The cases and engines are those of ``bench.py --list``.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Run by the child process: load bench.py, build the runner, warm up, run ``runs`` documents.
CHILD = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("bench", {bench!r})
bench = importlib.util.module_from_spec(spec)
sys.modules["bench"] = bench
spec.loader.exec_module(bench)
data = open({path!r}, "rb").read()
size = {chunk}
chunks = [data[i:i + size] for i in range(0, len(data), size)]
if {case!r} in ("passthrough",) and {engine!r} == "selectolax":
    chunks = [data]
run = bench.CASES[{case!r}].factories[{engine!r}]()
run(chunks)
for _ in range({runs}):
    run(chunks)
"""


#: ``--exact``: the documents are run by ``itertools.starmap`` (consumed by a ``deque``), and
#: callgrind counts only inside ``starmap_next`` (``--toggle-collect``): the instructions of the
#: documents alone, the same in every run (the start-up of the interpreter, which the default's
#: difference of two counts cancels, varies by ~1M instructions between identical runs when the
#: modules are compiled at every start, PYTHONDONTWRITEBYTECODE).
EXACT_RUNS = """
import collections, itertools
collections.deque(itertools.starmap(run, [(chunks,)] * {runs}), maxlen=0)
"""


def count(case: str, engine: str, path: Path, chunk: int, runs: int,
          exact: bool = False) -> int:
    """Instructions the whole child process executed with ``runs`` documents (``exact``: the
    instructions of those documents only)."""
    code = CHILD.format(bench=str(HERE / "bench.py"), path=str(path), chunk=chunk, case=case,
                        engine=engine, runs=0 if exact else runs)
    options = []
    if exact:
        code += EXACT_RUNS.format(runs=runs)
        options = ["--collect-atstart=no", "--toggle-collect=starmap_next"]
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *options,
         sys.executable, "-c", code],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"})   # (the same dict layouts in both counts)
    match = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or match is None:
        raise RuntimeError(f"{case}/{engine}/{path.name}: valgrind failed:\n{proc.stderr[-2000:]}")
    return int(match.group(1))


def per_document(case: str, engine: str, path: Path, chunk: int, runs: int,
                 exact: bool = False) -> int:
    """Instructions per document (the difference of two counts, divided; ``exact``: the count
    inside the documents, divided)."""
    if exact:
        return count(case, engine, path, chunk, runs, exact=True) // runs
    return (count(case, engine, path, chunk, runs) - count(case, engine, path, chunk, 0)) // runs


def main(argv: list[str] | None = None) -> int:
    """Parse the options, count, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", help="case name (repeatable; default: all)")
    parser.add_argument("--only", action="append", default=None,
                        help="engine (repeatable; default: htmlstream and lol-html)")
    parser.add_argument("--chunk-size", type=int, action="append", help="default: 65536, 1024")
    parser.add_argument("--corpus", type=Path,
                        default=Path(os.environ.get("HTMLSTREAM_CORPUS",
                                                    HERE.parent / "tests/data/corpus")))
    parser.add_argument("--files", default="*.html", help="glob of corpus files")
    parser.add_argument("--runs", type=int, default=2, help="documents counted (default 2)")
    parser.add_argument("--jobs", type=int, default=2, help="valgrind processes at once")
    parser.add_argument("--exact", action="store_true",
                        help="count only inside the documents (no start-up noise; one run)")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(HERE))
    import bench

    cases = args.case or list(bench.CASES)
    engines = args.only or ["htmlstream", "lol-html"]
    chunks = args.chunk_size or [65536, 1024]
    files = sorted(p for p in args.corpus.glob("*.html") if fnmatch.fnmatch(p.name, args.files))
    if not files:
        parser.error(f"no file matches {args.files!r} in {args.corpus}")
    jobs = [(c, e, f, k) for c in cases for f in files for k in chunks for e in engines
            if e in bench.CASES[c].factories]
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda j: per_document(*j, args.runs, args.exact), jobs))
    counts = dict(zip(jobs, results, strict=True))
    print(f"{'case':<14} {'file':<24} {'chunk':>6} "
          + " ".join(f"{e:>12}" for e in engines) + "   hs/lol")
    for c in cases:
        for f in files:
            for k in chunks:
                row = [counts.get((c, e, f, k)) for e in engines]
                if all(v is None for v in row):
                    continue
                ratio = ""
                hs, lol = counts.get((c, "htmlstream", f, k)), counts.get((c, "lol-html", f, k))
                if hs and lol:
                    ratio = f"{lol / hs:7.2f}x"     # > 1: htmlstream executes fewer
                print(f"{c:<14} {f.name:<24} {k:>6} "
                      + " ".join(f"{(v or 0) / 1e6:>11.2f}M" for v in row) + f"  {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
