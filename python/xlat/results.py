"""Results of sweeps on disk, as pandas DataFrames and DuckDB tables.

A sweep directory holds one folder per run and one Parquet file for the whole sweep::

    SWEEP/
      sweep.json               what was asked: systems, grid, workloads, seeds, the run ids
      runs/<run_id>/run.json   one run's record: its point, status, error, timing (written last)
      runs/<run_id>/stats.json the engine's statistics (finished runs only)
      runs/<run_id>/config.toml the fully resolved config the run used
      results.parquet          one row per run, everything flattened by path (see below)

A run is *finished* when its ``run.json`` says ``"status": "ok"``; every file is written
atomically (temporary file + rename), so an interrupted sweep never leaves a half-written result
that looks finished.

The table has one row per run and these columns:

* ``run_id``, ``status`` (``"ok"`` / ``"failed"``), ``error``, ``system`` (the config the run
  started from: preset name or file), ``workload``, ``seed``, ``label`` (short name of the point),
  ``elapsed_s``, ``worker`` (host:pid that ran it), ``peak_host_bytes`` (the run's peak
  resident memory on a local worker, where the system reports it; else empty);
* ``param.<key>``: the value of each swept key at this point (``param.mmu.l2tlb.unified.entries``);
* ``config.<path>``: every key of the resolved config (``config.mmu.walkers``);
* ``stats.<path>``: every statistic (``stats.summary.ipc``, ``stats.mmu.l2tlb.misses``). Lists
  (epoch series, histograms) are kept as JSON text.

In SQL, quote the dotted names: ``SELECT workload, "stats.summary.ipc" FROM runs``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

__all__ = [
    "RESULTS_FILE",
    "RUNS_DIR",
    "SWEEP_FILE",
    "collect",
    "flatten",
    "load",
    "query",
    "read_run",
    "write_atomic",
]

PathLike = Union[str, "os.PathLike[str]"]

RUNS_DIR = "runs"
SWEEP_FILE = "sweep.json"
RESULTS_FILE = "results.parquet"
RUN_FILE = "run.json"


def write_atomic(path: PathLike, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename, so that a reader (or a
    resumed sweep) never sees a half-written file. Creates missing parent directories."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten a nested mapping to ``{"a.b.c": value}``; lists become JSON text.

    >>> flatten({"summary": {"ipc": 0.5}, "epochs": [1, 2]}, "stats.")
    {'stats.summary.ipc': 0.5, 'stats.epochs': '[1, 2]'}
    """
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, (list, tuple)):
            out[name] = json.dumps(value)
        else:
            out[name] = value
    return out


def read_run(run_dir: Path) -> dict[str, Any] | None:
    """The table row of the run stored in ``run_dir``, or ``None`` if it has no record yet."""
    record_path = run_dir / RUN_FILE
    if not record_path.exists():
        return None
    record = json.loads(record_path.read_text(encoding="utf-8"))
    row: dict[str, Any] = {
        "run_id": record["run_id"],
        "status": record["status"],
        "error": record.get("error"),
        "system": record["system"],
        "workload": record.get("workload"),
        "seed": record.get("seed"),
        "label": record.get("label"),
        "elapsed_s": record.get("elapsed_s"),
        "worker": record.get("worker"),
        "peak_host_bytes": record.get("peak_host_bytes"),
    }
    row.update({f"param.{k}": v for k, v in record.get("params", {}).items()})
    return _add_outputs(row, run_dir, with_stats=record["status"] == "ok")


def _add_outputs(row: dict[str, Any], run_dir: Path, with_stats: bool) -> dict[str, Any]:
    """Add a run directory's resolved config (``config.*``) and statistics (``stats.*``)."""
    config_path = run_dir / "config.toml"
    if config_path.exists():
        row.update(flatten(tomllib.loads(config_path.read_text(encoding="utf-8")), "config."))
    stats_path = run_dir / "stats.json"
    if with_stats and stats_path.exists():
        row.update(flatten(json.loads(stats_path.read_text(encoding="utf-8")), "stats."))
    return row


def _frame(rows: list[dict[str, Any]]):
    import pandas as pd

    frame = pd.DataFrame(rows)
    # Parquet needs one type per column: a key that is an int in one config and a string in
    # another (rare, e.g. a parameter swept over mixed values) is stored as text.
    for column in frame.columns:
        kinds = {type(v) for v in frame[column] if v is not None and v == v}
        if len(kinds) > 1 and not kinds <= {int, float, bool}:
            frame[column] = frame[column].map(lambda v: None if v is None else str(v))
    return frame


def collect(sweep_dir: PathLike, run_ids: Iterable[str] | None = None):
    """Gather the runs of ``sweep_dir`` into one DataFrame and write ``results.parquet``.

    ``run_ids`` restricts (and orders) the rows; by default the runs listed in ``sweep.json``,
    or every run folder if there is none.
    """
    sweep_dir = Path(sweep_dir)
    if run_ids is None:
        manifest = sweep_dir / SWEEP_FILE
        if manifest.exists():
            run_ids = json.loads(manifest.read_text(encoding="utf-8"))["run_ids"]
        else:
            run_ids = sorted(p.name for p in (sweep_dir / RUNS_DIR).glob("*") if p.is_dir())
    rows = [row for rid in run_ids if (row := read_run(sweep_dir / RUNS_DIR / rid)) is not None]
    frame = _frame(rows)
    tmp = sweep_dir / f".{RESULTS_FILE}.{os.getpid()}.tmp"
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, sweep_dir / RESULTS_FILE)
    return frame


def load(path: PathLike):
    """Load results as a pandas DataFrame, one row per run.

    ``path`` is a sweep directory (its ``results.parquet``, rebuilt from the run folders when
    a run finished after it was written), a Parquet file, or a single run's ``--out`` directory
    (``stats.json`` + ``config.toml``).

    Raises:
        FileNotFoundError: if ``path`` holds no results.
    """
    import pandas as pd

    path = Path(path)
    if path.is_file():
        return pd.read_parquet(path)
    results = path / RESULTS_FILE
    runs = path / RUNS_DIR
    if runs.is_dir():
        newest = max((p.stat().st_mtime for p in runs.glob(f"*/{RUN_FILE}")), default=0.0)
        if results.exists() and results.stat().st_mtime >= newest:
            return pd.read_parquet(results)
        return collect(path)
    if results.exists():
        return pd.read_parquet(results)
    if (path / "stats.json").exists():
        row = {"run_id": path.name, "status": "ok"}
        return _frame([_add_outputs(row, path, with_stats=True)])
    raise FileNotFoundError(
        f"{path}: no results here (expected a sweep directory with {RUNS_DIR}/ or "
        f"{RESULTS_FILE}, a Parquet file, or a run directory with stats.json)"
    )


def query(sql: str, sweeps: Iterable[PathLike]):
    """Run DuckDB SQL over the results of ``sweeps``; returns a pandas DataFrame.

    The runs of every sweep given are visible as the table ``runs`` (a ``sweep`` column says
    which directory a row came from). Dotted column names need double quotes in SQL::

        xlat.query('SELECT workload, label, "stats.summary.ipc" FROM runs ORDER BY 1', ["out/s"])

    Raises:
        FileNotFoundError: a sweep without results.
        duckdb.Error: the SQL is invalid (the message names the problem).
    """
    import duckdb
    import pandas as pd

    frames = []
    for sweep in sweeps:
        frame = load(sweep)
        frame.insert(0, "sweep", os.fspath(sweep))
        frames.append(frame)
    if not frames:
        raise FileNotFoundError("no sweep given: name at least one sweep directory")
    runs = pd.concat(frames, ignore_index=True, sort=False)  # noqa: F841 - used by name in SQL
    con = duckdb.connect()
    try:
        con.register("runs", runs)
        return con.execute(sql).df()
    finally:
        con.close()
