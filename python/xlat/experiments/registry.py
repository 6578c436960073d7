"""The reproduction framework: what a reproduction declares, and how ``xlat reproduce`` runs it.

A :class:`Reproduction` names its paper and figure, the systems and workloads it simulates at
each scale, and an ``analyse`` function that turns the sweep's results into figures and the
quantities the paper states. Running one is: write the systems as config files, run the sweep
(resumable, any backend), analyse, then write the figures, a table "ours | paper | ratio" built
from :file:`published.toml`, and an HTML page with both and the reproduction's notes on
expected differences.

Ratios alone do not say whether a reproduction agrees with its paper: our footprints are far
smaller, so most sizes differ by design. Each reproduction therefore also states its paper's
headline **direction** (which design wins, roughly by how much) with a check of whether our
run shows it; the verdict is printed under the table. Where our model cannot show the
direction at some scale, the reproduction says so and why (``direction_not_shown``).

Scales: ``tiny`` (a few seconds; what the tests run), ``quick`` (minutes on a laptop: the
README's main job), ``full`` (larger inputs; hours), ``paper`` (each workload at its paper's
footprint through ``workload.footprint``; hours, resumable run by run, each run minutes).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union

import pandas as pd

from .. import api, plots
from ..report import write_report
from ..results import write_atomic
from ..sweep import SweepStatus, identify, plan, status, sweep

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

__all__ = [
    "SCALES",
    "Analysis",
    "Outcome",
    "Reproduction",
    "Stopped",
    "System",
    "ascending",
    "get",
    "published",
    "register",
    "reproduce",
    "reproductions",
    "resolved_configs",
    "run_status",
]

PathLike = Union[str, "os.PathLike[str]"]
SCALES = ("tiny", "quick", "full", "paper")

#: Instructions simulated in detail before statistics start, per scale. The papers measure
#: the kernel, not the set-up: runs fast-forward through a workload's set-up to its region of
#: interest and replay its end through the TLBs and caches (``sim.fast_forward``), so this
#: warm-up only has to fill them with the kernel's own working set and settle the timing.
WARMUP_INSTRUCTIONS = {"tiny": 0, "quick": 2_000_000, "full": 10_000_000, "paper": 10_000_000}


@dataclass(frozen=True)
class System:
    """A simulated system of a reproduction: a preset plus a few changed keys."""

    preset: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    scale_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Scale -> keys this system changes at that scale only, after ``overrides`` (e.g. what
    a paper gave one system when it ran at the paper's size)."""

    def toml(self, scale: str | None = None) -> str:
        """A config file for it at ``scale`` (``extends`` the preset; dotted keys for the
        changes)."""
        from ..api import to_toml_literal

        changes = {**self.overrides, **self.scale_overrides.get(scale or "", {})}
        lines = [f'extends = "{self.preset}"']
        lines += [f"{key} = {to_toml_literal(value)}" for key, value in changes.items()]
        return "\n".join(lines) + "\n"


@dataclass
class Analysis:
    """What a reproduction's ``analyse`` returns."""

    figures: list[tuple[str, Any]]
    """``(caption, matplotlib Figure)`` in the paper's style."""
    values: dict[str, float]
    """Our value of every quantity key the paper states (see :file:`published.toml`)."""
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    """Extra tables (per-workload numbers behind the figures)."""
    undefined: dict[str, str] = field(default_factory=dict)
    """Quantity key -> why our value is undefined (no table to measure, a division by zero).
    Such a value is NaN in ``values`` and printed as "n/a" with its reason, never as 0."""
    summary: str = ""
    """Text printed under the comparison table (terminal, ``comparison.md``, report): what
    the reader needs beside the paper's numbers, e.g. a sensitivity table."""


@dataclass(frozen=True)
class Reproduction:
    id: str
    paper: str
    figure: str
    title: str
    systems: Mapping[str, System]
    """Label -> system; the labels are the bars' names."""
    workloads: Mapping[str, Mapping[str, Mapping[str, Any]]]
    """Scale -> {workload key: {parameter: value}}. A key is a workload name, or
    ``name@tag`` to run one workload with several parameter sets (the runs' ``workload``
    column then holds the key)."""
    references: Mapping[str, int]
    """Scale -> memory references per run, warm-up included."""
    analyse: Callable[[pd.DataFrame], Analysis]
    notes: str
    """Why our numbers may differ from the paper's (shown beside the table)."""
    direction: str
    """The paper's headline result as one short claim: which way it goes and roughly by how
    much, e.g. "1 GiB pages <= 2 MiB pages < 4 KiB pages in translation overhead"."""
    direction_check: Callable[[pd.DataFrame, Mapping[str, float]], bool]
    """Whether a run shows ``direction``, from the frame ``analyse`` took and the values it
    returned (usually written with :func:`ascending`)."""
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Applied to every run (e.g. ``sim.epoch_instructions``)."""
    scale_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Scale -> config keys of every run at that scale, after ``overrides``: what the systems
    change with the scale, e.g. ``{"full": {"sim.cores": 8}}`` for a paper that evaluates an
    8-core system where the small scales keep one core."""
    direction_not_shown: Mapping[str, str] = field(default_factory=dict)
    """Scale -> why our model does not show ``direction`` at that scale (e.g. footprints far
    below the paper's). The reason is printed with the verdict, so a reader sees that the
    verdict is expected rather than a regression."""
    not_shown_cause: Callable[[pd.DataFrame, str], str | None] | None = None
    """The measured cause of every ``direction_not_shown`` mark, checked on each run of a
    marked scale: ``(frame analyse took, scale) -> None`` while the cause is there, or what
    was measured instead. Every marked reproduction has one, so a mark whose cause goes away
    (a model change makes translation matter at tiny scale, say) is printed as stale beside
    the verdict, and fails the tiny-scale test, instead of hiding a verdict that changed."""
    expected_failure: Callable[[str, str, str], str | None] | None = None
    """A failure the paper reports too: ``(label, workload, error) -> reason``, or ``None`` for
    an error of ours. Such a run did not finish, as in the paper: its values are n/a and the
    table says why. Any other failed run stops the reproduction."""


class Stopped(RuntimeError):
    """A reproduction whose sweep reached its ``stop_after`` before every run could start: its
    figures and comparison would rest on part of its runs, so none is written. The runs that
    finished are stored; calling :func:`reproduce` again (same ``out``) runs the rest."""

    def __init__(self, reproduction_id: str, not_started: int, runs: int) -> None:
        super().__init__(
            f"{reproduction_id}: {not_started} of {runs} runs not started before the time "
            "limit; the finished ones are stored, and the same command again runs the rest"
        )
        self.reproduction_id = reproduction_id
        self.not_started = not_started
        self.runs = runs


@dataclass
class Outcome:
    """The result of running one reproduction."""

    reproduction: Reproduction
    out: Path
    results: pd.DataFrame
    comparison: pd.DataFrame
    figures: list[Path]
    report: Path
    analysis: Analysis
    direction_holds: bool
    """Whether this run shows the reproduction's direction."""
    direction: str
    """The verdict as printed: "direction: <claim> — holds / does not hold (<reason>)"."""
    stale_mark: str | None = None
    """At a scale marked not shown: what was measured where the mark's cause should be, if it
    is no longer there (:attr:`Reproduction.not_shown_cause`); ``None`` otherwise."""
    unfinished: list[str] = field(default_factory=list)
    """Runs that failed as the paper's did (:attr:`Reproduction.expected_failure`), each as
    "label on workload: error; reason"."""


_REGISTRY: dict[str, Reproduction] = {}


def register(reproduction: Reproduction) -> Reproduction:
    if reproduction.id in _REGISTRY:
        raise ValueError(f"reproduction {reproduction.id!r} registered twice")
    if reproduction.direction_not_shown and reproduction.not_shown_cause is None:
        raise ValueError(
            f"reproduction {reproduction.id!r} marks its direction not shown at "
            f"{', '.join(reproduction.direction_not_shown)} scale without a not_shown_cause "
            "that checks the mark's measured cause"
        )
    _REGISTRY[reproduction.id] = reproduction
    return reproduction


def _natural(reproduction_id: str) -> list:
    """Sort key reading the numbers in an id as numbers: ``sparta-fig2`` before
    ``sparta-fig10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", reproduction_id)]


def reproductions() -> list[Reproduction]:
    """Every reproduction, in a stable order: by paper, then by figure number."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY, key=_natural)]


def get(reproduction_id: str) -> Reproduction:
    """The reproduction ``reproduction_id``.

    Raises:
        KeyError: with the list of known ids.
    """
    try:
        return _REGISTRY[reproduction_id]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"no reproduction {reproduction_id!r} (known: {known})") from None


def published(reproduction_id: str | None = None) -> pd.DataFrame:
    """The published values (of one reproduction, or all), with their sources."""
    path = Path(__file__).with_name("published.toml")
    values = tomllib.loads(path.read_text(encoding="utf-8"))["value"]
    frame = pd.DataFrame(values)
    if reproduction_id is not None:
        frame = frame[frame["reproduction"] == reproduction_id].reset_index(drop=True)
    return frame


def ascending(*values: float, strict: bool = False, slack: float = 0.0) -> bool:
    """Whether ``values`` rise from left to right: each at most the next plus ``slack`` (with
    ``strict``, each below the next). Directions are orderings ("ME-HPT < ECPT", "0.4 <= moved <=
    0.6", "1 <= every speed-up"), so every check is made of these. A NaN (a quantity the run
    could not compute) is never in order: the check then fails instead of passing unnoticed."""
    pairs = list(zip(values, values[1:]))
    if strict:
        return all(a < b for a, b in pairs)
    return all(a <= b + slack for a, b in pairs)


def _stale_mark(rep: Reproduction, scale: str, df: pd.DataFrame) -> str | None:
    """What the runs measured where the cause of ``scale``'s mark should be, if it is gone."""
    if scale not in rep.direction_not_shown or rep.not_shown_cause is None:
        return None
    return rep.not_shown_cause(df, scale)


def _direction_verdict(rep: Reproduction, scale: str, holds: bool, stale: str | None) -> str:
    """The line printed under the comparison table."""
    verdict = "holds" if holds else "does not hold"
    reason = rep.direction_not_shown.get(scale)
    if reason:
        verdict += f" (marked not shown at {scale} scale: {reason})"
    if stale:
        verdict += f" [STALE MARK: its cause is no longer measured: {stale}]"
    return f"direction: {rep.direction} — {verdict}"


def comparison(reproduction_id: str, ours: Mapping[str, float]) -> pd.DataFrame:
    """The table "quantity | ours | paper | ratio | source" of one reproduction. A value that
    is undefined (NaN) has no ratio either (NaN; printed "n/a")."""
    rows = []
    for entry in published(reproduction_id).to_dict("records"):
        value = ours.get(entry["key"])
        defined = value is not None and not math.isnan(value)
        ratio = value / entry["value"] if defined and entry["value"] else math.nan
        if value is not None and not defined:
            value = math.nan
        rows.append(
            {
                "quantity": entry["quantity"],
                "ours": value,
                "paper": entry["value"],
                "ratio": ratio,
                "source": entry["source"],
            }
        )
    return pd.DataFrame(rows, columns=["quantity", "ours", "paper", "ratio", "source"])


#: What a comparison without published numbers says instead of a table with a header only.
NO_PUBLISHED_VALUES = (
    "The paper gives no number here to set beside ours: the direction below is the comparison."
)


def _comparison_caption(table: pd.DataFrame, verdict: str, rest: str) -> str:
    """The caption of a comparison with the paper in a report: the verdict, what an empty
    table means, then ``rest`` (notes)."""
    empty = f" {NO_PUBLISHED_VALUES}" if table.empty else ""
    return f"Ours vs the paper; {verdict}.{empty} {rest}"


def _markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return NO_PUBLISHED_VALUES + "\n"

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "n/a" if math.isnan(v) else f"{v:.3g}"
        return "" if v is None else str(v)

    head = "| " + " | ".join(frame.columns) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([head, rule, *body]) + "\n"


def undefined_notes(reproduction_id: str, analysis: Analysis) -> str:
    """One line per quantity of the table whose value is n/a, with the reason."""
    names = dict(published(reproduction_id)[["key", "quantity"]].itertuples(index=False))
    lines = [
        f"* n/a: {names[key]}: {reason}"
        for key, reason in sorted(analysis.undefined.items())
        if key in names
    ]
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def _expected_failures(
    rep: Reproduction, df: pd.DataFrame, failed: list[tuple[str, str]]
) -> list[str]:
    """The failed runs as "label on workload: error; reason" lines, if the paper reports each
    failure too (:attr:`Reproduction.expected_failure`). Raises RuntimeError naming the others:
    a run that fails where the paper's finished is an error, never a missing bar."""
    where = df.set_index("run_id")[["label", "workload"]]
    lines, errors = [], []
    for rid, error in failed:
        label, workload = where.loc[rid]
        reason = rep.expected_failure(label, workload, error) if rep.expected_failure else None
        if reason:
            lines.append(f"{label} on {workload}: {error}; {reason}")
        else:
            errors.append(f"{rid} ({label} on {workload}): {error}")
    if errors:
        raise RuntimeError(f"reproduction {rep.id}: {len(errors)} runs failed: {'; '.join(errors)}")
    return lines


def _workload_keys(df: pd.DataFrame, workloads: Mapping[str, Mapping[str, Any]]) -> pd.Series:
    """Each run's workload key: its name, or the ``name@tag`` whose parameters it ran with."""
    keys = df["workload"].copy()
    for key, params in workloads.items():
        name, _, tag = key.partition("@")
        if not tag:
            continue
        match = df["workload"] == name
        for param, value in params.items():
            column = df[f"config.workload.{param}"]
            match &= column.map(lambda cell, value=value: _param_matches(cell, value))
        keys[match] = key
    return keys


def _param_matches(cell: Any, value: Any) -> bool:
    """Whether a run's resolved workload parameter ``cell`` is the ``value`` a workload key
    gave. Lists and tables (a ``mix``'s ``members``) reach the results as JSON text, resolved:
    every key the value names must match, and the keys it leaves out hold their defaults."""
    if isinstance(value, (Mapping, list, tuple)):
        if isinstance(cell, str):
            try:
                cell = json.loads(cell)
            except ValueError:
                return False
        if isinstance(value, Mapping):
            return isinstance(cell, Mapping) and all(
                k in cell and _param_matches(cell[k], v) for k, v in value.items()
            )
        return (
            isinstance(cell, list)
            and len(cell) == len(value)
            and all(_param_matches(c, v) for c, v in zip(cell, value))
        )
    return bool(cell == value)


def _plan(
    rep: Reproduction, scale: str, systems_dir: Path
) -> tuple[list[str], list[tuple[str, dict]], dict[str, Any]]:
    """A reproduction's sweep at ``scale``: its systems' config files (written to
    ``systems_dir``), its workloads with their parameters, and the overrides of every run."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} (choose from {', '.join(SCALES)})")
    configs = []
    for label, system in rep.systems.items():
        path = systems_dir / f"{label}.toml"
        write_atomic(path, system.toml(scale))
        configs.append(str(path))
    overrides = {
        "sim.warmup_instructions": WARMUP_INSTRUCTIONS[scale],
        **rep.overrides,
        **rep.scale_overrides.get(scale, {}),
        "workload.references": rep.references[scale],
    }
    workloads = [(key.split("@")[0], dict(params)) for key, params in rep.workloads[scale].items()]
    return configs, workloads, overrides


def _runs(rep: Reproduction, scale: str, scratch: PathLike):
    """Each run of a reproduction at ``scale`` as (system label, config file, workload name,
    overrides), in sweep order."""
    configs, workloads, overrides = _plan(rep, scale, Path(scratch) / rep.id / scale)
    for label, config in zip(rep.systems, configs):
        for name, params in workloads:
            yield (
                label,
                config,
                name,
                {**overrides, **{f"workload.{k}": v for k, v in params.items()}},
            )


def resolved_configs(reproduction_id: str, scale: str, scratch: PathLike) -> list[dict[str, Any]]:
    """The resolved config of every run of a reproduction at ``scale``, parsed, without
    simulating.

    Raises:
        xlat.XlatError: naming the key, for the first run whose config does not resolve.
    """
    return [
        tomllib.loads(api.resolve_config(config, name, overrides=run_overrides))
        for _, config, name, run_overrides in _runs(get(reproduction_id), scale, scratch)
    ]


def check_configs(
    reproduction_id: str, scale: str, scratch: PathLike, *, boot: bool = False
) -> int:
    """Resolve the config of every run of a reproduction at ``scale`` without simulating, so a
    scale that cannot start fails here rather than in a user's hands. With ``boot``, also
    build each run's machine and start its processes (:func:`xlat.boot`, a fraction of a
    second at any footprint), which catches what resolving cannot: a RestSeg's TAR or a
    direct segment that the configured memory has no contiguous block for. Returns the run
    count.

    Raises:
        xlat.XlatError: for the first run that does not resolve (naming the key) or boot,
            prefixed with the run's system and workload.
    """
    xlat_error = api.engine().XlatError
    runs = 0
    for label, config, name, run_overrides in _runs(get(reproduction_id), scale, scratch):
        try:
            if boot:
                api.boot(config, name, overrides=run_overrides)
            else:
                api.resolve_config(config, name, overrides=run_overrides)
        except xlat_error as exc:
            raise xlat_error(
                f"{reproduction_id} at {scale} scale, {label} on {name}: {exc}"
            ) from exc
        runs += 1
    return runs


def _other_sweeps(out: PathLike) -> list[Path]:
    """The sweeps of every reproduction in ``out``. Reproductions of one paper share systems
    (Radix, ECH, ... at the same scale): a run that another reproduction in ``out`` finished
    is the same simulation, and is copied."""
    return sorted(p for p in Path(out).glob("*/sweep") if p.is_dir())


def run_status(
    reproduction_id: str, scale: str = "quick", out: PathLike = "out/reproduce"
) -> SweepStatus:
    """How much of a reproduction's sweep at ``scale`` is done in ``out``, without running
    anything: its runs finished there, finished only by another reproduction in ``out`` (to
    be copied), and to simulate, with the wall seconds of those finished.

    Raises:
        xlat.XlatError: naming the key, for the first run whose config does not resolve.
    """
    rep = get(reproduction_id)
    with tempfile.TemporaryDirectory() as scratch:
        configs, workload_list, overrides = _plan(rep, scale, Path(scratch))
        ids = identify(plan(configs, workloads=workload_list, overrides=overrides))
    return status(ids, Path(out) / rep.id / "sweep", reuse=_other_sweeps(out))


def reproduce(
    reproduction_id: str,
    *,
    scale: str = "quick",
    out: PathLike = "out/reproduce",
    backend: str = "local",
    jobs: int | None = None,
    scheduler: str | None = None,
    progress: bool | None = None,
    memory: int | str | None = "auto",
    stop_after: float | None = None,
) -> Outcome:
    """Run one reproduction and write its figures, comparison table and HTML page.

    ``backend``, ``jobs``, ``scheduler``, ``progress``, ``memory`` and ``stop_after`` are
    :func:`xlat.sweep`'s. A sweep stopped by ``stop_after`` with runs left raises
    :class:`Stopped` instead of analysing part of the runs.

    Output in ``out/<id>/``: ``sweep/`` (every run, resumable; a run another reproduction in
    ``out`` already finished with the same resolved config is copied from its sweep),
    ``fig<N>.png``, ``comparison.csv`` and ``comparison.md`` (ours | paper | ratio; the
    markdown ends with the direction's verdict), ``report.html``.
    """
    rep = get(reproduction_id)
    base = Path(out) / rep.id
    configs, workload_list, overrides = _plan(rep, scale, base / "systems")
    workloads = rep.workloads[scale]
    result = sweep(
        configs,
        workloads=workload_list,
        out=base / "sweep",
        overrides=overrides,
        backend=backend,
        jobs=jobs,
        scheduler=scheduler,
        progress=progress,
        reuse=_other_sweeps(out),
        report_failures=False,
        memory=memory,
        stop_after=stop_after,
    )
    if result.not_started:
        raise Stopped(rep.id, result.not_started, len(result.run_ids))
    df = result.load()
    # Bars are named by system label (the config file's stem), not by the run's point.
    df["label"] = df["system"].map(lambda s: Path(s).stem)
    df["workload"] = _workload_keys(df, workloads)
    unfinished = _expected_failures(rep, df, result.failed)
    analysis = rep.analyse(df)
    holds = bool(rep.direction_check(df, analysis.values))
    stale = _stale_mark(rep, scale, df)
    verdict = _direction_verdict(rep, scale, holds, stale)
    table = comparison(rep.id, analysis.values)
    write_atomic(base / "comparison.csv", table.to_csv(index=False, na_rep="n/a"))
    write_atomic(
        base / "comparison.md",
        _markdown(table)
        + undefined_notes(rep.id, analysis)
        + "".join(f"* did not finish: {line}\n" for line in unfinished)
        + (f"\n{analysis.summary}\n" if analysis.summary else "")
        + f"\n{verdict}\n",
    )
    write_atomic(base / "values.json", json.dumps(analysis.values, indent=2, sort_keys=True))
    figures = []
    for n, (_caption, fig) in enumerate(analysis.figures, 1):
        figures.append(plots.save(fig, base / f"fig{n}.png"))
    report = write_report(
        df,
        base / "report.html",
        title=f"{rep.paper} {rep.figure}: {rep.title} (scale: {scale})",
        figures=analysis.figures,
        tables=[
            (
                _comparison_caption(
                    table,
                    verdict,
                    f"{analysis.summary} {rep.notes}"
                    + "".join(f" Did not finish: {line}." for line in unfinished),
                ),
                table,
            ),
            *analysis.tables,
        ],
    )
    return Outcome(
        rep, base, df, table, figures, report, analysis, holds, verdict, stale, unfinished
    )


def write_combined_report(outcomes: Sequence[Outcome], path: PathLike, scale: str) -> Path:
    """One HTML page for several reproductions, as a paper's evaluation reads: a section per
    reproduction with its figures, then its comparison with the paper and its verdict."""
    from ..report import Section

    sections = []
    for o in outcomes:
        rep = o.reproduction
        caption = _comparison_caption(o.comparison, o.direction, rep.notes)
        sections.append(
            Section(
                f"{rep.id}: {rep.paper} {rep.figure}: {rep.title}",
                figures=o.analysis.figures,
                tables=[(caption, o.comparison)],
            )
        )
    return write_report(
        pd.concat([o.results for o in outcomes], ignore_index=True, sort=False),
        path,
        title=f"xlat reproductions (scale: {scale})",
        sections=sections,
    )
