"""The Python API of xlat: configure a system, run it, get its statistics.

Everything here is a thin layer over the compiled engine module :mod:`xlat._core`. Python never
simulates anything itself: it turns arguments into the engine's ``key=value`` overrides, calls
the engine (which releases the GIL while it simulates) and parses the statistics it returns.

Overrides
---------
Any configuration key can be overridden, in three equivalent ways::

    xlat.run("baseline-radix", "gups", mmu__l2tlb__unified__entries=3072)  # "__" = "."
    xlat.run("baseline-radix", "gups", overrides={"mmu.l2tlb.unified.entries": 2048})  # dotted keys
    xlat.run("baseline-radix", "gups", overrides=["mmu.l2tlb.unified.entries=3072"])  # --set

Python values become TOML literals (``True`` -> ``true``, ``2048`` -> ``2048``, ``0.5`` ->
``0.5``, ``"lru"`` -> ``"lru"``, lists -> arrays, dicts -> inline tables). Raw ``"key=value"``
strings are passed to the engine verbatim, exactly like the CLI's ``--set``.
"""

from __future__ import annotations

import importlib
import json
import math
import numbers
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, Union

from .progress import ProgressArg
from .progress import close as close_progress
from .progress import for_engine as progress_for_engine

__all__ = [
    "DEFAULT_CONFIG",
    "EngineMissingError",
    "OverrideError",
    "bench",
    "build_overrides",
    "engine",
    "override_key",
    "preset_text",
    "presets",
    "resolve_config",
    "run",
    "run_json",
    "to_toml_literal",
]

#: The configuration used when none is given: x86-64 4-level radix page table, 4 KiB pages.
DEFAULT_CONFIG = "baseline-radix"

PathLike = Union[str, "os.PathLike[str]"]
Overrides = Union[Mapping[str, Any], Iterable[str], None]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class OverrideError(ValueError):
    """An override could not be turned into a ``key=value`` string for the engine.

    Raised by the Python layer before the engine runs, e.g. for a value that has no TOML
    representation (``None``) or an empty key. Errors about the key itself (unknown key,
    out-of-range value) come from the engine as :class:`xlat.XlatError`.
    """


class EngineMissingError(ImportError):
    """The compiled engine module ``xlat._core`` cannot be imported."""


def engine() -> ModuleType:
    """Return the compiled engine module :mod:`xlat._core`.

    Imported on first use, so that the pure-Python parts of the package (override conversion,
    summaries, argument parsing) work and can be tested without the compiled module.

    Raises:
        EngineMissingError: if ``xlat._core`` is not built/installed.
    """
    try:
        return importlib.import_module("xlat._core")
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise EngineMissingError(
            "the compiled engine xlat._core is not installed "
            f"({exc}); build and install the package with `pip install .` "
            "(or `bash scripts/run.sh`) from the repository root"
        ) from exc


def engine_version() -> str:
    """The engine's version and model epoch, as ``xlat --version`` and reports name them
    (``"0.1.0 (model of 2026-11-28)"``).

    Raises:
        EngineMissingError: if ``xlat._core`` is not built/installed.
    """
    core = engine()
    return f"{core.__version__} (model of {core.MODEL_EPOCH})"


# --------------------------------------------------------------------------------------------
# Overrides: Python values -> "key=value" strings with TOML literal values
# --------------------------------------------------------------------------------------------


def override_key(name: str) -> str:
    """Turn a keyword-argument name into a dotted config key (``"__"`` separates levels).

    >>> override_key("mmu__l2tlb__unified__entries")
    'mmu.l2tlb.unified.entries'
    >>> override_key("workload__table_bytes")
    'workload.table_bytes'

    Raises:
        OverrideError: if a level of the key is empty (``"mmu____entries"``, ``"__x"``).
    """
    parts = name.split("__")
    if not name or any(part == "" for part in parts):
        raise OverrideError(
            f"invalid override name {name!r}: use '__' between levels, e.g. mmu__walkers"
        )
    return ".".join(parts)


def _toml_string(text: str) -> str:
    """Quote ``text`` as a TOML basic string."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_key(key: str) -> str:
    """A key of an inline table: bare if possible, quoted otherwise."""
    return key if _BARE_KEY.match(key) else _toml_string(key)


def to_toml_literal(value: Any) -> str:
    """Render a Python value as a TOML literal for an override.

    ``bool`` -> ``true``/``false``; integers -> decimal; floats -> shortest round-trip form
    (``inf``, ``-inf``, ``nan`` included); ``str`` and path-like -> quoted basic string;
    lists/tuples -> arrays; mappings -> inline tables. NumPy scalars are accepted (anything
    with an ``item()`` method is converted to the Python scalar first).

    >>> to_toml_literal(True), to_toml_literal(2048), to_toml_literal(0.5), to_toml_literal("lru")
    ('true', '2048', '0.5', '"lru"')

    Raises:
        OverrideError: for ``None`` and for types TOML cannot express.
    """
    if value is None:
        raise OverrideError("None has no TOML representation; leave the key out instead")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, os.PathLike):
        return _toml_string(os.fspath(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        # repr() is the shortest round-trip form ('2.5', '1e+20', '1e-05'): always a valid
        # TOML float, and always a float (never '3' for 3.0).
        return repr(f)
    if isinstance(value, Mapping):
        items = ", ".join(f"{_toml_key(str(k))} = {to_toml_literal(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_toml_literal(v) for v in value) + "]"
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (bytes, bytearray)):
        try:
            scalar = item()
        except (TypeError, ValueError):
            scalar = value
        if scalar is not value:
            return to_toml_literal(scalar)
    raise OverrideError(f"cannot express {type(value).__name__} value {value!r} as a TOML literal")


def _check_raw(entry: str) -> str:
    """Validate a raw ``"key=value"`` override (as given to ``--set``)."""
    if not isinstance(entry, str):
        raise OverrideError(f"raw overrides must be 'key=value' strings, got {entry!r}")
    key, sep, _value = entry.partition("=")
    if not sep or not key.strip():
        raise OverrideError(
            f"override {entry!r} is not of the form key=value (e.g. mmu.l2tlb.unified.entries=2048)"
        )
    return entry


def build_overrides(
    workload: str | None = None,
    overrides: Overrides = None,
    **kwargs: Any,
) -> list[str]:
    """Build the engine's list of ``"key=value"`` overrides.

    Order (later entries win when a key repeats): ``workload`` (as ``workload.name``), then
    ``overrides`` (a mapping with dotted keys whose values are converted to TOML, or an iterable
    of raw ``"key=value"`` strings passed verbatim), then keyword arguments (``"__"`` -> ``"."``,
    values converted to TOML).

    >>> build_overrides("gups", {"sim.verify": True}, mmu__l2tlb__unified__entries=2048)
    ['workload.name="gups"', 'sim.verify=true', 'mmu.l2tlb.unified.entries=2048']
    """
    result: list[str] = []
    if workload is not None:
        if not isinstance(workload, str) or not workload:
            raise OverrideError(f"workload must be a non-empty string, got {workload!r}")
        result.append(f"workload.name={to_toml_literal(workload)}")
    if overrides is not None:
        if isinstance(overrides, Mapping):
            for key, value in overrides.items():
                if not isinstance(key, str) or not key or any(p == "" for p in key.split(".")):
                    raise OverrideError(f"invalid override key {key!r}: use dotted keys")
                result.append(f"{key}={_literal(value, f'override {key!r}')}")
        elif isinstance(overrides, (str, bytes)):
            raise OverrideError(
                "overrides must be a mapping or a list of 'key=value' strings, not a single string"
            )
        else:
            result.extend(_check_raw(entry) for entry in overrides)
    for name, value in kwargs.items():
        result.append(f"{override_key(name)}={_literal(value, f'keyword argument {name}')}")
    return result


def _literal(value: Any, what: str) -> str:
    """:func:`to_toml_literal`, its error naming ``what`` the value was given as."""
    try:
        return to_toml_literal(value)
    except OverrideError as exc:
        raise OverrideError(f"{what}: {exc}") from None


# A name the engine's messages quote (`workload.references`), or an override they quote whole
# (`mmu.l2tlb.unifed.entries=3072`).
_QUOTED = re.compile(r"(the override )?`([A-Za-z0-9_.\-]+)(=[^`]*)?`")


def _name_keywords(message: str, kwargs: Iterable[str]) -> str:
    """``message``, an engine error, naming the keyword arguments (``workload__references``)
    as they were written where it names their dotted keys (``workload.references``).

    The key the error is at (the first name it quotes) gets its keyword after it, ``(keyword
    argument `workload__references`)``, or, a table above keywords' keys (``workload``), the
    keywords below it; an override the message quotes whole (``the override `a.b=1` ``) is
    quoted as the keyword (``the keyword argument `a__b=1` ``).
    """
    keys = {override_key(name): name for name in kwargs if "__" in name}
    named = False

    def name(match: re.Match[str]) -> str:
        nonlocal named
        override, key, value = match.groups()
        if value is not None:
            if key not in keys:
                return match.group(0)
            return f"{'the keyword argument ' if override else ''}`{keys[key]}{value}`"
        if override or named:
            return match.group(0)
        # The first name quoted is where the error is.
        named = True
        if key in keys:
            return f"{match.group(0)} (keyword argument `{keys[key]}`)"
        below = [f"`{n}`" for k, n in keys.items() if k.startswith(key + ".")]
        if not below:
            return match.group(0)
        words = "keyword argument" if len(below) == 1 else "keyword arguments"
        return f"{match.group(0)} (keys set by {words} {', '.join(below)})"

    return _QUOTED.sub(name, message) if keys else message


class _NamingKeywords:
    """A block calling the engine with overrides from keyword arguments: an engine error
    raised in it names the keywords (:func:`_name_keywords`)."""

    def __init__(self, kwargs: Iterable[str]) -> None:
        self.kwargs = list(kwargs)

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None or not any("__" in name for name in self.kwargs):
            return False
        error_type = getattr(engine(), "XlatError", None)
        if not isinstance(error_type, type) or not isinstance(exc, error_type):
            return False
        message = _name_keywords(str(exc), self.kwargs)
        if message == str(exc):
            return False
        raise error_type(message).with_traceback(tb) from None


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def run_json(
    config: PathLike = DEFAULT_CONFIG,
    workload: str | None = None,
    *,
    trace: PathLike | None = None,
    out: PathLike | None = None,
    progress: ProgressArg = None,
    overrides: Overrides = None,
    **kwargs: Any,
) -> str:
    """Run one simulation and return the engine's statistics JSON text, unparsed.

    Same arguments as :func:`run`. Useful to store the exact bytes the engine produced (they are
    deterministic: the same config and seed give byte-identical text).
    """
    ovr = build_overrides(workload, overrides, **kwargs)
    shown = progress_for_engine(progress)
    try:
        with _NamingKeywords(kwargs):
            return engine().run(
                os.fspath(config),
                ovr,
                None if trace is None else os.fspath(trace),
                None if out is None else os.fspath(out),
                shown,
            )
    finally:
        close_progress(shown)


def run(
    config: PathLike = DEFAULT_CONFIG,
    workload: str | None = None,
    *,
    trace: PathLike | None = None,
    out: PathLike | None = None,
    progress: ProgressArg = None,
    overrides: Overrides = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Run one simulation and return its statistics.

    Args:
        config: a preset name (see :func:`presets`, e.g. ``"baseline-radix"``) or the path of a
            TOML config file (which may ``extends`` a preset).
        workload: built-in workload to run (``"gups"``, ``"stream"``); sets ``workload.name``.
            ``None`` keeps the config's own workload.
        trace: run this trace file instead of the config's workload.
        out: directory to write ``stats.json`` and ``config.toml`` (the resolved config) into.
        progress: how to show progress while simulating. ``None`` (default): a bar in a
            notebook or on a terminal, otherwise a line on stderr every minute
            (``XLAT_PROGRESS_SECONDS``), which a short run never prints; ``True`` or
            ``"bar"``: a bar on stderr; ``"lines"``: the lines; ``False``: nothing; a callable:
            called with ``(done, total)`` references a few times a second.
        overrides: extra overrides, a mapping with dotted keys (``{"mmu.walkers": 4}``)
            or a list of raw ``"key=value"`` strings.
        **kwargs: overrides as keywords, ``"__"`` separating levels
            (``mmu__l2tlb__unified__entries=2048``, ``sim__verify=True``).

    Returns:
        The statistics tree as a nested dict. ``stats["summary"]`` holds the headline numbers
        (``ipc``, ``instructions``, ``cycles``, ``l1tlb_mpki``, ``l2tlb_mpki``, ``walks``,
        ``avg_walk_latency``, ``walk_refs_l1`` / ``_l2`` / ``_llc`` / ``_dram``, ``faults``,
        ``dram_row_hit_rate``); ``stats["scheme"]`` and ``stats["workload"]`` name what ran;
        everything else is the full tree by path (``stats["mmu"]["l2tlb"]["misses"]``, ...).

    Raises:
        xlat.XlatError: any error of the engine (unknown key, bad geometry, missing or corrupt
            trace, ...); the message names the key, file and byte offset.
        OverrideError: an override value that has no TOML form.

    Example:
        >>> stats = xlat.run("baseline-radix", "gups", workload__references=1_000_000)
        >>> stats["summary"]["l2tlb_mpki"]
    """
    text = run_json(
        config,
        workload,
        trace=trace,
        out=out,
        progress=progress,
        overrides=overrides,
        **kwargs,
    )
    return json.loads(text)


def resolve_config(
    config: PathLike = DEFAULT_CONFIG,
    workload: str | None = None,
    *,
    overrides: Overrides = None,
    **kwargs: Any,
) -> str:
    """Return the fully resolved configuration (presets expanded, overrides applied) as TOML.

    Takes the same ``config``, ``workload`` and override arguments as :func:`run`. The text is
    what a run would save as ``config.toml``; it is a complete, self-contained config file.

    Raises:
        xlat.XlatError: unknown key, out-of-range value, unreadable config file, ...
    """
    ovr = build_overrides(workload, overrides, **kwargs)
    with _NamingKeywords(kwargs):
        return engine().resolve(os.fspath(config), ovr)


def boot(
    config: PathLike = DEFAULT_CONFIG,
    workload: str | None = None,
    *,
    overrides: Overrides = None,
    **kwargs: Any,
) -> None:
    """Build the machine of a config and start its workload's processes, without building
    the workload or simulating: seconds at any footprint.

    Takes the same arguments as :func:`run`. What fails at boot fails here: physical memory
    that cannot be fragmented as asked, a segment's contiguous block (a RestSeg's TAR, a
    direct segment) that memory cannot give. Mapping the footprint is left out, so a config
    that boots can still run out of memory later.

    Raises:
        xlat.XlatError: the config does not resolve, or the machine does not boot.
    """
    ovr = build_overrides(workload, overrides, **kwargs)
    with _NamingKeywords(kwargs):
        engine().boot(os.fspath(config), ovr)


def hpt_way_limits(
    config: PathLike = "mehpt",
    overrides: Sequence[str] = (),
    max_bytes: int = 64 << 20,
) -> list[dict[str, Any]]:
    """ME-HPT Table II measured on real tables: one way of a 4 KiB-page ME-HPT with
    ``config``'s ``[schemes.hashed.table]`` is upsized until the table moves to a larger chunk
    size (or refuses), up to ``max_bytes`` of table memory (held in host memory).

    Returns one ``{"chunk_bytes", "max_way_bytes", "l2p_entries", "ended_by"}`` per chunk size;
    ``max_way_bytes`` is ``None`` where the limit lies beyond ``max_bytes``.
    """
    return json.loads(
        engine().hpt_way_limits(os.fspath(config), [str(o) for o in overrides], int(max_bytes))
    )


def presets() -> list[str]:
    """Names of the built-in presets (e.g. ``"baseline-radix"``, ``"perfect-tlb"``)."""
    return list(engine().presets())


def preset_text(name: str) -> str:
    """The TOML text of the built-in preset ``name``.

    Raises:
        xlat.XlatError: if there is no such preset.
    """
    return engine().preset_text(name)


def bench(
    workload: str = "gups",
    references: int = 5_000_000,
    config: PathLike = DEFAULT_CONFIG,
    overrides: Sequence[str] = (),
) -> dict[str, Any]:
    """Measure simulation speed: run ``workload`` on ``config`` for ``references``.

    ``overrides`` are ``key=value`` config overrides (``sim.cores=4`` for a multi-core system).

    Returns:
        ``{"workload", "references", "setup_seconds", "seconds", "refs_per_second"}``: the
        rate of the reference loop, after the generator's own set-up (``setup_seconds``).
    """
    if isinstance(references, bool) or not isinstance(references, numbers.Integral):
        raise TypeError(f"references must be an integer, got {references!r}")
    if references <= 0:
        raise ValueError(f"references must be positive, got {references}")
    return json.loads(
        engine().bench(workload, int(references), os.fspath(config), [str(o) for o in overrides])
    )


def bench_generator(workload: str = "gups", references: int = 5_000_000) -> dict[str, Any]:
    """Measure a workload generator alone (no simulation): records/second it produces.

    Compare with :func:`bench`: generation must be well faster than simulation.
    """
    if isinstance(references, bool) or not isinstance(references, numbers.Integral):
        raise TypeError(f"references must be an integer, got {references!r}")
    if references <= 0:
        raise ValueError(f"references must be positive, got {references}")
    return json.loads(engine().bench_generator(workload, int(references)))


# --------------------------------------------------------------------------------------------
# Workloads and traces
# --------------------------------------------------------------------------------------------


def workloads(footprint: str | int | None = None) -> list[dict[str, Any]]:
    """Every built-in workload: ``{"name", "description", "defaults", "footprint_bytes",
    "host_bytes"}``.

    ``defaults`` is the ``[workload]`` table with each parameter at its default (TOML text);
    ``footprint_bytes`` is the virtual memory it allocates at those defaults; ``host_bytes``
    the estimated host memory of a run (``None`` where the workload has no formula).

    With ``footprint`` (bytes or a size such as ``"8GiB"``), only the workloads that take
    ``workload.footprint``, each with the parameters that reach it in ``defaults``.
    """
    size = None if footprint is None else str(footprint)
    return json.loads(engine().workload_catalog(size))


def record_trace(
    out: PathLike,
    config: PathLike = DEFAULT_CONFIG,
    workload: str | None = None,
    *,
    include_setup: bool = False,
    progress: ProgressArg = None,
    overrides: Overrides = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Write the records of a workload to a native ``.xtr`` trace at ``out``.

    The workload and its parameters come from the config and overrides exactly as for
    :func:`run` (``workload__scale=22``); the trace's metadata records them; ``progress`` as
    for :func:`run`. The trace holds the workload's region of interest, the
    ``workload.references`` records a run of the workload measures; a workload's set-up before
    it (the graph kernels initialise their per-vertex state) is left out unless
    ``include_setup``, and then a run of the trace fast-forwards through it as a run of the
    workload does.

    Returns:
        ``{"records", "setup_records", "setup_included"}``: the records written, the set-up
        records the workload emitted before its region of interest (0 for a workload without
        set-up) and whether they are among those written.
    """
    ovr = build_overrides(workload, overrides, **kwargs)
    shown = progress_for_engine(progress)
    try:
        with _NamingKeywords(kwargs):
            text = engine().record_trace(
                os.fspath(config), ovr, os.fspath(out), shown, bool(include_setup)
            )
        return json.loads(text)
    finally:
        close_progress(shown)


def convert_trace(src: PathLike, dst: PathLike) -> int:
    """Convert a trace between formats (native ``.xtr``, ChampSim, lackey input); the output
    format follows ``dst``'s extension. Returns the number of records written."""
    return int(engine().convert_trace(os.fspath(src), os.fspath(dst)))


def inspect_trace(path: PathLike) -> dict[str, Any]:
    """Summarise a trace of any supported format: records, instructions, footprint, unique
    4 KiB / 2 MiB pages, page reuse-distance histogram."""
    return json.loads(engine().inspect_trace(os.fspath(path)))
