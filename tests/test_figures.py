"""The figure test: every figure of every reproduction (at tiny scale) and of the default report
shows every value, keeps its legend inside the figure, and draws each label in one style that no
other label has (tests/figcheck.py). First, that the checker fails on each of these faults."""

from __future__ import annotations

import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import figcheck
import frames
from xlat import experiments, plots, report, styles

IDS = [r.id for r in experiments.reproductions()]


def bars(values: dict[tuple[str, str], float], **kwargs) -> Figure:
    """Grouped bars of workloads x labels (``values[(workload, label)]``), metric ``m``."""
    rows = [
        {"status": "ok", "workload": w, "label": label, "m": v} for (w, label), v in values.items()
    ]
    return plots.grouped_bars(pd.DataFrame(rows), "m", **kwargs)


ZERO = {("a", "Radix"): 2.0, ("a", "ECH"): 0.0, ("b", "Radix"): 3.0, ("b", "ECH"): 4.0}


def drop_marks(fig: Figure) -> None:
    """Remove every value mark and value written on the plot (what the figures did before)."""
    ax = fig.axes[0]
    for line in list(ax.lines):
        if (line.get_gid() or "").startswith(plots.MARK_GID):
            line.remove()
    for text in list(ax.texts):
        text.remove()


def test_a_zero_bar_gets_a_mark_and_its_value() -> None:
    fig = bars(ZERO, summary="mean")
    (ax,) = fig.axes
    (mark,) = [line for line in ax.lines if line.get_gid() == plots.MARK_GID + "ECH"]
    assert len(mark.get_xdata()) == 1 and mark.get_markerfacecolor() == styles.style("ECH").color
    assert [t.get_text() for t in ax.texts] == ["0"]
    assert figcheck.problems(fig) == []


def test_the_checker_fails_on_a_vanished_zero_bar() -> None:
    fig = bars(ZERO, summary="mean")
    drop_marks(fig)
    assert figcheck.problems(fig, "zero") == [
        "zero: series 'ECH' has no visible bar or mark in group 'a' (0.0% of the axis)"
    ]


def test_near_zero_missing_and_log_hidden_values_are_marked() -> None:
    # 1e-4 beside 10 on a linear axis; a missing value; on a log axis, 0 and a negative.
    values = {("a", "Radix"): 10.0, ("a", "ECH"): 1e-4, ("b", "Radix"): 10.0}
    fig = bars(values, geomean=False, logy=False)
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["1.00e-04", "n/a"]
    assert figcheck.problems(fig) == []
    drop_marks(fig)
    assert len(figcheck.problems(fig)) == 2
    values = {("a", "Radix"): 10.0, ("a", "ECH"): 0.0, ("b", "Radix"): 1e-3, ("b", "ECH"): -1.0}
    fig = bars(values, geomean=False, logy=True)
    assert fig.axes[0].get_yscale() == "log"
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["-1", "0"]
    assert figcheck.problems(fig) == []


def test_a_stack_or_part_that_cannot_be_seen_is_marked_or_named() -> None:
    heights = {("a", "Radix"): 2.0, ("a", "ECH"): 0.0, ("b", "Radix"): 1.0, ("b", "ECH"): 3.0}
    rows = [
        {"status": "ok", "workload": w, "label": label, "x": x, "y": 0.0}
        for (w, label), x in heights.items()
    ]
    fig = plots.stacked_bars(
        pd.DataFrame(rows), {"L1": "x", "L2": "y"}, hue="label", normalize=False
    )
    legend = [t.get_text() for t in fig.legends[0].get_texts() if t.get_text()]
    # Matplotlib lists a legend column by column: parts in the first row, hue values below.
    assert legend == ["L1", "Radix", "L2 (0 everywhere)", "ECH"]
    assert figcheck.problems(fig) == []
    for text in fig.legends[0].get_texts():
        text.set_text(plots.PART_NOT_SEEN.sub("", text.get_text()))
    drop_marks(fig)
    assert figcheck.problems(fig) == [
        "figure: series 'ECH' has no visible bar or mark in group 'a' (0.0% of the axis)",
        "figure: part 'L2' shows in no bar and its legend entry does not say so",
    ]


def test_the_checker_fails_on_a_style_shared_by_two_systems(monkeypatch) -> None:
    radix = bars({("a", "Radix"): 1.0, ("a", "ECH"): 2.0})
    assert figcheck.style_problems([("radix", radix)]) == []
    # Another figure that draws 4K as Radix is drawn elsewhere (as figures with per-figure
    # colour cycles did), and Radix in a second style.
    real = styles.styles_for
    monkeypatch.setattr(styles, "styles_for", lambda labels: real(["Radix", "4K"]))
    other = bars({("a", "4K"): 1.0, ("a", "Radix"): 2.0})
    found = figcheck.style_problems([("radix", radix), ("other", other)])
    assert any("['4K', 'Radix'] share the style" in p for p in found), found
    assert any("'Radix' is drawn in 2 styles" in p for p in found), found


def test_the_checker_fails_on_a_legend_outside_the_figure_or_over_the_title() -> None:
    fig = Figure(figsize=(4, 3))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.bar([0], [1.0], label="Radix", gid=plots.SERIES_GID + "Radix")
    ax.set_xticks([0])
    ax.set_xticklabels(["a"])
    fig.legend(loc="lower left", bbox_to_anchor=(0.9, 0.9))
    assert any("reaches outside the figure" in p for p in figcheck.problems(fig))
    # Utopia Fig 1 set its title on the Axes, under the legend above the plot.
    fig = plots.stacked_bars(frames.results(), {"L1": "walk_refs_l1"}, hue="label")
    assert figcheck.problems(fig) == []
    fig.axes[0].set_title("Hit location of page-walk requests")
    assert any("sits under or on the legend" in p for p in figcheck.problems(fig))


def test_the_checker_fails_on_needlessly_rotated_names_and_tiny_values() -> None:
    fig = bars({("a", "Radix"): 1.0, ("b", "Radix"): 5.0}, ylim=(0, 2))
    assert figcheck.problems(fig) == []
    for label in fig.axes[0].get_xticklabels():
        label.set_rotation(35)
    fig.axes[0].texts[0].set_fontsize(6)
    found = figcheck.problems(fig)
    assert "figure: the group names are rotated, though they fit level" in found
    assert "figure: the value '5' is set in 6 pt (< 7)" in found


def test_every_label_has_its_own_style() -> None:
    known = styles.styles_for(styles.KNOWN)
    assert len({(s.color, s.hatch) for s in known}) == len(known)
    assert len({(s.color, s.marker) for s in known}) == len(known)
    # An unknown label: never a known style, the same whatever else is drawn, and distinct
    # from the other labels of its figure even where their hashes meet: as many labels as
    # there are free slots (their hashes must meet), and enough free slots for a sweep's
    # labels beside the known ones.
    assert len(styles._FREE) >= 48, len(styles._FREE)
    others = [f"l2tlb={n}" for n in range(len(styles._FREE))]
    looks = styles.styles_for(others)
    assert len(set(looks)) == len(others)
    assert not set(looks) & set(known)
    assert styles.style("l2tlb=7") == styles.styles_for(["Radix", "l2tlb=7"])[1]


@pytest.mark.engine
@pytest.mark.parametrize("reproduction_id", IDS)
def test_every_figure_of_a_reproduction_shows_every_value(reproduction_id, tiny_reproduction):
    outcome = tiny_reproduction(reproduction_id)
    found = [
        problem
        for n, (_caption, fig) in enumerate(outcome.analysis.figures, 1)
        for problem in figcheck.problems(fig, f"{reproduction_id}/fig{n}")
    ]
    assert found == []


def test_every_default_report_figure_shows_every_value() -> None:
    df = frames.results(seeds=(1, 2))
    found = [
        p for caption, fig in report.default_figures(df) for p in figcheck.problems(fig, caption)
    ]
    assert found == []


@pytest.mark.engine
def test_no_label_is_drawn_in_two_styles_and_no_style_for_two_labels(tiny_reproduction):
    figures = [
        (f"{rid}/fig{n}", fig)
        for rid in IDS
        for n, (_caption, fig) in enumerate(tiny_reproduction(rid).analysis.figures, 1)
    ]
    figures += report.default_figures(frames.results())
    assert figcheck.style_problems(figures) == []
