//! Swapping end to end: workloads larger than memory run under `--verify` on radix and on
//! Utopia (FlexSeg full), and restrictive-only Utopia pages out a full set's victim, which a
//! touch brings back as a major fault with a correct translation.

use xlat::os::MapKind;
use xlat::Simulation;

#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;
use sim::*;

/// Swapping on, with `bytes` of memory.
fn swap(bytes: u64) -> Vec<String> {
    vec![
        "os.swap.enabled=true".into(),
        format!("os.physmem.bytes={bytes}"),
        "sim.verify=true".into(),
        "sim.fast_forward=0".into(),
    ]
}

#[test]
fn a_table_twice_the_memory_swaps_and_every_translation_stays_correct() {
    // GUPS over 16 MiB in 8 MiB of memory: random updates keep paging pages out and in.
    let mut extra = swap(8 * MIB);
    extra.push(format!("workload.table_bytes={}", 16 * MIB));
    for preset in ["baseline-radix", "utopia"] {
        let mut extra = extra.clone();
        if preset == "utopia" {
            // A 1 MiB RestSeg: the FlexSeg (the rest) fills, and RestSeg conflicts move pages
            // into it while reclaim pages FlexSeg pages out.
            extra.push(
                "schemes.utopia.restsegs=[{bytes = 1048576, page = \"4K\", ways = 8}]".into(),
            );
        }
        let s = run(cfg(preset, "gups", 50_000, &extra));
        let refs = u(&s, "core.memory_refs");
        assert_eq!(u(&s, "verify.translations_checked"), refs, "{preset}");
        let (minor, major) = (u(&s, "os.faults.minor"), u(&s, "os.faults.major"));
        assert!(major > 1000, "{preset}: {major} major faults");
        assert_eq!(u(&s, "summary.faults"), minor + major, "{preset}");
        assert_eq!(u(&s, "os.swap.ins"), major, "{preset}");
        // A page faults minor once, at its first touch (at most the table's pages and a few
        // of the program's own); pages out = in + still out.
        assert!(minor <= 16 * MIB / 4096 + 64, "{preset}: {minor}");
        assert!(
            major > minor,
            "{preset}: a random table twice memory faults mostly major"
        );
        assert_eq!(
            u(&s, "os.swap.outs"),
            u(&s, "os.swap.ins") + u(&s, "os.swap.swapped"),
            "{preset}"
        );
        assert_eq!(u(&s, "os.swap.policy_outs"), 0, "{preset}");
        assert!(
            u(&s, "os.faults.cycles") >= u(&s, "os.swap.in_cycles") + u(&s, "os.swap.out_cycles"),
            "{preset}"
        );
    }
}

#[test]
fn pages_out_on_one_core_are_shot_down_on_every_core_that_runs_the_process() {
    // Four threads of GUPS over a table twice memory: a page one core pages out may sit in
    // another core's TLBs, and verify checks that none of them translates it stale.
    let mut extra = swap(8 * MIB);
    extra.extend([
        format!("workload.table_bytes={}", 16 * MIB),
        "workload.threads=4".into(),
        "sim.cores=4".into(),
    ]);
    let s = run(cfg("baseline-radix", "gups", 200_000, &extra));
    assert!(u(&s, "os.faults.major") > 0);
    assert!(
        u(&s, "verify.translations_checked") >= u(&s, "core.memory_refs"),
        "every translation checked"
    );
    assert!(
        u(&s, "system.shootdowns_remote") > 0,
        "page-outs reached other cores"
    );
}

#[test]
fn with_memory_to_spare_swapping_changes_nothing() {
    // The same run with swapping on and off: no page goes out, and the stats agree but for
    // the `os.swap` subtree.
    let extra = vec![
        format!("workload.table_bytes={}", 16 * MIB),
        format!("os.physmem.bytes={}", 64 * MIB),
        "sim.fast_forward=0".to_string(),
    ];
    let off = run(cfg("baseline-radix", "gups", 20_000, &extra));
    let mut on_extra = extra.clone();
    on_extra.push("os.swap.enabled=true".into());
    let mut on = run(cfg("baseline-radix", "gups", 20_000, &on_extra));
    assert_eq!(u(&on, "os.swap.outs"), 0);
    on["os"].as_object_mut().unwrap().remove("swap");
    assert_eq!(on, off);
}

/// Restrictive-only Utopia with one set of 8 ways: the 9th page pages a victim out, a touch
/// of the victim brings it back (evicting another), and every translation checks.
#[test]
fn restrictive_only_pages_out_a_full_sets_victim_and_faults_it_back() {
    let mut extra = swap(4 * MIB);
    extra.extend([
        format!("workload.table_bytes={}", 64 * MIB),
        "schemes.utopia.restsegs=[{bytes = 32768, page = \"4K\", ways = 8}]".into(),
        "schemes.utopia.flexseg=false".into(),
    ]);
    let mut sim = Simulation::new(cfg("utopia", "gups", 1000, &extra)).unwrap();
    let pid = 0;
    let va = sim
        .address_spaces()
        .mmap(pid, 9 * 4096, MapKind::Anon)
        .unwrap();
    let addr = |page: u64| xlat::addr::VirtAddr(va.0 + page * 4096);
    let at = |page: u64| load_of_page(va, pid, page);
    for page in 0..8 {
        sim.step(&at(page)).unwrap();
    }
    let s = sim.stats();
    assert_eq!(s.os.swap.map(|w| w.outs), Some(0));
    // Memory is mostly free, yet the 9th page of the set pushes one out.
    sim.step(&at(8)).unwrap();
    let s = sim.stats();
    let w = s.os.swap.unwrap();
    assert_eq!((w.outs, w.policy_outs, w.swapped), (1, 1, 1));
    assert_eq!(s.os.faults.minor, 9);
    assert!(s.os.physmem.free_frames > 512, "memory is not full");
    let out: Vec<u64> = (0..9)
        .filter(|&p| sim.truth(pid, addr(p)).is_none())
        .collect();
    assert_eq!(out.len(), 1, "exactly one page is out");
    let victim = out[0];
    // The victim is back: a major fault, costing a page-in, and another page is out now.
    let cycles = s.core.cycles;
    sim.step(&at(victim)).unwrap();
    let s = sim.stats();
    let w = s.os.swap.unwrap();
    assert_eq!((s.os.faults.minor, s.os.faults.major), (9, 1));
    assert_eq!((w.ins, w.outs, w.swapped), (1, 2, 1));
    assert!(
        s.core.cycles - cycles >= 26_000,
        "the page-in took its time"
    );
    assert!(sim.truth(pid, addr(victim)).is_some());
    // Every page translates (verify checks each against the OS, so no stale TLB entry of a
    // page that went out survives).
    for page in 0..9 {
        sim.step(&at(page)).unwrap();
    }
    let s = sim.stats();
    assert!(s.os.faults.major >= 2);
    assert_eq!(
        s.os.faults.major,
        s.os.swap.unwrap().ins,
        "every major fault read a page back"
    );
    let frames = s.os.frames.unwrap();
    let seg = &frames["restsegs"][0]["stats"];
    assert_eq!(
        seg["paged_out"].as_u64(),
        Some(s.os.swap.unwrap().policy_outs)
    );
    assert_eq!(seg["used"].as_u64(), Some(8));
}

#[test]
fn restrictive_only_runs_whole_workloads_under_verify_and_faults_more_than_flexible() {
    // DLRM's embedding tables at 8 MiB; 8 MiB of RestSeg (256 sets of 8: 16 ways of 28-bit
    // tags would not fit a line) plus 2 MiB for page tables. The tables' sizes are no multiple
    // of the sets' span, so the sets where they begin and end overflow, while the radix system
    // with the same memory never swaps.
    let mut extra = swap(10 * MIB);
    extra.push("workload.footprint=\"8MiB\"".into());
    let flexible = run(cfg("baseline-radix", "dlrm-sls", 500_000, &extra));
    extra.extend([
        "schemes.utopia.restsegs=[{bytes = 8388608, page = \"4K\", ways = 8}]".into(),
        "schemes.utopia.flexseg=false".into(),
    ]);
    let restrictive = run(cfg("utopia", "dlrm-sls", 500_000, &extra));
    for s in [&restrictive, &flexible] {
        assert_eq!(
            u(s, "verify.translations_checked"),
            u(s, "core.memory_refs")
        );
    }
    assert_eq!(u(&flexible, "os.swap.outs"), 0);
    assert!(flexible["os"]["faults"].get("major").is_none());
    let (r, f) = (
        u(&restrictive, "summary.faults"),
        u(&flexible, "summary.faults"),
    );
    assert!(r > f, "restrictive {r} faults, flexible {f}");
    // The same pages are touched first in both; the difference is the major faults.
    assert_eq!(u(&restrictive, "os.faults.minor"), f);
    assert_eq!(r - f, u(&restrictive, "os.swap.ins"));
    assert!(u(&restrictive, "os.swap.policy_outs") > 0);
    assert_eq!(
        u(&restrictive, "os.swap.policy_outs"),
        u(&restrictive, "os.swap.outs"),
        "memory never filled: every page-out was a set's"
    );
}

#[test]
fn swap_config_errors_name_their_key() {
    let load = |ov: &[&str]| {
        let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        xlat::SimConfig::load("utopia", &ov)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let e = load(&["schemes.utopia.flexseg=false"]);
    assert!(
        e.contains("schemes.utopia.flexseg") && e.contains("os.swap.enabled"),
        "{e}"
    );
    let e = load(&[
        "schemes.utopia.flexseg=false",
        "os.swap.enabled=true",
        "schemes.utopia.restsegs=[{bytes = 536870912, page = \"2M\", ways = 16}]",
    ]);
    assert!(e.contains("schemes.utopia.flexseg"), "{e}");
    let e = load(&["os.swap.enabled=true", "os.eager_paging=true"]);
    assert!(e.contains("os.swap.enabled"), "{e}");
    let e = load(&["os.swap.page_in=3"]);
    assert!(e.contains("page_in"), "{e}");
}

#[test]
fn fast_forward_leaves_memory_as_a_detailed_run_does_while_pages_go_out_and_come_back() {
    // Three passes of sequential reads over 16 MiB in 8 MiB of memory: every pass pages the
    // buffer out and back in. Skipped functionally, the records must fault as simulated ones
    // do (a skipped record on the page of the one before it is not looked up, which must
    // never hide a page that went out meanwhile), so both runs end with the same pages out
    // and the same frames free. (The fault counters start after a fast-forward: they are 0
    // in the skipped run.)
    let mut extra = swap(8 * MIB);
    extra.extend([
        format!("workload.total_bytes={}", 16 * MIB),
        "workload.oper=read".into(),
        "workload.access=seq".into(),
        "workload.populate=false".into(),
    ]);
    let refs = 3 * 16 * MIB / 8;
    let detailed = run(cfg("baseline-radix", "sysbench-mem", refs, &extra));
    extra.push("sim.fast_forward=1000000000000".into());
    let skipped = run(cfg("baseline-radix", "sysbench-mem", refs, &extra));
    assert_eq!(
        u(&skipped, "core.memory_refs"),
        0,
        "every record was skipped"
    );
    assert_eq!(u(&skipped, "fast_forward.records"), refs);
    assert_eq!(u(&detailed, "os.faults.major"), 2 * 16 * MIB / 4096);
    assert!(u(&detailed, "os.swap.swapped") > 0);
    for key in ["os.swap.swapped", "os.physmem.free_frames", "os.pt_bytes"] {
        assert_eq!(u(&skipped, key), u(&detailed, key), "{key}");
    }
}

/// GUPS over a populated 64 MiB table with `preset` and swapping by `policy`, 1.19 times the
/// 54 MiB its data pages may use: Mosaic's pool (216 buckets of 64 frames) in 128 MiB of
/// memory, or all of memory for the vanilla comparator.
fn over_54_mib(preset: &str, policy: &str, refs: u64) -> serde_json::Value {
    let pool = 54 * MIB;
    let memory = if preset == "mosaic" { 128 * MIB } else { pool };
    let mut extra = swap(memory);
    extra.extend([
        format!("workload.table_bytes={}", 64 * MIB),
        "workload.populate=true".into(),
        format!("schemes.mosaic.pool_bytes={pool}"),
        format!("os.swap.policy=\"{policy}\""),
    ]);
    run(cfg(preset, "gups", refs, &extra))
}

/// The swap I/O every policy counts the same way: a page goes out once per time it comes in
/// or stays out, and every major fault is a page-in.
fn check_io(s: &serde_json::Value, what: &str) {
    assert_eq!(
        u(s, "verify.translations_checked"),
        u(s, "core.memory_refs"),
        "{what}"
    );
    assert!(u(s, "os.swap.ins") > 1000, "{what}");
    assert_eq!(u(s, "os.swap.ins"), u(s, "os.faults.major"), "{what}");
    assert_eq!(
        u(s, "os.swap.outs"),
        u(s, "os.swap.ins") + u(s, "os.swap.swapped"),
        "{what}"
    );
}

#[test]
fn mosaic_swaps_by_horizon_lru_beyond_its_pool_and_verifies() {
    let s = over_54_mib("mosaic", "horizon", 100_000);
    check_io(&s, "horizon");
    // Every page out is Horizon's: a ghost's frame reused, or a conflict's LRU candidate.
    let outs = u(&s, "os.swap.outs");
    assert_eq!(u(&s, "os.swap.policy_outs"), outs);
    let ghosts = u(&s, "os.swap.ghost_outs");
    let live = u(&s, "os.frames.live_evictions");
    assert!(ghosts > 0 && live > 0, "{ghosts} {live}");
    assert_eq!(u(&s, "os.frames.ghost_evictions"), ghosts);
    assert_eq!(live, u(&s, "os.frames.conflicts"));
    assert!(u(&s, "os.frames.horizon") > 0);
    // Table 3: the first conflict near 98 %, the steady state above it (ghosts fill frames).
    let first = f(&s, "os.frames.first_conflict_utilisation");
    let steady = f(&s, "os.frames.steady_state_utilisation");
    assert!((0.95..0.995).contains(&first), "{first}");
    assert!(steady > first && steady <= 1.0, "{steady} after {first}");
    eprintln!(
        "horizon: outs {outs} (ghosts {ghosts}, conflicts {live}), ins {}, revivals {}, \
         first conflict {first:.4}, steady state {steady:.4}",
        u(&s, "os.swap.ins"),
        u(&s, "os.swap.revivals"),
    );
}

/// BTree (fanout 8, 2.6M keys: 66 MiB of nodes) at 1.2 times the 54 MiB its data may use, as
/// `mosaic-table4` runs it: both policies swap under `--verify`, whose every translation is
/// checked, through the populate that already overflows memory and the lookups after it.
#[test]
fn btree_at_1_2x_the_pool_swaps_by_both_policies_and_verifies() {
    for (preset, policy) in [("mosaic", "horizon"), ("mosaic-vanilla", "lru")] {
        let pool = 54 * MIB;
        let memory = if preset == "mosaic" { 128 * MIB } else { pool };
        let mut extra = swap(memory);
        extra.extend([
            "workload.keys=2600000".into(),
            "workload.fanout=8".into(),
            "workload.populate=true".into(),
            format!("schemes.mosaic.pool_bytes={pool}"),
            format!("os.swap.policy=\"{policy}\""),
        ]);
        let s = run(cfg(preset, "btree", 300_000, &extra));
        check_io(&s, policy);
        if preset == "mosaic" {
            let first = f(&s, "os.frames.first_conflict_utilisation");
            assert!((0.97..0.99).contains(&first), "{first}");
        }
    }
}

#[test]
fn horizon_and_lru_runs_verify_through_fast_forward() {
    // Skip the first 100,000 instructions (skipped records stamp their pages too, and their
    // faults page out), warm, then detail; verify fails the run on any stale translation.
    for (preset, policy) in [("mosaic", "horizon"), ("mosaic-vanilla", "lru")] {
        let pool = 54 * MIB;
        let memory = if preset == "mosaic" { 128 * MIB } else { pool };
        let mut extra = swap(memory);
        extra.extend([
            format!("workload.table_bytes={}", 64 * MIB),
            "workload.populate=false".into(),
            format!("schemes.mosaic.pool_bytes={pool}"),
            format!("os.swap.policy={policy}"),
            "sim.fast_forward=100000".into(),
        ]);
        let s = run(cfg(preset, "gups", 100_000, &extra));
        assert!(u(&s, "fast_forward.records") > 0, "{policy}");
        assert!(u(&s, "os.swap.ins") > 0, "{policy}");
        assert!(u(&s, "verify.translations_checked") >= u(&s, "core.memory_refs"));
    }
}

#[test]
fn the_vanilla_comparator_swaps_by_lru_from_99_2_percent_and_verifies() {
    let s = over_54_mib("mosaic-vanilla", "lru", 100_000);
    check_io(&s, "lru");
    assert_eq!(u(&s, "os.swap.policy_outs"), 0);
    // The default low watermark: reclaim first pages out with 0.8 % of memory free.
    let first = f(&s, "os.swap.first_out_utilisation");
    assert!((0.991..0.993).contains(&first), "{first}");
    eprintln!(
        "lru: outs {}, ins {}, first page-out at {first:.4}",
        u(&s, "os.swap.outs"),
        u(&s, "os.swap.ins")
    );
}

#[test]
fn fifo_stays_the_default_and_lru_chooses_other_victims() {
    // Naming `fifo` changes nothing; `lru` pages out by access time, so other pages go.
    let mut extra = swap(54 * MIB);
    extra.extend([
        format!("workload.table_bytes={}", 64 * MIB),
        "workload.populate=true".into(),
    ]);
    let default = run(cfg("mosaic-vanilla", "gups", 50_000, &extra));
    let fifo = over_54_mib("mosaic-vanilla", "fifo", 50_000);
    let lru = over_54_mib("mosaic-vanilla", "lru", 50_000);
    assert_eq!(default, fifo);
    check_io(&fifo, "fifo");
    check_io(&lru, "lru");
    assert_ne!(u(&fifo, "os.swap.ins"), u(&lru, "os.swap.ins"));
}

#[test]
fn swap_policies_are_checked_against_the_scheme() {
    let err = |preset: &str, extra: &[&str]| {
        let ov: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        xlat::SimConfig::load(preset, &ov).unwrap_err().to_string()
    };
    let e = err(
        "baseline-radix",
        &["os.swap.enabled=true", "os.swap.policy=\"horizon\""],
    );
    assert!(e.contains("os.swap.policy") && e.contains("iceberg"), "{e}");
    let e = err(
        "mosaic",
        &["os.swap.enabled=true", "os.swap.policy=\"lru\""],
    );
    assert!(e.contains("os.swap.policy") && e.contains("horizon"), "{e}");
    let e = err("mosaic", &["os.swap.policy=\"horizon\""]);
    assert!(e.contains("os.swap.enabled"), "{e}");
    let e = err(
        "baseline-radix",
        &[
            "os.swap.enabled=true",
            "os.swap.low_watermark=0.02",
            "os.swap.high_watermark=0.01",
        ],
    );
    assert!(e.contains("os.swap.high_watermark"), "{e}");
    let e = err("baseline-radix", &["os.swap.low_watermark=1.5"]);
    assert!(e.contains("os.swap.low_watermark"), "{e}");
}

#[test]
fn with_the_pool_to_spare_horizon_swapping_changes_nothing() {
    // Stamping every reference costs no simulated time: the same run with Horizon LRU on
    // and swapping off agrees but for the swap and Horizon stats.
    let extra = vec![
        format!("workload.table_bytes={}", 16 * MIB),
        format!("os.physmem.bytes={}", 128 * MIB),
        "sim.fast_forward=0".to_string(),
    ];
    let off = run(cfg("mosaic", "gups", 20_000, &extra));
    let mut on_extra = extra.clone();
    on_extra.extend([
        "os.swap.enabled=true".into(),
        "os.swap.policy=\"horizon\"".into(),
    ]);
    let mut on = run(cfg("mosaic", "gups", 20_000, &on_extra));
    assert_eq!(u(&on, "os.swap.outs"), 0);
    on["os"].as_object_mut().unwrap().remove("swap");
    let frames = on["os"]["frames"].as_object_mut().unwrap();
    assert_eq!(frames.remove("horizon"), Some(0.into()));
    assert_eq!(frames.remove("ghost_frames"), Some(0.into()));
    assert_eq!(on, off);
}

/// The float at dotted `path`.
fn f(v: &serde_json::Value, path: &str) -> f64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number"))
}

/// SPARTA confines each page to its partition: a partition that fills while memory as a whole
/// keeps its free frames is reclaimed on its own (as Linux reclaims a NUMA node), so a table
/// twice memory runs at the default watermarks with every translation correct, by either
/// reclaim order. Without the partition's own reclaim the first full partition's fault is
/// out of memory.
#[test]
fn a_full_partition_is_reclaimed_on_its_own() {
    for policy in ["fifo", "lru"] {
        // 32 partitions of 2 MiB.
        let mut extra = swap(64 * MIB);
        extra.push(format!("workload.table_bytes={}", 128 * MIB));
        extra.push(format!("os.swap.policy=\"{policy}\""));
        let s = run(cfg("sparta-32", "gups", 200_000, &extra));
        let refs = u(&s, "core.memory_refs");
        assert_eq!(u(&s, "verify.translations_checked"), refs, "{policy}");
        assert!(u(&s, "os.faults.major") > 1000, "{policy}");
        let reclaims = u(&s, "os.swap.region_reclaims");
        assert!(reclaims > 0, "{policy}: no partition was reclaimed");
        let refused: u64 = s["os"]["frames"]["refused_by_partition"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_u64().unwrap())
            .sum();
        // Each refusal was followed by its partition's reclaim and a second, successful try.
        assert_eq!(refused, reclaims, "{policy}");
    }
}
