"""Sweeps with the real engine: planning, results, resume after a kill, failures, the Dask
backend with a worker killed mid-run, and ``xlat query``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from pathlib import Path

import pytest

import xlat
from xlat.results import load, query
from xlat.sweep import engine_run_id, plan, run_id, sweep

pytestmark = pytest.mark.engine

#: Small, fast runs: a 64 MiB GUPS table on 2 GiB of unfragmented memory.
TINY = {
    "os.physmem.bytes": 2 << 30,
    "os.physmem.fragmentation": 0.0,
    "workload.references": 20_000,
}
GUPS = {"gups": {"table_bytes": 64 << 20}}


def run_records(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (out / "runs").glob("*/run.json")}


def test_a_run_finished_in_another_sweep_is_copied_not_simulated(tmp_path: Path) -> None:
    first = sweep(
        "baseline-radix",
        {"mmu.l2tlb.unified.entries": [768, 1536]},
        GUPS,
        out=tmp_path / "a",
        overrides=TINY,
        jobs=2,
        progress=False,
    )
    assert (first.ran, first.reused) == (2, 0)
    # The second sweep shares one point (1536 entries) with the first and adds one (3072).
    second = sweep(
        "baseline-radix",
        {"mmu.l2tlb.unified.entries": [1536, 3072]},
        GUPS,
        out=tmp_path / "b",
        overrides=TINY,
        jobs=2,
        progress=False,
        reuse=[tmp_path / "a", tmp_path / "missing"],
    )
    assert (second.ran, second.skipped, second.reused, second.failed) == (1, 1, 1, [])
    shared = run_id_of(tmp_path / "b", 1536)
    assert shared == run_id_of(tmp_path / "a", 1536)
    a = (tmp_path / "a" / "runs" / shared / "stats.json").read_text()
    assert (tmp_path / "b" / "runs" / shared / "stats.json").read_text() == a
    df = xlat.load(tmp_path / "b")
    assert sorted(df["param.mmu.l2tlb.unified.entries"]) == [1536, 3072]
    assert set(df["status"]) == {"ok"}
    # The copy is recorded under this sweep's point and is finished: nothing runs again.
    again = sweep(
        "baseline-radix",
        {"mmu.l2tlb.unified.entries": [1536, 3072]},
        GUPS,
        out=tmp_path / "b",
        overrides=TINY,
        progress=False,
    )
    assert (again.ran, again.skipped, again.reused) == (0, 2, 0)


def test_a_run_of_an_earlier_model_is_simulated_again_with_a_warning(tmp_path: Path) -> None:
    # A run id hashes the model epoch: the same config under another epoch is another run.
    core = xlat.api.engine()
    (spec,) = plan("baseline-radix", None, GUPS, overrides=TINY)
    config = core.resolve(spec.system, list(spec.overrides), None)
    now = engine_run_id(config)
    assert now == run_id(config, core.__version__, core.MODEL_EPOCH)
    old = run_id(config, core.__version__, "2000-01-01")
    assert old != now
    first = sweep("baseline-radix", None, GUPS, out=tmp_path, overrides=TINY, progress=False)
    assert first.run_ids == [now]
    # Make the directory look as the earlier model left it: its run under the earlier id.
    (tmp_path / "runs" / now).rename(tmp_path / "runs" / old)
    manifest = json.loads((tmp_path / "sweep.json").read_text())
    assert manifest["model_epoch"] == core.MODEL_EPOCH
    manifest["model_epoch"] = "2000-01-01"
    (tmp_path / "sweep.json").write_text(json.dumps(manifest))
    with pytest.warns(RuntimeWarning, match="made by the model of 2000-01-01"):
        again = sweep("baseline-radix", None, GUPS, out=tmp_path, overrides=TINY, progress=False)
    assert (again.ran, again.skipped) == (1, 0)
    assert (tmp_path / "runs" / old / "stats.json").is_file()  # kept, not used
    # Resumed under the same model, nothing runs and nothing is said.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resumed = sweep("baseline-radix", None, GUPS, out=tmp_path, overrides=TINY, progress=False)
    assert (resumed.ran, resumed.skipped) == (0, 1)


def run_id_of(out: Path, entries: int) -> str:
    df = xlat.load(out)
    return df[df["param.mmu.l2tlb.unified.entries"] == entries]["run_id"].iloc[0]


def test_plan_is_the_cartesian_product_in_a_stable_order() -> None:
    specs = plan(
        ["baseline-radix", "perfect-tlb"],
        {"mmu.walkers": [1, 2], "schemes.radix.pwc.latency": [2, 4]},
        ["gups", "stream"],
        seeds=[1, 2],
    )
    assert len(specs) == 2 * 4 * 2 * 2
    assert specs[0].label == "baseline-radix walkers=1 pwc.latency=2"
    assert "seed=2" in specs[1].overrides and specs[1].seed == 2
    assert [s.workload for s in specs[:8]] == ["gups"] * 8
    assert plan("baseline-radix", workloads=[("bfs", {"scale": 10})])[0].overrides == (
        'workload.name="bfs"',
        "workload.scale=10",
    )


def test_sweep_round_trip_matches_single_runs(tmp_path: Path) -> None:
    out = tmp_path / "s"
    res = sweep(
        "baseline-radix",
        {"mmu.l2tlb.unified.entries": [768, 1536]},
        GUPS,
        out=out,
        overrides=TINY,
        jobs=2,
        progress=False,
    )
    assert (res.ran, res.skipped, res.failed) == (2, 0, [])
    df = xlat.load(out)
    assert len(df) == 2 and set(df["status"]) == {"ok"}
    assert sorted(df["param.mmu.l2tlb.unified.entries"]) == [768, 1536]
    assert set(df["config.mmu.l2tlb.unified.entries"]) == {768, 1536}
    row = df[df["param.mmu.l2tlb.unified.entries"] == 768].iloc[0]
    single = xlat.run(
        "baseline-radix",
        "gups",
        overrides={**TINY, "workload.table_bytes": 64 << 20, "mmu.l2tlb.unified.entries": 768},
    )
    assert row["stats.summary.cycles"] == single["summary"]["cycles"]
    assert row["stats.mmu.l2tlb.misses"] == single["mmu"]["l2tlb"]["misses"]
    # The stored stats are the engine's bytes, and the id names the resolved config.
    stored = json.loads((out / "runs" / row["run_id"] / "stats.json").read_text())
    assert stored["summary"] == single["summary"]
    assert (out / "results.parquet").exists()


def test_a_failing_run_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    missing = tmp_path / "missing.xtr"
    bad = tmp_path / "bad.toml"
    bad.write_text(f'extends = "baseline-radix"\n[workload]\nname = "trace"\npath = "{missing}"\n')
    good = tmp_path / "good.toml"
    good.write_text(
        'extends = "baseline-radix"\n[workload]\nname = "gups"\n'
        "table_bytes = 67108864\nreferences = 20000\n"
    )
    memory = {k: v for k, v in TINY.items() if k.startswith("os.")}
    out = tmp_path / "s"
    with pytest.warns(RuntimeWarning, match="1 of 2 runs failed.*no such trace file"):
        res = sweep(
            [str(bad), str(good)],
            out=out,
            overrides=memory,
            jobs=2,
            progress=False,
        )
    assert res.ran == 2 and len(res.failed) == 1
    df = load(out).set_index("system")
    assert df.loc[str(good), "status"] == "ok"
    assert df.loc[str(bad), "status"] == "failed"
    assert "no such trace file" in df.loc[str(bad), "error"]
    # A re-run retries only what is not finished; that all of it fails is an error.
    with pytest.raises(xlat.XlatError, match="all 1 runs failed.*no such trace file"):
        sweep([str(bad), str(good)], out=out, overrides=memory, jobs=1, progress=False)
    assert run_records(out)[df.loc[str(good), "run_id"]]["status"] == "ok"


def worker_pids() -> list[int]:
    """The live local-backend workers this process started."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and b"xlat.worker" in cmdline:
            pids.append(int(stat.parent.name))
    return pids


def test_a_dying_worker_loses_only_its_run(tmp_path: Path) -> None:
    # One worker runs three points in order; once the first is stored, the worker is killed
    # while it holds the second, which cannot finish first (10^12 references).
    refs = [20_000, 10**12, 20_001]
    killed: list[int] = []

    def kill_worker_after_first(rid: str, result) -> None:
        if not killed:
            (pid,) = worker_pids()
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    out = tmp_path / "s"
    with pytest.warns(RuntimeWarning, match="1 of 3 runs failed"):
        res = sweep(
            "baseline-radix",
            {"workload.references": refs},
            GUPS,
            out=out,
            overrides={k: v for k, v in TINY.items() if k.startswith("os.")},
            jobs=1,
            progress=False,
            on_result=kill_worker_after_first,
        )
    assert res.ran == 3
    df = load(out).set_index("param.workload.references")
    assert list(df.loc[refs, "status"]) == ["ok", "failed", "ok"]
    assert "the worker process died (exit status -9)" in df.loc[10**12, "error"]
    assert not worker_pids(), "every worker has ended"


def test_the_readme_sweep_runs_as_a_plain_script(tmp_path: Path) -> None:
    # The README's example, saved as a script without a __main__ guard (shrunk to 20k refs).
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    block = next(b for b in readme.split("```python")[1:] if "xlat.sweep(" in b)
    code = block.split("```")[0].replace("1_000_000", "20_000")
    assert "__main__" not in code
    script = tmp_path / "sw.py"
    script.write_text(
        "import xlat\n" + code + "\nassert res.ran == len(res.run_ids) and not res.failed\n"
        "assert (df['status'] == 'ok').all(), df['error']\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(run_records(tmp_path / "out" / "walkers")) == 12


def test_a_bad_point_is_an_error_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(xlat.XlatError, match="walkers"):
        sweep("baseline-radix", {"mmu.walkers": [1, 0]}, GUPS, out=tmp_path / "s", progress=False)
    assert not (tmp_path / "s" / "runs").exists()


def test_sweep_killed_midway_resumes_and_runs_everything_exactly_once(tmp_path: Path) -> None:
    out = tmp_path / "s"
    args = [
        sys.executable, "-m", "xlat", "sweep", "-c", "baseline-radix", "-w", "gups",
        "--grid", "mmu.l2tlb.unified.entries=384,768,1536,3072,6144,12288",
        "--set", "os.physmem.bytes=2147483648", "--set", "os.physmem.fragmentation=0.0",
        "--set", "workload.table_bytes=67108864", "--refs", "600k",
        "-j", "1", "-o", str(out), "--no-progress",
    ]  # fmt: skip
    proc = subprocess.Popen(args, start_new_session=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(run_records(out)) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole sweep, workers included: no clean-up
    proc.wait()
    first = run_records(out)
    assert 2 <= len(first) < 6, "the sweep was not interrupted midway"
    assert all(r["status"] == "ok" for r in first.values())

    again = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{6 - len(first)} ran, {len(first)} already finished" in again.stdout
    final = run_records(out)
    assert len(final) == 6 and all(r["status"] == "ok" for r in final.values())
    for rid, record in first.items():  # finished runs were not run again
        assert final[rid]["worker"] == record["worker"]
    assert len(load(out)) == 6


@pytest.mark.parametrize("backend", ["local", "dask"])
def test_a_sweep_past_its_time_limit_starts_nothing_and_resumes_later(
    tmp_path: Path, backend: str
) -> None:
    if backend == "dask":
        pytest.importorskip("distributed")
    out = tmp_path / "s"
    grid = {"mmu.l2tlb.unified.entries": [768, 1536, 3072]}
    common = dict(out=out, overrides=TINY, backend=backend, jobs=1, progress=False)
    stopped = sweep("baseline-radix", grid, GUPS, stop_after=0, **common)
    assert (stopped.ran, stopped.not_started, stopped.failed) == (0, 3, [])
    assert run_records(out) == {}
    # A limit far off: every run (under dask, through the submissions that follow each end).
    rest = sweep("baseline-radix", grid, GUPS, stop_after=3600, **common)
    assert (rest.ran, rest.skipped, rest.not_started, rest.failed) == (3, 0, 0, [])
    assert len(load(out)) == 3
    with pytest.raises(ValueError, match="stop_after"):
        sweep("baseline-radix", grid, GUPS, stop_after=-1, **common)


def test_under_dask_a_run_ending_after_the_time_limit_submits_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed")
    # The sweep reads its clock when it sets the deadline and when it fills the cluster's one
    # thread: both before the limit. The first run's end is read after it: nothing follows.
    readings = iter([0.0, 0.0])
    monkeypatch.setattr(sys.modules["xlat.sweep"], "_clock", lambda: next(readings, 10.0))
    grid = {"mmu.l2tlb.unified.entries": [768, 1536, 3072]}
    result = sweep(
        "baseline-radix", grid, GUPS, out=tmp_path / "s", overrides=TINY, backend="dask",
        jobs=1, progress=False, stop_after=5,
    )  # fmt: skip
    assert (result.ran, result.not_started, result.failed) == (1, 2, [])
    assert len(run_records(tmp_path / "s")) == 1


def test_dask_backend_retries_the_run_of_a_killed_worker(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    # One point is ~500 times longer than the others: the worker that runs it is killed while
    # that run is provably in progress (from its own event loop, which is what would report
    # the run finished), so the run can only have finished on another worker.
    references = [20_000, 30_000, 40_000, 10_000_000]
    grid = {"workload.references": references}
    core = xlat.api.engine()
    (long_spec,) = [
        s
        for s in plan("baseline-radix", grid, GUPS, overrides=TINY)
        if dict(s.params)["workload.references"] == references[-1]
    ]
    long_rid = engine_run_id(core.resolve(long_spec.system, list(long_spec.overrides), None))
    long_key = f"xlat-run-{long_rid}"  # the task key the dask backend gives a run

    def kill_if_executing(dask_worker) -> str | None:
        """Runs in a worker's event loop: kill the worker if it is running the long run."""
        task = dask_worker.state.tasks.get(long_key)
        if task is not None and task.state == "executing":
            os.kill(os.getpid(), signal.SIGKILL)
        return None if task is None else task.state

    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    try:
        pids = client.run(os.getpid)
        out = tmp_path / "s"
        outcome: dict = {}
        stored: Counter = Counter()

        def run_sweep() -> None:
            try:
                outcome["result"] = sweep(
                    "baseline-radix",
                    grid,
                    GUPS,
                    out=out,
                    overrides=TINY,
                    backend="dask",
                    scheduler=cluster.scheduler_address,
                    progress=False,
                    on_result=lambda rid, _: stored.update([rid]),
                )
            except BaseException as exc:  # re-raised by the test below
                outcome["error"] = exc

        thread = threading.Thread(target=run_sweep)
        thread.start()
        killed_pid = None
        deadline = time.monotonic() + 120
        while killed_pid is None and thread.is_alive() and time.monotonic() < deadline:
            for address, keys in client.processing().items():
                if long_key in keys:
                    reply = client.run(kill_if_executing, workers=[address], on_error="return")
                    if isinstance(reply.get(address), Exception):  # it died answering
                        killed_pid = pids[address]
                    break
            time.sleep(0.02)
        thread.join(timeout=300)
        assert not thread.is_alive(), "the sweep did not finish"
        if "error" in outcome:
            raise outcome["error"]
        assert killed_pid is not None, "the long run was never seen executing"
        result = outcome["result"]
        assert result.failed == [], result.failed
        assert long_rid in result.run_ids and len(result.run_ids) == 4
        assert stored == dict.fromkeys(result.run_ids, 1)  # every run stored exactly once
        records = run_records(out)
        assert set(records) == set(result.run_ids)
        assert all(r["status"] == "ok" for r in records.values())
        # The long run was re-run elsewhere: its record names a worker that is not the one
        # killed (the nanny restarts the killed worker under a new pid).
        assert not records[long_rid]["worker"].endswith(f":{killed_pid}"), records[long_rid]
    finally:
        client.close()
        cluster.close()


def test_query_runs_sql_over_sweeps(tmp_path: Path, run_cli) -> None:
    out = tmp_path / "s"
    sweep(
        ["baseline-radix", "perfect-tlb"], workloads=GUPS, out=out, overrides=TINY, progress=False
    )
    frame = query('SELECT label, "stats.summary.walks" AS walks FROM runs ORDER BY label', [out])
    assert frame["label"].tolist() == ["baseline-radix", "perfect-tlb"]
    assert frame["walks"].iloc[0] > 0 and frame["walks"].iloc[1] == 0
    cli = run_cli("query", "SELECT count(*) AS n FROM runs WHERE status = 'ok'", out, "--csv")
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.split() == ["n", "2"]
    # Swept values keep their type: 768 sorts before 1536 (as text it would not).
    grid = tmp_path / "grid"
    entries = [1536, 768]
    sweep("baseline-radix", {"mmu.l2tlb.unified.entries": entries}, GUPS, out=grid,
          overrides=TINY, progress=False)  # fmt: skip
    column = '"param.mmu.l2tlb.unified.entries"'
    frame = query(f"SELECT {column} AS e FROM runs ORDER BY e", [grid])
    assert frame["e"].tolist() == [768, 1536]
    for sql, says in (("SELECT nope FROM runs", "nope"), ("SELEC 1", "SELEC")):
        bad = run_cli("query", sql, out)
        assert bad.returncode == 2 and says in bad.stderr and "Traceback" not in bad.stderr
        assert bad.stderr.count("\n") == 1, bad.stderr
