"""Utopia's evaluation and motivation reproductions (Figs 1-3, 5, 6, 9, 11-16, 21, the TAR
cache and THP-share studies): what the generic tiny run does not check: Fig 9's arithmetic
against the engine's byte counts, the systems Figs 11-16 share with Fig 5, Utopia's speed-up in
the regime of the paper, each headline at the paper's proportions, and each reproduction's
tiny runs beside the same runs with its mechanism off."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from xlat import api, experiments, results
from xlat.experiments import utopia, utopia_components, utopia_eval

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

pytestmark = pytest.mark.engine

#: Paper-scale runs kept in the repository (results/README.md).
PAPER_RESULTS = Path(__file__).resolve().parents[1] / "results" / "paper"


def test_restseg_geometry_follows_section_5_2s_example() -> None:
    # §5.2: a 2 GB 4-way RestSeg of 4 KB pages has 2^17 sets, 19-bit tags (48-bit VAs) and a
    # 32 KB SF.
    g = utopia_eval.restseg_geometry(2 << 30, ways=4)
    assert (g["sets"], g["tag_bits"], g["sf_bytes"]) == (1 << 17, 19, 32 << 10)
    assert g["entry_bytes"] == 4  # 19 + 8 bits, rounded up to 4 bytes


def test_radix_bytes_count_leaves_and_upper_levels() -> None:
    assert utopia_eval.radix_bytes(512) == 4 * 4096
    assert utopia_eval.radix_bytes(1 << 18) == (512 + 1 + 1 + 1) * 4096


@pytest.mark.parametrize(
    "restsegs",
    [
        [
            {"bytes": 64 << 20, "page": "4K", "ways": 8},
            {"bytes": 64 << 20, "page": "2M", "ways": 4},
        ],
        [{"bytes": 256 << 20, "page": "4K", "ways": 16}],
    ],
)
def test_fig9_arithmetic_equals_the_engines_tar_and_sf_bytes(restsegs: list[dict]) -> None:
    stats = api.run(
        "utopia",
        "gups",
        overrides={
            "schemes.utopia.restsegs": restsegs,
            "workload.table_bytes": 32 << 20,
            "workload.references": 2000,
        },
    )
    engine = stats["os"]["pt"]["0"]["restsegs"]
    assert len(engine) == len(restsegs)
    for cfg, seg in zip(restsegs, engine):
        shift = {"4K": 12, "2M": 21}[cfg["page"]]
        g = utopia_eval.restseg_geometry(cfg["bytes"], cfg["ways"], shift)
        assert (seg["tar_bytes"], seg["sf_bytes"]) == (g["tar_bytes"], g["sf_bytes"]), cfg


def test_fig9_radix_table_covers_its_mapped_pages() -> None:
    stats = api.run(
        "baseline-radix",
        "gups",
        overrides={"workload.table_bytes": 64 << 20, "workload.references": 2000},
    )
    pages = stats["os"]["faults"]["4k"]
    assert pages >= (64 << 20) >> 12
    assert stats["os"]["pt_bytes"] >= utopia_eval.radix_bytes(pages) - 3 * 4096


def test_fig11_16_shares_fig5s_systems() -> None:
    fig5 = experiments.get("utopia-fig5")
    eval_ = experiments.get("utopia-fig11-16")
    for label, system in fig5.systems.items():
        assert eval_.systems[label] == system, label
    assert eval_.workloads == fig5.workloads
    assert eval_.references == fig5.references
    assert eval_.overrides == fig5.overrides and eval_.scale_overrides == fig5.scale_overrides


def test_utopia_beats_radix_on_gups_beyond_the_l2_tlb_reach() -> None:
    # The paper's regime: data far beyond the L2 TLB's reach, held in the 512 MB RestSeg.
    # GUPS at 512 MiB (at tiny scale's 64 MiB the radix PTEs fit the L2 cache and Utopia's
    # RestSeg walk on every L1 TLB miss costs more than it saves).
    cycles = {}
    for preset in ("baseline-radix", "utopia"):
        stats = api.run(
            preset,
            "gups",
            overrides={"workload.table_bytes": 512 << 20, "workload.references": 200_000},
        )
        cycles[preset] = stats["summary"]["cycles"]
    assert cycles["baseline-radix"] > 1.5 * cycles["utopia"], cycles


#: Utopia Table 1's machine and Table 2's footprints, both divided by 16: GUPS's 8 GiB table
#: becomes 512 MiB beside RestSegs of 32 MiB, a 96-entry L2 TLB and a 128 KB LLC.
DIVISOR = 16


def _proportioned_gups(preset: str, **keys: object) -> dict:
    return api.run(
        preset,
        "gups",
        overrides={
            **utopia.proportioned(preset, DIVISOR),
            "workload.footprint": utopia.proportioned_footprint("gups", DIVISOR),
            "workload.references": 400_000,
            "sim.warmup_instructions": 200_000,
            **keys,
        },
    )


@pytest.mark.parametrize(
    "preset", ["baseline-radix", "utopia", "utopia-ech", "pom-tlb", "perfect-tlb"]
)
def test_the_proportioned_machine_divides_table_1s_capacities(preset: str) -> None:
    def resolved(keys: dict) -> dict:
        return tomllib.loads(api.resolve_config(preset, "gups", overrides=keys))

    def at(config: dict, key: str) -> object:
        for part in key.split("."):
            config = config[part]
        return config

    table1 = resolved({})
    whole = utopia.proportioned(preset, 1)
    # Divided by 1, every capacity is Table 1's (the page sizes are §7's).
    for key, value in whole.items():
        if not key.startswith("os."):
            assert at(table1, key) == value, key
    small = resolved(utopia.proportioned(preset, DIVISOR))
    assert at(small, "mmu.l2tlb.unified.entries") * DIVISOR == 1536
    assert at(small, "cache.llc.size") * DIVISOR == at(table1, "cache.llc.size")
    assert utopia.proportioned_footprint("gups", DIVISOR) == "625MB"
    with pytest.raises(ValueError, match="power of two"):
        utopia.proportioned(preset, 3)


def test_at_paper_proportions_utopia_is_faster_than_radix_on_gups() -> None:
    # Utopia's headline at the paper's proportions, on GUPS: with Table 1's TAR cache (scaled),
    # a RestSeg walk's TAR line, one per set, hits far less often than the paper's 98% (Fig 18),
    # yet the RestSeg walks make Utopia faster than Radix (1.067x) with cheaper translation
    # (0.84x Radix's MMU cycles); a TAR cache that holds the whole TAR adds about 1% (1.078x);
    # without RestSegs it is Radix again (1.001x). (Before DRAM served a request issued ahead
    # of rows booked on its bank in the gap before them, Utopia's data reads queued 149 cycles
    # against Radix's 61 here, and Utopia was 1.010x with Table 1's TAR cache: the mark
    # utopia-fig11-16 then blamed on the TAR cache was mostly that.)
    whole = {"schemes.utopia.tar_cache_bytes": 1 << 17, "schemes.utopia.sf_cache_bytes": 1 << 17}
    radix = _proportioned_gups("baseline-radix")
    table1 = _proportioned_gups("utopia")
    cached = _proportioned_gups("utopia", **whole)
    off = _proportioned_gups("utopia", **whole, **{"schemes.utopia.restsegs": []})

    def cycles(stats: dict) -> int:
        return stats["summary"]["cycles"]

    tar = table1["mmu"]["tar_cache"]
    assert tar["hits"] < 0.5 * (tar["hits"] + tar["misses"]), tar
    assert cycles(radix) / cycles(table1) > 1.04
    assert cycles(table1) >= cycles(cached)
    for system in (table1, cached):
        translation = system["mmu"]["translation_cycles"] / radix["mmu"]["translation_cycles"]
        assert translation < 0.9, translation
    assert cached["mmu"]["rsw"]["hits"] > 0
    assert abs(cycles(off) / cycles(radix) - 1) < 0.01


def test_at_paper_proportions_echs_walks_wait_on_its_cwc_reach() -> None:
    # The mark of utopia-fig1-2 and its cause, at the paper's proportions: the PMD-CWC's
    # entry (16 / 16) covers one 2 MiB region, so nearly every ECH walk misses it and probes
    # every way of both page sizes (9.3 requests a walk): ECH's walks are longer than Radix's
    # (257.1 vs 241.2 cycles) and ECH is 0.938x Radix. CWCs that cover the footprint make each
    # walk one probe, shorter than Radix's (234.0), and ECH 1.031x.
    radix = _proportioned_gups("baseline-radix")
    scaled = _proportioned_gups("utopia-ech")
    cwcs = {
        "schemes.hashed.walker.pmd_cwc_entries": 1024,
        "schemes.hashed.walker.pud_cwc_entries": 16,
    }
    reach = _proportioned_gups("utopia-ech", **cwcs)

    def walk(stats: dict) -> float:
        return stats["summary"]["avg_walk_latency"]

    cwc = scaled["mmu"]["cwc"]["pmd"]
    assert cwc["misses"] > 0.9 * (cwc["hits"] + cwc["misses"]), cwc
    assert walk(scaled) > walk(radix)
    assert radix["summary"]["cycles"] < scaled["summary"]["cycles"]
    assert reach["mmu"]["cwc"]["pmd"]["misses"] == 0
    assert reach["walk"]["refs"]["total"] == reach["walk"]["walks"]
    assert walk(reach) < walk(radix)
    assert radix["summary"]["cycles"] > reach["summary"]["cycles"]


def test_restrictive_only_faults_more_only_through_its_sets() -> None:
    # utopia-fig6's tiny runs of DLRM-SLS (its most colliding workload): the restrictive-only
    # mapping pages out a full set's victim and faults it in again (2,326 faults, 285 of them
    # major, against the flexible mapping's 2,041); given a FlexSeg for the victims (the
    # mechanism off), it faults exactly as the flexible mapping does.
    rep = experiments.get("utopia-fig6")
    keys = {
        **rep.overrides,
        **rep.scale_overrides["tiny"],
        **rep.workloads["tiny"]["dlrm-sls"],
        "workload.references": rep.references["tiny"],
    }
    keys["workload.footprint"] = keys.pop("footprint")

    def faults(preset: str, **more: object) -> int:
        system = rep.systems["Restrictive-only" if preset == "utopia" else "Flexible-only"]
        stats = api.run(preset, "dlrm-sls", overrides={**system.overrides, **keys, **more})
        return stats["summary"]["faults"]

    flexible = faults("baseline-radix")
    assert faults("utopia") > 1.05 * flexible
    assert faults("utopia", **{"schemes.utopia.flexseg": True}) == flexible


#: The reproductions of Table 2's workloads on the systems of §8.
SECTION_8_REPRODUCTIONS = (
    "utopia-fig1-2",
    "utopia-fig3",
    "utopia-fig5",
    "utopia-fig11-16",
    "utopia-fig17",
    "utopia-fig18-20",
    "utopia-fig21",
    "utopia-tar-cache",
)


@pytest.mark.parametrize("reproduction", SECTION_8_REPRODUCTIONS)
def test_the_paper_scale_runs_the_systems_as_section_7_did(reproduction: str, tmp_path) -> None:
    # §7: page sizes from THP, 90% of the ranges on 4 KiB pages (its Fig 1); Radix, ECH and
    # POM-TLB given 1 GB more of 2 MB pages; RMM its 1 GB region. The smaller scales keep
    # 4 KiB pages (docs/experiments.md).
    rep = experiments.get(reproduction)
    labels = [label for label, *_ in experiments.registry._runs(rep, "paper", tmp_path)]
    configs = experiments.registry.resolved_configs(reproduction, "paper", tmp_path)
    extra_huge = {"Radix", "ECH", "POM-TLB", "RMM"}
    for label, cfg in zip(labels, configs):
        assert cfg["os"]["thp"] == "always", (label, cfg["workload"]["name"])
        assert cfg["os"]["thp_ineligible"] == 0.9
        contiguous = cfg["os"]["physmem"]["contiguous_bytes"]
        assert contiguous == (1 << 30 if label in extra_huge else 0), label
        if reproduction != "utopia-fig17":
            assert cfg["sim"]["max_instructions"] == 500_000_000
    for cfg in experiments.registry.resolved_configs(reproduction, "quick", tmp_path):
        assert cfg["os"]["thp"] == "never"


def test_fig21s_speed_up_comes_from_the_4k_restsegs_reach(
    tiny_reproduction, tiny_mechanism_off
) -> None:
    # utopia-fig21 at tiny scale: GUPS's 2 GiB table outgrows a 512 MB 4 KB RestSeg, and
    # Utopia's speed-up over Radix grows with the RestSeg (1.24x, 1.73x, 3.21x): the larger
    # segment holds more of the table, so fewer references walk the FlexSeg. With the 2 GB
    # system's RestSegs off, it runs as Radix does, and the speed-up no longer grows.
    def grows(values: dict) -> bool:
        return values["fig21_speedup_2gb"] > 1.1 and values["fig21_512mb_gap"] > 0.05

    on = tiny_reproduction("utopia-fig21").analysis.values
    off = tiny_mechanism_off("utopia-fig21", {"Utopia-2GB": {"schemes.utopia.restsegs": []}})
    assert grows(on), on
    assert not grows(off.analysis.values), off.analysis.values
    assert abs(off.analysis.values["fig21_speedup_2gb"] - 1) < 0.01


def test_fig3s_ech_l2_share_comes_from_its_probes_of_every_way(
    tiny_reproduction, tiny_mechanism_off
) -> None:
    # utopia-fig3: the paper credits ECH's larger share of the L2 (59% of its blocks against
    # Radix's 33%) to its hashed walks, which probe every way of the table in parallel. At
    # tiny scale ECH's PTEs hold 4.0% of the L2 against Radix's 1.5% (2.70x on average), and
    # on GUPS 40.2% against 12.5%: its 16-entry PMD-CWC (32 MiB) misses on most walks, each
    # of which then reads a line in all four ways. With CWCs that cover the footprint (1024
    # PMD entries), a walk is one probe and GUPS's share falls to 12.8%, 1.03x Radix's, short
    # of the direction's 1.4x. (A direction of merely "more of the L2 than Radix's" held on
    # the margins the other workloads keep, 1.6% against 1.5% on average.)
    on = tiny_reproduction("utopia-fig3")
    assert on.direction_holds
    values = on.analysis.values
    assert values["ech_l2_pt_fraction_avg"] > 2 * values["radix_l2_pt_fraction_avg"], values
    share = on.analysis.tables[0][1].set_index("workload")
    assert share.loc["gups", "ECH L2"] > 2 * share.loc["gups", "Radix L2"]
    cwcs = {
        "schemes.hashed.walker.pmd_cwc_entries": 1024,
        "schemes.hashed.walker.pud_cwc_entries": 16,
    }
    off = tiny_mechanism_off("utopia-fig3", {"ECH": cwcs}, workloads=["gups"])
    values = off.analysis.values
    assert values["ech_l2_pt_fraction_avg"] < 1.05 * values["radix_l2_pt_fraction_avg"], values
    assert not off.direction_holds


#: The tiny workloads on which Radix walks (over 1,000 L2 TLB misses each).
WALKING = ["gups", "kmer", "dlrm-sls"]


def test_fig5s_tiny_headroom_is_radixs_walks_of_4k_pages(
    tiny_reproduction, tiny_mechanism_off
) -> None:
    # utopia-fig5 credits the perfect TLB's gain (the paper's +30%) to what Radix's address
    # translation costs. Its direction is marked not shown at tiny scale because most tiny
    # workloads rarely walk (the mark's cause, checked beside the verdict by
    # test_reproduction_at_tiny_scale); the three that do miss Radix's L2 TLB 13,760, 4,555
    # and 1,208 times and P-TLB runs them 1.73x, 1.12x and 1.08x faster (1.71x, 1.12x and 1.14x
    # before DRAM served late-called requests in the gaps before rows booked after them). With
    # Radix's data on
    # 2 MB pages (THP on: the tiny footprints then fit the L2 TLB's reach) it misses 32, 5 and
    # 22 times and P-TLB is within 1% of it (1.004x, 0.999x, 0.998x): the headroom is Radix's
    # walks of 4 KB pages.
    on = tiny_reproduction("utopia-fig5").results
    speedups = utopia._speedups(on, "P-TLB")[WALKING]
    assert (speedups > 1.05).all(), speedups
    misses = utopia._per_workload(on, "stats.mmu.l2tlb.misses", "Radix")[WALKING]
    assert (misses > 1000).all(), misses
    off = tiny_mechanism_off("utopia-fig5", {"Radix": {"os.thp": "always"}}, workloads=WALKING)
    speedups = utopia._speedups(off.results, "P-TLB")
    assert ((speedups - 1).abs() < 0.01).all(), speedups
    assert (utopia._per_workload(off.results, "stats.mmu.l2tlb.misses", "Radix") < 100).all()


def test_tar_cache_hit_rate_rises_through_the_tar_caches_capacity(
    tiny_reproduction, tiny_mechanism_off
) -> None:
    # utopia-tar-cache: the paper explains its 98% TAR cache hits by the TAR being small
    # (1.1 MB, §8.4), i.e. a TAR cache that holds it. At tiny scale the hit rate rises from
    # 0.04% (Table 1's 2 KB) to 26% (1 MB; GUPS 0.2% to 50%, k-mer 0% to 55%). The TAR cache
    # has no off switch (tar_cache_bytes is 64 B to 1 MiB); given a single line instead of
    # 1 MB, the largest system hits 0% on GUPS and k-mer and the direction fails. Its other
    # half ("the speed-up does not fall") is flat at tiny scale (0.968x with 2 KB, 0.966x with
    # 1 MB) and holds with or without the capacity.
    on = tiny_reproduction("utopia-tar-cache")
    assert on.direction_holds
    values = on.analysis.values
    assert values["tar_hit_1mb"] > 0.2 and values["tar_hit_2kb"] < 0.01, values
    off = tiny_mechanism_off(
        "utopia-tar-cache",
        {"Utopia-1MB": {"schemes.utopia.tar_cache_bytes": 64}},
        workloads=["gups", "kmer"],
    )
    assert off.analysis.values["tar_hit_1mb"] < 0.01, off.analysis.values
    assert not off.direction_holds


def test_thp_shares_headroom_gap_is_the_2mb_pages_of_the_eligible_ranges(
    tiny_reproduction, tiny_mechanism_off
) -> None:
    # utopia-thp-share: translation matters less the more data THP backs with 2 MB pages (§7;
    # the paper's +30% needs most data on 4 KB pages). At tiny scale (Table 1 and Table 2
    # divided by 32) P-TLB gains 1.03x over Radix with every range eligible for 2 MB pages
    # and 2.83x with 90% left to 4 KB pages (GUPS: 1.006x and 4.16x). With THP off in the 0%
    # systems, their data is on 4 KB pages as at 100%, and P-TLB gains 4.64x on GUPS at 0%,
    # exactly its 100% value: the direction fails.
    on = tiny_reproduction("utopia-thp-share")
    assert on.direction_holds
    assert on.analysis.values["ptlb_speedup_0"] < 1.1, on.analysis.values
    never = {"os.thp": "never"}
    off = tiny_mechanism_off(
        "utopia-thp-share",
        {label: never for label in ("Radix 0%", "Utopia 0%", "P-TLB 0%")},
        workloads=["gups"],
    )
    values = off.analysis.values
    assert values["ptlb_speedup_0"] > values["ptlb_speedup_90"], values
    assert values["ptlb_speedup_0"] == pytest.approx(values["ptlb_speedup_100"], rel=0.01)
    assert not off.direction_holds


def _stored_runs(reproduction: str, tmp_path: Path):
    """The paper-scale runs of ``reproduction`` kept in results/paper, labelled as
    ``xlat reproduce`` labels them (loaded from a copy: loading writes a Parquet cache)."""
    sweep = shutil.copytree(PAPER_RESULTS / reproduction / "sweep", tmp_path / reproduction)
    df = results.load(sweep)
    df["label"] = df["system"].map(lambda s: Path(s).stem)
    return df


def test_paper_scale_marks_rest_on_the_stored_runs(tmp_path) -> None:
    # utopia-fig11-16 and -fig1-2 are marked not shown at paper scale; each mark's cause is
    # checked on the runs results/paper keeps: the direction fails on them, the cause holds,
    # and with the cause taken away the mark is reported stale.
    for reproduction in ("utopia-fig11-16", "utopia-fig1-2"):
        rep = experiments.get(reproduction)
        df = _stored_runs(reproduction, tmp_path)
        assert not rep.direction_check(df, rep.analyse(df).values), reproduction
        assert rep.not_shown_cause(df, "paper") is None, reproduction

    # Utopia: Table 1's TAR cache hits 17% of its lookups. Hitting as Fig 18's does (98%),
    # the cause is gone.
    eval_ = experiments.get("utopia-fig11-16")
    df = _stored_runs("utopia-fig11-16", tmp_path / "hit")
    hits, misses = df["stats.mmu.tar_cache.hits"], df["stats.mmu.tar_cache.misses"]
    hitting = df.assign(**{"stats.mmu.tar_cache.hits": hits + 49 * misses})
    assert "the TAR cache hits" in eval_.not_shown_cause(hitting, "paper")

    # And the cause is the mechanism: the same workloads' runs with a 1 MB TAR cache, which
    # holds the whole TAR (utopia-tar-cache's, 99.9% hits), in place of Table 1's Utopia make
    # the direction hold (1.071x Radix, walks 0.64x its cycles; 1.095x before the DRAM fix).
    whole = _stored_runs("utopia-tar-cache", tmp_path / "tar")
    whole = whole[whole["label"] == "Utopia-1MB"].assign(label="Utopia")
    swapped = pd.concat([df[df["label"] != "Utopia"], whole], ignore_index=True)
    values = eval_.analyse(swapped).values
    assert eval_.direction_check(swapped, values)
    assert values["fig11_utopia_speedup_avg"] > 1.05
    assert values["fig12_utopia_walk_latency_norm"] < 0.8

    # ECH: 2.9x Radix's walk requests. With half its requests (1.46x, the paper's 1.52x
    # about), the cause is gone.
    walks = experiments.get("utopia-fig1-2")
    df = _stored_runs("utopia-fig1-2", tmp_path / "ech")
    ech = df["label"] == "ECH"
    for column in utopia.WALK_LEVELS.values():
        df[column] = df[column].where(~ech, df[column] // 2)
    assert "ECH makes 1.46x" in walks.not_shown_cause(df, "paper")


def test_fig21_holds_at_paper_scale_flat_through_the_tar_caches_misses(tmp_path) -> None:
    # On the runs results/paper keeps (under the DRAM that serves requests called late in the
    # gaps before later rows): the speed-up does not fall by more than the slack as the 4 KB
    # RestSeg grows (0.991x, 0.969x, 0.974x; 0.983x, 0.943x, 0.932x before that fix, when it
    # was marked not shown), and what keeps it flat is measured: Table 1's 2 KB TAR cache hits
    # less of the larger RestSeg's TAR, while with the whole TAR and SF cached the speed-up
    # rises with the size, as the paper's does.
    fig21 = experiments.get("utopia-fig21")
    assert "paper" not in fig21.direction_not_shown
    df = _stored_runs("utopia-fig21", tmp_path)
    assert fig21.direction_check(df, fig21.analyse(df).values)
    assert utopia_eval._tar_hits(df, "2GB") < utopia_eval._tar_hits(df, "512MB") < 0.2
    whole = utopia_eval._fig21_speedups(df, "-whole")
    small, large = (utopia_eval._gmean(whole[name]) for name in utopia_eval.FIG21_WHOLE)
    assert 1.0 < small < large


def test_fig18_20s_paper_scale_mark_rests_on_k_mers_fault_evictions(tmp_path) -> None:
    # At paper scale under §7's configuration GUPS no longer churns (the PTE counters decay),
    # but k-mer's first touches of its count table fault into full RestSeg sets and evict 7.2
    # pages per kilo-instruction: the direction fails on the runs results/paper keeps, the
    # mark's cause holds, and without those faults' evictions the direction holds and the mark
    # is reported stale.
    rep = experiments.get("utopia-fig18-20")
    df = _stored_runs("utopia-fig18-20", tmp_path)
    assert not rep.direction_check(df, rep.analyse(df).values)
    assert rep.not_shown_cause(df, "paper") is None
    table = utopia_components.components(df)
    assert table.loc["gups", "migrations to RestSeg per kI"] == 0
    kmer = (df["workload"] == "kmer") & (df["label"] == utopia_components.STEADY)
    no_faults = df.assign(**{"stats.os.faults.minor": df["stats.os.faults.minor"].where(~kmer, 0)})
    assert rep.direction_check(no_faults, rep.analyse(no_faults).values)
    assert "k-mer's evictions" in rep.not_shown_cause(no_faults, "paper")
