"""Many WARC files on a Dask cluster: extraction or rewriting, one task per file
(``pip install 'htmlstream[dask]'``: dask and distributed)::

    from dask.distributed import Client
    from htmlstream.dask import extract_warcs

    client = Client()                                   # or a cluster's scheduler address
    job = extract_warcs(paths, {"title": "title", "links": "a::attr(href)*"})
    rows, reports = job.compute()                       # or job.dataframe() for a Dask frame
    job.to_parquet("out/")                              # or one Parquet file per WARC file

As in cc-pyspark, a file's failure is counted, not raised: each file's report says how many
records were read, extracted or rewritten, how many failed, how many were unreadable (skipped),
and the error that stopped the file, if any (a missing file, not a WARC).  Rows carry the file
they come from (``warc_file``).  Rewriting writes one output WARC per input file (written by
the task that reads it: nothing goes through the scheduler but the reports) into the output
folder, created if missing (with its parents), as ``to_parquet`` creates its own.

When the job is computed (``compute()``, ``to_parquet()``), the rule of
:func:`htmlstream.errors.check_failures` applies: if *every* file failed with the same type of
error, it raises :class:`~htmlstream.errors.AllInputsFailed` (nothing was done: a wrong path
pattern, an unreadable folder); if some failed, one summary line is logged (``WARNING`` on the
``htmlstream.dask`` logger) and the reports say which.

The rewriter is made on the worker by a function you give (``make_rewriter``), because a
:class:`~htmlstream.Rewriter` holds a lock and cannot be pickled; the function is shipped by
cloudpickle, so a lambda or a closure works.

This layer uses only htmlstream's public API (and :mod:`htmlstream.warc`); the core never
imports it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htmlstream import Rewriter
from htmlstream.errors import check_failures, check_type

if TYPE_CHECKING:
    from htmlstream.extraction import Field

__all__ = ["REPORT_COLUMNS", "RewriteJob", "WarcJob", "extract_warcs", "rewrite_warcs"]

_log = logging.getLogger("htmlstream.dask")

#: The columns of a per-file report.
REPORT_COLUMNS: tuple[str, ...] = (
    "warc_file", "output", "records", "html", "rewritten", "copied", "extracted", "failed",
    "bad_records", "error")


def _check_paths(where: str, paths: object) -> None:
    if isinstance(paths, (str, bytes, os.PathLike)) or not isinstance(paths, Iterable):
        raise TypeError(f"{where}: paths must be an iterable of paths (str, os.PathLike), not "
                        f"{type(paths).__name__}")


def _check(reports: Sequence[Mapping[str, Any]]) -> None:
    """The failure rule over a computed job's per-file reports."""
    check_failures("WARC files", [report["error"] for report in reports], _log)


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


def _write_part(part: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]], path: str,
                schema: Any, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One partition's rows written to the Parquet file ``path``; its reports (a task)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [row for _, file_rows in part for row in file_rows]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, **options)
    return [report for report, _ in part]


def _flatten(parts: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [report for part in parts for report in part]


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

    def to_parquet(self, path: str | os.PathLike[str], *, compute: bool = True,
                   **kwargs: Any) -> Any:
        """Write the rows as Parquet files into the folder ``path`` (created if missing, with
        its parents), one per WARC file (``part.<i>.parquet``, in the order of the paths), by
        the workers; strings, and lists of strings for the ``*`` fields.  ``kwargs`` go to
        ``pyarrow.parquet.write_table`` (``compression="zstd"``...).

        Returns the per-file reports (each file read once, for its rows and its report), after
        the failure rule (see the module); with ``compute=False``, a ``dask.delayed`` list of
        them, the rule then the caller's (:func:`htmlstream.errors.check_failures`)."""
        import pyarrow as pa

        dask, _ = _imports()
        schema = pa.schema(
            [(name, pa.string()) for name in ("warc_file", "url", "date")]
            + [(name, pa.list_(pa.string()) if name in self.lists else pa.string())
               for name in self.fields])
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        writes = [dask.delayed(_write_part)(part, os.fspath(folder / f"part.{i}.parquet"),
                                            schema, kwargs)
                  for i, part in enumerate(self.results.to_delayed())]
        if not compute:
            return dask.delayed(_flatten)(writes)
        reports = _flatten(dask.compute(*writes))
        _check(reports)
        return reports

    def compute(self, **kwargs: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``(rows, reports)``, each file read once (on the current Dask scheduler, e.g. a
        ``distributed.Client``; ``kwargs`` go to ``dask.compute``), after the failure rule
        (see the module)."""
        dask, _ = _imports()
        results = dask.compute(self.results, **kwargs)[0]
        rows = [row for _, file_rows in results for row in file_rows]
        reports = [report for report, _ in results]
        _check(reports)
        return rows, reports


@dataclasses.dataclass(frozen=True)
class RewriteJob:
    """A rewrite of many files, not computed yet (from :func:`rewrite_warcs`).

    Attributes:
        reports: a Dask bag of the per-file reports (dicts with :data:`REPORT_COLUMNS`), one
            partition per file; computing it rewrites the files (without the failure rule).
        output_dir: the folder the rewritten files go to.
    """

    reports: Any
    output_dir: str

    def compute(self, **kwargs: Any) -> list[dict[str, Any]]:
        """Rewrite the files (on the current Dask scheduler; ``kwargs`` go to
        ``dask.compute``): the per-file reports, after the failure rule (see the module)."""
        dask, _ = _imports()
        reports: list[dict[str, Any]] = dask.compute(self.reports, **kwargs)[0]
        _check(reports)
        return reports


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

    _check_paths("extract_warcs()", paths)
    check_type(fields, Mapping, "extract_warcs()", "fields",
               "a mapping of names to selector strs or Fields")
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
                  ) -> RewriteJob:
    """Rewrite every file into ``output_dir`` (same file name), one task per file.
    ``output_dir`` is created now if missing, with its parents (on a cluster, it must be a
    folder the workers share, as for ``to_parquet``).

    Returns:
        the job; its ``compute()`` runs it and gives the per-file reports
        (:data:`REPORT_COLUMNS`).
    """
    _check_paths("rewrite_warcs()", paths)
    check_type(output_dir, (str, os.PathLike), "rewrite_warcs()", "output_dir",
               "a path (str, os.PathLike)")
    if not callable(make_rewriter):
        raise TypeError(f"rewrite_warcs(): make_rewriter must be a callable that makes a "
                        f"Rewriter (on each worker), not {type(make_rewriter).__name__}")
    _, bag = _imports()
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    pairs = [(os.fspath(p), os.fspath(out / Path(p).name)) for p in paths]
    if len({o for _, o in pairs}) != len(pairs):
        raise ValueError("two input files have the same name: their outputs would collide")
    files = bag.from_sequence(pairs, npartitions=max(1, len(pairs)))
    return RewriteJob(
        files.map(lambda pair: _rewrite_file(pair[0], pair[1], make_rewriter, chunk_size)),
        os.fspath(out))
