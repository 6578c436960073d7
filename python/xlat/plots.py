"""Figures of sweep results, drawn in the style of the seed papers' evaluation figures.

The papers xlat reproduces (Utopia, Figs 1-5 and 11; Gandhi et al., Fig 11; ME-HPT, Figs 9-16)
draw their results the same way: one group of bars per workload, one bar per system told apart
by colour *and* hatch (so the figure survives a black-and-white print), a light grey horizontal
grid behind the bars, the legend in rows above the plot, a final ``GMEAN``/``AVG`` group, and
bars that would run off the top of the axis cut at the axis with their value written on them.

Every series is drawn in the style :mod:`xlat.styles` gives its label, the same in every figure
(``Radix`` is one blue bar everywhere, and no two labels look alike). No value disappears: a bar
too short to see (zero, a value a log axis cannot show, or under :data:`MARK_BELOW` of the
axis' height) gets a dot at its base with its value written above it, and a missing value an
``n/a`` there. The artists carry ``gid`` tags (:data:`SERIES_GID`, :data:`MARK_GID`,
:data:`KEY_COLOR_GID`, :data:`KEY_HATCH_GID`, :data:`KEY_PART_GID`) that say which series they
draw, so a test can check each figure from its matplotlib objects (tests/figcheck.py).

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
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd
from matplotlib import rcParams
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch
from matplotlib.textpath import TextPath
from matplotlib.ticker import NullLocator, ScalarFormatter
from matplotlib.transforms import blended_transform_factory

from . import styles
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

#: The colours, hatches and line markers of the series (see :mod:`xlat.styles`).
COLORS = styles.COLORS
HATCHES = styles.HATCHES
MARKERS = styles.MARKERS

#: ``gid`` of every bar (or stacked segment) of a series: this prefix, then the series' label
#: (a stacked bar without ``hue``: the empty label).
SERIES_GID = "xlat-series:"
#: ``gid`` of the marks of a series' values too short to see (one Line2D per series): this
#: prefix, then the label.
MARK_GID = "xlat-mark:"
#: ``gid`` of a legend key (set on the legend's own copy too) that shows only a colour (a
#: stacked part whose segments carry their bar's hatch), only a hatch (the bars of a ``hue``
#: value in a stacked figure), or a stacked part in its full style (a stacked figure without
#: ``hue``). Keys without a gid are series.
KEY_COLOR_GID = "xlat-key-color"
KEY_HATCH_GID = "xlat-key-hatch"
KEY_PART_GID = "xlat-key-part"
#: What a stacked part's legend entry says when no segment of it can be seen.
PART_NOT_SEEN = re.compile(r" \((?:0 everywhere|at most [^)]*)\)$")
#: A bar whose visible part is shorter than this fraction of the axis' height is marked.
MARK_BELOW = 0.015
#: Font size (points) of the values written on the plot: clipped bars, marked bars.
VALUE_FONTSIZE = 8.0

_PREFIXES = ("stats.summary.", "stats.", "param.", "config.")
_FIGSIZE = (8.0, 3.6)
_GROUP_WIDTH = 0.8
_GRID_COLOR = "0.85"
# Room the y axis' label and tick labels take beside the plot (points), before layout, and the
# least gap between two group names (points).
_YAXIS_PT = 55.0
_TICK_GAP_PT = 6.0
# A group name is wrapped (after "+", spaces, "/", ",", ":", "-") into at most this many lines
# when it is wider than its group; it is rotated only when even that does not fit.
_MAX_TICK_LINES = 3
_TICK_BREAK = re.compile(r"[^-+ ,/:]+[-+ ,/:]*|[-+ ,/:]+")


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
    ax: Axes, blocks: Sequence[Sequence[tuple[Any, str]]], title: str | None
) -> None:
    """The title, then the legend in rows above the plot, read row by row: ``blocks`` of
    ``(handle, label)`` entries, each block starting a new row (a stacked figure's parts, then
    its ``hue`` values). As many entries per row as fit the figure's width (at most 6, spread
    evenly over the rows): constrained layout makes room for both instead of giving up. The
    title is the legend's own title (a separate figure title would be laid over an outside
    legend, and an Axes title would sit under it)."""
    fig = ax.get_figure()
    blocks = [list(block) for block in blocks if block]
    if not blocks:
        if title:
            fig.suptitle(title)
        return
    # A "small" (~8.3 pt) character is about 5 pt wide; an entry adds its handle and padding.
    longest = max(len(str(label)) for block in blocks for _, label in block)
    fits = max(1, min(int(fig.get_figwidth() * 72 * 0.95 // (5.0 * (longest + 5))), 6))
    ncol = max(math.ceil(len(b) / math.ceil(len(b) / fits)) for b in blocks)
    entries: list[tuple[Any, str]] = []
    for n, block in enumerate(blocks):
        entries += block
        if n < len(blocks) - 1 and len(block) % ncol:
            blank = (Patch(facecolor="none", edgecolor="none", visible=False), "")
            entries += [blank] * (ncol - len(block) % ncol)
    # Matplotlib fills a legend column by column (the first len % ncol columns one longer):
    # this order makes it read row by row.
    rows = math.ceil(len(entries) / ncol)
    full = len(entries) % ncol or ncol
    ordered = [
        entries[i * ncol + j] for j in range(ncol) for i in range(rows if j < full else rows - 1)
    ]
    legend = fig.legend(
        [h for h, _ in ordered],
        [str(label) for _, label in ordered],
        loc="outside upper center",
        ncol=ncol,
        frameon=False,
        fontsize="small",
        handlelength=1.8,
        title=title or None,
        title_fontsize="large",
    )
    # The legend draws copies of the handles, without their gids: give the copies those too.
    drawn = getattr(legend, "legend_handles", None) or getattr(legend, "legendHandles", [])
    for copy, (handle, _) in zip(drawn, ordered):
        if copy is not None:
            copy.set_gid(handle.get_gid())


def _text_width(text: str, size: float) -> float:
    """Width in points of ``text`` set in the default font at ``size`` points."""
    if not text.strip():
        return 0.0
    return float(TextPath((0, 0), text, prop=FontProperties(size=size)).get_extents().width)


def _wrap(name: str, room: float, size: float) -> str | None:
    """``name`` broken after ``+``, spaces, ``/``, ``,``, ``:`` or ``-`` into lines no wider than
    ``room`` points, or ``None`` if that takes more than :data:`_MAX_TICK_LINES` lines."""
    lines: list[str] = []
    for token in _TICK_BREAK.findall(name):
        if lines and _text_width((lines[-1] + token).rstrip(), size) <= room:
            lines[-1] += token
        elif _text_width(token.rstrip(), size) <= room:
            lines.append(token)
        else:
            return None
    if len(lines) > _MAX_TICK_LINES:
        return None
    return "\n".join(line.rstrip() for line in lines)


def _level_names_fit(names: Sequence[str], spacing: float, size: float) -> bool:
    """Whether ``names``, level and centred ``spacing`` points apart, leave a gap between
    neighbours (a long name may reach over a short neighbour's group)."""
    widths = [max(_text_width(line, size) for line in n.split("\n")) for n in names]
    return all((a + b) / 2 + _TICK_GAP_PT <= spacing for a, b in zip(widths, widths[1:]))


def _set_group_ticks(ax: Axes, names: Sequence[str]) -> None:
    """Group names under the groups: level when they fit beside each other, wrapped onto a few
    lines when that makes them fit, rotated only when neither does."""
    ax.set_xticks(range(len(names)))
    ax.set_xlim(-0.6, len(names) - 0.4)
    if not names:
        return
    size = FontProperties(size=rcParams["xtick.labelsize"]).get_size_in_points()
    spacing = (ax.get_figure().get_figwidth() * 72 - _YAXIS_PT) / (len(names) + 0.2)
    if _level_names_fit(names, spacing, size):
        ax.set_xticklabels(names)
        return
    wrapped = [_wrap(n, spacing - _TICK_GAP_PT, size) for n in names]
    if all(w is not None for w in wrapped) and _level_names_fit(wrapped, spacing, size):
        ax.set_xticklabels(wrapped)
    else:
        ax.set_xticklabels(names, rotation=35, ha="right", rotation_mode="anchor")


def _fmt_value(value: float) -> str:
    """A bar value short enough to write on a bar: 3 significant digits."""
    if math.isnan(value):
        return "n/a"
    if not math.isfinite(value):
        return str(value)
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-2):
        return f"{value:.2e}"
    return f"{value:.3g}"


def _axes_y(ax: Axes, value: float) -> float:
    """Where ``value`` lies on the y axis as a fraction of its height (0: the bottom, 1: the
    top; beyond them outside); ``-inf`` for what a log axis cannot show (0, negatives, NaN)."""
    if not math.isfinite(value) or (ax.get_yscale() == "log" and value <= 0):
        return -math.inf
    return float((ax.transScale + ax.transLimits).transform((0.0, value))[1])


def _clip01(y: float) -> float:
    return min(max(y, 0.0), 1.0)


def _visible(ax: Axes, bottom: float, top: float) -> float:
    """The fraction of the axis' height a bar from ``bottom`` to ``top`` shows."""
    low, high = sorted((_axes_y(ax, bottom), _axes_y(ax, top)))
    return _clip01(high) - _clip01(low)


def _value_text(ax: Axes, x: float, y: float, text: str) -> None:
    """``text`` upright above the point at ``x`` (data) and height ``y`` (axes fraction)."""
    ax.annotate(
        text,
        xy=(x, y),
        xycoords=blended_transform_factory(ax.transData, ax.transAxes),
        xytext=(0, 4),
        textcoords="offset points",
        ha="center",
        va="bottom",
        rotation=90,
        fontsize=VALUE_FONTSIZE,
        annotation_clip=False,
    )


def _mark_unseen(
    ax: Axes,
    series: str,
    color: str,
    bars: Sequence[tuple[float, float, float]],
) -> None:
    """Mark every bar of ``series`` that cannot be seen: a dot in the series' colour at its
    base, its value above the dot (``n/a`` for a missing one). ``bars`` are ``(x, bottom,
    value)``, the value the bar's top minus its bottom (NaN: missing). Call once the y axis'
    scale and limits are final."""
    zero = _axes_y(ax, 0.0)
    points = []
    for x, bottom, value in bars:
        if math.isfinite(value) and _visible(ax, bottom, bottom + value) >= MARK_BELOW:
            continue
        y = _axes_y(ax, bottom + value) if math.isfinite(value) else zero
        y = _clip01(y if math.isfinite(y) else zero if math.isfinite(zero) else 0.0)
        points.append((x, y))
        _value_text(ax, x, y, _fmt_value(value))
    if points:
        ax.plot(
            [x for x, _ in points],
            [y for _, y in points],
            transform=blended_transform_factory(ax.transData, ax.transAxes),
            linestyle="none",
            marker="o",
            markersize=5,
            markerfacecolor=color,
            markeredgecolor="black",
            markeredgewidth=0.6,
            clip_on=False,
            zorder=3,
            gid=MARK_GID + series,
            scalex=False,
            scaley=False,
        )


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
                fontsize=VALUE_FONTSIZE,
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
    logy: bool | None = None,
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
        logy: a logarithmic y axis (``None``: when, without ``ylim``, the positive bars span
            more than two decades).

    Each series (``hue`` value) is drawn in its :mod:`xlat.styles` style. A bar too short to
    see (under :data:`MARK_BELOW` of the axis: zero, or what a log axis cannot show) gets a
    dot at its base and its value written above; a missing one (no run, or an undefined value)
    the dot and ``n/a``.

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
    series = [str(h) for h in hues]
    looks = styles.styles_for(series)
    positions = np.arange(len(names))
    drawn_x: list[float] = []
    drawn_h: list[float] = []
    for j, (name, look) in enumerate(zip(series, looks)):
        offset = (j - (len(hues) - 1) / 2) * width
        col = values[:, j]
        keep = np.isfinite(col)
        xs = positions[keep] + offset
        ax.bar(
            xs,
            col[keep],
            width,
            color=look.color,
            hatch=look.hatch,
            edgecolor="black",
            linewidth=0.6,
            label=name,
            gid=SERIES_GID + name,
        )
        # Seeds that all agree give no visible range: no error bar then.
        spread = keep & (counts[:, j] > 1) & (highs[:, j] > lows[:, j])
        if spread.any():
            ax.errorbar(
                positions[spread] + offset,
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
    if logy or (logy is None and ylim is None and _spans_decades(drawn_h)):
        # On a linear axis the small bars would vanish next to the large ones.
        ax.set_yscale("log")
    if ylim is not None:
        ax.set_ylim(*ylim)
    # Fixed from here on, so that the marks below stay where they are drawn.
    ax.set_ylim(ax.get_ylim())
    _annotate_clipped(ax, drawn_x, drawn_h)
    for j, (name, look) in enumerate(zip(series, looks)):
        offset = (j - (len(hues) - 1) / 2) * width
        _mark_unseen(
            ax, name, look.color, [(x + offset, 0.0, v) for x, v in enumerate(values[:, j])]
        )
    if ylabel is None:
        ylabel = _short_name(column)
        if baseline is not None and normalize == "ratio":
            ylabel = f"{ylabel} normalised to {baseline}"
        elif baseline is not None:
            ylabel = f"speed-up over {baseline} ({ylabel})"
    ax.set_ylabel(ylabel)
    # Keys drawn from the styles, not from the bars: a series with no finite bar keeps its own.
    keys = [_key(look.color, look.hatch) for look in looks]
    _legend_and_title(ax, [list(zip(keys, series))], title)
    return fig


def _key(color: str, hatch: str, gid: str | None = None) -> Patch:
    """A legend key: a patch filled with ``color`` and ``hatch``, edged like the bars."""
    return Patch(facecolor=color, hatch=hatch, edgecolor="black", linewidth=0.6, gid=gid)


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
    ylim: tuple[float | None, float | None] | None = None,
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
        ylim: ``(bottom, top)``; a stack above ``top`` is cut at the axis and its total
            written on it (default: ``(0, 1)`` for fractions, else automatic).

    Seeds are averaged per part before stacking. Each part has the colour of its
    :mod:`xlat.styles` style; without ``hue`` also its hatch, with ``hue`` the bars take the
    hatch of their ``hue`` value. A stack too short to see is marked as in
    :func:`grouped_bars`; a part that no bar shows says so in the legend ("(0 everywhere)",
    "(at most ...)").

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
    part_looks = styles.styles_for(labels)
    series = [""] if hue is None else [str(h) for h in hues]
    hue_looks = styles.styles_for(series) if hue is not None else []
    # (x, bottom, height) of every segment of each part; (x, total) of each stack per series.
    segments: dict[str, list[tuple[float, float, float]]] = {label: [] for label in labels}
    stacks: dict[str, list[tuple[float, float]]] = {name: [] for name in series}
    for i, block in enumerate(blocks):
        for j, name in enumerate(series):
            xpos = i + (j - (len(hues) - 1) / 2) * width
            bottom = 0.0
            for label, look in zip(labels, part_looks):
                height = float(block.iloc[j][label])
                if not math.isfinite(height):
                    continue
                ax.bar(
                    xpos,
                    height,
                    width,
                    bottom=bottom,
                    color=look.color,
                    hatch=hue_looks[j].hatch if hue is not None else look.hatch,
                    edgecolor="black",
                    linewidth=0.6,
                    gid=SERIES_GID + name,
                )
                segments[label].append((xpos, bottom, height))
                bottom += height
            finite = [v for v in block.iloc[j][labels] if math.isfinite(v)]
            stacks[name].append((xpos, bottom if finite else math.nan))
    if average and groups:
        ax.axvline(len(groups) - 0.5, color="0.5", linestyle=":", linewidth=0.8)
    _set_group_ticks(ax, names)
    if ylabel is None:
        if normalize is True:
            ylabel = "fraction"
        elif normalize is False:
            ylabel = "count"
        else:
            ylabel = f"normalised to {normalize}"
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    elif normalize is True:
        ax.set_ylim(0, 1.0)
    ax.set_ylim(ax.get_ylim())  # fixed from here on, for the marks
    for name in series:
        _annotate_clipped(ax, [x for x, _ in stacks[name]], [t for _, t in stacks[name]])
        _mark_unseen(ax, name, "white", [(x, 0.0, total) for x, total in stacks[name]])

    # A part that no bar shows still has its legend entry, which says so.
    shown = []
    for label in labels:
        heights = [h for _, _, h in segments[label]]
        if any(_visible(ax, b, b + h) >= MARK_BELOW for _, b, h in segments[label]):
            shown.append(label)
        elif not any(h != 0 for h in heights):
            shown.append(f"{label} (0 everywhere)")
        else:
            shown.append(f"{label} (at most {_fmt_value(max(heights, key=abs))})")
    if hue is None:
        _legend_and_title(
            ax,
            [[(_key(k.color, k.hatch, KEY_PART_GID), text) for k, text in zip(part_looks, shown)]],
            title,
        )
    else:
        # The segments' colour tells the part, their hatch the bar's hue value.
        part_keys = [_key(k.color, "", KEY_COLOR_GID) for k in part_looks]
        hue_keys = [_key("white", k.hatch, KEY_HATCH_GID) for k in hue_looks]
        _legend_and_title(ax, [list(zip(part_keys, shown)), list(zip(hue_keys, series))], title)
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
    Each line has the colour and marker of its :mod:`xlat.styles` style.
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
    names = [str(s) for s in _ordered_unique(runs[hue_col]) if s in agg.index.get_level_values(0)]
    looks = styles.styles_for(names)
    handles = []
    xs_all: set[float] = set()
    for name, look in zip(names, looks):
        points = agg[agg.index.get_level_values(0).astype(str) == name].droplevel(0).sort_index()
        xs = points.index.to_numpy(dtype=float)
        xs_all.update(xs.tolist())
        (line,) = ax.plot(
            xs,
            points["mean"].to_numpy(),
            color=look.color,
            marker=look.marker,
            markersize=4,
            linewidth=1.4,
            label=name,
            gid=SERIES_GID + name,
        )
        if (points["count"] > 1).any():
            ax.fill_between(
                xs, points["min"].to_numpy(), points["max"].to_numpy(), color=look.color, alpha=0.2
            )
        handles.append(line)
    ax.xaxis.grid(True, color=_GRID_COLOR, linewidth=0.8)
    if logx:
        positive = [v for v in xs_all if v > 0]
        powers_of_two = positive and all(math.log2(v).is_integer() for v in positive)
        ax.set_xscale("log", base=2 if powers_of_two else 10)
        ticks = sorted(set(positive))
        # A tick at every x only where they read apart (a factor of 1.5 or more between
        # neighbours): series measured at nearby sizes keep the axis's own ticks.
        if ticks and len(ticks) <= 12 and all(b >= 1.5 * a for a, b in zip(ticks, ticks[1:])):
            ax.set_xticks(ticks)
            formatter = ScalarFormatter()
            formatter.set_scientific(False)
            ax.xaxis.set_major_formatter(formatter)
            ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(_short_name(x_col))
    ax.set_ylabel(ylabel if ylabel is not None else _short_name(column))
    _legend_and_title(ax, [list(zip(handles, names))] if hue is not None else [], title)
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
