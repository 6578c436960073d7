"""One self-contained HTML page that presents a sweep's results.

:func:`write_report` turns a results DataFrame (one row per run, see :mod:`xlat.plots`) into a
single ``.html`` file that can be mailed or archived on its own: the figures are embedded as
base64 PNG images, the tables are plain HTML with formatted numbers, and a header says what was
run (title, date, xlat version, number of runs, the runs that failed and why). Without explicit
figures it picks the ones a generic sweep needs (:func:`default_figures`); without explicit
tables it shows the mean of the headline statistics per configuration and workload
(:func:`default_tables`).

A tiny inline script marks ``<body>`` with ``data-images`` (number of ``<img>``) and
``data-images-ok`` (how many decoded) once the page has loaded, so a headless browser can check
that every figure renders.

:func:`report_main` is the ``xlat report SWEEP_DIR`` entry point: it reads
``SWEEP_DIR/results.parquet`` and writes ``SWEEP_DIR/report.html``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import math
import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from . import plots
from .results import RUNS_DIR, load, write_atomic

__all__ = [
    "Section",
    "default_figures",
    "default_tables",
    "format_number",
    "report_main",
    "swept_numeric_params",
    "write_report",
]

PathLike = Union[str, "os.PathLike[str]"]

RESULTS_FILE = "results.parquet"
REPORT_FILE = "report.html"

_S = "stats.summary."
#: Walk references by the level of the memory hierarchy that served them (Utopia Fig 1).
WALK_LEVELS = {
    "L1": _S + "walk_refs_l1",
    "L2": _S + "walk_refs_l2",
    "LLC": _S + "walk_refs_llc",
    "DRAM": _S + "walk_refs_dram",
}
#: Columns of the default summary table: column -> heading.
SUMMARY_COLUMNS = {
    _S + "ipc": "IPC",
    _S + "cycles": "cycles",
    _S + "l2tlb_mpki": "L2 TLB MPKI",
    _S + "walks": "page walks",
    _S + "avg_walk_latency": "avg walk latency",
    _S + "faults": "page faults",
    _S + "dram_row_hit_rate": "DRAM row hit rate",
}
_NA = "n/a"

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; background: #fff; }
h1 { margin-bottom: 0.2em; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption, caption, p.caption {
  font-size: 0.95em; color: #444; text-align: left; padding: 0.3em 0;
}
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #ddd; }
th { background: #f4f4f4; text-align: left; }
td { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.text, table.failed td { text-align: left; white-space: normal; }
table.failed pre { margin: 0; white-space: pre-wrap; font-size: 0.9em; }
.ok { color: #276738; } .failed-count { color: #a11; }
"""

# Sets data-images / data-images-ok on <body> once every image has had its chance to decode.
_IMAGE_CHECK = """
window.addEventListener("load", function () {
  var images = document.getElementsByTagName("img");
  var decoded = 0;
  for (var i = 0; i < images.length; i++) {
    if (images[i].complete && images[i].naturalWidth > 0) { decoded++; }
  }
  document.body.setAttribute("data-images", String(images.length));
  document.body.setAttribute("data-images-ok", String(decoded));
});
"""


def format_number(value: Any) -> str:
    """A table cell: integers (and reals from 1000 up) with thousands separators, smaller
    reals with 3 decimals (4 below 1, scientific below 0.001).

    ``None``/NaN print as ``n/a``; non-numbers as their ``str``.
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return _NA
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        x = float(value)
        if math.isnan(x):
            return _NA
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        magnitude = abs(x)
        if magnitude >= 1000:
            return f"{x:,.0f}"
        if magnitude >= 1 or x == 0:
            return f"{x:.3f}"
        if magnitude >= 0.001:
            return f"{x:.4f}"
        return f"{x:.3e}"
    return str(value)


def _ok_runs(df: pd.DataFrame) -> pd.DataFrame:
    if "status" in df.columns:
        return df[df["status"] == "ok"]
    return df


def _hue_column(df: pd.DataFrame) -> str:
    """The column naming a run's configuration: ``label``, else ``system``."""
    return "label" if "label" in df.columns else "system"


def _ordered_unique(values: pd.Series) -> list[Any]:
    return list(dict.fromkeys(values.tolist()))


def _summary_kind(df: pd.DataFrame, column: str) -> str:
    """``"gmean"`` when every value is positive (a geometric mean exists), else ``"mean"``."""
    values = pd.to_numeric(df[column], errors="coerce").dropna()
    return "gmean" if len(values) and (values > 0).all() else "mean"


def swept_numeric_params(df: pd.DataFrame) -> list[str]:
    """The ``param.*`` columns that hold numbers and take more than one value."""
    swept = []
    for column in df.columns:
        if not column.startswith("param."):
            continue
        values = df[column].dropna()
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            continue
        if values.nunique() > 1:
            swept.append(column)
    return swept


def default_figures(df: pd.DataFrame) -> list[tuple[str, Figure]]:
    """The figures a generic sweep needs, each only when its statistics are in ``df``.

    In order: IPC; speed-up over the first configuration (its cycles divided by each one's,
    when there is more than one configuration); L2 TLB MPKI; average page-walk latency; walk
    references by the level that served them (stacked fractions, Utopia Fig 1); and, when
    exactly one numeric parameter is swept, IPC (or cycles) over that parameter per workload.
    """
    runs = _ok_runs(df)
    if runs.empty or "workload" not in runs.columns:
        return []
    hue = _hue_column(runs)
    configs = _ordered_unique(runs[hue])
    figures: list[tuple[str, Figure]] = []

    def has(column: str) -> bool:
        return column in runs.columns and runs[column].notna().any()

    ipc, cycles = _S + "ipc", _S + "cycles"
    if has(ipc):
        kind = _summary_kind(runs, ipc)
        figures.append(
            (
                "Instructions per cycle per workload and configuration (higher is better).",
                plots.grouped_bars(runs, ipc, hue=hue, summary=kind, ylabel="IPC"),
            )
        )
    if has(cycles) and len(configs) > 1:
        base = configs[0]
        figures.append(
            (
                f"Speed-up over {base}: its cycles divided by each configuration's cycles "
                "(higher is better).",
                plots.grouped_bars(
                    runs,
                    cycles,
                    hue=hue,
                    baseline=base,
                    normalize="inverse",
                    summary=_summary_kind(runs, cycles),
                    ylabel=f"speed-up over {base}",
                ),
            )
        )
    for column, ylabel, caption in (
        (_S + "l2tlb_mpki", "L2 TLB MPKI", "L2 TLB misses per kilo-instruction."),
        (
            _S + "avg_walk_latency",
            "avg walk latency (cycles)",
            "Average page-table walk latency in cycles.",
        ),
    ):
        if has(column):
            figures.append(
                (caption, plots.grouped_bars(runs, column, hue=hue, summary="mean", ylabel=ylabel))
            )
    if all(has(column) for column in WALK_LEVELS.values()):
        figures.append(
            (
                "Page-walk memory references by the level of the hierarchy that served them "
                "(fraction of each bar's walk references).",
                plots.stacked_bars(
                    runs,
                    WALK_LEVELS,
                    hue=hue if len(configs) > 1 else None,
                    ylabel="fraction of walk references",
                ),
            )
        )
    params = swept_numeric_params(runs)
    metric = ipc if has(ipc) else cycles if has(cycles) else None
    if len(params) == 1 and metric is not None:
        xs = pd.to_numeric(runs[params[0]], errors="coerce").dropna()
        logx = bool((xs > 0).all() and xs.max() / xs.min() >= 8)
        name = params[0][len("param.") :]
        figures.append(
            (
                f"{metric[len(_S) :]} over {name}, one line per workload.",
                plots.lines(runs, params[0], metric, hue="workload", logx=logx),
            )
        )
    return figures


def default_tables(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The mean of the headline statistics per configuration and workload (one table)."""
    runs = _ok_runs(df)
    columns = {c: h for c, h in SUMMARY_COLUMNS.items() if c in runs.columns}
    if runs.empty or not columns or "workload" not in runs.columns:
        return []
    hue = _hue_column(runs)
    keys = [hue, "workload"]
    numeric = runs[list(columns)].apply(pd.to_numeric, errors="coerce")
    grouped = pd.concat([runs[keys], numeric], axis=1).groupby(keys, sort=False)
    table = grouped.mean()
    table.insert(0, "runs", grouped.size())
    table = table.rename(columns=columns).reset_index()
    caption = "Mean over seeds of the headline statistics, per configuration and workload."
    return [(caption, table)]


def _figure_html(caption: str, fig: Figure) -> str:
    data = base64.b64encode(plots.png_bytes(fig)).decode("ascii")
    text = html.escape(caption)
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{text}">'
        f"<figcaption>{text}</figcaption></figure>"
    )


def _table_html(caption: str, table: pd.DataFrame) -> str:
    if table.empty:
        # A header with no rows reads as a bug; say that there is nothing to list.
        return f'<p class="caption">{html.escape(caption)}</p><p class="empty">(no rows)</p>'
    show_index = not isinstance(table.index, pd.RangeIndex)
    frame = table.reset_index() if show_index else table
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for value in record:
            is_text = isinstance(value, str)
            css = ' class="text"' if is_text else ""
            cells.append(f"<td{css}>{html.escape(format_number(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<table class="data"><caption>{html.escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _failed_html(df: pd.DataFrame) -> str:
    if "status" not in df.columns:
        return ""
    failed = df[df["status"] != "ok"]
    if failed.empty:
        return '<p class="ok">No run failed.</p>'
    columns = [c for c in ("run_id", "label", "system", "workload", "seed") if c in df.columns]
    head = "".join(f"<th>{c}</th>" for c in columns) + "<th>error</th>"
    rows = []
    for _, run in failed.iterrows():
        cells = "".join(f"<td>{html.escape(format_number(run[c]))}</td>" for c in columns)
        error = run.get("error")
        message = "" if error is None or (isinstance(error, float) and math.isnan(error)) else error
        rows.append(f"<tr>{cells}<td><pre>{html.escape(str(message))}</pre></td></tr>")
    return (
        f'<table class="failed"><caption>Failed runs ({len(failed)})</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _xlat_version() -> str:
    """``xlat.__version__`` and the model epoch (from the compiled engine), or a note when it
    is not available."""
    try:
        from . import api

        return api.engine_version()
    except (ImportError, AttributeError):
        return "unknown (engine not built)"


def _distinct(df: pd.DataFrame, column: str) -> str:
    if column not in df.columns:
        return _NA
    return ", ".join(str(v) for v in _ordered_unique(df[column].dropna()))


def _header_html(df: pd.DataFrame, title: str) -> str:
    n_failed = int((df["status"] != "ok").sum()) if "status" in df.columns else 0
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    failed_css = "failed-count" if n_failed else "ok"
    meta = [
        ("date", html.escape(now)),
        ("xlat version", html.escape(_xlat_version())),
        (
            "runs",
            f"{len(df)} (<span class='ok'>{len(df) - n_failed} ok</span>, "
            f"<span class='{failed_css}'>{n_failed} failed</span>)",
        ),
        ("workloads", html.escape(_distinct(df, "workload"))),
        ("configurations", html.escape(_distinct(df, _hue_column(df)))),
    ]
    if "seed" in df.columns:
        # Runs that did not set a seed ran with their configuration's own.
        seeds = _distinct(df, "seed") or "each configuration's own (not swept)"
        meta.append(("seeds", html.escape(seeds)))
    for column in df.columns:
        if column.startswith("param."):
            values = _distinct(df, column)
            meta.append((html.escape(column[len("param.") :]), html.escape(values)))
    items = "".join(f"<dt>{key}</dt><dd>{value}</dd>" for key, value in meta)
    return f"<h1>{html.escape(title)}</h1><dl class='meta'>{items}</dl>"


@dataclass(frozen=True)
class Section:
    """One part of a report: a heading, its figures, then its tables."""

    title: str
    figures: Sequence[tuple[str, Figure]] = ()
    tables: Sequence[tuple[str, pd.DataFrame]] = ()


def write_report(
    df: pd.DataFrame,
    path: PathLike,
    *,
    title: str,
    figures: Sequence[tuple[str, Figure]] | None = None,
    tables: Sequence[tuple[str, pd.DataFrame]] | None = None,
    sections: Sequence[Section] | None = None,
) -> Path:
    """Write one self-contained HTML page presenting ``df`` to ``path``.

    Args:
        df: sweep results, one row per run (failed runs included: they are listed).
        path: the ``.html`` file to write (atomically; parent directories are created).
        title: page title and heading.
        figures: ``(caption, Figure)`` pairs, embedded as PNG in this order; ``None`` picks
            :func:`default_figures` (an empty list gives a page without figures).
        tables: ``(caption, DataFrame)`` pairs, rendered with :func:`format_number`; ``None``
            gives :func:`default_tables`.
        sections: instead of one "Figures" and one "Tables" part, one part per
            :class:`Section`, each with its own figures and then its tables (a reproduction's
            figures beside its comparison); ``figures`` and ``tables`` must then be omitted.

    Returns:
        The path written.
    """
    body = [_header_html(df, title), "<h2>Failed runs</h2>", _failed_html(df)]
    if sections is not None:
        if figures is not None or tables is not None:
            raise ValueError("write_report: give sections, or figures and tables, not both")
        for section in sections:
            body.append(f"<section><h2>{html.escape(section.title)}</h2>")
            body.extend(_figure_html(caption, fig) for caption, fig in section.figures)
            body.extend(_table_html(caption, table) for caption, table in section.tables)
            body.append("</section>")
    else:
        if figures is None:
            figures = default_figures(df)
        if tables is None:
            tables = default_tables(df)
        if figures:
            body.append("<h2>Figures</h2>")
            body.extend(_figure_html(caption, fig) for caption, fig in figures)
        if tables:
            body.append("<h2>Tables</h2>")
            body.extend(_table_html(caption, table) for caption, table in tables)
    page = (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
        f"<script>{_IMAGE_CHECK}</script></head>\n"
        "<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
    return write_atomic(path, page)


def report_main(sweep_dir: PathLike, out: PathLike | None = None) -> Path:
    """Write the report of the sweep in ``sweep_dir`` (the ``xlat report`` command).

    Reads ``<sweep_dir>/results.parquet`` and writes ``out`` (default
    ``<sweep_dir>/report.html``) with the default figures and tables.

    Raises:
        FileNotFoundError: ``sweep_dir`` has no ``results.parquet``.
    """
    directory = Path(sweep_dir)
    results = directory / RESULTS_FILE
    if not results.is_file() and not (directory / RUNS_DIR).is_dir():
        raise FileNotFoundError(f"{results}: no sweep results here (run the sweep first)")
    df = load(directory)  # rebuilt from the run folders if a run finished after the Parquet
    target = Path(out) if out is not None else directory / REPORT_FILE
    name = directory.resolve().name
    return write_report(df, target, title=f"xlat sweep {name}")
