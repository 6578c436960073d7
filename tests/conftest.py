"""Shared fixtures of the xlat test-suite.

Two kinds of tests live here:

* pure-Python tests (override conversion, summaries, argument parsing) that run against a fake
  engine installed with the ``fake_core`` fixture;
* tests marked ``engine`` that drive the real compiled module ``xlat._core`` (built by
  ``pip install .``). They are collected and run normally: a missing engine is a failure.

Simulations in tests stay tiny (well under 1e6 references) so the suite runs in seconds.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Callable

import pytest

import xlat.api
from support import FakeCore


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
