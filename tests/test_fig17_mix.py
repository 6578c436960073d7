"""Utopia Fig 17's weighted speed-up reads each mix member's IPC at its quota
(``mix.members[i]`` in the stats), not its core's IPC over the whole run."""

from __future__ import annotations

import json
import math

import pandas as pd

from xlat.experiments import utopia_fig17


def _member(workload: str, instructions: int, cycles: int) -> dict:
    return {"workload": workload, "instructions": instructions, "cycles": cycles}


def _row(mix: str, label: str, members: list[dict], cores: list[dict]) -> dict:
    # As results.flatten stores them: lists become JSON text.
    return {
        "status": "ok",
        "workload": mix,
        "label": label,
        "stats.mix.members": json.dumps(members),
        "stats.cores": json.dumps(cores),
        "stats.summary.instructions": sum(c["core"]["instructions"] for c in cores),
        "stats.summary.cycles": max(c["core"]["cycles"] for c in cores),
    }


def _core(instructions: int, cycles: int) -> dict:
    return {"core": {"instructions": instructions, "cycles": cycles}}


def test_weighted_speedup_is_the_mean_over_members_of_ipc_at_quota() -> None:
    # Radix: member 0 at IPC 0.5, member 1 at IPC 2.0 (each at its quota); the cores ran on
    # past the quota, at other IPCs, which must not count.
    radix = _row(
        "mix@m1",
        "Radix",
        [_member("gups", 1000, 2000), _member("stream", 4000, 2000)],
        [_core(5000, 9000), _core(40000, 9000)],
    )
    # Utopia: member 0 twice as fast, member 1 as fast as on Radix.
    utopia = _row(
        "mix@m1",
        "Utopia",
        [_member("gups", 1000, 1000), _member("stream", 4000, 2000)],
        [_core(1, 9000), _core(1, 9000)],
    )
    assert utopia_fig17.member_ipcs(radix) == [0.5, 2.0]
    table = utopia_fig17.speedups(pd.DataFrame([radix, utopia]))
    assert table.loc["mix@m1", "Radix"] == 1.0
    assert math.isclose(table.loc["mix@m1", "Utopia"], (2.0 + 1.0) / 2)


def test_a_member_without_cycles_is_left_out() -> None:
    row = _row("mix@m2", "Radix", [_member("tc", 0, 0), _member("bfs", 10, 20)], [_core(10, 20)])
    ipcs = utopia_fig17.member_ipcs(row)
    assert math.isnan(ipcs[0]) and ipcs[1] == 0.5
