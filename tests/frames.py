"""Synthetic sweep results (the DataFrame :mod:`xlat.sweep` produces) for plot/report tests.

The numbers are chosen by formula, not measured, so a test can compute what a figure must show.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

WORKLOADS = ("gups", "btree-lookup", "graph-bfs")
#: label -> L2 TLB entries swept at that point.
LABELS = {"l2tlb=1536": 1536, "l2tlb=3072": 3072, "l2tlb=6144": 6144}
ENTRIES_KEY = "param.mmu.l2tlb.unified.entries"


def cycles_of(workload: str, label: str, seed: int) -> float:
    """Cycles of one synthetic run: bigger TLB -> fewer cycles; each seed shifts by 10%."""
    w = WORKLOADS.index(workload) + 1
    size = list(LABELS).index(label) + 1
    return 1_000_000.0 * w / size * (1.0 + 0.1 * (seed - 1))


def run_row(workload: str, label: str, seed: int, **extra: Any) -> dict[str, Any]:
    """One successful run with every summary statistic the report uses."""
    cycles = cycles_of(workload, label, seed)
    instructions = 1_000_000.0
    size = list(LABELS).index(label) + 1
    row: dict[str, Any] = {
        "run_id": f"{workload}-{label}-{seed}",
        "status": "ok",
        "error": None,
        "system": "baseline-radix",
        "workload": workload,
        "seed": seed,
        "label": label,
        ENTRIES_KEY: LABELS[label],
        "config.mmu.l2tlb.unified.entries": LABELS[label],
        "stats.summary.cycles": cycles,
        "stats.summary.instructions": instructions,
        "stats.summary.ipc": instructions / cycles,
        "stats.summary.l2tlb_mpki": 30.0 / size,
        "stats.summary.walks": 1000 * (4 - size),
        "stats.summary.avg_walk_latency": 100.0 + 10 * seed,
        "stats.summary.walk_refs_l1": 40 * size,
        "stats.summary.walk_refs_l2": 30,
        "stats.summary.walk_refs_llc": 20,
        "stats.summary.walk_refs_dram": 10 * (4 - size),
        "stats.summary.faults": 0,
        "stats.summary.dram_row_hit_rate": 0.5,
    }
    row.update(extra)
    return row


def failed_row(workload: str, label: str, seed: int, error: str) -> dict[str, Any]:
    """A failed run: no statistics, an error message."""
    return {
        "run_id": f"{workload}-{label}-{seed}-failed",
        "status": "failed",
        "error": error,
        "system": "baseline-radix",
        "workload": workload,
        "seed": seed,
        "label": label,
        ENTRIES_KEY: LABELS[label],
    }


def results(
    seeds: Sequence[int] = (1,),
    workloads: Sequence[str] = WORKLOADS,
    labels: Sequence[str] = tuple(LABELS),
    failed: Sequence[dict[str, Any]] = (),
) -> pd.DataFrame:
    """A full sweep: every workload x label x seed, plus the ``failed`` rows."""
    rows = [run_row(w, lab, s) for w in workloads for lab in labels for s in seeds]
    return pd.DataFrame(rows + list(failed))
