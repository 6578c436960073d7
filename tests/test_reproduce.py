"""Every reproduction at tiny scale: runs, draws its figures, and compares with the paper."""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path

import matplotlib.image
import pandas as pd
import pytest

import xlat
from xlat import cli, experiments
from xlat.sweep import SweepStatus

pytestmark = pytest.mark.engine

IDS = [r.id for r in experiments.reproductions()]


def test_every_published_value_belongs_to_a_reproduction_and_has_a_source() -> None:
    table = experiments.published()
    assert set(table["reproduction"]) <= set(IDS)
    assert table["source"].str.len().min() > 20
    assert not table.duplicated(["reproduction", "key"]).any()


def test_every_reproduction_states_a_direction() -> None:
    for rep in experiments.reproductions():
        assert len(rep.direction) > 20, rep.id
        assert set(rep.direction_not_shown) <= set(experiments.SCALES), rep.id
        assert all(len(reason) > 20 for reason in rep.direction_not_shown.values()), rep.id


def test_ascending_is_the_order_a_direction_checks() -> None:
    ascending = experiments.ascending
    assert ascending(1.0, 2.0, 2.0)
    assert not ascending(1.0, 2.0, 2.0, strict=True)
    assert ascending(1.004, 1.0, slack=0.005)
    assert not ascending(1.01, 1.0, slack=0.005)
    # A quantity the run could not compute must make its direction fail, not pass unnoticed.
    assert not ascending(1.0, math.nan)
    assert not ascending(math.nan, 1.0, slack=1.0)


@pytest.mark.parametrize("reproduction_id", IDS)
def test_reproduction_at_tiny_scale(reproduction_id: str, tiny_reproduction) -> None:
    outcome = tiny_reproduction(reproduction_id)
    rep = outcome.reproduction
    df = outcome.results
    expected_runs = len(rep.systems) * len(rep.workloads["tiny"])
    assert len(df) == expected_runs and set(df["status"]) == {"ok"}
    assert outcome.figures, "no figure drawn"
    for png in outcome.figures:
        image = matplotlib.image.imread(png)
        assert image.shape[0] > 100 and image.shape[1] > 100
    table = outcome.comparison
    assert list(table.columns) == ["quantity", "ours", "paper", "ratio", "source"]
    assert len(table) == len(experiments.published(reproduction_id))
    markdown = (outcome.out / "comparison.md").read_text()
    keys = experiments.published(reproduction_id)["key"]
    for key, row in zip(keys, table.itertuples(index=False)):
        if key in outcome.analysis.undefined:
            # An undefined value is shown as such, with its reason, never as a number.
            assert row.ours is not None and math.isnan(row.ours), row.quantity
            assert f"* n/a: {row.quantity}: {outcome.analysis.undefined[key]}" in markdown
            continue
        assert row.ours is not None and math.isfinite(row.ours), row.quantity
        assert math.isclose(row.ratio, row.ours / row.paper)
    html = outcome.report.read_text()
    assert html.count("<img") == len(outcome.figures)
    assert "ratio" in html
    # The paper's direction must hold at tiny scale too, unless the reproduction marks it as
    # not shown there: then its reason must stand beside the verdict. utopia-fig1-2 is marked
    # at every scale; mehpt-fig8 and mehpt-fig10 hold at quick scale and are marked at tiny
    # (their reasons say why) rather than checked with a looser tiny tolerance.
    assert outcome.direction.startswith(f"direction: {rep.direction} — ")
    assert outcome.direction in markdown
    reason = rep.direction_not_shown.get("tiny")
    if reason is None:
        assert outcome.direction_holds, outcome.direction
    else:
        assert f"(marked not shown at tiny scale: {reason})" in markdown
        # The mark stands only while its measured cause does.
        assert outcome.stale_mark is None, outcome.stale_mark
        assert "STALE MARK" not in markdown
    # Re-running finds every run finished: nothing is simulated twice.
    again = experiments.reproduce(
        reproduction_id, scale="tiny", out=outcome.out.parent, jobs=2, progress=False
    )
    assert again.comparison.equals(table)
    assert again.direction == outcome.direction


def test_status_counts_finished_shared_and_missing_runs(tiny_reproduction, tmp_path: Path) -> None:
    # utopia-fig1-2's runs (Radix and ECH) are utopia-fig5's too: in a directory holding
    # only fig1-2's sweep, fig5's status finds them to copy and the rest to simulate.
    walks = tiny_reproduction("utopia-fig1-2")
    done = experiments.run_status("utopia-fig1-2", "tiny", walks.out.parent)
    assert done.runs > 0 and done.finished == done.runs and done.todo == 0
    assert len(done.elapsed_s) == done.runs
    # Each run's local worker recorded its peak host memory: the interpreter, the engine and
    # the run's own structures, far below the machine's.
    assert len(done.peak_host_bytes) == done.runs
    assert all(16 << 20 < b < 8 << 30 for b in done.peak_host_bytes), done.peak_host_bytes
    assert "finished runs peaked at up to " in cli._format_status("utopia-fig1-2", "tiny", done)
    out = tmp_path / "out"
    shutil.copytree(walks.out / "sweep", out / "utopia-fig1-2" / "sweep")
    shared = experiments.run_status("utopia-fig5", "tiny", out)
    assert shared.finished == 0
    assert shared.reusable == done.runs
    assert shared.todo == shared.runs - done.runs > 0
    line = cli._format_status("utopia-fig5", "tiny", shared)
    assert f"{done.runs} to copy from another reproduction" in line
    assert f"{shared.todo} to simulate (about " in line


def test_status_gives_the_time_left_one_at_a_time_and_with_jobs() -> None:
    # 21 runs left at the finished runs' 3600 s mean: 21 h one at a time, 11 rounds of two
    # with -j 2, and with more jobs than runs left one round.
    st = SweepStatus(runs=30, finished=9, reusable=0, elapsed_s=[3000.0, 4200.0])
    one = cli._format_status("utopia-fig17", "paper", st)
    assert "21 to simulate (about 21.0 h at the finished runs' 3600 s each)" in one
    two = cli._format_status("utopia-fig17", "paper", st, jobs=2)
    assert "(about 21.0 h at the finished runs' 3600 s each; 11.0 h with -j 2)" in two
    many = cli._format_status("utopia-fig17", "paper", st, jobs=64)
    assert "; 1.0 h with -j 21)" in many
    assert cli._format_status("utopia-fig17", "paper", st, jobs=1) == one


def test_a_mark_needs_a_measured_cause_and_says_when_it_is_gone(tmp_path: Path) -> None:
    rep = experiments.get("utopia-fig11-16")
    with pytest.raises(ValueError, match="without a not_shown_cause"):
        experiments.register(dataclasses.replace(rep, id="no-cause", not_shown_cause=None))
    # A cause that is gone is printed beside the verdict.
    gone = dataclasses.replace(rep, not_shown_cause=lambda df, scale: "measured otherwise")
    stale = experiments.registry._stale_mark(gone, "tiny", pd.DataFrame())
    verdict = experiments.registry._direction_verdict(gone, "tiny", False, stale)
    assert verdict.endswith("[STALE MARK: its cause is no longer measured: measured otherwise]")
    # An unmarked scale has no cause to check.
    tiny_only = dataclasses.replace(gone, direction_not_shown={"tiny": "tiny footprints"})
    assert experiments.registry._stale_mark(tiny_only, "paper", pd.DataFrame()) is None


@pytest.mark.parametrize("scale", experiments.SCALES)
@pytest.mark.parametrize("reproduction_id", IDS)
def test_every_run_config_resolves_at_every_scale(
    reproduction_id: str, scale: str, tmp_path: Path
) -> None:
    # Resolving and booting only (no simulation): a scale whose configs cannot start fails
    # here, with the key or the structure memory could not give, instead of an hour into a
    # user's run. (Resolving alone let utopia-fig6 at paper scale through, whose RestSeg's TAR
    # found no contiguous block at boot.)
    configs = experiments.resolved_configs(reproduction_id, scale, tmp_path)
    assert configs
    assert experiments.check_configs(reproduction_id, scale, tmp_path, boot=True) == len(configs)
    # The keys a reproduction varies with the scale reach every run, and a workload's threads
    # each have a core.
    changed = experiments.get(reproduction_id).scale_overrides.get(scale, {})
    for config in configs:
        for key, value in changed.items():
            node = config
            for part in key.split("."):
                node = node[part]
            assert node == value, key
        assert config["workload"].get("threads", 1) <= config["sim"].get("cores", 1)
    # ME-HPT's paper evaluates 8 cores: its full and paper scales run them, with 8 threads
    # where the workload has threads; tiny and quick keep one core.
    if reproduction_id.startswith("mehpt-"):
        cores = 8 if scale in ("full", "paper") else 1
        assert {c["sim"].get("cores", 1) for c in configs} == {cores}
        # Table III's LLC is 2 MB per core.
        assert {c["cache"]["llc"]["size"] for c in configs} == {cores * (2 << 20)}
        threaded = [c for c in configs if c["workload"]["name"] in ("bfs", "pr", "gups")]
        assert threaded and all(c["workload"]["threads"] == cores for c in threaded)


def test_mix_members_reach_every_run_and_name_its_key(tmp_path: Path) -> None:
    # A mix's members (a list of tables) are workload parameters like any other: each run of
    # utopia-fig17 resolves with its mix's members, one per core, and its results row is told
    # apart from the other mixes' by them (they reach the results as resolved JSON text).
    import json

    import pandas as pd

    from xlat.experiments.registry import _workload_keys
    from xlat.experiments.utopia_fig17 import MIXES

    configs = experiments.resolved_configs("utopia-fig17", "tiny", tmp_path)
    seen = {tuple(m["name"] for m in c["workload"]["members"]) for c in configs}
    assert seen == set(MIXES)
    assert {c["sim"]["cores"] for c in configs} == {4}
    assert {c["cache"]["llc"]["size"] for c in configs} == {4 * (2 << 20)}
    workloads = experiments.get("utopia-fig17").workloads["tiny"]
    rows = pd.DataFrame(
        {
            "workload": ["mix"] * len(configs),
            "config.workload.members": [json.dumps(c["workload"]["members"]) for c in configs],
            "config.workload.quantum": [c["workload"]["quantum"] for c in configs],
        }
    )
    keys = _workload_keys(rows, workloads)
    for key, config in zip(keys, configs):
        names = [m["name"] for m in workloads[key]["members"]]
        assert names == [m["name"] for m in config["workload"]["members"]]


def _failing_ecpt_reproduction(expected_failure) -> experiments.registry.Reproduction:
    """Radix and an ECPT on memory fragmented beyond what its 4 GiB GUPS table's ways need:
    the engine stops that run with its out-of-contiguous-memory error."""
    from xlat.experiments import mehpt
    from xlat.experiments.registry import Analysis, Reproduction, System

    return Reproduction(
        id="test-unfinished",
        paper=mehpt.PAPER,
        figure="-",
        title="a run that fails as the paper's did",
        systems={
            "Radix": System("mehpt-radix"),
            "ECPT": System("ecpt", {"os.physmem.fragmentation": 0.95}),
        },
        workloads={"tiny": {"gups": {"table_bytes": 4 << 30}}},
        references={"tiny": 1000},
        analyse=lambda df: Analysis(figures=[], values={}),
        notes="",
        direction="-",
        direction_check=lambda df, values: True,
        expected_failure=expected_failure,
    )


def test_a_failure_the_paper_reports_is_shown_not_fatal(monkeypatch, tmp_path: Path) -> None:
    from xlat.experiments import mehpt, registry

    rep = _failing_ecpt_reproduction(mehpt._hpt_found_no_contiguous_block)
    monkeypatch.setitem(registry._REGISTRY, rep.id, rep)
    outcome = experiments.reproduce(rep.id, scale="tiny", out=tmp_path, jobs=2, progress=False)
    status = dict(zip(outcome.results["label"], outcome.results["status"]))
    assert status == {"Radix": "ok", "ECPT": "failed"}
    [line] = outcome.unfinished
    assert line.startswith("ECPT on gups: XlatError: out of simulated memory: ECPT 4K way")
    assert "no free contiguous" in line and "§VII" in line
    assert f"* did not finish: {line}" in (outcome.out / "comparison.md").read_text()
    assert "Did not finish: ECPT on gups" in outcome.report.read_text()
    # Resuming runs the failed run again, which fails again: still not fatal, and the same.
    again = experiments.reproduce(rep.id, scale="tiny", out=tmp_path, jobs=2, progress=False)
    assert again.unfinished == [line]


def test_a_failure_the_paper_does_not_report_stops_the_reproduction(
    monkeypatch, tmp_path: Path
) -> None:
    from xlat.experiments import registry

    rep = _failing_ecpt_reproduction(None)
    monkeypatch.setitem(registry._REGISTRY, rep.id, rep)
    with pytest.raises(
        RuntimeError, match=r"1 runs failed: \w+ \(ECPT on gups\): XlatError: out of"
    ):
        experiments.reproduce(rep.id, scale="tiny", out=tmp_path, jobs=2, progress=False)


def test_hashed_failures_are_the_papers_only_for_want_of_contiguous_memory() -> None:
    from xlat.experiments import mehpt

    reason = mehpt._hpt_found_no_contiguous_block
    full = "out of simulated memory: ECPT 4K way 0: no free contiguous 2 MiB block (order 9)"
    assert reason("ECPT THP", "gups", full)
    assert reason("ME-HPT", "gups", full) is None
    assert reason("ECPT", "gups", "workload error: the table does not fit") is None
    # ME-HPT fails as the paper allows only when it asks for a chunk larger than the 1 MiB
    # its applications needed; a failed 8 KiB or 1 MiB chunk would be an error of ours.
    chunk = "out of simulated memory: ME-HPT 4K way 2 chunk: no free contiguous {} (order {}), "
    assert reason("ME-HPT THP", "gups", chunk.format("8 MiB block", 11))
    assert reason("ME-HPT THP", "gups", chunk.format("1 MiB block", 8)) is None
    # A mean that leaves out an application says why, whichever the reason.
    import pandas as pd

    mean, note = mehpt._mean_of_defined(
        pd.Series({"bfs": 0.5, "gups": math.nan, "tc": math.nan}), "no 4 KiB table", {"gups"}
    )
    assert mean == 0.5
    assert note == (
        "mean of 1 of 3 applications; n/a for GUPS: a hashed table's run did not finish; "
        "n/a for TC: no 4 KiB table"
    )
    assert math.isclose(
        mehpt._gmean_ratio(pd.Series([4.0, math.nan, 9.0]), pd.Series([1.0, 2.0, 1.0])), 6.0
    )


def test_check_boots_what_resolving_lets_through(monkeypatch, run_cli, tmp_path: Path) -> None:
    # utopia-fig6's paper-scale memory (an 8 GiB RestSeg and its 32 MiB reserve), fragmented
    # at boot as it was before its fix: the config resolves, but the RestSeg's 8 MiB TAR finds
    # no contiguous block, and only booting tells.
    from xlat.experiments import registry, utopia_fig6

    rep = registry.get("utopia-fig6")
    paper = dict(rep.scale_overrides["paper"])
    paper.pop("os.physmem.fragmentation")
    monkeypatch.setitem(rep.scale_overrides, "paper", paper)
    assert utopia_fig6.RESTSEG_BYTES["paper"] == 8 << 30
    runs = len(experiments.resolved_configs(rep.id, "paper", tmp_path))
    assert runs == 2 * len(rep.workloads["paper"])
    assert experiments.check_configs(rep.id, "paper", tmp_path) == runs
    with pytest.raises(
        xlat.XlatError,
        match=r"^utopia-fig6 at paper scale, Restrictive-only on bc: out of simulated memory: "
        r"no free contiguous 8192 KiB for a RestSeg TAR",
    ):
        experiments.check_configs(rep.id, "paper", tmp_path, boot=True)
    # The command line's --check boots every run and says so.
    result = run_cli("reproduce", "gandhi-table2", "--tiny", "--check")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "gandhi-table2: 4 runs resolve and boot at tiny scale"


def test_the_combined_report_puts_each_reproductions_figures_by_its_table(tmp_path: Path) -> None:
    outcomes = [
        experiments.reproduce(i, scale="tiny", out=tmp_path, jobs=2, progress=False)
        for i in ("gandhi-table2", "gandhi-fig13")
    ]
    page = experiments.write_combined_report(outcomes, tmp_path / "report.html", "tiny")
    html = page.read_text()
    starts = [html.index(f"<h2>{o.reproduction.id}: ") for o in outcomes]
    assert starts == sorted(starts)
    first, second = html[starts[0] : starts[1]], html[starts[1] :]
    # Each section holds its own figures and its comparison, in that order.
    for section, outcome in ((first, outcomes[0]), (second, outcomes[1])):
        assert section.count("<img ") == len(outcome.figures) > 0
        assert section.index("<img ") < section.index("Ours vs the paper")
    # gandhi-fig13 publishes no number: the page says so instead of an empty table.
    assert outcomes[1].comparison.empty
    assert "gives no number here" in second and "<thead>" not in second
