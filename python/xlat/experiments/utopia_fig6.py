"""Utopia (Kanellopoulos et al., MICRO'23), §3 Fig 6: page faults of restrictive-only mapping.

Fig 6 compares the page faults of a system that maps memory only flexibly (any page in any
frame) with one that maps it only restrictively (a page may live only in the set its virtual
page number hashes to, "across the whole memory"): the restrictive system cannot keep a page
in memory when its set is full, even with free frames elsewhere, and pages it out to disk.

Our systems, with the same physical memory and swapping on (``[os.swap]``):

* **Flexible-only**: Radix (preset ``baseline-radix``) with demand paging from the buddy
  allocator; reclaim pages out the oldest page only when memory is full.
* **Restrictive-only**: Utopia (preset ``utopia``) with ``schemes.utopia.flexseg = false``:
  one RestSeg of 4 KiB pages (16-way; 8-way at the small scales, whose few sets make tags too
  long for 16 in a line) covers memory but for a reserve for the kernel's page tables, TARs
  and SFs (a RestSeg is a power of two; the reserve is 1/256 of it, at least 2 MiB). A full
  set's DRRIP victim is paged out, and touching it again is a major fault.

Memory is sized to the workloads: every workload runs at ``workload.footprint`` = the RestSeg's
size (reached from below: workloads sized in powers of two land on it or at half of it, the
others just below it), so memory is the footprint plus at least the reserve (1.25x at tiny,
1.03x at quick, less above) and the data always fits it. The flexible system then faults
exactly once per page it touches (no page-outs); the restrictive one faults that often plus
once per touch of a page its set pushed out. A footprint of the RestSeg's size is what "the
restrictive mapping across the whole memory" means: memory the data fits in, if only its
sets were balanced. Runs simulate every record in detail from the start (no fast-forward, no
warm-up, no pre-population), so every first touch counts as a fault in both systems, as all
of a program's faults do in the paper.
"""

from __future__ import annotations

import pandas as pd

from .. import plots
from .registry import SCALES, Analysis, Reproduction, System, ascending, register
from .utopia import GRAPH_KERNELS, PAPER

#: The least average fault ratio the direction counts as "more": a ratio of 1.00002 (a few
#: hundred extra faults in millions) would hold a strict "more" while showing nothing.
MORE_ON_AVERAGE = 1.01
#: RestSeg bytes per scale: physical memory is this plus the kernel's reserve.
RESTSEG_BYTES = {"tiny": 8 << 20, "quick": 64 << 20, "full": 1 << 30, "paper": 8 << 30}
#: Every workload's footprint, as a fraction of the RestSeg: all of it (from below). The
#: flexible system has the reserve to spare on top, so it never swaps.
FOOTPRINT_FRACTION = 1.0
#: Memory references per run. Runs start at the first record (the set-up's faults count), so
#: a run covers the set-up of its footprint and some of the kernel.
REFERENCES = {"tiny": 2_000_000, "quick": 20_000_000, "full": 300_000_000, "paper": 500_000_000}
#: Ways of the RestSeg per scale: Table 1's 16 where a set's tags fit a 64-byte line (§5.2),
#: 8 in the small RestSegs, whose few sets make tags too long for 16 of them (29-bit tags in
#: 8 MiB: 8 bytes each).
WAYS = {"tiny": 8, "quick": 8, "full": 16, "paper": 16}
#: The workloads: Utopia Table 2's (graph kernels, XSBench, GUPS, DLRM, k-mer counting).
WORKLOAD_NAMES = (*GRAPH_KERNELS, "xsbench", "gups", "dlrm-sls", "kmer")


def reserve_bytes(restseg: int) -> int:
    """Memory beside the RestSeg for the kernel's page tables, TARs and SFs: 1/256 of it, at
    least 2 MiB (memory is a multiple of 2 MiB). A TAR takes 4 or 8 bytes per 4 KiB slot
    (1/1024 or 1/512 of the RestSeg), an SF a few bits per set, the radix table (which maps no
    data here) a few pages. As small as that allows, since the flexible system may put data
    in it too."""
    return max(restseg // 256, 2 << 20)


def memory_bytes(scale: str) -> int:
    return RESTSEG_BYTES[scale] + reserve_bytes(RESTSEG_BYTES[scale])


def footprint_bytes(scale: str) -> int:
    return int(RESTSEG_BYTES[scale] * FOOTPRINT_FRACTION)


def fig6_workloads(scale: str) -> dict[str, dict]:
    """Every workload at the scale's RestSeg size (``workload.footprint``)."""
    return {name: {"footprint": footprint_bytes(scale)} for name in WORKLOAD_NAMES}


SWAP = {"os.swap.enabled": True}
SYSTEMS = {
    "Flexible-only": System("baseline-radix", SWAP),
    "Restrictive-only": System("utopia", SWAP),
}

LABELS = tuple(SYSTEMS)


def _scale_overrides(scale: str) -> dict:
    """Memory and the restrictive-only RestSeg of ``scale``, given to both systems: the RestSeg
    varies with the scale, and a scale's overrides are the same for every system, so
    ``[schemes.utopia]`` is given whole (Table 1's SF and TAR caches, as the ``utopia`` preset)
    and the flexible-only system, a radix one, does not use it."""
    restseg = RESTSEG_BYTES[scale]
    unfragmented = {}
    if restseg > 1 << 30:
        # The reserve beside a RestSeg of several GiB is a few tens of MiB, and fragmenting it
        # at boot leaves no contiguous block for the TAR (8 MiB at paper scale). Neither system
        # uses huge pages here (`thp = "never"`), so fragmentation does not change the faults
        # Fig 6 counts.
        unfragmented = {"os.physmem.fragmentation": 0.0}
    return {
        "os.physmem.bytes": memory_bytes(scale),
        **unfragmented,
        "schemes.utopia": {
            "restsegs": [{"bytes": restseg, "page": "4K", "ways": WAYS[scale]}],
            "flexseg": False,
            "slot_order": "set-major",
            "sf_cache_bytes": 2048,
            "tar_cache_bytes": 2048,
            "cache_latency": 2,
            # PTE-based migration moves FlexSeg pages in; there are none (nor counters to age).
            "migrate_walks": 0,
            "migrate_dram_refs": 4,
            "migrate_page_sizes": ["4K"],
            "decay_interval": 0,
            # Restrictive-only: every page takes its set's slot at its fault.
            "allocate_at_fault": True,
        },
    }


def _faults(df: pd.DataFrame) -> pd.DataFrame:
    """Per workload and system: faults (minor + major) and major faults."""
    ok = df[df["status"] == "ok"].copy()
    major = "stats.os.faults.major"
    ok["major"] = ok[major].fillna(0) if major in ok else 0.0
    ok["faults"] = ok["stats.summary.faults"]
    return ok


def _ratios(df: pd.DataFrame) -> pd.Series:
    ok = _faults(df)
    faults = ok.pivot_table(index="workload", columns="label", values="faults")
    flexible = faults["Flexible-only"].where(faults["Flexible-only"] > 0)
    return faults["Restrictive-only"] / flexible


def _sets_fill_evenly(df: pd.DataFrame, _scale: str) -> str | None:
    """The cause of the paper-scale mark: GUPS's table fills every set exactly, so the
    restrictive mapping faults no more than the flexible one on it (within 0.1%)."""
    gups = float(_ratios(df).get("gups", float("nan")))
    if gups < 1.001:
        return None
    return (
        f"restrictive-only faults {gups:.4f}x as often as flexible-only on GUPS (the mark "
        "needs under 1.001x)"
    )


def _analyse(df: pd.DataFrame) -> Analysis:
    ok = _faults(df)
    faults = ok.pivot_table(index="workload", columns="label", values="faults")
    major = ok.pivot_table(index="workload", columns="label", values="major")
    ratio = _ratios(df)
    fig = plots.grouped_bars(
        ok,
        "faults",
        baseline="Flexible-only",
        normalize="ratio",
        summary="mean",
        ylabel="page faults (norm. to flexible-only)",
        title="Page faults: flexible-only vs restrictive-only mapping",
    )
    per_workload = pd.DataFrame(
        {
            "flexible-only faults": faults["Flexible-only"],
            "restrictive-only faults": faults["Restrictive-only"],
            "restrictive-only major faults": major["Restrictive-only"],
            "flexible-only major faults": major["Flexible-only"],
            "restrictive / flexible": ratio,
        }
    ).reset_index()
    values = {"fig6_fault_ratio_avg": float(ratio.mean())}
    undefined = {}
    if ratio.isna().all():
        undefined["fig6_fault_ratio_avg"] = "no flexible-only run took a fault"
    return Analysis(
        figures=[
            (
                "Fig 6: page faults of restrictive-only mapping, normalised to flexible-only "
                "(same memory, swapping on).",
                fig,
            )
        ],
        values=values,
        tables=[("Per workload: faults (minor + major) and major faults.", per_workload)],
        undefined=undefined,
    )


register(
    Reproduction(
        id="utopia-fig6",
        paper=PAPER,
        figure="Fig 6",
        title="page faults of flexible-only and restrictive-only address mapping",
        systems=SYSTEMS,
        workloads={scale: fig6_workloads(scale) for scale in SCALES},
        references=REFERENCES,
        analyse=_analyse,
        direction="restrictive-only mapping faults more than flexible-only mapping with the same "
        "memory: never fewer on a workload, at least 1% more on average (paper: 2.2x on average)",
        direction_check=lambda df, v: (
            ascending(1.0, float(_ratios(df).min()))
            and ascending(MORE_ON_AVERAGE, v["fig6_fault_ratio_avg"])
        ),
        direction_not_shown={
            "paper": "the runs' 500M references touch 41K-2.1M pages (0.16-8 GiB) of the 8 GiB, "
            "16-way RestSeg, in a few large arrays whose consecutive pages fill consecutive "
            "sets evenly: only XSBench (2 major faults) and DLRM-SLS (528) ever overflow a "
            "set, and GUPS's 8 GiB table fills every set with exactly its 16 pages, so the "
            "restrictive mapping faults 1.00002x as often; the paper's 2.2x needs pages that "
            "collide in sets, which scattered allocations give and our arrays do not "
            "(measured under os.layout = 'packed'; the Linux layout, quick 1.04x against packed "
            "1.05x, does not change that)",
        },
        not_shown_cause=_sets_fill_evenly,
        # Every fault counts: pages are mapped at their first touch (no populate), and the run
        # is simulated from its first record.
        overrides={
            "sim.fast_forward": 0,
            "sim.warmup_instructions": 0,
            "workload.populate": False,
        },
        scale_overrides={scale: _scale_overrides(scale) for scale in SCALES},
        notes="Both systems have the same physical memory: a RestSeg of 4 KiB pages "
        "(8 MiB and 8-way at tiny, 64 MiB and 8-way at quick, 1 GiB and 16-way at full, 8 GiB "
        "and 16-way at paper) plus a reserve of 1/256 of it (at least 2 MiB) for page tables, "
        "TARs and SFs; the restrictive-only system keeps data only in the RestSeg, the "
        "flexible-only one anywhere. Every workload runs at a footprint of the RestSeg's size "
        "(from below), not at its Table 2 size: Fig 6 is about memory that holds the data but "
        "not in the sets the data hashes to, and the paper gives no memory size for it. "
        "Utopia's modulo hash (§5.2) spreads a contiguous array evenly over the sets, and an "
        "array whose size is a multiple of the RestSeg's set span fills them exactly. Processes "
        "are laid out as Linux lays them out (os.layout = 'linux', ASLR from the seed): arrays "
        "mmapped top-down with no gaps between them, small allocations and edge lists on the "
        "brk heap at an unrelated offset; GUPS and k-mer (power-of-two tables) and the graph "
        "kernels overflow no set and fault as often as on the flexible system, while DLRM-SLS "
        "and XSBench overflow sets where their regions overlap in the sets and fault again on "
        "each return to a page pushed out. Under the packed layout (2 MiB gaps between "
        "regions) SSSP overflows too at quick scale, and the average is a little higher (1.05x "
        "against 1.04x at quick, 1.06x against 1.02x at tiny). The paper's "
        "2.2x comes from its own mapping and inputs; ours is an average over workloads most of "
        "which do not overflow. Faults count from the first record (no fast-forward, no "
        "warm-up, pages mapped at first touch). Swap I/O costs os.swap.page_in_cycles / "
        "page_out_cycles per 4 KiB (10 us, an NVMe SSD).",
    )
)
