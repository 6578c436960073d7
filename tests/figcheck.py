"""What a reader would miss or misread in a figure, found from its matplotlib objects.

:func:`problems` checks one figure, once drawn (constrained layout placed everything):

* every series has a visible mark in every group: a bar (or stack) at least
  :data:`MIN_VISIBLE` of the axis high, or a value mark (:data:`xlat.plots.MARK_GID`); every
  line a point inside the axes; every stacked part a visible segment somewhere, or a legend
  entry that says it has none;
* each series is drawn as its legend key shows it;
* legends lie inside the figure, and no title sits under or on a legend above the plot;
* group names are rotated only when they would not fit level, do not overlap, and take at most
  :data:`MAX_TICK_SHARE` of the figure's height; values written on the plot are at least
  :data:`MIN_FONT_PT` points.

:func:`style_problems` checks a set of figures together: one style per label, and no style for
two labels. Series are known by the ``gid`` tags :mod:`xlat.plots` sets.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from xlat import plots

#: A bar or stack shorter than this fraction of its axis' height cannot be seen.
MIN_VISIBLE = 0.01
MIN_FONT_PT = 7.0
MAX_TICK_SHARE = 0.25
_PX = 1.0  # tolerance of box comparisons, in pixels
_TICK_GAP_PX = 2.0


def _draw(fig: Figure):
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _legends(fig: Figure) -> list[Legend]:
    legends = list(fig.legends)
    legends += [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return legends


def _entries(legend: Legend) -> list[tuple[str, object]]:
    """``(label, drawn key)`` of a legend's non-blank entries."""
    handles = getattr(legend, "legend_handles", None) or getattr(legend, "legendHandles", [])
    return [
        (text.get_text(), handle)
        for text, handle in zip(legend.get_texts(), handles)
        if text.get_text() and handle is not None
    ]


def _series_of(gid: str | None, prefix: str) -> str | None:
    return gid[len(prefix) :] if gid and gid.startswith(prefix) else None


def problems(fig: Figure, name: str = "figure") -> list[str]:
    """Everything wrong with ``fig`` (empty: nothing), each prefixed with ``name``."""
    renderer = _draw(fig)
    found = _legend_problems(fig, renderer)
    for ax in fig.axes:
        found += _bar_problems(fig, ax, renderer)
        found += _line_problems(ax)
        found += _tick_problems(fig, ax, renderer)
        found += [
            f"the value {t.get_text()!r} is set in {t.get_fontsize():g} pt (< {MIN_FONT_PT:g})"
            for t in ax.texts
            if t.get_visible() and t.get_text() and t.get_fontsize() < MIN_FONT_PT
        ]
    return [f"{name}: {p}" for p in found]


def _legend_problems(fig: Figure, renderer) -> list[str]:
    found = []
    box = fig.bbox
    titles = [getattr(fig, "_suptitle", None)] + [ax.title for ax in fig.axes]
    titles = [t for t in titles if t is not None and t.get_visible() and t.get_text()]
    for legend in _legends(fig):
        lb = legend.get_window_extent(renderer)
        if (
            lb.x0 < box.x0 - _PX
            or lb.y0 < box.y0 - _PX
            or lb.x1 > box.x1 + _PX
            or lb.y1 > box.y1 + _PX
        ):
            found.append(f"the legend {lb.bounds} reaches outside the figure {box.bounds}")
        above_plot = all(lb.y0 >= ax.bbox.y1 - _PX for ax in fig.axes)
        for title in titles:
            tb = title.get_window_extent(renderer)
            if tb.overlaps(lb) or (above_plot and tb.y1 <= lb.y0 + _PX):
                found.append(f"the title {title.get_text()!r} sits under or on the legend")
    return found


def _visible_share(ax: Axes, patch: Rectangle, renderer) -> float:
    """The fraction of the axis' height that ``patch`` shows."""
    if not patch.get_visible():
        return 0.0
    pb = patch.get_window_extent(renderer)
    ab = ax.bbox
    if not all(math.isfinite(v) for v in (pb.y0, pb.y1)):
        return 0.0
    low, high = max(min(pb.y0, pb.y1), ab.y0), min(max(pb.y0, pb.y1), ab.y1)
    return max(0.0, high - low) / ab.height


def _x_center(patch: Rectangle) -> float:
    return patch.get_x() + patch.get_width() / 2


def _marks(ax: Axes) -> dict[str, list[float]]:
    """Series -> x (data) of each of its value marks that shows (inside the axes' height)."""
    marks: dict[str, list[float]] = defaultdict(list)
    for line in ax.lines:
        series = _series_of(line.get_gid(), plots.MARK_GID)
        if series is None or not line.get_visible() or line.get_markersize() <= 0:
            continue
        for x, y in zip(line.get_xdata(), line.get_ydata()):
            if -0.02 <= y <= 1.02:  # axes fraction
                marks[series].append(float(x))
    return marks


def _look_of(handle) -> tuple:
    """How a drawn key or series looks: ``("bar", colour, hatch)`` or ``("line", colour,
    marker)``."""
    if isinstance(handle, Line2D):
        return ("line", to_hex(handle.get_color()), str(handle.get_marker()))
    return ("bar", to_hex(handle.get_facecolor()), str(handle.get_hatch() or ""))


def _bar_problems(fig: Figure, ax: Axes, renderer) -> list[str]:
    bars: dict[str, list[Rectangle]] = defaultdict(list)
    for patch in ax.patches:
        series = _series_of(patch.get_gid(), plots.SERIES_GID)
        if series is not None:
            bars[series].append(patch)
    # Bars of other code: a labelled BarContainer is a series.
    for container in ax.containers:
        label = container.get_label()
        if label and not label.startswith("_"):
            bars.setdefault(label, [])
            for patch in container.patches:
                if patch.get_gid() is None:
                    bars[label].append(patch)
    keys = [entry for legend in _legends(fig) for entry in _entries(legend)]
    parts = [
        (label, k) for label, k in keys if k.get_gid() in (plots.KEY_COLOR_GID, plots.KEY_PART_GID)
    ]
    series_keys = {
        label: k
        for label, k in keys
        if isinstance(k, Rectangle) and k.get_gid() not in (plots.KEY_COLOR_GID, plots.KEY_PART_GID)
    }
    if not bars and not series_keys:
        return []
    found = []
    marks = _marks(ax)
    names = set(bars) | set(series_keys) | set(marks)
    groups = [x for x in ax.get_xticks() if ax.get_xlim()[0] <= x <= ax.get_xlim()[1]]
    labels = {x: t.get_text() for x, t in zip(ax.get_xticks(), ax.get_xticklabels())}
    for series in sorted(names):
        for g in groups:
            near = [p for p in bars.get(series, []) if abs(_x_center(p) - g) < 0.5]
            seen = sum(_visible_share(ax, p, renderer) for p in near)
            marked = any(abs(x - g) < 0.5 for x in marks.get(series, []))
            if seen < MIN_VISIBLE and not marked:
                what = f"series {series!r}" if series else "the bar"
                found.append(
                    f"{what} has no visible bar or mark in group {labels.get(g, g)!r} "
                    f"({seen:.1%} of the axis)"
                )
        key = series_keys.get(series)
        if key is None:
            continue
        want = _look_of(key)
        for patch in bars.get(series, []):
            got = _look_of(patch)
            if key.get_gid() == plots.KEY_HATCH_GID:
                ok = got[2] == want[2]
            else:
                ok = got == want
            if not ok:
                found.append(f"series {series!r} is drawn {got[1:]} but its key shows {want[1:]}")
                break
    for label, key in parts:
        if plots.PART_NOT_SEEN.search(label):
            continue
        color = to_hex(key.get_facecolor())
        seen = max(
            (
                _visible_share(ax, p, renderer)
                for ps in bars.values()
                for p in ps
                if to_hex(p.get_facecolor()) == color
            ),
            default=0.0,
        )
        if seen < MIN_VISIBLE:
            found.append(f"part {label!r} shows in no bar and its legend entry does not say so")
    return found


def _line_problems(ax: Axes) -> list[str]:
    found = []
    to_axes = ax.transData + ax.transAxes.inverted()
    for line in ax.lines:
        series = _series_of(line.get_gid(), plots.SERIES_GID)
        if series is None:
            continue
        xy = np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float)
        xy = xy[np.isfinite(xy).all(axis=1)]
        inside = (
            [(0 <= a <= 1 and 0 <= b <= 1) for a, b in to_axes.transform(xy)] if len(xy) else []
        )
        if not line.get_visible() or not any(inside):
            found.append(f"line {series!r} has no point inside the axes")
    return found


def _tick_problems(fig: Figure, ax: Axes, renderer) -> list[str]:
    ticks = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    if not ticks:
        return []
    found = []
    boxes = [t.get_window_extent(renderer) for t in ticks]
    height = max(b.y1 for b in boxes) - min(b.y0 for b in boxes)
    if height > MAX_TICK_SHARE * fig.bbox.height:
        found.append(f"the group names take {height / fig.bbox.height:.0%} of the figure's height")
    xs = [ax.transData.transform((t.get_position()[0], 0))[0] for t in ticks]
    level = [
        max(
            renderer.get_text_width_height_descent(line, t.get_fontproperties(), ismath=False)[0]
            for line in t.get_text().split("\n")
        )
        for t in ticks
    ]
    fit = all(
        (wa + wb) / 2 + _TICK_GAP_PX <= xb - xa
        for (xa, wa), (xb, wb) in zip(zip(xs, level), zip(xs[1:], level[1:]))
    )
    if any(t.get_rotation() % 180 for t in ticks):
        if fit:
            found.append("the group names are rotated, though they fit level")
    elif any(a.x1 > b.x0 + _PX for a, b in zip(boxes, boxes[1:])):
        found.append("level group names overlap")
    return found


@dataclass(frozen=True)
class Use:
    """One legend entry: the figure's name, the label and how its key looks."""

    figure: str
    label: str
    look: tuple


def uses(name: str, fig: Figure) -> list[Use]:
    """Every legend entry of ``fig``: a full look ``("bar", colour, hatch)``/``("line",
    colour, marker)``, or a partial one ``("color", colour)``/``("hatch", hatch)`` for a
    stacked figure's keys."""
    _draw(fig)
    found = []
    for legend in _legends(fig):
        for label, key in _entries(legend):
            label = plots.PART_NOT_SEEN.sub("", label)
            look = _look_of(key)
            if key.get_gid() == plots.KEY_COLOR_GID:
                look = ("color", look[1])
            elif key.get_gid() == plots.KEY_HATCH_GID:
                look = ("hatch", look[2])
            found.append(Use(name, label, look))
    return found


def style_problems(figures: Iterable[tuple[str, Figure]]) -> list[str]:
    """Labels drawn in two styles, and styles drawn for two labels, over ``figures``."""
    all_uses = [u for name, fig in figures for u in uses(name, fig)]
    full = [u for u in all_uses if u.look[0] in ("bar", "line")]
    found = []
    by_label: dict[str, dict[tuple, list[str]]] = defaultdict(lambda: defaultdict(list))
    by_look: dict[tuple, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for u in full:
        by_label[u.label][u.look].append(u.figure)
        by_look[u.look][u.label].append(u.figure)
    for label, looks in sorted(by_label.items()):
        for kind in ("bar", "line"):
            mine = {look: figs for look, figs in looks.items() if look[0] == kind}
            if len(mine) > 1:
                found.append(f"{label!r} is drawn in {len(mine)} styles: {_where(mine)}")
        colors = {look[1] for look in looks}
        if len(colors) > 1:
            found.append(f"{label!r} has {len(colors)} colours: {sorted(colors)}")
    for look, labels in sorted(by_look.items()):
        if len(labels) > 1:
            found.append(f"{sorted(labels)} share the style {look}: {_where(labels)}")
    # A stacked figure's partial keys: as the label's full style shows it, and in one figure
    # never the same for two labels.
    for u in all_uses:
        if u.look[0] not in ("color", "hatch"):
            continue
        index = 1 if u.look[0] == "color" else 2
        mine = {look[index] for look in by_label.get(u.label, {}) if look[0] == "bar"}
        if mine and u.look[1] not in mine:
            found.append(f"{u.figure}: {u.label!r}'s key shows {u.look}, its bars {sorted(mine)}")
    partial: dict[tuple[str, tuple], set[str]] = defaultdict(set)
    for u in all_uses:
        if u.look[0] in ("color", "hatch"):
            partial[(u.figure, u.look)].add(u.label)
    for (figure, look), labels in sorted(partial.items()):
        if len(labels) > 1:
            found.append(f"{figure}: {sorted(labels)} share the key {look}")
    return found


def _where(groups: dict) -> str:
    return "; ".join(f"{k} in {', '.join(sorted(set(v)))}" for k, v in groups.items())


def check(figures: Sequence[tuple[str, Figure]]) -> list[str]:
    """:func:`problems` of each figure and :func:`style_problems` of them all."""
    found = [p for name, fig in figures for p in problems(fig, name)]
    return found + style_problems(figures)
