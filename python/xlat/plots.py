"""Figures of sweep results, drawn in the style of the seed papers' evaluation figures.

The papers xlat reproduces (Utopia, Figs 1-5 and 11; Gandhi et al., Fig 11; ME-HPT, Figs 9-16)
draw their results the same way: one group of bars per workload, one bar per system told apart
by colour *and* hatch (so the figure survives a black-and-white print), a light grey horizontal
grid behind the bars, the legend in one row above the plot, a final ``GMEAN``/``AVG`` group, and
bars that would run off the top of the axis cut at the axis with their value written on them.

Every function here takes a sweep's results as a :class:`pandas.DataFrame` with one row per run
(columns ``status``, ``workload``, ``label``, ``seed``, ``param.<key>``, ``config.<key>``,
``stats.<path>``; see :mod:`xlat.sweep`) and returns a new :class:`matplotlib.figure.Figure`.
Figures are created directly (never through :mod:`matplotlib.pyplot`), so no global figure
state is kept or shared between calls and nothing needs closing; they render with the Agg
backend. Columns may be named in full (``stats.summary.ipc``) or by their short name (``ipc``,
``mmu.l2tlb.unified.entries``), see :func:`resolve_column`.

Runs whose ``status`` is not ``"ok"`` are ignored. Repeated rows of the same point (several
seeds) are averaged, and their spread is drawn as min-max error bars.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import NullLocator, ScalarFormatter

from .results import write_atomic

__all__ = [
    "grouped_bars",
    "lines",
    "png_bytes",
    "resolve_column",
    "save",
    "stacked_bars",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Fill colours, one per system (or per stacked part), cycled in order of first appearance.
#: Muted, print-friendly tones like the papers' bar charts.
COLORS = (
    "#4c72b0",
    "#dd8452",
    "#55a868",
    "#c44e52",
    "#8172b3",
    "#937860",
    "#da8bc3",
    "#8c8c8c",
    "#ccb974",
    "#64b5cd",
)
#: Hatches, paired with :data:`COLORS`, so that bars stay distinguishable in greyscale.
HATCHES = ("", "//", "\\\\", "xx", "..", "--", "++", "oo", "||", "**")
#: Markers of the line plots, one per series.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")

_PREFIXES = ("stats.summary.", "stats.", "param.", "config.")
_FIGSIZE = (8.0, 3.6)
_GROUP_WIDTH = 0.8
_GRID_COLOR = "0.85"
# Tick labels longer than this (or many groups) are rotated so that they do not overlap.
_ROTATE_LABEL_CHARS = 8
_ROTATE_TOTAL_CHARS = 70


def resolve_column(df: pd.DataFrame, name: str) -> str:
    """The column of ``df`` that ``name`` refers to.

    ``name`` is either a column (``stats.summary.ipc``) or a short name completed with the first
    of the prefixes ``stats.summary.``, ``stats.``, ``param.``, ``config.`` that gives an
    existing column (``ipc`` -> ``stats.summary.ipc``, ``mmu.l2tlb.unified.entries`` ->
    ``param.mmu.l2tlb.unified.entries``).

    Raises:
        KeyError: no such column; the message lists the columns that were tried.
    """
    if name in df.columns:
        return name
    tried = [name]
    for prefix in _PREFIXES:
        candidate = prefix + name
        if candidate in df.columns:
            return candidate
        tried.append(candidate)
    raise KeyError(f"no column {name!r} in the results (tried {', '.join(tried)})")


def _ok_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of successful runs (all rows when there is no ``status`` column)."""
    if "status" in df.columns:
        return df[df["status"] == "ok"]
    return df


def _ordered_unique(values: pd.Series) -> list[Any]:
    """Distinct values in order of first appearance (the order the sweep listed them)."""
    return list(dict.fromkeys(values.tolist()))


def _short_name(column: str) -> str:
    for prefix in _PREFIXES:
        if column.startswith(prefix):
            return column[len(prefix) :]
    return column


def _numeric(df: pd.DataFrame, column: str) -> pd.Series:
    """``df[column]`` as floats; raises ``TypeError`` naming the column if it is not numeric."""
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.isna() & df[column].notna()
    if bad.any():
        example = df.loc[bad, column].iloc[0]
        raise TypeError(f"column {column!r} is not numeric (value {example!r})")
    return values.astype(float)


def _aggregate(df: pd.DataFrame, keys: Sequence[str], column: str) -> pd.DataFrame:
    """Mean, min, max and count of ``column`` per distinct ``keys`` (several seeds -> one)."""
    data = df[list(keys)].copy()
    data["_value"] = _numeric(df, column)
    data = data.dropna(subset=["_value"])
    grouped = data.groupby(list(keys), sort=False)["_value"]
    return grouped.agg(["mean", "min", "max", "count"])


def _new_figure(figsize: tuple[float, float] = _FIGSIZE) -> tuple[Figure, Axes]:
    """A fresh Agg figure with one Axes in the papers' style (no pyplot state involved)."""
    fig = Figure(figsize=figsize, layout="constrained", facecolor="white")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_facecolor("white")
    ax.yaxis.grid(True, color=_GRID_COLOR, linewidth=0.8)
    ax.xaxis.grid(False)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _legend_and_title(
    ax: Axes, handles: Sequence[Any], labels: Sequence[str], title: str | None
) -> None:
    """The title, then the legend in rows above the plot, as many entries per row as fit the
    figure's width: constrained layout makes room for both instead of giving up. The title is
    the legend's own title (a separate figure title would be laid over an outside legend)."""
    fig = ax.get_figure()
    if not handles:
        if title:
            fig.suptitle(title)
        return
    # A "small" (~8.3 pt) character is about 5 pt wide; an entry adds its handle and padding.
    entry_pt = 5.0 * (max(len(str(label)) for label in labels) + 5)
    fits = int(fig.get_figwidth() * 72 * 0.95 // entry_pt)
    fig.legend(
        handles,
        labels,
        loc="outside upper center",
        ncol=max(1, min(len(handles), fits, 6)),
        frameon=False,
        fontsize="small",
        handlelength=1.8,
        title=title or None,
        title_fontsize="large",
    )


def _set_group_ticks(ax: Axes, names: Sequence[str]) -> None:
    """Group names under the groups, rotated when long or numerous."""
    ax.set_xticks(range(len(names)))
    longest = max((len(n) for n in names), default=0)
    rotate = longest > _ROTATE_LABEL_CHARS or sum(len(n) + 2 for n in names) > _ROTATE_TOTAL_CHARS
    if rotate:
        ax.set_xticklabels(names, rotation=35, ha="right", rotation_mode="anchor")
    else:
        ax.set_xticklabels(names)
    ax.set_xlim(-0.6, len(names) - 0.4)


def _fmt_value(value: float) -> str:
    """A bar value short enough to write on a bar: 3 significant digits."""
    if not math.isfinite(value):
        return str(value)
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-2):
        return f"{value:.2e}"
    return f"{value:.3g}"


def _annotate_clipped(ax: Axes, positions: Sequence[float], heights: Sequence[float]) -> None:
    """Write the value of every bar that runs above the axis' top at the top of the bar."""
    top = ax.get_ylim()[1]
    for x, h in zip(positions, heights):
        if math.isfinite(h) and h > top:
            ax.annotate(
                _fmt_value(h),
                xy=(x, top),
                xytext=(0, -2),
                textcoords="offset points",
                ha="center",
                va="top",
                rotation=90,
                fontsize="x-small",
                bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"},
                annotation_clip=False,
            )


#: Bars whose largest and smallest positive heights differ by more than this get a log axis.
_LOG_AXIS_SPAN = 100.0


def _spans_decades(heights: Sequence[float]) -> bool:
    positive = [h for h in heights if math.isfinite(h) and h > 0]
    return len(positive) > 1 and max(positive) > _LOG_AXIS_SPAN * min(positive)


def _summarise(values: np.ndarray, summary: str, metric: str) -> float:
    """Geometric or arithmetic mean of the finite ``values`` (``nan`` if none)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return math.nan
    if summary == "mean":
        return float(finite.mean())
    if (finite <= 0).any():
        raise ValueError(
            f"geometric mean of {metric!r} needs positive values (found {finite.min():g}); "
            'use summary="mean" for metrics that can be 0'
        )
    return float(np.exp(np.log(finite).mean()))


def grouped_bars(
    df: pd.DataFrame,
    metric: str,
    *,
    x: str = "workload",
    hue: str = "label",
    baseline: Any = None,
    normalize: str = "ratio",
    geomean: bool = True,
    summary: str = "gmean",
    ylabel: str | None = None,
    title: str | None = None,
    ylim: tuple[float | None, float | None] | None = None,
) -> Figure:
    """One group of bars per ``x`` value, one bar per ``hue`` value (Utopia Fig 11 style).

    Args:
        df: sweep results, one row per run; only ``status == "ok"`` rows are drawn.
        metric: the column to draw (full or short name, see :func:`resolve_column`).
        x: column whose values form the groups (default: the workload).
        hue: column whose values form the bars of a group (default: the run label).
        baseline: a value of ``hue``; when given, every bar is normalised to the baseline's
            bar of the same group (the baseline bar becomes 1).
        normalize: how to normalise to the baseline: ``"ratio"`` draws ``value / baseline``
            (IPC, MPKI, ...), ``"inverse"`` draws ``baseline / value`` (speed-up from cycles or
            any other lower-is-better metric).
        geomean: append a summary group over all groups.
        summary: ``"gmean"`` (geometric mean, labelled ``GMEAN``; for ratios and positive
            metrics) or ``"mean"`` (arithmetic, labelled ``AVG``; for metrics that can be 0).
        ylabel: y-axis label (default: the metric's short name, plus "normalised to ...").
        title: figure title.
        ylim: ``(bottom, top)``; bars above ``top`` are cut at the axis and annotated with
            their value, as the papers do with outliers.

    Several rows of one (x, hue) point (different seeds) are averaged; when there are more than
    one, a min-max error bar is drawn. Normalised bars and their error bars are divided by (or
    divide) the baseline's mean, so the baseline bar is exactly 1.

    Raises:
        KeyError: a column is missing.
        ValueError: ``baseline`` is not a value of ``hue``, a bad ``normalize``/``summary``, or
            a geometric mean over non-positive values.
    """
    if normalize not in ("ratio", "inverse"):
        raise ValueError(f'normalize must be "ratio" or "inverse", not {normalize!r}')
    if summary not in ("gmean", "mean"):
        raise ValueError(f'summary must be "gmean" or "mean", not {summary!r}')
    column = resolve_column(df, metric)
    for key in (x, hue):
        if key not in df.columns:
            raise KeyError(f"no column {key!r} in the results")
    runs = _ok_runs(df)
    agg = _aggregate(runs, [x, hue], column)
    groups = _ordered_unique(runs[x])
    hues = _ordered_unique(runs[hue])

    def table(field: str) -> pd.DataFrame:
        return agg[field].unstack(hue).reindex(index=groups, columns=hues).astype(float)

    mean, low, high, count = table("mean"), table("min"), table("max"), table("count")
    if baseline is not None:
        if baseline not in hues:
            raise ValueError(f"baseline {baseline!r} is not a value of {hue!r}: {hues}")
        base = mean[baseline]
        if normalize == "ratio":
            mean, low, high = (t.div(base, axis=0) for t in (mean, low, high))
        else:
            # baseline / value reverses the order: the largest value gives the smallest bar.
            mean, low, high = (t.rdiv(base, axis=0) for t in (mean, high, low))

    names = [str(g) for g in groups]
    values = mean.to_numpy()
    lows, highs, counts = low.to_numpy(), high.to_numpy(), count.fillna(0).to_numpy()
    if geomean and groups:
        summary_row = [_summarise(values[:, j], summary, column) for j in range(len(hues))]
        values = np.vstack([values, summary_row])
        lows = np.vstack([lows, summary_row])
        highs = np.vstack([highs, summary_row])
        counts = np.vstack([counts, np.ones(len(hues))])
        names.append("GMEAN" if summary == "gmean" else "AVG")

    fig, ax = _new_figure()
    width = _GROUP_WIDTH / max(len(hues), 1)
    handles = []
    drawn_x: list[float] = []
    drawn_h: list[float] = []
    for j, hue_value in enumerate(hues):
        offset = (j - (len(hues) - 1) / 2) * width
        col = values[:, j]
        keep = np.isfinite(col)
        xs = np.arange(len(names))[keep] + offset
        bars = ax.bar(
            xs,
            col[keep],
            width,
            color=COLORS[j % len(COLORS)],
            hatch=HATCHES[j % len(HATCHES)],
            edgecolor="black",
            linewidth=0.6,
            label=str(hue_value),
        )
        handles.append(bars)
        # Seeds that all agree give no visible range: no error bar then.
        spread = keep & (counts[:, j] > 1) & (highs[:, j] > lows[:, j])
        if spread.any():
            ax.errorbar(
                np.arange(len(names))[spread] + offset,
                col[spread],
                yerr=[col[spread] - lows[spread, j], highs[spread, j] - col[spread]],
                fmt="none",
                ecolor="black",
                elinewidth=0.8,
                capsize=2,
            )
        drawn_x.extend(xs.tolist())
        drawn_h.extend(col[keep].tolist())

    if geomean and groups:
        ax.axvline(len(groups) - 0.5, color="0.5", linestyle=":", linewidth=0.8)
    if baseline is not None:
        ax.axhline(1.0, color="black", linewidth=0.8, zorder=1.5)
    _set_group_ticks(ax, names)
    if ylim is not None:
        ax.set_ylim(*ylim)
    elif _spans_decades(drawn_h):
        # On a linear axis the small bars would vanish next to the large ones.
        ax.set_yscale("log")
    _annotate_clipped(ax, drawn_x, drawn_h)
    if ylabel is None:
        ylabel = _short_name(column)
        if baseline is not None and normalize == "ratio":
            ylabel = f"{ylabel} normalised to {baseline}"
        elif baseline is not None:
            ylabel = f"speed-up over {baseline} ({ylabel})"
    ax.set_ylabel(ylabel)
    _legend_and_title(ax, handles, [str(h) for h in hues], title)
    return fig


def stacked_bars(
    df: pd.DataFrame,
    parts: Mapping[str, str],
    *,
    x: str = "workload",
    hue: str | None = None,
    normalize: bool | Any = True,
    average: bool = True,
    ylabel: str | None = None,
    title: str | None = None,
) -> Figure:
    """Stacked bars of several parts of a whole (Utopia Fig 1: walk references by level).

    Args:
        df: sweep results; only ``status == "ok"`` rows are drawn.
        parts: segment label -> column, bottom segment first (e.g. ``{"L1":
            "stats.summary.walk_refs_l1", ..., "DRAM": "stats.summary.walk_refs_dram"}``).
        x: column whose values form the groups.
        hue: optional column whose values form side-by-side bars within a group (told apart by
            hatch; the segments are told apart by colour).
        normalize: ``True`` draws fractions (each bar sums to 1); ``False`` the raw means;
            a value of ``hue`` divides every bar of a group by that hue's total, so the bars
            show both the breakdown and the total relative to a baseline (Utopia Fig 1).
        average: append an ``AVG`` group, the arithmetic mean of each segment over the groups.
        ylabel: y-axis label (default: "fraction" or "normalised to ...").
        title: figure title.

    Seeds are averaged per part before stacking.

    Raises:
        KeyError: a column is missing. ValueError: no parts, or ``normalize`` names a value
        that is not one of ``hue``.
    """
    if not parts:
        raise ValueError("stacked_bars needs at least one part")
    columns = {label: resolve_column(df, name) for label, name in parts.items()}
    keys = [x] if hue is None else [x, hue]
    for key in keys:
        if key not in df.columns:
            raise KeyError(f"no column {key!r} in the results")
    runs = _ok_runs(df)
    groups = _ordered_unique(runs[x])
    hues: list[Any] = [None] if hue is None else _ordered_unique(runs[hue])
    index = pd.MultiIndex.from_product([groups, hues]) if hue is not None else pd.Index(groups)

    means = pd.DataFrame(
        {
            label: _aggregate(runs, keys, col)["mean"].reindex(index)
            for label, col in columns.items()
        }
    )
    totals = means.sum(axis=1, min_count=1)
    if normalize is True:
        means = means.div(totals, axis=0)
    elif normalize is not False:
        if hue is None or normalize not in hues:
            raise ValueError(f"normalize={normalize!r} is not a value of hue {hue!r}")
        base_totals = totals.xs(normalize, level=1)
        means = means.div(base_totals.reindex(index.get_level_values(0)).to_numpy(), axis=0)

    # Bars: rows (group, hue) in order; the average group is appended per hue.
    names = [str(g) for g in groups]
    blocks = [means.loc[g] if hue is not None else means.loc[[g]] for g in groups]
    if average and groups:
        if hue is not None:
            avg = means.groupby(level=1, sort=False).mean().reindex(hues)
        else:
            avg = means.mean().to_frame().T
        blocks.append(avg)
        names.append("AVG")

    fig, ax = _new_figure()
    width = _GROUP_WIDTH / len(hues)
    labels = list(columns)
    for i, block in enumerate(blocks):
        for j in range(len(hues)):
            xpos = i + (j - (len(hues) - 1) / 2) * width
            bottom = 0.0
            for k, label in enumerate(labels):
                height = float(block.iloc[j][label])
                if not math.isfinite(height):
                    continue
                ax.bar(
                    xpos,
                    height,
                    width,
                    bottom=bottom,
                    color=COLORS[k % len(COLORS)],
                    hatch=HATCHES[j % len(HATCHES)] if hue is not None else "",
                    edgecolor="black",
                    linewidth=0.6,
                )
                bottom += height
    if average and groups:
        ax.axvline(len(groups) - 0.5, color="0.5", linestyle=":", linewidth=0.8)
    _set_group_ticks(ax, names)

    handles: list[Any] = [
        Patch(facecolor=COLORS[k % len(COLORS)], edgecolor="black", label=label)
        for k, label in enumerate(labels)
    ]
    if hue is not None:
        handles += [
            Patch(facecolor="white", edgecolor="black", hatch=HATCHES[j % len(HATCHES)])
            for j in range(len(hues))
        ]
    legend_labels = labels + ([str(h) for h in hues] if hue is not None else [])
    _legend_and_title(ax, handles, legend_labels, title)
    if ylabel is None:
        if normalize is True:
            ylabel = "fraction"
        elif normalize is False:
            ylabel = "count"
        else:
            ylabel = f"normalised to {normalize}"
    ax.set_ylabel(ylabel)
    if normalize is True:
        ax.set_ylim(0, 1.0)
    return fig


def lines(
    df: pd.DataFrame,
    x_param: str,
    metric: str,
    *,
    hue: str | None = "workload",
    logx: bool = False,
    ylabel: str | None = None,
    title: str | None = None,
) -> Figure:
    """A metric over a swept parameter, one line per ``hue`` value (Utopia Fig 21 style).

    Args:
        df: sweep results; only ``status == "ok"`` rows are drawn.
        x_param: the swept parameter (``param.<key>`` or just ``<key>``); must be numeric.
        metric: the column on the y axis (full or short name).
        hue: column whose values form the lines (``None``: one line over all rows).
        logx: logarithmic x axis (base 2 when every x is a power of two, as sizes usually are).
        ylabel, title: axis label (default: the metric's short name) and figure title.

    Points are the mean over seeds, sorted by x; with several seeds the min-max range is shaded.
    """
    x_col = resolve_column(df, x_param)
    column = resolve_column(df, metric)
    if hue is not None and hue not in df.columns:
        raise KeyError(f"no column {hue!r} in the results")
    runs = _ok_runs(df).copy()
    runs[x_col] = _numeric(runs, x_col)
    if hue is None:
        runs["_series"] = _short_name(column)
        hue_col = "_series"
    else:
        hue_col = hue
    agg = _aggregate(runs, [hue_col, x_col], column)
    fig, ax = _new_figure()
    handles = []
    names = []
    xs_all: set[float] = set()
    for j, series in enumerate(_ordered_unique(runs[hue_col])):
        if series not in agg.index.get_level_values(0):
            continue
        points = agg.xs(series, level=0).sort_index()
        xs = points.index.to_numpy(dtype=float)
        xs_all.update(xs.tolist())
        color = COLORS[j % len(COLORS)]
        (line,) = ax.plot(
            xs,
            points["mean"].to_numpy(),
            color=color,
            marker=MARKERS[j % len(MARKERS)],
            markersize=4,
            linewidth=1.4,
        )
        if (points["count"] > 1).any():
            ax.fill_between(
                xs, points["min"].to_numpy(), points["max"].to_numpy(), color=color, alpha=0.2
            )
        handles.append(line)
        names.append(str(series))
    ax.xaxis.grid(True, color=_GRID_COLOR, linewidth=0.8)
    if logx:
        positive = [v for v in xs_all if v > 0]
        powers_of_two = positive and all(math.log2(v).is_integer() for v in positive)
        ax.set_xscale("log", base=2 if powers_of_two else 10)
        if positive and len(positive) <= 12:
            ax.set_xticks(sorted(positive))
            formatter = ScalarFormatter()
            formatter.set_scientific(False)
            ax.xaxis.set_major_formatter(formatter)
            ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(_short_name(x_col))
    ax.set_ylabel(ylabel if ylabel is not None else _short_name(column))
    _legend_and_title(ax, handles if hue is not None else [], names, title)
    return fig


def png_bytes(fig: Figure, dpi: int = 150) -> bytes:
    """The figure rendered as a PNG image (white background)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, facecolor="white")
    return buffer.getvalue()


def save(fig: Figure, path: PathLike) -> Path:
    """Write ``fig`` to ``path``: PNG at 150 dpi for ``.png``, vector PDF for ``.pdf``.

    Written atomically (see :func:`write_atomic`), so a reader never sees a half-written
    figure; missing parent directories are created.

    Raises:
        ValueError: ``path`` ends in neither ``.png`` nor ``.pdf``.
    """
    target = Path(path)
    kind = target.suffix.lower().lstrip(".")
    if kind not in ("png", "pdf"):
        raise ValueError(f"{target}: figures are saved as .png or .pdf, not {target.suffix!r}")
    buffer = io.BytesIO()
    fig.savefig(buffer, format=kind, dpi=150, facecolor="white")
    return write_atomic(target, buffer.getvalue())
