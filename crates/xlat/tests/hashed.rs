//! End-to-end checks of the hashed page-table schemes (ECPT, ME-HPT) in the engine: every
//! translation verified, walks of one parallel step, the cost of contiguity, failures.

use xlat::{SimConfig, Simulation};

fn cfg(preset: &str, extra: &[&str]) -> xlat::SimConfig {
    let mut ov: Vec<String> = vec![
        "os.physmem.bytes=4294967296".into(),
        "os.physmem.fragmentation=0.0".into(),
        "workload.name=gups".into(),
        "workload.table_bytes=268435456".into(),
        "workload.references=200000".into(),
        "sim.verify=true".into(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    SimConfig::load(preset, &ov).unwrap()
}

fn run(c: xlat::SimConfig) -> xlat::Result<xlat::sim::Stats> {
    Simulation::new(c)?.run(&mut |_, _| Ok(()))
}

fn json(stats: &xlat::sim::Stats) -> serde_json::Value {
    serde_json::from_str(&stats.to_json()).unwrap()
}

#[test]
fn ecpt_and_mehpt_translate_every_reference_correctly() {
    for preset in ["ecpt", "mehpt", "utopia-ech"] {
        for populate in ["true", "false"] {
            let p = format!("workload.populate={populate}");
            let stats = run(cfg(preset, &[&p])).unwrap_or_else(|e| panic!("{preset}: {e}"));
            assert_eq!(stats.verify.translations_checked, 200_000, "{preset}");
            assert!(stats.summary.walks > 0, "{preset}");
            let j = json(&stats);
            assert!(j["walk"]["refs"]["by_kind"]["hpt"].as_u64().unwrap() > 0);
            assert!(
                j["walk"]["refs"]["by_kind"].get("pt1").is_none(),
                "radix refs"
            );
            let pt = &j["os"]["pt"]["0"]["total"];
            assert!(pt["current_bytes"].as_u64().unwrap() > 0, "{preset}: {pt}");
            // Utopia's ECH starts at 8192 lines per way: 256 MiB of 4 KiB pages fit without
            // growing; ME-HPT Table III tables start at 128 lines and must grow.
            if preset != "utopia-ech" {
                assert!(pt["upsizes"].as_u64().unwrap() > 0, "{preset}: {pt}");
            }
        }
    }
}

#[test]
fn a_walk_probes_the_ways_its_cwt_entry_names_in_one_step() {
    // 4 KiB pages only: the CWT entries allow the 4K table alone. With one-line sections (the
    // default) a cached PMD-CWT entry names the one way holding the line: one probe. A walk
    // that misses the PMD-CWC does not wait for the CWT: it probes all 3 ways of the 4K table
    // (the only table the process has) in parallel.
    let stats = run(cfg("ecpt", &["workload.references=100000"])).unwrap();
    let j = json(&stats);
    let hpt = j["walk"]["refs"]["by_kind"]["hpt"].as_u64().unwrap();
    let cwc = &j["mmu"]["cwc"];
    let (pmd_hits, pmd_misses) = (
        cwc["pmd"]["hits"].as_u64().unwrap(),
        cwc["pmd"]["misses"].as_u64().unwrap(),
    );
    assert_eq!(pmd_hits + pmd_misses, stats.summary.walks);
    assert_eq!(
        hpt,
        pmd_hits + 3 * pmd_misses,
        "one line per hit, three per miss"
    );
    // CWT reads only on CWC misses (beside the probes, to fill the CWC): 256 MiB spans 128
    // 2 MiB regions, more than 16 PMD-CWC entries, so some walks read the PMD-CWT; the one
    // 1 GiB region stays in the PUD-CWC.
    let cwt = j["walk"]["refs"]["by_kind"]["cwt"].as_u64().unwrap();
    assert!(pmd_misses > 0);
    assert_eq!(cwt, pmd_misses + cwc["pud"]["misses"].as_u64().unwrap());
    assert!(cwc["pud"]["hits"].as_u64().unwrap() > cwc["pud"]["misses"].as_u64().unwrap());
    // One mask per 2 MiB region: the 64 lines of a full region are spread over all 3 ways,
    // so walks probe all three, in the same single step, whether the PMD-CWC hits or not (a
    // sparsely mapped region's lines may sit in fewer ways).
    let coarse = run(cfg(
        "ecpt",
        &[
            "workload.references=100000",
            "schemes.hashed.table.cwt_section_lines=64",
        ],
    ))
    .unwrap();
    let j = json(&coarse);
    let hpt = j["walk"]["refs"]["by_kind"]["hpt"].as_u64().unwrap();
    let walks = coarse.summary.walks;
    assert!(
        hpt <= 3 * walks && hpt * 100 > 295 * walks,
        "{hpt} lines in {walks} walks"
    );
}

#[test]
fn mehpt_needs_less_contiguity_and_less_page_table_memory_than_ecpt() {
    let big = [
        "workload.table_bytes=2147483648",
        "workload.references=1000",
        "sim.verify=false",
    ];
    let e = json(&run(cfg("ecpt", &big)).unwrap());
    let m = json(&run(cfg("mehpt", &big)).unwrap());
    let total = |j: &serde_json::Value, k: &str| j["os"]["pt"]["0"]["total"][k].as_u64().unwrap();
    // 512K 4 KiB pages: ECPT ways of several MiB each, ME-HPT never more than a 1 MiB chunk.
    assert!(total(&e, "max_contiguous_bytes") >= 4 << 20);
    assert!(total(&m, "max_contiguous_bytes") <= 1 << 20);
    assert!(total(&m, "peak_bytes") < total(&e, "peak_bytes"));
    assert!(total(&m, "alloc_cycles") < total(&e, "alloc_cycles"));
}

#[test]
fn ecpt_compacts_at_0_7_fmfi_fails_cleanly_above_and_mehpt_runs() {
    let run_at = |preset: &str, fmfi: &str| {
        run(cfg(
            preset,
            &[
                "os.physmem.bytes=8589934592",
                &format!("os.physmem.fragmentation={fmfi}"),
                // Measured at 512 KiB blocks, so that hardly any 2 MiB block stays whole.
                "os.physmem.fragmentation_order=7",
                "workload.table_bytes=4294967296",
                "workload.references=1000",
            ],
        ))
    };
    // ME-HPT §III: at 0.7 FMFI the ways' multi-MiB blocks are found by compaction (no free
    // block that large is left after fragmentation).
    let stats = run_at("ecpt", "0.7").unwrap();
    let j = json(&stats);
    let pm = &j["os"]["physmem"];
    assert!(pm["compactions"].as_u64().unwrap() > 0, "{pm}");
    assert!(pm["compaction_moves"].as_u64().unwrap() > 0, "{pm}");
    assert!(
        j["os"]["faults"]["migrated"].as_u64().unwrap() > 0,
        "data pages moved too"
    );
    assert!(
        j["os"]["pt"]["0"]["total"]["max_contiguous_bytes"]
            .as_u64()
            .unwrap()
            >= 4 << 20
    );
    // Above the compaction limit the way cannot be allocated: a clean error.
    let err = run_at("ecpt", "0.95").unwrap_err().to_string();
    assert!(err.contains("contiguous"), "{err}");
    let stats = run_at("mehpt", "0.95").unwrap();
    assert_eq!(stats.verify.translations_checked, 1000);
}

#[test]
fn a_rehash_count_beyond_the_old_table_drains_it_and_does_no_more() {
    // 256 MiB of GUPS grows each 4 KiB way to 32K lines at most: 2^16 and the bound 2^24
    // both drain any old table at the first insertion, so the runs are identical. Each
    // insertion used to call the rehash step that many times per way whether a way was
    // resizing or not, which kept such a run going for hours.
    let at = |n: u32| {
        let c = cfg(
            "ecpt",
            &[&format!("schemes.hashed.table.rehash_per_insert={n}")],
        );
        json(&run(c).unwrap())
    };
    let (drained, bound) = (
        at(1 << 16),
        at(xlat::pt::hashed::config::MAX_REHASH_PER_INSERT),
    );
    assert_eq!(drained["os"]["pt"], bound["os"]["pt"]);
    assert_eq!(drained["summary"], bound["summary"]);
    assert!(
        drained["os"]["pt"]["0"]["total"]["upsizes"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn an_ecpt_way_grown_past_the_largest_buddy_block_is_an_error_not_a_panic() {
    // A 2 MiB way (32768 lines) upsized by 1024 (acting as 2^10) would be 2 GiB: one buddy
    // block holds at most 1 GiB, so the upsize must fail as out of memory. It used to reach
    // compaction, which indexed its per-order lists past the largest order and panicked.
    let err = run(cfg(
        "ecpt",
        &[
            "os.physmem.bytes=8589934592",
            "schemes.hashed.table.initial_lines=32768",
            "schemes.hashed.table.scale=1024",
            "schemes.hashed.table.downsize=0.0",
            "workload.table_bytes=4294967296",
        ],
    ))
    .unwrap_err()
    .to_string();
    assert!(err.contains("no free contiguous 2 GiB block"), "{err}");
}

#[test]
fn pages_migrated_by_compaction_during_the_run_are_remapped_and_shot_down() {
    // First touch on memory fragmented at 128 KiB blocks: growing the ways needs compaction,
    // which migrates data pages already mapped; every translation is still verified.
    let stats = run(cfg(
        "ecpt",
        &[
            "os.physmem.bytes=2147483648",
            "os.physmem.fragmentation=0.7",
            "os.physmem.fragmentation_order=5",
            "workload.table_bytes=1073741824",
            "workload.populate=false",
            "workload.references=400000",
        ],
    ))
    .unwrap();
    assert_eq!(stats.verify.translations_checked, 400_000);
    let j = json(&stats);
    let migrated = j["os"]["faults"]["migrated"].as_u64().unwrap();
    assert!(migrated > 0, "{}", j["os"]);
    // Each migrated page was shot down.
    assert!(
        j["mmu"]["shootdowns"].as_u64().unwrap() >= migrated,
        "{}",
        j["mmu"]
    );
}

#[test]
fn page_faults_pay_for_the_page_table_memory_they_allocate() {
    let stats = run(cfg("ecpt", &["workload.populate=false"])).unwrap();
    let f = &stats.os.faults;
    assert!(f.pt_alloc_cycles > 0);
    // ...and for the entries the table moves (rehashes, cuckoo re-insertions).
    assert!(f.pt_rehash_cycles > 0);
    assert_eq!(
        f.cycles,
        f.minor * 5000 + f.pt_alloc_cycles + f.pt_rehash_cycles
    );
}

#[test]
fn graph_workloads_verify_under_ecpt_and_mehpt() {
    for preset in ["ecpt", "mehpt"] {
        for kernel in ["bfs", "pr", "cc", "sssp", "tc"] {
            let c = SimConfig::load(
                preset,
                &[
                    "os.physmem.bytes=4294967296".into(),
                    "os.physmem.fragmentation=0.3".into(),
                    format!("workload.name={kernel}"),
                    "workload.scale=14".into(),
                    "workload.references=100000".into(),
                    "workload.populate=false".into(),
                    "sim.verify=true".into(),
                ],
            )
            .unwrap();
            let stats = run(c).unwrap_or_else(|e| panic!("{preset}/{kernel}: {e}"));
            // The measured references, and the fast-forward's replay of the set-up.
            assert_eq!(
                stats.verify.translations_checked,
                100_000 + stats.fast_forward.warmed_records,
                "{preset}/{kernel}"
            );
            assert!(stats.summary.faults > 0, "{preset}/{kernel}");
        }
    }
}
