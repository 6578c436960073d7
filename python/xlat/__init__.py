"""xlat: a fast, unified simulator of virtual-memory address translation.

One engine (written in Rust, the compiled module :mod:`xlat._core`) models the whole path of a
memory reference -- core, TLBs, page-walk caches, the page table in simulated physical memory,
caches, DRAM -- and the operating-system work behind it. This package is its Python front::

    import xlat

    stats = xlat.run("baseline-radix", "gups", workload__references=1_000_000)
    print(xlat.format_summary(stats))

    xlat.presets()                                  # built-in systems
    xlat.sweep("baseline-radix", {"mmu.l2tlb.unified.entries": [768, 1536, 3072]},
               ["gups", "stream"], out="out/l2tlb")  # many runs, resumable
    df = xlat.load("out/l2tlb")                      # one row per run (pandas)
    print(xlat.resolve_config("perfect-tlb", mmu__l2tlb__unified__entries=2048))

Engine errors (unknown config key, bad geometry, corrupt trace, ...) raise :class:`XlatError`.
"""

from __future__ import annotations

from typing import Any

from .api import (
    DEFAULT_CONFIG,
    EngineMissingError,
    OverrideError,
    bench,
    bench_generator,
    boot,
    build_overrides,
    convert_trace,
    inspect_trace,
    preset_text,
    presets,
    record_trace,
    resolve_config,
    run,
    run_json,
    workloads,
)
from .results import load, query
from .summary import format_comparison, format_summary, speedup
from .sweep import sweep

__all__ = [
    "DEFAULT_CONFIG",
    "EngineMissingError",
    "OverrideError",
    "XlatError",
    "__version__",
    "bench",
    "bench_generator",
    "boot",
    "build_overrides",
    "convert_trace",
    "format_comparison",
    "format_summary",
    "inspect_trace",
    "load",
    "preset_text",
    "presets",
    "query",
    "record_trace",
    "resolve_config",
    "run",
    "run_json",
    "speedup",
    "sweep",
    "workloads",
]


def __getattr__(name: str) -> Any:
    """Resolve ``XlatError`` and ``__version__`` from the compiled engine on first use.

    Done lazily so that ``import xlat`` (and the pure-Python helpers) work even when the
    compiled module is not built; touching either name then raises :class:`EngineMissingError`.
    """
    if name == "XlatError":
        from .api import engine

        return engine().XlatError
    if name == "__version__":
        from .api import engine

        return engine().__version__
    if name == "experiments":
        # The reproductions pull in plotting; imported on first use (``xlat.experiments.x``).
        import importlib

        return importlib.import_module(".experiments", __name__)
    raise AttributeError(f"module 'xlat' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"XlatError", "__version__", "experiments"})
