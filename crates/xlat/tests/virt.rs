//! Virtualized memory end to end (Gandhi et al.): every virtualized and direct-segment preset
//! translates every built-in workload correctly, walks make the references of Table II, bad
//! pages escape their segments, and self-ballooning makes a segment on fragmented memory.

#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;
use sim::*;

const PRESETS: [&str; 10] = [
    "virt-4k4k",
    "virt-4k2m",
    "virt-4k1g",
    "virt-2m2m",
    "direct-segment",
    "vmm-direct",
    "guest-direct",
    "dual-direct",
    "shadow-4k",
    "shadow-2m",
];

/// The workloads' defaults fit in the tests' 4 GiB of (guest) memory but for these.
fn fit(workload: &str) -> Vec<String> {
    match workload {
        "gups" => vec![format!("workload.table_bytes={GIB}")],
        _ => Vec::new(),
    }
}

#[test]
fn every_preset_translates_every_workload_correctly() {
    for preset in PRESETS {
        for (name, _) in xlat::workload::WORKLOADS {
            let mut extra = fit(name);
            extra.push("sim.verify=true".into());
            let s = run(cfg(preset, name, 5_000, &extra));
            // Fast-forwarded references are checked too.
            assert!(
                u(&s, "verify.translations_checked") >= u(&s, "core.memory_refs"),
                "{preset} {name}"
            );
        }
    }
}

/// Nothing cached on either side: no PWCs, no nested translations in the L2 TLB; the table
/// mapped before the run, so that no walk stops at a missing entry.
fn uncached() -> Vec<String> {
    vec![
        "workload.populate=true".into(),
        "schemes.radix.pwc.entries=0".into(),
        "schemes.virt.host_pwc.entries=0".into(),
        "schemes.virt.nested_in_l2tlb=false".into(),
        format!("workload.table_bytes={}", 256 * MIB),
    ]
}

#[test]
fn walks_make_the_references_of_table_ii() {
    // Base virtualized: 24 per walk.
    let s = run(cfg("virt-4k4k", "gups", 20_000, &uncached()));
    let walks = u(&s, "mmu.walks");
    assert!(walks > 5_000);
    assert_eq!(u(&s, "walk.refs.total"), 24 * walks);
    // VMM Direct: every gPA in the VMM segment, so 4 per walk.
    let s = run(cfg("vmm-direct", "gups", 20_000, &uncached()));
    assert_eq!(u(&s, "walk.refs.total"), 4 * u(&s, "mmu.walks"));
    assert_eq!(u(&s, "mmu.nested.walks"), 0);
    // Guest Direct: 4 per walk inside the guest segment (the table), 24 outside.
    let s = run(cfg("guest-direct", "gups", 20_000, &uncached()));
    let (walks, inside) = (u(&s, "mmu.walks"), u(&s, "mmu.guest_segment.hits"));
    assert!(
        inside > walks / 2,
        "{inside} of {walks} walks in the segment"
    );
    assert_eq!(u(&s, "walk.refs.total"), 4 * inside + 24 * (walks - inside));
    // Dual Direct: the table's L1 TLB misses need no walk at all.
    let s = run(cfg("dual-direct", "gups", 20_000, &uncached()));
    assert!(u(&s, "mmu.dual_direct_hits") > 5_000);
    assert_eq!(u(&s, "walk.refs.total"), 24 * u(&s, "mmu.walks"));
    assert!(u(&s, "mmu.walks") < 100);
}

#[test]
fn sixteen_bad_pages_escape_their_segment_and_still_translate() {
    for (preset, key, escaped) in [
        (
            "direct-segment",
            "os.direct_segment.bad_pages=16",
            "mmu.segment.escaped",
        ),
        (
            "dual-direct",
            "schemes.virt.vmm_bad_pages=16",
            "mmu.vmm_segment.escaped",
        ),
    ] {
        let mut extra = fit("gups");
        extra.extend([
            key.to_string(),
            "sim.verify=true".into(),
            format!("workload.table_bytes={}", 64 * MIB),
        ]);
        let s = run(cfg(preset, "gups", 400_000, &extra));
        assert_eq!(
            u(&s, "verify.translations_checked"),
            u(&s, "core.memory_refs")
        );
        // 16 of the table's 16,384 pages: a few hundred of 400,000 random references.
        assert!(u(&s, escaped) > 0, "{preset}: no reference escaped");
    }
}

#[test]
fn self_ballooning_makes_a_segment_where_fragmentation_leaves_none() {
    let frag = |balloon: bool| {
        vec![
            "os.physmem.fragmentation=0.5".to_string(),
            format!("os.direct_segment.self_balloon={balloon}"),
            "sim.verify=true".into(),
            format!("workload.table_bytes={}", 512 * MIB),
        ]
    };
    let without = run(cfg("guest-direct", "gups", 20_000, &frag(false)));
    assert_eq!(u(&without, "os.segments.failed"), 1);
    assert_eq!(u(&without, "os.segments.created"), 0);
    let with = run(cfg("guest-direct", "gups", 20_000, &frag(true)));
    assert_eq!(u(&with, "os.segments.created"), 1);
    assert_eq!(u(&with, "os.segments.ballooned_frames"), (512 * MIB) >> 12);
    assert_eq!(u(&with, "os.vmm.hotplugged_frames"), (512 * MIB) >> 12);
    // The segment does its work: most walks skip the guest dimension.
    assert!(u(&with, "mmu.guest_segment.hits") > u(&with, "mmu.walks") / 2);
}

#[test]
fn shadow_paging_walks_in_one_dimension_and_pays_for_guest_table_writes() {
    let extra = |populate: bool| {
        vec![
            "sim.verify=true".to_string(),
            format!("workload.populate={populate}"),
            format!("workload.table_bytes={}", 256 * MIB),
            "sim.fast_forward=0".to_string(),
        ]
    };
    // Populated before the run (its traps are set-up, not charged): 1D walks of the shadow
    // table, as many references as native radix's on the same machine (Table VI's).
    let shadow = run(cfg("shadow-4k", "gups", 20_000, &extra(true)));
    let native = run(cfg("gandhi-native", "gups", 20_000, &extra(true)));
    assert_eq!(u(&shadow, "walk.refs.total"), u(&native, "walk.refs.total"));
    // Demand paging: every fault's page-table writes trap.
    let s = run(cfg("shadow-4k", "gups", 20_000, &extra(false)));
    let faults = u(&s, "os.faults.minor");
    assert!(faults > 1000);
    assert!(u(&s, "os.vmm.shadow.exits") >= faults);
    assert_eq!(
        u(&s, "os.vmm.shadow.exit_cycles"),
        3000 * u(&s, "os.vmm.shadow.exits")
    );
}

#[test]
fn a_dual_direct_hit_costs_its_own_cycle_and_cancels_the_l2_tlb_lookup() {
    // Gandhi Table I: the segments translate beside the L2 TLB; with both segments over the
    // whole table every L1 TLB miss is theirs, at one base-bound check's cycle (Table II),
    // not the L2 TLB's 12.
    let s = run(cfg("dual-direct", "gups", 20_000, &uncached()));
    let hits = u(&s, "mmu.dual_direct_hits");
    assert!(hits > 5_000);
    assert_eq!(u(&s, "mmu.l1_misses"), hits);
    assert_eq!(u(&s, "mmu.translation_cycles"), hits);
}
