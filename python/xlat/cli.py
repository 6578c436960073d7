"""The ``xlat`` command line.

::

    xlat run      [--config NAME|FILE] [--workload NAME | --trace FILE] [--set KEY=VALUE]...
                  [--verify] [--refs N] [--out DIR] [--no-progress] [--json]
    xlat compare  --config A --config B [...] [same options as run] [--jobs N]
    xlat bench    [--refs N] [--workload NAME]... [--json]
    xlat presets  [list | show NAME]
    xlat config   [--config NAME|FILE] [--workload NAME] [--set KEY=VALUE]... [--verify] [--refs N]
    xlat sweep    --config A [--config B]... [--workload W]... [--grid KEY=V1,V2,...]...
                  [--seeds 1,2] [--set KEY=VALUE]... [--refs N] --out DIR
                  [--backend local|dask] [--jobs N] [--scheduler ADDR] [--stop-after DURATION]
    xlat query    SQL SWEEP_DIR... [--csv | --json]
    xlat report   SWEEP_DIR [--out FILE]
    xlat reproduce [--list] [--check] [--status] [ID | all] [--quick | --tiny | --scale S]
                  [--out DIR] [--jobs N] [--stop-after DURATION]

Every error of the engine or of the command line is printed as ``xlat: error: <message>`` on
stderr with exit status 2, without a Python traceback. A sweep or reproduction that
``--stop-after`` stopped with runs left exits with status 3.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

from . import api
from .progress import is_terminal
from .summary import format_comparison, format_summary, speedup

__all__ = ["CliError", "build_parser", "main", "parse_count", "parse_duration", "parse_grid"]

#: Exit status for user errors (bad option, bad config, engine error), as argparse uses.
EXIT_USAGE = 2
#: Exit status when the engine panicked (a bug in xlat).
EXIT_INTERNAL = 70
#: Exit status of a sweep or reproduction that ``--stop-after`` left with runs not started.
EXIT_STOPPED = 3
#: Default number of references for ``xlat bench``.
BENCH_REFS = 5_000_000


class CliError(Exception):
    """A user error detected by the command line itself (printed as ``xlat: error: ...``)."""


# --------------------------------------------------------------------------------------------
# Argument helpers
# --------------------------------------------------------------------------------------------

_COUNT = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)\s*$")
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}


def parse_fast_forward(text: str) -> str:
    """Parse ``--fast-forward``: ``roi`` or a count of instructions (``0`` = off).

    Raises:
        argparse.ArgumentTypeError: if ``text`` is neither.
    """
    if text == "roi" or text == "0":
        return text
    try:
        return str(parse_count(text))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"invalid fast-forward {text!r}: roi, 0, or a number of instructions such as 50M"
        ) from None


def parse_count(text: str) -> int:
    """Parse a positive count such as ``5000000``, ``5_000_000``, ``5e6``, ``5M``, ``200k``.

    Suffixes are decimal: ``k`` = 10^3, ``M`` = 10^6, ``G`` = 10^9.

    Raises:
        argparse.ArgumentTypeError: if ``text`` is not a positive whole number.
    """
    match = _COUNT.match(text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"invalid count {text!r} (examples: 1000000, 1_000_000, 1e6, 1M, 200k)"
        )
    number, suffix = match.groups()
    number = number.replace("_", "")
    scale = _SUFFIX[suffix.lower()]
    if re.fullmatch(r"[0-9]+", number):
        value = int(number) * scale
    else:
        as_float = float(number) * scale
        if not math.isfinite(as_float) or as_float != int(as_float):
            raise argparse.ArgumentTypeError(f"invalid count {text!r}: not a whole number")
        value = int(as_float)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: must be positive")
    return value


_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)([hms]?)")
_DURATION_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "": 1.0}


def parse_duration(text: str) -> float:
    """Parse a wall-clock duration in seconds: ``5400``, ``90m``, ``1.5h``, ``1h30m``, ``45s``
    (a bare number is seconds; parts add up, each with its unit: ``1h30`` is refused rather
    than guessed).

    Raises:
        argparse.ArgumentTypeError: if ``text`` is not such a duration.
    """
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION_PART.findall(compact)
    unitless = len(parts) > 1 and any(not u for _, u in parts)
    if not compact or unitless or "".join(n + u for n, u in parts) != compact:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r} (examples: 5400, 90m, 1.5h, 1h30m)"
        )
    return sum(float(n) * _DURATION_UNIT[u] for n, u in parts)


def _config_label(config: str) -> str:
    """A short name for a config: the preset name, or the stem of a config file."""
    if config.endswith(".toml") or os.sep in config or (os.altsep and os.altsep in config):
        stem = os.path.splitext(os.path.basename(config))[0]
        return stem or config
    return config


def _unique_labels(configs: Sequence[str]) -> list[str]:
    labels: list[str] = []
    for config in configs:
        label = _config_label(config)
        candidate, n = label, 2
        while candidate in labels:
            candidate, n = f"{label}-{n}", n + 1
        labels.append(candidate)
    return labels


@functools.lru_cache(maxsize=1)
def _threaded_workloads() -> frozenset[str]:
    """Built-in workloads that take ``threads`` (their defaults list it)."""
    return frozenset(
        w["name"] for w in api.workloads() if "threads" in tomllib.loads(w["defaults"])["workload"]
    )


def _workload_name(args: argparse.Namespace, overrides: list[str]) -> str | None:
    """The workload a run of ``args`` would use: ``--workload``, else the config's."""
    if getattr(args, "trace", None):
        return "trace"
    if getattr(args, "workload", None):
        return args.workload
    config = getattr(args, "config", None) or api.DEFAULT_CONFIG
    if isinstance(config, list):
        config = config[0]
    try:
        resolved = api.resolve_config(config, None, overrides=overrides)
    except Exception as exc:  # noqa: BLE001 - the run itself reports what is wrong
        if _is_engine_error(exc) or isinstance(exc, (OSError, ValueError)):
            return None
        raise
    return tomllib.loads(resolved).get("workload", {}).get("name")


def _overrides(args: argparse.Namespace) -> list[str]:
    """The raw ``key=value`` overrides of the shortcut options and ``--set`` (applied last)."""
    result: list[str] = []
    if getattr(args, "refs", None) is not None:
        result.append(f"workload.references={args.refs}")
    if getattr(args, "cores", None) is not None:
        result.append(f"sim.cores={args.cores}")
        # A multi-threaded workload runs a thread per core unless --set says otherwise (a
        # later --set workload.threads=... wins).
        if _workload_name(args, result) in _threaded_workloads():
            result.append(f"workload.threads={args.cores}")
    if getattr(args, "fast_forward", None) is not None:
        result.append(f"sim.fast_forward={args.fast_forward}")
    if getattr(args, "verify", False):
        result.append("sim.verify=true")
    for entry in getattr(args, "set", None) or []:
        key, sep, _value = entry.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--set expects KEY=VALUE (e.g. --set mmu.walkers=4), got {entry!r}")
        result.append(entry)
    return result


def _progress(args: argparse.Namespace) -> bool:
    """A bar counting a sweep's runs: on a terminal, unless --no-progress."""
    return not getattr(args, "no_progress", False) and is_terminal(sys.stderr)


def _run_progress(args: argparse.Namespace) -> str:
    """A simulation's progress on stderr: a bar on a terminal, else a line every minute (a
    pipe or a CI log: a long run is not silent); nothing with --no-progress."""
    if getattr(args, "no_progress", False):
        return "off"
    return "bar" if _progress(args) else "lines"


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")


def _print(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


# --------------------------------------------------------------------------------------------
# Subcommands
# --------------------------------------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    overrides = _overrides(args)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    text = api.run_json(
        args.config,
        args.workload,
        trace=args.trace,
        out=args.out,
        progress=_run_progress(args),
        overrides=overrides,
    )
    stats = json.loads(text)
    _note_idle_cores(stats)
    if args.json:
        _print(text)
        summary = None
    else:
        summary = format_summary(stats)
        _print(summary)
    if args.out:
        if summary is None:
            summary = format_summary(stats)
        _write_text(os.path.join(args.out, "summary.txt"), summary)
    return 0


def _note_idle_cores(stats: dict) -> None:
    """Say so (on stderr) when a mix had fewer programs than cores: the others sat idle."""
    members = stats.get("mix", {}).get("members") or []
    cores = stats.get("system", {}).get("cores", 1)
    if members and cores > len(members):
        n = len(members)
        idle = f"core {n}" if n == cores - 1 else f"cores {n}-{cores - 1}"
        sys.stderr.write(
            f"note: the mix has {n} programs, one per core: {idle} of {cores} ran nothing "
            "(workload.members lists the programs)\n"
        )


def _cmd_compare(args: argparse.Namespace) -> int:
    configs: list[str] = args.config
    if len(configs) < 2:
        raise CliError("compare needs at least two --config options (the first is the baseline)")
    overrides = _overrides(args)
    labels = _unique_labels(configs)
    outs: list[str | None] = [None] * len(configs)
    if args.out:
        outs = [os.path.join(args.out, label) for label in labels]
        for out in outs:
            os.makedirs(out, exist_ok=True)
    jobs = max(1, min(args.jobs, len(configs)))
    # Several progress bars drawn at once on one terminal would garble each other.
    progress = _run_progress(args) if jobs == 1 else "off"

    def one(i: int) -> str:
        return api.run_json(
            configs[i],
            args.workload,
            trace=args.trace,
            out=outs[i],
            progress=progress,
            overrides=overrides,
        )

    if jobs == 1:
        texts = [one(i) for i in range(len(configs))]
    else:
        # The engine releases the GIL while it simulates, so threads run in parallel.
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            texts = list(pool.map(one, range(len(configs))))
    runs = [(label, json.loads(text)) for label, text in zip(labels, texts)]

    report = {
        "baseline": labels[0],
        "runs": [
            {
                "label": label,
                "config": config,
                "cycles": stats.get("summary", {}).get("cycles"),
                "speedup": _json_float(speedup(runs[0][1], stats)),
                "stats": stats,
            }
            for config, (label, stats) in zip(configs, runs)
        ],
    }
    summary = format_comparison(runs)
    _print(json.dumps(report, indent=2) if args.json else summary)
    if args.out:
        for out, (label, stats) in zip(outs, runs):
            assert out is not None
            _write_text(os.path.join(out, "summary.txt"), format_summary(stats, title=label))
        compact = dict(report)
        compact["runs"] = [{k: v for k, v in r.items() if k != "stats"} for r in report["runs"]]
        _write_text(os.path.join(args.out, "compare.json"), json.dumps(compact, indent=2))
        _write_text(os.path.join(args.out, "summary.txt"), summary)
    return 0


def _json_float(x: float) -> float | None:
    return None if math.isnan(x) else x


def _human_rate(rate: float) -> str:
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if rate >= scale:
            return f"{rate / scale:.2f} {unit}"
    return f"{rate:.0f}"


def _cmd_bench(args: argparse.Namespace) -> int:
    workloads = args.workload or ["gups", "stream"]
    configs = args.config or [api.DEFAULT_CONFIG]
    if args.generators:
        results = [api.bench_generator(workload, args.refs) for workload in workloads]
    else:
        cores = [f"sim.cores={args.cores}", f"workload.threads={args.cores}"] if args.cores else []
        results = [
            {**api.bench(workload, args.refs, config, cores), "config": config}
            for config in configs
            for workload in workloads
        ]
    if args.json:
        _print(json.dumps(results, indent=2))
        return 0
    what = "generators alone (no simulation)" if args.generators else ", ".join(configs)
    if args.cores and not args.generators:
        what += f", {args.cores} cores"
    lines = [f"xlat bench: {what}, {args.refs:,} references per workload"]
    lines.append(f"  {'workload':<24}{'setup s':>9}{'seconds':>10}{'refs/s':>16}")
    for r in results:
        rate = float(r.get("refs_per_second", math.nan))
        seconds = float(r.get("seconds", math.nan))
        setup = float(r.get("setup_seconds", math.nan))
        rate_text = f"{rate:,.0f}" if math.isfinite(rate) else "n/a"
        human = f"  ({_human_rate(rate)}refs/s)" if math.isfinite(rate) else ""
        name = str(r.get("workload", "?"))
        if len(configs) > 1 and not args.generators:
            name = f"{_config_label(str(r['config']))}/{name}"
        lines.append(f"  {name:<24}{setup:>9.3f}{seconds:>10.3f}{rate_text:>16}{human}")
    lines.append("  (setup: the generator's own set-up before its first records, not in refs/s)")
    _print("\n".join(lines))
    return 0


def _cmd_presets(args: argparse.Namespace) -> int:
    if args.presets_command == "show":
        _print(api.preset_text(args.name))
    else:
        _print("\n".join(api.presets()))
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    _print(api.resolve_config(args.config, args.workload, overrides=_overrides(args)))
    return 0


def _cmd_workloads(args: argparse.Namespace) -> int:
    catalog = api.workloads(args.footprint)
    if args.json:
        _print(json.dumps(catalog, indent=2))
        return 0
    lines = [f"{'workload':<14}{'footprint':>12}      {'host':>9}  description"]
    unknown_host = False
    for w in catalog:
        size = w["footprint_bytes"] / 2**20
        host = w["host_bytes"]
        unknown_host |= host is None
        host_text = "?" if host is None else f"{host / 2**30:,.1f} GiB"
        lines.append(f"{w['name']:<14}{size:>12,.0f} MiB  {host_text:>9}  {w['description']}")
        if args.verbose:
            lines.extend("    " + line for line in w["defaults"].strip().splitlines())
    lines.append(
        "\nfootprint: virtual memory the workload allocates at its defaults; host: the host"
    )
    lines.append("memory a run is estimated to take")
    if unknown_host:
        lines[-1] += " ('?': this workload has no formula for it yet)"
    _print("\n".join(lines))
    return 0


# Top-level config keys: anything else given to `trace record --set` is a workload parameter.
_TOP_LEVEL_KEYS = ("seed", "scheme", "extends")


def _record_overrides(entries: Sequence[str]) -> list[str]:
    """`--set scale=22` in `trace record` means `workload.scale=22` (keys without a dot)."""
    result = []
    for entry in entries:
        key, sep, value = entry.partition("=")
        if sep and "." not in key and key.strip() not in _TOP_LEVEL_KEYS:
            entry = f"workload.{key.strip()}={value}"
        result.append(entry)
    return result


def _describe_recorded(recorded: dict) -> str:
    """What `trace record` wrote: the records, and what became of the workload's set-up."""
    n, setup = recorded["records"], recorded["setup_records"]
    text = f"{n:,} records"
    if setup == 0:
        return text + " (the workload has no set-up: all region of interest)"
    if recorded["setup_included"]:
        return f"{text} ({setup:,} of set-up, then {n - setup:,} of the region of interest)"
    if n == 0:
        return f"{text} (the workload ended in its set-up of {setup:,} records, not recorded)"
    return f"{text} (region of interest; set-up of {setup:,} records skipped)"


def _cmd_trace(args: argparse.Namespace) -> int:
    if args.trace_command == "record":
        args.set = _record_overrides(args.set)
        recorded = api.record_trace(
            args.out,
            args.config,
            args.workload,
            include_setup=args.include_setup,
            progress=_run_progress(args),
            overrides=_overrides(args),
        )
        _print(f"wrote {_describe_recorded(recorded)} to {args.out}")
    elif args.trace_command == "convert":
        n = api.convert_trace(args.input, args.output)
        _print(f"wrote {n:,} records to {args.output}")
    elif args.trace_command == "inspect":
        summary = api.inspect_trace(args.path)
        _print(json.dumps(summary, indent=2) if args.json else _format_inspect(summary))
    else:
        raise CliError("trace needs a subcommand: record, convert or inspect")
    return 0


def _toml_value(text: str) -> Any:
    """A TOML literal (``2048``, ``true``, ``"lru"``, ``0.5``); a bare word is a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _split_top_level(text: str) -> list[str]:
    """Split ``text`` at commas that are not inside brackets, braces or quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse_grid(entries: Sequence[str]) -> dict[str, list[Any]]:
    """``["mmu.walkers=1,2,4"]`` -> ``{"mmu.walkers": [1, 2, 4]}`` (values are TOML literals).

    Raises:
        CliError: an entry without ``=`` or without values, or a key given twice.
    """
    grid: dict[str, list[Any]] = {}
    for entry in entries:
        key, sep, values = entry.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise CliError(
                f"--grid expects KEY=V1,V2,... (e.g. --grid mmu.walkers=1,2), got {entry!r}"
            )
        if key in grid:
            raise CliError(f"--grid {key} is given twice; list all its values in one option")
        grid[key] = [_toml_value(v) for v in _split_top_level(values)]
    return grid


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import sweep

    seeds = None
    if args.seeds:
        try:
            seeds = [int(s) for s in args.seeds.split(",")]
        except ValueError:
            raise CliError(
                f"--seeds expects integers separated by commas, got {args.seeds!r}"
            ) from None
    with warnings.catch_warnings():
        # Failed runs are listed one per line below; the API's warning would repeat them.
        warnings.simplefilter("ignore", RuntimeWarning)
        result = sweep(
            args.config,
            parse_grid(args.grid),
            args.workload,
            seeds,
            out=args.out,
            overrides=_overrides(args),
            backend=args.backend,
            jobs=args.jobs,
            scheduler=args.scheduler,
            progress=_progress(args),
            reuse=args.reuse,
            memory=_memory(args),
            stop_after=args.stop_after,
        )
    copied = f", {result.reused} of them copied from --reuse" if result.reused else ""
    left = f", {result.not_started} not started" if result.not_started else ""
    _print(
        f"sweep {args.out}: {len(result.run_ids)} runs ({result.ran} ran, "
        f"{result.skipped} already finished{copied}, {len(result.failed)} failed{left}) -> "
        f"{os.path.join(args.out, 'results.parquet')}"
    )
    for rid, error in result.failed:
        sys.stderr.write(f"xlat: run {rid} failed: {error}\n")
    if result.failed:
        return 1
    if result.not_started:
        sys.stderr.write(
            f"xlat: --stop-after passed with {result.not_started} runs not started; "
            "the same command again runs them\n"
        )
        return EXIT_STOPPED
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    from .results import query

    try:
        frame = query(args.sql, args.sweeps)
    except duckdb.Error as exc:
        # DuckDB's message spans lines (the query quoted, a caret under the spot): one line.
        parts = [
            line.strip()
            for line in str(exc).splitlines()
            if line.strip() and not line.startswith("LINE ") and set(line.strip()) != {"^"}
        ]
        raise CliError(f"query failed: {' '.join(parts)}") from None
    if args.csv:
        _print(frame.to_csv(index=False))
    elif args.json:
        _print(frame.to_json(orient="records", indent=2))
    else:
        import pandas as pd

        with pd.option_context(
            "display.max_rows", None, "display.max_columns", None, "display.width", 200
        ):
            _print(frame.to_string(index=False))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from .report import report_main

    path = report_main(args.sweep, args.out)
    _print(f"report: {path}")
    return 0


def _format_comparison_table(table: Any) -> str:
    if table.empty:
        from .experiments.registry import NO_PUBLISHED_VALUES

        return f"  {NO_PUBLISHED_VALUES}"

    def num(v: Any) -> str:
        return "n/a" if v is None or v != v else f"{v:.3g}"

    width = max([len("quantity"), *(len(q) for q in table["quantity"])])
    lines = [f"  {'quantity':<{width}}  {'ours':>9}  {'paper':>9}  {'ratio':>7}"]
    for row in table.itertuples(index=False):
        lines.append(
            f"  {row.quantity:<{width}}  {num(row.ours):>9}  {num(row.paper):>9}  "
            f"{num(row.ratio):>7}"
        )
    return "\n".join(lines)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from . import experiments

    if args.list or not args.id:
        reps = experiments.reproductions()
        width = max(len(rep.id) for rep in reps)
        for rep in reps:
            _print(f"{rep.id:<{width}}  {rep.paper} {rep.figure}: {rep.title}")
        return 0
    scale = "tiny" if args.tiny else "quick" if args.quick else args.scale
    ids = [r.id for r in experiments.reproductions()] if args.id == "all" else [args.id]
    try:
        chosen = [experiments.get(i) for i in ids]
    except KeyError as exc:
        raise CliError(str(exc.args[0])) from None
    memory = _memory(args)
    if args.check:
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            for rep in chosen:
                runs = experiments.check_configs(rep.id, scale, scratch, boot=True)
                _print(f"{rep.id}: {runs} runs resolve and boot at {scale} scale")
        return 0
    if args.status:
        for rep in chosen:
            _print(
                _format_status(
                    rep.id, scale, experiments.run_status(rep.id, scale, args.out), args.jobs
                )
            )
        return 0
    outcomes = []
    # One time limit for all the reproductions asked for, not one each.
    deadline = None if args.stop_after is None else time.monotonic() + args.stop_after
    for rep in chosen:
        sys.stderr.write(f"xlat reproduce: {rep.id} ({rep.paper} {rep.figure}), scale {scale}\n")
        try:
            outcome = experiments.reproduce(
                rep.id,
                scale=scale,
                out=args.out,
                backend=args.backend,
                jobs=args.jobs,
                scheduler=args.scheduler,
                progress=_progress(args),
                memory=memory,
                stop_after=None if deadline is None else max(0.0, deadline - time.monotonic()),
            )
        except experiments.Stopped as stopped:
            sys.stderr.write(f"xlat reproduce: --stop-after: {stopped}\n")
            return EXIT_STOPPED
        outcomes.append(outcome)
        _print(f"{rep.id}: {rep.paper} {rep.figure}: {rep.title}")
        _print(_format_comparison_table(outcome.comparison))
        notes = experiments.registry.undefined_notes(rep.id, outcome.analysis)
        if notes.strip():
            _print(notes.strip("\n"))
        for line in outcome.unfinished:
            _print(f"* did not finish: {line}")
        if outcome.analysis.summary:
            _print(outcome.analysis.summary)
        _print(f"  {outcome.direction}")
        _print(f"  -> {outcome.report}\n")
    if len(outcomes) > 1:
        path = experiments.write_combined_report(
            outcomes, os.path.join(args.out, "report.html"), scale
        )
        _print(f"report: {path}")
    return 0


def _format_status(reproduction_id: str, scale: str, st, jobs: int | None = None) -> str:
    """One line of ``xlat reproduce --status``: the counts, and the time the runs still to
    simulate would take at the finished ones' mean: one run at a time, and with ``jobs``
    (``-j``) of them at a time when that is more than one."""
    line = (
        f"{reproduction_id}: {st.runs} runs at {scale} scale: {st.finished} finished, "
        f"{st.reusable} to copy from another reproduction, {st.todo} to simulate"
    )
    if st.todo and st.elapsed_s:
        mean = sum(st.elapsed_s) / len(st.elapsed_s)
        line += f" (about {st.todo * mean / 3600:.1f} h at the finished runs' {mean:.0f} s each"
        at_once = min(jobs or 1, st.todo)
        if at_once > 1:
            # Runs in rounds of `at_once`: the last round may be partly empty.
            rounds = math.ceil(st.todo / at_once)
            line += f"; {rounds * mean / 3600:.1f} h with -j {at_once}"
        line += ")"
    if st.peak_host_bytes:
        line += f"; finished runs peaked at up to {max(st.peak_host_bytes) / 2**30:.1f} GiB"
    return line


def _format_inspect(s: dict) -> str:
    """The engine's trace summary (``xlat::trace::TraceSummary``) as an aligned table."""
    mib = s["footprint_bytes"] / 2**20
    lines = [f"{'format':<24}{s['format']:>16}"]
    rows = (
        ("records", "records"),
        ("loads", "loads"),
        ("stores", "stores"),
        ("ifetches", "ifetches"),
        ("instructions", "instructions"),
        ("memory operands", "memory_operands"),
        ("multi-operand instrs", "multi_operand_instructions"),
        ("dependent", "dependent"),
    )
    for label, key in rows:
        lines.append(f"{label:<24}{s[key]:>16,}")
        if key == "records":
            # A workload's set-up: in the trace before its region of interest, or left out.
            if s.get("roi_start"):
                lines.append(f"{'  set-up (run skips it)':<24}{s['roi_start']:>16,}")
            if s.get("setup_skipped"):
                lines.append(f"{'  set-up not recorded':<24}{s['setup_skipped']:>16,}")
    lines.append(f"{'footprint':<24}{mib:>12,.1f} MiB")
    lines.append(f"{'unique 4 KiB pages':<24}{s['unique_pages_4k']:>16,}")
    lines.append(f"{'unique 2 MiB pages':<24}{s['unique_pages_2m']:>16,}")
    if s["min_address"] is not None:
        lines.append(f"{'address range':<24}{s['min_address']:#x} - {s['max_address']:#x}")
    lines.append("4 KiB page reuse distance (distinct pages between touches):")
    lines.append(f"  {'cold (first touch)':<22}{s['reuse_cold']:>16,}")
    for b in s["reuse_histogram"]:
        span = f"{b['min']:,}" if b["min"] == b["max"] else f"{b['min']:,}-{b['max']:,}"
        lines.append(f"  {span:<22}{b['count']:>16,}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------


def _add_system_options(
    p: argparse.ArgumentParser, *, multi: bool, trace: bool, fast_forward: bool = True
) -> None:
    """Options that choose and modify the simulated system (`--fast-forward` unless
    ``fast_forward`` is false: a command that simulates nothing has nothing to skip)."""
    if multi:
        p.add_argument(
            "-c",
            "--config",
            action="append",
            required=True,
            metavar="NAME|FILE",
            help="preset name or TOML config file; repeat for each system, the first is the "
            "baseline",
        )
    else:
        p.add_argument(
            "-c",
            "--config",
            default=api.DEFAULT_CONFIG,
            metavar="NAME|FILE",
            help=f"preset name or TOML config file (default: {api.DEFAULT_CONFIG})",
        )
    source = p.add_mutually_exclusive_group() if trace else p
    source.add_argument(
        "-w",
        "--workload",
        metavar="NAME",
        help="built-in workload (see `xlat workloads`); sets workload.name",
    )
    if trace:
        source.add_argument("--trace", metavar="FILE", help="run this trace file instead")
    p.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, VALUE a TOML literal (bare words are strings); "
        "repeatable, applied last, in order",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="check every translation against the OS's ground truth (= --set sim.verify=true)",
    )
    p.add_argument(
        "--refs",
        type=parse_count,
        metavar="N",
        help="number of memory references to simulate, e.g. 5M (= --set workload.references=N)",
    )
    p.add_argument(
        "--cores",
        type=parse_count,
        metavar="N",
        help="cores of the system (= --set sim.cores=N); a workload's threads or a mix's "
        "members run one per core",
    )
    if not fast_forward:
        return
    p.add_argument(
        "--fast-forward",
        type=parse_fast_forward,
        metavar="roi|N",
        help="run functionally, without timing, to the workload's region of interest (roi, "
        "the default) or through N instructions first (a trace's skip count); 0: simulate "
        "everything in detail (= --set sim.fast_forward=...)",
    )


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o",
        "--out",
        metavar="DIR",
        help="write stats.json, config.toml (the resolved config) and summary.txt here",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="do not draw a progress bar (it is drawn only when stderr is a terminal)",
    )
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")


def _memory(args: argparse.Namespace) -> int | str | None:
    """``--memory`` as :func:`xlat.sweep` takes it: a size is read here, before any run."""
    if args.memory in ("auto", "off"):
        return None if args.memory == "off" else "auto"
    return int(api.engine().parse_size(args.memory, "--memory"))


def _add_backend_options(p: argparse.ArgumentParser) -> None:
    """Where the runs of a sweep (or of a reproduction's sweep) execute."""
    p.add_argument(
        "--backend",
        choices=["local", "dask"],
        default="local",
        help="local: a process pool on this machine (default); dask: a dask.distributed "
        "cluster (--scheduler, or a LocalCluster of --jobs workers)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=parse_count,
        default=None,
        metavar="N",
        help="parallel runs (local) or LocalCluster workers (dask); default: CPU count",
    )
    p.add_argument("--scheduler", metavar="ADDR", help="dask scheduler, e.g. tcp://host:8786")
    p.add_argument(
        "--memory",
        default="auto",
        metavar="SIZE|auto|off",
        help="host memory the local runs in flight may take together, by the engine's "
        "estimate of each (`xlat workloads --footprint`): a run waits for a free worker and "
        "for room, and one larger than SIZE runs alone; auto (default): the memory available "
        "when the runs start; off: no limit",
    )
    p.add_argument(
        "--stop-after",
        type=parse_duration,
        default=None,
        metavar="DURATION",
        help="start no run once DURATION (e.g. 90m, 1h30m, 5400) has passed; the runs started "
        "finish and are stored, and the same command again runs the rest (exit status 3 while "
        "runs are left): for a cluster job's time limit, or a long sweep taken in chunks",
    )
    p.add_argument("--no-progress", action="store_true", help="do not draw progress bars")


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``xlat`` command."""
    parser = _Parser(
        prog="xlat",
        description="xlat: fast, unified simulator of virtual-memory address translation.",
        epilog="Run 'xlat COMMAND --help' for the options of a command.",
    )
    parser.add_argument("-V", "--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser(
        "run",
        help="simulate one system and print a summary",
        description="Simulate one system on a workload or trace and print a summary of its "
        "statistics.",
    )
    _add_system_options(p, multi=False, trace=True)
    _add_output_options(p)
    p.set_defaults(handler=_cmd_run)

    p = sub.add_parser(
        "compare",
        help="simulate several systems on the same workload; print speed-ups",
        description="Simulate several systems (--config, repeated) on the same workload with "
        "the same overrides, print each summary and the speed-up of each over the first "
        "(first's cycles / its cycles). With --out DIR, each run goes to DIR/<name>/.",
    )
    _add_system_options(p, multi=True, trace=True)
    _add_output_options(p)
    p.add_argument(
        "-j",
        "--jobs",
        type=parse_count,
        default=1,
        metavar="N",
        help="run up to N simulations at once (default 1; progress bars off when N > 1)",
    )
    p.set_defaults(handler=_cmd_compare)

    p = sub.add_parser(
        "bench",
        help="measure simulation speed (references per second)",
        description="Run built-in workloads on baseline-radix and print references/second.",
    )
    p.add_argument(
        "--refs",
        type=parse_count,
        default=BENCH_REFS,
        metavar="N",
        help=f"references per workload (default {BENCH_REFS:,})",
    )
    p.add_argument(
        "-w",
        "--workload",
        action="append",
        metavar="NAME",
        help="workload to measure, repeatable (default: gups and stream)",
    )
    p.add_argument(
        "-c",
        "--config",
        action="append",
        metavar="NAME|FILE",
        help="system to simulate, repeatable to compare in one run (default: baseline-radix)",
    )
    p.add_argument(
        "--cores",
        type=parse_count,
        metavar="N",
        help="simulate an N-core system running N threads of each workload "
        "(= sim.cores=N, workload.threads=N); refs/s counts every core's references",
    )
    p.add_argument(
        "--generators",
        action="store_true",
        help="measure the workload generators alone (records/second, no simulation)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(handler=_cmd_bench)

    p = sub.add_parser(
        "sweep",
        help="run many simulations (systems x grid x workloads x seeds); resumable",
        description="Run every combination of systems (--config), swept keys (--grid), "
        "workloads and seeds. Results go to DIR/runs/<id>/ as each run finishes and are "
        "collected into DIR/results.parquet; running the same sweep again skips finished runs. "
        "A failed run is recorded with its error and the sweep goes on (exit status 1 if any "
        "failed).",
    )
    p.add_argument(
        "-c",
        "--config",
        action="append",
        required=True,
        metavar="NAME|FILE",
        help="preset name or TOML config file; repeat to sweep over systems",
    )
    p.add_argument(
        "-w",
        "--workload",
        action="append",
        metavar="NAME",
        help="built-in workload, repeatable (default: each config's own [workload])",
    )
    p.add_argument(
        "-g",
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help="sweep a config key over these values (TOML literals); repeat for more keys: "
        "every combination runs",
    )
    p.add_argument("--seeds", metavar="S1,S2,...", help="run every point with each seed")
    p.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key in every run (as for `xlat run`)",
    )
    p.add_argument("--refs", type=parse_count, metavar="N", help="references per run")
    p.add_argument("--verify", action="store_true", help="check every translation")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="the sweep directory")
    p.add_argument(
        "--reuse",
        action="append",
        default=[],
        metavar="DIR",
        help="another sweep directory: its finished runs with the same resolved config are "
        "copied instead of simulated again; repeat for more",
    )
    _add_backend_options(p)
    p.set_defaults(handler=_cmd_sweep)

    p = sub.add_parser(
        "query",
        help="run DuckDB SQL over the results of sweeps",
        description="Run a DuckDB SQL query over the results of one or more sweeps, visible as "
        'the table `runs` (one row per run; quote dotted columns: "stats.summary.ipc").',
    )
    p.add_argument(
        "sql", metavar="SQL", help="e.g. 'SELECT label, \"stats.summary.ipc\" FROM runs'"
    )
    p.add_argument("sweeps", nargs="+", metavar="SWEEP_DIR", help="sweep directories")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="print CSV")
    fmt.add_argument("--json", action="store_true", help="print JSON records")
    p.set_defaults(handler=_cmd_query)

    p = sub.add_parser(
        "report",
        help="write a self-contained HTML report of a sweep",
        description="Write one self-contained HTML page (figures embedded, tables beside them) "
        "for the sweep in SWEEP_DIR: IPC, speed-up, L2 TLB MPKI, walk latency and walk "
        "references by level per workload, and metrics over a swept parameter.",
    )
    p.add_argument("sweep", metavar="SWEEP_DIR", help="the sweep directory")
    p.add_argument("-o", "--out", metavar="FILE", help="output (default SWEEP_DIR/report.html)")
    p.set_defaults(handler=_cmd_report)

    p = sub.add_parser(
        "reproduce",
        help="reproduce a figure or table of the seed papers",
        description="Run the sweep a paper's figure needs, draw it in the paper's style and "
        "print our numbers beside the published ones (ours | paper | ratio). 'all' runs every "
        "reproduction and writes one combined report.",
    )
    p.add_argument("id", nargs="?", metavar="ID|all", help="reproduction id (see --list)")
    p.add_argument("--list", action="store_true", help="list the reproductions")
    p.add_argument(
        "--check",
        action="store_true",
        help="resolve and boot every run's machine without simulating (seconds), then exit: "
        "a scale that cannot start says so before hours of runs",
    )
    p.add_argument(
        "--status",
        action="store_true",
        help="say how many runs are finished in DIR, finished by another reproduction there "
        "(copied when this one runs) and still to simulate, without running anything",
    )
    scale = p.add_mutually_exclusive_group()
    scale.add_argument(
        "--scale",
        choices=["tiny", "quick", "full", "paper"],
        default="full",
        help="input sizes and run lengths: tiny (seconds), quick (minutes), full (default; "
        "larger inputs, hours), paper (every workload at its paper's footprint; hours, "
        "resumable run by run)",
    )
    scale.add_argument("--quick", action="store_true", help="the same as --scale quick")
    scale.add_argument("--tiny", action="store_true", help="the same as --scale tiny")
    p.add_argument(
        "-o", "--out", default="out/reproduce", metavar="DIR", help="default out/reproduce"
    )
    _add_backend_options(p)
    p.set_defaults(handler=_cmd_reproduce)

    p = sub.add_parser(
        "presets",
        help="list the built-in presets, or show one",
        description="List the built-in presets ('xlat presets'), or print one "
        "('xlat presets show NAME').",
    )
    psub = p.add_subparsers(dest="presets_command", metavar="{list,show}")
    psub.add_parser("list", help="list preset names (the default)")
    show = psub.add_parser("show", help="print the TOML of a preset")
    show.add_argument("name", metavar="NAME", help="preset name")
    p.set_defaults(handler=_cmd_presets)

    p = sub.add_parser(
        "config",
        help="print the resolved config (presets expanded, overrides applied)",
        description="Print the fully resolved TOML config of a preset or file with the given "
        "overrides: what a run would save as config.toml.",
    )
    _add_system_options(p, multi=False, trace=False)
    p.set_defaults(handler=_cmd_config)

    p = sub.add_parser(
        "workloads",
        help="list the built-in workloads, their default footprint and parameters",
        description="List every built-in workload with what it models, the virtual memory it "
        "allocates at its defaults and the host memory a run needs (estimated; '?' where the "
        "workload has no formula); -v also prints every parameter with its default.",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="print parameters and defaults")
    p.add_argument("--json", action="store_true", help="print the catalog as JSON")
    p.add_argument(
        "--footprint",
        metavar="SIZE",
        help="list the workloads that take workload.footprint, at the parameters that reach "
        "SIZE (e.g. 8GiB, 33GB), with the host memory a run needs",
    )
    p.set_defaults(handler=_cmd_workloads)

    p = sub.add_parser(
        "trace",
        help="record, convert and inspect trace files",
        description="Record a built-in workload to a native .xtr trace, convert between trace "
        "formats, or summarise a trace.",
    )
    tsub = p.add_subparsers(dest="trace_command", metavar="{record,convert,inspect}")
    rec = tsub.add_parser(
        "record",
        help="write a workload's records to a .xtr trace",
        description="Write the records of a built-in workload to a native .xtr trace: those of "
        "its region of interest (--refs N of them), as a run measures them, or with "
        "--include-setup its set-up before them too. In --set, a key without a dot is a workload "
        "parameter (--set scale=22).",
    )
    _add_system_options(rec, multi=False, trace=False, fast_forward=False)
    rec.add_argument(
        "--include-setup",
        action="store_true",
        help="also record the workload's set-up before its region of interest (a run of the "
        "trace fast-forwards through it); by default only the region is recorded",
    )
    rec.add_argument("-o", "--out", required=True, metavar="FILE", help="the .xtr file to write")
    rec.add_argument("--no-progress", action="store_true", help="do not draw a progress bar")
    conv = tsub.add_parser("convert", help="convert a trace to another format (by extension)")
    conv.add_argument("input", metavar="IN")
    conv.add_argument("output", metavar="OUT")
    ins = tsub.add_parser("inspect", help="records, footprint, unique pages, reuse distances")
    ins.add_argument("path", metavar="FILE")
    ins.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(handler=_cmd_trace)

    return parser


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def _error(message: str, status: int = EXIT_USAGE) -> int:
    sys.stderr.write(f"xlat: error: {message}\n")
    return status


def _is_engine_error(exc: BaseException) -> bool:
    try:
        error_type = getattr(api.engine(), "XlatError", None)
    except ImportError:
        return False
    return isinstance(error_type, type) and isinstance(exc, error_type)


def _version() -> str:
    try:
        return f"xlat {api.engine_version()}"
    except ImportError:
        try:
            from importlib.metadata import version

            return f"xlat {version('xlat')} (engine not built)"
        except Exception:
            return "xlat (version unknown: engine not built)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``xlat`` command line with ``argv`` (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 on any user or engine error (message on stderr, no
        traceback), 70 if the engine panicked (a bug), 130 on Ctrl-C.
    """
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.version:
        _print(_version())
        return 0
    if args.command is None:
        parser.error("a command is required (see xlat --help)")
    try:
        return int(args.handler(args))
    except (CliError, api.OverrideError, api.EngineMissingError) as exc:
        return _error(str(exc))
    except BrokenPipeError:
        # Output piped into e.g. `head`: not an error. Silence the flush at interpreter exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        return _error(str(exc))
    except KeyboardInterrupt:
        sys.stderr.write("xlat: interrupted\n")
        return 130
    except BaseException as exc:
        if _is_engine_error(exc):
            return _error(str(exc))
        if type(exc).__name__ == "PanicException":
            return _error(
                f"internal error in the engine: {exc} (this is a bug in xlat; please report it "
                "with the command you ran)",
                EXIT_INTERNAL,
            )
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
