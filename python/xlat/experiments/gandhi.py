"""Gandhi et al., Efficient Memory Virtualization (MICRO'14): the translation overhead of
native, virtualized and direct-segment systems (Figs 11-12), the references of a walk in each
mode (Table II), Dual Direct with bad pages (Fig 13), and self-ballooning on fragmented guests
(§IV).

The paper defines the overhead of an execution E as ``(T_E - T_ideal) / T_ideal``; on real
hardware it estimates ``T_ideal`` as the 2 MiB run's time minus its page-walk cycles. A simulator
can run the ideal itself: the same system with a perfect TLB (and 2 MiB pages, so the data side
is that of the 2 MiB run). The paper measures the new modes with a linear model of counters
(its Table IV); we simulate them.
"""

from __future__ import annotations

import math

import pandas as pd

from .. import plots
from .registry import Analysis, Reproduction, System, ascending, register

#: The paper's machine (Table VI): a Sandy Bridge Xeon, 96 GB, its L1 DTLBs of 64 4 KiB, 32
#: 2 MiB and 4 1 GiB entries and a 4 KiB-only L2 TLB of 512 entries, shared by the nested
#: translations. Every system of these reproductions runs on it: natively this preset, and the
#: virtualization presets (virt-*, vmm-direct, guest-direct, dual-direct, shadow-*) extend it.
MACHINE = "gandhi-native"
#: Huge pages as the paper's big-memory workloads get them: requested explicitly (§VIII) from
#: hugetlbfs pools reserved at boot, before memory fragments. Without this, a footprint near
#: the memory's size (the paper scale's 58-64 GiB) finds too few free 2 MiB and no free 1 GiB
#: blocks on the preset's 40%-fragmented memory and falls back to 4 KiB.
RESERVED_HUGE_PAGES = {"os.physmem.fragmentation": 0.0}
#: Guest-physical memory the VMM can hot-plug for self-ballooning: the paper extends the KVM
#: slot by its machine's 96 GB (§VI-C), so a primary region of any size fits (the presets'
#: 16 GiB holds the quick scale's but not the paper scale's 54-64 GB ones).
BALLOON_RESERVE = {"schemes.virt.balloon_reserve_bytes": 96 << 30}

#: Native page sizes (Gandhi §VIII: big-memory workloads request their page size explicitly).
NATIVE = {
    "4K": System(MACHINE, {"os.thp": "never"}),
    "2M": System(MACHINE, {"os.thp": "always", **RESERVED_HUGE_PAGES}),
    "1G": System(MACHINE, {"os.thp": "always", "os.hugetlb_1g": True, **RESERVED_HUGE_PAGES}),
}
#: Virtualized: guest + host page sizes (Fig 11's solid bars), and the paper's modes.
VIRTUALIZED = {
    "4K+4K": System("virt-4k4k"),
    "4K+2M": System("virt-4k2m"),
    "4K+1G": System("virt-4k1g"),
    "2M+2M": System("virt-2m2m", RESERVED_HUGE_PAGES),
}
MODES = {
    "4K+VD": System("vmm-direct"),
    "4K+GD": System("guest-direct", BALLOON_RESERVE),
    "DD": System("dual-direct", BALLOON_RESERVE),
}
#: Shadow paging, the comparator of §IX-D.
SHADOW = {
    "shadow-4K": System("shadow-4k"),
    "shadow-2M": System("shadow-2m", RESERVED_HUGE_PAGES),
}
#: T_ideal: the machine with every translation hitting the L1 TLB (the perfect-tlb scheme).
IDEAL = {
    "ideal": System(MACHINE, {"scheme": "perfect-tlb", "os.thp": "always", **RESERVED_HUGE_PAGES})
}
BARS = [*NATIVE, *VIRTUALIZED, *MODES, *SHADOW]

#: graph500 is BFS on a Kronecker graph (our `bfs`); memcached is our `kvstore`; NPB:CG our
#: `cg`; GUPS as is.
WORKLOADS = {
    "tiny": {"bfs": {"scale": 15}, "kvstore": {"keys": 1 << 14}, "gups": {"table_bytes": 1 << 26}},
    "quick": {
        "bfs": {"scale": 20},
        "kvstore": {},
        "gups": {"table_bytes": 1 << 32},
        "cg": {"class": "B"},
    },
    "full": {
        "bfs": {"scale": 24},
        "kvstore": {"keys": 1 << 26},
        "gups": {"table_bytes": 1 << 35},
        "cg": {"class": "C"},
    },
    # The paper's big-memory datasets are 60-75 GB: graph500 and NPB:CG at 64 GB, memcached
    # with 2^27 keys (54 GB of slabs), GUPS at ME-HPT's 64 GiB.
    "paper": {
        "bfs": {"footprint": "64GB"},
        "kvstore": {"keys": 1 << 27},
        "gups": {"footprint": "64GiB"},
        "cg": {"class": "C", "footprint": "64GB"},
    },
}

#: The compute workloads of Fig 12 that xlat has (PARSEC's canneal and streamcluster; the
#: SPEC ones it lacks). Compute workloads run with THP natively (§VIII).
COMPUTE_WORKLOADS = {
    "tiny": {"canneal": {"input": "simsmall"}, "streamcluster": {"input": "simsmall"}},
    "quick": {"canneal": {"input": "simlarge"}, "streamcluster": {"input": "simlarge"}},
    "full": {"canneal": {}, "streamcluster": {}},
    "paper": {"canneal": {}, "streamcluster": {}},
}


def _geomean(xs) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _pivot(df: pd.DataFrame, column: str) -> pd.DataFrame:
    ok = df[df["status"] == "ok"]
    return ok.pivot_table(index="workload", columns="label", values=column)


def _overheads(df: pd.DataFrame, bars: list[str]) -> pd.DataFrame:
    cycles = _pivot(df, "stats.summary.cycles")
    return cycles[bars].div(cycles["ideal"], axis=0) - 1.0


def _analyse_overheads(df: pd.DataFrame, bars: list[str], title: str) -> Analysis:
    overhead = _overheads(df, bars)
    long = overhead.reset_index().melt(id_vars="workload", var_name="label", value_name="overhead")
    long["status"] = "ok"
    fig = plots.grouped_bars(
        long,
        "overhead",
        summary="mean",
        ylabel="address-translation overhead",
        title=title,
    )
    values = {
        f"overhead_{bar}_{workload}": float(overhead.loc[workload, bar])
        for workload in overhead.index
        for bar in bars
    }
    tables = [("Overhead per workload and configuration.", overhead.reset_index())]
    # §IX-A: TLB misses and cycles per miss, virtualized over native 4 KiB.
    misses = _pivot(df, "stats.mmu.l2_misses")
    per_miss = _pivot(df, "stats.mmu.translation_cycles") / misses
    for workload in overhead.index:
        values[f"miss_inflation_{workload}"] = float(
            misses.loc[workload, "4K+4K"] / misses.loc[workload, "4K"]
        )
    virtualized = [b for b in VIRTUALIZED if b in bars]
    for bar in virtualized:
        values[f"cycles_per_miss_{bar}"] = _geomean(per_miss[bar] / per_miss["4K"])
    if "DD" in bars:
        values["dd_max_overhead"] = float(overhead["DD"].max())
        # The share of Dual Direct's L1 TLB misses its two segments translated.
        share = _pivot(df, "stats.mmu.dual_direct_hits") / _pivot(df, "stats.mmu.l1_misses")
        for workload in overhead.index:
            values[f"dd_share_{workload}"] = float(share.loc[workload, "DD"])
    values["vd_vs_native_geomean"] = _geomean((1 + overhead["4K+VD"]) / (1 + overhead["4K"])) - 1.0
    # §IX-A: "A TLB miss costs only 13% higher (on average) with VMM direct and 3% higher (on
    # average) with Guest Direct compared to native 4K".
    for bar, key in (("4K+VD", "vd_cycles_per_miss"), ("4K+GD", "gd_cycles_per_miss")):
        if bar in bars:
            values[key] = float((per_miss[bar] / per_miss["4K"]).mean())
    ratios = pd.DataFrame(
        {
            "L2 TLB misses 4K+4K / 4K": misses["4K+4K"] / misses["4K"],
            **{f"cycles/miss {b} / 4K": per_miss[b] / per_miss["4K"] for b in virtualized},
        }
    )
    tables.append(("TLB misses and cycles per miss, virtualized over native.", ratios))
    cycles = _pivot(df, "stats.summary.cycles")
    for size in ("4K", "2M"):
        if f"shadow-{size}" in bars:
            for workload in overhead.index:
                values[f"shadow_slowdown_{size}_{workload}"] = float(
                    cycles.loc[workload, f"shadow-{size}"] / cycles.loc[workload, size] - 1.0
                )
    if "DD" in bars:
        tables.append(
            (
                "Translation cycles of the modes: simulated, and the paper's linear model "
                "(Table IV) computed from this run's counters.",
                _linear_model(df),
            )
        )
    return Analysis(
        figures=[(f"{title}: (T - T_ideal) / T_ideal.", fig)],
        values=values,
        tables=tables,
    )


def _linear_model(df: pd.DataFrame) -> pd.DataFrame:
    """Table IV's model beside the simulated cycles, per workload. M_n, C_n: the native 4 KiB
    run's L2 TLB misses and cycles per miss; C_v: 4K+4K's cycles per miss; F_VD: the share of
    VMM Direct's host translations the VMM segment made; F_GD: the share of Guest Direct's
    walks the guest segment started; F_DD: the share of Dual Direct's L1 TLB misses its two
    segments translated (Dual Direct's one-segment cases are left to the 2D walk, so its
    model is an upper bound). Delta_VD = 5 and Delta_GD = 1 cycles, as in §VII."""
    col = {
        c: _pivot(df, f"stats.mmu.{c}")
        for c in (
            "l2_misses",
            "l1_misses",
            "translation_cycles",
            "dual_direct_hits",
            "nested.segment",
            "nested.translations",
            "guest_segment.hits",
            "guest_segment.checks",
        )
    }
    m_n = col["l2_misses"]["4K"]
    c_n = col["translation_cycles"]["4K"] / m_n
    c_v = col["translation_cycles"]["4K+4K"] / col["l2_misses"]["4K+4K"]
    f_vd = col["nested.segment"]["4K+VD"] / col["nested.translations"]["4K+VD"]
    f_gd = col["guest_segment.hits"]["4K+GD"] / col["guest_segment.checks"]["4K+GD"]
    f_dd = col["dual_direct_hits"]["DD"] / col["l1_misses"]["DD"]
    model = {
        "4K+VD": ((c_n + 5) * f_vd + c_v * (1 - f_vd)) * m_n,
        "4K+GD": ((c_n + 1) * f_gd + c_v * (1 - f_gd)) * m_n,
        "DD": c_v * (1 - f_dd) * m_n,
    }
    rows = {}
    for bar, predicted in model.items():
        rows[f"{bar} simulated"] = col["translation_cycles"][bar]
        rows[f"{bar} model"] = predicted
    return pd.DataFrame(rows).reset_index()


#: How far a lower bar may sit above a higher one and still count as "no worse": once a
#: configuration has brought the overhead near zero, which frames the data lands in moves the
#: cycles by up to a percent: DRAM's banks and bus see the data and page-table lines at other
#: addresses (tiny graph500, 1 GiB against 2 MiB pages: the same 15 walks, yet data-read
#: queueing of 11,328 against 10,948 cycles and walks of 1,482 against 1,287: 0.75% of the run).
SAME_OVERHEAD = 0.01
#: VMM Direct's TLB misses count as "close to native" within this factor of native 4 KiB's
#: cycles per miss (mean over the workloads): the paper's own figure (§IX-A: "A TLB miss costs
#: only 13% higher (on average) with VMM direct"). Its run time over native's, the paper's
#: "2% slower (geo mean)", is compared beside it (vd_vs_native_geomean) but not checked here:
#: at tiny scale graph500 makes 34 L2 TLB misses in 56K cycles, and the data's DRAM queueing
#: alone moves its run by 6% between the native frames and the VMM segment's (10,184 against
#: 15,594 cycles); tests/test_gandhi.py checks the 2% where translation dominates the run.
NEAR_NATIVE_PER_MISS = 1.13
#: Dual Direct counts as "no overhead" within this much of the ideal run, on each workload
#: whose L1 TLB misses its segments translate (at least DD_COVERS of them): the paper's
#: "at most 0.17%" (§IX-A) is its linear model's walk cycles, and a segment translation here
#: also costs its base-bound cycle and the data lands in other frames (SAME_OVERHEAD).
DD_COVERS = 0.99


def _few_1g_entries_thrash(df: pd.DataFrame, workload: str) -> bool:
    """Whether ``workload``'s 1 GiB pages miss the TLBs more often than its 2 MiB pages: the
    paper's caveat that 1 GiB pages "can also hurt performance due to limited 1GB TLB
    entries" (§VIII obs. 3). Table VI's L1 holds four 1 GiB entries and its L2 none, so a
    program whose references cycle over more than four 1 GiB pages misses on most of them
    (NPB:CG at paper scale: 267 L2 TLB misses per kilo-instruction with 1 GiB pages, 21 with
    2 MiB)."""
    runs = df[(df["status"] == "ok") & (df["workload"] == workload)]
    mpki = runs.groupby("label")["stats.summary.l2tlb_mpki"].mean()
    return bool(mpki.get("1G", 0.0) > mpki.get("2M", 0.0))


def _virtualization_direction(df: pd.DataFrame, values: dict[str, float]) -> bool:
    """Per workload: 4K < 4K+4K, DD < 4K+4K, DD within SAME_OVERHEAD of the ideal where its
    segments translate the misses (elsewhere DD walks as VMM Direct does, and its run time
    carries the same placement noise), 2M < 4K, and 1G <= 2M unless its four 1 GiB TLB
    entries miss more than the 2 MiB ones (the paper's own caveat); and VD's cycles per miss
    within 13% of native's (mean)."""
    workloads = df["workload"].unique()
    ok = all(
        ascending(values[f"overhead_4K_{w}"], values[f"overhead_4K+4K_{w}"], strict=True)
        and ascending(values[f"overhead_DD_{w}"], values[f"overhead_4K+4K_{w}"], strict=True)
        and (
            values[f"dd_share_{w}"] < DD_COVERS
            or ascending(values[f"overhead_DD_{w}"], SAME_OVERHEAD)
        )
        and (
            ascending(values[f"overhead_1G_{w}"], values[f"overhead_2M_{w}"], slack=SAME_OVERHEAD)
            or _few_1g_entries_thrash(df, w)
        )
        and ascending(values[f"overhead_2M_{w}"], values[f"overhead_4K_{w}"], strict=True)
        for w in workloads
    )
    return ok and ascending(values["vd_cycles_per_miss"], NEAR_NATIVE_PER_MISS)


NOTES = (
    "The paper measures a Sandy Bridge machine (Table VI) running 60-75 GB datasets in an 80 "
    "GB KVM guest, and predicts its new modes with a linear model (Table IV); we simulate "
    "every bar on that machine (preset gandhi-native: Table VI's TLBs, 96 GB, an 85 GB guest)"
    " at smaller inputs, and take T_ideal from a perfect-TLB run on it rather than by "
    "subtracting walk cycles. Nested translations share the 512-entry L2 TLB as on the "
    "paper's machine; the page-walk caches, which Table VI does not give, are Utopia Table "
    "1's 32-entry ones on each dimension (gandhi-fig11-sensitivity shows the overheads "
    "without them). Guest Direct and Dual Direct map each process's primary region (its "
    "anonymous mappings of 16 MiB or more, back to back) with a guest segment, made by "
    "self-ballooning on the 40%-fragmented guest into a 96 GB hot-plug reserve (§VI-C); "
    "smaller mappings walk in 2D. Huge pages (2M, 1G, the guest's 2M and the ideal run's) "
    "come from memory reserved at boot, unfragmented, as hugetlbfs pools are. Shadow paging "
    "pays a trap per guest page-table write; our kvstore maps its slabs before the measured "
    "part, where the paper's memcached keeps allocating, so its shadow slowdown here is far "
    "below the paper's."
)

register(
    Reproduction(
        id="gandhi-fig11",
        paper="Gandhi et al. (MICRO'14)",
        figure="Fig 11",
        title="translation overhead: native, virtualized and the direct-segment modes",
        systems={**NATIVE, **VIRTUALIZED, **MODES, **SHADOW, **IDEAL},
        workloads=WORKLOADS,
        references={"tiny": 30_000, "quick": 4_000_000, "full": 200_000_000, "paper": 200_000_000},
        analyse=lambda df: _analyse_overheads(df, BARS, "Big-memory workloads"),
        direction="Virtualization multiplies the overhead (4K < 4K+4K) and Dual Direct removes "
        "it (DD < 4K+4K, and within 1% of ideal where its segments translate the misses); "
        "VMM Direct's TLB misses cost at most 13% more than native's (paper: "
        "graph500 4K 28%, 4K+4K 113%, 4K+VD 30%, DD <= 0.17%); natively 1 GiB <= 2 MiB < 4 KiB",
        direction_check=_virtualization_direction,
        notes=NOTES,
    )
)


def _compute_direction(df: pd.DataFrame, values: dict[str, float]) -> bool:
    """Per workload: 4K+4K slower than 4K, and 4K+VD faster than 4K+4K; and VD's cycles per
    miss within 13% of native's (mean), as in gandhi-fig11."""
    return all(
        ascending(values[f"overhead_4K_{w}"], values[f"overhead_4K+4K_{w}"], strict=True)
        and ascending(values[f"overhead_4K+VD_{w}"], values[f"overhead_4K+4K_{w}"], strict=True)
        for w in df["workload"].unique()
    ) and ascending(values["vd_cycles_per_miss"], NEAR_NATIVE_PER_MISS)


COMPUTE_BARS = ["4K", "2M", "4K+4K", "4K+2M", "4K+VD", "shadow-4K", "shadow-2M"]
register(
    Reproduction(
        id="gandhi-fig12",
        paper="Gandhi et al. (MICRO'14)",
        figure="Fig 12",
        title="translation overhead of compute workloads, native and virtualized",
        systems={
            "4K": NATIVE["4K"],
            "2M": NATIVE["2M"],
            "4K+4K": VIRTUALIZED["4K+4K"],
            "4K+2M": VIRTUALIZED["4K+2M"],
            "4K+VD": MODES["4K+VD"],
            **SHADOW,
            **IDEAL,
        },
        workloads=COMPUTE_WORKLOADS,
        references={"tiny": 30_000, "quick": 3_000_000, "full": 100_000_000, "paper": 100_000_000},
        analyse=lambda df: _analyse_overheads(df, COMPUTE_BARS, "Compute workloads"),
        direction="Virtualization raises the overhead of compute workloads too (4K < 4K+4K) and "
        "VMM Direct brings it back down (4K+VD < 4K+4K), its TLB misses costing at most 13% "
        "more than native's (paper: 13% on average)",
        direction_check=_compute_direction,
        notes="Of Fig 12's compute workloads xlat has PARSEC's canneal and streamcluster (not the "
        "SPEC 2006 ones). The paper runs them natively with THP; the 4K bar here is 4 KiB pages.",
    )
)


# --------------------------------------------------------------------------------------------
# Fig 11 sensitivity: what Table VI leaves open, the page-walk caches
# --------------------------------------------------------------------------------------------

#: Table VI gives the TLBs and says nested translations share the L2 TLB; it says nothing of
#: the page-walk caches (Intel documents neither their presence nor their sizes), which set
#: how many of a 2D walk's 24 references reach the caches at all. The presets keep Utopia
#: Table 1's three 32-entry PWCs on each dimension; here: those, none on the nested dimension
#: only, and none on either.
PWC_SETTINGS = {
    "PWC 32": {},
    "host PWC none": {"schemes.virt.host_pwc.entries": 0},
    "PWC none": {"schemes.radix.pwc.entries": 0, "schemes.virt.host_pwc.entries": 0},
}


def _sensitivity_systems() -> dict[str, System]:
    """Native 4K and 4K+4K under each PWC setting (native has no nested PWC: its "host PWC
    none" is the preset), and the ideal run they are measured against."""
    systems = {}
    for setting, keys in PWC_SETTINGS.items():
        native = {k: v for k, v in keys.items() if not k.startswith("schemes.virt.")}
        if _native_label(setting) == f"4K {setting}":
            overrides = {**NATIVE["4K"].overrides, **native}
            systems[f"4K {setting}"] = System(NATIVE["4K"].preset, overrides)
        systems[f"4K+4K {setting}"] = System(VIRTUALIZED["4K+4K"].preset, keys)
    return {**systems, **IDEAL}


def _native_label(setting: str) -> str:
    """The native run of a PWC setting: a setting of the nested dimension only leaves native
    runs as the presets have them."""
    keys = PWC_SETTINGS[setting]
    if keys and all(k.startswith("schemes.virt.") for k in keys):
        return "4K PWC 32"
    return f"4K {setting}"


def _analyse_sensitivity(df: pd.DataFrame) -> Analysis:
    cycles = _pivot(df, "stats.summary.cycles")
    misses = _pivot(df, "stats.mmu.l2_misses")
    per_miss = _pivot(df, "stats.mmu.translation_cycles") / misses
    rows = []
    values: dict[str, float] = {}
    for workload in cycles.index:
        for setting in PWC_SETTINGS:
            native, virt = _native_label(setting), f"4K+4K {setting}"
            row = {
                "workload": workload,
                "setting": setting,
                "overhead 4K": cycles.loc[workload, native] / cycles.loc[workload, "ideal"] - 1,
                "overhead 4K+4K": cycles.loc[workload, virt] / cycles.loc[workload, "ideal"] - 1,
                "4K+4K / 4K time": cycles.loc[workload, virt] / cycles.loc[workload, native],
                "TLB misses 4K+4K / 4K": misses.loc[workload, virt] / misses.loc[workload, native],
                "cycles per miss 4K+4K / 4K": per_miss.loc[workload, virt]
                / per_miss.loc[workload, native],
            }
            rows.append(row)
            key = setting.replace(" ", "_").lower()
            values[f"sens_slowdown_{key}_{workload}"] = float(row["4K+4K / 4K time"])
            values[f"sens_overhead_4k4k_{key}_{workload}"] = float(row["overhead 4K+4K"])
            values[f"sens_miss_inflation_{key}_{workload}"] = float(row["TLB misses 4K+4K / 4K"])
    table = pd.DataFrame(rows)
    long = table.assign(label=table["setting"], status="ok")[
        ["workload", "label", "4K+4K / 4K time", "status"]
    ]
    fig = plots.grouped_bars(
        long,
        "4K+4K / 4K time",
        summary="mean",
        ylabel="4K+4K run time / native 4K",
        title="Virtualization's slowdown by page-walk caches",
    )
    lines = [
        "  Fig 11 sensitivity (the page-walk caches Table VI does not give): 4K+4K over native "
        "4K, per workload and setting (paper: graph500 113% vs 28% overhead, 1.38x the TLB "
        "misses, 2.4x the cycles per miss on average).",
        f"  {'workload':>10} {'setting':>14}  {'4K ovh':>8}  {'4K+4K ovh':>9}  {'time':>6}  "
        f"{'misses':>6}  {'cyc/miss':>8}",
    ]
    for r in rows:
        lines.append(
            f"  {r['workload']:>10} {r['setting']:>14}  {r['overhead 4K']:>8.1%}  "
            f"{r['overhead 4K+4K']:>9.1%}  {r['4K+4K / 4K time']:>6.3f}  "
            f"{r['TLB misses 4K+4K / 4K']:>6.3f}  {r['cycles per miss 4K+4K / 4K']:>8.2f}"
        )
    by = table.set_index(["workload", "setting"])
    slow = by["4K+4K / 4K time"]

    def span(setting: str) -> str:
        s = slow.xs(setting, level=1)
        return f"{s.min():.2f}-{s.max():.2f}x"

    smallest = all(
        slow.loc[w, "PWC 32"] <= slow.loc[w].min() for w in slow.index.get_level_values(0)
    )
    inflation = by["TLB misses 4K+4K / 4K"].groupby(level=0)
    spread = float((inflation.max() - inflation.min()).max())
    lines.append(
        f"  4K+4K runs {span('PWC 32')} as long as native 4K with the presets' PWCs, "
        f"{span('host PWC none')} without the nested dimension's, {span('PWC none')} without "
        "any"
        + ("; the presets' PWCs give the smallest slowdown on every workload." if smallest else ".")
        + f" The TLB-miss ratio moves by at most {spread:.3f} between settings"
        + (": PWCs shorten walks, not the TLB's reach." if spread < 0.01 else ".")
    )
    return Analysis(
        figures=[("Fig 11 sensitivity: 4K+4K run time over native 4K by PWC setting.", fig)],
        values=values,
        tables=[("4K and 4K+4K per page-walk-cache setting.", table)],
        summary="\n".join(lines),
    )


def _sensitivity_direction(df: pd.DataFrame, values: dict[str, float]) -> bool:
    """4K+4K is slower than native 4K under every PWC setting, and taking PWCs away never
    makes it faster (within SAME_OVERHEAD)."""
    workloads = df["workload"].unique()
    return all(
        ascending(1.0, values[f"sens_slowdown_pwc_32_{w}"], strict=True)
        and ascending(1.0, values[f"sens_slowdown_pwc_none_{w}"], strict=True)
        and ascending(
            values[f"sens_overhead_4k4k_pwc_32_{w}"],
            values[f"sens_overhead_4k4k_host_pwc_none_{w}"],
            values[f"sens_overhead_4k4k_pwc_none_{w}"],
            slack=SAME_OVERHEAD,
        )
        for w in workloads
    )


register(
    Reproduction(
        id="gandhi-fig11-sensitivity",
        paper="Gandhi et al. (MICRO'14)",
        figure="Fig 11 (sensitivity)",
        title="4K+4K over native 4K with and without page-walk caches (not in Table VI)",
        systems=_sensitivity_systems(),
        workloads={
            scale: {w: WORKLOADS[scale][w] for w in ("bfs", "gups")}
            for scale in ("tiny", "quick", "full", "paper")
        },
        references={"tiny": 30_000, "quick": 4_000_000, "full": 200_000_000, "paper": 200_000_000},
        analyse=_analyse_sensitivity,
        direction="Virtualization (4K+4K) is slower than native 4K whatever the page-walk "
        "caches, and fewer PWCs never make it faster (paper: 113% vs 28% for graph500)",
        direction_check=_sensitivity_direction,
        notes="A companion to gandhi-fig11: Table VI does not give the page-walk caches "
        "(paging-structure caches, undocumented by Intel, and the nested table's), and they "
        "set how many of a 2D walk's references reach memory. The presets keep Utopia Table "
        "1's three 32-entry fully associative PWCs on each dimension (gandhi-native, "
        "virt-4k4k); this runs graph500 (bfs) and GUPS with those, without the nested "
        "dimension's, and without any, against the same perfect-TLB ideal as gandhi-fig11. Its "
        "'4K PWC 32', '4K+4K PWC 32' and ideal runs are gandhi-fig11's 4K, 4K+4K and ideal "
        "runs.",
    )
)


#: Table II with nothing cached: no page-walk caches on either side, no nested translations in
#: the L2 TLB, the table mapped before the run (no walk stops at a missing entry).
UNCACHED = {
    "schemes.radix.pwc.entries": 0,
    "schemes.virt.host_pwc.entries": 0,
    "schemes.virt.nested_in_l2tlb": False,
}
TABLE2 = {
    "Base virtualized": System("virt-4k4k", UNCACHED),
    "VMM Direct": System("vmm-direct", UNCACHED),
    "Guest Direct": System("guest-direct", UNCACHED),
    "Dual Direct": System("dual-direct", UNCACHED),
}


def _analyse_table2(df: pd.DataFrame) -> Analysis:
    ok = df[df["status"] == "ok"].set_index("label")
    misses = ok["stats.mmu.l2_misses"] + ok["stats.mmu.dual_direct_hits"].fillna(0)
    per_walk = ok["stats.walk.refs.total"] / misses
    table = pd.DataFrame({"references per L2 TLB miss": per_walk})
    keys = {
        "Base virtualized": "refs_base",
        "VMM Direct": "refs_vd",
        "Guest Direct": "refs_gd",
        "Dual Direct": "refs_dd",
    }
    long = pd.DataFrame(
        {"workload": "gups", "label": per_walk.index, "refs": per_walk.values, "status": "ok"}
    )
    fig = plots.grouped_bars(
        long,
        "refs",
        summary="mean",
        ylabel="memory references per L2 TLB miss",
        title="References of a walk in each mode (nothing cached)",
    )
    return Analysis(
        figures=[("Table II: references per L2 TLB miss.", fig)],
        values={keys[label]: float(v) for label, v in per_walk.items()},
        tables=[("Memory references per L2 TLB miss, nothing cached (GUPS).", table.reset_index())],
        summary=f"Dual Direct: {per_walk['Dual Direct']:.3g} references per L1 TLB miss it "
        "handles (Table II: 0; not in the table above, whose ratio would divide by 0).",
    )


def _table2_direction(df: pd.DataFrame, values: dict[str, float]) -> bool:
    """Exactly 24 / 4 / 4 / 0 for GUPS, whose data all lies in the segments."""
    return (
        values["refs_base"] == 24
        and values["refs_vd"] == 4
        and ascending(4, values["refs_gd"], 4.2)
        and ascending(values["refs_dd"], 0.2)
    )


register(
    Reproduction(
        id="gandhi-table2",
        paper="Gandhi et al. (MICRO'14)",
        figure="Table II",
        title="memory references of a page walk in each virtualized mode",
        systems=TABLE2,
        workloads={
            scale: {"gups": {"table_bytes": 1 << 28, "populate": True}}
            for scale in ("tiny", "quick", "full", "paper")
        },
        references={"tiny": 20_000, "quick": 200_000, "full": 200_000, "paper": 200_000},
        analyse=_analyse_table2,
        direction="24 references per walk virtualized, 4 with VMM Direct or Guest Direct, 0 with "
        "Dual Direct",
        direction_check=_table2_direction,
        notes="Counted with every page-walk cache and nested-translation cache off, so that each "
        "walk makes its full count; Guest Direct's few walks outside the guest segment (GUPS's "
        "own variables) make 24.",
    )
)


BAD_PAGES = [0, 1, 2, 4, 8, 16]


def _analyse_fig13(df: pd.DataFrame) -> Analysis:
    cycles = _pivot(df, "stats.summary.cycles")
    norm = cycles.div(cycles["00 bad"], axis=0)
    long = norm.reset_index().melt(id_vars="workload", var_name="label", value_name="normalized")
    long["status"] = "ok"
    fig = plots.grouped_bars(
        long,
        "normalized",
        summary="mean",
        ylabel="execution time / Dual Direct without bad pages",
        title="Dual Direct with bad pages in the VMM segment",
    )
    values = {"fig13_max_slowdown": float(norm.max().max() - 1.0)}
    return Analysis(
        figures=[("Fig 13: normalized execution time with 1-16 bad pages.", fig)],
        values=values,
        tables=[("Execution time normalized to no bad pages.", norm.reset_index())],
    )


register(
    Reproduction(
        id="gandhi-fig13",
        paper="Gandhi et al. (MICRO'14)",
        figure="Fig 13",
        title="Dual Direct with 1-16 bad pages escaping the VMM segment",
        systems={
            f"{n:02d} bad": System(
                "dual-direct", {"schemes.virt.vmm_bad_pages": n, **BALLOON_RESERVE}
            )
            for n in BAD_PAGES
        },
        workloads={
            "tiny": {"gups": {"table_bytes": 1 << 26}},
            "quick": {"gups": {"table_bytes": 1 << 30}, "bfs": {"scale": 20}},
            "full": {"gups": {"table_bytes": 1 << 33}, "bfs": {"scale": 22}},
            "paper": {"gups": {"footprint": "64GiB"}, "bfs": {"footprint": "64GB"}},
        },
        references={"tiny": 30_000, "quick": 2_000_000, "full": 50_000_000, "paper": 50_000_000},
        analyse=_analyse_fig13,
        direction="A 256-bit escape filter keeps Dual Direct's performance with up to 16 bad "
        "pages (at most a few percent slower)",
        direction_check=lambda df, v: ascending(v["fig13_max_slowdown"], 0.05),
        notes="One random set of bad pages per count (the paper runs 30 per count and gives 95% "
        "confidence intervals). Bad pages are host pages inside the VMM segment; their guest "
        "pages escape through the filter to the nested page table.",
    )
)


#: Guest-physical fragmentation (FMFI at order 9) of §IV's experiment: none, the presets' (Utopia's)
#: 40%, and a guest so fragmented that almost no 2 MiB block is free.
GUEST_FMFI = [0.0, 0.4, 0.8]
#: The two modes whose guest segment self-ballooning makes (Table III, "guest physical memory
#: fragmented"): Dual Direct, and Guest Direct where the host is fragmented too.
BALLOONING_MODES = {"DD": "dual-direct", "4K+GD": "guest-direct"}


def _fragmented_systems() -> dict[str, System]:
    """Each mode at each fragmentation, with and without self-ballooning (unfragmented: with
    only, as nothing needs ballooning there)."""
    systems = {}
    for mode, preset in BALLOONING_MODES.items():
        for fmfi in GUEST_FMFI:
            for balloon in (True, False) if fmfi else (True,):
                label = f"{mode} {fmfi:.1f}" + ("" if balloon else " no balloon")
                systems[label] = System(
                    preset,
                    {
                        "os.physmem.fragmentation": fmfi,
                        "os.direct_segment.self_balloon": balloon,
                        **BALLOON_RESERVE,
                    },
                )
    return systems


def _segment_share(ok: pd.DataFrame) -> pd.Series:
    """Per run, the share of translations its segments made: of the L1 TLB misses the two
    segments translated (Dual Direct), of the walks whose guest dimension the guest segment
    replaced (Guest Direct; none when no guest segment was made, so nothing was checked)."""
    dd = ok["stats.mmu.dual_direct_hits"] / ok["stats.mmu.l1_misses"]
    checks = ok["stats.mmu.guest_segment.checks"]
    gd = (ok["stats.mmu.guest_segment.hits"] / checks.where(checks > 0)).fillna(0.0)
    return dd.where(ok["label"].str.startswith("DD"), gd)


def _analyse_fragmentation(df: pd.DataFrame) -> Analysis:
    ok = df[df["status"] == "ok"].copy()
    ok["mode"] = ok["label"].str.split(" ").str[0]
    ok["fmfi"] = ok["config.os.physmem.fragmentation"]
    ok["balloon"] = ok["config.os.direct_segment.self_balloon"]
    ok["segment share"] = _segment_share(ok)
    ok["ballooned GiB"] = ok["stats.os.segments.ballooned_frames"] * 4096 / 2**30
    ok["balloon Mcycles"] = ok["stats.os.segments.balloon_cycles"] / 1e6
    # Each fragmented run beside its unfragmented twin (share) and its other-ballooning twin
    # (time): same workload, mode and fragmentation.
    at = ok.set_index(["workload", "mode", "fmfi", "balloon"])
    ok["share / unfragmented"] = [
        r["segment share"] / at.loc[(r["workload"], r["mode"], 0.0, True), "segment share"]
        for _, r in ok.iterrows()
    ]
    ok["time / with ballooning"] = [
        r["stats.summary.cycles"]
        / at.loc[(r["workload"], r["mode"], r["fmfi"], True), "stats.summary.cycles"]
        for _, r in ok.iterrows()
    ]
    table = ok[
        [
            "workload",
            "label",
            "stats.os.segments.created",
            "stats.os.segments.failed",
            "stats.os.segments.not_extended",
            "segment share",
            "share / unfragmented",
            "ballooned GiB",
            "balloon Mcycles",
            "time / with ballooning",
        ]
    ].rename(
        columns={
            "stats.os.segments.created": "segments made",
            "stats.os.segments.failed": "regions left paged",
            "stats.os.segments.not_extended": "mappings not covered",
        }
    )
    fig = plots.grouped_bars(
        ok[["workload", "label", "segment share", "status"]],
        "segment share",
        summary="mean",
        ylabel="translations by the segments",
        title="Direct segments on a fragmented guest, with and without self-ballooning",
    )
    fragmented = ok[ok["fmfi"] > 0]
    ballooned = fragmented[fragmented["balloon"]]
    paged = fragmented[~fragmented["balloon"]]
    values = {
        "balloon_min_share_kept": float(ballooned["share / unfragmented"].min()),
        "no_balloon_max_share": float(paged["segment share"].max()),
        "no_balloon_max_share_most_fragmented": float(
            paged[paged["fmfi"] == max(GUEST_FMFI)]["segment share"].max()
        ),
        "no_balloon_min_slowdown": float(paged["time / with ballooning"].min()) - 1.0,
        "no_balloon_max_slowdown": float(paged["time / with ballooning"].max()) - 1.0,
    }
    summary = (
        "On the fragmented guests, self-ballooning kept at least "
        f"{values['balloon_min_share_kept']:.0%} of the unfragmented guest's share of "
        "translations by the segments (its one-time cost at mmap is in the table); without it "
        "the segments made at most "
        f"{values['no_balloon_max_share']:.1%} of them (FMFI {max(GUEST_FMFI)}: "
        f"{values['no_balloon_max_share_most_fragmented']:.1%}) and the runs took "
        f"{values['no_balloon_min_slowdown']:+.1%} to {values['no_balloon_max_slowdown']:+.1%} "
        "longer."
    )
    return Analysis(
        figures=[("Share of translations made by the direct segments.", fig)],
        values=values,
        tables=[("Segments, self-ballooning and time per run.", table)],
        summary=summary,
    )


def _fragmentation_direction(df: pd.DataFrame, values: dict[str, float]) -> bool:
    """With ballooning, the segments keep (90% of) their unfragmented share; without it, the
    most fragmented guest's segments make at most half the translations (a moderately
    fragmented one may still find room for a small region) and no run is faster."""
    return (
        ascending(0.9, values["balloon_min_share_kept"])
        and ascending(values["no_balloon_max_share_most_fragmented"], 0.5)
        and ascending(0.0, values["no_balloon_min_slowdown"], slack=SAME_OVERHEAD)
    )


register(
    Reproduction(
        id="gandhi-fragmentation",
        paper="Gandhi et al. (MICRO'14)",
        figure="§IV, Table III",
        title="self-ballooning: direct segments on fragmented guest memory",
        systems=_fragmented_systems(),
        workloads={
            "tiny": {"gups": {"table_bytes": 1 << 26}, "kvstore": {"keys": 1 << 17}},
            "quick": {"gups": {"table_bytes": 1 << 30}, "kvstore": {}},
            "full": {"gups": {"table_bytes": 1 << 33}, "kvstore": {"keys": 1 << 26}},
            "paper": {"gups": {"footprint": "64GiB"}, "kvstore": {"keys": 1 << 27}},
        },
        references={"tiny": 30_000, "quick": 2_000_000, "full": 50_000_000, "paper": 50_000_000},
        analyse=_analyse_fragmentation,
        direction="On a fragmented guest, self-ballooning still gives Dual Direct and Guest "
        "Direct their guest segment (at least 90% of the unfragmented guest's share of "
        "translations); without it the most fragmented guest's regions stay paged (at most half "
        "the share) and no run is faster",
        direction_check=_fragmentation_direction,
        notes="The paper proposes self-ballooning (§IV, §VI-C, Table III) without measuring it; "
        "this experiment shows what it buys in the model. The balloon's cost "
        "(os.direct_segment.balloon_cycles_per_page, an estimate) is work of the guest and the "
        "VMM at mmap, reported beside the run rather than charged to its cycles. Guest Direct "
        "runs on 4 KiB host pages, Dual Direct on the VMM segment made at boot (§VI-A).",
    )
)
