"""Utopia (Kanellopoulos et al., MICRO'23): how the share of data THP leaves on 4 KB pages
decides the §8 results.

Not a figure of the paper, but a choice it leaves to us. §7 runs every system "with both 4KB
and 2MB pages", the page sizes a THP-enabled Linux chose, and says no more. xlat's paper scale
leaves 90% of every region's 2 MB ranges to 4 KB pages (``os.thp_ineligible = 0.9``), because
the paper's Fig 1 (43% of Radix's walk requests served by DRAM) and Fig 5 (a perfect TLB +30%)
cannot come from data that 2 MB pages back (docs/experiments.md). This reproduction runs Radix,
Utopia and the perfect TLB (P-TLB) with 0%, 50%, 90% and 100% of the ranges on 4 KB pages and
prints each system's speed-up over Radix at each share beside the paper's +24% and +30%.

Every scale keeps the paper's proportions (``utopia.proportioned``): Table 1's machine and
Table 2's footprints divided by 32 (tiny), 16 (quick), 4 (full) or 1 (paper), so that the
share, not the footprint, is what changes between its runs.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .. import plots
from .registry import SCALES, Analysis, Reproduction, System, ascending, register
from .utopia import (
    NOTES_COMMON,
    PAPER,
    PAPER_FOOTPRINTS,
    PAPER_RUN,
    proportioned,
    proportioned_footprint,
)
from .utopia import _speedups as utopia_speedups
from .utopia_eval import _gmean

#: Shares of every region's 2 MB ranges left to 4 KB pages (``os.thp_ineligible``); 0.9 is
#: the paper scale's choice.
SHARES = (0.0, 0.5, 0.9, 1.0)
#: What Table 1's capacities and Table 2's footprints are divided by at each scale.
DIVISORS = {"tiny": 32, "quick": 16, "full": 4, "paper": 1}
PRESETS = {"Radix": "baseline-radix", "Utopia": "utopia", "P-TLB": "perfect-tlb"}
#: Workloads whose set-up is quick at a few hundred MB (tiny, quick); full and paper run every
#: Table 2 workload.
FEW = {"tiny": ("gups", "dlrm-sls"), "quick": ("gups", "xsbench", "dlrm-sls")}


def _label(name: str, share: float) -> str:
    return f"{name} {share:.0%}"


SYSTEMS = {
    _label(name, share): System(
        preset,
        scale_overrides={
            scale: {**proportioned(preset, divisor), "os.thp_ineligible": share}
            for scale, divisor in DIVISORS.items()
        },
    )
    for share in SHARES
    for name, preset in PRESETS.items()
}


def workloads(scale: str) -> dict[str, dict]:
    names = FEW.get(scale, tuple(PAPER_FOOTPRINTS))
    return {w: {"footprint": proportioned_footprint(w, DIVISORS[scale])} for w in names}


def _speedups(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """Workload x share: Radix's cycles over ``name``'s, both at the share."""
    return pd.DataFrame(
        {
            share: utopia_speedups(df, _label(name, share), baseline=_label("Radix", share))
            for share in SHARES
        }
    )


def _averages(df: pd.DataFrame) -> dict[str, dict[float, float]]:
    return {
        name: {share: _gmean(table[share]) for share in SHARES}
        for name, table in ((n, _speedups(df, n)) for n in ("Utopia", "P-TLB"))
    }


def _analyse(df: pd.DataFrame) -> Analysis:
    averages = _averages(df)
    rows = [
        {"status": "ok", "system": name, "share_4k": share * 100, "speedup": value}
        for name, by_share in averages.items()
        for share, value in by_share.items()
    ]
    fig = plots.lines(
        pd.DataFrame(rows),
        "share_4k",
        "speedup",
        hue="system",
        ylabel="speed-up over Radix (geomean)",
        title="Speed-up over Radix by the share of 4 KB pages",
    )
    fig.axes[0].set_xlabel("2 MB ranges THP leaves to 4 KB pages (%)")
    fig.axes[0].axhline(1.0, color="black", linewidth=0.8)
    per_workload = pd.concat(
        {name: _speedups(df, name) for name in ("Utopia", "P-TLB")}, axis=1
    ).reset_index()
    per_workload.columns = [
        c if isinstance(c, str) else (c[0] if c[1] == "" else f"{c[0]} at {c[1]:.0%} 4K")
        for c in per_workload.columns
    ]
    values = {
        f"{key}_speedup_{round(share * 100)}": averages[name][share]
        for name, key in (("Utopia", "utopia"), ("P-TLB", "ptlb"))
        for share in SHARES
    }
    return Analysis(
        figures=[("Speed-up over Radix at each share of 4 KB pages (paper scale: 90%).", fig)],
        values=values,
        tables=[("Per workload: speed-up over Radix at the same share.", per_workload)],
        summary="Geometric-mean speed-up over Radix at 0% / 50% / 90% / 100% of the ranges on "
        "4 KB pages: "
        + "; ".join(
            f"{name} " + " / ".join(f"{averages[name][s]:.3f}" for s in SHARES) for name in averages
        ),
    )


def _direction(df: pd.DataFrame, values: Mapping[str, float]) -> bool:
    ptlb = _averages(df)["P-TLB"]
    return ascending(ptlb[0.0], ptlb[0.9], strict=True)


register(
    Reproduction(
        id="utopia-thp-share",
        paper=PAPER,
        figure="§7 (THP's page sizes)",
        title="Utopia's and a perfect TLB's speed-up over Radix by the share of data THP "
        "leaves on 4 KB pages",
        systems=SYSTEMS,
        workloads={scale: workloads(scale) for scale in SCALES},
        references={"tiny": 20_000, "quick": 2_000_000, "full": 50_000_000, "paper": 500_000_000},
        # The paper's run length; the page sizes are each system's own.
        scale_overrides={"paper": {"sim.max_instructions": PAPER_RUN["sim.max_instructions"]}},
        analyse=_analyse,
        direction="translation matters more the more data THP leaves on 4 KB pages: a perfect "
        "TLB gains more over Radix at 90% than at 0% (the paper's +30% for P-TLB and +24% for "
        "Utopia need most of the data on 4 KB pages)",
        direction_check=_direction,
        notes="§7 gives the page sizes only as 'the page size information ... from a real "
        "system that uses Transparent Huge Pages'. xlat's paper scale leaves 90% of the 2 MB "
        "ranges to 4 KB pages (os.thp_ineligible = 0.9): with every range on 2 MB pages a "
        "perfect TLB is within 1-5% of Radix, which the paper's Figs 1 and 5 rule out. Every "
        "scale divides Table 1's capacities and Table 2's footprints by the same number "
        "(utopia.proportioned: 32 at tiny, 16 at quick, 4 at full, 1 at paper), so the "
        "ratios the result depends on are the paper's; the RestSegs go to 8 ways below paper "
        "scale (a set's tags must fit a line). Radix gets 1 GB of extra 2 MB pages divided "
        "the same way, as §7 gives it. " + NOTES_COMMON,
    )
)
