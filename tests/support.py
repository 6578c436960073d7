"""Helpers shared by the tests: tiny-run settings, hand-made statistics, a fake engine."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

#: Overrides that make a gups run tiny: few references over a small table.
TINY_GUPS: dict[str, Any] = {
    "workload.references": 50_000,
    "workload.table_bytes": 64 * 1024 * 1024,
}
#: The same as ``--set`` options for the CLI.
TINY_GUPS_ARGS: list[str] = [
    "--workload",
    "gups",
    "--refs",
    "50000",
    "--set",
    f"workload.table_bytes={64 * 1024 * 1024}",
]


def make_stats(
    cycles: int = 2_000_000,
    scheme: str = "radix",
    workload: str = "gups",
    **summary: Any,
) -> dict[str, Any]:
    """A hand-made statistics dict shaped like the engine's."""
    base: dict[str, Any] = {
        "ipc": 0.5,
        "instructions": 1_000_000,
        "cycles": cycles,
        "l1tlb_mpki": 80.25,
        "l2tlb_mpki": 61.5,
        "walks": 61_500,
        "avg_walk_latency": 123.456,
        "walk_refs_l1": 100_000,
        "walk_refs_l2": 50_000,
        "walk_refs_llc": 30_000,
        "walk_refs_dram": 20_000,
        "faults": 4_096,
        "dram_row_hit_rate": 0.4125,
    }
    base.update(summary)
    return {
        "scheme": scheme,
        "workload": workload,
        "summary": base,
        "core": {"cycles": cycles},
        "mmu": {"l2tlb": {"misses": base["walks"]}},
    }


class FakeXlatError(Exception):
    """Stands in for ``xlat._core.XlatError``."""


class PanicException(BaseException):
    """Stands in for PyO3's ``pyo3_runtime.PanicException`` (a BaseException)."""


class FakeCore(types.ModuleType):
    """A fake ``xlat._core`` that records its calls and returns canned answers."""

    XlatError = FakeXlatError

    def __init__(self) -> None:
        super().__init__("xlat._core")
        self.__version__ = "0.0.0-fake"
        self.MODEL_EPOCH = "2000-01-01"
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.stats_by_config: dict[str, dict[str, Any]] = {}
        self.error: BaseException | None = None
        self.preset_names = ["baseline-radix", "perfect-tlb", "mehpt-radix"]

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))
        if self.error is not None:
            raise self.error

    def run(
        self,
        config: str,
        overrides: list[str],
        trace: str | None,
        out: str | None,
        progress: Any,
    ) -> str:
        self._record("run", config, list(overrides), trace, out, progress)
        stats = self.stats_by_config.get(config) or make_stats(scheme=config)
        text = json.dumps(stats, sort_keys=True)
        if out is not None:
            Path(out, "stats.json").write_text(text)
            Path(out, "config.toml").write_text(f"# resolved {config}\n")
        return text

    def resolve(self, config: str, overrides: list[str]) -> str:
        self._record("resolve", config, list(overrides))
        return f"# {config}\n" + "\n".join(overrides) + "\n"

    def boot(self, config: str, overrides: list[str]) -> None:
        self._record("boot", config, list(overrides))

    def record_trace(
        self,
        config: str,
        overrides: list[str],
        out: str,
        progress: Any,
        include_setup: bool,
    ) -> str:
        self._record("record_trace", config, list(overrides), out, progress, include_setup)
        return json.dumps({"records": 5, "setup_records": 0, "setup_included": include_setup})

    def presets(self) -> list[str]:
        self._record("presets")
        return list(self.preset_names)

    def preset_text(self, name: str) -> str:
        self._record("preset_text", name)
        if name not in self.preset_names:
            raise FakeXlatError(f"unknown preset '{name}'")
        return f'# preset {name}\n[mmu]\nscheme = "radix"\n'

    def bench(self, workload: str, references: int, *config: str) -> str:
        self._record("bench", workload, references, *config)
        return json.dumps(
            {
                "workload": workload,
                "references": references,
                "seconds": 0.25,
                "refs_per_second": references / 0.25,
            }
        )

    def names(self) -> list[str]:
        """Names of the calls made so far, in order."""
        return [name for name, _ in self.calls]
