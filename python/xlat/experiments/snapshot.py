"""A reproduction's figure kept in the repository beside the numbers it is drawn from.

The README shows ``docs/img/utopia-fig5.png``, drawn from the main job's runs. Redrawing it
needs those runs (minutes of simulation), so it is kept with ``utopia-fig5.json``: the
statistics of every run that the reproduction's analysis reads (the *inputs*, with each run's
id) and the value of every bar (the *bars*). The PNG carries a digest of the bars in a text
chunk. Without simulating, :func:`check` then finds each way the kept figure can drift:

* the bars are not what the reproduction's analysis draws from the inputs (its code changed);
* the PNG is not the one drawn from those bars (one file replaced without the other);
* the inputs are not the runs the main job makes now (a preset, a workload or the scale
  changed): their ids, hashes of each resolved config and the engine version, differ.

The numbers are compared, not pixels, so the check holds across matplotlib versions and
machines. ``python scripts/readme_figure.py`` writes both files again.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Union

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .. import api, plots
from ..results import write_atomic
from ..sweep import engine_run_id, plan
from .registry import Outcome, _plan, get

__all__ = ["drawn_bars", "check", "planned_run_ids", "write"]

PathLike = Union[str, "os.PathLike[str]"]
#: The PNG text chunk that holds the digest of the bars.
DIGEST_KEY = "xlat-bars-sha256"


def drawn_bars(fig: Figure) -> dict[str, dict[str, float]]:
    """The height of every bar of a :func:`xlat.plots.grouped_bars` figure: series -> group
    name -> value (a clipped bar's full value; a missing one is left out)."""
    (ax,) = fig.axes
    ticks = ax.get_xticks()
    names = [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()]
    bars: dict[str, dict[str, float]] = {}
    for patch in ax.patches:
        gid = patch.get_gid() or ""
        if not gid.startswith(plots.SERIES_GID):
            continue
        x = patch.get_x() + patch.get_width() / 2
        group = names[int(np.argmin(np.abs(ticks - x)))]
        bars.setdefault(gid[len(plots.SERIES_GID) :], {})[group] = float(patch.get_height())
    return bars


def _digest(bars: dict[str, dict[str, float]]) -> str:
    return hashlib.sha256(json.dumps(bars, sort_keys=True).encode()).hexdigest()


def planned_run_ids(reproduction_id: str, scale: str, scratch: PathLike) -> list[str]:
    """The id of every run of a reproduction at ``scale``, as its sweep names them, without
    simulating (a run id hashes the resolved config, the engine version and its model epoch)."""
    rep = get(reproduction_id)
    configs, workloads, overrides = _plan(rep, scale, Path(scratch) / rep.id / scale)
    core = api.engine()
    return [
        engine_run_id(core.resolve(spec.system, list(spec.overrides), None))
        for spec in plan(configs, workloads=workloads, overrides=overrides)
    ]


def _figure(reproduction_id: str, figure: int, runs: pd.DataFrame) -> Figure:
    return get(reproduction_id).analyse(runs).figures[figure - 1][1]


def write(
    outcome: Outcome, png: PathLike, *, figure: int, columns: Sequence[str], scale: str
) -> tuple[Path, Path]:
    """Keep figure ``figure`` (from 1) of a finished reproduction as ``png``, with
    ``png``'s ``.json`` beside it: the ``columns`` of every run (the statistics the analysis
    reads) and the figure's bars. Returns both paths."""
    rep = outcome.reproduction
    # In the sweep's order, which is the order of the figure's groups and bars.
    runs = outcome.results[["run_id", "status", "label", "workload", *columns]]
    fig = _figure(rep.id, figure, runs)
    bars = drawn_bars(fig)
    data = {
        "reproduction": rep.id,
        "figure": figure,
        "scale": scale,
        "columns": list(columns),
        "runs": runs.to_dict("records"),
        "bars": bars,
    }
    target = Path(png)
    buffer = io.BytesIO()
    fig.savefig(
        buffer, format="png", dpi=150, facecolor="white", metadata={DIGEST_KEY: _digest(bars)}
    )
    write_atomic(target, buffer.getvalue())
    kept = write_atomic(target.with_suffix(".json"), json.dumps(data, indent=1) + "\n")
    return target, kept


def _png_text(png: Path) -> dict[str, str]:
    from PIL import Image  # matplotlib's own dependency

    with Image.open(png) as image:
        return dict(getattr(image, "text", {}))


def check(png: PathLike, *, scratch: PathLike | None = None) -> list[str]:
    """How the kept figure ``png`` (and its ``.json``) drifted from what it claims (empty:
    not at all). With ``scratch`` (a directory for config files), also whether its runs are
    the ones the reproduction makes now; this needs the engine, to resolve their configs."""
    png = Path(png)
    data = json.loads(png.with_suffix(".json").read_text(encoding="utf-8"))
    problems = []
    digest = _png_text(png).get(DIGEST_KEY)
    if digest != _digest(data["bars"]):
        problems.append(
            f"{png.name} is not drawn from the bars of {png.with_suffix('.json').name} "
            f"(its digest: {digest})"
        )
    runs = pd.DataFrame(data["runs"])
    redrawn = drawn_bars(_figure(data["reproduction"], data["figure"], runs))
    if redrawn.keys() != data["bars"].keys() or any(
        redrawn[s].keys() != data["bars"][s].keys()
        or any(
            not math.isclose(redrawn[s][g], v, rel_tol=1e-12) for g, v in data["bars"][s].items()
        )
        for s in redrawn
    ):
        problems.append(
            f"the analysis of {data['reproduction']} draws other bars from the kept runs: "
            f"{redrawn} (kept: {data['bars']})"
        )
    if scratch is not None:
        planned = set(planned_run_ids(data["reproduction"], data["scale"], scratch))
        kept = set(runs["run_id"])
        if planned != kept:
            problems.append(
                f"{len(kept - planned)} of the {len(kept)} kept runs are not what "
                f"{data['reproduction']} runs now at {data['scale']} scale (a preset, workload, "
                f"the engine version or its model epoch changed): {sorted(kept - planned)[:3]}..."
            )
    return problems
