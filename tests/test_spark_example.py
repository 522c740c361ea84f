"""examples/spark_extract.py (the cc-pyspark shape) run on local Spark, when pyspark and Java
are installed (both are on the CI machine: pyspark is a development requirement; about a minute,
mostly the JVM starting; marked slow)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastwarc")
pytest.importorskip("warcio")

from htmlstream.warc import extract_warc
from warc_files import make_warc

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "spark_extract.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("pyspark") is None,
                       reason="pyspark is not installed (pip install pyspark)"),
    pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                       reason="Spark needs Java, which is not installed"),
]


def test_spark_example(tmp_path: Path) -> None:
    warcs = [make_warc(tmp_path / "a.warc.gz", pages=2), make_warc(tmp_path / "b.warc",
                                                                   gzip=False, pages=1)]
    listing = tmp_path / "listing.txt"
    listing.write_text("\n".join([*map(str, warcs), str(tmp_path / "missing.warc.gz")]) + "\n")
    out = tmp_path / "out"
    # (the driver and its block manager listen on loopback only; no web UI)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_SUBMIT_ARGS": "--conf spark.ui.enabled=false pyspark-shell",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(listing), str(out), "-f", "title=title",
         "-f", "links=a::attr(href)*", "--output-format", "json", "--master", "local[1]",
         "--num-input-partitions", "2"],
        capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "warc_input_processed: 2" in done.stdout
    assert "warc_input_failed: 1" in done.stdout
    rows = [json.loads(line) for part in sorted(out.glob("part-*.json"))
            for line in part.read_text().splitlines()]
    fields = {"title": "title", "links": "a::attr(href)*"}
    expected = [{"warc_file": str(p), **row} for p in warcs for row in extract_warc(p, fields)]
    assert sorted(rows, key=repr) == sorted(expected, key=repr)
