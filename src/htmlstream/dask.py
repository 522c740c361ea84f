"""Many WARC files on a Dask cluster: extraction or rewriting, one task per file
(``pip install 'htmlstream[dask]'``: dask and distributed)::

    from dask.distributed import Client
    from htmlstream.dask import extract_warcs

    client = Client()                                   # or a cluster's scheduler address
    job = extract_warcs(paths, {"title": "title", "links": "a::attr(href)*"})
    rows, reports = job.compute()                       # or job.dataframe() for a Dask frame
    job.to_parquet("out/")                              # or one Parquet file per WARC file

As in cc-pyspark, a failure is counted, never raised: each file's report says how many records
were read, extracted or rewritten, how many failed, how many were unreadable (skipped), and
the error that stopped the file, if any (a missing file, not a WARC).  Rows carry the file
they come from (``warc_file``).  Rewriting writes one output WARC per input file (written by
the task that reads it: nothing goes through the scheduler but the reports).

The rewriter is made on the worker by a function you give (``make_rewriter``), because a
:class:`~htmlstream.Rewriter` holds a lock and cannot be pickled; the function is shipped by
cloudpickle, so a lambda or a closure works.

This layer uses only htmlstream's public API (and :mod:`htmlstream.warc`); the core never
imports it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htmlstream import Rewriter

if TYPE_CHECKING:
    from htmlstream.extraction import Field

__all__ = ["REPORT_COLUMNS", "WarcJob", "extract_warcs", "rewrite_warcs"]

#: The columns of a per-file report.
REPORT_COLUMNS: tuple[str, ...] = (
    "warc_file", "output", "records", "html", "rewritten", "copied", "extracted", "failed",
    "bad_records", "error")


def _imports() -> tuple[Any, Any]:
    try:
        import dask
        import dask.bag
    except ImportError as exc:
        raise ImportError("htmlstream.dask needs dask and distributed: "
                          "pip install 'htmlstream[dask]'") from exc
    return dask, dask.bag


def _report(path: str, output: str | None, counts: Mapping[str, Any] | None,
            error: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"warc_file": path, "output": output}
    for name in REPORT_COLUMNS[2:-1]:
        row[name] = 0 if counts is None else int(counts[name])
    row["error"] = error
    return row


def _extract_file(path: str, fields: Mapping[str, Field], encoding: str | None,
                  chunk_size: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One file's report and rows (a task)."""
    from htmlstream.warc import WarcReport, extract_warc

    report = WarcReport()
    rows: list[dict[str, Any]] = []
    try:
        for row in extract_warc(path, fields, encoding=encoding, chunk_size=chunk_size,
                                report=report):
            rows.append({"warc_file": path, **row})
    except Exception as exc:  # counted, not raised (a missing file, not a WARC...)
        return _report(path, None, report.as_dict(), f"{type(exc).__name__}: {exc}"), rows
    return _report(path, None, report.as_dict(), None), rows


def _rewrite_file(path: str, output: str, make_rewriter: Callable[[], Rewriter],
                  chunk_size: int) -> dict[str, Any]:
    """One file rewritten to ``output``; its report (a task)."""
    from htmlstream.warc import rewrite_warc

    try:
        report = rewrite_warc(path, output, make_rewriter(), chunk_size=chunk_size)
    except Exception as exc:  # counted, not raised
        with contextlib.suppress(OSError):
            os.unlink(output)
        return _report(path, None, None, f"{type(exc).__name__}: {exc}")
    return _report(path, output, report.as_dict(), None)


@dataclasses.dataclass(frozen=True)
class WarcJob:
    """An extraction over many files, not computed yet.

    Attributes:
        results: a Dask bag with one ``(report, rows)`` item per file (one partition each).
        fields: the fields' names (the columns after ``warc_file``, ``url`` and ``date``).
        lists: the names of the fields that hold lists (``*`` specs, ``many=True``).
    """

    results: Any
    fields: tuple[str, ...]
    lists: frozenset[str] = frozenset()

    @property
    def rows(self) -> Any:
        """A Dask bag of the rows (dicts: ``warc_file``, ``url``, ``date``, the fields)."""
        return self.results.map(lambda item: item[1]).flatten()

    @property
    def reports(self) -> Any:
        """A Dask bag of the per-file reports (dicts with :data:`REPORT_COLUMNS`)."""
        return self.results.map(lambda item: item[0])

    def dataframe(self) -> Any:
        """The rows as a Dask dataframe (object columns; ``*`` fields hold lists)."""
        import pandas as pd

        columns = ["warc_file", "url", "date", *self.fields]
        meta = pd.DataFrame({name: pd.Series(dtype=object) for name in columns})
        return self.rows.to_dataframe(meta=meta)

    def to_parquet(self, path: str | os.PathLike[str], **kwargs: Any) -> Any:
        """Write the rows as Parquet files into the folder ``path``, one per partition (that is,
        per WARC file), from the workers; strings, and lists of strings for the ``*`` fields.
        ``kwargs`` go to ``dask.dataframe.DataFrame.to_parquet`` (``compute=False`` for a
        delayed write)."""
        import pyarrow as pa

        schema = pa.schema(
            [(name, pa.string()) for name in ("warc_file", "url", "date")]
            + [(name, pa.list_(pa.string()) if name in self.lists else pa.string())
               for name in self.fields])
        return self.dataframe().to_parquet(os.fspath(path), schema=schema, write_index=False,
                                           **kwargs)

    def compute(self, **kwargs: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``(rows, reports)``, each file read once (on the current Dask scheduler, e.g. a
        ``distributed.Client``; ``kwargs`` go to ``dask.compute``)."""
        dask, _ = _imports()
        results = dask.compute(self.results, **kwargs)[0]
        rows = [row for _, file_rows in results for row in file_rows]
        return rows, [report for report, _ in results]


def extract_warcs(paths: Iterable[str | os.PathLike[str]], fields: Mapping[str, str | Field],
                  *, encoding: str | None = None, chunk_size: int = 64 * 1024) -> WarcJob:
    """Extract ``fields`` from every HTML response of every file, one task per file.

    Args:
        paths: the WARC files (paths every worker can read).
        fields: name to :class:`htmlstream.extraction.Field` or its spec string.
        encoding: the documents' encoding, overriding what each declares.
        chunk_size: payload bytes fed at a time.
    """
    from htmlstream.extraction import Field

    _, bag = _imports()
    names = [os.fspath(p) for p in paths]
    field_map = {name: spec if isinstance(spec, Field) else Field.parse(spec)
                 for name, spec in fields.items()}
    files = bag.from_sequence(names, npartitions=max(1, len(names)))
    results = files.map(_extract_file, field_map, encoding, chunk_size)
    return WarcJob(results, tuple(field_map),
                   frozenset(name for name, field in field_map.items() if field.many))


def rewrite_warcs(paths: Sequence[str | os.PathLike[str]], output_dir: str | os.PathLike[str],
                  make_rewriter: Callable[[], Rewriter], *, chunk_size: int = 64 * 1024
                  ) -> Any:
    """Rewrite every file into ``output_dir`` (same file name), one task per file.

    Returns:
        a Dask bag of the per-file reports (:data:`REPORT_COLUMNS`); ``.compute()`` runs it.
    """
    _, bag = _imports()
    out = Path(output_dir)
    pairs = [(os.fspath(p), os.fspath(out / Path(p).name)) for p in paths]
    if len({o for _, o in pairs}) != len(pairs):
        raise ValueError("two input files have the same name: their outputs would collide")
    files = bag.from_sequence(pairs, npartitions=max(1, len(pairs)))
    return files.map(lambda pair: _rewrite_file(pair[0], pair[1], make_rewriter, chunk_size))
