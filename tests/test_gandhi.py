"""Gandhi et al. (MICRO'14) on the paper's machine (`gandhi-native`, Table VI): the preset's
values against the table, and the paper's headlines at a scale small enough for CI, each beside
the same run with its mechanism turned off, which must lose the headline.

Scale: GUPS updates a 2 GiB table, as the paper's GUPS does a 64 GB one, far beyond what the
machine caches of its translations: 1024x the L2 TLB's reach (512 x 4 KiB), 32x the reach of the
PD-level page-walk cache (32 x 2 MiB), and its 4 MiB of page table outgrow the 2.5 MB LLC (the
paper: 128 MB of page table, a 15 MB L3). memcached (`kvstore`) serves Zipf-popular keys, whose
hot set is near the L2 TLB's reach: where sharing that TLB with nested translations costs
misses (§IX-A), which it cannot on GUPS, whose every update misses natively already.

The end of the file takes each other Gandhi reproduction's tiny runs (Fig 11's PWC
sensitivity, Figs 12-13, self-ballooning) beside the same runs with its mechanism off.
gandhi-table2's exact walk references (24 / 4 / 4 / 0, which a 1D nested walk or a mode without
its segment would change) are its direction, checked at tiny scale by test_reproduce.py.
"""

from __future__ import annotations

import math
import sys
from functools import cache

import pytest

import xlat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

pytestmark = pytest.mark.engine

GUPS = {"workload.name": "gups", "workload.references": 30_000, "workload.table_bytes": 2 << 30}
KVSTORE = {"workload.name": "kvstore", "workload.references": 30_000, "workload.keys": 1 << 14}
#: As gandhi-fig11 runs them: Dual Direct's guest segment from self-ballooning into a
#: hot-plug reserve as large as the paper's machine (§VI-C); T_ideal from a perfect TLB on
#: the same machine with 2 MiB pages reserved at boot.
RESERVE = {"schemes.virt.balloon_reserve_bytes": 96 << 30}
IDEAL = ("gandhi-native", {"scheme": "perfect-tlb", "os.thp": "always"})
IDEAL_MEMORY = {"os.physmem.fragmentation": 0.0}
NO_SEGMENTS = {"os.direct_segment.enabled": False, "schemes.virt.vmm_segment": False}


@cache
def _run(preset: str, workload: tuple, overrides: tuple = ()) -> dict:
    params = dict(workload)
    name = params.pop("workload.name")
    return xlat.run(preset, name, overrides={**params, **dict(overrides)}, progress=False)


def run(preset: str, workload: dict, **overrides) -> dict:
    """One run, simulated once per test session."""
    flat = {k.replace("__", "."): v for k, v in overrides.items()}
    return _run(preset, tuple(sorted(workload.items())), tuple(sorted(flat.items())))


def ideal(workload: dict) -> dict:
    preset, keys = IDEAL
    return run(preset, workload, **keys, **IDEAL_MEMORY)


def cycles(stats: dict) -> int:
    return stats["summary"]["cycles"]


def misses(stats: dict) -> int:
    return stats["mmu"]["l2_misses"]


def test_gandhi_native_is_table_vi() -> None:
    cfg = tomllib.loads(xlat.resolve_config("gandhi-native"))
    mmu = cfg["mmu"]
    geometry = {
        name: (t["entries"], t["ways"], t["page_sizes"]) for name, t in mmu["l1tlb"].items()
    }
    # L1 DTLB: 4KB 64 entries 4-way, 2MB 32 entries 4-way, 1GB 4 entries fully associative.
    assert geometry == {
        "4k": (64, 4, ["4K"]),
        "2m": (32, 4, ["2M"]),
        "1g": (4, 4, ["1G"]),
    }
    # L2 TLB: 4KB only, 512 entries, 4-way; nothing else at that level.
    assert {n: (t["entries"], t["ways"], t["page_sizes"]) for n, t in mmu["l2tlb"].items()} == {
        "4k": (512, 4, ["4K"])
    }
    assert cfg["core"]["frequency_ghz"] == 2.2  # Xeon E5-2430, 2.2 GHz
    assert cfg["os"]["physmem"]["bytes"] == 96 << 30  # 96 GB
    assert math.isclose(cfg["dram"]["tck_ns"], 1.875)  # DDR3 1066
    # Every virtualization preset runs on it: the same TLBs, the nested translations in the
    # L2 TLB with no nested TLB of their own (EPT TLB/NTLB: "shares the TLB"), and the VM's
    # 85 GB of guest-physical memory.
    for preset in (
        "virt-4k4k",
        "virt-4k2m",
        "virt-4k1g",
        "virt-2m2m",
        "vmm-direct",
        "guest-direct",
        "dual-direct",
        "shadow-4k",
        "shadow-2m",
    ):
        virt = tomllib.loads(xlat.resolve_config(preset))
        assert virt["mmu"] == mmu, preset
        assert {k: virt[k] for k in ("core", "cache", "dram")} == {
            k: cfg[k] for k in ("core", "cache", "dram")
        }, preset
        assert virt["schemes"]["virt"]["nested_in_l2tlb"] is True, preset
        assert virt["schemes"]["virt"]["nested_tlb"]["entries"] == 0, preset
        assert virt["os"]["physmem"]["bytes"] == 85 << 30, preset
    assert tomllib.loads(xlat.resolve_config("direct-segment"))["mmu"] == mmu
    # The Utopia machine keeps its own (Utopia Table 1's 1536-entry L2 TLB).
    utopia = tomllib.loads(xlat.resolve_config("baseline-radix"))
    assert utopia["mmu"]["l2tlb"]["unified"]["entries"] == 1536


def test_nested_4k4k_is_slower_than_native_with_more_tlb_misses() -> None:
    # §VIII: 4K+4K overheads far above native 4K (graph500 113% vs 28%); §IX-A: the 2D walk
    # costs 2.4x the cycles per miss on average.
    for workload in (GUPS, KVSTORE):
        native, nested = run("gandhi-native", workload), run("virt-4k4k", workload)
        assert cycles(nested) > 1.5 * cycles(native), workload["workload.name"]
        assert misses(nested) > misses(native), workload["workload.name"]
        per_miss = [s["mmu"]["translation_cycles"] / misses(s) for s in (native, nested)]
        assert per_miss[1] > 2 * per_miss[0], workload["workload.name"]


def test_tlb_miss_inflation_comes_from_nested_entries_sharing_the_l2_tlb() -> None:
    # §IX-A: 4K+4K takes 1.29-1.62x the TLB misses of native 4K, because nested translations
    # share the TLB (Table VI). On Zipf-popular keys, whose hot set is near the TLB's reach,
    # the model gives as many; without the sharing, exactly native's.
    native = misses(run("gandhi-native", KVSTORE))
    shared = misses(run("virt-4k4k", KVSTORE))
    apart = misses(run("virt-4k4k", KVSTORE, schemes__virt__nested_in_l2tlb=False))
    assert 1.29 <= shared / native <= 1.62, shared / native
    assert apart == native


def test_dual_direct_is_near_ideal_and_not_without_its_segments() -> None:
    # §IX-A: "Dual Direct mode reduces address translation overheads to at most 0.17%",
    # overhead measured (Table IV) as page-walk cycles. Ours: no walk at all, and run time
    # within 1% of the perfect TLB's (the segment check each L1 TLB miss pays, and the data's
    # other frames; gandhi.SAME_OVERHEAD).
    ideal_cycles = cycles(ideal(GUPS))
    dd = run("dual-direct", GUPS, **RESERVE)
    assert dd["mmu"]["dual_direct_hits"] == dd["mmu"]["l1_misses"]
    assert dd["mmu"]["walk_cycles"] <= 0.0017 * ideal_cycles
    assert cycles(dd) <= 1.01 * ideal_cycles
    # The same guest and VMM without the two segments: the 2D walk again, far from ideal.
    off = run("dual-direct", GUPS, **RESERVE, **NO_SEGMENTS)
    assert off["mmu"]["dual_direct_hits"] == 0
    assert off["mmu"]["walk_cycles"] > 0.5 * ideal_cycles
    assert cycles(off) > 2 * ideal_cycles


def test_vmm_direct_is_within_two_percent_of_native_and_not_without_its_segment() -> None:
    # §IX-A: "VMM Direct is only 2% slower than native execution (geo mean)".
    ratios = [
        cycles(run("vmm-direct", w)) / cycles(run("gandhi-native", w)) for w in (GUPS, KVSTORE)
    ]
    assert math.prod(ratios) ** (1 / len(ratios)) <= 1.02, ratios
    # Without the VMM segment every gPA of the walk goes through the nested table: the 2D walk.
    for workload in (GUPS, KVSTORE):
        off = run("vmm-direct", workload, schemes__virt__vmm_segment=False)
        native = run("gandhi-native", workload)
        assert off["mmu"]["nested"]["segment"] == 0
        assert cycles(off) > 1.5 * cycles(native), workload["workload.name"]


def test_fig11_direction_fails_without_the_modes_mechanisms(tiny_reproduction) -> None:
    # gandhi-fig11's verdict at tiny scale, and the same values with a mode's mechanism taken
    # away: Dual Direct's segments (its GUPS run walking in 2D, as 4K+4K's) or VMM Direct's
    # (its misses costing what 4K+4K's do).
    outcome = tiny_reproduction("gandhi-fig11")
    check, df = outcome.reproduction.direction_check, outcome.results
    values = dict(outcome.analysis.values)
    assert check(df, values)
    no_dd = {**values, "overhead_DD_gups": values["overhead_4K+4K_gups"], "dd_share_gups": 0.0}
    assert not check(df, no_dd)
    no_segment_but_share = {**values, "overhead_DD_gups": 0.02}
    assert not check(df, no_segment_but_share)
    no_vd = {**values, "vd_cycles_per_miss": values["cycles_per_miss_4K+4K"]}
    assert not check(df, no_vd)


def test_fig11_sensitivity_rests_on_the_nested_dimension(
    tiny_reproduction, tiny_mechanism_off
) -> None:
    # gandhi-fig11-sensitivity: the paper credits virtualization's overhead to the 2D walk
    # (4K+4K 113% against native 28% for graph500), and how much of it reaches memory turns on
    # the page-walk caches Table VI does not give. At tiny scale GUPS on 4K+4K runs 6.33x as
    # long as native 4K, and without the nested dimension's PWCs its overhead rises from
    # 13.85 to 14.05 (T / T_ideal - 1). Given a VMM segment (host translations by one
    # addition, VMM Direct's, so no nested walk), the same 4K+4K runs are 1.02x native and the
    # nested PWCs change nothing (overhead 1.391 with and without them). The direction still
    # holds then (1.02x is "slower"), so the quantities are what is asserted.
    key = "sens_overhead_4k4k_{}_gups"
    on = tiny_reproduction("gandhi-fig11-sensitivity")
    assert on.direction_holds
    values = on.analysis.values
    assert values["sens_slowdown_pwc_32_gups"] > 3, values
    assert values[key.format("host_pwc_none")] > values[key.format("pwc_32")]
    segment = {"schemes.virt.vmm_segment": True, "schemes.virt.relocate_io_gap": True}
    labels = ("4K+4K PWC 32", "4K+4K host PWC none", "4K+4K PWC none")
    off = tiny_mechanism_off(
        "gandhi-fig11-sensitivity", dict.fromkeys(labels, segment), workloads=["gups"]
    ).analysis.values
    assert off["sens_slowdown_pwc_32_gups"] < 1.05, off
    assert off[key.format("host_pwc_none")] == pytest.approx(off[key.format("pwc_32")], rel=1e-9)


def test_fig12s_vmm_direct_recovery_is_its_segment(tiny_reproduction, tiny_mechanism_off) -> None:
    # gandhi-fig12: VMM Direct brings compute workloads' virtualized overhead back near
    # native (§IX-A: a TLB miss costs 13% more on average), because its VMM segment
    # translates every gPA of a walk. At tiny scale canneal's overhead is 0.707 native, 3.82
    # on 4K+4K and 0.712 with VMM Direct, whose misses cost 0.99x native's. Without the VMM
    # segment its misses cost 4.40x native's, streamcluster's overhead (0.262) exceeds
    # 4K+4K's (0.239), and the direction fails.
    on = tiny_reproduction("gandhi-fig12")
    assert on.direction_holds
    assert on.analysis.values["vd_cycles_per_miss"] < 1.13, on.analysis.values
    off = tiny_mechanism_off("gandhi-fig12", {"4K+VD": {"schemes.virt.vmm_segment": False}})
    assert off.analysis.values["vd_cycles_per_miss"] > 2, off.analysis.values
    assert not off.direction_holds


def test_fig13s_bad_pages_cost_little_through_the_escape_filter(
    tiny_reproduction, tiny_mechanism_off
) -> None:
    # gandhi-fig13: a 256-bit escape filter lets Dual Direct keep its segments with up to 16
    # bad pages (§V). At tiny scale GUPS's 64 MiB meets none of them; with 16, the filter
    # gives 29 false positives, 43 of the 14,958 L1 TLB misses walk, and the run is 0.55%
    # slower. The filter has no off switch; at one bit, every address of the VMM
    # segment looks escaped, as if the VMM could not tell the bad pages apart and gave the
    # segment up: none of the misses is a Dual Direct translation, the run is 2.62x as long,
    # and the direction fails.
    on = tiny_reproduction("gandhi-fig13")
    assert on.direction_holds
    assert on.analysis.values["fig13_max_slowdown"] < 0.01, on.analysis.values
    off = tiny_mechanism_off("gandhi-fig13", {"16 bad": {"schemes.virt.escape_filter_bits": 1}})
    runs = off.results.set_index("label")
    assert runs.loc["16 bad", "stats.mmu.dual_direct_hits"] == 0
    assert (
        runs.loc["00 bad", "stats.mmu.dual_direct_hits"]
        == runs.loc["00 bad", "stats.mmu.l1_misses"]
    )
    assert off.analysis.values["fig13_max_slowdown"] > 1, off.analysis.values
    assert not off.direction_holds


def test_self_ballooning_gives_the_fragmented_guest_its_segment(
    tiny_reproduction, tiny_mechanism_off
) -> None:
    # gandhi-fragmentation: self-ballooning (§IV) makes the contiguous guest-physical memory
    # a guest segment needs on a fragmented guest, by hot-plugging it from a reserve. At tiny
    # scale every ballooned run keeps its unfragmented share of translations by the segments
    # (1.0), while without ballooning the regions stay paged (share 0; GUPS's Dual Direct
    # 2.38x as long). With nothing to hot-plug from (balloon_reserve_bytes = 0) the most
    # fragmented Dual Direct guest's region stays paged although it balloons: its share is
    # 0 and the direction fails. (Turning self_balloon off instead leaves its label without
    # a ballooned twin, which the analysis compares each run with.)
    on = tiny_reproduction("gandhi-fragmentation")
    assert on.direction_holds
    assert on.analysis.values["balloon_min_share_kept"] == 1.0
    off = tiny_mechanism_off(
        "gandhi-fragmentation",
        {"DD 0.8": {"schemes.virt.balloon_reserve_bytes": 0}},
        workloads=["gups"],
    )
    runs = off.results.set_index("label")
    assert runs.loc["DD 0.8", "stats.os.segments.created"] == 0
    assert runs.loc["DD 0.8", "stats.os.segments.failed"] == 1
    assert off.analysis.values["balloon_min_share_kept"] == 0.0, off.analysis.values
    assert not off.direction_holds


def test_fig11_paper_scale_1g_clause_rests_on_the_few_1g_entries(tmp_path) -> None:
    # At paper scale (the runs results/paper keeps) NPB:CG's 1 GiB pages cost 23% against
    # 2 MiB pages' 0.75%: Table VI's four 1 GiB L1 entries thrash (267 L2 TLB misses per
    # kilo-instruction against 21), the paper's own caveat (§VIII obs. 3), and the direction
    # excuses 1G <= 2M there only. With 1G missing no more than 2M, the clause applies and fails.
    import shutil
    from pathlib import Path

    from xlat import experiments, results

    stored = Path(__file__).resolve().parents[1] / "results" / "paper" / "gandhi-fig11" / "sweep"
    df = results.load(shutil.copytree(stored, tmp_path / "sweep"))
    df["label"] = df["system"].map(lambda s: Path(s).stem)
    rep = experiments.get("gandhi-fig11")
    values = rep.analyse(df).values
    assert values["overhead_1G_cg"] > values["overhead_2M_cg"] + 0.1
    assert rep.direction_check(df, values)
    cg_1g = (df["workload"] == "cg") & (df["label"] == "1G")
    df.loc[cg_1g, "stats.summary.l2tlb_mpki"] = 1.0
    assert not rep.direction_check(df, values)
