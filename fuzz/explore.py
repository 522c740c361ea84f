"""``make fuzz``: explore for new bugs, outside the landing path, for a time budget.

Two phases share the budget (``--seconds``):

1. The hypothesis properties of ``tests/`` under the ``fuzz`` profile (``tests/conftest.py``):
   random seeds, each property's ``max_examples`` times ``--factor`` (20), only the hypothesis
   tests collected, on ``--jobs`` processes.  When its share of the time runs out the run is
   interrupted (SIGINT: pytest reports what failed so far).  A failure prints its falsifying
   example and a ``@reproduce_failure`` blob; the example is also kept in the database under
   ``build/fuzz/hypothesis-db``, so the next ``make fuzz`` tries it first.  A bug found here
   gets fixed with an ``@example(...)`` of it next to its property, so that ``make test``, which
   never explores, keeps checking it.
2. The atheris target ``fuzz/fuzz_rewriter.py`` (libFuzzer) for the rest of the budget, when
   atheris is installed; new inputs go to ``build/fuzz/corpus``, failures to
   ``build/fuzz/crash-*``.

Exit status: 0 when neither phase found anything, 1 otherwise (a one-line summary says which).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parent.parent


def run_for(cmd: list[str], seconds: float, env: dict[str, str]) -> tuple[int, bool]:
    """Run ``cmd`` (its output to ours) for at most ``seconds``, then interrupt it as Ctrl-C
    would, and give it 60 s more to report; its exit status, and whether it was interrupted."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)
    try:
        return proc.wait(timeout=max(1.0, seconds)), False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            return proc.wait(timeout=60), True
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            return proc.wait(), True


def failures(report: Path) -> int:
    """The failed and erred tests of a pytest JUnit report (written also when interrupted)."""
    if not report.exists():
        return 0
    root = ElementTree.parse(report).getroot()
    return sum(int(suite.get("failures", 0)) + int(suite.get("errors", 0))
               for suite in root.iter("testsuite"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600,
                        help="the whole budget, both phases (default 600)")
    parser.add_argument("--factor", type=int, default=20,
                        help="each property's max_examples times this (default 20)")
    parser.add_argument("--jobs", default="2", help="pytest-xdist processes (default 2)")
    parser.add_argument("--share", type=float, default=0.5,
                        help="the hypothesis phase's share of the budget (default 0.5)")
    parser.add_argument("pytest_args", nargs="*", default=["tests"],
                        help="what pytest collects (default: tests)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    env = dict(os.environ, HYPOTHESIS_PROFILE="fuzz", HTMLSTREAM_FUZZ_FACTOR=str(args.factor))
    (ROOT / "build" / "fuzz").mkdir(parents=True, exist_ok=True)
    report = ROOT / "build" / "fuzz" / "hypothesis-junit.xml"
    found: list[str] = []
    print(f"fuzz: hypothesis properties, {args.factor}x examples, random seeds, "
          f"{args.seconds * args.share:.0f} s", flush=True)
    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", args.jobs,
              "-rf", f"--junit-xml={report}", *args.pytest_args]
    report.unlink(missing_ok=True)
    status, interrupted = run_for(pytest, args.seconds * args.share, env)
    # pytest: 0 all passed, 1 failures, 2 interrupted (the report says whether anything failed
    # before), 5 nothing collected.
    failed = failures(report)
    if failed:
        found.append(f"hypothesis ({failed} failed: see the summary above)")
    elif status not in (0, 5) and not (interrupted and status == 2):
        found.append(f"hypothesis (pytest exit status {status})")
    rest = args.seconds - (time.monotonic() - start)
    if importlib.util.find_spec("atheris") is None:
        print("fuzz: atheris is not installed: the libFuzzer phase is skipped", flush=True)
    elif rest > 5:
        print(f"fuzz: atheris, fuzz/fuzz_rewriter.py, {rest:.0f} s", flush=True)
        corpus = ROOT / "build" / "fuzz" / "corpus"
        corpus.mkdir(parents=True, exist_ok=True)
        atheris = [sys.executable, "fuzz/fuzz_rewriter.py", str(corpus), "fuzz/corpus",
                   f"-max_total_time={int(rest)}", "-artifact_prefix=build/fuzz/",
                   "-print_final_stats=1", *os.environ.get("FUZZ_ARGS", "").split()]
        status, interrupted = run_for(atheris, rest + 30, dict(os.environ))
        # (interrupted by us past its time, libFuzzer exits 130 or 72 having found nothing)
        if status != 0 and not (interrupted and status in (130, 72, -signal.SIGINT)):
            found.append(f"atheris (exit status {status}; the input is in build/fuzz/crash-*)")
    print("fuzz: " + ("found: " + ", ".join(found) if found else "nothing found"), flush=True)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
