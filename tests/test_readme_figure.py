"""The README's figure is what the main job draws (xlat.experiments.snapshot): the numbers kept
beside it (docs/img/utopia-fig5.json) are the bars the reproduction's analysis draws from the
kept runs, the PNG is drawn from those bars, and the runs are the ones the main job makes now.
No simulation: the runs' statistics are kept, their configs only resolved."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from xlat import plots
from xlat.experiments import snapshot

ROOT = Path(__file__).resolve().parent.parent
PNG = ROOT / "docs" / "img" / "utopia-fig5.png"
REGENERATE = (
    "the README's figure drifted: after the main job (bash scripts/run.sh, or just "
    "xlat reproduce utopia-fig5 --scale quick --out out/reproduce), run "
    ".venv/bin/python scripts/readme_figure.py"
)


def test_the_readme_shows_the_kept_figure_of_the_main_jobs_scale() -> None:
    assert "](docs/img/utopia-fig5.png)" in (ROOT / "README.md").read_text(encoding="utf-8")
    data = json.loads(PNG.with_suffix(".json").read_text(encoding="utf-8"))
    assert (data["reproduction"], data["figure"]) == ("utopia-fig5", 1)
    assert f"XLAT_SCALE:-{data['scale']}" in (ROOT / "scripts" / "run.sh").read_text()


@pytest.mark.engine
def test_the_readme_figure_is_what_the_main_job_draws(tmp_path: Path) -> None:
    assert snapshot.check(PNG, scratch=tmp_path) == [], REGENERATE


def kept_copy(tmp_path: Path) -> tuple[Path, dict]:
    png = tmp_path / PNG.name
    shutil.copy(PNG, png)
    shutil.copy(PNG.with_suffix(".json"), png.with_suffix(".json"))
    return png, json.loads(png.with_suffix(".json").read_text(encoding="utf-8"))


def rewrite(png: Path, data: dict) -> None:
    png.with_suffix(".json").write_text(json.dumps(data), encoding="utf-8")


def test_the_check_finds_changed_numbers_and_a_replaced_png(tmp_path: Path) -> None:
    png, data = kept_copy(tmp_path)
    assert snapshot.check(png) == []
    # A run's statistic changed (an older model's numbers kept with a newer figure).
    data["runs"][0]["stats.summary.cycles"] *= 2
    rewrite(png, data)
    (problem,) = snapshot.check(png)
    assert "draws other bars from the kept runs" in problem
    # The bars changed, and with them what the PNG must have been drawn from.
    data = kept_copy(tmp_path)[1]
    data["bars"]["P-TLB"]["gups"] = 10.2
    rewrite(png, data)
    assert len(snapshot.check(png)) == 2
    # Another PNG in its place (one without the digest).
    data = kept_copy(tmp_path)[1]
    plots.save(plots.grouped_bars(pd.DataFrame(data["runs"]), "stats.summary.cycles"), png)
    (problem,) = snapshot.check(png)
    assert "is not drawn from the bars" in problem


@pytest.mark.engine
def test_the_check_finds_runs_the_main_job_no_longer_makes(tmp_path: Path) -> None:
    png, data = kept_copy(tmp_path)
    data["runs"][0]["run_id"] = "0123456789abcdef"
    rewrite(png, data)
    (problem,) = snapshot.check(png, scratch=tmp_path / "scratch")
    assert problem.startswith("1 of the 55 kept runs are not what utopia-fig5 runs now")
