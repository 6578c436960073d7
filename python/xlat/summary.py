"""Human-readable summaries of xlat statistics.

:func:`format_summary` turns the ``"summary"`` object of one run's statistics into a short,
aligned text block; :func:`format_comparison` puts several runs together with the speed-up of
each over the first. Missing numbers (an older engine, a scheme without page walks) print as
``n/a`` instead of failing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["format_comparison", "format_summary", "speedup"]

_NA = "n/a"
_LABEL_WIDTH = 22
_VALUE_WIDTH = 15

# Walk references by the level of the memory hierarchy that served them.
_WALK_LEVELS = (
    ("L1", "walk_refs_l1"),
    ("L2", "walk_refs_l2"),
    ("LLC", "walk_refs_llc"),
    ("DRAM", "walk_refs_dram"),
)


def _number(value: Any) -> float | None:
    """``value`` as a float if it is a finite-or-not real number (not bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _fmt_int(value: Any) -> str:
    x = _number(value)
    if x is None or math.isnan(x):
        return _NA
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{round(x):,}"


def _fmt_float(value: Any, digits: int) -> str:
    x = _number(value)
    if x is None:
        return _NA
    return f"{x:,.{digits}f}"


def _fmt_pct(fraction: float | None) -> str:
    if fraction is None or math.isnan(fraction):
        return _NA
    return f"{100.0 * fraction:.1f}%"


def _line(label: str, value: str, extra: str = "") -> str:
    text = f"  {label:<{_LABEL_WIDTH}}{value:>{_VALUE_WIDTH}}"
    if extra:
        text += f"  {extra}"
    return text.rstrip()


def _summary_of(stats: Mapping[str, Any]) -> Mapping[str, Any]:
    summary = stats.get("summary")
    return summary if isinstance(summary, Mapping) else {}


def format_summary(stats: Mapping[str, Any], title: str | None = None) -> str:
    """Format the headline numbers of one run as an aligned text block.

    Args:
        stats: the statistics of a run, as returned by :func:`xlat.run` (it reads
            ``stats["scheme"]``, ``stats["workload"]`` and ``stats["summary"]``).
        title: first line; defaults to ``"<workload> on <scheme>"``.

    Returns:
        Several lines (no trailing newline): IPC (and each core's, with several cores),
        instructions, cycles, L1/L2 TLB MPKI, page walks, average walk latency, walk references
        by the level that served them (count and share), page faults, DRAM row-buffer hit rate,
        the translations checked (with ``--verify``) and the instructions fast-forwarded before
        the measurement (when there were any).
    """
    s = _summary_of(stats)
    scheme = str(stats.get("scheme", "?"))
    workload = str(stats.get("workload", "?"))
    lines = [title if title is not None else f"{workload} on {scheme}"]
    # Names can be long (a trace path): left-aligned where the value column starts.
    lines.append(f"  {'scheme':<{_LABEL_WIDTH}}{scheme}")
    lines.append(f"  {'workload':<{_LABEL_WIDTH}}{workload}")
    lines.append(_line("IPC", _fmt_float(s.get("ipc"), 3)))
    cores = stats.get("cores")
    if isinstance(cores, list) and len(cores) > 1:
        # The total IPC of several cores hides a slow one: each core's beside it.
        lines.append(_line("cores", str(len(cores))))
        for i, core in enumerate(cores):
            ipc = core.get("core", {}).get("ipc") if isinstance(core, Mapping) else None
            lines.append(_line(f"  core {i} IPC", _fmt_float(ipc, 3)))
    lines.append(_line("instructions", _fmt_int(s.get("instructions"))))
    lines.append(_line("cycles", _fmt_int(s.get("cycles"))))
    lines.append(_line("L1 TLB MPKI", _fmt_float(s.get("l1tlb_mpki"), 2)))
    lines.append(_line("L2 TLB MPKI", _fmt_float(s.get("l2tlb_mpki"), 2)))
    lines.append(_line("page walks", _fmt_int(s.get("walks"))))
    # With no page walks the engine's average is 0.0 by convention; it is undefined, not zero
    # (a Utopia run whose RestSeg walks resolve every L2 TLB miss walks no page table).
    no_walks = _number(s.get("walks")) == 0
    latency = _NA if no_walks else _fmt_float(s.get("avg_walk_latency"), 1)
    lines.append(_line("avg walk latency", latency, "cycles" if latency != _NA else ""))

    counts = [_number(s.get(key)) for _, key in _WALK_LEVELS]
    known = [c for c in counts if c is not None]
    total = sum(known) if known else None
    lines.append(_line("walk refs", _fmt_int(total) if total is not None else _NA))
    for (level, key), count in zip(_WALK_LEVELS, counts):
        share = None
        if count is not None and total:
            share = count / total
        lines.append(
            _line(f"  served by {level}", _fmt_int(s.get(key)), _fmt_pct(share) if total else "")
        )

    lines.append(_line("page faults", _fmt_int(s.get("faults"))))
    lines.append(_line("DRAM row-buffer hits", _fmt_pct(_number(s.get("dram_row_hit_rate")))))
    verify = stats.get("verify", {})
    if verify.get("enabled"):
        # --verify says what it did: a run that checked nothing would look the same otherwise.
        lines.append(
            _line("verified", _fmt_int(verify.get("translations_checked")), "translations")
        )
    skipped = _number(s.get("fast_forwarded_instructions"))
    if skipped:
        reached = stats.get("fast_forward", {}).get("reached_roi")
        lines.append(
            _line(
                "fast-forwarded",
                _fmt_int(skipped),
                "instructions, to the region of interest" if reached else "instructions",
            )
        )
    return "\n".join(lines)


def speedup(base: Mapping[str, Any], other: Mapping[str, Any]) -> float:
    """Speed-up of ``other`` over ``base``: ``base cycles / other cycles``.

    Both are statistics dicts as returned by :func:`xlat.run`. Returns ``nan`` when either
    cycle count is missing or zero.
    """
    b = _number(_summary_of(base).get("cycles"))
    o = _number(_summary_of(other).get("cycles"))
    if b is None or o is None or o == 0 or b == 0:
        return math.nan
    return b / o


def format_comparison(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Format several runs: each one's summary, then the speed-up of each over the first.

    Args:
        runs: ``(label, stats)`` pairs; the first is the baseline.

    Returns:
        The summaries separated by blank lines, followed by a table of speed-ups (cycles of the
        first run divided by cycles of each run; ``1.000x`` for the first).
    """
    if not runs:
        return ""
    blocks = [format_summary(stats, title=label) for label, stats in runs]
    base_label, base_stats = runs[0]
    width = max(_LABEL_WIDTH, max(len(label) for label, _ in runs) + 2)
    table = [f"speed-up over {base_label} (cycles ratio)"]
    for label, stats in runs:
        ratio = speedup(base_stats, stats)
        value = _NA if math.isnan(ratio) else f"{ratio:.3f}x"
        cycles = _fmt_int(_summary_of(stats).get("cycles"))
        table.append(f"  {label:<{width}}{value:>10}   ({cycles} cycles)")
    blocks.append("\n".join(table))
    return "\n\n".join(blocks)
