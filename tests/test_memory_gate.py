"""The local backend's memory gate: runs started together stay within the host-memory budget
by the engine's estimates, a run larger than the budget runs alone, and every run runs once."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import xlat
from xlat.sweep import _MemoryGate, sweep


def drive(
    needs: list[int | None],
    budget: int | None,
    workers: int,
    seed: int,
    hold: Callable[[int], object] | None = None,
) -> list[tuple]:
    """Run the gate with ``workers`` threads, each holding a run for a random short while
    (or calling ``hold(run)``); returns the log of ``("start"|"end", run, in-flight runs
    after the event)``."""
    gate = _MemoryGate(needs, budget)
    rng = random.Random(seed)
    holds = [rng.uniform(0.0, 0.002) for _ in needs]
    lock = threading.Lock()
    in_flight: set[int] = set()
    log: list[tuple] = []

    def worker() -> None:
        while (i := gate.take()) is not None:
            with lock:
                in_flight.add(i)
                log.append(("start", i, frozenset(in_flight)))
            if hold is None:
                time.sleep(holds[i])
            else:
                hold(i)
            with lock:
                in_flight.discard(i)
                log.append(("end", i, frozenset(in_flight)))
            gate.done(i)

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a worker never got a run nor an end"
    return log


@pytest.mark.parametrize("seed", range(12))
def test_runs_in_flight_fit_the_budget_and_each_runs_once(seed: int) -> None:
    rng = random.Random(seed)
    budget = rng.randint(10, 40)
    needs = [rng.choice([None, rng.randint(1, 50)]) for _ in range(rng.randint(1, 25))]
    log = drive(needs, budget, workers=rng.randint(1, 4), seed=seed)
    started = [i for kind, i, _ in log if kind == "start"]
    assert sorted(started) == list(range(len(needs)))
    for kind, _, flight in log:
        if kind == "start" and len(flight) > 1:
            assert sum(needs[j] or 0 for j in flight) <= budget, (needs, budget, flight)


def test_a_run_larger_than_the_budget_runs_alone_and_the_rest_run_together() -> None:
    # The two small runs each wait until the other has started (a barrier, not a sleep: on
    # a loaded machine the first could end before the second is handed out, which proves
    # nothing about the gate). If the gate held one back, the barrier times out and breaks.
    both = threading.Barrier(2, timeout=20)
    log = drive([10, 1, 1], budget=5, workers=2, seed=0, hold=lambda i: i and both.wait())
    flights = [flight for kind, _, flight in log if kind == "start"]
    assert flights[0] == {0}
    assert all(0 not in f for f in flights[1:])
    # Once the large run is done, the two small ones fit side by side.
    assert {1, 2} in [set(f) for _, _, f in log]


def test_without_a_budget_runs_start_in_the_sweeps_order() -> None:
    log = drive([100, 100, 100, 100], budget=None, workers=1, seed=1)
    assert [i for kind, i, _ in log if kind == "start"] == [0, 1, 2, 3]


def test_a_small_run_passes_a_waiting_large_one() -> None:
    # 0 runs; 1 does not fit beside it, 2 does: 2 starts while 1 waits.
    gate = _MemoryGate([6, 6, 3], budget=10)
    assert gate.take() == 0
    assert gate.take() == 2
    gate.done(0)
    gate.done(2)
    assert gate.take() == 1
    assert gate.take() is None


def test_closing_the_gate_wakes_a_waiting_worker() -> None:
    gate = _MemoryGate([8, 8], budget=10)
    assert gate.take() == 0
    got: list[int | None] = []
    waiter = threading.Thread(target=lambda: got.append(gate.take()))
    waiter.start()
    time.sleep(0.05)
    gate.close()
    waiter.join(timeout=10)
    assert got == [None]


@pytest.mark.engine
def test_the_engine_estimates_a_runs_host_memory() -> None:
    core = xlat.api.engine()
    small = core.host_estimate(
        "baseline-radix", ['workload.name="gups"', "workload.table_bytes=67108864"]
    )
    large = core.host_estimate(
        "baseline-radix", ['workload.name="gups"', "workload.table_bytes=17179869184"]
    )
    # 128 host bytes per 4 KiB page of the table, beside the structures of the config.
    assert large - small == pytest.approx(128 * ((16 << 30) - (64 << 20)) // 4096, rel=0.01)
    assert core.parse_size("20GiB", "memory") == 20 << 30
    with pytest.raises(core.XlatError, match="memory"):
        core.parse_size("12XB", "memory")


@pytest.mark.engine
def test_a_sweep_whose_runs_exceed_the_budget_runs_them_one_at_a_time(tmp_path: Path) -> None:
    res = sweep(
        "baseline-radix",
        {"mmu.l2tlb.unified.entries": [768, 1536, 3072]},
        {"gups": {"table_bytes": 64 << 20}},
        out=tmp_path / "s",
        overrides={"os.physmem.bytes": 2 << 30, "workload.references": 20_000},
        jobs=2,
        progress=False,
        memory=1,
    )
    assert (res.ran, res.failed) == (3, [])
    df = xlat.load(tmp_path / "s")
    assert set(df["status"]) == {"ok"}
    # Each run's own peak: a 64 MiB table's engine state beside the worker's interpreter.
    assert all(16 << 20 < b < 4 << 30 for b in df["peak_host_bytes"]), list(df["peak_host_bytes"])


def test_no_run_starts_from_the_deadline_on() -> None:
    now = [0.0]
    gate = _MemoryGate([None] * 4, budget=None, deadline=10.0, clock=lambda: now[0])
    assert gate.take() == 0
    now[0] = 9.5
    assert gate.take() == 1
    now[0] = 10.0
    assert gate.take() is None
    # Runs already started still end; the rest stay waiting, for the next sweep.
    gate.done(0)
    gate.done(1)
    assert gate.waiting == [2, 3]


def test_a_worker_waiting_for_room_stops_at_the_deadline() -> None:
    # Run 1 never fits beside run 0, which never ends here: only the deadline can end the wait.
    gate = _MemoryGate([8, 8], budget=10, deadline=time.monotonic() + 0.05)
    assert gate.take() == 0
    got: list[int | None] = []
    waiter = threading.Thread(target=lambda: got.append(gate.take()))
    waiter.start()
    waiter.join(timeout=30)
    assert got == [None]
    assert gate.waiting == [1]
