"""Figures of sweep results (xlat.plots): the values drawn, not just that something is drawn.

Bar heights are read back from the Axes' rectangles; error bars from the errorbar
LineCollection. No engine needed: the results are synthetic DataFrames (tests/frames.py).
"""

from __future__ import annotations

import io
import math

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

import frames
from xlat import plots

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def bar_heights(fig: Figure) -> list[float]:
    """Heights of the bars of the figure's only Axes, left to right."""
    (ax,) = fig.axes
    bars = sorted(ax.patches, key=lambda p: p.get_x() + p.get_width() / 2)
    return [p.get_height() for p in bars]


def error_ranges(fig: Figure) -> np.ndarray:
    """``(low, high)`` of every error bar of the figure's only Axes, left to right."""
    (ax,) = fig.axes
    segments = [
        seg for c in ax.collections if isinstance(c, LineCollection) for seg in c.get_segments()
    ]
    segments.sort(key=lambda seg: seg[0][0])
    return np.array([(seg[:, 1].min(), seg[:, 1].max()) for seg in segments]).reshape(-1, 2)


def tick_labels(fig: Figure) -> list[str]:
    (ax,) = fig.axes
    return [t.get_text() for t in ax.get_xticklabels()]


def two_by_two(values: dict[tuple[str, str], float]) -> pd.DataFrame:
    """Results of workloads ``a``, ``b`` x labels ``base``, ``new`` with one metric ``m``."""
    rows = [
        {"status": "ok", "workload": w, "label": lab, "seed": 1, "stats.summary.m": v}
        for (w, lab), v in values.items()
    ]
    return pd.DataFrame(rows)


# a: new = 4x base; b: new = 0.5x base.
HAND = {("a", "base"): 2.0, ("a", "new"): 8.0, ("b", "base"): 10.0, ("b", "new"): 5.0}


def test_resolve_column_accepts_full_and_short_names() -> None:
    df = frames.results()
    assert plots.resolve_column(df, "stats.summary.ipc") == "stats.summary.ipc"
    assert plots.resolve_column(df, "ipc") == "stats.summary.ipc"
    assert plots.resolve_column(df, "mmu.l2tlb.unified.entries") == frames.ENTRIES_KEY
    with pytest.raises(KeyError, match="stats.summary.nope"):
        plots.resolve_column(df, "nope")


def test_grouped_bars_draws_raw_values_and_their_geometric_mean() -> None:
    df = frames.results()
    fig = plots.grouped_bars(df, "ipc")
    assert tick_labels(fig) == [*frames.WORKLOADS, "GMEAN"]
    expected = []
    for w in frames.WORKLOADS:
        expected += [1e6 / frames.cycles_of(w, lab, 1) for lab in frames.LABELS]
    for j in range(len(frames.LABELS)):
        per_workload = expected[j::3]
        expected_gmean = math.exp(sum(math.log(v) for v in per_workload) / 3)
        expected.append(expected_gmean)
    assert bar_heights(fig) == pytest.approx(expected)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == list(frames.LABELS)


def test_grouped_bars_ratio_normalisation_to_a_baseline() -> None:
    fig = plots.grouped_bars(two_by_two(HAND), "m", baseline="base", normalize="ratio")
    # a: base 1, new 4; b: base 1, new 0.5; GMEAN: 1, sqrt(4 * 0.5).
    assert bar_heights(fig) == pytest.approx([1.0, 4.0, 1.0, 0.5, 1.0, math.sqrt(2.0)])
    assert tick_labels(fig) == ["a", "b", "GMEAN"]


def test_grouped_bars_inverse_normalisation_is_a_speedup() -> None:
    fig = plots.grouped_bars(two_by_two(HAND), "m", baseline="base", normalize="inverse")
    # base / value: a: 2/8, b: 10/5.
    assert bar_heights(fig) == pytest.approx([1.0, 0.25, 1.0, 2.0, 1.0, math.sqrt(0.5)])
    assert "speed-up over base" in fig.axes[0].get_ylabel()


def test_grouped_bars_arithmetic_mean_summary_allows_zero() -> None:
    values = {("a", "base"): 0.0, ("a", "new"): 3.0, ("b", "base"): 2.0, ("b", "new"): 5.0}
    fig = plots.grouped_bars(two_by_two(values), "m", summary="mean")
    assert tick_labels(fig) == ["a", "b", "AVG"]
    assert bar_heights(fig) == pytest.approx([0.0, 3.0, 2.0, 5.0, 1.0, 4.0])
    with pytest.raises(ValueError, match='summary="mean"'):
        plots.grouped_bars(two_by_two(values), "m", summary="gmean")


def test_grouped_bars_without_summary_group() -> None:
    fig = plots.grouped_bars(two_by_two(HAND), "m", geomean=False)
    assert tick_labels(fig) == ["a", "b"]
    assert bar_heights(fig) == pytest.approx([2.0, 8.0, 10.0, 5.0])


def test_grouped_bars_averages_seeds_and_draws_min_max_error_bars() -> None:
    df = frames.results(seeds=(1, 2, 3))
    fig = plots.grouped_bars(df, "cycles", geomean=False)
    expected_means, expected_ranges = [], []
    for w in frames.WORKLOADS:
        for lab in frames.LABELS:
            seeds = [frames.cycles_of(w, lab, s) for s in (1, 2, 3)]
            expected_means.append(sum(seeds) / 3)
            expected_ranges.append((min(seeds), max(seeds)))
    assert bar_heights(fig) == pytest.approx(expected_means)
    np.testing.assert_allclose(error_ranges(fig), expected_ranges)


def test_grouped_bars_single_seed_has_no_error_bars() -> None:
    fig = plots.grouped_bars(frames.results(), "cycles")
    assert error_ranges(fig).shape == (0, 2)
    # Several seeds that agree exactly (MPKI does not depend on the seed here): no range.
    fig = plots.grouped_bars(frames.results(seeds=(1, 2)), "l2tlb_mpki", summary="mean")
    assert error_ranges(fig).shape == (0, 2)


def test_grouped_bars_normalised_error_bars_follow_the_baseline_mean() -> None:
    df = frames.results(seeds=(1, 2), workloads=("gups",), labels=("l2tlb=1536", "l2tlb=3072"))
    fig = plots.grouped_bars(df, "cycles", baseline="l2tlb=1536", normalize="inverse")
    base = [frames.cycles_of("gups", "l2tlb=1536", s) for s in (1, 2)]
    other = [frames.cycles_of("gups", "l2tlb=3072", s) for s in (1, 2)]
    base_mean = sum(base) / 2
    np.testing.assert_allclose(
        error_ranges(fig),
        [
            (base_mean / max(base), base_mean / min(base)),
            (base_mean / max(other), base_mean / min(other)),
        ],
    )
    assert bar_heights(fig)[:2] == pytest.approx([1.0, base_mean / (sum(other) / 2)])


def test_grouped_bars_ignores_failed_runs() -> None:
    failed = [frames.failed_row("gups", "l2tlb=1536", 9, "boom") | {"stats.summary.ipc": 1e9}]
    ok_only = plots.grouped_bars(frames.results(), "ipc")
    with_failed = plots.grouped_bars(frames.results(failed=failed), "ipc")
    assert bar_heights(with_failed) == pytest.approx(bar_heights(ok_only))


def test_grouped_bars_annotates_bars_clipped_by_ylim() -> None:
    fig = plots.grouped_bars(two_by_two(HAND), "m", baseline="base", ylim=(0, 2))
    (ax,) = fig.axes
    assert ax.get_ylim() == (0, 2)
    # Only the 4.0 bar of workload a exceeds the axis.
    assert [t.get_text() for t in ax.texts] == ["4"]


def test_grouped_bars_style_grid_and_one_style_per_series() -> None:
    fig = plots.grouped_bars(frames.results(), "ipc")
    (ax,) = fig.axes
    assert all(line.get_visible() for line in ax.get_ygridlines())
    looks = {}
    for patch in ax.patches:
        series = patch.get_gid().removeprefix(plots.SERIES_GID)
        looks.setdefault(series, set()).add((patch.get_facecolor(), patch.get_hatch()))
    assert sorted(looks) == sorted(frames.LABELS)
    assert all(len(v) == 1 for v in looks.values())
    assert len({next(iter(v)) for v in looks.values()}) == len(frames.LABELS)


def test_the_legend_reads_row_by_row_in_the_order_of_the_series() -> None:
    labels = [f"ME-HPT{thp} way {i}" for thp in ("", " THP") for i in range(3)]
    rows = [{"status": "ok", "workload": "w", "label": label, "m": 1.0} for label in labels]
    fig = plots.grouped_bars(pd.DataFrame(rows), "m")
    fig.canvas.draw()
    texts = fig.legends[0].get_texts()
    boxes = [t.get_window_extent() for t in texts]
    # Top row first, left to right: three a row (six entries spread evenly over two rows).
    read = [
        t.get_text() for t, _ in sorted(zip(texts, boxes), key=lambda tb: (-tb[1].y0, tb[1].x0))
    ]
    assert read == labels
    assert len({round(b.y0) for b in boxes}) == 2


def names_drawn(names: list[str]) -> list[tuple[str, float]]:
    """The group names of a grouped-bar figure of ``names``: text and rotation."""
    rows = [{"status": "ok", "workload": n, "label": "x", "m": 1.0} for n in names]
    fig = plots.grouped_bars(pd.DataFrame(rows), "m", geomean=False)
    return [(t.get_text(), t.get_rotation()) for t in fig.axes[0].get_xticklabels()]


def test_group_names_stay_level_wrap_or_rotate_only_when_they_must() -> None:
    # Few names fit level, however long one of them is (gandhi-fig12's "streamcluster").
    assert names_drawn(["canneal", "streamcluster", "AVG"]) == [
        ("canneal", 0),
        ("streamcluster", 0),
        ("AVG", 0),
    ]
    # Utopia Fig 17's mixes: broken after "+" into a few level lines, not rotated.
    mixes = [f"m{i}: sssp+xsbench+kmer+tc" for i in range(1, 7)]
    drawn = names_drawn(mixes)
    assert all(rotation == 0 for _, rotation in drawn)
    assert [text.replace("\n", "") for text, _ in drawn] == mixes
    assert all(1 < text.count("\n") + 1 <= 3 for text, _ in drawn)
    # Many long names with nowhere to break: rotated.
    drawn = names_drawn([f"benchmark{i:02d}withalongname" for i in range(12)])
    assert all(rotation == 35 for _, rotation in drawn)


def test_grouped_bars_rejects_bad_arguments() -> None:
    df = two_by_two(HAND)
    with pytest.raises(ValueError, match="baseline 'nope'"):
        plots.grouped_bars(df, "m", baseline="nope")
    with pytest.raises(ValueError, match="normalize"):
        plots.grouped_bars(df, "m", baseline="base", normalize="log")
    with pytest.raises(KeyError, match="system"):
        plots.grouped_bars(df, "m", hue="system")


WALK_PARTS = (
    ("L1", "walk_refs_l1"),
    ("L2", "walk_refs_l2"),
    ("LLC", "walk_refs_llc"),
    ("DRAM", "walk_refs_dram"),
)


def stack_totals(fig: Figure) -> list[float]:
    """Sum of the stacked segments of every bar, left to right."""
    totals: dict[float, float] = {}
    for patch in fig.axes[0].patches:
        x = round(patch.get_x() + patch.get_width() / 2, 6)
        totals[x] = totals.get(x, 0.0) + patch.get_height()
    return [totals[x] for x in sorted(totals)]


def test_stacked_bars_fractions_sum_to_one() -> None:
    fig = plots.stacked_bars(frames.results(), dict(WALK_PARTS), hue="label")
    assert tick_labels(fig) == [*frames.WORKLOADS, "AVG"]
    totals = stack_totals(fig)
    assert len(totals) == 4 * 3
    assert totals == pytest.approx([1.0] * 12)
    # Bottom segment of the first bar: L1 share of gups at l2tlb=1536 = 40 / (40+30+20+30).
    first = min(fig.axes[0].patches, key=lambda p: (p.get_x(), p.get_y()))
    assert first.get_height() == pytest.approx(40 / 120)


def test_stacked_bars_normalised_to_a_baseline_total() -> None:
    df = frames.results(workloads=("gups",))
    fig = plots.stacked_bars(df, dict(WALK_PARTS), hue="label", normalize="l2tlb=1536")
    totals = stack_totals(fig)
    # Totals: 40*size + 30 + 20 + 10*(4-size) -> 120, 150, 180 over the baseline's 120.
    assert totals[:3] == pytest.approx([1.0, 150 / 120, 180 / 120])


def test_stacked_bars_raw_counts_without_hue() -> None:
    df = frames.results(seeds=(1, 2), labels=("l2tlb=3072",))
    fig = plots.stacked_bars(df, dict(WALK_PARTS), normalize=False, average=False)
    assert stack_totals(fig) == pytest.approx([150.0] * 3)
    assert tick_labels(fig) == list(frames.WORKLOADS)


def test_lines_plot_the_mean_over_a_swept_parameter() -> None:
    # Rows in descending parameter order: the line must still go left to right.
    df = frames.results(seeds=(1, 2)).iloc[::-1]
    fig = plots.lines(df, "mmu.l2tlb.unified.entries", "cycles", logx=True)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel() == "mmu.l2tlb.unified.entries"
    legend = [t.get_text() for t in ax.get_figure().legends[0].get_texts()]
    assert sorted(legend) == sorted(frames.WORKLOADS)
    assert len(ax.get_lines()) == len(frames.WORKLOADS)
    for line, workload in zip(ax.get_lines(), legend):
        xs, ys = line.get_data()
        assert list(xs) == [1536, 3072, 6144]
        expected = [
            sum(frames.cycles_of(workload, lab, s) for s in (1, 2)) / 2 for lab in frames.LABELS
        ]
        assert list(ys) == pytest.approx(expected)


def test_lines_rejects_a_non_numeric_parameter() -> None:
    df = frames.results().assign(**{"param.mmu.scheme": "radix"})
    with pytest.raises(TypeError, match="param.mmu.scheme"):
        plots.lines(df, "mmu.scheme", "ipc")


def test_figures_leave_no_pyplot_state() -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plots.grouped_bars(frames.results(), "ipc")
    plots.stacked_bars(frames.results(), dict(WALK_PARTS))
    plots.lines(frames.results(), "mmu.l2tlb.unified.entries", "ipc")
    assert plt.get_fignums() == before


def test_save_writes_png_and_pdf(tmp_path) -> None:
    fig = plots.grouped_bars(frames.results(), "ipc")
    png = plots.save(fig, tmp_path / "sub" / "ipc.png")
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    image = matplotlib.image.imread(io.BytesIO(data), format="png")
    # 8 x 3.6 inches at 150 dpi (constrained layout keeps the canvas size).
    assert image.shape[:2] == (540, 1200)
    assert np.ptp(image[..., :3]) > 0  # not a blank canvas
    pdf = plots.save(fig, tmp_path / "ipc.pdf")
    assert pdf.read_bytes().startswith(b"%PDF")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ipc.pdf", "sub"]
    with pytest.raises(ValueError, match=".svg"):
        plots.save(fig, tmp_path / "ipc.svg")


def test_long_legends_fit_and_decades_get_a_log_axis() -> None:
    # Six long labels and values 10^5 apart: a legend in one row would not fit the figure
    # (matplotlib then gives up on the layout, which the test configuration makes an error).
    labels = [f"baseline-radix entries={e} walkers={w}" for e in (768, 1536, 3072) for w in (1, 2)]
    rows = [
        {"status": "ok", "workload": w, "label": label, "stats.summary.ipc": (i + 1) * scale}
        for w, scale in (("gups", 1000.0), ("bfs", 0.01))
        for i, label in enumerate(labels)
    ]
    fig = plots.grouped_bars(pd.DataFrame(rows), "ipc", title="A title above the legend")
    plots.png_bytes(fig)
    (legend,) = fig.legends
    assert legend.get_title().get_text() == "A title above the legend"
    assert fig.axes[0].get_yscale() == "log"
    close = plots.grouped_bars(pd.DataFrame(rows[:6]), "ipc")
    assert close.axes[0].get_yscale() == "linear"
