//! Mosaic end to end: correct translations on every built-in workload for every arity and
//! the vanilla comparator; one walk filling a whole ToC; fewer TLB misses than vanilla at the
//! same geometry on the same reference stream; the iceberg pool's utilisation in the stats;
//! config errors naming their key.

use xlat::addr::VirtAddr;
use xlat::os::MapKind;
use xlat::Simulation;

// Each test crate uses some of the shared helpers.
#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;
use sim::*;

/// Every run in detail (no fast-forward), so the counters cover the whole run.
fn detailed(extra: &[&str]) -> Vec<String> {
    let mut e: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    e.push("sim.verify=true".into());
    e.push("sim.fast_forward=0".into());
    e
}

#[test]
fn mosaic_translates_every_workload_correctly() {
    const REFS: u64 = 20_000;
    for preset in ["mosaic", "mosaic-64", "mosaic-vanilla"] {
        for (name, _) in xlat::workload::WORKLOADS {
            let s = run(cfg(preset, name, REFS, &detailed(&[])));
            let refs = u(&s, "core.memory_refs");
            assert!(refs >= REFS, "{preset} {name}");
            assert_eq!(
                u(&s, "verify.translations_checked"),
                refs,
                "{preset} {name}"
            );
            // The mosaic TLB is the only TLB: every translation looks it up, and again when
            // the instruction re-executes after a fault; every miss walks.
            let faults = u(&s, "mmu.faults");
            assert_eq!(
                u(&s, "mmu.mosaic_tlb.accesses"),
                refs + faults,
                "{preset} {name}"
            );
            assert_eq!(
                u(&s, "mmu.mosaic_tlb.misses"),
                u(&s, "mmu.l2_misses") + faults,
                "{preset} {name}"
            );
            assert_eq!(
                u(&s, "mmu.walks"),
                u(&s, "mmu.l2_misses") + u(&s, "mmu.faults"),
                "{preset} {name}: one walk per miss, a second after each fault"
            );
            if preset != "mosaic-vanilla" {
                // Every data page is in the pool, one frame each.
                assert_eq!(
                    u(&s, "os.frames.used_frames"),
                    u(&s, "os.faults.4k"),
                    "{preset} {name}"
                );
            }
        }
    }
}

/// `workload` on `preset` at tiny size, with the TLB's `ways`: GUPS over a populated 64 MiB
/// table (four times the reach of Mosaic-4's 1024 entries), so its misses are the TLB's and
/// not first touches.
fn tiny(preset: &str, workload: &str, ways: u32) -> serde_json::Value {
    let ways = format!("schemes.mosaic.tlb.ways={ways}");
    let mut extra = vec![ways.as_str()];
    if workload == "gups" {
        extra.extend(["workload.table_bytes=67108864", "workload.populate=true"]);
    }
    run(cfg(preset, workload, 200_000, &detailed(&extra)))
}

#[test]
fn gups_and_btree_verify_and_mosaic_misses_less_than_vanilla() {
    for workload in ["gups", "btree"] {
        for ways in [1, 1024] {
            let vanilla = tiny("mosaic-vanilla", workload, ways);
            let mosaic = tiny("mosaic", workload, ways);
            let m8 = tiny("mosaic-8", workload, ways);
            for s in [&vanilla, &mosaic, &m8] {
                assert_eq!(
                    u(s, "verify.translations_checked"),
                    u(s, "core.memory_refs")
                );
            }
            // The same reference stream reaches both TLBs.
            assert_eq!(
                u(&vanilla, "mmu.mosaic_tlb.accesses"),
                u(&mosaic, "mmu.mosaic_tlb.accesses")
            );
            let misses = |s: &serde_json::Value| u(s, "mmu.mosaic_tlb.misses");
            eprintln!(
                "{workload} {ways}-way: TLB misses vanilla {}, mosaic-4 {}, mosaic-8 {}",
                misses(&vanilla),
                misses(&mosaic),
                misses(&m8)
            );
            assert!(misses(&mosaic) < misses(&vanilla), "{workload} {ways}-way");
            assert!(misses(&m8) <= misses(&mosaic), "{workload} {ways}-way");
        }
    }
}

/// The stats of `sim` so far, as JSON.
fn now(sim: &Simulation) -> serde_json::Value {
    serde_json::from_str(&sim.stats().to_json()).unwrap()
}

/// A simulation of `preset` with a 1 MiB anonymous region, its first `populated` bytes
/// mapped; the region's address.
fn region(preset: &str, populated: u64) -> (Simulation, VirtAddr) {
    let mut sim = Simulation::new(cfg(preset, "gups", 1, &detailed(&[]))).unwrap();
    let va = sim
        .address_spaces()
        .mmap(0, 1 << 20, MapKind::Anon)
        .unwrap();
    sim.address_spaces().populate(0, va, populated).unwrap();
    (sim, va)
}

#[test]
fn one_walk_reads_the_whole_toc_and_fills_the_entry() {
    // A populated 1 MiB region read page by page: with arity a, one walk per a pages.
    for (preset, arity) in [("mosaic", 4u64), ("mosaic-16", 16), ("mosaic-64", 64)] {
        let (mut sim, va) = region(preset, 1 << 20);
        let before = now(&sim);
        for page in 0..256 {
            sim.step(&load_of_page(va, 0, page)).unwrap();
        }
        let after = now(&sim);
        let walks = u(&after, "mmu.walks") - u(&before, "mmu.walks");
        assert_eq!(walks, 256 / arity, "{preset}");
        // A ToC of 8-byte PTEs: one line up to arity 8, arity / 8 lines beyond, all read in
        // the walk's last step, after the three upper levels (Table 1a has no PWCs).
        let lines = (arity / 8).max(1);
        let refs = u(&after, "walk.refs.total") - u(&before, "walk.refs.total");
        assert_eq!(refs, walks * (3 + lines), "{preset}");
        assert_eq!(u(&after, "mmu.mosaic_tlb.hits"), 256 - walks, "{preset}");
    }
}

#[test]
fn a_missing_cpfn_is_a_partial_miss_that_walks() {
    // Pages 0 and 1 mapped, 2 and 3 not yet: the first walk fills an entry half valid.
    let (mut sim, va) = region("mosaic", 2 * 4096);
    for page in [0, 1] {
        sim.step(&load_of_page(va, 0, page)).unwrap();
    }
    let s = now(&sim);
    assert_eq!((u(&s, "mmu.walks"), u(&s, "mmu.mosaic_tlb.hits")), (1, 1));
    // Page 2: its entry is there without its CPFN, a miss that walks, finds no mapping and
    // faults; the re-executed access misses the same way and its walk refills the entry.
    sim.step(&load_of_page(va, 0, 2)).unwrap();
    let s = now(&sim);
    assert_eq!(u(&s, "mmu.mosaic_tlb.partial_misses"), 2);
    assert_eq!(u(&s, "mmu.mosaic_tlb.misses"), 3);
    assert_eq!((u(&s, "os.faults.minor"), u(&s, "mmu.walks")), (1, 3));
    // Page 2 now hits; page 3 is still missing from the entry.
    sim.step(&load_of_page(va, 0, 2)).unwrap();
    sim.step(&load_of_page(va, 0, 3)).unwrap();
    let s = now(&sim);
    assert_eq!(u(&s, "mmu.mosaic_tlb.hits"), 2);
    assert_eq!(u(&s, "mmu.mosaic_tlb.partial_misses"), 4);
    assert_eq!(u(&s, "verify.translations_checked"), 5);
}

#[test]
fn a_shootdown_clears_only_its_pages_cpfn() {
    let (mut sim, va) = region("mosaic", 1 << 20);
    for page in 0..4 {
        sim.step(&load_of_page(va, 0, page)).unwrap();
    }
    let gone = sim
        .address_spaces()
        .munmap(0, VirtAddr(va.0 + 3 * 4096), 4096)
        .unwrap();
    sim.shootdown(0, &gone);
    for page in 0..3 {
        sim.step(&load_of_page(va, 0, page)).unwrap();
    }
    let s = now(&sim);
    assert_eq!(u(&s, "mmu.mosaic_tlb.invalidations"), 1);
    assert_eq!(u(&s, "mmu.walks"), 1, "pages 0-2 kept their CPFNs");
    assert_eq!(u(&s, "mmu.mosaic_tlb.hits"), 6);
}

#[test]
fn the_pool_reports_its_utilisation() {
    let s = run(cfg(
        "mosaic",
        "gups",
        50_000,
        &detailed(&[
            "schemes.mosaic.pool_bytes=268435456",
            "workload.table_bytes=134217728",
            "workload.populate=true",
        ]),
    ));
    let frames = &s["os"]["frames"];
    assert_eq!(u(&s, "os.frames.pool_frames"), 65536);
    let used = u(&s, "os.frames.used_frames");
    // The 128 MiB table and a few pages besides, in a 256 MiB pool.
    assert!((32768..33000).contains(&used), "{used}");
    let util = frames["utilisation"].as_f64().unwrap();
    assert!((util - used as f64 / 65536.0).abs() < 1e-12);
    assert!(frames["first_conflict_utilisation"].is_null());
    let series = frames["utilisation_series"]["samples"].as_array().unwrap();
    assert!(series.len() >= 30, "one sample per 1/64 of the pool");
    let counts: Vec<u64> = series.iter().map(|p| p[1].as_u64().unwrap()).collect();
    assert!(
        counts.windows(2).all(|w| w[0] < w[1]),
        "filling: {counts:?}"
    );
}

#[test]
fn a_footprint_past_the_first_conflict_is_an_error_after_counting_it() {
    // A 64 MiB table in 64 MiB of pool: past the ~97.5% the iceberg table fills to.
    let e = Simulation::new(cfg(
        "mosaic",
        "gups",
        1000,
        &detailed(&[
            "schemes.mosaic.pool_bytes=67108864",
            "workload.table_bytes=67108864",
            "workload.populate=true",
        ]),
    ))
    .and_then(|mut s| s.run(&mut |_, _| Ok(())))
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(e.contains("associativity conflict"), "{e}");
}

#[test]
fn mosaic_config_errors_name_their_key() {
    for (ov, key) in [
        ("schemes.mosaic.arity=3", "schemes.mosaic.arity"),
        ("schemes.mosaic.arity=128", "schemes.mosaic.arity"),
        (
            "schemes.mosaic.front_yard_frames=300",
            "schemes.mosaic.front_yard_frames",
        ),
        (
            "schemes.mosaic.backyard_choices=0",
            "schemes.mosaic.backyard_choices",
        ),
        ("schemes.mosaic.tlb.ways=0", "schemes.mosaic.tlb.ways"),
        ("schemes.mosaic.tlb.entries=0", "schemes.mosaic.tlb.entries"),
        (
            "schemes.mosaic.tlb.page_sizes=[\"2M\"]",
            "schemes.mosaic.tlb.page_sizes",
        ),
        (
            "schemes.mosaic.pool_bytes=4097",
            "schemes.mosaic.pool_bytes",
        ),
    ] {
        let e = xlat::SimConfig::load("mosaic", &[ov.to_string()])
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{ov}: {e}");
    }
    // A pool of all memory leaves nothing for page tables: refused when the system is built.
    let e = Simulation::new(cfg(
        "mosaic",
        "gups",
        10,
        &["schemes.mosaic.pool_bytes=4294967296".to_string()],
    ))
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(e.contains("schemes.mosaic.pool_bytes"), "{e}");
}
