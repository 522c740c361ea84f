"""A PySpark job in the cc-pyspark shape: fields of the HTML responses of the WARC files named in
a listing, one Spark task per partition of it; counters of files, records and failures.

    spark-submit examples/spark_extract.py warc.paths out/ -f title=title -f 'links=a::attr(href)*'
"""

# (or ``python examples/spark_extract.py ... --master 'local[2]'``; ``--output-format parquet``
# or ``json``.)  Each worker needs htmlstream with its ``warc`` extra.  A file that cannot be
# read, or a record that cannot, is counted (``warc_input_failed``, ``records_failed``,
# ``records_bad``), never raised: a crawl-sized job does not stop for one broken file; when
# every file failed, the job exits with status 1.

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", help="listing of WARC files (local paths or URLs Spark reads "
                        "as text; one WARC path per line)")
    parser.add_argument("output", help="output directory")
    parser.add_argument("-f", "--field", action="append", required=True, metavar="NAME=SPEC",
                        help="a field, as in htmlstream warc extract; repeatable")
    parser.add_argument("--output-format", default="parquet", choices=["parquet", "json"])
    parser.add_argument("--num-input-partitions", type=int, default=4,
                        help="partitions of the listing (tasks)")
    parser.add_argument("--master", default=None,
                        help="Spark master (default: spark-submit's, else local[*])")
    return parser.parse_args(argv)


def fields_of(specs: Iterable[str]) -> dict[str, Any]:
    from htmlstream.extraction import Field

    fields = {}
    for spec in specs:
        name, _, value = spec.partition("=")
        fields[name.strip()] = Field.parse(value)
    return fields


def process_warcs(paths: Iterator[str], fields: dict[str, Any], counters: dict[str, Any]
                  ) -> Iterator[tuple[Any, ...]]:
    """The rows of the WARC files of one partition (runs on an executor)."""
    from htmlstream.warc import WarcReport, extract_warc

    for line in paths:
        path = line.strip()
        if not path:
            continue
        report = WarcReport()
        try:
            for row in extract_warc(path, fields, report=report):
                yield (path, row["url"], row["date"], *(row[name] for name in fields))
        except Exception as exc:  # counted, not raised (cc-pyspark's warc_input_failed)
            counters["warc_input_failed"].add(1)
            print(f"failed to read {path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        else:
            counters["warc_input_processed"].add(1)
        counters["records_processed"].add(report.records)
        counters["records_extracted"].add(report.extracted)
        counters["records_failed"].add(report.failed)
        counters["records_bad"].add(len(report.bad_records))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql.types import ArrayType, StringType, StructField, StructType

    fields = fields_of(args.field)
    builder = SparkSession.builder.appName("htmlstream-warc-extract")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    try:
        sc = spark.sparkContext
        counters = {name: sc.accumulator(0) for name in (
            "warc_input_processed", "warc_input_failed", "records_processed",
            "records_extracted", "records_failed", "records_bad")}
        schema = StructType([
            StructField("warc_file", StringType()), StructField("url", StringType()),
            StructField("date", StringType()),
            *(StructField(name, ArrayType(StringType()) if field.many else StringType())
              for name, field in fields.items())])
        listing = sc.textFile(args.input, minPartitions=args.num_input_partitions)
        rows = listing.mapPartitions(lambda paths: process_warcs(paths, fields, counters))
        frame = spark.createDataFrame(rows, schema)
        frame.write.mode("overwrite").format(args.output_format).save(args.output)
        for name, counter in counters.items():
            print(f"{name}: {counter.value}")
        # The failure rule (docs/guide/warc.md): one summary line; every file failed: status 1.
        failed = counters["warc_input_failed"].value
        total = failed + counters["warc_input_processed"].value
        if failed:
            print(f"{failed} of {total} WARC files failed (the lines above say why)",
                  file=sys.stderr)
    finally:
        spark.stop()
    return 1 if failed and failed == total else 0


if __name__ == "__main__":
    sys.exit(main())
