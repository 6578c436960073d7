"""Utopia (Kanellopoulos et al., MICRO'23), §3 motivation figures, baseline part.

Figs 1-2 (where page-walk requests are served, average walk latency), Fig 3 (cache capacity
taken by page-table entries), Figs 4-5 (DRAM row-buffer conflicts and speed-up of a perfect
TLB), each with ECH (elastic cuckoo hashing, Utopia's hashed-page-table comparator, preset
``utopia-ech``) beside Radix; Figs 4-5 also with RMM (redundant memory mappings, preset
``rmm``), the other comparator of Fig 11.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from .. import plots
from .registry import SCALES, Analysis, Reproduction, System, ascending, register

PAPER = "Utopia (MICRO'23)"

#: The 11 workloads of Utopia Table 2 at each scale: seven GraphBIG kernels, XSBench, GUPS,
#: DLRM SparseLengthsSum and GenomicsBench k-mer counting. The paper's datasets are 8-33 GB;
#: "quick" keeps each well beyond the L2 TLB reach while a run takes seconds.
GRAPH_KERNELS = ("bc", "bfs", "cc", "gc", "pr", "tc", "sssp")


#: Utopia Table 2's dataset sizes, for the ``paper`` scale.
PAPER_FOOTPRINTS = {
    **dict.fromkeys(GRAPH_KERNELS, "8GB"),
    "xsbench": "9GB",
    "gups": "10GB",  # a power-of-two table: 8 GiB
    "dlrm-sls": "10.3GB",
    "kmer": "33GB",  # a power-of-two table: 2^30 slots, 16.25 GiB
}


def utopia_workloads(scale: str) -> dict[str, dict]:
    if scale == "paper":
        return {name: {"footprint": size} for name, size in PAPER_FOOTPRINTS.items()}
    graph_scale = {"tiny": 12, "quick": 20, "full": 23}[scale]
    workloads: dict[str, dict] = {k: {"scale": graph_scale} for k in GRAPH_KERNELS}
    workloads["xsbench"] = {
        "tiny": {"n_isotopes": 12, "gridpoints": 1000},
        "quick": {},
        "full": {"n_isotopes": 355},
    }[scale]
    # Utopia Table 2 lists GUPS at 10 GB; RandomAccess tables are powers of two (its index is
    # a mask of the random number), so the full scale takes the 8 GiB below it.
    workloads["gups"] = {"table_bytes": {"tiny": 1 << 26, "quick": 1 << 32, "full": 1 << 33}[scale]}
    workloads["dlrm-sls"] = {"tiny": {"rows": 1 << 14}, "quick": {}, "full": {"rows": 1 << 22}}[
        scale
    ]
    workloads["kmer"] = {
        "tiny": {"genome_bytes": 1 << 16, "table_slots": 1 << 19},
        "quick": {},
        "full": {"genome_bytes": 1 << 26, "table_slots": 1 << 28},
    }[scale]
    return workloads


WORKLOADS = {scale: utopia_workloads(scale) for scale in SCALES}
#: At the paper scale a run ends at 500M instructions (``PAPER_RUN``); its references only
#: cap it, and every record is at least one instruction.
REFERENCES = {"tiny": 30_000, "quick": 10_000_000, "full": 200_000_000, "paper": 500_000_000}

#: Utopia §7 ran every system "with both 4KB and 2MB pages", the page sizes a THP-enabled
#: Linux chose, for 500M instructions per workload: so does the ``paper`` scale (every run's
#: keys at that scale). §7 does not say which share THP backed; its Fig 1 does: 43% of
#: Radix's walk requests come from DRAM, which a Radix walk of THP-backed data never does
#: (over GUPS's 8 GiB of 2 MB pages 597 of 9.4M walks' requests did, and a perfect TLB gained
#: nothing). So THP leaves 90% of every region's 2 MiB ranges to 4 KiB pages
#: (``os.thp_ineligible``; GraphBIG's many small allocations do that, ME-HPT Table I). The
#: smaller scales keep 4 KiB pages: at their footprints (1-4 GiB) THP's 2 MB pages would
#: bring the data within the L2 TLB's reach (docs/experiments.md).
PAPER_RUN = {"os.thp": "always", "os.thp_ineligible": 0.9, "sim.max_instructions": 500_000_000}
SCALE_OVERRIDES = {"paper": PAPER_RUN}

#: Utopia §7: "we increase the number of 2MB pages provided to [Radix, ECH and POM-TLB] to
#: match the contiguous allocation of the RestSeg (1GB = 512x2MB pages)". Where THP is on
#: (the paper scale) those baselines start with 1 GiB of memory kept out of the 40%
#: fragmentation, free 2 MB blocks that THP can use (RMM has its 1 GB region at every scale).
EXTRA_HUGE_PAGES = {"paper": {"os.physmem.contiguous_bytes": 1 << 30}}


def proportioned(preset: str, divisor: int) -> dict[str, Any]:
    """Keys that run ``preset`` as §7 ran it (``PAPER_RUN``'s page sizes) on Table 1's machine
    with every capacity that translation depends on divided by ``divisor``: the TLBs, PWCs,
    caches, RestSegs with their SF and TAR caches, the POM-TLB and the baselines' extra 2 MB
    pages. Footprints divided by the same number (``PAPER_FOOTPRINTS``, see
    :func:`proportioned_footprint`) then keep the paper's ratios of data to TLB reach, of
    page tables to caches and of data to RestSeg, at a size a test can run. The DRAM, the
    core and the latencies stay as they are. Associativities stay where the smaller structure
    still has a set of them; the RestSegs go to 8 ways, since a set's tags must fit a line and
    fewer sets mean longer tags (§5.2)."""
    if divisor < 1 or divisor & (divisor - 1) or divisor > 32:
        raise ValueError(f"divisor must be a power of two in 1..32, got {divisor}")
    keys: dict[str, Any] = {
        "os.thp": PAPER_RUN["os.thp"],
        "os.thp_ineligible": PAPER_RUN["os.thp_ineligible"],
        "mmu.l1tlb.4k.entries": max(4, 64 // divisor),
        "mmu.l1tlb.2m.entries": max(4, 32 // divisor),
        "mmu.l2tlb.unified.entries": 1536 // divisor,
        "mmu.l2tlb.unified.ways": 12 if divisor <= 16 else 6,
        "schemes.radix.pwc.entries": max(1, 32 // divisor),
        "schemes.radix.pwc.ways": max(1, 32 // divisor),
        "cache.l1d.size": 32768 // divisor,
        "cache.l2.size": (1 << 20) // divisor,
        "cache.llc.size": (2 << 20) // divisor,
    }
    if preset == "utopia":
        ways = 16 if divisor == 1 else 8
        segment = (512 << 20) // divisor
        keys["schemes.utopia.restsegs"] = [
            {"bytes": segment, "page": "4K", "ways": ways},
            # At least one set of 2 MB pages.
            {"bytes": max(segment, ways << 21), "page": "2M", "ways": ways},
        ]
        keys["schemes.utopia.tar_cache_bytes"] = max(64, 2048 // divisor)
        keys["schemes.utopia.sf_cache_bytes"] = max(64, 2048 // divisor)
    elif preset in ("baseline-radix", "utopia-ech", "pom-tlb"):
        keys["os.physmem.contiguous_bytes"] = (1 << 30) // divisor
    if preset == "pom-tlb":
        keys["schemes.pom_tlb.entries"] = 65536 // divisor
    if preset == "utopia-ech":
        keys["schemes.hashed.walker.pmd_cwc_entries"] = max(1, 16 // divisor)
        keys["schemes.hashed.walker.pud_cwc_entries"] = max(1, 16 // divisor)
    return keys


def proportioned_footprint(workload: str, divisor: int) -> str:
    """Table 2's footprint of ``workload`` divided by ``divisor`` (``workload.footprint``)."""
    size = PAPER_FOOTPRINTS[workload]
    if divisor == 1:
        return size  # as the paper scale writes it, so that the same runs are the same
    return f"{float(size.removesuffix('GB')) * 1000 / divisor:.0f}MB"


def _baseline(preset: str) -> System:
    """A baseline the paper gave 1 GB more of 2 MB pages."""
    return System(preset, scale_overrides=EXTRA_HUGE_PAGES)


#: Every system of §8 as the paper ran it. Figures take theirs from here, so that the same
#: system is the same runs in every figure (a run's id is the hash of its config).
PAPER_SYSTEMS = {
    "Radix": _baseline("baseline-radix"),
    "ECH": _baseline("utopia-ech"),
    "RMM": System("rmm"),
    "P-TLB": System("perfect-tlb"),
    # Utopia §8.2 / Fig 15: the 64K-entry POM-TLB of Table 1 (docs/schemes/pom-tlb.md).
    "POM-TLB": _baseline("pom-tlb"),
    "Utopia": System("utopia"),
}
RADIX_ECH = {label: PAPER_SYSTEMS[label] for label in ("Radix", "ECH")}
NOTES_COMMON = (
    "The paper simulates 500M instructions per workload on 8-33 GB datasets, with the page sizes "
    "a THP-enabled Linux chose (§7); our paper scale does too (THP on, 90% of every region's 2 MB "
    "ranges left to 4 KiB pages, as the paper's Fig 1 implies, Radix, ECH and POM-TLB given "
    "1 GB more of 2 MB pages as §7 gives them). 'quick' fast-forwards through each "
    "workload's set-up and measures about 9M references after a detailed warm-up of 2M "
    "instructions, on smaller inputs with 4 KiB pages (with THP, 2 MB pages would bring those "
    "inputs within the L2 TLB's reach), so walk locality (PWC and cache hits of upper levels) "
    "is higher than the paper's. Averages are over the workloads run."
)

WALK_LEVELS = {
    "L1": "stats.summary.walk_refs_l1",
    "L2": "stats.summary.walk_refs_l2",
    "LLC": "stats.summary.walk_refs_llc",
    "DRAM": "stats.summary.walk_refs_dram",
}


def _ok(df: pd.DataFrame, label: str | None = None) -> pd.DataFrame:
    ok = df[df["status"] == "ok"]
    return ok if label is None else ok[ok["label"] == label]


def _per_workload(df: pd.DataFrame, column: str, label: str) -> pd.Series:
    return _ok(df, label).groupby("workload")[column].mean()


def _walk_refs(df: pd.DataFrame) -> pd.Series:
    return df[list(WALK_LEVELS.values())].sum(axis=1)


def _cached_walks(df: pd.DataFrame, label: str) -> tuple[float, float]:
    """``label``'s walk requests per walk and the share of them the L1 or L2 served, each
    averaged over the workloads."""
    runs = _ok(df, label)
    refs = _walk_refs(runs)
    per_walk = (refs / runs["stats.summary.walks"]).mean()
    cached = ((runs[WALK_LEVELS["L1"]] + runs[WALK_LEVELS["L2"]]) / refs).mean()
    return float(per_walk), float(cached)


def _radix_walks_are_cached_reads(df: pd.DataFrame, _scale: str) -> str | None:
    """The cause of utopia-fig1-2's mark: a Radix walk is about one request, mostly served by
    the L1 or L2, while ECH's walks make more requests (a CWC miss probes every way)."""
    radix, cached = _cached_walks(df, "Radix")
    ech, _ = _cached_walks(df, "ECH")
    if radix <= 1.3 and cached >= 0.7 and ech > radix:
        return None
    return (
        f"Radix walks make {radix:.2f} requests ({cached:.0%} served by the L1 or L2; the "
        f"mark needs at most 1.3 and at least 70%), ECH's {ech:.2f} (needs more than Radix's)"
    )


#: ECH's walk requests over Radix's (mean over workloads) above which the cause of
#: utopia-fig1-2's paper-scale mark holds: its CWC misses probe every way (paper: 1.52x).
ECH_EVERY_WAY = 2.0


def _ech_probes_every_way(df: pd.DataFrame) -> str | None:
    """The cause of utopia-fig1-2's paper-scale mark: at Table 2's footprints ECH's PMD-CWC
    (16 entries of one 2 MiB region each) misses on most walks of the large workloads, each
    miss probes every way of every page size, and ECH makes over ``ECH_EVERY_WAY`` times
    Radix's walk requests, where the paper's ECH makes 1.52 times."""
    requests = _ok(df).assign(walk_refs=lambda t: _walk_refs(t))
    per = requests.pivot_table(index="workload", columns="label", values="walk_refs")
    ratio = float((per["ECH"] / per["Radix"].where(per["Radix"] > 0)).mean())
    if ratio > ECH_EVERY_WAY:
        return None
    return (
        f"ECH makes {ratio:.2f}x Radix's walk requests (the mark needs over {ECH_EVERY_WAY}x; "
        "the paper's ECH 1.52x)"
    )


def _walks_mark_cause(df: pd.DataFrame, scale: str) -> str | None:
    """Below paper scale: Radix's walks are cached reads. Paper: ECH probes every way."""
    if scale == "paper":
        return _ech_probes_every_way(df)
    return _radix_walks_are_cached_reads(df, scale)


#: Most workloads walk this rarely at tiny scale (Radix's L2 TLB misses per run).
RARE_WALKS = 100


def rarely_walked(df: pd.DataFrame, _scale: str) -> str | None:
    """The cause of the tiny-scale marks of utopia-fig5 and -fig11-16: translation barely
    matters, Radix missing the L2 TLB fewer than ``RARE_WALKS`` times on most workloads."""
    misses = _per_workload(df, "stats.mmu.l2tlb.misses", "Radix")
    rare = int((misses < RARE_WALKS).sum())
    if rare > len(misses) / 2:
        return None
    return (
        f"Radix misses the L2 TLB fewer than {RARE_WALKS} times on {rare} of "
        f"{len(misses)} workloads (the mark needs most)"
    )


#: The TAR cache's hit rate below which it is the cause of the marks of utopia-fig11-16 and
#: -fig17 (the paper's Fig 18 measures 98%): "about never" at quick and full scale, where
#: consecutive pages fall in consecutive sets and a TAR line serves one page of a sweep; under
#: half at paper scale, which measures 6-35% per workload (results/paper/utopia-fig11-16).
RARE_TAR_HITS = {"paper": 0.5}
RARE_TAR_HITS_DEFAULT = 0.1


def tar_cache_hit_rate(df: pd.DataFrame, label: str = "Utopia") -> float:
    """The TAR cache's hits over its lookups, over all of ``label``'s runs."""
    runs = _ok(df, label)
    hits = runs["stats.mmu.tar_cache.hits"].sum()
    return float(hits / (hits + runs["stats.mmu.tar_cache.misses"].sum()))


def tar_cache_rarely_hits(df: pd.DataFrame, scale: str) -> str | None:
    """Utopia's TAR cache hits under ``RARE_TAR_HITS`` of its lookups at ``scale``."""
    rate = tar_cache_hit_rate(df)
    bound = RARE_TAR_HITS.get(scale, RARE_TAR_HITS_DEFAULT)
    if rate < bound:
        return None
    return f"the TAR cache hits {rate:.1%} of its lookups (the mark needs under {bound:.0%})"


def _speedups(df: pd.DataFrame, label: str, baseline: str = "Radix") -> pd.Series:
    """Per workload: ``baseline``'s cycles over ``label``'s."""
    cycles = "stats.summary.cycles"
    return _per_workload(df, cycles, baseline) / _per_workload(df, cycles, label)


def _analyse_walks(df: pd.DataFrame) -> Analysis:
    radix = _ok(df, "Radix")
    refs = _walk_refs(radix)
    dram_share = (radix["stats.summary.walk_refs_dram"] / refs.where(refs > 0)).groupby(
        radix["workload"]
    )
    latency = _per_workload(df, "stats.summary.avg_walk_latency", "Radix")
    ech_latency = _per_workload(df, "stats.summary.avg_walk_latency", "ECH")
    mpki = _per_workload(df, "stats.summary.l2tlb_mpki", "Radix")
    ok = _ok(df).assign(walk_refs=lambda t: _walk_refs(t))
    requests = ok.pivot_table(index="workload", columns="label", values="walk_refs")
    ech_requests = requests["ECH"] / requests["Radix"].where(requests["Radix"] > 0)
    fig1 = plots.stacked_bars(
        df,
        WALK_LEVELS,
        x="workload",
        hue="label",
        normalize="Radix",
        average=True,
        title="Hit location of page-walk requests, normalised to Radix",
    )
    fig2 = plots.grouped_bars(
        df,
        "stats.summary.avg_walk_latency",
        summary="mean",
        ylabel="average page-walk latency (cycles)",
        title="Average page-walk latency",
    )
    per_workload = pd.DataFrame(
        {
            "Radix: DRAM share of walk requests": dram_share.mean(),
            "Radix: avg walk latency (cycles)": latency,
            "ECH: avg walk latency (cycles)": ech_latency,
            "ECH / Radix walk requests": ech_requests,
            "Radix: L2 TLB MPKI": mpki,
        }
    ).reset_index()
    return Analysis(
        figures=[
            ("Fig 1: where page-walk requests are served, normalised to Radix's total.", fig1),
            ("Fig 2: average page-walk latency in cycles.", fig2),
        ],
        values={
            "radix_walk_refs_dram_fraction_avg": float(dram_share.mean().mean()),
            "radix_avg_walk_latency_avg": float(latency.mean()),
            "radix_l2tlb_mpki_avg": float(mpki.mean()),
            "ech_avg_walk_latency_avg": float(ech_latency.mean()),
            "ech_walk_latency_norm_avg": float(ech_latency.mean() / latency.mean()),
            "ech_walk_requests_norm_avg": float(ech_requests.mean()),
        },
        tables=[("Per workload.", per_workload)],
    )


def _epoch_mean(row: pd.Series, level: str) -> float:
    """Mean over the run's epochs of the fraction of ``level`` blocks holding PT entries; the
    end-of-run snapshot when the run was shorter than one epoch."""
    epochs = json.loads(row.get("stats.epochs") or "[]")
    values = [e[f"{level}_translation_fraction"] for e in epochs]
    if values:
        return sum(values) / len(values)
    return float(row[f"stats.cache.{level}.translation_fraction"])


def _analyse_cache_share(df: pd.DataFrame) -> Analysis:
    rows = []
    for _, run in _ok(df).iterrows():
        for level, name in (("l2", "L2"), ("llc", "LLC")):
            rows.append(
                {
                    "status": "ok",
                    "workload": run["workload"],
                    "label": f"{run['label']} {name}",
                    "pt_fraction": _epoch_mean(run, level),
                }
            )
    share = pd.DataFrame(rows)
    fig = plots.grouped_bars(
        share,
        "pt_fraction",
        summary="mean",
        ylabel="fraction of blocks holding PTEs",
        title="Cache capacity taken by page-table entries",
    )
    per_workload = share.pivot_table(index="workload", columns="label", values="pt_fraction")
    return Analysis(
        figures=[("Fig 3: fraction of L2 and LLC blocks holding PTEs (Radix, ECH).", fig)],
        values={
            "radix_l2_pt_fraction_avg": float(per_workload["Radix L2"].mean()),
            "ech_l2_pt_fraction_avg": float(per_workload["ECH L2"].mean()),
        },
        tables=[("Per workload: fraction of blocks holding PTEs.", per_workload.reset_index())],
    )


def _row_conflicts(df: pd.DataFrame) -> pd.Series:
    return df["stats.dram.data.row_conflicts"] + df["stats.dram.translation.row_conflicts"]


def _analyse_headroom(df: pd.DataFrame) -> Analysis:
    ok = _ok(df).copy()
    ok["row_conflicts"] = _row_conflicts(ok)
    cycles = ok.pivot_table(index="workload", columns="label", values="stats.summary.cycles")
    conflicts = ok.pivot_table(index="workload", columns="label", values="row_conflicts")
    speedup = cycles["Radix"] / cycles["P-TLB"]
    ech_speedup = cycles["Radix"] / cycles["ECH"]
    pomtlb_speedup = cycles["Radix"] / cycles["POM-TLB"]
    rmm_speedup = cycles["Radix"] / cycles["RMM"]
    radix_conflicts = conflicts["Radix"].where(conflicts["Radix"] > 0)
    conflicts_norm = conflicts["P-TLB"] / radix_conflicts
    ech_conflicts_norm = conflicts["ECH"] / radix_conflicts
    rmm_conflicts_norm = conflicts["RMM"] / radix_conflicts
    fig5 = plots.grouped_bars(
        ok,
        "stats.summary.cycles",
        baseline="Radix",
        normalize="inverse",
        ylabel="speed-up over Radix",
        title="Speed-up of ECH, RMM, POM-TLB and a perfect TLB over Radix",
        ylim=(0, 2.5),  # GUPS runs off the top, labelled with its value, as the paper draws it
    )
    fig4 = plots.grouped_bars(
        ok,
        "row_conflicts",
        baseline="Radix",
        normalize="ratio",
        summary="mean",
        ylabel="DRAM row-buffer conflicts (norm. to Radix)",
        title="DRAM row-buffer conflicts",
    )

    def gmean(values: pd.Series) -> float:
        return math.exp(values.map(math.log).mean())

    per_workload = pd.DataFrame(
        {
            "P-TLB speed-up": speedup,
            "ECH speed-up": ech_speedup,
            "POM-TLB speed-up": pomtlb_speedup,
            "RMM speed-up": rmm_speedup,
            "P-TLB row conflicts / Radix": conflicts_norm,
            "ECH row conflicts / Radix": ech_conflicts_norm,
            "RMM row conflicts / Radix": rmm_conflicts_norm,
        }
    ).reset_index()
    return Analysis(
        figures=[
            (
                "Fig 5 (baseline part) and Fig 11's RMM bar: speed-up of ECH, RMM and P-TLB over "
                "Radix.",
                fig5,
            ),
            (
                "Fig 4 (ECH, P-TLB; RMM from Fig 14): DRAM row-buffer conflicts normalised to "
                "Radix.",
                fig4,
            ),
        ],
        values={
            "ptlb_speedup_avg": gmean(speedup),
            "ptlb_row_conflicts_norm_avg": float(conflicts_norm.mean()),
            "ech_speedup_avg": gmean(ech_speedup),
            "ech_row_conflicts_norm_avg": float(ech_conflicts_norm.mean()),
            "pomtlb_speedup_avg": gmean(pomtlb_speedup),
            "rmm_speedup_avg": gmean(rmm_speedup),
            "rmm_row_conflicts_norm_avg": float(rmm_conflicts_norm.mean()),
        },
        tables=[("Per workload.", per_workload)],
    )


register(
    Reproduction(
        id="utopia-fig1-2",
        paper=PAPER,
        figure="Figs 1-2",
        title="page-walk request hit locations and walk latency (Radix, ECH)",
        systems=RADIX_ECH,
        workloads=WORKLOADS,
        references=REFERENCES,
        scale_overrides=SCALE_OVERRIDES,
        analyse=_analyse_walks,
        direction="ECH's page walks are shorter than Radix's on average (paper: 86 vs 137 cycles, "
        "-39%)",
        direction_check=lambda df, v: ascending(
            v["ech_avg_walk_latency_avg"], v["radix_avg_walk_latency_avg"], strict=True
        ),
        # Below "paper" (even "full" stays below the paper's 8-33 GB) the cause is the walk
        # locality small footprints give, not the length of the run; at "paper" it is ECH's
        # CWC reach.
        direction_not_shown=dict.fromkeys(
            ("tiny", "quick", "full"),
            "at our footprints radix PTEs mostly hit in the caches and the upper levels in the "
            "PWCs, so a radix walk is about one cached read, while an ECH walk that misses its "
            "CWCs (16 PMD-CWC entries cover 32 MiB) probes every way, and the extra lines load "
            "the caches and DRAM",
        )
        | {
            "paper": "measured at Table 2's footprints (results/paper/utopia-fig1-2, under the "
            "DRAM model of 2026-11-28): ECH's walks take 130 cycles against Radix's 110 "
            "(1.10-1.53x on every workload). Radix's PWCs leave it 1.0-1.9 requests a walk, so "
            "ECH's parallel probes have little sequence to cut, while ECH's 16-entry PMD-CWC "
            "(32 MiB of reach) misses 69-100% of its lookups on GUPS, k-mer, DLRM-SLS and "
            "XSBench, and each miss probes every way: 6.6-9.0 requests a walk there (2.7-4.8 of "
            "them from DRAM, against Radix's 0.65-0.95), 2.9x Radix's requests on average (the "
            "paper's ECH 1.52x). Where the CWC hits (BFS and bc, 98-99%), ECH's walks are still "
            "1.15x and 1.23x Radix's: the hash and CWC lookup come first (6 cycles) and its "
            "lines reach DRAM more often (0.12 against 0.09 DRAM reads a walk on BFS)",
        },
        not_shown_cause=_walks_mark_cause,
        notes=NOTES_COMMON + " An ECH walk whose CWC entry is cached probes the one way it "
        "names for each page size present; one that misses the CWC (16 PMD-CWC entries cover "
        "32 MiB, against 64 regions per entry in ECPT's Cuckoo Walk Tables) probes all 4 ways "
        "of each size in parallel and reads the CWT entry beside them, and its latency is that "
        "of the probe holding the translation. That makes about 1.5x Radix's walk requests, as "
        "the paper's ECH does, but the latency is not lower than Radix's: at our footprints the "
        "radix PTEs mostly hit in the caches, and the extra probe lines (GUPS, k-mer, DLRM-SLS "
        "miss the PMD-CWC on 87-99% of walks) displace cached lines and queue at DRAM.",
    )
)

register(
    Reproduction(
        id="utopia-fig3",
        paper=PAPER,
        figure="Fig 3",
        title="L2 and LLC blocks holding page-table entries (Radix, ECH)",
        systems=RADIX_ECH,
        workloads=WORKLOADS,
        references=REFERENCES,
        scale_overrides=SCALE_OVERRIDES,
        analyse=_analyse_cache_share,
        # The claim is the size of the gap: ECH's share at least half the paper's excess
        # (1.79x) above Radix's. Merely "more" held with ECH's probes of every way removed
        # (CWCs covering the footprint: 1.04x at tiny scale).
        direction="ECH's page-table entries take at least 1.4x Radix's share of the L2, half "
        "the paper's excess (paper: 59% vs 33% of its blocks, 1.79x)",
        direction_check=lambda df, v: ascending(
            1.4 * v["radix_l2_pt_fraction_avg"], v["ech_l2_pt_fraction_avg"]
        ),
        notes=NOTES_COMMON + " Fractions are averaged over epochs of 1M instructions, as in the "
        "paper; runs shorter than one epoch use the end-of-run contents.",
        overrides={"sim.epoch_instructions": 1_000_000},
    )
)

register(
    Reproduction(
        id="utopia-fig5",
        paper=PAPER,
        figure="Figs 4-5",
        title="ECH, RMM, POM-TLB and a perfect TLB (P-TLB) over Radix",
        systems={
            label: PAPER_SYSTEMS[label] for label in ("Radix", "ECH", "RMM", "P-TLB", "POM-TLB")
        },
        workloads=WORKLOADS,
        references=REFERENCES,
        scale_overrides=SCALE_OVERRIDES,
        analyse=_analyse_headroom,
        # A perfect TLB is rarely slower, so the claim is its size: translation costs Radix
        # at least half the paper's 30% on average.
        direction="A perfect TLB (P-TLB) is faster than Radix on every workload and by at least "
        "15% on average, half the paper's +30%",
        direction_check=lambda df, v: (
            ascending(1.0, _speedups(df, "P-TLB").min(), strict=True)
            and ascending(1.15, v["ptlb_speedup_avg"])
        ),
        direction_not_shown={
            "tiny": "at tiny footprints most workloads' translations hit in the TLBs and PWCs: "
            "P-TLB's average headroom is about 9% (measured 1.09x), and on gc and pr it is "
            "within 1.1% of Radix either way (0.997x and 1.011x)",
        },
        not_shown_cause=rarely_walked,
        notes=NOTES_COMMON + " The speed-up average is a geometric mean. GUPS, whose every "
        "reference misses every TLB, dominates the headroom more than in the paper's mix. "
        "RMM (preset ``rmm``: a 32-entry range TLB beside the L2 TLB and eager paging, Table 1) "
        "is the Fig 11 comparator; like the paper, it gets a 1 GB contiguous region from the "
        "start (``os.physmem.contiguous_bytes``), and beyond it its ranges are as long as the "
        "free blocks the 40% fragmentation leaves, so footprints above 1 GB make more ranges "
        "than the range TLB holds.",
    )
)
