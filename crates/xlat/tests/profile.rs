//! Translation-only runs (`sim.timing = "translation"`) and the TLB profile
//! (`[profile.tlb]`) against detailed runs and the engine's own TLB.

// Only the run helpers are needed here.
#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;

use serde_json::Value;
use sim::{cfg, run};

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Every leaf of `part` (a subtree of a translation-only run's stats) equals the same leaf
/// of `whole` (the detailed run's); `path` names where in the tree.
fn leaves_equal(part: &Value, whole: &Value, path: &str) {
    match part {
        Value::Object(map) => {
            for (k, v) in map {
                let there = whole
                    .get(k)
                    .unwrap_or_else(|| panic!("{path}.{k}: not in the detailed run's stats"));
                leaves_equal(v, there, &format!("{path}.{k}"));
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                leaves_equal(v, &whole[i], &format!("{path}[{i}]"));
            }
        }
        leaf => assert_eq!(leaf, whole, "{path}"),
    }
}

/// On one core, with no OS behaviour that depends on time (radix 4 KiB pages: no THP, no
/// swapping, no migration, no aging scans), what the MMU and the OS do is a function of the
/// sequence of references alone: every TLB and page-walk-cache lookup, fill and eviction,
/// every walk (and the page-table entries it reads, counted by kind), every fault. A
/// translation-only run translates the same references in the same order, through the same
/// MMU, and handles the same faults, so every count it reports must equal the detailed
/// run's: the TLBs' hits and misses, walks, walk references by kind, faults, instructions,
/// loads and stores. What it leaves out (cycles, IPC, latencies, caches, DRAM, walk
/// references by the level that served them) is absent, not zero.
#[test]
fn translation_only_counts_what_a_detailed_run_counts() {
    for (workload, extra) in [
        ("gups", vec![]),
        ("bfs", vec!["workload.footprint=\"32MiB\""]),
        ("xsbench", vec!["workload.footprint=\"64MiB\""]),
    ] {
        let mut over = strings(&extra);
        over.push("sim.warmup_instructions=50000".into());
        let detailed = run(cfg("baseline-radix", workload, 150_000, &over));
        over.push("sim.timing=\"translation\"".into());
        let translation = run(cfg("baseline-radix", workload, 150_000, &over));
        assert_eq!(translation["timing"], "translation");
        assert_eq!(detailed["timing"], "detailed");
        for key in [
            "summary",
            "core",
            "mmu",
            "walk",
            "os",
            "fast_forward",
            "verify",
        ] {
            leaves_equal(&translation[key], &detailed[key], key);
        }
        let walks = translation["walk"]["walks"].as_u64().unwrap();
        assert!(walks > 100, "{workload}: {walks} walks");
        assert!(translation["os"]["faults"]["minor"].as_u64().unwrap() > 0);
        // Timing is absent, at every depth.
        for gone in [
            &translation["summary"]["ipc"],
            &translation["summary"]["cycles"],
            &translation["summary"]["avg_walk_latency"],
            &translation["core"]["cycles"],
            &translation["walk"]["refs"]["by_level"],
            &translation["mmu"]["walk_cycles"],
            &translation["cache"],
            &translation["dram"],
        ] {
            assert!(gone.is_null(), "{workload}: {gone}");
        }
        assert!(detailed["summary"]["cycles"].as_u64().unwrap() > 0);
    }
}

/// A translation-only run with `--verify` checks every translation, as a detailed one does.
#[test]
fn translation_only_verifies() {
    let over = strings(&["sim.timing=\"translation\"", "sim.verify=true"]);
    let s = run(cfg("baseline-radix", "gups", 50_000, &over));
    assert_eq!(
        s["verify"]["translations_checked"],
        s["mmu"]["translations"]
    );
}

/// The system with a single data TLB of 1024 4 KiB entries, `ways`-way LRU, and no other
/// (no huge-page arrays, no L2 TLB), profiling arities 1 and 4 at every set count of 1024
/// entries.
fn single_tlb(workload: &str, ways: u32, extra: &[&str]) -> Value {
    let mut over = strings(&[
        "mmu.l1tlb.4k.entries=1024",
        "mmu.l1tlb.4k.replacement=\"lru\"",
        "mmu.l1tlb.2m.entries=0",
        "mmu.l1tlb.1g.entries=0",
        "mmu.l2tlb.unified.entries=0",
        "mmu.l2tlb.1g.entries=0",
        "profile.tlb.entries=[1024]",
        "profile.tlb.arity=[1, 4]",
        "sim.warmup_instructions=20000",
    ]);
    over.push(format!("mmu.l1tlb.4k.ways={ways}"));
    over.extend(strings(extra));
    run(cfg("baseline-radix", workload, 120_000, &over))
}

/// The profile's row of `arity` and `sets` sets.
fn row(s: &Value, arity: u64, sets: u64) -> &Value {
    s["profile"]["tlb"]["misses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["arity"] == arity && r["sets"] == sets)
        .unwrap_or_else(|| panic!("no row for arity {arity}, {sets} sets"))
}

/// The profile counts every data reference's 4 KiB page before any TLB. With the engine's
/// TLB hierarchy reduced to one plain LRU array of 4 KiB pages (radix with 4 KiB pages, no
/// L2 TLB, no huge-page arrays, nothing shot down), that array sees exactly that stream, is
/// filled at each miss (by the walk, or by the walk after the fault), and so misses exactly
/// as often as the profile's row of its geometry says: in every timing mode, for
/// fully associative, set-associative and direct-mapped arrays.
#[test]
fn the_profile_counts_what_the_engines_own_tlb_counts() {
    for (workload, extra) in [
        ("gups", vec!["workload.footprint=\"16MiB\""]),
        ("bfs", vec!["workload.footprint=\"32MiB\""]),
    ] {
        for (ways, timing) in [
            (1024, "detailed"),
            (64, "translation"),
            (8, "detailed"),
            (1, "translation"),
        ] {
            let mut extra = extra.clone();
            let t = format!("sim.timing=\"{timing}\"");
            extra.push(&t);
            let s = single_tlb(workload, ways, &extra);
            let sets = 1024 / u64::from(ways);
            let l1 = &s["mmu"]["l1tlb"];
            let r = row(&s, 1, sets);
            let what = format!("{workload} {sets} sets x {ways} ways ({timing})");
            assert_eq!(r["misses"], l1["misses"], "{what}");
            assert_eq!(s["profile"]["tlb"]["references"], l1["accesses"], "{what}");
            assert_eq!(s["profile"]["tlb"]["invalidated_pages"], 0, "{what}");
            assert!(l1["misses"].as_u64().unwrap() > 0, "{what}");
            // Arity 4 holds four pages per entry: never more misses than arity 1 at the same
            // geometry beyond its forced first touches.
            let r4 = row(&s, 4, sets);
            assert!(
                r4["misses"].as_u64().unwrap()
                    <= r["misses"].as_u64().unwrap() + r4["forced"].as_u64().unwrap(),
                "{what}"
            );
        }
    }
}

/// Forced misses are the faulting references of the measured part: as many as its minor
/// faults (no swapping), at every arity above 1, and none at arity 1.
#[test]
fn forced_misses_are_the_first_touches() {
    let s = single_tlb("gups", 16, &["workload.footprint=\"16MiB\""]);
    let faults = s["os"]["faults"]["minor"].as_u64().unwrap();
    assert!(faults > 0);
    assert_eq!(row(&s, 4, 64)["forced"], faults);
    assert_eq!(row(&s, 1, 64)["forced"], 0);
}

/// Same config, same seed: the same profile, in either timing mode's own repeat.
#[test]
fn the_profile_is_deterministic() {
    let a = single_tlb("gups", 4, &["sim.timing=\"translation\""]);
    let b = single_tlb("gups", 4, &["sim.timing=\"translation\""]);
    assert_eq!(a["profile"], b["profile"]);
    assert_eq!(a["profile"]["tlb"]["misses"].as_array().unwrap().len(), 22);
}

/// Bad values of the new keys are errors naming them.
#[test]
fn bad_keys_are_named() {
    let err = |over: &[&str]| {
        xlat::SimConfig::load("baseline-radix", &strings(over))
            .unwrap_err()
            .to_string()
    };
    let e = err(&["sim.timing=\"fast\""]);
    assert!(e.contains("sim.timing"), "{e}");
    let e = err(&["profile.tlb.entries=[1024]", "profile.tlb.sets=[3]"]);
    assert!(e.contains("profile.tlb.sets"), "{e}");
    let e = err(&["profile.tlb.entries=[1024]", "profile.tlb.arity=[0]"]);
    assert!(e.contains("profile.tlb.arity"), "{e}");
    let e = err(&["profile.tlb.entries=[1024]", "sim.cores=2"]);
    assert!(e.contains("profile.tlb.entries"), "{e}");
    // Ways kept of no entry counts: nothing would be profiled.
    let e = err(&["profile.tlb.ways=[4]"]);
    assert!(e.contains("profile.tlb.ways"), "{e}");
}

/// The profile's rows are the misses of real mosaic TLBs: for each of Mosaic Fig 6's
/// geometries (a vanilla TLB and arities 4 to 64, 1024 entries at 1 to 1024 ways), a
/// translation-only run of that system with its own TLB at that geometry misses exactly as
/// often as its profile row says, under demand paging (every first touch faults inside the
/// measured part, so forced misses are counted too). A faulting reference looks the TLB up
/// twice (before the fault and when it re-executes) and the profile counts it once, so the
/// TLB's misses are the row's plus the faults; the row equals the walks that were not a
/// fault's second walk (`mmu.l2_misses`).
#[test]
fn the_profile_counts_what_real_mosaic_tlbs_count_at_every_fig6_geometry() {
    for (workload, size) in [
        ("bfs", "workload.footprint=\"8MiB\""),
        ("xsbench", "workload.footprint=\"8MiB\""),
        ("gups", "workload.table_bytes=67108864"),
    ] {
        for (preset, arity) in [
            ("mosaic-vanilla", 1u64),
            ("mosaic", 4),
            ("mosaic-8", 8),
            ("mosaic-16", 16),
            ("mosaic-32", 32),
            ("mosaic-64", 64),
        ] {
            for ways in (0..=10).map(|k| 1u64 << k) {
                let s = run(cfg(
                    preset,
                    workload,
                    30_000,
                    &strings(&[
                        size,
                        "sim.timing=\"translation\"",
                        "sim.warmup_instructions=5000",
                        "profile.tlb.entries=[1024]",
                        &format!("profile.tlb.arity=[{arity}]"),
                        &format!("schemes.mosaic.tlb.ways={ways}"),
                    ]),
                ));
                let what = format!("{workload} {preset} {ways}-way");
                let r = row(&s, arity, 1024 / ways);
                let tlb = &s["mmu"]["mosaic_tlb"];
                let faults = s["mmu"]["faults"].as_u64().unwrap();
                assert!(faults > 0, "{what}: no first touch in the measured part");
                assert_eq!(
                    r["misses"].as_u64().unwrap() + faults,
                    tlb["misses"].as_u64().unwrap(),
                    "{what}"
                );
                assert_eq!(r["misses"], s["mmu"]["l2_misses"], "{what}");
                assert_eq!(s["profile"]["tlb"]["invalidated_pages"], 0, "{what}");
                if arity > 1 {
                    assert_eq!(r["forced"].as_u64().unwrap(), faults, "{what}");
                }
            }
        }
    }
}
