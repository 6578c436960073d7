"""Sweeps: many simulations over a grid of systems, parameters, workloads and seeds.

A sweep is the cartesian product ``systems x grid x workloads x seeds``. Every point becomes a
:class:`RunSpec`; its id is a content hash of what the engine will actually simulate (the fully
resolved config, which names the workload, its parameters and the seed) and of the xlat
version, so the same point always has the same id, and two spellings of the same system share
one. Runs execute on a *backend*:

* ``local`` (default): ``jobs`` worker processes on this machine (``xlat.worker``: fresh
  interpreters that import only xlat, never the caller's script), starting together only runs
  whose estimated host memory fits the machine's (``memory``: see :class:`_MemoryGate`);
* ``dask``: tasks on a ``dask.distributed`` cluster (``scheduler="tcp://..."``, or a
  ``LocalCluster`` of ``jobs`` workers when no address is given). A task whose worker dies is
  re-run on another worker by the scheduler.

Workers only simulate and return text; this process writes every result (atomically, as it
arrives) under ``out/runs/<id>/``, so a cluster needs no shared file system and an interrupted
sweep loses nothing but the runs in flight. Running the same sweep again skips the finished
runs, so a long sweep can be run in chunks: ``stop_after`` starts no run once that many seconds
have passed (the runs started finish and are stored), as a cluster job with a time limit needs.
A run that fails (bad config, engine error, a worker that keeps dying) is recorded with
its error; the sweep goes on.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import numbers
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union

from . import api
from .progress import runs_bar
from .results import RUN_FILE, RUNS_DIR, SWEEP_FILE, collect, write_atomic

__all__ = [
    "RunSpec",
    "SweepResult",
    "SweepStatus",
    "execute",
    "identify",
    "plan",
    "status",
    "sweep",
]

PathLike = Union[str, "os.PathLike[str]"]
WorkloadSpec = Union[str, Mapping[str, Mapping[str, Any]], Sequence[Any]]


@dataclass(frozen=True)
class RunSpec:
    """One simulation of a sweep: where it starts from and what it changes."""

    system: str
    """Preset name or config file the run starts from."""
    workload: str | None
    """Built-in workload (``workload.name``), or ``None`` for the config's own."""
    overrides: tuple[str, ...]
    """Engine ``key=value`` overrides (workload parameters, grid point, seed, base overrides)."""
    params: tuple[tuple[str, Any], ...]
    """The swept keys and their values at this point (for the results table)."""
    seed: int | None
    label: str
    """Short human name of the point (system and swept values), used in plots."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "workload": self.workload,
            "overrides": list(self.overrides),
            "params": dict(self.params),
            "seed": self.seed,
            "label": self.label,
        }


@dataclass
class SweepResult:
    """What a call of :func:`sweep` did."""

    out: Path
    run_ids: list[str]
    ran: int = 0
    skipped: int = 0
    """Runs already finished (in this sweep, or in one of ``reuse``, whose results were copied)."""
    reused: int = 0
    """Of ``skipped``: runs copied from another sweep (``reuse``) rather than simulated."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """``(run_id, error)`` of every run that failed in this call."""
    not_started: int = 0
    """Runs left unfinished because ``stop_after`` had passed before they could start: the same
    call again runs them."""

    def load(self):
        """The sweep's results as a pandas DataFrame (see :func:`xlat.load`)."""
        from .results import load

        return load(self.out)


# --------------------------------------------------------------------------------------------
# Planning: the grid -> run specs -> run ids
# --------------------------------------------------------------------------------------------


def _short_key(key: str) -> str:
    """The last part of a dotted key, the part a reader recognises (``entries``)."""
    parts = key.split(".")
    return (
        ".".join(parts[-2:]) if parts[-1] in {"entries", "ways", "latency", "size"} else parts[-1]
    )


def _system_label(system: str) -> str:
    base = os.path.basename(system)
    return base[: -len(".toml")] if base.endswith(".toml") else base


def _normalise_workloads(workloads: WorkloadSpec | None) -> list[tuple[str | None, dict]]:
    """``"gups"``, ``["gups", "bfs"]``, ``{"gups": {"table_bytes": 2**30}}`` or
    ``[("bfs", {"scale": 18})]`` -> ``[(name, params)]``; ``None`` keeps each config's own."""
    if workloads is None:
        return [(None, {})]
    if isinstance(workloads, str):
        return [(workloads, {})]
    if isinstance(workloads, Mapping):
        return [(name, dict(params or {})) for name, params in workloads.items()]
    result: list[tuple[str | None, dict]] = []
    for entry in workloads:
        if isinstance(entry, str):
            result.append((entry, {}))
        elif isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], str):
            result.append((entry[0], dict(entry[1] or {})))
        else:
            raise ValueError(
                f"a workload must be a name or a (name, {{param: value}}) pair, got {entry!r}"
            )
    return result


def plan(
    base: str | Sequence[str],
    grid: Mapping[str, Sequence[Any]] | None = None,
    workloads: WorkloadSpec | None = None,
    seeds: Sequence[int] | None = None,
    overrides: api.Overrides = None,
) -> list[RunSpec]:
    """Expand a sweep into its runs, in a stable order (systems, workloads, grid, seeds).

    Args:
        base: one or several presets / config files.
        grid: dotted key -> values to sweep (every combination is run).
        workloads: see :func:`sweep`.
        seeds: run every point with each of these seeds (default: the config's seed).
        overrides: applied to every run before the grid: dotted key -> value, or raw
            ``"key=value"`` strings as ``--set`` takes them.
    """
    systems = [base] if isinstance(base, str) else list(base)
    if not systems:
        raise ValueError("a sweep needs at least one system (preset or config file)")
    grid = dict(grid or {})
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ValueError(f"grid[{key!r}] must be a list of values, got {values!r}")
    keys = list(grid)
    points = list(itertools.product(*(list(grid[k]) for k in keys))) if keys else [()]
    seed_list: list[int | None] = list(seeds) if seeds else [None]
    specs: list[RunSpec] = []
    for system in systems:
        for name, wl_params in _normalise_workloads(workloads):
            for point in points:
                for seed in seed_list:
                    ovr = api.build_overrides(name, overrides)
                    ovr += api.build_overrides(
                        None, {f"workload.{k}": v for k, v in wl_params.items()}
                    )
                    ovr += api.build_overrides(None, dict(zip(keys, point)))
                    if seed is not None:
                        ovr.append(f"seed={int(seed)}")
                    parts = [_system_label(system)] if len(systems) > 1 or not keys else []
                    parts += [f"{_short_key(k)}={v}" for k, v in zip(keys, point)]
                    specs.append(
                        RunSpec(
                            system=os.fspath(system),
                            workload=name,
                            overrides=tuple(ovr),
                            params=tuple(zip(keys, point)),
                            seed=seed,
                            label=" ".join(parts),
                        )
                    )
    return specs


def run_id(resolved_config: str, version: str, model_epoch: str) -> str:
    """The id of a run: a hash of the resolved config text, the xlat version and the model
    epoch (``MODEL_EPOCH`` of the engine: the date of the last change that moved any run's
    statistics), so that a run the earlier model made is never taken for one of this model."""
    text = f"xlat {version} model {model_epoch}\n{resolved_config}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def engine_run_id(resolved_config: str) -> str:
    """:func:`run_id` under the loaded engine's version and model epoch."""
    core = api.engine()
    return run_id(resolved_config, core.__version__, core.MODEL_EPOCH)


# --------------------------------------------------------------------------------------------
# Executing one run (in a worker: a process of the pool or a dask worker)
# --------------------------------------------------------------------------------------------


def execute(spec: dict[str, Any]) -> dict[str, Any]:
    """Simulate one run; never raises for an engine error: the error is the result.

    Returns ``{"status", "stats" (JSON text), "config" (resolved TOML), "error", "elapsed_s",
    "worker"}``. Runs in a worker process, so it only uses its argument and the engine.
    """
    core = api.engine()
    started = time.perf_counter()
    result: dict[str, Any] = {"worker": f"{socket.gethostname()}:{os.getpid()}"}
    try:
        result["config"] = core.resolve(spec["system"], spec["overrides"], None)
        result["stats"] = core.run(spec["system"], spec["overrides"], None, None, False)
        result["status"] = "ok"
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # engine errors, panics: recorded, the sweep goes on
        result["status"] = "failed"
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["elapsed_s"] = round(time.perf_counter() - started, 3)
    return result


#: What ``run.json`` keeps of a run's result besides its point (``peak_host_bytes``: local
#: workers only, where the system reports it).
RECORD_KEYS = ("status", "error", "elapsed_s", "worker", "peak_host_bytes")


def _store(out: Path, rid: str, spec: RunSpec, result: Mapping[str, Any]) -> None:
    """Persist one finished (or failed) run; ``run.json`` goes last: it marks completion."""
    run_dir = out / RUNS_DIR / rid
    if result.get("config"):
        write_atomic(run_dir / "config.toml", result["config"])
    if result.get("status") == "ok":
        write_atomic(run_dir / "stats.json", result["stats"])
    record = {"run_id": rid, **spec.to_dict()}
    record.update({k: result.get(k) for k in RECORD_KEYS})
    write_atomic(run_dir / RUN_FILE, json.dumps(record, indent=2))


def _adopt(out: Path, rid: str, spec: RunSpec, sources: Sequence[Path]) -> bool:
    """Copy run ``rid``'s results from the first sweep of ``sources`` that finished it.

    A run id is a hash of the resolved config and the engine version, so a run finished in
    another sweep is the same simulation: its results are taken as they are, under this
    sweep's point (system path, label, parameters)."""
    for source in sources:
        if not _finished(source, rid):
            continue
        src = source / RUNS_DIR / rid
        try:
            stats = (src / "stats.json").read_text(encoding="utf-8")
            config = (src / "config.toml").read_text(encoding="utf-8")
            record = json.loads((src / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        result = {k: record.get(k) for k in RECORD_KEYS}
        _store(out, rid, spec, {**result, "stats": stats, "config": config})
        return True
    return False


def _finished(out: Path, rid: str) -> bool:
    path = out / RUNS_DIR / rid / RUN_FILE
    if not path.exists():
        return False
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("status") == "ok"
    except (OSError, ValueError):
        return False


# --------------------------------------------------------------------------------------------
# Backends: each yields (run id, result) as runs finish
# --------------------------------------------------------------------------------------------

Todo = list[tuple[str, dict[str, Any]]]


class _WorkerProcess:
    """One ``xlat.worker`` process (a fresh interpreter that imports only xlat), fed one run at
    a time over its stdin and stdout."""

    def __init__(self) -> None:
        # Found the way this process found it, even if only its sys.path knew where (appended:
        # an installed xlat, if any, keeps priority, as it has here).
        root = str(Path(__file__).resolve().parent.parent)
        start = f"import sys; sys.path.append({root!r}); from xlat.worker import main; main()"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", start],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def run(self, spec: dict[str, Any]) -> dict[str, Any] | None:
        """The run's result, or ``None`` if the process died before answering."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(spec) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (OSError, ValueError):  # a broken pipe, or closed by stop()
            line = ""
        return json.loads(line) if line else None

    def stop(self, kill: bool = False) -> int | None:
        """End the process (it exits when its stdin closes); returns its exit status."""
        if kill and self.proc.poll() is None:
            self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        return self.proc.wait()


def _clock() -> float:
    """Seconds on a monotonic clock: what a sweep's ``stop_after`` deadline is read on."""
    return time.monotonic()


class _MemoryGate:
    """Which of a sweep's waiting runs a free worker takes next, so that the runs in flight
    together stay within ``budget`` bytes of estimated host memory (``needs[i]`` of run ``i``,
    ``None`` where the engine has no estimate: counted as nothing).

    A worker takes the first waiting run, in the sweep's order, that fits beside those in
    flight. If none fits it waits for one to finish, unless none is in flight: then it takes
    the first waiting run alone, whatever its estimate (the engine itself refuses a run larger
    than the machine). So two paper-scale runs of 16 GB each never start together on a 24 GB
    machine, and smaller runs fill the other workers meanwhile. ``budget=None``: no limit, the
    runs start in order as workers free up. From ``deadline`` on (a ``clock()`` reading; none:
    never) no run starts: the gate is as if closed."""

    def __init__(
        self,
        needs: Sequence[int | None],
        budget: int | None,
        deadline: float | None = None,
        clock: Callable[[], float] = _clock,
    ) -> None:
        self.needs = [n or 0 for n in needs]
        self.budget = budget
        self.waiting = list(range(len(needs)))
        self.in_use = 0
        self.in_flight = 0
        self.closed = False
        self.deadline = deadline
        self.clock = clock
        self.cond = threading.Condition()

    def _time_left(self) -> float | None:
        """Seconds until the deadline (at most 0 once it has passed); ``None`` without one."""
        return None if self.deadline is None else self.deadline - self.clock()

    def _pick(self) -> int | None:
        """The position in ``waiting`` of the run to start now, or ``None`` to wait."""
        if self.budget is None or self.in_flight == 0:
            return 0
        room = self.budget - self.in_use
        return next((p for p, i in enumerate(self.waiting) if self.needs[i] <= room), None)

    def take(self) -> int | None:
        """Block until a run may start; its index, or ``None`` when none is left (or the
        gate was closed)."""
        with self.cond:
            while not self.closed and self.waiting:
                left = self._time_left()
                if left is not None and left <= 0:
                    break
                p = self._pick()
                if p is not None:
                    i = self.waiting.pop(p)
                    self.in_use += self.needs[i]
                    self.in_flight += 1
                    return i
                # Waiting for room: wake at the deadline too, to stop rather than start late.
                self.cond.wait(left)
            return None

    def done(self, i: int) -> None:
        """Run ``i`` (from :meth:`take`) finished: its memory is free again."""
        with self.cond:
            self.in_use -= self.needs[i]
            self.in_flight -= 1
            self.cond.notify_all()

    def close(self) -> None:
        """Wake every waiting worker to stop."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def proc_bytes(path: str, field: str) -> int | None:
    """The ``field: N kB`` line of a Linux ``/proc`` file (``/proc/meminfo``,
    ``/proc/self/status``) in bytes, or ``None`` where the system does not say."""
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_memory() -> int | None:
    """This machine's available memory in bytes (``MemAvailable``), or ``None``."""
    return proc_bytes("/proc/meminfo", "MemAvailable")


def _host_estimates(todo: Todo) -> list[int | None]:
    """The engine's estimate of each run's host memory (``None`` where it has none)."""
    core = api.engine()
    return [core.host_estimate(spec["system"], spec["overrides"]) for _, spec in todo]


def _memory_budget(memory: int | str | None) -> int | None:
    """``sweep``'s ``memory`` argument in bytes: ``"auto"`` the available memory now,
    ``None`` no limit, a size (``"20GiB"``, bytes) that size."""
    if memory is None:
        return None
    if memory == "auto":
        return available_memory()
    if isinstance(memory, numbers.Integral) and not isinstance(memory, bool):
        if memory <= 0:
            raise ValueError(f"memory must be positive, got {memory}")
        return int(memory)
    return int(api.engine().parse_size(str(memory), "memory"))


def _local(
    todo: Todo,
    jobs: int,
    needs: Sequence[int | None] = (),
    budget: int | None = None,
    deadline: float | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``jobs`` worker processes (``python -m xlat.worker``), each running one run at a time,
    started together only as far as their estimated host memory (``needs``, by run) fits in
    ``budget`` (:class:`_MemoryGate`), and none from ``deadline`` on. A worker that dies
    (killed, out of memory) takes only its run with it: that run is recorded as failed and a
    new worker takes the next. Leaving early (Ctrl-C, an error) kills the workers: the runs in
    flight are lost, everything finished is already stored."""
    gate = _MemoryGate(list(needs) or [None] * len(todo), budget, deadline)
    lock = threading.Lock()
    stopping = threading.Event()
    live: set[_WorkerProcess] = set()
    finished: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()

    def serve() -> None:
        worker: _WorkerProcess | None = None
        while not stopping.is_set():
            index = gate.take()
            if index is None:
                break
            with lock:
                if worker is None:
                    worker = _WorkerProcess()
                    live.add(worker)
            rid, spec = todo[index]
            result = worker.run(spec)
            gate.done(index)
            if result is None:
                with lock:
                    live.discard(worker)
                status = worker.stop(kill=True)
                worker = None
                result = {
                    "status": "failed",
                    "error": f"the worker process died (exit status {status})",
                }
            finished.put((rid, result))
        if worker is not None:
            with lock:
                live.discard(worker)
            worker.stop()
        finished.put(None)

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(min(jobs, len(todo)))]
    for t in threads:
        t.start()
    try:
        running = len(threads)
        while running:
            item = finished.get()
            if item is None:
                running -= 1
            else:
                yield item
    finally:
        stopping.set()
        gate.close()
        with lock:
            doomed = list(live)
        for worker in doomed:
            worker.stop(kill=True)
        for t in threads:
            t.join()


def _dask(
    todo: Todo, jobs: int, scheduler: str | None, retries: int, deadline: float | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Submit the runs to a dask.distributed cluster; results stream back as they finish.
    Without a ``deadline`` every run is submitted at once. With one, only as many as the
    cluster has worker threads are in flight, and a run finishing before the deadline makes
    room for the next: none is submitted from the deadline on (one already queued by then
    still runs)."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "the dask backend needs dask.distributed: pip install 'xlat[dask]'"
        ) from exc
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None
        )
    client = Client(scheduler if scheduler is not None else cluster)

    def submit(rid: str, spec: dict[str, Any]) -> Any:
        return client.submit(execute, spec, key=f"xlat-run-{rid}", pure=False, retries=retries)

    try:
        if deadline is None:
            first, waiting = todo, iter(())
        else:
            threads = max(1, sum(client.nthreads().values()))
            waiting = iter(todo)
            first = list(itertools.islice(waiting, threads)) if _clock() < deadline else []
        futures = {submit(rid, spec): rid for rid, spec in first}
        finished = as_completed(futures)
        for fut in finished:
            rid = futures.pop(fut)
            if deadline is not None and _clock() < deadline:
                following = next(waiting, None)
                if following is not None:
                    nxt = submit(*following)
                    futures[nxt] = following[0]
                    finished.add(nxt)
            try:
                yield rid, fut.result()
            except Exception as exc:  # e.g. KilledWorker: it died on every worker it tried
                yield rid, {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# --------------------------------------------------------------------------------------------
# The sweep
# --------------------------------------------------------------------------------------------


def sweep(
    base: str | Sequence[str],
    grid: Mapping[str, Sequence[Any]] | None = None,
    workloads: WorkloadSpec | None = None,
    seeds: Sequence[int] | None = None,
    *,
    out: PathLike,
    overrides: api.Overrides = None,
    backend: str = "local",
    jobs: int | None = None,
    scheduler: str | None = None,
    retries: int = 1,
    progress: bool | None = None,
    on_result: Callable[[str, Mapping[str, Any]], None] | None = None,
    reuse: Iterable[PathLike] = (),
    report_failures: bool = True,
    memory: int | str | None = "auto",
    stop_after: float | None = None,
) -> SweepResult:
    """Run every point of a sweep that is not finished yet, and collect the results.

    Args:
        base: preset name(s) or config file(s); several systems are one more sweep dimension.
        grid: dotted config key -> list of values (``{"mmu.l2tlb.unified.entries": [768,
            1536]}``); every combination runs.
        workloads: a name (``"gups"``), a list of names, ``{name: {param: value}}`` or
            ``[(name, {param: value})]``; ``None`` runs each config's own ``[workload]``.
        seeds: run each point once per seed (default: the config's ``seed``).
        out: the sweep directory (created; reused to resume).
        overrides: applied to every run: dotted key -> value, or ``"key=value"`` strings.
        backend: ``"local"`` (process pool) or ``"dask"``.
        jobs: parallel runs (local) or workers of the LocalCluster (dask); default: CPU count.
        scheduler: dask scheduler address (``tcp://host:8786``); default: a LocalCluster.
        retries: dask retries of a task that raised (worker deaths are retried by the
            scheduler itself, up to its ``allowed-failures``).
        progress: draw a bar counting the runs (default: in a notebook or when stderr is a
            terminal).
        on_result: called with ``(run_id, result)`` after each run is stored.
        reuse: other sweep directories: a run finished there (same resolved config, same
            engine version and model epoch) is copied into this sweep instead of simulated
            again.
        report_failures: raise or warn about failed runs as below; ``False`` leaves
            ``result.failed`` to the caller (a reproduction tells the failures its paper
            reports from the others).
        memory: host memory the local backend's runs in flight may take together, by the
            engine's estimate of each (``xlat workloads --footprint`` lists them): ``"auto"``
            (default) this machine's available memory when the sweep starts, a size
            (``"20GiB"`` or bytes), or ``None`` for no limit. A run larger than the limit
            runs alone. The dask backend leaves memory to the cluster.
        stop_after: seconds from the call on after which no run starts (dask: none is
            submitted); the runs started by then finish and are stored, the rest are counted in
            ``result.not_started`` and run when the sweep is called again. ``None`` (default):
            every run. For a cluster job with a time limit, or a long sweep taken in chunks.

    Returns:
        A :class:`SweepResult`; ``result.load()`` gives the DataFrame (also in
        ``out/results.parquet``).

    Raises:
        xlat.XlatError: a point whose config does not resolve (unknown key, bad value): found
            before anything runs, with the point named; or every run that ran failed (each is
            recorded with its error). Some runs failing is a ``RuntimeWarning``. Neither with
            ``report_failures=False``.
    """
    if stop_after is not None and not (stop_after >= 0):
        raise ValueError(f"stop_after must be a number of seconds >= 0, got {stop_after}")
    deadline = None if stop_after is None else _clock() + stop_after
    out = Path(out)
    by_id = identify(plan(base, grid, workloads, seeds, overrides))
    ids = list(by_id)
    core = api.engine()
    out.mkdir(parents=True, exist_ok=True)
    _warn_if_another_model(out, core.MODEL_EPOCH)
    manifest = {
        "xlat_version": core.__version__,
        "model_epoch": core.MODEL_EPOCH,
        "base": [base] if isinstance(base, str) else list(base),
        "grid": {k: list(v) for k, v in (grid or {}).items()},
        "workloads": [[n, p] for n, p in _normalise_workloads(workloads)],
        "seeds": list(seeds) if seeds else None,
        "overrides": api.build_overrides(None, overrides),
        "run_ids": ids,
    }
    write_atomic(out / SWEEP_FILE, json.dumps(manifest, indent=2, default=str))

    sources = _other_sources(out, reuse)
    unfinished = [rid for rid in ids if not _finished(out, rid)]
    adopted = {rid for rid in unfinished if sources and _adopt(out, rid, by_id[rid], sources)}
    todo = [(rid, by_id[rid].to_dict()) for rid in unfinished if rid not in adopted]
    result = SweepResult(out=out, run_ids=ids, skipped=len(ids) - len(todo), reused=len(adopted))
    jobs = max(1, int(jobs or os.cpu_count() or 1))
    bar = runs_bar(len(ids), progress)
    if bar is not None:
        bar.update(result.skipped)
    if backend == "local":
        budget = _memory_budget(memory) if jobs > 1 and len(todo) > 1 else None
        needs = _host_estimates(todo) if budget is not None else []
        stream = _local(todo, jobs, needs, budget, deadline)
    elif backend == "dask":
        stream = _dask(todo, jobs, scheduler, retries, deadline)
    else:
        raise ValueError(f"unknown backend {backend!r} (choose 'local' or 'dask')")
    try:
        for rid, res in stream:
            _store(out, rid, by_id[rid], res)
            result.ran += 1
            if res.get("status") != "ok":
                result.failed.append((rid, str(res.get("error"))))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(failed=len(result.failed))
            if on_result is not None:
                on_result(rid, res)
    finally:
        if bar is not None:
            bar.close()
        # Whatever finished is in the table, even after Ctrl-C.
        collect(out, ids)
    result.not_started = len(todo) - result.ran
    if report_failures:
        _report_failures(result)
    return result


def _warn_if_another_model(out: Path, epoch: str) -> None:
    """A sweep directory last written by another model (``model_epoch`` of its manifest; none
    before there was one) keeps its runs, but none of them counts as done here: their ids
    differ from this model's. Say so, rather than let a resume look like a fresh start."""
    try:
        before = json.loads((out / SWEEP_FILE).read_text())
    except (OSError, ValueError):
        return
    previous = before.get("model_epoch")
    if previous != epoch and (out / RUNS_DIR).is_dir():
        made_by = f"the model of {previous}" if previous else "a model before epochs were kept"
        warnings.warn(
            f"sweep {out}: its runs were made by {made_by}; this engine's model is of {epoch}, "
            "so every run is simulated again (the earlier runs stay in "
            f"{out / RUNS_DIR}, not used)",
            RuntimeWarning,
            stacklevel=3,
        )


def _other_sources(out: Path, reuse: Iterable[PathLike]) -> list[Path]:
    """The sweeps of ``reuse`` other than ``out`` itself."""
    return [Path(p) for p in reuse if Path(p).resolve() != out.resolve()]


def identify(specs: Iterable[RunSpec]) -> dict[str, RunSpec]:
    """The run id of every spec (points that resolve to the same config are one run), in
    order.

    Raises:
        xlat.XlatError: for the first point whose config does not resolve, naming it.
    """
    core = api.engine()
    by_id: dict[str, RunSpec] = {}
    for spec in specs:
        try:
            resolved = core.resolve(spec.system, list(spec.overrides), None)
        except core.XlatError as exc:
            raise core.XlatError(f"sweep point {spec.label or spec.system!r}: {exc}") from exc
        by_id.setdefault(engine_run_id(resolved), spec)
    return by_id


@dataclass
class SweepStatus:
    """How much of a sweep is done, without running anything (:func:`status`)."""

    runs: int
    #: Finished in the sweep's own directory.
    finished: int
    #: Finished in another sweep of ``reuse`` only: copied, not simulated, when it runs.
    reusable: int
    #: Wall seconds the finished runs took, each where it ran.
    elapsed_s: list[float]
    #: Peak host memory of the finished runs that recorded it (local workers).
    peak_host_bytes: list[int] = field(default_factory=list)

    @property
    def todo(self) -> int:
        """Runs that would be simulated."""
        return self.runs - self.finished - self.reusable


def status(run_ids: Iterable[str], out: PathLike, reuse: Iterable[PathLike] = ()) -> SweepStatus:
    """Which of ``run_ids`` are finished in ``out``, which only in a sweep of ``reuse``."""
    out = Path(out)
    sources = _other_sources(out, reuse)
    ids = list(run_ids)
    done = SweepStatus(runs=len(ids), finished=0, reusable=0, elapsed_s=[])
    for rid in ids:
        where = next((d for d in [out, *sources] if _finished(d, rid)), None)
        if where is None:
            continue
        if where == out:
            done.finished += 1
        else:
            done.reusable += 1
        record = json.loads((where / RUNS_DIR / rid / RUN_FILE).read_text(encoding="utf-8"))
        if record.get("elapsed_s") is not None:
            done.elapsed_s.append(float(record["elapsed_s"]))
        if record.get("peak_host_bytes") is not None:
            done.peak_host_bytes.append(int(record["peak_host_bytes"]))
    return done


def _report_failures(result: SweepResult) -> None:
    """A sweep whose runs failed must not look like a success: every run failed is an error,
    some failed a warning; both name the first error and where the others are."""
    if not result.failed:
        return
    rid, first = result.failed[0]
    where = f"errors in {result.out / RUNS_DIR}/<run id>/{RUN_FILE}"
    if len(result.failed) == result.ran:
        raise api.engine().XlatError(
            f"sweep {result.out}: all {result.ran} runs failed; the first ({rid}): {first} "
            f"({where})"
        )
    warnings.warn(
        f"sweep {result.out}: {len(result.failed)} of {result.ran} runs failed; the first "
        f"({rid}): {first} ({where})",
        RuntimeWarning,
        stacklevel=3,
    )
