//! RMM (Redundant Memory Mappings) end to end: correct translations on every built-in
//! workload with eager paging, the range TLB serving GUPS's L2 TLB misses, and shootdowns
//! reaching the range TLB.

use xlat::os::MapKind;
use xlat::Simulation;

// Each test crate uses some of the shared helpers.
#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;
use sim::*;

/// Eager paging backs every VMA whole, so a workload's VMAs must fit in the 4 GiB: the
/// workloads whose defaults do not (`xlat workloads` lists the footprints) run smaller.
fn fit_in_4g(workload: &str) -> Vec<String> {
    match workload {
        "gups" => vec![format!("workload.table_bytes={GIB}")],
        "mix" => vec![format!(
            "workload.members=[{{name = \"gups\", table_bytes = {GIB}}}, \
             {{name = \"stream\", array_bytes = {}}}]",
            64 << 20
        )],
        _ => Vec::new(),
    }
}

#[test]
fn rmm_translates_every_workload_correctly() {
    const REFS: u64 = 20_000;
    for (name, _) in xlat::workload::WORKLOADS {
        let mut extra = fit_in_4g(name);
        extra.push("sim.verify=true".into());
        // Everything in detail: the fault counts below must cover the whole run.
        extra.push("sim.fast_forward=0".into());
        let s = run(cfg("rmm", name, REFS, &extra));
        let refs = u(&s, "core.memory_refs");
        assert!(refs >= REFS, "{name}");
        assert_eq!(u(&s, "verify.translations_checked"), refs, "{name}");
        // Every page mapped is covered by the process's ranges.
        let mapped = u(&s, "os.faults.4k")
            + 512 * u(&s, "os.faults.2m")
            + (512 * 512) * u(&s, "os.faults.1g");
        let covered: u64 = s["os"]["pt"]
            .as_object()
            .unwrap()
            .values()
            .map(|p| p["range_table"]["pages"].as_u64().unwrap())
            .sum();
        assert_eq!(covered, mapped, "{name}: ranges cover the mapped pages");
        // Eager paging: far fewer faults than pages, and some range walks found ranges.
        assert!(u(&s, "os.faults.minor") < mapped, "{name}");
        assert_eq!(u(&s, "mmu.range_walk.misses"), 0, "{name}");
        assert_eq!(
            u(&s, "mmu.range_walk.walks"),
            u(&s, "mmu.walks") - u(&s, "mmu.faults"),
            "{name}: one range walk after every page walk that found a mapping"
        );
    }
}

#[test]
fn rmm_on_gups_serves_most_l2_misses_from_ranges() {
    // Populated up front, so neither run is dominated by faults.
    let extra = [
        format!("workload.table_bytes={GIB}"),
        "workload.populate=true".to_string(),
        "sim.verify=true".to_string(),
    ];
    let radix = run(cfg("baseline-radix", "gups", 200_000, &extra));
    let rmm = run(cfg("rmm", "gups", 200_000, &extra));
    let l2_misses = u(&rmm, "mmu.l2tlb.misses");
    let range_hits_on_l2_misses = l2_misses - u(&rmm, "mmu.l2_misses");
    assert!(
        range_hits_on_l2_misses * 10 >= l2_misses * 9,
        "range TLB served {range_hits_on_l2_misses} of {l2_misses} L2 TLB misses"
    );
    let (w_radix, w_rmm) = (u(&radix, "summary.walks"), u(&rmm, "summary.walks"));
    assert!(w_rmm * 10 < w_radix, "walks: rmm {w_rmm}, radix {w_radix}");
    let (c_radix, c_rmm) = (u(&radix, "summary.cycles"), u(&rmm, "summary.cycles"));
    assert!(c_rmm < c_radix, "cycles: rmm {c_rmm}, radix {c_radix}");
    // One 1 GiB VMA on unfragmented memory: one range.
    assert_eq!(u(&rmm, "os.pt.0.range_table.ranges"), 1);
    assert!(
        rmm["walk"]["refs"]["by_kind"].get("range").is_none(),
        "range-table reads are not page-walk references"
    );
    assert!(
        u(&rmm, "cache.l1d.by_kind.range.hits") + u(&rmm, "cache.l1d.by_kind.range.misses") > 0
    );
}

#[test]
fn rmm_on_fragmented_memory_still_translates_correctly() {
    // Utopia Table 1's 40 % fragmentation without the preset's contiguous gigabyte: many
    // ranges, more than the range TLB holds.
    let extra = [
        format!("workload.table_bytes={GIB}"),
        "os.physmem.fragmentation=0.4".to_string(),
        "os.physmem.contiguous_bytes=0".to_string(),
        "sim.verify=true".to_string(),
    ];
    let s = run(cfg("rmm", "gups", 50_000, &extra));
    assert_eq!(u(&s, "verify.translations_checked"), 50_000);
    assert!(u(&s, "os.pt.0.range_table.ranges") > 32);
    assert!(u(&s, "mmu.range_tlb.evictions") > 0);
}

#[test]
fn the_contiguous_gigabyte_makes_a_fragmented_gigabyte_one_range() {
    let extra = [
        format!("workload.table_bytes={GIB}"),
        "os.physmem.fragmentation=0.4".to_string(),
        "sim.verify=true".to_string(),
    ];
    let s = run(cfg("rmm", "gups", 20_000, &extra));
    assert_eq!(u(&s, "os.pt.0.range_table.ranges"), 1);
    assert!(s["os"]["physmem"]["fmfi_initial"].as_f64().unwrap() > 0.2);
}

#[test]
fn munmap_shootdown_reaches_the_range_tlb() {
    for shootdown in [true, false] {
        let c = cfg(
            "rmm",
            "gups",
            1000,
            &[
                format!("workload.table_bytes={}", 64 << 20),
                "sim.verify=true".into(),
            ],
        );
        let mut sim = Simulation::new(c).unwrap();
        let pid = 0;
        let va = sim
            .address_spaces()
            .mmap(pid, 1 << 20, MapKind::Anon)
            .unwrap();
        let at = |page: u64| xlat::trace::Record {
            vaddr: xlat::addr::VirtAddr(va.0 + page * 4096),
            pid,
            size: 8,
            // Far apart in time, so the range walk of one has ended before the next.
            instr_delta: 10_000,
            ..Default::default()
        };
        // The fault backs all 256 pages (one range); the walk after it fills the range TLB,
        // which then serves page 7 without a walk.
        sim.step(&at(0)).unwrap();
        let walks = sim.stats().walk.walks;
        sim.step(&at(7)).unwrap();
        assert_eq!(
            sim.stats().walk.walks,
            walks,
            "page 7 came from the range TLB"
        );
        let hole = xlat::addr::VirtAddr(va.0 + 100 * 4096);
        let gone = sim.address_spaces().munmap(pid, hole, 4096).unwrap();
        assert_eq!(gone.len(), 1);
        if shootdown {
            sim.shootdown(pid, &gone);
            // The range around the hole is split: pages on both sides still translate.
            sim.step(&at(99)).unwrap();
            sim.step(&at(101)).unwrap();
        }
        let e = sim.step(&at(100)).unwrap_err().to_string();
        if shootdown {
            assert!(e.contains("segmentation fault"), "{e}");
        } else {
            // Without the shootdown the range TLB still covers the hole: verify catches it.
            assert!(e.contains("translation check failed"), "{e}");
        }
    }
}

#[test]
fn range_tlb_config_errors_name_their_key() {
    for (ov, key) in [
        (
            "schemes.rmm.range_tlb_entries=0",
            "schemes.rmm.range_tlb_entries",
        ),
        ("schemes.rmm.node_entries=4", "schemes.rmm.node_entries"),
        ("schemes.rmm.node_entries=255", "schemes.rmm.node_entries"),
    ] {
        let err = xlat::SimConfig::load("rmm", &[ov.to_string()])
            .err()
            .unwrap_or_else(|| panic!("{ov} accepted"));
        assert!(err.to_string().contains(key), "{ov}: {err}");
    }
}
