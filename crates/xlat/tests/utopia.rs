//! Utopia end to end: correct translations on every built-in workload with RestSegs small
//! enough to overflow (evictions to the FlexSeg on the way), single- and multi-core; the
//! RestSeg walk serving pages without page walks; a full set evicting a page that still
//! translates afterwards; config errors naming their key.

use xlat::os::MapKind;
use xlat::Simulation;

// Each test crate uses some of the shared helpers.
#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;
use sim::*;

/// RestSegs of `bytes_4k` (4 KiB pages) and `bytes_2m` (2 MiB pages), 8-way: with few sets
/// the tags are long, and 16 of them no longer fit a cache line.
fn restsegs(bytes_4k: u64, bytes_2m: u64) -> String {
    format!(
        "schemes.utopia.restsegs=[{{bytes = {bytes_4k}, page = \"4K\", ways = 8}}, \
         {{bytes = {bytes_2m}, page = \"2M\", ways = 8}}]"
    )
}

/// Pages of each process in each RestSeg, summed: `[4K segment, 2M segment]`.
fn restseg_pages(s: &serde_json::Value) -> [u64; 2] {
    let mut pages = [0; 2];
    for p in s["os"]["pt"].as_object().unwrap().values() {
        for (i, seg) in p["restsegs"].as_array().unwrap().iter().enumerate() {
            pages[i] += seg["pages"].as_u64().unwrap();
        }
    }
    pages
}

#[test]
fn utopia_translates_every_workload_correctly_while_its_restsegs_overflow() {
    const REFS: u64 = 20_000;
    for (name, _) in xlat::workload::WORKLOADS {
        let extra = [
            // 1 MiB of 4 KiB slots (32 sets) and 64 MiB of 2 MiB slots (4 sets): small
            // enough that most workloads overflow them and evict to the FlexSeg.
            restsegs(MIB, 64 * MIB),
            "os.thp=\"always\"".into(),
            "sim.verify=true".into(),
            "sim.fast_forward=0".into(),
        ];
        let s = run(cfg("utopia", name, REFS, &extra));
        let refs = u(&s, "core.memory_refs");
        assert!(refs >= REFS, "{name}");
        assert_eq!(u(&s, "verify.translations_checked"), refs, "{name}");
        // The global TAR and the processes' TARs agree on how many pages each segment holds.
        let segs = &s["os"]["frames"]["restsegs"];
        let pages = restseg_pages(&s);
        for (i, held) in pages.iter().enumerate() {
            assert_eq!(u(&segs[i], "stats.used"), *held, "{name}: segment {i}");
        }
        // Every RestSeg hit was a translation that skipped the L2 TLB and the walk.
        assert!(u(&s, "mmu.rsw.hits") <= u(&s, "mmu.l1_misses"), "{name}");
        assert!(u(&s, "mmu.rsw.hits") > 0, "{name}: no RestSeg hit");
    }
}

#[test]
fn utopia_runs_multi_threaded_and_multi_programmed_with_shared_restsegs() {
    for (workload, extra) in [
        ("bfs", vec!["workload.threads=4".to_string()]),
        (
            "mix",
            vec![format!(
                "workload.members=[{{name = \"gups\", table_bytes = {GIB}}}, \
                 {{name = \"stream\", array_bytes = {}}}]",
                64 * MIB
            )],
        ),
    ] {
        let mut extra = extra;
        extra.extend([
            restsegs(16 * MIB, 64 * MIB),
            // The other slot order than the other tests': translations hold either way.
            "schemes.utopia.slot_order=\"way-major\"".into(),
            "sim.cores=4".into(),
            "sim.verify=true".into(),
        ]);
        let a = run(cfg("utopia", workload, 40_000, &extra));
        // Every translation checked, those of the fast-forward to the kernel included.
        assert!(
            u(&a, "verify.translations_checked") >= u(&a, "core.memory_refs"),
            "{workload}"
        );
        assert!(u(&a, "mmu.rsw.hits") > 0, "{workload}");
        // Deterministic: the same seed gives the same stats.
        let b = run(cfg("utopia", workload, 40_000, &extra));
        assert_eq!(a, b, "{workload}: two runs of one config differ");
    }
}

#[test]
fn pages_in_a_restseg_translate_without_page_walks_and_beat_radix_on_gups() {
    // A 256 MiB table fits the 512 MiB RestSeg of 4 KiB pages: every page lands there.
    let extra = [
        format!("workload.table_bytes={}", 256 * MIB),
        "workload.populate=true".to_string(),
        "sim.verify=true".to_string(),
    ];
    let radix = run(cfg("baseline-radix", "gups", 200_000, &extra));
    let utopia = run(cfg("utopia", "gups", 200_000, &extra));
    assert_eq!(restseg_pages(&utopia), [65536, 0]);
    assert!(
        utopia["os"]["faults"].get("evicted").is_none(),
        "no eviction"
    );
    // The RSW answers every L1 TLB miss of the table that the L2 TLB does not (the page
    // tables of the FlexSeg hold only the few pages of code and stack), so the radix walker
    // hardly works; an L2 TLB hit aborts the RSW, and every L1 TLB miss is one or the other.
    let (hits, l1_misses) = (u(&utopia, "mmu.rsw.hits"), u(&utopia, "mmu.l1_misses"));
    let (walks, aborted) = (u(&utopia, "mmu.rsw.walks"), u(&utopia, "mmu.rsw.aborted"));
    assert_eq!(walks + aborted, l1_misses);
    assert!(
        aborted > 0 && walks > aborted,
        "{walks} walks, {aborted} aborted"
    );
    assert!(hits * 100 >= walks * 99, "RSW hits {hits} of {walks}");
    assert!(u(&utopia, "summary.walks") * 100 < u(&radix, "summary.walks"));
    // SF and TAR lines are read through the caches under their own kinds.
    assert!(u(&utopia, "mmu.rsw.refs") > 0);
    assert!(u(&utopia, "cache.l1d.by_kind.tar.misses") > 0);
    let (c_radix, c_utopia) = (u(&radix, "summary.cycles"), u(&utopia, "summary.cycles"));
    assert!(
        c_utopia < c_radix,
        "cycles: utopia {c_utopia}, radix {c_radix}"
    );
}

#[test]
fn a_full_set_evicts_a_page_to_the_flexseg_where_it_still_translates() {
    // One set of 8 ways: the 9th page evicts one of the first 8.
    let c = cfg(
        "utopia",
        "gups",
        1000,
        &[
            format!("workload.table_bytes={}", 64 * MIB),
            format!(
                "schemes.utopia.restsegs=[{{bytes = {}, page = \"4K\", ways = 8}}]",
                32 * 1024
            ),
            "sim.verify=true".into(),
            "sim.fast_forward=0".into(),
        ],
    );
    let mut sim = Simulation::new(c).unwrap();
    let pid = 0;
    let va = sim
        .address_spaces()
        .mmap(pid, 9 * 4096, MapKind::Anon)
        .unwrap();
    let at = |page: u64| load_of_page(va, pid, page);
    for page in 0..8 {
        sim.step(&at(page)).unwrap();
    }
    assert_eq!(sim.stats().os.faults.evicted, 0);
    sim.step(&at(8)).unwrap();
    let stats = sim.stats();
    assert_eq!(stats.os.faults.evicted, 1);
    assert!(
        stats.os.faults.copy_cycles > 0,
        "the copy ran through the hierarchy"
    );
    // Every page still translates (verify checks each against the OS): 8 in the set, the
    // evicted one through the FlexSeg's radix table.
    let walks = stats.walk.walks;
    for page in 0..9 {
        sim.step(&at(page)).unwrap();
    }
    assert!(
        sim.stats().walk.walks > walks,
        "the evicted page was walked"
    );
}

/// 64 MiB of GUPS over a 1 MiB RestSeg, migrating a page after `walks` walks with one DRAM
/// reference: nearly every page lives in the FlexSeg, and migrations evict one another.
fn migrating_gups(walks: u32, extra: &str) -> xlat::SimConfig {
    cfg(
        "utopia",
        "gups",
        100_000,
        &[
            format!("workload.table_bytes={}", 64 * MIB),
            "workload.populate=true".into(),
            restsegs(MIB, 64 * MIB),
            format!("schemes.utopia.migrate_walks={walks}"),
            "schemes.utopia.migrate_dram_refs=1".into(),
            extra.to_string(),
        ],
    )
}

#[test]
fn costly_flexseg_pages_migrate_into_the_restseg_and_still_translate() {
    // 64 MiB of GUPS over a 1 MiB RestSeg: nearly every page lives in the FlexSeg, and the
    // pages whose walks reach the thresholds move in, evicting others.
    let run_with = |walks: u32| run(migrating_gups(walks, "sim.verify=true"));
    let on = run_with(2);
    let promoted = u(&on, "os.promoted");
    assert!(promoted > 100, "promoted {promoted}");
    // Each promotion into a full set evicts a page back to the FlexSeg.
    assert!(u(&on, "os.faults.evicted") >= promoted / 2);
    assert!(u(&on, "os.faults.copy_cycles") > 0);
    let off = run_with(0);
    assert_eq!(u(&off, "os.promoted"), 0, "migration off");
    // Migration brings pages walked again and again into the RestSeg: more RSW hits.
    assert!(u(&on, "mmu.rsw.hits") > u(&off, "mmu.rsw.hits"));
}

#[test]
fn restseg_config_errors_name_their_key() {
    let load = |ov: &str| {
        let c = cfg("utopia", "gups", 1000, &[ov.to_string()]);
        Simulation::new(c)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let e = load("schemes.utopia.restsegs=[{bytes = 536870912, page = \"2M\", ways = 32}]");
    assert!(e.contains("schemes.utopia.restsegs[0].ways"), "{e}");
    let e = load("schemes.utopia.restsegs=[{bytes = 8589934592, page = \"4K\", ways = 16}]");
    assert!(e.contains("os.physmem.bytes"), "{e}");
    let e = xlat::SimConfig::load("utopia", &["schemes.utopia.tar_cache_bytes=100".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("schemes.utopia.tar_cache_bytes"), "{e}");
    let e = xlat::SimConfig::load("utopia", &["schemes.utopia.migrate_walks=16".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("schemes.utopia.migrate_walks"), "{e}");
    let e = xlat::SimConfig::load("utopia", &["schemes.utopia.decay_interval=1000".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("schemes.utopia.decay_interval"), "{e}");
    assert!(e.contains("at least 1024"), "{e}");
    let e = xlat::SimConfig::load("utopia", &["schemes.utopia.decay_interval=-1".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("schemes.utopia.decay_interval"), "{e}");
    for ok in ["0", "1024", "1000000"] {
        let key = format!("schemes.utopia.decay_interval={ok}");
        xlat::SimConfig::load("utopia", &[key]).unwrap();
    }
}

#[test]
fn decaying_counters_stop_the_churn_and_their_passes_cost_memory_traffic() {
    // Migration after 2 walks (one DRAM reference): without decay nearly every page of the
    // 64 MiB table reaches it and migrations evict one another; with a pass every 1024
    // walks, a page needs 2 of the 16K pages' walks within about two passes.
    let churn = run(migrating_gups(2, "schemes.utopia.decay_interval=0"));
    let decayed = run(migrating_gups(2, "schemes.utopia.decay_interval=1024"));
    let checked = run(migrating_gups(2, "sim.verify=true"));
    assert!(u(&checked, "verify.translations_checked") > 0);
    let (before, after) = (u(&churn, "os.promoted"), u(&decayed, "os.promoted"));
    assert!(
        after * 4 < before,
        "promoted {before} without decay, {after} with"
    );
    // Without decay there is no pass, and no `aging` subtree.
    assert!(churn["os"].get("aging").is_none());
    // Each pass is counted, read every line of the table's pages and wrote some back, and the
    // cores waited for it.
    let passes = u(&decayed, "os.aging.passes");
    let walks = u(&decayed, "walk.walks");
    assert!(
        passes > 0 && passes <= walks / 1024 + 1,
        "{passes} passes, {walks} walks"
    );
    let read = u(&decayed, "os.aging.lines_read");
    // Each pass reads the table's 32 leaf tables (64 MiB, within one pass's window) whole,
    // and the lines of the upper tables on the way to them.
    assert!(read > passes * 32 * 64, "{read} lines in {passes} passes");
    assert!(read < passes * 33 * 64, "{read} lines in {passes} passes");
    let written = u(&decayed, "os.aging.lines_written");
    assert!(written > 0 && written <= read);
    assert!(u(&decayed, "os.aging.entries") >= written);
    assert!(u(&decayed, "os.aging.cycles") > 0);
}

/// `mmu.translation_cycles` (Fig 16b) adds up, for every scheme, the cycles from each L1 TLB
/// miss until the translation is known. Radix has no side path and no L3 TLB, so it is
/// exactly the L2 TLB lookup of each L1 miss plus the walker queueing and the walks (failed
/// walks of faults and the walks after them included).
#[test]
fn translation_cycles_add_up_the_lookups_and_walks_past_the_l1_tlb() {
    // The presets' L2 TLB latency.
    const L2_LATENCY: u64 = 12;
    // The table fits Utopia's default RestSeg of 4 KiB pages.
    let extra = [format!("workload.table_bytes={}", 64 * MIB)];
    let mut got = std::collections::BTreeMap::new();
    for scheme in [
        "baseline-radix",
        "ecpt",
        "rmm",
        "pom-tlb",
        "perfect-tlb",
        "utopia",
    ] {
        let s = run(cfg(scheme, "gups", 20_000, &extra));
        let cycles = u(&s, "mmu.translation_cycles");
        let l1_misses = u(&s, "mmu.l1_misses");
        let walked = u(&s, "mmu.walk_cycles") + u(&s, "mmu.walker_queue_cycles");
        if scheme == "perfect-tlb" {
            assert_eq!((cycles, l1_misses), (0, 0), "a perfect TLB never misses");
            continue;
        }
        assert!(u(&s, "mmu.walks") > 0, "{scheme}: no walks");
        assert!(cycles >= walked, "{scheme}: {cycles} < {walked}");
        assert!(cycles > walked, "{scheme}: L2 lookups not counted");
        if scheme == "baseline-radix" {
            assert_eq!(cycles, l1_misses * L2_LATENCY + walked);
        }
        got.insert(scheme, cycles / l1_misses);
    }
    // With every page mapped before the run (no faults), Utopia's RestSeg walk answers the
    // misses of the table, which fits its RestSeg, in fewer cycles than radix walks do.
    let mapped = [
        format!("workload.table_bytes={}", 64 * MIB),
        "workload.populate=true".to_string(),
    ];
    let avg = |scheme| {
        let s = run(cfg(scheme, "gups", 20_000, &mapped));
        u(&s, "mmu.translation_cycles") as f64 / u(&s, "mmu.l1_misses") as f64
    };
    let (radix, utopia) = (avg("baseline-radix"), avg("utopia"));
    assert!(
        utopia < radix,
        "utopia {utopia}, radix {radix}; cold: {got:?}"
    );
}

/// Fig 19's time series: each epoch sample says how many slots of each RestSeg are in use,
/// rising to the segment's slots on a footprint beyond it and never above them.
#[test]
fn epochs_sample_restseg_use_up_to_the_slots() {
    let extra = [
        format!("workload.table_bytes={}", 64 * MIB),
        // 256 slots of 4 KiB, 32 of 2 MiB.
        restsegs(MIB, 64 * MIB),
        "sim.epoch_instructions=5000".into(),
        "sim.warmup_instructions=2000".into(),
    ];
    let s = run(cfg("utopia", "gups", 20_000, &extra));
    let slots: Vec<u64> = (0..2)
        .map(|i| u(&s["os"]["frames"]["restsegs"][i], "stats.slots"))
        .collect();
    assert_eq!(slots, [256, 32]);
    let epochs = s["epochs"].as_array().unwrap();
    assert!(epochs.len() >= 3, "{} epochs", epochs.len());
    let mut last = 0;
    for e in epochs {
        let used: Vec<u64> = e["restseg_used"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(used.len(), 2);
        assert!(used[0] <= slots[0] && used[1] <= slots[1], "{used:?}");
        // GUPS never unmaps: the 4 KiB segment only fills.
        assert!(used[0] >= last, "{used:?} after {last}");
        last = used[0];
    }
    assert_eq!(last, slots[0], "the 64 MiB table fills the 1 MiB segment");
    // Without RestSegs the samples have no such field.
    let radix = run(cfg(
        "baseline-radix",
        "gups",
        20_000,
        &[extra[0].clone(), extra[2].clone(), extra[3].clone()],
    ));
    let epochs = radix["epochs"].as_array().unwrap();
    assert!(!epochs.is_empty());
    assert!(epochs.iter().all(|e| e.get("restseg_used").is_none()));
}

/// Fig 20: every page that left the 4 KiB RestSeg (here all by eviction to the FlexSeg) is
/// in one bucket of RSW translations, by how it came in; migrated pages were reused.
#[test]
fn pages_leaving_a_restseg_fill_the_reuse_histograms() {
    let s = run(migrating_gups(2, "sim.warmup_instructions=20000"));
    let seg = &s["os"]["frames"]["restsegs"][0]["stats"];
    let sum = |o: &serde_json::Value| -> u64 {
        ["0", "1-5", "6-20", ">20"]
            .iter()
            .map(|k| o[*k].as_u64().unwrap())
            .sum()
    };
    let (migrated, faulted) = (
        sum(&seg["reuse"]["migrated"]),
        sum(&seg["reuse"]["faulted"]),
    );
    assert_eq!(migrated + faulted, u(seg, "evictions"), "{seg}");
    assert!(migrated > 0, "{seg}");
    assert!(migrated <= u(&s, "os.promoted") + 256, "{seg}");
    assert!(
        migrated > seg["reuse"]["migrated"]["0"].as_u64().unwrap(),
        "some migrated pages were translated by the RSW: {seg}"
    );
    // The 2 MiB segment is present with zeros.
    let huge = &s["os"]["frames"]["restsegs"][1]["stats"]["reuse"];
    assert_eq!(sum(&huge["migrated"]) + sum(&huge["faulted"]), 0, "{huge}");
}

#[test]
fn pages_moved_while_populating_cost_no_ipis_when_a_later_migration_shoots_down() {
    // Two programs on two cores share a 1 MiB RestSeg; GUPS maps its 64 MiB table before its
    // first record (populate), evicting thousands of pages on the way. Those moves happen
    // before anything runs: they must not wait in the shootdown queue and all be shot down,
    // each with an IPI, at the first migration of the measured run.
    let s = run(cfg(
        "utopia",
        "mix",
        50_000,
        &[
            format!(
                "workload.members=[{{name = \"stream\", array_bytes = {}}}, \
                 {{name = \"gups\", table_bytes = {}, populate = true}}]",
                MIB,
                64 * MIB
            ),
            "workload.quantum=1000".into(),
            // The mix's own `populate = false` (the helper's) would turn its members' off.
            "workload.populate=true".into(),
            restsegs(MIB, 64 * MIB),
            "schemes.utopia.migrate_walks=2".into(),
            "schemes.utopia.migrate_dram_refs=1".into(),
            "sim.cores=2".into(),
            "sim.verify=true".into(),
        ],
    ));
    let promoted = u(&s, "os.promoted");
    assert!(promoted > 0, "no migration to trigger the shootdowns");
    // A migration shoots down its page and the victim it evicts, a fault its victim: each
    // on the core that moved it and at most on the other one. GUPS's populate pushed
    // thousands of its pages through the 256 slots before the run; none of those may be
    // shot down (let alone with IPIs) in the measured run.
    let moves = 2 * promoted + u(&s, "os.faults.minor");
    let local = u(&s, "mmu.shootdowns");
    let remote = u(&s, "system.shootdowns_remote");
    assert!(local <= 2 * moves, "{local} shootdowns for {moves} moves");
    assert!(
        remote <= moves,
        "{remote} remote shootdowns for {moves} moves"
    );
    assert!(
        u(&s, "os.faults.populated") > 2 * moves,
        "too few pages populated to tell"
    );
}

/// Utopia §5.7.2: a RestSeg walk runs beside the L2 TLB, and when it finds the page "the MMU
/// aborts the L2 TLB access": a RestSeg hit costs the walk's own cycles (two cycles when the
/// SF and TAR caches hold its lines), not the L2 TLB's; an L2 hit aborts the walk instead.
#[test]
fn a_restseg_hit_costs_its_walk_and_an_l2_hit_the_l2_tlb() {
    const L2_LATENCY: u64 = 12;
    // A table of 8192 pages (beyond the L2 TLB's reach), mapped before the run, in a RestSeg
    // of 64 MiB whose SF and TAR fit caches of 256 KiB.
    let mapped = [
        format!("workload.table_bytes={}", 32 * MIB),
        "workload.populate=true".to_string(),
        restsegs(64 * MIB, 64 * MIB),
        "schemes.utopia.tar_cache_bytes=262144".to_string(),
        "schemes.utopia.sf_cache_bytes=262144".to_string(),
    ];
    let s = run(cfg("utopia", "gups", 60_000, &mapped));
    let (walks, hits) = (u(&s, "mmu.rsw.walks"), u(&s, "mmu.rsw.hits"));
    assert_eq!(u(&s, "mmu.walks"), 0, "every page is in the RestSeg");
    assert_eq!(walks, hits);
    let l2_hits = u(&s, "mmu.l1_misses") - walks;
    assert!(
        hits > 5_000 && l2_hits > 0,
        "{hits} RestSeg hits, {l2_hits} L2 hits"
    );
    // Most walks read no line from memory (the caches' first misses aside): those take the
    // caches' 2 cycles, which charging the L2 TLB's 12 would hide.
    let refs = u(&s, "mmu.rsw.refs");
    assert!(refs < hits / 4, "{refs} SF/TAR lines read for {hits} walks");
    assert_eq!(
        u(&s, "mmu.translation_cycles"),
        l2_hits * L2_LATENCY + u(&s, "mmu.rsw.cycles")
    );
}
