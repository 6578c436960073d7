"""Progress where the user works: lines on stderr without a terminal, a callback (what a
notebook's bar is driven by), and nothing on stdout beside the results."""

from __future__ import annotations

import json
import os
import sys

import pytest

import xlat
from xlat import progress


def test_auto_picks_lines_without_a_terminal_or_notebook(monkeypatch) -> None:
    monkeypatch.setattr(sys, "stderr", open(os.devnull, "w"))  # noqa: SIM115 - not a tty
    assert not progress.in_notebook()
    assert progress.for_engine(None) == "lines"
    assert progress.for_engine("auto") == "lines"
    assert progress.for_engine(False) is False
    assert progress.for_engine("bar") == "bar"
    sys.stderr.close()


def test_the_notebook_bar_follows_the_engines_counts() -> None:
    bar = progress.NotebookBar(desc="test")
    bar(0, 1000)
    bar(400, 1000)
    bar(1000, 1000)
    assert bar._bar.n == 1000 and bar._bar.total == 1000
    bar.close()


@pytest.mark.engine
def test_a_callback_sees_the_run_reach_its_end() -> None:
    seen: list[tuple[int, int | None]] = []
    stats = xlat.run(
        "baseline-radix",
        "gups",
        workload__references=200_000,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen, "the callback was never called"
    done, total = seen[-1]
    assert done == total >= stats["core"]["memory_refs"] > 0
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


@pytest.mark.engine
def test_a_bad_progress_argument_is_an_error() -> None:
    with pytest.raises(ValueError, match="progress"):
        xlat.run("baseline-radix", "gups", workload__references=1000, progress="sometimes")


@pytest.mark.engine
def test_a_run_without_a_terminal_prints_progress_lines_and_json_stays_clean(run_cli) -> None:
    # A line every 50 ms instead of every minute; the run takes a second or more.
    env = dict(os.environ, XLAT_PROGRESS_SECONDS="0.05")
    done = run_cli("run", "-w", "gups", "--refs", "2M", "--json", timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("xlat: ")]
    assert lines, done.stderr
    assert "of 2,000,000 references" in lines[-1] and "after" in lines[-1]
    assert json.loads(done.stdout)["core"]["memory_refs"] == 2_000_000
    # --no-progress: nothing.
    quiet = run_cli("run", "-w", "gups", "--refs", "200k", "--no-progress", env=env)
    assert quiet.returncode == 0 and "xlat: " not in quiet.stderr
