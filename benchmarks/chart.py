"""Draw the README's throughput chart from a ``bench.py --json`` report.

One panel per case (by default the ``a[href]`` rewrite that reads each ``href``, then sets it,
and passthrough), one group of bars per corpus file, one bar per engine: htmlstream,
python-lolhtml, selectolax, lxml and html.parser, in MB/s (10^6 bytes of input per second, the
median of the run's samples).  Streaming engines are shown at one chunk size (``--chunk-size``,
default 65536); engines that take the whole document
(selectolax, lxml in the rewrite case) have one figure per file.  The footnote says where the
figures come from (commit, CPU, Python, date of the run).

    .venv/bin/python benchmarks/bench.py --case rewrite-href-read --case rewrite-href \\
        --case passthrough --chunk-size 65536 --json benchmarks/results/throughput.json
    .venv/bin/python benchmarks/chart.py benchmarks/results/throughput.json \\
        -o docs/img/throughput.png

Needs matplotlib (in requirements-dev.txt).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

#: The engines drawn, in bar order: bench.py's name -> the label in the chart.
ENGINES = {
    "htmlstream": "htmlstream",
    "lol-html": "python-lolhtml",
    "selectolax": "selectolax",
    "lxml": "lxml",
    "html.parser": "html.parser",
}
COLOURS = {
    "htmlstream": "#d9480f",
    "lol-html": "#1c7ed6",
    "selectolax": "#37b24d",
    "lxml": "#ae3ec9",
    "html.parser": "#868e96",
}
#: What each case does, for the panel titles.
TITLES = {
    "rewrite-href-read": "a[href] rewrite: every link's href read, then set\n"
                         "(selectolax, lxml: parse, modify, serialise the whole document)",
    "rewrite-href": "a[href] rewrite: every link's href set\n"
                    "(selectolax, lxml: parse, modify, serialise the whole document)",
    "passthrough": "passthrough: a selector that matches nothing\n"
                   "(selectolax, lxml, html.parser: parse only)",
    "text": "a text handler reading every chunk",
    "tag-scanner": "tag scanner: no handlers",
}


def figures(report: dict[str, Any], case: str, chunk_size: int) -> dict[str, dict[str, float]]:
    """{file: {engine: MB/s}} for one case: streaming engines at ``chunk_size``, whole-document
    engines (``chunk_size`` None in the report) as they are."""
    out: dict[str, dict[str, float]] = {}
    for row in report["results"]:
        if row["case"] != case or row["engine"] not in ENGINES:
            continue
        if row["chunk_size"] not in (None, chunk_size):
            continue
        out.setdefault(row["file"], {})[row["engine"]] = row["mb_s"]
    return out


def source_note(report: dict[str, Any], chunk_size: int) -> str:
    """The footnote: where the figures come from."""
    env = report["environment"]
    versions = env.get("versions", {})
    peers = ", ".join(
        f"{name} {versions[name]}"
        for name in ("python-lolhtml", "selectolax", "lxml")
        if versions.get(name)
    )
    return (
        f"benchmarks/bench.py at commit {env.get('commit') or '?'}, {env.get('time', '?')[:10]}; "
        f"median of {report['settings']['repeat']} {report['settings']['clock']}-time samples; "
        f"streaming engines fed {chunk_size // 1024} KiB chunks.\n"
        f"{env.get('cpu', '?')}, {env.get('cpus', '?')} CPUs (shared); "
        f"{env.get('implementation', '')} {env.get('python', '')}; {peers}. "
        "lol-html's own benchmark pages."
    )


def draw(
    report: dict[str, Any], cases: list[str], chunk_size: int, output: Path, dpi: int
) -> None:
    """Draw the chart into ``output`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = {case: figures(report, case, chunk_size) for case in cases}
    missing = [case for case, rows in data.items() if not rows]
    if missing:
        raise SystemExit(f"chart: no results for {', '.join(missing)} in the report")
    files = sorted({f for rows in data.values() for f in rows})
    engines = list(ENGINES)
    n_eng = len(engines)
    bar = 0.8 / n_eng

    fig, axes = plt.subplots(
        1, len(cases), figsize=(6.2 * len(cases), 0.9 + 1.35 * len(files)), squeeze=False
    )
    for ax, case in zip(axes[0], cases, strict=True):
        rows = data[case]
        top = max(v for r in rows.values() for v in r.values())
        for i, engine in enumerate(engines):
            ys = [len(files) - 1 - j + (n_eng / 2 - i - 0.5) * bar for j in range(len(files))]
            values = [rows.get(f, {}).get(engine, 0.0) for f in files]
            ax.barh(ys, values, height=bar * 0.92, color=COLOURS[engine], label=ENGINES[engine])
            for y, v in zip(ys, values, strict=True):
                if v:
                    label = f"{v:,.0f}" if v >= 10 else f"{v:.1f}"
                    ax.text(v + top * 0.01, y, label, va="center", fontsize=8)
        ax.set_yticks(range(len(files)), [f.removesuffix(".html") for f in reversed(files)])
        ax.set_xlim(0, top * 1.15)
        ax.set_xlabel("MB/s of input (higher is better)")
        ax.set_title(TITLES.get(case, case), fontsize=11)
        ax.grid(axis="x", alpha=0.3)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=n_eng, frameon=False,
               bbox_to_anchor=(0.5, 1.0))
    fig.text(0.01, 0.01, source_note(report, chunk_size), fontsize=7, color="#495057",
             va="bottom")
    fig.tight_layout(rect=(0, 0.09, 1, 0.93))
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=dpi)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Draw the chart; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a JSON file written by bench.py --json")
    parser.add_argument("-o", "--output", type=Path, default=Path("docs/img/throughput.png"),
                        help="the PNG to write (default: docs/img/throughput.png)")
    parser.add_argument("--case", action="append", metavar="NAME",
                        help="a case to draw, one panel each (repeatable; default: "
                        "rewrite-href-read and passthrough)")
    parser.add_argument("--chunk-size", type=int, default=65536, metavar="N",
                        help="the chunk size of the streaming engines' figures (default 65536)")
    parser.add_argument("--dpi", type=int, default=110, help="resolution (default 110)")
    args = parser.parse_args(argv)
    report = json.loads(args.report.read_text())
    draw(report, args.case or ["rewrite-href-read", "passthrough"], args.chunk_size, args.output,
         args.dpi)
    print(f"chart: wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
