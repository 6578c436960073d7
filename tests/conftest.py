"""Shared fixtures of the xlat test-suite.

Two kinds of tests live here:

* pure-Python tests (override conversion, summaries, argument parsing) that run against a fake
  engine installed with the ``fake_core`` fixture;
* tests marked ``engine`` that drive the real compiled module ``xlat._core`` (built by
  ``pip install .``). They are collected and run normally: a missing engine is a failure.

Simulations in tests stay tiny (well under 1e6 references) so the suite runs in seconds.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Callable

import pytest

import xlat.api
from support import FakeCore
from xlat import experiments


@pytest.fixture
def fake_core(monkeypatch: pytest.MonkeyPatch) -> FakeCore:
    """Replace the engine with a :class:`FakeCore` for the duration of a test."""
    fake = FakeCore()
    monkeypatch.setattr(xlat.api, "engine", lambda: fake)
    return fake


CliResult = subprocess.CompletedProcess


@pytest.fixture
def run_cli(tmp_path: Path) -> Callable[..., CliResult]:
    """Run ``python -m xlat ARGS...`` in a subprocess (cwd: a temporary directory)."""

    def _run(
        *args: str | Path, timeout: float = 300, env: dict[str, str] | None = None
    ) -> CliResult:
        argv: Sequence[str] = [sys.executable, "-m", "xlat", *map(str, args)]
        return subprocess.run(
            argv,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    return _run


@pytest.fixture(scope="session")
def tiny_reproduction(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], experiments.Outcome]:
    """Run a reproduction at tiny scale, once per test session: the reproduction tests and the
    figure test look at the same outcome. All write to one directory, where a run that two
    reproductions share is simulated once, as in ``xlat reproduce all``."""
    out = tmp_path_factory.mktemp("reproduce-tiny")
    done: dict[str, experiments.Outcome] = {}

    def get(reproduction_id: str) -> experiments.Outcome:
        if reproduction_id not in done:
            done[reproduction_id] = experiments.reproduce(
                reproduction_id, scale="tiny", out=out, jobs=2, progress=False
            )
        return done[reproduction_id]

    return get


@pytest.fixture
def tiny_mechanism_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Callable[..., experiments.Outcome]:
    """Run a reproduction at tiny scale with config keys added to some of its systems (its
    mechanism switched off): ``run(reproduction_id, {label: {key: value}}, workloads=None)``,
    optionally on a subset of its tiny workloads. The runs are the reproduction's own, so
    its analysis and direction check read them as they read the reproduction's."""
    from xlat.experiments import registry

    def run(
        reproduction_id: str,
        keys: dict[str, dict[str, object]],
        workloads: Sequence[str] | None = None,
    ) -> experiments.Outcome:
        rep = experiments.get(reproduction_id)
        assert set(keys) <= set(rep.systems), keys
        # The keys come last among a system's: after its keys at tiny scale too (which
        # utopia-thp-share uses to set the page sizes). A key the reproduction sets for every
        # run (its ``overrides``) still wins.
        systems = {
            label: dataclasses.replace(
                system,
                overrides={**system.overrides, **keys[label]},
                scale_overrides={
                    **system.scale_overrides,
                    "tiny": {**system.scale_overrides.get("tiny", {}), **keys[label]},
                },
            )
            if label in keys
            else system
            for label, system in rep.systems.items()
        }
        tiny = rep.workloads["tiny"]
        chosen = {w: tiny[w] for w in workloads} if workloads is not None else tiny
        off = dataclasses.replace(
            rep,
            id=f"{reproduction_id}-mechanism-off",
            systems=systems,
            workloads={**rep.workloads, "tiny": chosen},
        )
        monkeypatch.setitem(registry._REGISTRY, off.id, off)
        return experiments.reproduce(off.id, scale="tiny", out=tmp_path, jobs=2, progress=False)

    return run
